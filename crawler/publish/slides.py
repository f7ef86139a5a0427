"""The ``slides`` table of a release: one row per lecture and document (its slide deck, its poster),
written event by event beside the lectures' files, ``data/slides/<event folder>.parquet``.

Which rows: for each lecture the release publishes (withdrawn ones included), the documents its record
names (:func:`crawler.schema.listed_documents`: the record is the authority); each is the staged row of
that document at that URL when the stage holds one, else the previous release's, else no row; a staged
row without text gives way to the published one unless its file said it is gone (the rule of every
declared table, :func:`crawler.schema.sources.settle_row`); a record merged from several ids takes the
rows staged or published under any of them, as rows of its own id. Every row loses the redacted authors'
names, and is redacted again when it was redacted under earlier privacy rules.

An event's rows are made and written together (an event's documents' text is tens of megabytes at most),
in row groups under the release's bound; the previous release's rows are read an event's file at a time.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from crawler.privacy.email_like import email_like_values
from crawler.privacy.rule import PRIVACY_RULE
from crawler.publish.parquet import ROW_GROUP_ROWS, ROW_GROUP_TARGET_BYTES, file_schema, write_row_groups
from crawler.publish.previous import PreviousRelease
from crawler.publish.records import InvalidRecordsError
from crawler.publish.removals import Redactions, without_redacted_names
from crawler.publish.tables import SLIDES, event_directory
from crawler.schema import SLIDES_FIELDS, Lecture, Slides, lecture_order, listed_documents, slides_order
from crawler.schema.arrow import field_arrow_type
from crawler.schema.check import validate_record
from crawler.schema.sources import settle_row
from crawler.slides.document import redacted_pages
from crawler.state.stage_rows import PRIVACY_RULE_KEY
from crawler.state.stage_slides import StagedSlides

SLIDES_DIR = f"data/{SLIDES.name}"
PATTERN = f"{SLIDES_DIR}/*.parquet"
NO_REDACTIONS = Redactions(frozenset(), frozenset())
# A document's key among its lecture's rows.
DocKey = tuple[str, str]  # (document, url)


class SlidesSource(Protocol):
    """Where the staged documents come from: the stage index."""

    def slides_of(self, lecture_id: str) -> Sequence[StagedSlides]: ...


def slides_path(event_id: str) -> str:
    """The event's ``slides`` file: ``data/slides/event-<id>.parquet``."""
    return f"{SLIDES_DIR}/{event_directory(event_id)}.parquet"


def row_ids(lecture: Lecture) -> list[str]:
    """The ids whose rows a record holds: its own, then the ids merged into it, each once."""
    return list(dict.fromkeys([lecture.lecture_id, *(lecture.alternate_ids or [])]))


def redacted_again(row: Slides) -> Slides:
    """``row`` redacted under the privacy rules in force (the same object when they find nothing)."""
    if row.pages is None:
        return row
    pages, found = redacted_pages(tuple(row.pages))
    if not found:
        return row
    return row.with_pages(list(pages))


def published_row(row: Slides, lecture: Lecture, redactions: Redactions) -> Slides:
    """A row as the release holds it: its lecture's id and event, the redacted authors' names out."""
    if (row.lecture_id, row.event_id) != (lecture.lecture_id, lecture.event_id):
        row = replace(row, lecture_id=lecture.lecture_id, event_id=lecture.event_id)
    if redactions and row.pages is not None:
        pages = [without_redacted_names(p, redactions) for p in row.pages]
        if pages != row.pages:
            row = row.with_pages(pages)
    return row


def settled(staged: Slides | None, previous: Slides | None) -> Slides | None:
    """The staged row, unless it has no text and its file did not say it is gone: then the published."""
    if staged is None:
        return previous
    assert SLIDES.source is not None
    return settle_row(staged, previous, content=SLIDES.content, source=SLIDES.source)[0]


