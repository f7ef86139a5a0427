"""The tables of a release (``lectures``, ``events``, ``sessions``, ``authors``), derived from lecture
records, and the per-event configs that share the ``lectures`` files.

The ``lectures`` table is :data:`crawler.schema.FIELDS` as is. The other tables are summaries of it; their
column types are taken from the lecture fields they summarize (or from a schema kind for the few columns
no lecture field holds), so a change of a type in the schema reaches every table.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypedDict

import pyarrow as pa

from crawler import schema
from crawler.schema import Lecture, has_value
from crawler.text.privacy import (
    PLACEHOLDER,
    RECORD_URL_FIELDS,
    URL_PLACEHOLDER,
    scrub_value,
    strings_to_scrub,
)

Shape = Literal["same", "list", "count"]


@dataclass(frozen=True)
class Column:
    """A column: its type is the ``source`` lecture field's type, a list of it, a count (int64), or, when
    no lecture field holds it, the schema kind ``kind``."""

    name: str
    description: str
    nullable: bool
    source: str | None
    shape: Shape = "same"
    kind: schema.Kind | None = None


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
            if column.kind is not None:
                base = schema.hf_feature(column.kind)
                return datasets.List(base) if column.shape == "list" else base
            assert column.source is not None
            base = lecture_features[column.source]
            return datasets.List(base) if column.shape == "list" else base

        return datasets.Features({c.name: feature(c) for c in self.columns})


def _arrow_type(column: Column, lecture_schema: pa.Schema) -> pa.DataType:
    if column.shape == "count":
        return pa.int64()
    if column.kind is not None:
        base = schema.arrow_type(column.kind)
    else:
        assert column.source is not None
        base = lecture_schema.field(column.source).type
    return pa.list_(base) if column.shape == "list" else base


def type_label(data_type: pa.DataType) -> str:
    """A short type name for the card, e.g. ``list<string>``, ``list<struct<name: string>>``."""
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        return f"list<{type_label(data_type.value_type)}>"
    if pa.types.is_struct(data_type):
        members = ", ".join(f"{f.name}: {type_label(f.type)}" for f in data_type)
        return f"struct<{members}>"
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
            "page_lectures",
            "Lectures whose fields were read from their own page (`extraction` other than `api_listing`):"
            " they carry `text` and the page-only fields such as `related_lecture_ids`.",
            False,
            None,
            "count",
        ),
        Column(
            "listing_only_lectures",
            "Lectures known from the event's listing alone (`extraction` `api_listing`): their page could"
            " not be read, so the page-only fields are empty.",
            False,
            None,
            "count",
        ),
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
        Column(
            "description",
            "The session's description as the site publishes it; null when the crawl did not read it.",
            True,
            None,
            kind="string",
        ),
        Column(
            "starts_at", "When the session starts (UTC); null when unknown.", True, None, kind="timestamp"
        ),
        Column("ends_at", "When the session ends (UTC); null when unknown.", True, None, kind="timestamp"),
    ),
    key="session_id",
)
AUTHORS = TableSpec(
    name="authors",
    description="One row per author as published (ORCID iD when known, else the name), with their lectures.",
    columns=(
        Column(
            "author_key",
            "`orcid:<ORCID iD>` when the site gives the author's ORCID iD, else `name:<name>`. Two"
            " spellings of one name are two rows; a name with and without an ORCID iD is two rows too.",
            False,
            None,
            kind="string",
        ),
        Column(
            "name",
            "The author's name (the most frequent spelling under this key).",
            False,
            None,
            kind="string",
        ),
        Column("orcid", "The bare ORCID iD; null when the site gives none.", True, None, kind="string"),
        Column(
            "affiliations",
            "Every affiliation listed with this author in any lecture, sorted.",
            False,
            None,
            "list",
            kind="string",
        ),
        Column("lecture_ids", "Ids of the author's lectures, sorted.", False, "lecture_id", "list"),
        Column("event_ids", "Ids of the events of those lectures, sorted.", False, "event_id", "list"),
        Column("lecture_count", "Number of the author's lectures in this release.", False, None, "count"),
    ),
    key="author_key",
)
SPECS: tuple[TableSpec, ...] = (LECTURES, EVENTS, SESSIONS, AUTHORS)
SPECS_BY_NAME: dict[str, TableSpec] = {s.name: s for s in SPECS}
DEFAULT_CONFIG = LECTURES.name
# Names an event's config may not take: the tables' configs, and the name datasets gives an unnamed one.
RESERVED_CONFIG_NAMES = frozenset([*SPECS_BY_NAME, "default"])


@dataclass(frozen=True)
class EventConfig:
    """An event's own config: the ``lectures`` files of that event only."""

    event_id: str
    event_name: str | None
    config_name: str
    directory: str  # the event's folder under ``data/lectures``


