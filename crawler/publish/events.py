"""A release's rows one event at a time, and what the build gathers from each event.

:class:`EventRows` gives the lectures of a release an event at a time; :func:`write_events` writes each
event's files (:mod:`crawler.publish.shards`), compares its rows with the previous release's rows of the
same lectures and spills the change rows to a part of their own, and keeps of it only a few narrow
columns for what the release says of all its lectures (:class:`Written`): the summary tables, the card's
statistics, the Anthology links, the change counts. :func:`merge_changes` makes the parts one change
file in lecture-id order, a chunk of rows at a time. What a build is asked (:class:`PublishOptions`) and
builds on (:class:`BuildContext`) is what every step of it reads.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from crawler.coverage import ALL_EVENTS, field_coverage
from crawler.json_types import JsonObject
from crawler.publish import changes as change_files
from crawler.publish.card_statistics import ABSTRACT_LENGTH
from crawler.publish.diff import DiffSummary, diff_releases
from crawler.publish.parquet import release_unused_memory
from crawler.publish.previous import PreviousRelease
from crawler.publish.records import InvalidRecordsError, lecture_rows
from crawler.publish.removals import Redactions, ReleaseRemovals, remove_from
from crawler.publish.shards import EventShards, event_shards
from crawler.publish.slides import SlidesTable
from crawler.publish.summary_tables import SummaryTables
from crawler.publish.swap import ReleaseStep
from crawler.publish.tables import lecture_table
from crawler.publish.transcripts import TranscriptsTable
from crawler.schema import FIELDS, Lecture, Slides, Transcript, lecture_order
from crawler.state.stage_rows import RowLines
from crawler.urls import without_credentials

# Change rows are written to the release's change file this many at a time; each event's part of them is
# stored in row groups of this many, the most the merge reads of a part beyond what a chunk takes of it
# (a first release's change rows are every lecture's whole row). Smaller groups would cost more in each
# part's metadata, which the merge holds for every part at once, than they save.
CHANGE_CHUNK_ROWS = 1024
CHANGE_PART_ROWS = 256


class EventRows(Protocol):
    """The lectures of a release, one event at a time (withdrawn ones included)."""

    def event_ids(self) -> list[str]:
        """Every event with lectures, in lecture-id order."""
        ...

    def lectures_of(self, event_id: str) -> list[Lecture]:
        """The event's lectures (read when asked: only one event's are held at a time)."""
        ...

    def event_of(self) -> Mapping[str, str]:
        """Every lecture id of the release -> its event id."""
        ...


class GroupedEvents:
    """Lectures already in memory, grouped by event; ``validated`` when they come from
    :func:`crawler.publish.records.lecture_rows` (scrubbed, checked and hashed: not done twice)."""

    def __init__(self, lectures: Iterable[Lecture], *, validated: bool = False) -> None:
        self.validated = validated
        self._by_event: dict[str, list[Lecture]] = {}
        for lecture in lectures:
            self._by_event.setdefault(str(lecture.event_id), []).append(lecture)

    def event_ids(self) -> list[str]:
        return sorted(self._by_event, key=lecture_order)

    def lectures_of(self, event_id: str) -> list[Lecture]:
        return list(self._by_event.get(event_id, []))

    def event_of(self) -> dict[str, str]:
        return {lec.lecture_id: event for event, group in self._by_event.items() for lec in group}


@dataclass(frozen=True)
class PublishOptions:
    """How a release is published besides its rows (see :func:`publish_release`)."""

    name: str
    provenance: Mapping[str, object]
    template: Path | None = None
    now: datetime | None = None
    on_step: ReleaseStep | None = None
    sessions: Iterable[Mapping[str, object]] | None = None
    remove_lectures: Iterable[str] = ()
    redact_authors: Iterable[str] | Redactions = ()
    # The removals the release keeps (``removals.json``, listed in the manifest, so pushed with it).
    removals_ledger: ReleaseRemovals | None = None
    # The staged subtitle tracks (the stage index); without it, only the previous release's are carried.
    transcripts: RowLines[Transcript] | None = None
    # The staged documents (the stage index); without it, only the previous release's are carried.
    slides: RowLines[Slides] | None = None
    # Called with the release built aside and ``out_dir`` once the build is checked, before the swap: it
    # raises to refuse the release (the quality gate over every table), and nothing is swapped in.
    check_built: Callable[[Path, Path], None] | None = None


def public_provenance(value: Any) -> Any:
    """``value`` with the ``user:password@`` part removed from every URL in it: it goes into the card."""
    if isinstance(value, Mapping):
        return {key: public_provenance(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [public_provenance(item) for item in value]
    if isinstance(value, str) and "://" in value:
        return without_credentials(value)
    return value


# The columns of the lectures the card's statistics read (the release writes the whole rows one event at
# a time; the card sees these few columns of all of them, and the abstracts' lengths, not their texts).
CARD_COLUMNS = tuple(f.name for f in FIELDS if f.card_statistic)
LINK_COLUMNS = ("anthology_id", "url", "video_url", "video_doi", "withdrawn")


def linked_lectures(table: pa.Table) -> list[Lecture]:
    """The rows of ``table`` (the links file's columns) that have an Anthology id, as records holding
    those columns."""
    linked = table.filter(pc.is_valid(table.column("anthology_id")))
    return [Lecture.from_json(row) for row in linked.to_pylist()]


@dataclass(frozen=True)
class BuildContext:
    """What every step of a build reads: where it writes, what it was asked, what it builds on."""

    build: Path
    options: PublishOptions
    template: Path
    previous: PreviousRelease
    # The lectures taken out on request and the authors redacted (expanded with the names their ORCID
    # iDs carry).
    removed: frozenset[str]
    redactions: Redactions

    @property
    def provenance(self) -> JsonObject:
        found: JsonObject = public_provenance(self.options.provenance)
        return found


@dataclass
class Written:
    """What the build gathered while writing the events: their files, the few columns of every lecture
    the card reads (``CARD_COLUMNS``), the summary tables, the linked lectures, the change files of each
    event, the problems found."""

    events: list[EventShards] = field(default_factory=list)
    card_columns: list[pa.Table] = field(default_factory=list)
    tables: SummaryTables = field(default_factory=SummaryTables)
    linked: list[Lecture] = field(default_factory=list)
    change_parts: list[Path] = field(default_factory=list)
    # The release's diff, summed over its events: the card and the manifest tell these counts.
    diff: DiffSummary = field(default_factory=DiffSummary.none)
    problems: list[str] = field(default_factory=list)
    total: int = 0
    seen: set[str] = field(default_factory=set)
    # Each watched field's coverage by event, for the card's chart.
    coverage: dict[str, dict[str, float]] = field(default_factory=dict)
    # The ``transcripts`` table as this release makes it: its files, one per event with a track, and the
    # card's counts of them.
    transcripts: TranscriptsTable = field(default_factory=TranscriptsTable)
    # The ``slides`` table the same way, one file per event with a document.
    slides: SlidesTable = field(default_factory=SlidesTable)

    def add(self, rows: Sequence[Lecture]) -> None:
        """What the release says of all its lectures, taken from one event's rows."""
        self.card_columns.append(card_table(rows))
        self.coverage.update((e, c) for e, c in field_coverage(rows).items() if e != ALL_EVENTS)
        self.tables.add(rows)
        self.linked.extend(linked_lectures(lecture_table(rows, LINK_COLUMNS)))

    def card_table(self) -> pa.Table:
        """The card's columns of every lecture, in lecture-id order as a table of the whole release would
        be (the card shows its first rows); the events' parts are let go."""
        parts, self.card_columns = self.card_columns, []
        if not parts:
            return card_table([])
        table = pa.concat_tables(parts)
        del parts
        order = pc.sort_indices(table.column("lecture_id"))
        # Events usually come in lecture-id order already: then the table is not copied.
        if pc.all(pc.equal(order, pa.array(range(len(order)), order.type))).as_py():
            return table
        return table.take(order)


def card_table(rows: Sequence[Lecture]) -> pa.Table:
    """The card's columns of ``rows`` (see ``CARD_COLUMNS``) and their abstracts' lengths."""
    lengths = pa.array([None if r.abstract is None else len(r.abstract) for r in rows], pa.int64())
    return lecture_table(rows, CARD_COLUMNS).append_column(ABSTRACT_LENGTH, lengths)


def _event_rows(
    lectures: list[Lecture], context: BuildContext, written: Written, *, validated: bool
) -> list[Lecture]:
    """One event's rows with the removals applied, validated (unless they were) and sorted; the problems
    go to ``written`` (nothing more is written once there is one, but every event is still checked)."""
    kept = remove_from(lectures, remove_lectures=context.removed, redactions=context.redactions)
    written.total += len(kept)
    try:
        rows = sorted(kept, key=lambda r: r.lecture_id) if validated else lecture_rows(kept)
    except InvalidRecordsError as exc:
        written.problems.extend(exc.problems)
        return []
    ids = [r.lecture_id for r in rows]
    written.problems.extend(f"lecture_id={i!r}: duplicate lecture_id" for i in ids if i in written.seen)
    written.seen.update(ids)
    return rows


def _previous_rows_of(
    event_id: str, rows: Sequence[Lecture], context: BuildContext, event_of: Mapping[str, str]
) -> list[Lecture]:
    """The previous release's rows an event's change rows compare with: those of the lectures the event
    holds now (wherever they were), and those of its lectures that left the release."""
    states = context.previous.states()
    ids = {r.lecture_id for r in rows}
    sources = {event_id} | {states[i].event_id for i in ids if i in states}

    def compared(lecture_id: str, before: str) -> bool:
        return lecture_id in ids or (before == event_id and lecture_id not in event_of)

    return list(context.previous.lectures_of(sources, compared))


def _write_changes_of(
    event_id: str,
    rows: Sequence[Lecture],
    context: BuildContext,
    written: Written,
    event_of: Mapping[str, str],
) -> None:
    """The change rows of one event, spilled to a file of their own (merged at the end)."""
    before = _previous_rows_of(event_id, rows, context, event_of) if context.previous.manifest else []
    diff = diff_releases(before, rows)
    written.diff += diff.summary()
    found = change_files.change_rows(diff)
    if found:
        part = context.build / ".changes" / f"{len(written.change_parts)}.parquet"
        part.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(change_files.changes_table(found), part, row_group_size=CHANGE_PART_ROWS)
        written.change_parts.append(part)


def _write_event(
    event_id: str, events: EventRows, context: BuildContext, written: Written, event_of: Mapping[str, str]
) -> None:
    validated = isinstance(events, GroupedEvents) and events.validated
    rows = _event_rows(events.lectures_of(event_id), context, written, validated=validated)
    if written.problems or not rows:
        return
    written.events.append(event_shards(context.build, event_id, rows, context.previous))
    written.add(rows)
    try:
        written.transcripts.write_event(context.build, rows)
        written.slides.write_event(context.build, rows)
    except InvalidRecordsError as exc:
        written.problems.extend(exc.problems)
    _write_changes_of(event_id, rows, context, written, event_of)


def write_events(events: EventRows, context: BuildContext) -> Written:
    """Every event's files and change rows, one event's rows in memory at a time; then the change rows
    of the events the release no longer holds."""
    # The ``transcripts`` and ``slides`` rows come from the stage's, then the previous release's; and are
    # taken through the author redactions.
    authors = context.redactions
    written = Written(
        transcripts=TranscriptsTable(context.options.transcripts, context.previous, authors),
        slides=SlidesTable(context.options.slides, context.previous, authors),
    )
    # A removed lecture is in no event of the release: its previous row is compared with nothing.
    removed = context.removed
    event_of = {i: e for i, e in events.event_of().items() if i not in removed}
    current = events.event_ids()
    for event_id in current:
        _write_event(event_id, events, context, written, event_of)
        release_unused_memory()
    if written.problems:
        raise InvalidRecordsError(written.problems, written.total)
    for event_id in sorted(set(context.previous.event_ids()) - set(current), key=lecture_order):
        _write_changes_of(event_id, [], context, written, event_of)
    return written


def merge_changes(parts: Sequence[Path], target: Path) -> None:
    """The events' change rows as one file in lecture-id order (each part is in that order already).

    Only the parts' lecture ids are read whole: they give the merged order, and the rows follow a chunk
    at a time, each part's share of a chunk read from the few row groups that hold it. (A first release's
    change rows are every lecture's whole row: reading every part at once would hold a buffer per part
    and column.)"""
    readers = [pq.ParquetFile(part) for part in parts]
    ids = [reader.read(columns=["lecture_id"]).column("lecture_id").to_pylist() for reader in readers]
    merged = heapq.merge(*(_keyed(part, col) for part, col in enumerate(ids)))
    release = change_files.version_of(target.name)

    def chunks() -> Iterator[pa.Table]:
        # A night without changes gets a file without row groups: datasets cannot read an empty one.
        while chunk := [(part, row) for _, part, row in itertools.islice(merged, CHANGE_CHUNK_ROWS)]:
            yield change_files.with_release(_gathered(readers, chunk), release)

    change_files.write_change_file(target, chunks())


def _keyed(part: int, ids: Sequence[object]) -> Iterator[tuple[str, int, int]]:
    """A part's rows as (lecture id, part, row), the merge's key first."""
    return ((str(lecture_id), part, row) for row, lecture_id in enumerate(ids))


def _gathered(readers: Sequence[pq.ParquetFile], picks: Sequence[tuple[int, int]]) -> pa.Table:
    """The rows ``picks`` names (part, row), in that order. A part's picks in one chunk are consecutive
    rows of it (the merge reads each part in order), so each part gives one slice of a few row groups."""
    pieces: list[pa.Table] = []
    start: dict[int, int] = {}  # part -> where its slice starts in the pieces, less its first row
    for part in dict.fromkeys(p for p, _ in picks):
        rows = [r for p, r in picks if p == part]
        piece = _rows_of(readers[part], rows[0], rows[-1] + 1)
        start[part] = sum(len(x) for x in pieces) - rows[0]
        pieces.append(piece)
    return pa.concat_tables(pieces).take([start[part] + row for part, row in picks])


def _rows_of(reader: pq.ParquetFile, first: int, end: int) -> pa.Table:
    """Rows ``first`` to ``end`` (excluded) of a file, read from the row groups that hold them."""
    groups, offset, skipped = [], 0, None
    for index in range(reader.num_row_groups):
        rows = reader.metadata.row_group(index).num_rows
        if offset + rows > first and offset < end:
            groups.append(index)
            skipped = offset if skipped is None else skipped
        offset += rows
    table = reader.read_row_groups(groups, use_threads=False)
    return table.slice(first - (skipped or 0), end - first)