def lecture_slides(
    lecture: Lecture,
    staged: Iterable[Mapping[DocKey, Slides]],
    previous: Iterable[Mapping[DocKey, Slides]],
    redactions: Redactions = NO_REDACTIONS,
) -> list[Slides]:
    """The rows of one lecture: each document it names, staged (under any of its ids, its own first),
    else as the previous release held it, else none; in ``slides_order``."""
    staged_maps, previous_maps = list(staged), list(previous)
    out = []
    for key in listed_documents(lecture):
        now = next((m[key] for m in staged_maps if key in m), None)
        before = next((m[key] for m in previous_maps if key in m), None)
        row = settled(now, before)
        if row is not None:
            out.append(published_row(row, lecture, redactions))
    return sorted(out, key=slides_order)


@dataclass(frozen=True)
class SlidesSources:
    """Where a release's ``slides`` rows come from, and the redactions in force."""

    stage: SlidesSource | None = None
    previous: PreviousRelease | None = None
    redactions: Redactions = NO_REDACTIONS

    def previous_rows(self, event_id: str) -> dict[str, dict[DocKey, Slides]]:
        """The previous release's rows of an event, by lecture id and (document, url); redacted again
        when that release redacted them under other rules."""
        previous = self.previous
        if previous is None or slides_path(event_id) not in previous.files_of(SLIDES.name):
            return {}
        manifest = previous.manifest
        again = manifest is None or manifest.get("slides_privacy_rule") != PRIVACY_RULE
        out: dict[str, dict[DocKey, Slides]] = {}
        for record in pq.read_table(previous.path_of(slides_path(event_id))).to_pylist():
            row = Slides.from_json(record)
            out.setdefault(row.lecture_id, {})[(row.document, row.url)] = (
                redacted_again(row) if again else row
            )
        return out

    def staged_rows(self, lecture_id: str) -> dict[DocKey, Slides]:
        if self.stage is None:
            return {}
        out = {}
        for staged in self.stage.slides_of(lecture_id):
            row = staged.record
            if staged.validators.get(PRIVACY_RULE_KEY) != PRIVACY_RULE:
                row = redacted_again(row)
            out[(row.document, row.url)] = row
        return out


def event_slides(lectures: Sequence[Lecture], sources: SlidesSources) -> list[Slides]:
    """The rows of one event's lectures, in order (the previous release's read from that event's file,
    and from the files of the events the lectures were in before, when that differs)."""
    events = {str(lec.event_id) for lec in lectures}
    before: dict[str, dict[DocKey, Slides]] = {}
    for event_id in sorted(events):
        before.update(sources.previous_rows(event_id))
    ordered = sorted(lectures, key=lambda lec: lecture_order(lec.lecture_id))
    return [
        row
        for lec in ordered
        if listed_documents(lec)
        for row in lecture_slides(
            lec,
            (sources.staged_rows(i) for i in row_ids(lec)),
            (before.get(i, {}) for i in row_ids(lec)),
            sources.redactions,
        )
    ]


def slides_table(rows: Sequence[Slides]) -> pa.Table:
    """The ``slides`` table of these rows, column by column."""
    arrays = [pa.array([getattr(r, f.name) for r in rows], field_arrow_type(f)) for f in SLIDES_FIELDS]
    return pa.Table.from_arrays(arrays, schema=SLIDES.arrow_schema())


@dataclass
class SlidesStats:
    """What the card tells of the documents, counted as they are written."""

    rows: int = 0
    lectures_with_slides: int = 0
    lectures_with_poster: int = 0
    pages: int = 0
    by_event: Counter[str] = field(default_factory=Counter)
    # Lectures with slide text and with poster text, by event.
    slides_by_event: Counter[str] = field(default_factory=Counter)
    posters_by_event: Counter[str] = field(default_factory=Counter)
    # Documents without text, by why.
    without_text: Counter[str] = field(default_factory=Counter)

    def add(self, rows: Sequence[Slides]) -> None:
        for row in rows:
            self.rows += 1
            self.by_event[str(row.event_id)] += 1
            if row.pages is None:
                self.without_text[row.problem or "unknown"] += 1
                continue
            self.pages += len(row.pages)
            if any(row.pages):
                if row.document == "poster":
                    self.lectures_with_poster += 1
                    self.posters_by_event[str(row.event_id)] += 1
                else:
                    self.lectures_with_slides += 1
                    self.slides_by_event[str(row.event_id)] += 1


