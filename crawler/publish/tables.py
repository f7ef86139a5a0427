"""The three tables of a release (``lectures``, ``events``, ``sessions``), derived from lecture records.

The ``lectures`` table is :data:`crawler.schema.FIELDS` as is. The ``events`` and ``sessions`` tables are
summaries of it; their column types are taken from the lecture fields they summarize, so a change of a
type in the schema reaches every table.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import pyarrow as pa

from crawler import schema

Shape = Literal["same", "list", "count"]


@dataclass(frozen=True)
class Column:
    """A column: its type is the ``source`` lecture field's type, a list of it, or a count (int64)."""

    name: str
    description: str
    nullable: bool
    source: str | None
    shape: Shape = "same"


@dataclass(frozen=True)
class TableSpec:
    """One dataset config: its columns, its unique sort key and what a row is."""

    name: str
    description: str
    columns: tuple[Column, ...]
    key: str

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def arrow_schema(self) -> pa.Schema:
        lecture_schema = schema.arrow_schema()
        fields = [pa.field(c.name, _arrow_type(c, lecture_schema), nullable=c.nullable) for c in self.columns]
        metadata = lecture_schema.metadata if self is LECTURES else {"description": self.description}
        return pa.schema(fields, metadata=metadata)

    def features(self) -> Any:
        """The ``datasets.Features`` of this table (datasets is imported lazily: it is heavy)."""
        import datasets

        lecture_features = schema.hf_features()

        def feature(column: Column) -> Any:
            if column.shape == "count":
                return datasets.Value("int64")
            assert column.source is not None
            base = lecture_features[column.source]
            return datasets.List(base) if column.shape == "list" else base

        return datasets.Features({c.name: feature(c) for c in self.columns})


def _arrow_type(column: Column, lecture_schema: pa.Schema) -> pa.DataType:
    if column.shape == "count":
        return pa.int64()
    assert column.source is not None
    base = lecture_schema.field(column.source).type
    return pa.list_(base) if column.shape == "list" else base


def type_label(data_type: pa.DataType) -> str:
    """A short type name for the card, e.g. ``list<string>`` or ``timestamp[us, tz=UTC]``."""
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        return f"list<{type_label(data_type.value_type)}>"
    return str(data_type)


LECTURES = TableSpec(
    name="lectures",
    description="One row per lecture page of the crawled events.",
    columns=tuple(Column(f.name, f.description, f.nullable, f.name) for f in schema.FIELDS),
    key=schema.SORT_KEY,
)
EVENTS = TableSpec(
    name="events",
    description="One row per event, summarizing its lectures in this release.",
    columns=(
        Column("event_id", "Underline event id, as in `lectures.event_id`.", False, "event_id"),
        Column(
            "event_name", "Event name (the most frequent `event_name` of its lectures).", True, "event_name"
        ),
        Column("lecture_count", "Number of lectures of the event in this release.", False, None, "count"),
        Column(
            "first_held_at",
            "Earliest `held_at` of its lectures (UTC); null if none is known.",
            True,
            "held_at",
        ),
        Column(
            "last_held_at", "Latest `held_at` of its lectures (UTC); null if none is known.", True, "held_at"
        ),
    ),
    key="event_id",
)
SESSIONS = TableSpec(
    name="sessions",
    description="One row per event session, summarizing its lectures in this release.",
    columns=(
        Column("session_id", "Underline session id, as in `lectures.session_id`.", False, "session_id"),
        Column(
            "session_name",
            "Session name (the most frequent `session_name` of its lectures).",
            True,
            "session_name",
        ),
        Column("event_id", "Id of the event the session belongs to.", False, "event_id"),
        Column("lecture_count", "Number of lectures of the session in this release.", False, None, "count"),
        Column(
            "presentation_types",
            "Distinct presentation types of its lectures, sorted.",
            False,
            "presentation_type",
            "list",
        ),
    ),
    key="session_id",
)
SPECS: tuple[TableSpec, ...] = (LECTURES, EVENTS, SESSIONS)
SPECS_BY_NAME: dict[str, TableSpec] = {s.name: s for s in SPECS}
DEFAULT_CONFIG = LECTURES.name


class InvalidRecordsError(ValueError):
    """Records that cannot be published; nothing has been written when this is raised."""

    def __init__(self, problems: Sequence[str], total: int) -> None:
        self.problems = tuple(problems)
        shown = "\n".join(f"  - {p}" for p in self.problems[:20])
        more = f"\n  ... and {len(self.problems) - 20} more" if len(self.problems) > 20 else ""
        super().__init__(f"{len(self.problems)} problem(s) in {total} record(s):\n{shown}{more}")


def lecture_rows(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Validated records as rows (timestamps as aware datetimes), sorted by lecture id.

    Raises :class:`InvalidRecordsError` listing every invalid record, duplicate id and wrong hash.
    """
    problems: list[str] = []
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    total = 0
    for index, record in enumerate(records):
        total += 1
        label = f"record {index} (lecture_id={record.get('lecture_id')!r})"
        found = schema.validate_record(record)
        if found:
            problems.extend(f"{label}: {p}" for p in found)
            continue
        row = schema.from_json_record(record)
        if row["lecture_id"] in seen:
            problems.append(f"{label}: duplicate lecture_id")
            continue
        seen.add(row["lecture_id"])
        if row["content_sha256"] != schema.content_sha256(row):
            problems.append(f"{label}: content_sha256 does not match the record's content")
            continue
        rows.append(row)
    if problems:
        raise InvalidRecordsError(problems, total)
    rows.sort(key=lambda r: r[LECTURES.key])
    return rows


def _most_common(values: Iterable[str | None]) -> str | None:
    counts = Counter(v for v in values if v is not None)
    if not counts:
        return None
    return min(counts.items(), key=lambda item: (-item[1], item[0]))[0]


def _held(rows: Iterable[Mapping[str, Any]]) -> list[datetime]:
    return [r["held_at"] for r in rows if r["held_at"] is not None]


def event_rows(lectures: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in lectures:
        groups[row["event_id"]].append(row)
    out = []
    for event_id in sorted(groups):
        group = groups[event_id]
        held = _held(group)
        out.append(
            {
                "event_id": event_id,
                "event_name": _most_common(r["event_name"] for r in group),
                "lecture_count": len(group),
                "first_held_at": min(held, default=None),
                "last_held_at": max(held, default=None),
            }
        )
    return out


def session_rows(lectures: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in lectures:
        if row["session_id"] is not None:
            groups[row["session_id"]].append(row)
    out = []
    for session_id in sorted(groups):
        group = groups[session_id]
        out.append(
            {
                "session_id": session_id,
                "session_name": _most_common(r["session_name"] for r in group),
                "event_id": _most_common(r["event_id"] for r in group),
                "lecture_count": len(group),
                "presentation_types": sorted({r["presentation_type"] for r in group} - {None}),
            }
        )
    return out


def build_tables(lectures: Sequence[Mapping[str, Any]]) -> dict[str, pa.Table]:
    """The tables of a release, by config name, from rows made by :func:`lecture_rows`."""
    rows: dict[str, Sequence[Mapping[str, Any]]] = {
        LECTURES.name: lectures,
        EVENTS.name: event_rows(lectures),
        SESSIONS.name: session_rows(lectures),
    }
    return {spec.name: _table(rows[spec.name], spec) for spec in SPECS}


def _table(rows: Sequence[Mapping[str, Any]], spec: TableSpec) -> pa.Table:
    columns = {name: [row[name] for row in rows] for name in spec.column_names}
    return pa.Table.from_pydict(columns, schema=spec.arrow_schema())