def slug(text: str) -> str:
    """Lower-case ASCII words joined by ``-``: ``EMNLP 2025`` -> ``emnlp-2025``."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


def event_directory(event_id: str) -> str:
    """The event's folder: ``event-<id>``, the id made path-safe (plus a digest if that changed it)."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "_", event_id)
    if safe != event_id or not safe:
        safe = f"{safe}-{hashlib.sha256(event_id.encode()).hexdigest()[:8]}"
    return f"event-{safe}"


def event_configs(events: Sequence[Mapping[str, object]]) -> list[EventConfig]:
    """One config per event, named after the event (``emnlp-2025``), else ``event-<id>``; unique.

    ``events`` are rows of the ``events`` table (``event_id``, ``event_name``). Events whose names give
    the same slug, or a slug taken by a table's config, all get ``-<id>`` appended, so a name does not
    depend on which event was seen first.
    """
    names = {str(e["event_id"]): _event_name(e) for e in events}
    wanted = {event_id: slug(name or "") for event_id, name in names.items()}
    counts = Counter(wanted.values())
    out = []
    taken: set[str] = set()
    for event_id in sorted(names):
        directory = event_directory(event_id)
        name = wanted[event_id]
        if not name:
            name = directory
        elif counts[name] > 1 or name in RESERVED_CONFIG_NAMES:
            name = f"{name}-{slug(event_id) or directory}"
        while name in taken or name in RESERVED_CONFIG_NAMES:
            name = f"{name}-{directory}"
        taken.add(name)
        out.append(EventConfig(event_id, names[event_id], name, directory))
    return out


def _event_name(event: Mapping[str, object]) -> str | None:
    name = event.get("event_name")
    return name if isinstance(name, str) else None


class InvalidRecordsError(ValueError):
    """Records that cannot be published; nothing has been written when this is raised."""

    def __init__(self, problems: Sequence[str], total: int) -> None:
        self.problems = tuple(problems)
        shown = "\n".join(f"  - {p}" for p in self.problems[:20])
        more = f"\n  ... and {len(self.problems) - 20} more" if len(self.problems) > 20 else ""
        super().__init__(f"{len(self.problems)} problem(s) in {total} record(s):\n{shown}{more}")


def scrubbed_record(record: Mapping[str, object]) -> Mapping[str, object]:
    """``record`` with every e-mail address in its strings replaced, as the crawl's privacy step does
    (the record itself when it holds none); an edited record gets its content hash computed again."""
    strings: list[str] = []
    _strings(record.values(), strings)
    if not strings_to_scrub(strings):
        # One search over all of the record's strings: most records hold no address at all.
        return record
    out: dict[str, object] = {}
    found = 0
    for name, value in record.items():
        is_url = name in RECORD_URL_FIELDS
        out[name], count = scrub_value(value, URL_PLACEHOLDER if is_url else PLACEHOLDER, url=is_url)
        found += count
    if not found:
        return record
    out["content_sha256"] = schema.content_sha256(out)
    return out


def _strings(values: Iterable[object], out: list[str]) -> None:
    for value in values:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list | tuple):
            _strings(value, out)
        elif isinstance(value, Mapping):
            _strings(value.values(), out)


def lecture_rows(records: Iterable[Lecture | Mapping[str, object]]) -> list[Lecture]:
    """Validated records (lectures, or mappings such as a caller's or a stage's records) as lectures,
    sorted by lecture id.

    Every record is scrubbed of e-mail addresses first (:func:`scrubbed_record`): whatever the stage or
    an earlier release holds, no address reaches a table. Raises :class:`InvalidRecordsError` listing
    every invalid record, duplicate id and wrong hash.
    """
    problems: list[str] = []
    rows: list[Lecture] = []
    seen: set[str] = set()
    total = 0
    for index, given in enumerate(records):
        total += 1
        record = scrubbed_record(given.values() if isinstance(given, Lecture) else given)
        label = f"record {index} (lecture_id={record.get('lecture_id')!r})"
        found = schema.validate_record(record)
        if found:
            problems.extend(f"{label}: {p}" for p in found)
            continue
        row = Lecture.from_json(record)
        if row.lecture_id in seen:
            problems.append(f"{label}: duplicate lecture_id")
            continue
        seen.add(row.lecture_id)
        if row.content_sha256 != schema.content_sha256(row.values()):
            problems.append(f"{label}: content_sha256 does not match the record's content")
            continue
        rows.append(row)
    if problems:
        raise InvalidRecordsError(problems, total)
    rows.sort(key=lambda r: r.lecture_id)
    return rows


def _most_common(counts: Counter[str]) -> str | None:
    """The most frequent value, the smallest of the most frequent on a tie (so that the order the
    lectures come in does not matter); None when there is none."""
    if not counts:
        return None
    return min(counts.items(), key=lambda item: (-item[1], item[0]))[0]


