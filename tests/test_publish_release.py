"""publish_release: layout, manifest, load_dataset round trip, re-publishing, atomic swap, crash safety."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq
import pytest

from crawler import schema
from crawler.publish import build, release, swap
from crawler.publish.card import DEFAULT_TEMPLATE
from crawler.publish.manifest import ReleaseError
from crawler.publish.records import InvalidRecordsError
from crawler.publish.release import publish_release
from crawler.publish.tables import EVENTS, LECTURES, SESSIONS
from crawler.schema import arrow as schema_arrow
from tests.support.commands import start_command
from tests.test_publish_parquet import PROVENANCE, make_record, make_records, sha

REPO = Path(__file__).resolve().parents[1]
LAYOUT = [
    "README.md",
    "anthology-links.csv",
    "assets/anthology-share.svg",
    "assets/field-coverage.svg",
    "assets/lectures-per-event.svg",
    "assets/release-history.svg",
    "changes/2025-11-12.parquet",
    "data/events/train-00000-of-00001.parquet",
    "data/lectures/event-469/train-00000-of-00001.parquet",
    "data/lectures/event-502/train-00000-of-00001.parquet",
    "data/sessions/train-00000-of-00001.parquet",
    "manifest.json",
]


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def publish(out: Path, records: list[dict[str, Any]] | None = None, **kwargs: Any) -> release.ReleaseResult:
    provenance = kwargs.pop("provenance", PROVENANCE)
    return publish_release(
        make_records() if records is None else records,
        out,
        name="emnlp-2025",
        provenance=provenance,
        **kwargs,
    )


@pytest.fixture(scope="module")
def first_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding what ``publish(folder / "release")`` leaves there (the release and the lock file
    beside it), made once; a test that goes on from it works on :func:`copy_of_first`'s copy."""
    work = tmp_path_factory.mktemp("first")
    publish(work / "release")
    return work


def copy_of_first(first_release: Path, work: Path) -> Path:
    """``work / "release"`` as ``publish(work / "release")`` leaves it: a copy of the first release."""
    shutil.copytree(first_release / "release", work / "release", symlinks=True)
    shutil.copy2(first_release / ".release.lock", work / ".release.lock")
    return work / "release"


def test_first_release_layout_manifest_and_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "release"
    result = publish(out)
    assert sorted(files(out)) == LAYOUT
    assert sorted(p.name for p in tmp_path.iterdir()) == [".release.lock", "release"]
    assert result.version == "2025-11-12"
    assert result.previous_version is None
    assert result.row_counts == {"lectures": 12, "events": 2, "sessions": 3}
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["version"] == "2025-11-12"
    assert manifest["versions"] == ["2025-11-12"]
    assert manifest["row_counts"] == {"lectures": 12, "events": 2, "sessions": 3}
    assert manifest["changes"] == {"added": 12, "changed": 0, "removed": 0}
    assert manifest["provenance"]["settings"]["DOWNLOAD_DELAY"] == 1.0
    assert sorted(manifest["files"]) == [p for p in LAYOUT if p != "manifest.json"]
    for path, entry in manifest["files"].items():
        assert entry == {"size": (out / path).stat().st_size, "sha256": sha(out / path)}, f"{path=}, {entry=}"
    assert manifest["files"] == result.files

    expected = [schema.record_values(make_record(i), schema.FIELDS) for i in range(12)]
    # One folder per event, in event id order; rows sorted by lecture id inside each.
    by_event = [r for r in expected if r["event_id"] == "469"] + [
        r for r in expected if r["event_id"] == "502"
    ]
    table = pq.read_table(out / "data" / "lectures")
    assert table.schema.remove_metadata().equals(schema_arrow.arrow_schema().remove_metadata())
    assert table.to_pylist() == by_event

    cache = str(tmp_path / "cache")
    lectures = datasets.load_dataset(str(out), cache_dir=cache)
    assert list(lectures) == ["train"]
    assert lectures["train"].features == LECTURES.features()
    assert lectures["train"].num_rows == 12
    assert lectures["train"][0] == by_event[0]
    assert lectures["train"]["lecture_id"] == [r["lecture_id"] for r in by_event]
    assert sorted(lectures["train"]["lecture_id"]) == [str(130100 + i) for i in range(12)]
    events = datasets.load_dataset(str(out), "events", split="train", cache_dir=cache)
    assert events.features == EVENTS.features()
    assert events["event_id"] == ["469", "502"]
    assert events["lecture_count"] == [1, 11]
    sessions = datasets.load_dataset(str(out), "sessions", split="train", cache_dir=cache)
    assert sessions.features == SESSIONS.features()
    assert sessions["session_id"] == ["9001", "9002", "9003"]


