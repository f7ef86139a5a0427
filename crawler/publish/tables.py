"""The tables of a release (``lectures``, ``events``, ``sessions``, ``authors``, ``transcripts``) as specs:
their columns, types, keys and descriptions; the per-event configs that share the ``lectures`` files; and the
``lectures`` table itself.

The ``lectures`` table is :data:`crawler.schema.FIELDS` as is. The other tables are summaries of it
(:mod:`crawler.publish.summary_tables`); their column types are taken from the lecture fields they
summarize (or from a schema kind for the few columns no lecture field holds), so a change of a type in
the schema reaches every table. The ``transcripts`` table is :data:`crawler.schema.TRANSCRIPT_FIELDS` as
is, written beside the lectures (:mod:`crawler.publish.transcripts`), not summarized from them.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa

from crawler import schema
from crawler.schema import Lecture, listing_only_extraction
from crawler.schema import arrow as schema_arrow
from crawler.schema.sources import RowSource

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
    """One dataset config: its columns, its unique sort key and what a row is; the request that answers
    for its rows (``source``), the columns that carry its content (``content``) and the columns that name
    a row (``row_key``). The carry-over between nights and the quality gate read these, never the name."""

    name: str
    description: str
    columns: tuple[Column, ...]
    key: str
    # A table declared by a record of the schema of its own (``transcripts``): its types are those fields'.
    fields: tuple[schema.Field, ...] = ()
    source: RowSource | None = None
    content: tuple[str, ...] = ()
    row_key: tuple[str, ...] = ()
    # A view of another table's columns: the config whose files hold its rows (None: its own).
    stored_in: str | None = None

    @classmethod
    def of_fields(
        cls,
        name: str,
        description: str,
        fields: tuple[schema.Field, ...],
        key: str,
        *,
        source: RowSource | None = None,
        content: tuple[str, ...] = (),
        row_key: tuple[str, ...] = (),
    ) -> TableSpec:
        """The spec of a table whose columns are a record's ``fields`` as they are."""
        columns = tuple(Column(f.name, f.meaning, f.nullable, None) for f in fields)
        return cls(name, description, columns, key, fields, source, content, row_key or (key,))

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def arrow_schema(self) -> pa.Schema:
        if self.fields:
            return schema_arrow.arrow_schema(self.fields, self.description)
        lecture_schema = schema_arrow.arrow_schema()
        fields = [pa.field(c.name, _arrow_type(c, lecture_schema), nullable=c.nullable) for c in self.columns]
        metadata = lecture_schema.metadata if self is LECTURES else {"description": self.description}
        return pa.schema(fields, metadata=metadata)

    def features(self) -> Any:
        """The ``datasets.Features`` of this table, read off its Arrow schema (datasets is imported lazily:
        it is heavy)."""
        import datasets

        return datasets.Features.from_arrow_schema(self.arrow_schema())


