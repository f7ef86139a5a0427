from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from crawler.items import LectureItem
from crawler.schema import Lecture, content_sha256, to_json_record
from crawler.state.layout import COMPLETE, REFUSED_STAGE, STAGE_RUN
from crawler.state.previous_stage import PreviousStage, refresh_base_ids
from crawler.state.stage import (
    StageError,
    StageWriter,
    mark_complete,
    mark_refused,
    start_stage,
)
from crawler.state.stage_index import staged_counts, unfinished_lecture_ids
from tests.support.staged import read_stage


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


def crawled(record: dict[str, Any], **side: Any) -> LectureItem:
    """A crawled lecture of ``record`` with side data (``listing_hashes``, ``carried``, ``counted``)."""
    return LectureItem.from_json({**record, **side})


def test_latest_fetch_wins_and_urls_are_united(tmp_path: Path) -> None:
    writer = StageWriter(tmp_path)
    writer.open()
    writer.write_lecture(Lecture.from_json(record("7", "2026-01-01T00:00:00Z", title="old")))
    writer.write_aliases([("7", "http://x/events/1/sessions/2/lecture/7-t")])
    writer.write_lecture(
        Lecture.from_json(
            record("7", "2026-01-02T00:00:00Z", title="new", source_urls=["http://x/lecture/7"])
        )
    )
    writer.write_aliases([("99", "http://x/lecture/99-gone")])
    writer.write_lecture(Lecture.from_json(record("10")))
    writer.close(complete=True, summary={"reason": "finished"})
    staged = read_stage(tmp_path)
    assert staged.complete
    assert [r.lecture_id for r in staged.records] == ["7", "10"]
    first = staged.records[0]
    assert first.title == "new"
    assert first.fetched_at == datetime(2026, 1, 2, tzinfo=UTC)
    assert first.source_urls == [
        "http://x/events/1/sessions/2/lecture/7-t",
        "http://x/lecture/7",
        "http://x/lecture/7-t",
    ]
    assert (staged.duplicate_lectures, staged.orphan_aliases, staged.bad_lines) == (1, 1, 0)
    assert staged.summary["reason"] == "finished"


def test_a_torn_last_line_is_cut_and_the_crawl_resumes(tmp_path: Path) -> None:
    writer = StageWriter(tmp_path)
    writer.open()
    writer.write_lecture(Lecture.from_json(record("1")))
    writer.close(complete=False)
    with writer.path.open("a", encoding="utf-8") as fh:
        fh.write('{"kind": "lecture", "record": {"lecture_')
    assert read_stage(tmp_path).bad_lines == 1
    resumed = StageWriter(tmp_path)
    resumed.open()
    assert resumed.resumed
    assert resumed.torn_bytes_dropped == len('{"kind": "lecture", "record": {"lecture_')
    resumed.write_lecture(Lecture.from_json(record("2")))
    resumed.close(complete=True)
    staged = read_stage(tmp_path)
    assert [r.lecture_id for r in staged.records] == ["1", "2"]
    assert staged.bad_lines == 0


def test_a_new_crawl_after_a_finished_one_starts_a_fresh_stage(tmp_path: Path) -> None:
    first = StageWriter(tmp_path)
    first.open()
    first.write_lecture(Lecture.from_json(record("1")))
    first.close(complete=True)
    second = StageWriter(tmp_path)
    second.open()
    assert not second.resumed
    assert not (tmp_path / "stage" / COMPLETE).exists()
    second.write_lecture(Lecture.from_json(record("2")))
    second.close(complete=True)
    assert [r.lecture_id for r in read_stage(tmp_path).records] == ["2"]
    previous = (tmp_path / "stage.previous" / "main.jsonl").read_text(encoding="utf-8")
    assert json.loads(previous)["lecture"]["lecture_id"] == "1"


def test_workers_merge_into_one_crawl(tmp_path: Path) -> None:
    for worker, ids in (("a", ["1", "2"]), ("b", ["2", "3"])):
        writer = StageWriter(tmp_path, worker)
        writer.open()
        for i in ids:
            writer.write_lecture(Lecture.from_json(record(i)))
        writer.close(complete=False)
    staged = read_stage(tmp_path)
    assert staged.workers == ["a", "b"]
    assert [r.lecture_id for r in staged.records] == ["1", "2", "3"]
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
    (stage / COMPLETE).write_text("{}", encoding="utf-8")
    assert start_stage(tmp_path, "ns run-1")
    assert (tmp_path / "stage.previous" / "main.jsonl").exists()
    assert (stage / STAGE_RUN).read_text(encoding="utf-8") == "ns run-1\n"
    (stage / "w0.jsonl").write_text("", encoding="utf-8")
    assert not start_stage(tmp_path, "ns run-1")
    (stage / COMPLETE).write_text("{}", encoding="utf-8")
    assert not start_stage(tmp_path, "ns run-1")
    assert (stage / "w0.jsonl").exists()
    assert start_stage(tmp_path, "ns run-2")
    assert sorted(p.name for p in stage.iterdir()) == [STAGE_RUN]


