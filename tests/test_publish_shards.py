"""A release rewrites only the events whose rows changed; the card and the events table count, per
event, the lectures with page-derived fields and those known from the listing alone."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from huggingface_hub import HfApi

from crawler import schema
from crawler.publish.hub import RetryPolicy, push_to_hub
from crawler.publish.release import ReleaseResult, publish_release
from tests.support.hub import StandIn, hub
from tests.test_publish_parquet import PROVENANCE, make_record

__all__ = ["hub"]  # the Hub stand-in fixture

REPO = "acl-archive/emnlp"
# Three events: 469 (indexes 9, 19), 502 (most), 601 (indexes 3, 13, 23).
EVENTS = {"469": "EMNLP 2024", "502": "EMNLP 2025", "601": "ACL 2026"}
# Extraction by index: ground truth for the per-event counts, written out by hand below.
LISTING_ONLY = {0: "api_listing", 4: "api_listing+text_from_fields", 13: "api_listing"}
VISIBLE = {1, 6}


def event_of(index: int) -> str:
    if index % 10 == 3:
        return "601"
    return "469" if index % 10 == 9 else "502"


def record(index: int, **changes: Any) -> dict[str, Any]:
    event = event_of(index)
    extraction = LISTING_ONLY.get(index, "visible_text" if index in VISIBLE else "next_data")
    base = {"event_id": event, "event_name": EVENTS[event], "extraction": extraction}
    return make_record(index, **{**base, **changes})


def records(**changed: dict[str, Any]) -> list[dict[str, Any]]:
    """24 lectures; ``changed`` maps an index (as a string) to the fields it takes."""
    return [record(i, **changed.get(str(i), {})) for i in range(24)]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lecture_files(out: Path) -> dict[str, tuple[str, int]]:
    """Each lecture file: its sha256 and inode (a file written again gets a new inode)."""
    return {
        p.relative_to(out).as_posix(): (sha(p), os.stat(p).st_ino)
        for p in sorted((out / "data" / "lectures").rglob("*.parquet"))
    }


def publish(out: Path, rows: list[dict[str, Any]], day: str) -> ReleaseResult:
    return publish_release(rows, out, name=REPO, provenance={**PROVENANCE, "crawl_date": day})


@pytest.fixture(scope="module")
def first_release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ReleaseResult]:
    """The release of ``records()`` of 2025-11-12, made once; a test goes on from :func:`copy_of_first`."""
    out = tmp_path_factory.mktemp("first") / "release"
    return out, publish(out, records(), "2025-11-12")


def copy_of_first(first_release: tuple[Path, ReleaseResult], work: Path) -> Path:
    """``work / "release"`` as ``publish(work / "release", records(), "2025-11-12")`` leaves it."""
    shutil.copytree(first_release[0], work / "release", symlinks=True)
    return work / "release"


@pytest.fixture(scope="module")
def two_releases(
    first_release: tuple[Path, ReleaseResult], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    out = copy_of_first(first_release, tmp_path_factory.mktemp("shards"))
    first = first_release[1]
    before = lecture_files(out)
    first_manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    # One lecture of event 502 gets a new title; nothing else changes.
    second = publish(out, records(**{"5": {"title": "A new title"}}), "2025-11-13")
    return {
        "out": out,
        "first": first,
        "second": second,
        "before": before,
        "after": lecture_files(out),
        "first_manifest": first_manifest,
        "manifest": json.loads((out / "manifest.json").read_text(encoding="utf-8")),
    }


def test_the_first_release_writes_every_event(two_releases: dict[str, Any]) -> None:
    assert two_releases["first"].rewritten == ("acl-2026", "emnlp-2024", "emnlp-2025")
    assert sorted(two_releases["before"]) == [
        "data/lectures/event-469/train-00000-of-00001.parquet",
        "data/lectures/event-502/train-00000-of-00001.parquet",
        "data/lectures/event-601/train-00000-of-00001.parquet",
    ]


def test_only_the_changed_event_is_written_again(two_releases: dict[str, Any]) -> None:
    before, after = two_releases["before"], two_releases["after"]
    assert two_releases["second"].rewritten == ("emnlp-2025",)
    assert sorted(after) == sorted(before)
    changed = "data/lectures/event-502/train-00000-of-00001.parquet"
    for path in before:
        if path == changed:
            assert after[path][0] != before[path][0], f"{path=}"
            assert after[path][1] != before[path][1], f"{path=}"
        else:
            # Byte for byte, and the very file: it was not written again.
            assert after[path] == before[path], path


def test_the_manifest_describes_carried_and_written_files(two_releases: dict[str, Any]) -> None:
    out, manifest, first = two_releases["out"], two_releases["manifest"], two_releases["first_manifest"]
    for path, entry in manifest["files"].items():
        assert entry == {"size": (out / path).stat().st_size, "sha256": sha(out / path)}, path
    assert manifest["configs"]["emnlp-2024"] == {
        "rows": 2,
        "files": ["data/lectures/event-469/train-00000-of-00001.parquet"],
        "event_id": "469",
    }
    assert manifest["configs"]["lectures"]["rows"] == 24
    assert manifest["event_shards"]["469"] == first["event_shards"]["469"]
    assert manifest["event_shards"]["601"] == first["event_shards"]["601"]
    assert manifest["event_shards"]["502"]["fingerprint"] != first["event_shards"]["502"]["fingerprint"]
    assert manifest["event_shards"]["502"]["rows"] == 19
    assert manifest["changes"] == {"added": 0, "changed": 1, "removed": 0}
    assert manifest["change_rows"] == {"added": 0, "changed": 1, "removed": 0, "withdrawn": 0}
    change = pq.read_table(out / "changes" / "2025-11-13.parquet").to_pylist()
    assert [(c["lecture_id"], c["change"], c["changed_fields"]) for c in change] == [
        ("130105", "changed", ["title", "content_sha256"])
    ]
    # The whole release reads back as the records published.
    ids = pq.read_table(out / "data" / "lectures", columns=["lecture_id"]).column(0).to_pylist()
    assert sorted(ids) == [str(130100 + i) for i in range(24)]


def test_a_previous_file_unlike_its_manifest_entry_is_written_again(
    first_release: tuple[Path, ReleaseResult], tmp_path: Path
) -> None:
    out = copy_of_first(first_release, tmp_path)
    path = out / "data/lectures/event-469/train-00000-of-00001.parquet"
    good = path.read_bytes()
    # The same rows, written by another writer: readable, but not the bytes the manifest names.
    table = pq.read_table(path)
    path.unlink()
    pq.write_table(table, path, compression="snappy")
    assert path.read_bytes() != good
    second = publish(out, records(), "2025-11-13")
    assert second.rewritten == ("emnlp-2024",)
    assert path.read_bytes() == good


def test_unchanged_records_rewrite_nothing(first_release: tuple[Path, ReleaseResult], tmp_path: Path) -> None:
    out = copy_of_first(first_release, tmp_path)
    before = lecture_files(out)
    again = publish(out, records(), "2025-11-13")
    assert again.rewritten == ()
    assert lecture_files(out) == before
    assert again.changes["changed"] == again.changes["added"] == again.changes["removed"] == 0


def test_a_push_after_a_one_event_change_uploads_only_what_changed(
    first_release: tuple[Path, ReleaseResult], hub: tuple[StandIn, str], tmp_path: Path
) -> None:
    stand_in, endpoint = hub
    api = HfApi(endpoint=endpoint)
    retry = RetryPolicy(attempts=2, base_wait=0.01, max_wait=1.0, sleep=lambda _s: None)
    out = copy_of_first(first_release, tmp_path)
    push_to_hub(out, REPO, token="hf_StandInSecretToken0123456789abcdef", api=api, retry=retry)
    first = {p.relative_to(out).as_posix(): sha(p) for p in out.rglob("*.parquet")}
    uploaded_first = len(stand_in.storage)
    assert uploaded_first == len(set(first.values()))
    publish(out, records(**{"5": {"title": "A new title"}}), "2025-11-13")
    push_to_hub(out, REPO, token="hf_StandInSecretToken0123456789abcdef", api=api, retry=retry)
    second = {p.relative_to(out).as_posix(): sha(p) for p in out.rglob("*.parquet")}
    uploaded = sorted(s["path"].rsplit("/", 1)[-1] for s in stand_in.storage[uploaded_first:])
    new = sorted({second[p] for p in second if first.get(p) != second[p]} - set(first.values()))
    assert uploaded == new
    # The changed event and the new change file went up; the unchanged events' files did not.
    assert second["data/lectures/event-502/train-00000-of-00001.parquet"] in uploaded
    assert second["changes/2025-11-13.parquet"] in uploaded
    for path in (
        "data/lectures/event-469/train-00000-of-00001.parquet",
        "data/lectures/event-601/train-00000-of-00001.parquet",
    ):
        assert second[path] == first[path] and second[path] not in uploaded, f"{path=}"
    # The Hub holds the second release whole.
    assert (
        stand_in.repos[REPO]["main"]["data/lectures/event-469/train-00000-of-00001.parquet"]
        == (out / "data/lectures/event-469/train-00000-of-00001.parquet").read_bytes()
    )


def test_the_card_counts_page_derived_and_listing_only_lectures(two_releases: dict[str, Any]) -> None:
    out = two_releases["out"]
    card = (out / "README.md").read_text(encoding="utf-8")
    # 469: indexes 9, 19 (both from their page); 502: 19 lectures, 0 and 4 from the listing; 601:
    # indexes 3, 13, 23, 13 from the listing.
    assert "| 469 | EMNLP 2024 | 2 | 2 | 0 |" in card
    assert "| 502 | EMNLP 2025 | 19 | 17 | 2 |" in card
    assert "| 601 | ACL 2026 | 3 | 2 | 1 |" in card
    assert "| Fields from the lecture's page | 17 lectures; from the listing only: 2 |" in card
    assert "| Fields from the lecture's page | 2 lectures; from the listing only: 1 |" in card
    events = pq.read_table(out / "data/events/train-00000-of-00001.parquet").to_pylist()
    assert [
        (e["event_id"], e["lecture_count"], e["page_lectures"], e["listing_only_lectures"]) for e in events
    ] == [
        ("469", 2, 2, 0),
        ("502", 19, 17, 2),
        ("601", 3, 2, 1),
    ]


def test_fingerprint_covers_fields_outside_the_content_hash(
    first_release: tuple[Path, ReleaseResult], tmp_path: Path
) -> None:
    """``fetched_at`` and ``extraction`` are not in the content hash, yet they are in the file: a
    change of either alone rewrites the event."""
    out = copy_of_first(first_release, tmp_path)
    moved = records(**{"9": {"extraction": "visible_text"}})
    assert [r["content_sha256"] for r in moved] == [r["content_sha256"] for r in records()]
    second = publish(out, moved, "2025-11-13")
    assert second.rewritten == ("emnlp-2024",)
    rows = pq.read_table(out / "data/lectures/event-469/train-00000-of-00001.parquet").to_pylist()
    assert [r["extraction"] for r in rows] == ["visible_text", "next_data"]
    assert schema.FIELDS_BY_NAME["extraction"].in_content_hash is False