def _arrow_type(column: Column, lecture_schema: pa.Schema) -> pa.DataType:
    if column.shape == "count":
        return pa.int64()
    if column.kind is not None:
        base = schema_arrow.arrow_type(column.kind)
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
    columns=tuple(Column(f.name, f.meaning, f.nullable, f.name) for f in schema.FIELDS),
    key=schema.SORT_KEY,
    # A lecture leaves only on its own resource's word (a 404 or 410, or an answer saying it is gone):
    # it is then kept, marked ``withdrawn`` (crawler.spiders.presence).
    source=RowSource("the event's lecture listing, then the lecture's own page and API resource"),
    content=("title", "abstract", "authors"),
)
# Summaries of the lectures: their rows come and go with the lectures'.
_SUMMARY = RowSource("the lectures of this release", derived_from="lectures")
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
    source=_SUMMARY,
    content=("event_name",),
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
    source=_SUMMARY,
    content=("session_name",),
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
    source=_SUMMARY,
    content=("name",),
)
SPECS: tuple[TableSpec, ...] = (LECTURES, EVENTS, SESSIONS, AUTHORS)
SPECS_BY_NAME: dict[str, TableSpec] = {s.name: s for s in SPECS}
# Not a summary of the lectures: written event by event from the staged tracks and the previous release's.
TRANSCRIPTS = TableSpec.of_fields(
    "transcripts",
    "One row per lecture and subtitle track: what was said in the talk, timed.",
    schema.TRANSCRIPT_FIELDS,
    key="lecture_id",
    source=RowSource("the subtitle file the lecture's track list names (one request a track)"),
    content=("text", "segments"),
    row_key=("lecture_id", "subtitle_url"),
)
# What was shown: each lecture's slide deck and poster, read from the PDF the lecture names, written beside
# the lectures as the transcripts are.
SLIDES = TableSpec.of_fields(
    "slides",
    "One row per lecture and document (its slide deck, its poster): what was shown, page by page.",
    schema.SLIDES_FIELDS,
    key="lecture_id",
    source=RowSource("the PDF the lecture's record names (one request a document)"),
    content=("pages", "text"),
    row_key=("lecture_id", "document"),
)
# A view of the lectures' files: each lecture's link to its paper in the ACL Anthology. Made from the
# Anthology's files; a release built without them keeps every link it had.
ANTHOLOGY_LINKS = TableSpec(
    name="anthology_links",
    description="Each lecture's link to its paper in the ACL Anthology (`lectures.anthology_*`).",
    columns=tuple(
        Column(f.name, f.meaning, f.nullable, f.name)
        for f in schema.FIELDS
        if f.name in ("lecture_id", "event_id", "anthology_id", "anthology_url")
    ),
    key="lecture_id",
    source=RowSource("the ACL Anthology's collection files (--anthology)", problem_column=None),
    content=("anthology_id",),
    stored_in=LECTURES.name,
)
# Every release's change file, one row per lecture and release: history, never taken back.
CHANGES = TableSpec(
    name="changes",
    description="What changed in each release, one row per lecture and release.",
    columns=(
        Column("lecture_id", "Id of the lecture that changed.", False, "lecture_id"),
        Column("event_id", "Id of its event.", False, "event_id"),
    ),
    key="lecture_id",
    source=RowSource("the diff of each release against the one before it", problem_column=None, history=True),
)
# Every table a release publishes, declared once: the gate and the carry-over read this list.
DECLARED_TABLES: tuple[TableSpec, ...] = (*SPECS, TRANSCRIPTS, SLIDES, ANTHOLOGY_LINKS, CHANGES)
DEFAULT_CONFIG = LECTURES.name
# Names an event's config may not take: the tables' configs, and the name datasets gives an unnamed one.
RESERVED_CONFIG_NAMES = frozenset([*SPECS_BY_NAME, TRANSCRIPTS.name, SLIDES.name, "default"])


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
    names = {str(e["event_id"]): n if isinstance(n := e.get("event_name"), str) else None for e in events}
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


def table_of(rows: Sequence[Mapping[str, object]], spec: TableSpec) -> pa.Table:
    """The table of ``spec`` holding ``rows`` (mappings by column name), with the spec's Arrow schema."""
    columns = {name: [row[name] for row in rows] for name in spec.column_names}
    return pa.Table.from_pydict(columns, schema=spec.arrow_schema())


def lecture_table(rows: Sequence[Lecture], columns: Sequence[str] | None = None) -> pa.Table:
    """The ``lectures`` table of ``rows``, or only its ``columns`` (in the schema's order)."""
    declared = LECTURES.arrow_schema()
    if columns is None:
        return table_of([r.values() for r in rows], LECTURES)
    names = [n for n in LECTURES.column_names if n in set(columns)]
    narrow = pa.schema([declared.field(n) for n in names], metadata=declared.metadata)
    return pa.Table.from_pydict({n: [getattr(row, n) for row in rows] for n in names}, schema=narrow)


def page_derived(extraction: str | None) -> bool:
    """True when a lecture's fields were read from its own page (not from the event's listing alone)."""
    return bool(extraction) and not listing_only_extraction(extraction)