def test_a_record_the_stage_cannot_read_back_is_fetched_again_not_lost(tmp_path: Path) -> None:
    writer = StageWriter(tmp_path)
    writer.open()
    writer.write_lecture(Lecture.from_json(record("1")))
    writer.close(complete=False)
    broken = {"kind": "lecture", "record": {**record("2"), "held_at": "the day after tomorrow"}}
    with writer.path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(broken) + "\n")
    staged = read_stage(tmp_path)
    assert ([r.lecture_id for r in staged.records], staged.bad_lines) == (["1"], 1)
    assert unfinished_lecture_ids(tmp_path) == {"1"}


def test_a_refused_stage_is_never_the_next_refresh_base(tmp_path: Path) -> None:
    accepted = StageWriter(tmp_path)
    accepted.open()
    accepted.write_lecture(crawled(record("1"), listing_hashes={"title": "a"}))
    accepted.close(complete=True)
    refused = StageWriter(tmp_path)
    refused.open()
    assert refused.previous_moved
    refused.write_lecture(
        crawled(record("1", "2026-01-02T00:00:00Z", title="refused"), listing_hashes={"title": "b"})
    )
    refused.close(complete=True)
    assert mark_refused(tmp_path, {"failed_checks": ["fallback_rate"]})
    assert start_stage(tmp_path)
    # The accepted stage stays the base; the refused one is kept aside for a look.
    staged = PreviousStage(tmp_path).staged("1")
    assert staged is not None
    assert (staged.title, staged.listing_hashes, staged.carried) == ("Title 1", {"title": "a"}, True)
    assert read_stage_dir(tmp_path / REFUSED_STAGE) == ["refused"]
    # Nothing to refuse once the stage moved on, nor in an unfinished one.
    assert not mark_refused(tmp_path, {})


