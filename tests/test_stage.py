from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from crawler.schema import content_sha256
from crawler.stage import (
    COMPLETE_MARKER,
    RUN_FILE,
    StageError,
    StageWriter,
    read_stage,
    start_stage,
    unfinished_lecture_ids,
)


def record(lecture_id: str, fetched: str = "2026-01-01T00:00:00Z", **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "lecture_id": lecture_id,
        "url": f"http://x/lecture/{lecture_id}-t",
        "source_urls": [f"http://x/lecture/{lecture_id}-t"],
        "title": f"Title {lecture_id}",
        "abstract": "An abstract.",
        "keywords": [],
        "presentation_type": "poster",
        "event_id": "502",
        "event_name": "EMNLP 2025",
        "session_id": None,
        "session_name": None,
        "held_at": None,
        "published_at": None,
        "doi": None,
        "is_premium": False,
        "related_lecture_ids": [],
        "text": "An abstract.",
        "extraction": "next_data",
        "withdrawn": False,
        "fetched_at": fetched,
    }
    base.update(extra)
    base["content_sha256"] = content_sha256(base)
    return base


def test_latest_fetch_wins_and_urls_are_united(tmp_path: Path) -> None:
    writer = StageWriter(tmp_path)
    writer.open()
    writer.write_lecture(record("7", "2026-01-01T00:00:00Z", title="old"))
    writer.write_alias("7", "http://x/events/1/sessions/2/lecture/7-t")
    writer.write_lecture(record("7", "2026-01-02T00:00:00Z", title="new", source_urls=["http://x/lecture/7"]))
    writer.write_alias("99", "http://x/lecture/99-gone")
    writer.write_lecture(record("10"))
    writer.close(complete=True, summary={"reason": "finished"})
    staged = read_stage(tmp_path)
    assert staged.complete
    assert [r["lecture_id"] for r in staged.records] == ["7", "10"]
    first = staged.records[0]
    assert first["title"] == "new"
    assert first["fetched_at"] == datetime(2026, 1, 2, tzinfo=UTC)
    assert first["source_urls"] == [
        "http://x/events/1/sessions/2/lecture/7-t",
        "http://x/lecture/7",
        "http://x/lecture/7-t",
    ]
    assert (staged.duplicate_lectures, staged.orphan_aliases, staged.bad_lines) == (1, 1, 0)
    assert staged.summary["reason"] == "finished"


def test_a_torn_last_line_is_cut_and_the_crawl_resumes(tmp_path: Path) -> None:
    writer = StageWriter(tmp_path)
    writer.open()
    writer.write_lecture(record("1"))
    writer.close(complete=False)
    with writer.path.open("a", encoding="utf-8") as fh:
        fh.write('{"kind": "lecture", "record": {"lecture_')
    assert read_stage(tmp_path).bad_lines == 1
    resumed = StageWriter(tmp_path)
    resumed.open()
    assert resumed.resumed
    assert resumed.torn_bytes_dropped == len('{"kind": "lecture", "record": {"lecture_')
    resumed.write_lecture(record("2"))
    resumed.close(complete=True)
    staged = read_stage(tmp_path)
    assert [r["lecture_id"] for r in staged.records] == ["1", "2"]
    assert staged.bad_lines == 0


def test_a_new_crawl_after_a_finished_one_starts_a_fresh_stage(tmp_path: Path) -> None:
    first = StageWriter(tmp_path)
    first.open()
    first.write_lecture(record("1"))
    first.close(complete=True)
    second = StageWriter(tmp_path)
    second.open()
    assert not second.resumed
    assert not (tmp_path / "stage" / COMPLETE_MARKER).exists()
    second.write_lecture(record("2"))
    second.close(complete=True)
    assert [r["lecture_id"] for r in read_stage(tmp_path).records] == ["2"]
    previous = (tmp_path / "stage.previous" / "main.jsonl").read_text(encoding="utf-8")
    assert json.loads(previous)["record"]["lecture_id"] == "1"


def test_workers_merge_into_one_crawl(tmp_path: Path) -> None:
    for worker, ids in (("a", ["1", "2"]), ("b", ["2", "3"])):
        writer = StageWriter(tmp_path, worker)
        writer.open()
        for i in ids:
            writer.write_lecture(record(i))
        writer.close(complete=False)
    staged = read_stage(tmp_path)
    assert staged.workers == ["a", "b"]
    assert [r["lecture_id"] for r in staged.records] == ["1", "2", "3"]
    assert not staged.complete


@pytest.mark.parametrize("name", ["", "../up", "a/b", ".hidden", "x" * 65])
def test_bad_worker_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(StageError, match="invalid stage worker name"):
        StageWriter(tmp_path, name)


def test_reading_a_missing_stage_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(StageError, match="run `eventcrawl crawl"):
        read_stage(tmp_path / "nothing")


def test_a_finished_stage_is_moved_aside_once_per_run(tmp_path: Path) -> None:
    stage = tmp_path / "stage"
    stage.mkdir()
    (stage / "main.jsonl").write_text("", encoding="utf-8")
    (stage / COMPLETE_MARKER).write_text("{}", encoding="utf-8")
    assert start_stage(tmp_path, "ns run-1")
    assert (tmp_path / "stage.previous" / "main.jsonl").exists()
    assert (stage / RUN_FILE).read_text(encoding="utf-8") == "ns run-1\n"
    (stage / "w0.jsonl").write_text("", encoding="utf-8")
    assert not start_stage(tmp_path, "ns run-1")
    (stage / COMPLETE_MARKER).write_text("{}", encoding="utf-8")
    assert not start_stage(tmp_path, "ns run-1")
    assert (stage / "w0.jsonl").exists()
    assert start_stage(tmp_path, "ns run-2")
    assert sorted(p.name for p in stage.iterdir()) == [RUN_FILE]


def test_a_record_the_stage_cannot_read_back_is_fetched_again_not_lost(tmp_path: Path) -> None:
    writer = StageWriter(tmp_path)
    writer.open()
    writer.write_lecture(record("1"))
    writer.close(complete=False)
    broken = {"kind": "lecture", "record": {**record("2"), "held_at": "the day after tomorrow"}}
    with writer.path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(broken) + "\n")
    staged = read_stage(tmp_path)
    assert ([r["lecture_id"] for r in staged.records], staged.bad_lines) == (["1"], 1)
    assert unfinished_lecture_ids(tmp_path) == {"1"}
