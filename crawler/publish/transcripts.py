"""The ``transcripts`` table of a release: one row per lecture and subtitle track, written event by event
beside the lectures' files, ``data/transcripts/<event folder>.parquet``.

Which rows: for each lecture the release publishes (withdrawn ones included), the tracks its record lists
with a URL (``subtitles[].url``: the record's track list is the authority); each is the staged track when
the stage holds one (:class:`TranscriptSource`), else the previous release's row of the same
(lecture_id, subtitle_url) (:class:`PreviousTranscripts`), else no row; a record merged from several ids
(``alternate_ids``) takes the tracks staged or published under any of them (:func:`united_tracks`), as
rows of its own id. Every row loses the redacted authors' names as a lecture's ``text`` does, is scrubbed
of e-mail addresses (:func:`crawler.publish.records.scrubbed_transcript`) and checked against the schema,
and its ``lecture_id`` and ``event_id`` are its lecture's.

Nothing holds the release's transcripts at once: an event's lectures are taken a few at a time, their
tracks written out in row groups of at most :data:`TRANSCRIPT_CHUNK_BYTES` of text once that much is
gathered, and the previous release's rows are read a row group at a time, only where a track is carried.
The bytes depend only on the rows: an event whose rows are the previous release's keeps that file, linked
byte for byte (:class:`TracksDigest`, kept in the manifest's ``transcript_shards``), and is not written.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from crawler.privacy.email_like import EMAIL_LIKE_RULE, email_like_values
from crawler.privacy.spoken import TRANSCRIPT_PRIVACY_RULE, redact_segments, redact_spoken
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
from crawler.publish.records import InvalidRecordsError, scrubbed_transcript
from crawler.publish.removals import Redactions, without_redacted_names
from crawler.publish.shards import carry_files
from crawler.publish.tables import TRANSCRIPTS, event_directory
from crawler.schema import (
    TRANSCRIPT_FIELDS,
    Int32,
    Lecture,
    Segment,
    Transcript,
    lecture_order,
    transcript_order,
)
from crawler.schema.arrow import field_arrow_type
from crawler.schema.check import validate_record
from crawler.schema.sources import has_content, settle_row
from crawler.state.stage_transcripts import PRIVACY_RULE_KEY, StagedTranscript
from crawler.transcripts.rolling import TimedText

TRANSCRIPTS_DIR = f"data/{TRANSCRIPTS.name}"
# The config's files: every event's file, one level under ``data/transcripts``.
PATTERN = f"{TRANSCRIPTS_DIR}/*.parquet"
# Tracks are gathered until this much text, then written as row groups (a bound under the row group's).
TRANSCRIPT_CHUNK_BYTES = 16_000_000
# Lectures whose tracks are gathered at once (the previous release's carried rows are read per batch).
LECTURE_BATCH = 256


class TranscriptSource(Protocol):
    """Where the staged tracks come from: the stage index (or the last finished stage)."""

    def transcripts_of(self, lecture_id: str) -> Sequence[StagedTranscript]:
        """The lecture's staged tracks."""
        ...


def transcript_path(event_id: str) -> str:
    """The event's ``transcripts`` file, named as its lectures' folder:
    ``data/transcripts/event-<id>.parquet``."""
    return f"{TRANSCRIPTS_DIR}/{event_directory(event_id)}.parquet"


def listed_urls(lecture: Lecture) -> list[str]:
    """The subtitle URLs the lecture's record lists, once each, in its order (a track without one is no
    row)."""
    return list(dict.fromkeys(url for s in lecture.subtitles or [] if (url := s.get("url"))))


NO_REDACTIONS = Redactions(frozenset(), frozenset())


def redacted_track(track: Transcript, redactions: Redactions) -> Transcript:
    """``track`` without the redacted authors' names in its text and its segments' texts (the same
    object when it holds none)."""
    if not redactions:
        return track
    text = None if track.text is None else without_redacted_names(track.text, redactions)
    segments: list[Segment] = [
        {**s, "text": without_redacted_names(s["text"], redactions)} for s in track.segments
    ]
    if text == track.text and segments == track.segments:
        return track
    return replace(track, text=text, segments=segments)


def published_track(
    track: Transcript, lecture: Lecture, redactions: Redactions = NO_REDACTIONS
) -> Transcript:
    """A track as the release holds it: its lecture's id and event (a merged record's track is staged
    under the id merged into it), the redacted authors' names taken out, e-mail addresses replaced."""
    if (track.lecture_id, track.event_id) != (lecture.lecture_id, lecture.event_id):
        track = replace(track, lecture_id=lecture.lecture_id, event_id=lecture.event_id)
    return scrubbed_transcript(redacted_track(track, redactions))


