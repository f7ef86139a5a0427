from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from crawler.dedup.index import (
    INDEX_NAME,
    IndexDelta,
    IndexEntry,
    PublishedIndex,
    load_index,
    save_index,
    update_index,
)

DAY1 = datetime(2026, 1, 1, tzinfo=UTC)
DAY2 = datetime(2026, 1, 2, 12, 30, tzinfo=UTC)


def rec(lecture_id: str, digest: str, alternates: list[str] | None = None, cluster: str | None = None) -> Any:
    return {
        "lecture_id": lecture_id,
        "content_sha256": digest,
        "alternate_ids": alternates or [],
        "near_duplicate_cluster": cluster,
    }


def test_no_index_is_an_empty_one(tmp_path: Path) -> None:
    index = load_index(tmp_path)
    assert index == PublishedIndex()
    assert "1" not in index


def test_a_first_publish_indexes_every_record(tmp_path: Path) -> None:
    delta = update_index(
        [rec("2", "b", ["7"]), rec("10", "c", cluster="2"), rec("1", "a")], tmp_path, now=DAY1
    )
    assert delta == IndexDelta(added=["1", "2", "10"])
    index = load_index(tmp_path)
    assert index.updated_at == "2026-01-01T00:00:00Z"
    assert index.entries == {
        "1": IndexEntry("a", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
        "2": IndexEntry("b", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
        "7": IndexEntry(None, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", merged_into="2"),
        "10": IndexEntry("c", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", cluster="2"),
    }
    assert index.record_ids() == {"1", "2", "10"}
    data = json.loads((tmp_path / INDEX_NAME).read_text(encoding="utf-8"))
    assert list(data["lectures"]) == ["1", "2", "7", "10"]
    assert [p.name for p in tmp_path.iterdir()] == [INDEX_NAME]


def test_a_later_publish_is_recognised(tmp_path: Path) -> None:
    update_index([rec("1", "a"), rec("2", "b", ["7"]), rec("3", "c")], tmp_path, now=DAY1)
    delta = update_index([rec("1", "a"), rec("2", "B"), rec("7", "x"), rec("4", "d")], tmp_path, now=DAY2)
    assert delta == IndexDelta(added=["4", "7"], changed=["2"], unchanged=["1"], missing=["3"])
    index = load_index(tmp_path)
    assert index.entries["1"] == IndexEntry("a", "2026-01-01T00:00:00Z", "2026-01-02T12:30:00Z")
    # An id published as an alternate keeps when it was first seen once it is a record of its own.
    assert index.entries["7"] == IndexEntry("x", "2026-01-01T00:00:00Z", "2026-01-02T12:30:00Z")
    assert index.entries["3"].last_seen == "2026-01-01T00:00:00Z"
    assert index.entries["2"].content_sha256 == "B"


def test_a_file_that_is_not_an_index_is_refused(tmp_path: Path) -> None:
    path = tmp_path / INDEX_NAME
    path.write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="not JSON"):
        load_index(tmp_path)
    path.write_text('{"version": 99}', encoding="utf-8")
    with pytest.raises(ValueError, match="version"):
        load_index(tmp_path)
    path.write_text('{"version": 1, "lectures": {"1": {"first_seen": "x"}}}', encoding="utf-8")
    with pytest.raises(ValueError, match="malformed"):
        load_index(tmp_path)
    with pytest.raises(ValueError):
        update_index([rec("1", "a")], tmp_path)
    assert path.read_text(encoding="utf-8") == '{"version": 1, "lectures": {"1": {"first_seen": "x"}}}'


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    index = PublishedIndex({"5": IndexEntry("h", "a", "b", cluster="5")}, "b")
    save_index(tmp_path / "new", index)
    assert load_index(tmp_path / "new") == index
