"""The transcript lines of a stage: written by :meth:`crawler.state.stage.StageWriter.write_transcript`,
indexed here for the stage a publish reads (:mod:`crawler.state.stage_index`) and the last finished stage
a refresh carries from (:mod:`crawler.state.previous_stage`).

A transcript line is ``{"kind": "transcript", "record": <Transcript.to_json()>, "validators": {...}}``:
the record is the ``transcripts`` row, the validators (the subtitle file's ``etag`` and
``last_modified``) are what the crawler revalidates the file with, never published. Only where each
track's latest line is (file and offset) is kept in memory: a track's text is read back when it is asked
for, so that an index of tens of thousands of tracks holds neither their texts nor their URLs.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from crawler.json_types import JsonObject, JsonValue
from crawler.schema import TRANSCRIPT_FIELDS, Transcript
from crawler.schema.check import validate_record

TRANSCRIPT_KIND = "transcript"
# Beside the file's validators: the digest of the privacy rules the track was redacted under (a track
# redacted under others is redacted again when published).
PRIVACY_RULE_KEY = "privacy_rule"


@dataclass(frozen=True)
class StagedTranscript:
    """One subtitle track as a stage holds it: the ``transcripts`` row and the file's validators."""

    record: Transcript
    validators: dict[str, str] = field(default_factory=dict)


def transcript_line(transcript: Transcript, validators: Mapping[str, str] | None = None) -> JsonObject:
    """The stage line of a track (the validators only when there are any)."""
    line: JsonObject = {"kind": TRANSCRIPT_KIND, "record": transcript.to_json()}
    if validators:
        line["validators"] = {str(k): str(v) for k, v in validators.items()}
    return line


def transcript_line_problems(payload: Mapping[str, JsonValue]) -> list[str]:
    """Why a transcript line cannot be read back (empty when it can): its record fails the schema's check
    of a ``transcripts`` row, its ``subtitle_url`` is empty, or its validators are not a map of strings."""
    record = payload.get("record")
    if not isinstance(record, dict):
        return ["record is not an object"]
    problems = validate_record(record, TRANSCRIPT_FIELDS)
    if not problems and not record.get("subtitle_url"):
        problems.append("subtitle_url is missing")
    validators = payload.get("validators", {})
    if not isinstance(validators, dict) or not all(isinstance(v, str) for v in validators.values()):
        problems.append("validators is not a map of strings")
    return problems


def read_staged_transcript(path: Path, offset: int) -> StagedTranscript:
    """The track whose line starts at ``offset`` of ``path`` (a line the index checked)."""
    with path.open("rb") as fh:
        fh.seek(offset)
        payload = json.loads(fh.readline())
    validators = payload.get("validators") or {}
    return StagedTranscript(Transcript.from_json(payload["record"]), dict(validators))


class TranscriptLines:
    """Where each track's latest transcript line is, by lecture id and subtitle URL: the last line read
    of a (lecture_id, subtitle_url) wins. Per track, only its line's file (an index into ``paths``), its
    offset and a hash of its URL are kept, in arrays; its URL is read back from the line when a second
    line of the lecture has the same hash, so that tens of thousands of tracks cost a few megabytes."""

    def __init__(self) -> None:
        self.paths: list[Path] = []
        self._path_index: dict[Path, int] = {}
        # Per lecture id its tracks' rows in the arrays below: one int, or a tuple when it has several.
        self._rows: dict[str, int | tuple[int, ...]] = {}
        self._file = array("H")
        self._offset = array("q")
        self._url = array("q")

    def add(self, payload: Mapping[str, JsonValue], path: Path, offset: int) -> list[str]:
        """Index one transcript line; returns its problems (then it is not indexed)."""
        problems = transcript_line_problems(payload)
        if problems:
            return problems
        record = payload["record"]
        assert isinstance(record, dict)
        file = self._path_index.setdefault(path, len(self.paths))
        if file == len(self.paths):
            self.paths.append(path)
        lecture_id, url = str(record["lecture_id"]), str(record["subtitle_url"])
        rows = self._rows_of(lecture_id)
        for row in rows:
            if self._url[row] == hash(url) and self._read(row).record.subtitle_url == url:
                self._file[row], self._offset[row] = file, offset
                return []
        row = len(self._offset)
        self._file.append(file)
        self._offset.append(offset)
        self._url.append(hash(url))
        self._rows[lecture_id] = (*rows, row) if rows else row
        return []

    def _rows_of(self, lecture_id: str) -> tuple[int, ...]:
        rows = self._rows.get(lecture_id)
        return () if rows is None else rows if isinstance(rows, tuple) else (rows,)

    def _read(self, row: int) -> StagedTranscript:
        return read_staged_transcript(self.paths[self._file[row]], self._offset[row])

    def __len__(self) -> int:
        return len(self._offset)

    def lecture_ids(self) -> list[str]:
        return list(self._rows)

    def transcripts_of(self, lecture_id: str) -> list[StagedTranscript]:
        """The lecture's tracks, read back from the stage, in subtitle URL order."""
        found = [self._read(row) for row in self._rows_of(lecture_id)]
        return sorted(found, key=lambda t: t.record.subtitle_url)
