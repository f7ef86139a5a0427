"""The state directory's paths, named once in crawler/state/layout.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler.app.arguments import check_state_layout
from crawler.dedup.index import INDEX_NAME, index_path
from crawler.dedup.near import CACHE_DIRNAME
from crawler.state.fsutil import DamagedFile
from crawler.state.layout import StateDir


def test_every_path_is_under_the_root_with_its_name() -> None:
    state = StateDir.of("/srv/state")
    root = Path("/srv/state")
    assert state.stage == root / "stage"
    assert state.stage_complete == root / "stage" / "COMPLETE"
    assert state.stage_refused == root / "stage" / "REFUSED"
    assert state.crawl_stats("w-1") == root / "stage" / "stats-w-1.json"
    assert state.previous_stage == root / "stage.previous"
    assert state.http_cache == root / "httpcache"
    assert state.crawl_report == root / "crawl-report.json"
    assert state.run_report == root / "run-report.json"
    assert state.hub_push == root / "hub-push.json"
    assert state.published_index == root / "published-index.json"
    assert state.removals == root / "removals.json"
    assert state.events == root / "events.json"
    assert state.lock == root / "run.lock"


def test_the_names_agree_with_the_modules_that_still_spell_them() -> None:
    """Until every module asks StateDir, the names it spells itself must be StateDir's."""
    state = StateDir.of("s")
    assert state.signatures.name == CACHE_DIRNAME
    assert state.published_index == index_path(Path("s"))
    assert state.published_index.name == INDEX_NAME


@pytest.mark.parametrize("name", ["stage", "stage.previous", "httpcache", "minhash"])
def test_a_file_where_a_state_folder_belongs_is_damage(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("x", encoding="utf-8")
    with pytest.raises(DamagedFile, match="a file where a folder belongs"):
        check_state_layout(tmp_path)


@pytest.mark.parametrize(
    "name", ["run.lock", "crawl-report.json", "run-report.json", "hub-push.json", "published-index.json"]
)
def test_a_folder_where_a_state_file_belongs_is_damage(tmp_path: Path, name: str) -> None:
    (tmp_path / name).mkdir()
    with pytest.raises(DamagedFile, match="a folder where a file belongs"):
        check_state_layout(tmp_path)
    (tmp_path / name).rmdir()
    assert check_state_layout(tmp_path) == tmp_path