def track_ids(lecture: Lecture) -> list[str]:
    """The ids whose tracks a record holds: its own, then the ids merged into it (``alternate_ids``),
    each once."""
    return list(dict.fromkeys([lecture.lecture_id, *(lecture.alternate_ids or [])]))


def united_tracks(by_id: Iterable[Mapping[str, Transcript]]) -> dict[str, Transcript]:
    """One track per subtitle URL from the tracks of several ids (by URL, in :func:`track_ids` order):
    the first id's, except that one without text gives way to a later id's with text unless its file
    said it is gone (the evidence rule of :func:`lecture_tracks`, between the answers of one file)."""
    found: dict[str, list[Transcript]] = {}
    for tracks in by_id:
        for url, track in tracks.items():
            found.setdefault(url, []).append(track)
    united = {}
    for url, answers in found.items():
        settled: Transcript | None = None
        for answer in reversed(answers):
            settled = _settled(answer, settled)
        assert settled is not None
        united[url] = settled
    return united


def lecture_tracks(
    lecture: Lecture,
    staged: Mapping[str, Transcript],
    previous: Mapping[str, Transcript],
    redactions: Redactions = NO_REDACTIONS,
) -> list[Transcript]:
    """The rows of one lecture: each listed track, staged, else as the previous release held it, else
    none; in ``transcript_order``. ``staged`` and ``previous`` are by subtitle URL. A staged row without
    text replaces a published one only on its file's own word (:func:`crawler.schema.sources.settle_row`,
    the rule of every declared table)."""
    found = (_settled(staged.get(url), previous.get(url)) for url in listed_urls(lecture))
    tracks = (published_track(t, lecture, redactions) for t in found if t is not None)
    return sorted(tracks, key=transcript_order)


def redacted_again(track: Transcript) -> Transcript:
    """``track`` redacted under the rules in force (:data:`TRANSCRIPT_PRIVACY_RULE`): a row read from its
    file under earlier rules (kept by a 304, carried, kept on an answer that was no evidence) loses what
    the rules now find, as a file read tonight would; the same object when they find nothing."""
    if track.text is None:
        return track
    if not track.segments:
        text, found = redact_spoken(track.text)
        return replace(track, text=text) if found else track
    timed = [TimedText(s["start_ms"], s["end_ms"], s["text"]) for s in track.segments]
    redacted, found = redact_segments(timed)
    if not found:
        return track
    segments = [Segment(start_ms=Int32(t.start_ms), end_ms=Int32(t.end_ms), text=t.text) for t in redacted]
    return replace(track, text=" ".join(t.text for t in redacted), segments=segments)


def under_current_rules(staged: StagedTranscript) -> Transcript:
    """A staged track's row, redacted again when its line says it was redacted under earlier rules."""
    if staged.validators.get(PRIVACY_RULE_KEY) == TRANSCRIPT_PRIVACY_RULE:
        return staged.record
    return redacted_again(staged.record)


def _has_text(track: Transcript | None) -> bool:
    return track is not None and has_content(track, TRANSCRIPTS.content)


def _settled(staged: Transcript | None, previous: Transcript | None) -> Transcript | None:
    if staged is None:
        return previous
    assert TRANSCRIPTS.source is not None
    return settle_row(staged, previous, content=TRANSCRIPTS.content, source=TRANSCRIPTS.source)[0]


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


@dataclass(frozen=True)
class TranscriptSources:
    """Where a release's ``transcripts`` rows come from, and the redactions in force."""

    stage: TranscriptSource | None = None
    previous: PreviousTranscripts | None = None
    redactions: Redactions = NO_REDACTIONS


