"""The tables of rows read from the files a lecture names (``transcripts``: its subtitle tracks; ``slides``:
its slide deck and poster), one implementation for both: each table is a :class:`FileTable` declaring what
differs (a row's key among its lecture's, which files a lecture lists, how a row is redacted, how the
previous release's rows are read, what the card counts, how a file is written), and a release's rows of it
are made, written, compared with the previous release's and checked here.

Which rows: for each lecture the release publishes (withdrawn ones included), the files its record lists
(:meth:`FileTable.listed`: the record is the authority); each is the staged row of that file when the stage
holds one, else the previous release's, else no row; a staged row without content gives way to the
published one unless its file said it is gone (:func:`crawler.schema.sources.settle_row`, the rule of every
declared table); a record merged from several ids (``alternate_ids``) takes the rows staged or published
under any of them (:meth:`FileTable.united`), as rows of its own id. A row redacted under earlier privacy
rules (kept by a 304, carried, kept on an answer that was no evidence) is redacted again under the rules
in force, and every row loses the redacted authors' names (:meth:`FileTable.redacted`).

Each event's rows go to one file, ``data/<table>/<event folder>.parquet``, made a batch of lectures at a
time (:attr:`FileTable.batch`) and written in row groups, a chunk of rows at a time once that much text is
gathered (:attr:`FileTable.chunk_bytes`). The bytes depend only on the rows: a table whose files the
manifest describes (:attr:`FileTable.shards_key`) keeps an event's file when its rows are the previous
release's, linked byte for byte (:func:`crawler.publish.shards.rows_digest`), and does not write it.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, Generic, TypeVar, cast

import pyarrow as pa
import pyarrow.parquet as pq

from crawler.privacy.email_like import email_like_values
from crawler.privacy.rule import PRIVACY_RULE
from crawler.publish.manifest import EventShardEntry
from crawler.publish.parquet import (
    ROW_GROUP_ROWS,
    ROW_GROUP_TARGET_BYTES,
    Shard,
    WriterOptions,
    file_schema,
    write_row_groups,
)
from crawler.publish.previous import PreviousRelease
from crawler.publish.records import InvalidRecordsError
from crawler.publish.removals import Redactions
from crawler.publish.shards import EventShards, carried_event, digest_rows, rows_digest
from crawler.publish.tables import TableSpec, event_directory
from crawler.schema import Lecture, Slides, Transcript, lecture_order
from crawler.schema.arrow import field_arrow_type
from crawler.schema.check import validate_record
from crawler.schema.sources import has_content, settle_row
from crawler.state.stage_rows import PRIVACY_RULE_KEY, RowKind, RowLines

# A row of a table (a subtitle track, a document) and its key among its lecture's rows.
R = TypeVar("R", Transcript, Slides)
K = TypeVar("K", bound=Hashable)
S = TypeVar("S", bound="RowStats")

NO_REDACTIONS = Redactions(frozenset(), frozenset())


def row_ids(lecture: Lecture) -> list[str]:
    """The ids whose rows a record holds: its own, then the ids merged into it (``alternate_ids``), each
    once."""
    return list(dict.fromkeys([lecture.lecture_id, *(lecture.alternate_ids or [])]))


@dataclass
class RowStats:
    """What the card tells of a table's rows, counted as they are written (each table counts more)."""

    rows: int = 0
    by_event: Counter[str] = field(default_factory=Counter)
    # Rows without text, by why (``problem``; ``unknown`` when it does not say).
    without_text: Counter[str] = field(default_factory=Counter)

    def add(self, rows: Sequence[Any]) -> None:
        for row in rows:
            self.rows += 1
            self.by_event[str(row.event_id)] += 1
            self.count(row)

    def count(self, row: Any) -> None:
        """The table's own counts of one row."""
        raise NotImplementedError

    def merge(self, other: RowStats) -> None:
        """Add what ``other`` counted."""
        for name in (f.name for f in fields(self)):
            mine = getattr(self, name)
            if isinstance(mine, Counter):
                mine.update(getattr(other, name))
            else:
                setattr(self, name, mine + getattr(other, name))


