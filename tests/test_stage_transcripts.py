"""Transcript lines of the stage: written by StageWriter.write_row, read back by the stage index and
by the last finished stage, a bad one counted, named and never taken."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from crawler.schema import TRANSCRIPT_FIELDS, Lecture, Transcript
from crawler.schema.check import validate_record
from crawler.state.previous_stage import PreviousStage
from crawler.state.stage import StageWriter, start_stage
from crawler.state.stage_index import index_stage
from crawler.state.stage_rows import TRANSCRIPT_ROWS, StagedTranscript
from tests.test_stage import record

URL = "https://assets.underline.io/lecture/7/subtitles/en.vtt"
INT32_MAX = 2**31 - 1


def full_transcript(**changes: Any) -> Transcript:
    """A track with every field set, int32 bounds in its segments."""
    values: dict[str, Any] = {
        "lecture_id": "7",
        "event_id": "502",
        "locale": "pt-BR",
        "language": "Português",
        "auto_generated": False,
        "subtitle_url": URL,
        "text": "Olá a todos. Bem-vindos",
        "segments": [
            {"start_ms": 0, "end_ms": 1250, "text": "Olá a todos."},
            {"start_ms": 1250, "end_ms": INT32_MAX, "text": "Bem-vindos"},
        ],
        "cues_skipped": 2,
        "problem": "not_utf8",
        "fetched_at": datetime(2026, 12, 1, 3, 4, 5, 678901, tzinfo=UTC),
    }
    values.update(changes)
    return Transcript(**values)


def stage_of(state: Path, *lines: tuple[Transcript, dict[str, str] | None]) -> Path:
    writer = StageWriter(state)
    writer.open()
    writer.write_lecture(Lecture.from_json(record("7")))
    for transcript, validators in lines:
        writer.write_row(TRANSCRIPT_ROWS, transcript, validators)
    writer.close(complete=True)
    return writer.path


def test_a_track_with_every_field_reads_back_as_written(tmp_path: Path) -> None:
    state = tmp_path / "state"
    full = full_transcript()
    empty = full_transcript(
        subtitle_url=URL.replace("en", "de"), text=None, segments=[], problem="not_found", locale=None
    )
    validators = {"etag": '"abc"', "last_modified": "Tue, 01 Dec 2026 03:04:05 GMT"}
    path = stage_of(state, (full, validators), (empty, None))

    index = index_stage(state)

    assert index.bad_lines == 0
    assert index.transcripts.rows_of("7") == [
        StagedTranscript(empty, {}),
        StagedTranscript(full, validators),
    ]
    assert index.transcripts.rows_of("8") == []
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[1])
    assert first["kind"] == "transcript"
    assert first["record"]["segments"][1] == {"start_ms": 1250, "end_ms": INT32_MAX, "text": "Bem-vindos"}
    assert first["record"]["fetched_at"] == "2026-12-01T03:04:05.678901Z"


def test_the_last_line_of_a_track_wins(tmp_path: Path) -> None:
    state = tmp_path / "state"
    stage_of(
        state,
        (full_transcript(text="first"), {"etag": '"1"'}),
        (full_transcript(subtitle_url=URL + "?v=2", text="other"), None),
        (full_transcript(text="second"), {"etag": '"2"'}),
    )

    found = index_stage(state).transcripts.rows_of("7")

    assert [(t.record.subtitle_url, t.record.text, t.validators) for t in found] == [
        (URL, "second", {"etag": '"2"'}),
        (URL + "?v=2", "other", {}),
    ]


BAD_LINES = {
    "segment end past int32": {"segments": [{"start_ms": 0, "end_ms": 2**31, "text": "x"}]},
    "text not a string": {"text": 12},
    "unknown field": {"speaker": "A"},
    "lecture_id missing": {"lecture_id": None},
    "subtitle_url empty": {"subtitle_url": ""},
    "segment member unknown": {"segments": [{"start_ms": 0, "end_ms": 1, "text": "x", "voice": "A"}]},
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_a_bad_transcript_line_is_counted_named_and_never_read_back(
    case: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "state"
    path = stage_of(state, (full_transcript(), None))
    bad = {**full_transcript(text="bad").to_json(), **BAD_LINES[case]}
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"kind": "transcript", "record": bad}) + "\n")

    with caplog.at_level(logging.WARNING, logger="crawler.state.stage_index"):
        index = index_stage(state)

    assert index.bad_lines == 1, f"case {case}"
    assert f"{path}:3" in caplog.text, f"case {case}"
    assert [t.record.text for t in index.transcripts.rows_of("7")] == ["Olá a todos. Bem-vindos"], (
        f"case {case}"
    )


def test_validators_that_are_not_strings_make_a_bad_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = stage_of(state)
    line = {"kind": "transcript", "record": full_transcript().to_json(), "validators": {"etag": 5}}
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")

    index = index_stage(state)

    assert (index.bad_lines, index.transcripts.rows_of("7")) == (1, [])


def test_the_last_finished_stage_gives_a_carried_lectures_tracks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "state"
    path = stage_of(state, (full_transcript(), {"etag": '"abc"'}))
    with path.open("a", encoding="utf-8") as fh:
        bad = {**full_transcript(subtitle_url=URL + "?bad").to_json(), "cues_skipped": "2"}
        fh.write(json.dumps({"kind": "transcript", "record": bad}) + "\n")
    start_stage(state)  # the next crawl moves the finished stage aside

    with caplog.at_level(logging.WARNING, logger="crawler.state.previous_stage"):
        previous = PreviousStage(state)

    assert previous.transcripts.rows_of("7") == [StagedTranscript(full_transcript(), {"etag": '"abc"'})]
    assert previous.transcripts.rows_of("8") == []
    assert "main.jsonl:3" in caplog.text


def test_the_index_keeps_where_a_track_is_not_its_text(tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = stage_of(state, (full_transcript(text="spoken words"), None))
    index = index_stage(state)
    # Read back from the file when asked: what the line says now is what is read.
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("spoken words", "spoken wordz"), encoding="utf-8")

    assert [t.record.text for t in index.transcripts.rows_of("7")] == ["spoken wordz"]


def test_a_transcript_without_its_lecture_or_count_is_refused_by_the_schema() -> None:
    whole = Transcript(
        lecture_id="1", event_id="502", subtitle_url="http://a/x.vtt", cues_skipped=0
    ).to_json()
    assert validate_record(whole, TRANSCRIPT_FIELDS) == []
    for name in ("lecture_id", "event_id", "subtitle_url", "cues_skipped"):
        lacking = {k: v for k, v in whole.items() if k != name}
        assert validate_record(lacking, TRANSCRIPT_FIELDS) == [f"{name} is missing"], f"case {name}"
    # A list the schema lets a record lack publishes empty.
    assert validate_record({k: v for k, v in whole.items() if k != "segments"}, TRANSCRIPT_FIELDS) == []