def test_republishing_the_same_records_gives_identical_parquet(first_release: Path, tmp_path: Path) -> None:
    out = copy_of_first(first_release, tmp_path)
    first = files(out)
    second_result = publish(out)
    second = files(out)
    parquet_files = [p for p in LAYOUT if p.endswith(".parquet")]
    assert {p: second[p] for p in parquet_files} == {p: first[p] for p in parquet_files}
    assert second_result.version == "2025-11-12.2"
    assert second_result.previous_version == "2025-11-12"
    assert (
        second_result.changes["added"]
        == second_result.changes["changed"]
        == second_result.changes["removed"]
        == 0
    )
    third = publish(out)
    assert third.version == "2025-11-12.3"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["versions"] == ["2025-11-12", "2025-11-12.2", "2025-11-12.3"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".release.lock", "release"]


def test_changes_are_counted_against_the_previous_release(first_release: Path, tmp_path: Path) -> None:
    out = copy_of_first(first_release, tmp_path)
    records = make_records()
    records = [r for r in records if r["lecture_id"] != "130105"]  # removed
    records = [
        make_record(3, title="A Corrected Title") if r["lecture_id"] == "130103" else r for r in records
    ]
    records.append(make_record(40))  # added
    result = publish(out, records, provenance={**PROVENANCE, "crawl_date": "2025-11-20"})
    assert result.version == "2025-11-20"
    assert (result.changes["added"], result.changes["changed"], result.changes["removed"]) == (1, 1, 1)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "Compared with release `2025-11-12`: 1 lecture(s) added,\n1 changed" in card
    assert "1 removed." in card


def test_invalid_records_write_nothing(first_release: Path, tmp_path: Path) -> None:
    out = copy_of_first(first_release, tmp_path)
    before = files(out)
    bad = make_records()
    bad[3]["held_at"] = "next tuesday"
    with pytest.raises(InvalidRecordsError, match="held_at is not an ISO 8601 timestamp"):
        publish(out, bad)
    assert files(out) == before
    with pytest.raises(InvalidRecordsError):
        publish(tmp_path / "never", bad)
    assert not (tmp_path / "never").exists()


def test_refuses_to_replace_a_directory_that_is_not_a_release(tmp_path: Path) -> None:
    out = tmp_path / "somewhere"
    out.mkdir()
    (out / "thesis.tex").write_text("precious", encoding="utf-8")
    with pytest.raises(ReleaseError, match="is not a release"):
        publish(out)
    assert files(out) == {"thesis.tex": b"precious"}


def test_refuses_without_a_crawl_date_or_with_a_bad_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="crawl_date"):
        publish(tmp_path / "a", provenance={"crawler_version": "0.1.0"})
    with pytest.raises(ValueError, match="name"):
        publish_release(make_records(), tmp_path / "b", name="bad name\n---", provenance=PROVENANCE)


def test_maintainer_sections_survive_republishing(first_release: Path, tmp_path: Path) -> None:
    out = copy_of_first(first_release, tmp_path)
    card = (out / "README.md").read_text(encoding="utf-8")
    edited = (
        card.replace(
            "<!-- maintainer:start notes -->\n<!-- maintainer:end notes -->",
            "<!-- maintainer:start notes -->\nContact: the data team.\n<!-- maintainer:end notes -->",
        )
        + "\n<!-- maintainer:start errata -->\nLecture 130101 has a wrong date."
        + "\n<!-- maintainer:end errata -->\n"
    )
    (out / "README.md").write_text(edited, encoding="utf-8")
    publish(out)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "<!-- maintainer:start notes -->\nContact: the data team.\n<!-- maintainer:end notes -->" in card
    assert card.endswith(
        "<!-- maintainer:start errata -->\nLecture 130101 has a wrong date.\n<!-- maintainer:end errata -->\n"
    )