class FileTable(Generic[R, K, S]):
    """A table of rows read from the files lectures name, as a release makes it from the stage's lines of
    the table, the previous release's files of it and the author redactions in force (see the module's
    docstring)."""

    spec: ClassVar[TableSpec]
    # Its stage lines: the record class, the column naming a row among its lecture's, its lines' kind.
    kind: RowKind[R]
    stats_type: type[S]
    # Text gathered before an event's rows are written as row groups (None: an event's rows at once).
    chunk_bytes: ClassVar[int | None] = None
    # Lectures whose rows are made at once (None: an event's).
    batch: ClassVar[int | None] = None
    # The manifest's record of each event's file (its digest), by which a file whose rows are the same is
    # carried (None: written every time).
    shards_key: ClassVar[str | None] = None
    # The columns :meth:`order` reads besides ``lecture_id`` (a file's check reads only these).
    order_columns: ClassVar[tuple[str, ...]] = ()
    # The columns of a row's key among its lecture's (:meth:`key`, a tuple of them when there are two).
    key_columns: ClassVar[tuple[str, ...]]

    def __init__(
        self,
        stage: RowLines[R] | None = None,
        previous: PreviousRelease | None = None,
        redactions: Redactions = NO_REDACTIONS,
    ) -> None:
        self.stage: RowLines[R] | None = stage
        self.previous: PreviousRelease | None = (
            previous if previous is not None and previous.files_of(self.spec.name) else None
        )
        # The previous release's rows redacted under earlier rules are redacted again when carried.
        rule = self._manifest.get(f"{self.spec.name}_privacy_rule")
        self.previous_under_current_rules: bool = rule == PRIVACY_RULE
        self.redactions: Redactions = redactions
        self.files: list[EventShards] = []
        self.stats: S = self.stats_type()
        # Of the previous release's rows only where each is (its file and row, by lecture id and key) is
        # kept; rows are read a row group at a time when they are wanted, wherever the lecture was
        # published (under another event, under an id since merged into another).
        self._files: list[str] = self.previous.files_of(self.spec.name) if self.previous is not None else []
        self._where: dict[str, dict[K, tuple[int, int]]] = {}
        self._group_starts: list[list[int]] = []
        for file, path in enumerate(self._files):
            reader = pq.ParquetFile(self._path_of(path))
            starts = [0]
            for index in range(reader.metadata.num_row_groups):
                starts.append(starts[-1] + reader.metadata.row_group(index).num_rows)
            self._group_starts.append(starts)
            keys = reader.read(columns=["lecture_id", *self.key_columns])
            columns = [keys.column(i).to_pylist() for i in range(keys.num_columns)]
            for row, (lecture_id, *key) in enumerate(zip(*columns, strict=True)):
                stored = str(key[0]) if len(key) == 1 else tuple(str(k) for k in key)
                self._where.setdefault(str(lecture_id), {})[cast(K, stored)] = (file, row)

    # What differs, table by table.

    def listed(self, lecture: Lecture) -> list[K]:
        """The keys of the files the lecture's record lists, in its order, once each."""
        raise NotImplementedError

    def order(self, row: R) -> tuple[Any, ...]:
        """The row's place in its event's file."""
        raise NotImplementedError

    def redacted_again(self, row: R) -> R:
        """``row`` redacted under the privacy rules in force (the same object when they find nothing)."""
        raise NotImplementedError

    def redacted(self, row: R) -> R:
        """``row`` as the release holds it: the redacted authors' names taken out."""
        raise NotImplementedError

    def _path_of(self, path: str) -> Path:
        assert self.previous is not None
        return self.previous.path_of(path)

    def _read(self, wanted: Iterable[tuple[str, K]]) -> dict[str, dict[K, R]]:
        """The previous release's rows of these (lecture id, key), by lecture and key (those it had)."""
        picks: dict[tuple[int, int], list[int]] = {}  # (file, row group) -> rows in the file
        for lecture_id, key in wanted:
            where = self._where.get(lecture_id, {}).get(key)
            if where is not None:
                file, row = where
                group = bisect.bisect_right(self._group_starts[file], row) - 1
                picks.setdefault((file, group), []).append(row)
        out: dict[str, dict[K, R]] = {}
        for (file, group), rows in sorted(picks.items()):
            table = pq.ParquetFile(self._path_of(self._files[file])).read_row_group(group)
            start = self._group_starts[file][group]
            for record in table.take([row - start for row in rows]).to_pylist():
                found = self.kind.record.from_json(record)
                out.setdefault(found.lecture_id, {})[self.key(found)] = found
            del table
        return out

    def writer_options(self) -> WriterOptions:
        """The Parquet writer's settings of an event's file."""
        raise NotImplementedError

    def weight(self, row: R) -> int:
        """About how much a row weighs in memory (only a table written in chunks needs it)."""
        raise NotImplementedError

    # The same for every such table.

    def path(self, event_id: str) -> str:
        """The event's file, named as its lectures' folder: ``data/<table>/event-<id>.parquet``."""
        return f"data/{self.spec.name}/{event_directory(event_id)}.parquet"

    @property
    def pattern(self) -> str:
        """The config's files: every event's file, one level under ``data/<table>``."""
        return f"data/{self.spec.name}/*.parquet"

    @property
    def _manifest(self) -> Mapping[str, Any]:
        """The previous release's manifest (empty when it has none of the table's files)."""
        return cast(Mapping[str, Any], (self.previous and self.previous.manifest) or {})

    @property
    def num_rows(self) -> int:
        return sum(f.num_rows for f in self.files)

    @property
    def email_like(self) -> int:
        """The values shaped like an e-mail address in the files written."""
        return sum(f.email_like for f in self.files)

    def key(self, row: R) -> K:
        values = tuple(getattr(row, column) for column in self.key_columns)
        return cast(K, values[0] if len(values) == 1 else values)

    def under_current_rules(self, row: R) -> R:
        """A row the previous release holds, redacted again when it was under other rules."""
        return row if self.previous_under_current_rules else self.redacted_again(row)

    def settled(self, staged: R | None, previous: R | None) -> R | None:
        """The staged row, unless it has no content and its file did not say it is gone: then the
        published one (:func:`crawler.schema.sources.settle_row`)."""
        if staged is None:
            return previous
        assert self.spec.source is not None
        return settle_row(staged, previous, content=self.spec.content, source=self.spec.source)[0]

    def united(self, by_id: Iterable[Mapping[K, R]]) -> dict[K, R]:
        """One row per key from the rows of several ids (by key, in :func:`row_ids` order), each key's
        rows settled from the last id's to the first's: the evidence rule, between the answers of one
        file."""
        found: dict[K, list[R]] = {}
        for rows in by_id:
            for key, row in rows.items():
                found.setdefault(key, []).append(row)
        united = {}
        for key, answers in found.items():
            row = answers[-1]
            for earlier in reversed(answers[:-1]):
                settled = self.settled(earlier, row)
                assert settled is not None
                row = settled
            united[key] = row
        return united

    def published(self, row: R, lecture: Lecture) -> R:
        """A row as the release holds it: its lecture's id and event (a merged record's row is staged
        under the id merged into it), redacted (:meth:`redacted`)."""
        if (row.lecture_id, row.event_id) != (lecture.lecture_id, lecture.event_id):
            row = replace(row, lecture_id=lecture.lecture_id, event_id=lecture.event_id)
        return self.redacted(row)

    def lecture_rows(self, lecture: Lecture, staged: Mapping[K, R], previous: Mapping[K, R]) -> list[R]:
        """The rows of one lecture: each listed file's row, staged, else as the previous release held it,
        else none (:meth:`settled`); in row order. ``staged`` and ``previous`` are by key."""
        found = (self.settled(staged.get(key), previous.get(key)) for key in self.listed(lecture))
        return sorted((self.published(r, lecture) for r in found if r is not None), key=self.order)

    def staged_rows(self, stage: RowLines[R], lecture_id: str) -> dict[K, R]:
        """A lecture's staged rows by key, each redacted again when its line says it was redacted under
        earlier rules."""
        return {
            self.key(s.record): (
                s.record
                if s.validators.get(PRIVACY_RULE_KEY) == PRIVACY_RULE
                else self.redacted_again(s.record)
            )
            for s in stage.rows_of(lecture_id)
        }

    def rows(self, lectures: Sequence[Lecture]) -> list[R]:
        """The rows of a few lectures, lecture by lecture: the staged rows read back, the carried ones
        read from the previous release; a record's rows are those of its own id and of the ids merged
        into it (:func:`row_ids`, :meth:`united`), in the stage as in the previous release."""
        stage = self.stage
        staged = {
            lec.lecture_id: self.united(self.staged_rows(stage, i) for i in row_ids(lec))
            for lec in lectures
            if stage is not None and self.listed(lec)
        }
        # The previous release's row of a file is read where the stage has none, and where the stage's
        # has no content: it stands unless the file said it is gone (the stage may lack what was
        # published: a lost state, an event kept back).
        wanted = {
            (i, key)
            for lec in lectures
            for key in self.listed(lec)
            if not self._has_content(staged.get(lec.lecture_id, {}).get(key))
            for i in row_ids(lec)
        }
        read = self._read(wanted) if self.previous is not None and wanted else {}
        before = {i: {k: self.under_current_rules(r) for k, r in rows.items()} for i, rows in read.items()}
        return [
            row
            for lec in lectures
            for row in self.lecture_rows(
                lec, staged.get(lec.lecture_id, {}), self.united(before.get(i, {}) for i in row_ids(lec))
            )
        ]

    def _has_content(self, row: R | None) -> bool:
        return row is not None and has_content(row, self.spec.content)

    def _batches(self, lectures: Sequence[Lecture]) -> Iterator[Sequence[Lecture]]:
        step = self.batch or max(len(lectures), 1)
        for start in range(0, len(lectures), step):
            yield lectures[start : start + step]

    def changed(self, lectures: Iterable[Lecture]) -> bool:
        """True when these lectures' rows (made as a release makes them) differ from the rows the
        previous release holds for them: a file staged anew or edited, one no longer listed. A run of one
        event's lectures at a time, a batch of it (:attr:`batch`), as a release reads them (the catalogue
        is never held at once)."""
        for _, run in itertools.groupby(lectures, key=lambda lecture: str(lecture.event_id)):
            for batch in self._batches(list(run)):
                # Every row the previous release holds for these lectures' own ids, as it holds them.
                own = ((lec.lecture_id, key) for lec in batch for key in self._where.get(lec.lecture_id, {}))
                held = self._read(own) if self.previous is not None else {}
                then = [
                    r for lec in batch for r in sorted(held.get(lec.lecture_id, {}).values(), key=self.order)
                ]
                if self.rows(batch) != then:
                    return True
        return False

    def problems(self, row: R) -> list[str]:
        """What keeps a row out of the release (empty when none), named by its lecture and file."""
        name = self.kind.name_field
        label = f"{self.kind.kind} lecture_id={row.lecture_id!r} {name}={getattr(row, name)!r}"
        return [f"{label}: {p}" for p in validate_record(row.to_json(), self.kind.fields)]

    def arrow_table(self, rows: Sequence[R]) -> pa.Table:
        """The table of these rows, column by column."""
        arrays = [pa.array([getattr(r, f.name) for r in rows], field_arrow_type(f)) for f in self.spec.fields]
        return pa.Table.from_arrays(arrays, schema=self.spec.arrow_schema())

    def write_event(
        self, build: Path, lectures: Sequence[Lecture], max_bytes: int = ROW_GROUP_TARGET_BYTES
    ) -> None:
        """Write one event's file from its published ``lectures`` (none when no lecture lists a file the
        release has a row of), or link the previous release's file when the rows are the ones it holds
        (its digest, kept in the manifest's :attr:`shards_key`). Raises :class:`InvalidRecordsError`
        naming every row that fails the schema (nothing of the event is kept).

        Where the previous release kept the event's file, the rows are made once without writing, to
        compare digests; an event whose rows fit in one chunk is then written from them, a larger one
        that changed is made again as it is written (the rows are never held whole)."""
        if not lectures:
            return
        event_id = str(lectures[0].event_id)
        ordered = sorted(lectures, key=lambda lec: lecture_order(lec.lecture_id))
        before = self.file_of(event_id)
        held: list[list[R]] | None = None
        if self.previous is not None and before is not None:
            fingerprint, stats, held = self._read_through(ordered, max_bytes)
            carried = carried_event(self.previous, build, event_id, before, fingerprint)
            if carried is not None:
                self.files.append(carried)
                self.stats.merge(stats)
                return
        self._write_file(build, event_id, self._event_chunks(ordered) if held is None else held, max_bytes)

    def file_of(self, event_id: str) -> EventShardEntry | None:
        """What the event's file was made of, as the previous release's manifest keeps it (None when it
        does not say, names other files, or the table's files are never carried)."""
        if self.previous is None or self.shards_key is None:
            return None
        kept = self._manifest.get(self.shards_key)
        entry = kept.get(event_id) if isinstance(kept, dict) else None
        if not isinstance(entry, dict) or not isinstance(entry.get("fingerprint"), str):
            return None
        return cast(EventShardEntry, entry) if entry.get("files") == [self.path(event_id)] else None

    def _event_chunks(self, lectures: Sequence[Lecture]) -> Iterator[list[R]]:
        """An event's rows, checked, in chunks of about :attr:`chunk_bytes` of text; raises
        :class:`InvalidRecordsError` at the end naming every row that fails the schema."""
        pending: list[R] = []
        weight = 0
        problems: list[str] = []
        for batch in self._batches(lectures):
            for row in self.rows(batch):
                found = self.problems(row)
                problems.extend(found)
                if found:
                    continue
                pending.append(row)
                if self.chunk_bytes is None:
                    continue
                weight += self.weight(row)
                if weight >= self.chunk_bytes:
                    yield pending
                    pending, weight = [], 0
        if problems:
            raise InvalidRecordsError(problems, len(lectures))
        if pending:
            yield pending

    def _read_through(
        self, lectures: Sequence[Lecture], max_bytes: int
    ) -> tuple[str, S, list[list[R]] | None]:
        """An event's rows made without writing them: their digest, the card's counts of them, and the
        rows when they came in one chunk (None when more: they were let go)."""
        digest = self._digest(max_bytes)
        stats = self.stats_type()
        held: list[list[R]] | None = []
        for chunk in self._event_chunks(lectures):
            digest_rows(digest, chunk)
            stats.add(chunk)
            held = [chunk] if held == [] else None
        return digest.hexdigest(), stats, held

    def _digest(self, max_bytes: int) -> hashlib._Hash:
        """The digest of an event's file: its rows, the file schema, the writer's version and settings,
        the row group bound and the chunk bound."""
        options = json.dumps(self.writer_options(), sort_keys=True)
        writer = f"pyarrow {pa.__version__} {ROW_GROUP_ROWS} {max_bytes} {self.chunk_bytes} {options}"
        return rows_digest(writer, self.spec)

    def _write_file(self, build: Path, event_id: str, chunks: Iterable[list[R]], max_bytes: int) -> None:
        """Write the event's file from its rows' chunks, opened at the first (none when there is none)."""
        path = self.path(event_id)
        target = build / path
        writer: pq.ParquetWriter | None = None
        digest = self._digest(max_bytes) if self.shards_key is not None else None
        stats = self.stats_type()
        num_rows = num_bytes = email_like = 0
        try:
            for chunk in chunks:
                if writer is None:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    writer = pq.ParquetWriter(target, file_schema(self.spec), **self.writer_options())
                table = self.arrow_table(chunk)
                write_row_groups(writer, table, max_rows=ROW_GROUP_ROWS, max_bytes=max_bytes)
                num_rows += table.num_rows
                num_bytes += table.nbytes
                email_like += email_like_values(table)
                if digest is not None:
                    digest_rows(digest, chunk)
                stats.add(chunk)
        finally:
            if writer is not None:
                writer.close()
        if not num_rows:
            target.unlink(missing_ok=True)
            return
        self.stats.merge(stats)
        fingerprint = digest.hexdigest() if digest is not None else ""
        shards = (Shard(path, num_rows),)
        self.files.append(EventShards(event_id, shards, num_bytes, fingerprint, email_like, reused=False))

    def check_files(self, root: Path, paths: Sequence[str], expected: int) -> None:
        """ValueError unless the files hold ``expected`` rows with the declared schema, each file one
        event's rows (its own file name) in row order without a row twice; read from a few narrow
        columns, a file at a time."""
        declared = self.spec.arrow_schema().remove_metadata()
        found = 0
        for path in paths:
            if not pq.read_schema(root / path).remove_metadata().equals(declared):
                raise ValueError(f"{path}: schema differs from the declared {self.spec.name} schema")
            table = pq.read_table(root / path, columns=["lecture_id", "event_id", *self.order_columns])
            events = set(table.column("event_id").to_pylist())
            if len(events) != 1 or self.path(str(events.pop())) != path:
                raise ValueError(f"{path}: does not hold exactly the rows of the event it is named after")
            rows = [SimpleNamespace(**r) for r in table.to_pylist()]
            keys = [self.order(cast(Any, r)) for r in rows]
            names = {tuple(getattr(r, c) for c in self.spec.row_key) for r in rows}
            if keys != sorted(keys) or len(names) != len(rows):
                raise ValueError(f"{path}: rows are not in {self.spec.name} order, or a row is there twice")
            found += table.num_rows
        if found != expected:
            raise ValueError(f"{found} rows read, {expected} written")