class EventRow(TypedDict):
    """A row of the ``events`` table."""

    event_id: str
    event_name: str | None
    lecture_count: int
    page_lectures: int
    listing_only_lectures: int
    first_held_at: datetime | None
    last_held_at: datetime | None


@dataclass
class _EventSeen:
    names: Counter[str] = field(default_factory=Counter)
    lectures: int = 0
    page: int = 0
    first_held_at: datetime | None = None
    last_held_at: datetime | None = None

    def add(self, row: Lecture) -> None:
        self.lectures += 1
        self.page += page_derived(row.extraction)
        if row.event_name is not None:
            self.names[row.event_name] += 1
        held = row.held_at
        if held is not None:
            self.first_held_at = held if self.first_held_at is None else min(self.first_held_at, held)
            self.last_held_at = held if self.last_held_at is None else max(self.last_held_at, held)

    def row(self, event_id: str) -> EventRow:
        return {
            "event_id": event_id,
            "event_name": _most_common(self.names),
            "lecture_count": self.lectures,
            "page_lectures": self.page,
            "listing_only_lectures": self.lectures - self.page,
            "first_held_at": self.first_held_at,
            "last_held_at": self.last_held_at,
        }


SESSION_KEYS = frozenset(["session_id", "event_id", "name", "description", "start", "end"])


class SessionDetail(TypedDict):
    """What a caller knows about a session beyond its lectures (see :func:`session_details`)."""

    session_id: str
    event_id: str | None
    name: str | None
    description: str | None
    start: datetime | None
    end: datetime | None


def _optional_text(entry: Mapping[str, object], key: str, index: int) -> str | None:
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"sessions[{index}]: {key} must be a string or None")
    return None if value is None else str(scrub_value(value)[0])


def session_detail(entry: Mapping[str, object], index: int) -> SessionDetail:
    """One session entry checked, its timestamps parsed and e-mail addresses replaced in its strings."""
    unknown = set(entry) - SESSION_KEYS
    if unknown:
        raise ValueError(
            f"sessions[{index}]: unknown keys {sorted(unknown)}; allowed: {sorted(SESSION_KEYS)}"
        )
    session_id = entry.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(f"sessions[{index}]: session_id must be a non-empty string")
    texts = {key: _optional_text(entry, key, index) for key in ("event_id", "name", "description")}
    try:
        start = schema.parse_timestamp(entry.get("start"))
        end = schema.parse_timestamp(entry.get("end"))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"sessions[{index}]: start/end must be ISO 8601: {exc}") from None
    return SessionDetail(
        session_id=str(scrub_value(session_id)[0]),
        event_id=texts["event_id"],
        name=texts["name"],
        description=texts["description"],
        start=start,
        end=end,
    )


def session_details(sessions: Iterable[Mapping[str, object]] | None) -> dict[str, SessionDetail]:
    """What the caller knows about sessions (``session_id``, ``event_id``, ``name``, ``description``,
    ``start``, ``end``), by session id, timestamps parsed, e-mail addresses replaced in every string.
    Raises ValueError naming a bad entry."""
    out: dict[str, SessionDetail] = {}
    for index, entry in enumerate(sessions or ()):
        detail = session_detail(entry, index)
        out[str(entry["session_id"])] = detail
    return out


class SessionRow(TypedDict):
    """A row of the ``sessions`` table."""

    session_id: str
    session_name: str | None
    event_id: str | None
    lecture_count: int
    presentation_types: list[str]
    description: str | None
    starts_at: datetime | None
    ends_at: datetime | None


@dataclass
class _SessionSeen:
    names: Counter[str] = field(default_factory=Counter)
    event_ids: Counter[str] = field(default_factory=Counter)
    lectures: int = 0
    presentation_types: set[str] = field(default_factory=set)

    def add(self, row: Lecture) -> None:
        self.lectures += 1
        if row.session_name is not None:
            self.names[row.session_name] += 1
        if row.event_id is not None:
            self.event_ids[row.event_id] += 1
        if row.presentation_type is not None:
            self.presentation_types.add(row.presentation_type)

    def row(self, session_id: str, known: SessionDetail | None) -> SessionRow:
        """The session's row, completed by what the caller knows of it: the lectures' own session name
        wins, the caller's fills in."""
        return {
            "session_id": session_id,
            "session_name": _most_common(self.names) or (known["name"] if known else None),
            "event_id": _most_common(self.event_ids),
            "lecture_count": self.lectures,
            "presentation_types": sorted(self.presentation_types),
            "description": known["description"] if known else None,
            "starts_at": known["start"] if known else None,
            "ends_at": known["end"] if known else None,
        }


