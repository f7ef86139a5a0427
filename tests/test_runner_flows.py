"""The flows the commands run, called as a library: ``runner.publish_staged`` on a real crawl's stage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crawler.app import runner
from crawler.app.next_release import NothingToPublish
from crawler.publish.removals import RemovalRequests
from crawler.replica.layout import build_site, load_records
from crawler.replica.server import ReplicaServer
from crawler.schedule.lock import LockHeld, StateLock
from tests.support.replica import crawl_args, eventcrawl, fast_crawl_settings

LECTURES = 12


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished crawl of both replica events, staged in a state directory the tests copy."""
    state = tmp_path_factory.mktemp("crawled") / "state"
    site = build_site(load_records(), seed=3, lectures=LECTURES)
    with ReplicaServer(site) as server:
        args = crawl_args(server.base_url, state, "--event-id", "502", "--event-id", "469")
        result = eventcrawl(*args, *fast_crawl_settings(), "-s", "PROGRESS_ENABLED=False")
    assert result.returncode == 0, result.stderr[-3000:]
    return state


@pytest.fixture
def state(crawled: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "state"
    shutil.copytree(crawled, copy)
    return copy


def _ids(out: Path) -> list[str]:
    return sorted(pq.read_table(out / "data" / "lectures").column("lecture_id").to_pylist(), key=int)


def test_the_release_is_built_heard_then_written(state: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    heard: list[tuple[bool, int]] = []
    request = runner.PublishRequest(state_dir=state, out_dir=out, name="emnlp-test")
    published = runner.publish_staged(request, built=lambda r: heard.append((out.exists(), len(r.records))))
    # Told of the release before anything was written.
    assert heard == [(False, LECTURES)]
    assert published.result.row_counts["lectures"] == LECTURES
    assert len(_ids(out)) == LECTURES
    assert published.release.notes() == []
    assert (
        json.loads((out / "manifest.json").read_text(encoding="utf-8"))["version"] == published.result.version
    )
    assert (state / "published-index.json").is_file()


def test_the_removals_asked_for_are_applied_and_kept_in_the_state(state: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = runner.publish_staged(runner.PublishRequest(state_dir=state, out_dir=out, name="emnlp-test"))
    removed = _ids(out)[0]
    request = runner.PublishRequest(
        state_dir=state, out_dir=out, name="emnlp-test", removals=RemovalRequests(lectures=(removed,))
    )
    second = runner.publish_staged(request)
    assert removed not in _ids(out)
    assert len(_ids(out)) == LECTURES - 1
    assert second.result.version != first.result.version
    ledger = json.loads((state / "removals.json").read_text(encoding="utf-8"))
    assert ledger["lectures"] == [removed]


def test_nothing_is_published_while_another_command_holds_the_state(state: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with StateLock(state), pytest.raises(LockHeld):
        runner.publish_staged(runner.PublishRequest(state_dir=state, out_dir=out, name="emnlp-test"))
    assert not out.exists()


def test_an_unfinished_crawl_is_published_only_when_allowed(state: Path, tmp_path: Path) -> None:
    (state / "stage" / "COMPLETE").unlink()
    out = tmp_path / "out"
    with pytest.raises(NothingToPublish, match="did not finish"):
        runner.publish_staged(runner.PublishRequest(state_dir=state, out_dir=out, name="emnlp-test"))
    request = runner.PublishRequest(state_dir=state, out_dir=out, name="emnlp-test", allow_partial=True)
    assert runner.publish_staged(request).result.row_counts["lectures"] == LECTURES