def test_a_lint_error_in_the_template_stops_the_publish(first_release: Path, tmp_path: Path) -> None:
    out = copy_of_first(first_release, tmp_path)
    before = files(out)
    template = tmp_path / "bad.md"
    text = DEFAULT_TEMPLATE.read_text(encoding="utf-8")
    template.write_text(
        text.replace("{{ card_data }}\n", "{{ card_data }}\nlicence: mit\n"), encoding="utf-8"
    )
    with pytest.raises(ReleaseError, match="unknown-key: top-level key 'licence'"):
        publish(out, template=template)
    assert files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".release.lock", "bad.md", "release"]


def test_a_failure_after_the_build_leaves_the_old_release(first_release: Path, tmp_path: Path) -> None:
    out = copy_of_first(first_release, tmp_path)
    before = files(out)

    def fail(stage: str, path: Path) -> None:
        if stage == "checked":
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        publish(out, make_records(5), on_step=fail)
    assert files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".release.lock", "release"]


def kill_publish_at(out: Path, stage: str, exchange: str) -> None:
    """A publish of five records to ``out`` (``python -m tests.support.publish_until``), killed with
    SIGKILL at the release step ``stage``."""
    with tempfile.TemporaryDirectory(prefix="publish-until-") as logs:
        said = Path(logs) / "stdout"
        command = [sys.executable, "-m", "tests.support.publish_until", str(out), stage, exchange]
        child = start_command(command, cwd=REPO, stdout=said, stderr=Path(logs) / "stderr")
        try:
            deadline = time.monotonic() + 120
            while "\n" not in said.read_text(encoding="utf-8"):
                assert child.poll() is None, (Path(logs) / "stderr").read_text(encoding="utf-8")[-3000:]
                assert time.monotonic() < deadline, f"the publish never reached {stage}"
                time.sleep(0.01)
            assert said.read_text(encoding="utf-8").splitlines()[0] == stage
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL


def test_killed_before_the_swap_leaves_the_old_release_unchanged(first_release: Path, tmp_path: Path) -> None:
    out = copy_of_first(first_release, tmp_path)
    before = files(out)
    kill_publish_at(out, "checked", "on")
    assert files(out) == before
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".release.build-"))
    assert len(leftovers) == 1
    assert pq.read_table(out / "data" / "lectures").num_rows == 12
    result = publish(out, make_records(5))
    assert result.row_counts["lectures"] == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == [".release.lock", "release"]


def test_killed_in_the_middle_of_a_two_step_swap_is_rolled_back(first_release: Path, tmp_path: Path) -> None:
    out = copy_of_first(first_release, tmp_path)
    before = files(out)
    kill_publish_at(out, "aside", "off")
    # Between the two renames: the old release is aside, the checked new one still in its build dir.
    assert not out.exists()
    assert files(tmp_path / ".release.old") == before
    swap.recover(out)
    assert files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".release.lock", "release"]
    assert publish(out, make_records(5)).row_counts["lectures"] == 5


def test_the_two_step_swap_also_works(
    first_release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(swap, "_rename_exchange", lambda a, b: False)
    out = copy_of_first(first_release, tmp_path)
    stages: list[str] = []
    publish(out, make_records(5), on_step=lambda stage, path: stages.append(stage))
    assert stages == ["built", "checked", "aside", "swapped"]
    assert pq.read_table(out / "data" / "lectures").num_rows == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == [".release.lock", "release"]


def test_next_version() -> None:
    assert build.next_version("2025-11-12", []) == "2025-11-12"
    assert build.next_version("2025-11-12", ["2025-11-11"]) == "2025-11-12"
    assert build.next_version("2025-11-12", ["2025-11-12", "2025-11-12.2"]) == "2025-11-12.3"
