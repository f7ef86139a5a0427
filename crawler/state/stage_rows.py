"""The lines of a stage that hold rows read from a file a lecture names (its subtitle tracks, its slide
deck and poster): written by :meth:`crawler.state.stage.StageWriter.write_row`, indexed here for the stage
a publish reads (:mod:`crawler.state.stage_index`) and the last finished stage a refresh carries from
(:mod:`crawler.state.previous_stage`).

Such a line is ``{"kind": <kind>, "record": <record.to_json()>, "validators": {...}}``: the record is the
table's row, the validators (the file's ``etag`` and ``last_modified``, the privacy rules it was redacted
under) are what the crawler revalidates the file with, never published. Each kind of row is a
:class:`RowKind`: its line kind, its record class and the column that names a row among its lecture's.
Only where each row's latest line is (file and offset) is kept in memory: a row is read back when it is
asked for, so that an index of tens of thousands of rows holds neither their texts nor their names.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar, cast

from crawler.json_types import JsonObject, JsonValue
from crawler.schema import SLIDES_FIELDS, TRANSCRIPT_FIELDS, Slides, Transcript
from crawler.schema.check import validate_record
from crawler.schema.columns import Field

# Beside the file's validators: the digest of the privacy rules the row was redacted under (a row
# redacted under others is redacted again when published).
PRIVACY_RULE_KEY = "privacy_rule"


# A row read from a file a lecture names: a record of the schema with its JSON form.
R = TypeVar("R", bound=Transcript | Slides)


@dataclass(frozen=True)
class StagedRow(Generic[R]):
    """One row as a stage holds it: the table's record and the file's validators."""

    record: R
    validators: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RowKind(Generic[R]):
    """A kind of stage line holding rows of one table: its ``kind``, the record class and its fields, and the
    column naming a row among its lecture's (``name_field``)."""

    kind: str
    record: type[R]
    fields: tuple[Field, ...]
    name_field: str

    def line(self, record: R, validators: Mapping[str, str] | None = None) -> JsonObject:
        """The stage line of a row (the validators only when there are any)."""
        line: JsonObject = {"kind": self.kind, "record": record.to_json()}
        if validators:
            line["validators"] = {str(k): str(v) for k, v in validators.items()}
        return line

    def name_of(self, record: R) -> str:
        return str(getattr(record, self.name_field))

    def problems(self, payload: Mapping[str, JsonValue]) -> list[str]:
        """Why a line cannot be read back (empty when it can): its record fails the schema's check of the
        table's row, its naming column is empty, or its validators are not a map of strings."""
        record = payload.get("record")
        if not isinstance(record, dict):
            return ["record is not an object"]
        problems = validate_record(record, self.fields)
        if not problems and not record.get(self.name_field):
            problems.append(f"{self.name_field} is missing")
        validators = payload.get("validators", {})
        if not isinstance(validators, dict) or not all(isinstance(v, str) for v in validators.values()):
            problems.append("validators is not a map of strings")
        return problems

    def read(self, path: Path, offset: int) -> StagedRow[R]:
        """The row whose line starts at ``offset`` of ``path`` (a line the index checked)."""
        with path.open("rb") as fh:
            fh.seek(offset)
            payload = json.loads(fh.readline())
        validators = payload.get("validators") or {}
        return StagedRow(cast(R, self.record.from_json(payload["record"])), dict(validators))


class RowLines(Generic[R]):
    """Where each row's latest line of one :class:`RowKind` is, by lecture id and naming column: the last
    line read of a (lecture_id, name) wins. Per row, only its line's file (an index into ``paths``), its
    offset and a hash of its name are kept, in arrays; its name is read back from the line when a second
    line of the lecture has the same hash, so that tens of thousands of rows cost a few megabytes."""

    def __init__(self, kind: RowKind[R]) -> None:
        self.kind = kind
        self.paths: list[Path] = []
        self._path_index: dict[Path, int] = {}
        # Per lecture id its rows in the arrays below: one int, or a tuple when it has several.
        self._rows: dict[str, int | tuple[int, ...]] = {}
        self._file = array("H")
        self._offset = array("q")
        self._name = array("q")

    def add(self, payload: Mapping[str, JsonValue], path: Path, offset: int) -> list[str]:
        """Index one line; returns its problems (then it is not indexed)."""
        problems = self.kind.problems(payload)
        if problems:
            return problems
        record = payload["record"]
        assert isinstance(record, dict)
        file = self._path_index.setdefault(path, len(self.paths))
        if file == len(self.paths):
            self.paths.append(path)
        lecture_id, name = str(record["lecture_id"]), str(record[self.kind.name_field])
        rows = self._rows_of(lecture_id)
        for row in rows:
            if self._name[row] == hash(name) and self.kind.name_of(self._read(row).record) == name:
                self._file[row], self._offset[row] = file, offset
                return []
        row = len(self._offset)
        self._file.append(file)
        self._offset.append(offset)
        self._name.append(hash(name))
        self._rows[lecture_id] = (*rows, row) if rows else row
        return []

    def _rows_of(self, lecture_id: str) -> tuple[int, ...]:
        rows = self._rows.get(lecture_id)
        return () if rows is None else rows if isinstance(rows, tuple) else (rows,)

    def _read(self, row: int) -> StagedRow[R]:
        return self.kind.read(self.paths[self._file[row]], self._offset[row])

    def __len__(self) -> int:
        return len(self._offset)

    def lecture_ids(self) -> list[str]:
        return list(self._rows)

    def rows_of(self, lecture_id: str) -> list[StagedRow[R]]:
        """The lecture's rows, read back from the stage, in the order of their names."""
        found = [self._read(row) for row in self._rows_of(lecture_id)]
        return sorted(found, key=lambda t: self.kind.name_of(t.record))


# The transcript lines: one subtitle track of a lecture, its ``transcripts`` row and the subtitle file's
# validators, named among its lecture's by ``subtitle_url``.
TRANSCRIPT_KIND = "transcript"

TRANSCRIPT_ROWS: RowKind[Transcript] = RowKind(TRANSCRIPT_KIND, Transcript, TRANSCRIPT_FIELDS, "subtitle_url")
# One subtitle track as a stage holds it: the ``transcripts`` row and the file's validators.
StagedTranscript = StagedRow[Transcript]

# The slides lines: one document of a lecture (its slide deck or its poster), its ``slides`` row and the
# PDF's validators, named among its lecture's by ``document``.
SLIDES_KIND = "slides"

SLIDES_ROWS: RowKind[Slides] = RowKind(SLIDES_KIND, Slides, SLIDES_FIELDS, "document")
# One document as a stage holds it: the ``slides`` row and the PDF's validators.
StagedSlides = StagedRow[Slides]