class PreviousTranscripts:
    """The previous release's ``transcripts`` rows, by (lecture_id, subtitle_url): only where each is (its
    file and row) is kept; rows are read a row group at a time when a track is carried."""

    def __init__(self, previous: PreviousRelease) -> None:
        self._previous = previous
        rule = previous.manifest.get("transcripts_privacy_rule") if previous.manifest else None
        # Rows redacted under earlier rules are redacted again when carried (see :func:`redacted_again`).
        self.redacted_under_current_rules = rule == TRANSCRIPT_PRIVACY_RULE
        self._files = previous.transcript_files
        self._where: dict[str, dict[str, tuple[int, int]]] = {}
        self._group_starts: list[list[int]] = []
        for file, path in enumerate(self._files):
            reader = pq.ParquetFile(previous.path_of(path))
            metadata = reader.metadata
            starts = [0]
            for index in range(metadata.num_row_groups):
                starts.append(starts[-1] + metadata.row_group(index).num_rows)
            self._group_starts.append(starts)
            keys = reader.read(columns=["lecture_id", "subtitle_url"])
            for row, (lecture_id, url) in enumerate(
                zip(keys.column(0).to_pylist(), keys.column(1).to_pylist(), strict=True)
            ):
                self._where.setdefault(str(lecture_id), {})[str(url)] = (file, row)

    def __len__(self) -> int:
        return sum(len(tracks) for tracks in self._where.values())

    @property
    def release(self) -> PreviousRelease:
        return self._previous

    def file_of(self, event_id: str) -> EventShardEntry | None:
        """What the event's ``transcripts`` file was made of (None when the manifest does not say)."""
        manifest = self._previous.manifest
        kept = manifest.get("transcript_shards") if manifest is not None else None
        entry = kept.get(event_id) if isinstance(kept, dict) else None
        return entry if isinstance(entry, dict) and isinstance(entry.get("fingerprint"), str) else None

    def keys_of(self, lecture_ids: Iterable[str]) -> list[tuple[str, str]]:
        """The (lecture_id, subtitle_url) of every row these lectures had."""
        return [(i, url) for i in lecture_ids for url in self._where.get(i, {})]

    def rows_of(self, wanted: Iterable[tuple[str, str]]) -> dict[str, dict[str, Transcript]]:
        """The previous rows of these (lecture_id, subtitle_url), by lecture and URL (those it had)."""
        picks: dict[tuple[int, int], list[int]] = {}  # (file, row group) -> rows in the file
        for lecture_id, url in wanted:
            where = self._where.get(lecture_id, {}).get(url)
            if where is not None:
                file, row = where
                group = bisect.bisect_right(self._group_starts[file], row) - 1
                picks.setdefault((file, group), []).append(row)
        out: dict[str, dict[str, Transcript]] = {}
        for (file, group), rows in sorted(picks.items()):
            table = pq.ParquetFile(self._previous.path_of(self._files[file])).read_row_group(group)
            start = self._group_starts[file][group]
            for record in table.take([row - start for row in rows]).to_pylist():
                track = Transcript.from_json(record)
                out.setdefault(track.lecture_id, {})[track.subtitle_url] = track
            del table
        return out


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
        for track in _batch_tracks(lectures[start : start + LECTURE_BATCH], sources):
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


def _batch_tracks(lectures: Sequence[Lecture], sources: TranscriptSources) -> list[Transcript]:
    """The rows of a few lectures, in order: the staged tracks read back, the carried ones read from the
    previous release; a record's tracks are those of its own id and of the ids merged into it
    (:func:`track_ids`, :func:`united_tracks`), in the stage as in the previous release."""
    stage, previous = sources.stage, sources.previous
    staged: dict[str, dict[str, Transcript]] = {}
    for lecture in lectures:
        if stage is not None and lecture.subtitles:
            staged[lecture.lecture_id] = united_tracks(
                {s.record.subtitle_url: under_current_rules(s) for s in stage.transcripts_of(i)}
                for i in track_ids(lecture)
            )
    # The previous release's row of a track is read where the stage has none, and where the stage's has
    # no text: it stands unless the file said it is gone (the stage may lack what was published: a lost
    # state, an event kept back).
    carried = {
        (i, url)
        for lec in lectures
        for url in listed_urls(lec)
        if not _has_text(staged.get(lec.lecture_id, {}).get(url))
        for i in track_ids(lec)
    }
    before = previous.rows_of(carried) if previous is not None and carried else {}
    if previous is not None and not previous.redacted_under_current_rules:
        before = {i: {url: redacted_again(t) for url, t in rows.items()} for i, rows in before.items()}
    return [
        track
        for lec in lectures
        for track in lecture_tracks(
            lec,
            staged.get(lec.lecture_id, {}),
            united_tracks(before.get(i, {}) for i in track_ids(lec)),
            sources.redactions,
        )
    ]


def transcripts_changed(
    lectures: Iterable[Lecture],
    stage: TranscriptSource | None,
    previous: PreviousRelease,
    redactions: Redactions = NO_REDACTIONS,
) -> bool:
    """True when these lectures' ``transcripts`` rows (made as a release makes them) differ from the rows
    the previous release holds for them: a track staged anew or edited, one no longer listed. A few
    lectures at a time, as a release reads them."""
    before = PreviousTranscripts(previous) if previous.transcript_files else None
    sources = TranscriptSources(stage, before, redactions)
    batch: list[Lecture] = []
    for lecture in lectures:
        batch.append(lecture)
        if len(batch) == LECTURE_BATCH:
            if _batch_changed(batch, sources):
                return True
            batch = []
    return bool(batch) and _batch_changed(batch, sources)


def _batch_changed(lectures: Sequence[Lecture], sources: TranscriptSources) -> bool:
    before = sources.previous
    now = _batch_tracks(lectures, sources)
    held = before.rows_of(before.keys_of(lec.lecture_id for lec in lectures)) if before is not None else {}
    then = [
        track
        for lec in lectures
        for track in sorted(held.get(lec.lecture_id, {}).values(), key=transcript_order)
    ]
    return now != then


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