def author_key(author: schema.Author) -> str:
    """``orcid:<iD>`` when the author has an ORCID iD, else ``name:<name>``."""
    orcid = author.get("orcid")
    return f"orcid:{orcid}" if has_value(orcid) else f"name:{author['name']}"


class AuthorRow(TypedDict):
    """A row of the ``authors`` table."""

    author_key: str
    name: str | None
    orcid: str | None
    affiliations: list[str]
    lecture_ids: list[str]
    event_ids: list[str]
    lecture_count: int


@dataclass
class _AuthorSeen:
    names: Counter[str] = field(default_factory=Counter)
    affiliations: set[str] = field(default_factory=set)
    lecture_ids: set[str] = field(default_factory=set)
    event_ids: set[str] = field(default_factory=set)
    orcid: str | None = None

    def add(self, author: schema.Author, row: Lecture) -> None:
        self.names[author["name"]] += 1
        self.affiliations.update(a for a in author.get("affiliations") or () if a)
        self.lecture_ids.add(row.lecture_id)
        self.event_ids.add(str(row.event_id))
        self.orcid = author.get("orcid") or None

    def row(self, key: str) -> AuthorRow:
        return {
            "author_key": key,
            "name": _most_common(self.names),
            "orcid": self.orcid,
            "affiliations": sorted(self.affiliations),
            "lecture_ids": sorted(self.lecture_ids),
            "event_ids": sorted(self.event_ids),
            "lecture_count": len(self.lecture_ids),
        }


class SummaryTables:
    """The ``events``, ``sessions`` and ``authors`` tables, gathered a few lectures at a time: what they
    keep is per event, per session and per author (with the ids of the author's lectures, which the
    ``authors`` table lists), never a lecture's record, so that a release can add its lectures one
    event at a time and drop each event's records before the next."""

    def __init__(self) -> None:
        self._events: dict[str, _EventSeen] = defaultdict(_EventSeen)
        self._sessions: dict[str, _SessionSeen] = defaultdict(_SessionSeen)
        self._authors: dict[str, _AuthorSeen] = defaultdict(_AuthorSeen)

    def add(self, lectures: Iterable[Lecture]) -> None:
        for row in lectures:
            self._events[str(row.event_id)].add(row)
            if row.session_id is not None:
                self._sessions[row.session_id].add(row)
            for author in row.authors or ():
                if author.get("name"):
                    self._authors[author_key(author)].add(author, row)

    def tables(self, sessions: Mapping[str, SessionDetail] | None = None) -> dict[str, pa.Table]:
        """The three tables, each sorted by its key; ``sessions`` (see :func:`session_details`) completes
        the sessions the lectures name."""
        details = sessions or {}
        return {
            EVENTS.name: _table([e.row(k) for k, e in sorted(self._events.items())], EVENTS),
            SESSIONS.name: _table(
                [s.row(k, details.get(k)) for k, s in sorted(self._sessions.items())], SESSIONS
            ),
            AUTHORS.name: _table([a.row(k) for k, a in sorted(self._authors.items())], AUTHORS),
        }


def build_tables(
    lectures: Sequence[Lecture], sessions: Mapping[str, SessionDetail] | None = None
) -> dict[str, pa.Table]:
    """The tables of a release, by config name, from lectures made by :func:`lecture_rows` and the
    session details made by :func:`session_details`."""
    return {LECTURES.name: lecture_table(lectures), **summary_tables(lectures, sessions)}


def _table(rows: Sequence[Mapping[str, object]], spec: TableSpec) -> pa.Table:
    columns = {name: [row[name] for row in rows] for name in spec.column_names}
    return pa.Table.from_pydict(columns, schema=spec.arrow_schema())


def summary_tables(
    lectures: Iterable[Lecture], sessions: Mapping[str, SessionDetail] | None = None
) -> dict[str, pa.Table]:
    """The ``events``, ``sessions`` and ``authors`` tables of :func:`build_tables`, without the
    ``lectures`` table itself (a release gathers them event by event: :class:`SummaryTables`)."""
    gathered = SummaryTables()
    gathered.add(lectures)
    return gathered.tables(sessions)


def lecture_table(rows: Sequence[Lecture], columns: Sequence[str] | None = None) -> pa.Table:
    """The ``lectures`` table of ``rows``, or only its ``columns`` (in the schema's order)."""
    declared = LECTURES.arrow_schema()
    if columns is None:
        return _table([r.values() for r in rows], LECTURES)
    names = [n for n in LECTURES.column_names if n in set(columns)]
    narrow = pa.schema([declared.field(n) for n in names], metadata=declared.metadata)
    return pa.Table.from_pydict({n: [getattr(row, n) for row in rows] for n in names}, schema=narrow)


def page_derived(extraction: str | None) -> bool:
    """True when a lecture's fields were read from its own page (not from the event's listing alone)."""
    return bool(extraction) and not str(extraction).startswith("api_listing")
