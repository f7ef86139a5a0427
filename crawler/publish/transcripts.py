"""The ``transcripts`` table of a release: one row per lecture and subtitle track, written event by event
beside the lectures' files, ``data/transcripts/<event folder>.parquet`` (:mod:`crawler.publish.file_tables`
makes, writes and checks the rows; this is what is the table's own).

A lecture's files are the tracks its record lists with a URL (``subtitles[].url``), a row's key its
``subtitle_url``. A row loses the redacted authors' names as a lecture's ``text`` does, the spoken names
the rules in force find (:meth:`TranscriptsTable.redacted_again`) and its e-mail addresses
(:func:`crawler.publish.records.scrubbed_transcript`).

Nothing holds the release's transcripts at once: an event's lectures are taken a few at a time, their
tracks written out in row groups once :attr:`TranscriptsTable.chunk_bytes` of text is gathered, and the
previous release's rows are read a row group at a time, only where a track is carried (:class:`TrackIndex`).
An event whose rows are the previous release's keeps that file (kept in the manifest's
``transcript_shards``).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import pyarrow.parquet as pq

from crawler.privacy.spoken import redact_segments, redact_spoken
from crawler.publish.file_tables import FileTable, PreviousRows, RowStats
from crawler.publish.parquet import WriterOptions, supports_content_defined_chunking
from crawler.publish.previous import PreviousRelease
from crawler.publish.records import scrubbed_transcript
from crawler.publish.removals import Redactions, without_redacted_names
from crawler.publish.tables import TRANSCRIPTS
from crawler.schema import Int32, Lecture, Segment, Transcript, transcript_order
from crawler.state.stage_transcripts import TRANSCRIPT_ROWS
from crawler.transcripts.rolling import TimedText


@dataclass
class TranscriptStats(RowStats):
    """What the card tells of the transcripts (``rows``: tracks), counted as they are written."""

    languages: Counter[str] = field(default_factory=Counter)
    auto_generated: int = 0
    speech_ms: int = 0

    def count(self, row: Transcript) -> None:
        self.languages[row.language or row.locale or "unknown"] += 1
        self.auto_generated += row.auto_generated is True
        self.speech_ms += row.segments[-1]["end_ms"] if row.segments else 0
        if row.text is None:
            self.without_text[row.problem or "unknown"] += 1


class TrackIndex(PreviousRows[Transcript, str]):
    """The previous release's ``transcripts`` rows, by (lecture_id, subtitle_url): only where each is (its
    file and row) is kept; rows are read a row group at a time when a track is carried."""

    def __init__(self, table: TranscriptsTable, previous: PreviousRelease) -> None:
        super().__init__(table, previous)
        self._files = previous.files_of(TRANSCRIPTS.name)
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

    def rows(
        self, lectures: Sequence[Lecture], wanted: set[tuple[str, str]]
    ) -> dict[str, dict[str, Transcript]]:
        read = self._read(wanted)
        return {i: {url: self.under_current_rules(t) for url, t in rows.items()} for i, rows in read.items()}

    def held(self, lectures: Sequence[Lecture]) -> list[Transcript]:
        held = self._read(
            (i, url) for lec in lectures for i in [lec.lecture_id] for url in self._where.get(i, {})
        )
        return [
            t for lec in lectures for t in sorted(held.get(lec.lecture_id, {}).values(), key=transcript_order)
        ]

    def _read(self, wanted: Iterable[tuple[str, str]]) -> dict[str, dict[str, Transcript]]:
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
            table = pq.ParquetFile(self.release.path_of(self._files[file])).read_row_group(group)
            start = self._group_starts[file][group]
            for record in table.take([row - start for row in rows]).to_pylist():
                track = Transcript.from_json(record)
                out.setdefault(track.lecture_id, {})[track.subtitle_url] = track
            del table
        return out


class TranscriptsTable(FileTable[Transcript, str, TranscriptStats]):
    """The ``transcripts`` table: written in chunks, its unchanged event files carried."""

    spec = TRANSCRIPTS
    kind = TRANSCRIPT_ROWS
    stats = TranscriptStats
    # Tracks are gathered until this much text, then written as row groups (a bound under the row group's).
    chunk_bytes = 16_000_000
    batch = 256
    shards_key = "transcript_shards"
    order_columns = ("locale", "subtitle_url")

    def listed(self, lecture: Lecture) -> list[str]:
        """The subtitle URLs the lecture's record lists, once each, in its order (a track without one is
        no row)."""
        return list(dict.fromkeys(url for s in lecture.subtitles or [] if (url := s.get("url"))))

    def key(self, row: Transcript) -> str:
        return row.subtitle_url

    def order(self, row: Transcript) -> tuple[tuple[int, str], str, str]:
        return transcript_order(row)

    def redacted_again(self, row: Transcript) -> Transcript:
        """``row`` redacted under the rules in force (:data:`crawler.privacy.rule.PRIVACY_RULE`): a row
        read from its file under earlier rules loses what the rules now find, as a file read tonight
        would; the same object when they find nothing."""
        if row.text is None:
            return row
        if not row.segments:
            text, found = redact_spoken(row.text)
            return replace(row, text=text) if found else row
        timed = [TimedText(s["start_ms"], s["end_ms"], s["text"]) for s in row.segments]
        redacted, found = redact_segments(timed)
        if not found:
            return row
        segments = [
            Segment(start_ms=Int32(t.start_ms), end_ms=Int32(t.end_ms), text=t.text) for t in redacted
        ]
        return replace(row, text=" ".join(t.text for t in redacted), segments=segments)

    def redacted(self, row: Transcript, redactions: Redactions) -> Transcript:
        """``row`` without the redacted authors' names in its text and its segments' texts, e-mail
        addresses replaced."""
        if redactions:
            text = None if row.text is None else without_redacted_names(row.text, redactions)
            segments: list[Segment] = [
                {**s, "text": without_redacted_names(s["text"], redactions)} for s in row.segments
            ]
            if text != row.text or segments != row.segments:
                row = replace(row, text=text, segments=segments)
        return scrubbed_transcript(row)

    def previous_rows(self, previous: PreviousRelease) -> TrackIndex:
        return TrackIndex(self, previous)

    def writer_options(self) -> WriterOptions:
        """The lectures' settings but for the sort order (rows are in ``transcript_order``, numeric ids
        first, which is not Parquet's order of strings) and the bloom filter (its size would need the
        rows counted before they are written)."""
        options: WriterOptions = {
            "compression": "zstd",
            "write_statistics": True,
            "write_page_index": True,
            "store_schema": True,
        }
        if supports_content_defined_chunking():
            options["use_content_defined_chunking"] = True
        return options

    def weight(self, row: Transcript) -> int:
        """Its texts, and a little per segment."""
        return len(row.text or "") + sum(len(s["text"] or "") + 16 for s in row.segments) + 256


TRANSCRIPTS_TABLE = TranscriptsTable()
