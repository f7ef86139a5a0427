"""The ``transcripts`` table of a release: one row per lecture and subtitle track, written event by event
beside the lectures' files, ``data/transcripts/<event folder>.parquet``.

Which rows: :mod:`crawler.publish.transcript_rows`. Each row is checked against the schema.

Nothing holds the release's transcripts at once: an event's lectures are taken a few at a time, their
tracks written out in row groups of at most :data:`TRANSCRIPT_CHUNK_BYTES` of text once that much is
gathered, and the previous release's rows are read a row group at a time, only where a track is carried.
The bytes depend only on the rows: an event whose rows are the previous release's keeps that file, linked
byte for byte (:class:`TracksDigest`, kept in the manifest's ``transcript_shards``), and is not written.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from crawler.privacy.email_like import EMAIL_LIKE_RULE, email_like_values
from crawler.publish.manifest import EventShardEntry
from crawler.publish.parquet import (
    ROW_GROUP_ROWS,
    ROW_GROUP_TARGET_BYTES,
    WriterOptions,
    file_schema,
    supports_content_defined_chunking,
    write_row_groups,
)
from crawler.publish.previous import PreviousRelease
from crawler.publish.records import InvalidRecordsError
from crawler.publish.shards import carry_files
from crawler.publish.tables import TRANSCRIPTS, event_directory
from crawler.publish.transcript_rows import (
    LECTURE_BATCH,
    TranscriptSources,
    batch_tracks,
)
from crawler.schema import (
    TRANSCRIPT_FIELDS,
    Lecture,
    Transcript,
    lecture_order,
)
from crawler.schema.arrow import field_arrow_type
from crawler.schema.check import validate_record

TRANSCRIPTS_DIR = f"data/{TRANSCRIPTS.name}"
# The config's files: every event's file, one level under ``data/transcripts``.
PATTERN = f"{TRANSCRIPTS_DIR}/*.parquet"
# Tracks are gathered until this much text, then written as row groups (a bound under the row group's).
TRANSCRIPT_CHUNK_BYTES = 16_000_000


def transcript_path(event_id: str) -> str:
    """The event's ``transcripts`` file, named as its lectures' folder:
    ``data/transcripts/event-<id>.parquet``."""
    return f"{TRANSCRIPTS_DIR}/{event_directory(event_id)}.parquet"


def track_problems(track: Transcript) -> list[str]:
    """What keeps a track out of the release (empty when none), named by its lecture and file."""
    label = f"transcript lecture_id={track.lecture_id!r} subtitle_url={track.subtitle_url!r}"
    return [f"{label}: {p}" for p in validate_record(track.to_json(), TRANSCRIPT_FIELDS)]


def text_bytes(track: Transcript) -> int:
    """About how much a track weighs in memory: its texts, and a little per segment."""
    return len(track.text or "") + sum(len(s["text"] or "") + 16 for s in track.segments) + 256


def transcript_table(tracks: Sequence[Transcript]) -> pa.Table:
    """The ``transcripts`` table of these rows, column by column."""
    arrays = [pa.array([getattr(t, f.name) for t in tracks], field_arrow_type(f)) for f in TRANSCRIPT_FIELDS]
    return pa.Table.from_arrays(arrays, schema=TRANSCRIPTS.arrow_schema())


def _writer_options() -> WriterOptions:
    """The Parquet writer's settings: the lectures' but for the sort order (rows are in
    ``transcript_order``, numeric ids first, which is not Parquet's order of strings) and the bloom filter
    (its size would need the rows counted before they are written)."""
    options: WriterOptions = {
        "compression": "zstd",
        "write_statistics": True,
        "write_page_index": True,
        "store_schema": True,
    }
    if supports_content_defined_chunking():
        options["use_content_defined_chunking"] = True
    return options


@dataclass
class TranscriptStats:
    """What the card tells of the transcripts, counted as they are written."""

    tracks: int = 0
    by_event: Counter[str] = field(default_factory=Counter)
    languages: Counter[str] = field(default_factory=Counter)
    auto_generated: int = 0
    speech_ms: int = 0
    # Tracks without text, by why (``problem``; ``unknown`` when it does not say).
    without_text: Counter[str] = field(default_factory=Counter)
    email_like: int = 0

    def add(self, tracks: Sequence[Transcript]) -> None:
        for track in tracks:
            self.tracks += 1
            self.by_event[str(track.event_id)] += 1
            self.languages[track.language or track.locale or "unknown"] += 1
            self.auto_generated += track.auto_generated is True
            self.speech_ms += track.segments[-1]["end_ms"] if track.segments else 0
            if track.text is None:
                self.without_text[track.problem or "unknown"] += 1

    def merge(self, other: TranscriptStats) -> None:
        """Add what ``other`` counted."""
        for name in (f.name for f in fields(self)):
            mine = getattr(self, name)
            if isinstance(mine, Counter):
                mine.update(getattr(other, name))
            else:
                setattr(self, name, mine + getattr(other, name))


@dataclass(frozen=True)
class TranscriptFile:
    """One event's ``transcripts`` file in the build: written now, or carried byte for byte from the
    previous release (``reused``) because its rows are the ones that file holds."""

    event_id: str
    path: str
    num_rows: int
    num_bytes: int
    fingerprint: str = ""
    email_like: int = 0
    reused: bool = False

    def entry(self) -> EventShardEntry:
        return {
            "fingerprint": self.fingerprint,
            "files": [self.path],
            "rows": self.num_rows,
            "num_bytes": self.num_bytes,
            "email_like": self.email_like,
            "email_like_rule": EMAIL_LIKE_RULE,
        }


@dataclass
class TranscriptsWritten:
    """The ``transcripts`` files of a release, and what the card counts of them."""

    files: list[TranscriptFile] = field(default_factory=list)
    stats: TranscriptStats = field(default_factory=TranscriptStats)

    @property
    def num_rows(self) -> int:
        return sum(f.num_rows for f in self.files)


class _EventFile:
    """One event's file, opened at its first row (an event without a track has none)."""

    def __init__(self, build: Path, event_id: str, max_bytes: int) -> None:
        self.path = transcript_path(event_id)
        self.target = build / self.path
        self.max_bytes = max_bytes
        self.rows = 0
        self.num_bytes = 0
        self.email_like = 0
        self._writer: pq.ParquetWriter | None = None

    def write(self, tracks: Sequence[Transcript]) -> None:
        if not tracks:
            return
        if self._writer is None:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(self.target, file_schema(TRANSCRIPTS), **_writer_options())
        table = transcript_table(tracks)
        write_row_groups(self._writer, table, max_rows=ROW_GROUP_ROWS, max_bytes=self.max_bytes)
        self.rows += table.num_rows
        self.num_bytes += table.nbytes
        self.email_like += email_like_values(table)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


class TracksDigest:
    """A digest of everything an event's ``transcripts`` file is made of: its rows in order, the declared
    file schema, the writer's version and settings and the row group bound. Equal digests give equal
    bytes."""

    def __init__(self, max_bytes: int) -> None:
        options = json.dumps(_writer_options(), sort_keys=True)
        writer = f"pyarrow {pa.__version__} {ROW_GROUP_ROWS} {max_bytes} {TRANSCRIPT_CHUNK_BYTES} {options}"
        self._digest = hashlib.sha256(f"{writer}\n".encode())
        self._digest.update(file_schema(TRANSCRIPTS).serialize().to_pybytes())

    def update(self, tracks: Iterable[Transcript]) -> None:
        for track in tracks:
            self._digest.update(json.dumps(track.to_json(), sort_keys=True, ensure_ascii=False).encode())
            self._digest.update(b"\n")

    def hexdigest(self) -> str:
        return self._digest.hexdigest()


def write_event_transcripts(
    build: Path,
    lectures: Sequence[Lecture],
    sources: TranscriptSources,
    written: TranscriptsWritten,
    max_bytes: int = ROW_GROUP_TARGET_BYTES,
) -> None:
    """Write one event's ``transcripts`` file from its published ``lectures`` (see the module's
    docstring), or link the previous release's file when the rows are the ones it holds (its digest,
    kept in the manifest's ``transcript_shards``): ``sources`` are the stage's tracks, the previous
    release's and the redactions. Raises :class:`InvalidRecordsError` naming every track that fails the
    schema (nothing of the event is kept).

    Where the previous release kept the event's file, the rows are made once without writing, to compare
    digests; an event whose rows fit in one chunk is then written from them, a larger one that changed
    is made again as it is written (the rows are never held whole)."""
    if not lectures:
        return
    event_id = str(lectures[0].event_id)
    ordered = sorted(lectures, key=lambda lec: lecture_order(lec.lecture_id))
    previous = sources.previous
    before = previous.file_of(event_id) if previous is not None else None
    held: list[list[Transcript]] | None = None
    if previous is not None and before is not None:
        fingerprint, stats, held = _read_through(ordered, sources, max_bytes)
        carried = _carried_file(build, event_id, fingerprint, before, previous.release)
        if carried is not None:
            written.files.append(carried)
            written.stats.merge(stats)
            written.stats.email_like += carried.email_like
            return
    _write_file(
        build, event_id, _event_chunks(ordered, sources) if held is None else held, written, max_bytes
    )


def _event_chunks(lectures: Sequence[Lecture], sources: TranscriptSources) -> Iterator[list[Transcript]]:
    """An event's rows, checked, in chunks of about :data:`TRANSCRIPT_CHUNK_BYTES` of text; raises
    :class:`InvalidRecordsError` at the end naming every track that fails the schema."""
    pending: list[Transcript] = []
    weight = 0
    problems: list[str] = []
    for start in range(0, len(lectures), LECTURE_BATCH):
        for track in batch_tracks(lectures[start : start + LECTURE_BATCH], sources):
            found = track_problems(track)
            problems.extend(found)
            if found:
                continue
            pending.append(track)
            weight += text_bytes(track)
            if weight >= TRANSCRIPT_CHUNK_BYTES:
                yield pending
                pending, weight = [], 0
    if problems:
        raise InvalidRecordsError(problems, len(lectures))
    if pending:
        yield pending


def _read_through(
    lectures: Sequence[Lecture], sources: TranscriptSources, max_bytes: int
) -> tuple[str, TranscriptStats, list[list[Transcript]] | None]:
    """An event's rows made without writing them: their digest, the card's counts of them, and the rows
    when they came in one chunk (None when more: they were let go)."""
    digest = TracksDigest(max_bytes)
    stats = TranscriptStats()
    held: list[list[Transcript]] | None = []
    for chunk in _event_chunks(lectures, sources):
        digest.update(chunk)
        stats.add(chunk)
        held = [chunk] if held == [] else None
    return digest.hexdigest(), stats, held


def _carried_file(
    build: Path, event_id: str, fingerprint: str, before: EventShardEntry, previous: PreviousRelease
) -> TranscriptFile | None:
    """The previous release's file of the event, linked into the build when it was made of the same
    rows and is still the file its manifest describes; None otherwise."""
    path = transcript_path(event_id)
    if before["fingerprint"] != fingerprint or before.get("files") != [path]:
        return None
    carried = carry_files(previous, build, before)
    if carried is None:
        return None
    if before.get("email_like_rule") == EMAIL_LIKE_RULE:
        email_like = int(before.get("email_like", 0))
    else:
        # A count made with another detector is made again, from the file carried.
        email_like = email_like_values(pq.read_table(build / path))
    rows = carried[0].num_rows
    return TranscriptFile(
        event_id, path, rows, int(before["num_bytes"]), fingerprint, email_like, reused=True
    )


def _write_file(
    build: Path,
    event_id: str,
    chunks: Iterable[list[Transcript]],
    written: TranscriptsWritten,
    max_bytes: int,
) -> None:
    out = _EventFile(build, event_id, max_bytes)
    digest = TracksDigest(max_bytes)
    stats = TranscriptStats()
    try:
        for chunk in chunks:
            out.write(chunk)
            digest.update(chunk)
            stats.add(chunk)
    finally:
        out.close()
    if out.rows:
        written.stats.merge(stats)
        written.stats.email_like += out.email_like
        written.files.append(
            TranscriptFile(event_id, out.path, out.rows, out.num_bytes, digest.hexdigest(), out.email_like)
        )
    else:
        out.target.unlink(missing_ok=True)


def check_transcript_files(root: Path, paths: Sequence[str], expected: int) -> None:
    """ValueError unless the ``transcripts`` files hold ``expected`` rows with the declared schema, each
    file one event's rows (its own file name) in ``transcript_order`` without a track twice; read from
    four narrow columns, a file at a time."""
    declared = TRANSCRIPTS.arrow_schema().remove_metadata()
    found = 0
    for path in paths:
        if not pq.read_schema(root / path).remove_metadata().equals(declared):
            raise ValueError(f"{path}: schema differs from the declared {TRANSCRIPTS.name} schema")
        table = pq.read_table(root / path, columns=["lecture_id", "event_id", "locale", "subtitle_url"])
        events = set(table.column("event_id").to_pylist())
        if len(events) != 1 or transcript_path(str(events.pop())) != path:
            raise ValueError(f"{path}: does not hold exactly the rows of the event it is named after")
        keys = [
            ((len(i), i), loc or "", url)
            for i, loc, url in zip(
                table.column("lecture_id").to_pylist(),
                table.column("locale").to_pylist(),
                table.column("subtitle_url").to_pylist(),
                strict=True,
            )
        ]
        if keys != sorted(keys) or len({(k[0], k[2]) for k in keys}) != len(keys):
            raise ValueError(f"{path}: rows are not in transcript order, or a track is there twice")
        found += table.num_rows
    if found != expected:
        raise ValueError(f"{found} rows read, {expected} written")