def read_stage_dir(directory: Path) -> list[str]:
    lines = (directory / "main.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["lecture"]["title"] for line in lines]


def test_a_previous_record_that_cannot_be_read_back_is_absent_and_counted(tmp_path: Path) -> None:
    writer = StageWriter(tmp_path)
    writer.open()
    writer.write_lecture(crawled(record("1"), listing_hashes={"title": "a"}))
    writer.close(complete=True)
    with writer.path.open("a", encoding="utf-8") as fh:
        broken = {"kind": "lecture", "record": {**record("2"), "held_at": "the day after tomorrow"}}
        fh.write(json.dumps(broken) + "\n")
        fh.write(json.dumps({"kind": "lecture", "record": record("3"), "listing_hashes": ["no"]}) + "\n")
    start_stage(tmp_path)
    previous = PreviousStage(tmp_path)
    assert {"1", "2", "3"} <= set(previous.entries)
    assert previous.staged("2") is None and previous.staged("3") is None
    assert previous.damaged == {"2", "3"}
    assert previous.staged("1") is not None


def test_an_unfinished_stage_counts_what_its_lectures_counted(tmp_path: Path) -> None:
    writer = StageWriter(tmp_path)
    writer.open()
    writer.write_lecture(
        crawled(record("1"), counted=["underline/pages/fetched", "underline/extraction/next_data"])
    )
    writer.write_lecture(crawled(record("2"), carried=True, counted=["underline/pages/carried"]))
    writer.write_lecture(crawled(record("3"), counted=["underline/pages/fetched", "underline/fetch_failed"]))
    writer.close(complete=False)
    with writer.path.open("a", encoding="utf-8") as fh:
        fh.write(
            '{"kind":"lecture","record":{"lecture_id":"4"},"counted":["underline/fetch_'
        )  # torn by a kill
    assert staged_counts(tmp_path, "main") == {
        "stage/lectures": 3,
        "stage/carried": 1,
        "underline/pages/fetched": 2,
        "underline/pages/carried": 1,
        "underline/extraction/next_data": 1,
        "underline/fetch_failed": 1,
    }
    assert staged_counts(tmp_path, "main", ["underline/pages/"]) == {
        "underline/pages/fetched": 2,
        "underline/pages/carried": 1,
    }
    assert staged_counts(tmp_path, "other") == {}


# Records that are JSON but not the schema's, each as a stage line would hold it.
BAD_RECORDS: dict[str, dict[str, Any]] = {
    "held_at a number that reads as a date": {**record("2"), "held_at": 20251120},
    "held_at a number": {**record("2"), "held_at": 7},
    "authors a string": {**record("2"), "authors": "Ada Lovelace"},
    "an author not a mapping": {**record("2"), "authors": ["Ada Lovelace"]},
    "title missing": {k: v for k, v in record("2").items() if k != "title"},
    "is_premium 'yes'": {**record("2"), "is_premium": "yes"},
    "withdrawn 0": {**record("2"), "withdrawn": 0},
    "keywords a string": {**record("2"), "keywords": "nlp"},
    "source_urls of numbers": {**record("2"), "source_urls": [1, 2]},
    "lecture_id a number": {**record("2"), "lecture_id": 2},
}


def stage_with_bad_line(state: Path, bad: dict[str, Any], *, worker: str = "main") -> Path:
    """A stage whose ``worker`` staged lecture 1, then ``bad`` (its second line)."""
    writer = StageWriter(state, worker)
    writer.open()
    writer.write_lecture(crawled(record("1"), counted=["underline/pages/fetched"]))
    writer.close(complete=False)
    with writer.path.open("a", encoding="utf-8") as fh:
        fh.write(
            json.dumps({"kind": "lecture", "record": bad, "counted": ["underline/pages/fetched"]}) + "\n"
        )
    return writer.path


def test_a_bad_typed_line_is_counted_named_and_never_staged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for case, bad in BAD_RECORDS.items():
        state = tmp_path / case.replace(" ", "-").replace("'", "")
        path = stage_with_bad_line(state, bad)
        caplog.clear()
        staged = read_stage(state)
        assert ([r.lecture_id for r in staged.records], staged.bad_lines) == (["1"], 1), f"case {case}"
        assert f"Stage line {path}:2 is bad (" in caplog.text, f"case {case}"
        # A crawl resuming the stage fetches it again, and counts only what it can read back.
        assert unfinished_lecture_ids(state) == {"1"}, f"case {case}"
        assert staged_counts(state, "main") == {"stage/lectures": 1, "underline/pages/fetched": 1}, (
            f"case {case}"
        )


def test_a_bad_typed_line_of_the_last_stage_is_never_carried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for case, bad in BAD_RECORDS.items():
        state = tmp_path / case.replace(" ", "-").replace("'", "")
        path = stage_with_bad_line(state, bad)
        mark_complete(state, {})
        start_stage(state)
        previous = PreviousStage(state)
        caplog.clear()
        assert previous.staged("2") is None and previous.staged("2") is None, f"case {case}"
        assert previous.staged("1") is not None, f"case {case}"
        if not isinstance(bad["lecture_id"], str):
            assert "2" not in previous, f"case {case}"  # not indexed under any id
            continue
        assert previous.damaged == {"2"}, f"case {case}"
        moved = path.parent.with_name("stage.previous") / path.name
        assert f"The last stage's record of lecture 2 ({moved}:2) cannot be read back" in caplog.text, (
            f"case {case}"
        )


def test_a_bad_typed_line_in_a_fleets_shared_stage_is_counted_and_fetched_again(tmp_path: Path) -> None:
    good = StageWriter(tmp_path, "worker-a")
    good.open("run-1")
    good.write_lecture(Lecture.from_json(record("3")))
    good.close(complete=False)
    stage_with_bad_line(tmp_path, BAD_RECORDS["authors a string"], worker="worker-b")
    staged = read_stage(tmp_path)
    assert ([r.lecture_id for r in staged.records], staged.bad_lines) == (["1", "3"], 1)
    assert unfinished_lecture_ids(tmp_path) == {"1", "3"}


def test_a_session_line_a_release_could_not_take_is_counted_and_left_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = {"session_id": "9001", "event_id": "502", "name": "Poster 1", "start": "2025-11-05T09:00:00Z"}
    bad_sessions: dict[str, dict[str, Any]] = {
        "start not a timestamp": {**good, "session_id": "9002", "start": "tomorrow"},
        "name a number": {**good, "session_id": "9002", "name": 5},
        "session_id empty": {**good, "session_id": ""},
        "session_id a number": {**good, "session_id": 9002},
        "an unknown key": {**good, "session_id": "9002", "room": "A"},
    }
    for case, bad in bad_sessions.items():
        state = tmp_path / case.replace(" ", "-")
        writer = StageWriter(state)
        writer.open()
        writer.write_session(good)
        writer.write_session(bad)
        writer.close(complete=True)
        caplog.clear()
        staged = read_stage(state)
        assert ([s["session_id"] for s in staged.sessions], staged.bad_lines) == (["9001"], 1), f"case {case}"
        assert f"Stage line {writer.path}:2 is bad (" in caplog.text, f"case {case}"


ALIAS_URLS = [
    "http://x/events/1/lecture/7-t",
    'http://x/lecture/8-"quoted"\\slash',
    "http://x/lecture/9-caf\u00e9-\u65e5\u672c-\u2028-\x01-\t-\U0001f600",
]


@pytest.mark.parametrize("url", ALIAS_URLS)
def test_alias_lines_are_the_json_of_their_mapping(tmp_path: Path, url: str) -> None:
    # Alias lines are put together from their two strings: byte for byte what the encoder writes.
    writer = StageWriter(tmp_path, "w")
    writer.open()
    writer.write_lecture(Lecture.from_json(record("5")), aliases=[("7", url)])
    writer.write_aliases([("8", url), ("9", url)])
    writer.close(complete=False)
    # Split at line feeds only: a URL may hold a line separator that ``splitlines`` would split at.
    lines = (tmp_path / "stage" / "w.jsonl").read_text(encoding="utf-8").split("\n")[:-1]
    expected = [
        json.dumps(
            {"kind": "alias", "lecture_id": lecture_id, "url": url}, ensure_ascii=False, separators=(",", ":")
        )
        for lecture_id in ("7", "8", "9")
    ]
    assert [lines[0], *lines[2:]] == expected, f"case {url!r}"
    assert json.loads(lines[1])["kind"] == "lecture", f"case {url!r}"


def legacy_line(record: dict[str, Any], **side: Any) -> str:
    """A lecture line as the last version wrote it: the record, and its side data beside it in the line."""
    return (
        json.dumps({"kind": "lecture", "record": to_json_record(record), **side}, separators=(",", ":"))
        + "\n"
    )


def test_a_stage_the_last_version_wrote_reads_as_one_written_now(tmp_path: Path) -> None:
    """A user's ``stage.previous/`` from the last version is the base of the next refresh: its lecture
    lines (``{"kind": "lecture", "record": {...}, ...}``) read back as the same lines written now do, and
    the one listing hash of a stage from before per-field hashes is still read."""
    side: dict[str, dict[str, Any]] = {
        "1": {"listing_hashes": {"title": "a"}, "counted": ["underline/pages/fetched"]},
        "2": {"carried": True, "counted": ["underline/pages/carried"]},
        "3": {"listing_sha256": "f" * 64},
    }
    old, new = tmp_path / "old", tmp_path / "new"
    start_stage(old)
    (old / "stage" / "main.jsonl").write_text(
        "".join(legacy_line(record(i), **s) for i, s in side.items()), encoding="utf-8"
    )
    writer = StageWriter(new)
    writer.open()
    for i, s in side.items():
        writer.write_lecture(crawled(record(i), **{k: v for k, v in s.items() if k != "listing_sha256"}))
    writer.close(complete=False)
    for state in (old, new):
        assert unfinished_lecture_ids(state) == {"1", "2", "3"}, state
        assert staged_counts(state, "main") == {
            "stage/lectures": 3,
            "stage/carried": 1,
            "underline/pages/fetched": 1,
            "underline/pages/carried": 1,
        }, state
        mark_complete(state, {})
    assert read_stage(old).records == read_stage(new).records
    assert read_stage(old).bad_lines == read_stage(new).bad_lines == 0
    for state in (old, new):
        start_stage(state)  # the finished stage becomes the base of the next refresh
        assert refresh_base_ids(state) == {"1", "2", "3"}, state
    was, now = PreviousStage(old), PreviousStage(new)
    for i in side:
        before, after = was.staged(i), now.staged(i)
        assert before is not None and after is not None, i
        assert before.values() == after.values(), i
        assert (before.listing_hashes, before.carried, before.counted) == (
            after.listing_hashes,
            after.carried,
            after.counted,
        ), i
    hashed, single, unhashed = was.staged("1"), was.staged("3"), now.staged("3")
    assert hashed is not None and hashed.listing_hashes == {"title": "a"}
    assert single is not None and single.listing_sha256 == "f" * 64
    assert unhashed is not None and unhashed.listing_sha256 is None
    assert not was.damaged and not now.damaged