@dataclass
class SlidesWritten:
    """The ``slides`` files of a release, and what the card counts of them."""

    files: list[tuple[str, int, int]] = field(default_factory=list)  # (path, rows, bytes in memory)
    stats: SlidesStats = field(default_factory=SlidesStats)
    email_like: int = 0

    @property
    def num_rows(self) -> int:
        return sum(rows for _, rows, _ in self.files)


def write_event_slides(
    build: Path, lectures: Sequence[Lecture], sources: SlidesSources, written: SlidesWritten
) -> None:
    """Write one event's ``slides`` file from its published ``lectures`` (none when no lecture names a
    document the release has a row of). Raises :class:`InvalidRecordsError` naming every row that fails
    the schema."""
    if not lectures:
        return
    rows = event_slides(lectures, sources)
    problems = [
        f"slides lecture_id={r.lecture_id!r} document={r.document!r}: {p}"
        for r in rows
        for p in validate_record(r.to_json(), SLIDES_FIELDS)
    ]
    if problems:
        raise InvalidRecordsError(problems, len(lectures))
    if not rows:
        return
    path = slides_path(str(lectures[0].event_id))
    target = build / path
    target.parent.mkdir(parents=True, exist_ok=True)
    table = slides_table(rows)
    with pq.ParquetWriter(target, file_schema(SLIDES), compression="zstd", write_statistics=True) as writer:
        write_row_groups(writer, table, max_rows=ROW_GROUP_ROWS, max_bytes=ROW_GROUP_TARGET_BYTES)
    written.files.append((path, table.num_rows, table.nbytes))
    written.stats.add(rows)
    written.email_like += email_like_values(table)


def slides_changed(
    lectures: Iterable[Lecture], stage: SlidesSource | None, previous: PreviousRelease, redactions: Redactions
) -> bool:
    """True when these lectures' ``slides`` rows (made as a release makes them) differ from the rows the
    previous release holds for them, a run of one event's lectures at a time (a release's lectures come
    event by event: the catalogue is never held at once)."""
    sources = SlidesSources(stage, previous if previous.files_of(SLIDES.name) else None, redactions)
    for event_id, run in itertools.groupby(lectures, key=lambda lecture: str(lecture.event_id)):
        group = list(run)
        now = event_slides(group, sources)
        held = sources.previous_rows(event_id)
        ids = {lec.lecture_id for lec in group}
        then = sorted((r for i, rows in held.items() if i in ids for r in rows.values()), key=slides_order)
        if now != then:
            return True
    return False


def check_slides_files(root: Path, paths: Sequence[str], expected: int) -> None:
    """ValueError unless the ``slides`` files hold ``expected`` rows with the declared schema, each file
    one event's rows (its own file name) without a document twice."""
    declared = SLIDES.arrow_schema().remove_metadata()
    found = 0
    for path in paths:
        if not pq.read_schema(root / path).remove_metadata().equals(declared):
            raise ValueError(f"{path}: schema differs from the declared {SLIDES.name} schema")
        table = pq.read_table(root / path, columns=["lecture_id", "event_id", "document"])
        events = set(table.column("event_id").to_pylist())
        if len(events) != 1 or slides_path(str(events.pop())) != path:
            raise ValueError(f"{path}: does not hold exactly the rows of the event it is named after")
        keys = list(
            zip(table.column("lecture_id").to_pylist(), table.column("document").to_pylist(), strict=True)
        )
        if len(set(keys)) != len(keys):
            raise ValueError(f"{path}: a document is there twice")
        found += table.num_rows
    if found != expected:
        raise ValueError(f"{found} rows read, {expected} written")
