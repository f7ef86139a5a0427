"""The ``transcripts`` table of a release: one row per lecture and subtitle track, written event by event
beside the lectures' files, ``data/transcripts/<event folder>.parquet`` (:mod:`crawler.publish.file_tables`
makes, writes and checks the rows; this is what is the table's own).

A lecture's files are the tracks its record lists with a URL (``subtitles[].url``), a row's key its
``subtitle_url``. A row loses the redacted authors' names as a lecture's ``text`` does, the spoken names
the rules in force find (:func:`redacted_again`) and its e-mail addresses
(:func:`crawler.publish.records.scrubbed_transcript`).

Nothing holds the release's transcripts at once: lectures are taken a batch at a time, tracks written out
once :attr:`TranscriptsTable.chunk_bytes` of text is gathered, the previous release's rows read a row group
at a time, only where a track is carried; an event whose rows are the previous release's keeps its file.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from crawler.privacy.spoken import redact_segments, redact_spoken
from crawler.publish.file_tables import FileTable, RowStats
from crawler.publish.parquet import WriterOptions, writer_options
from crawler.publish.records import scrubbed_transcript
from crawler.publish.removals import without_redacted_names
from crawler.publish.tables import TRANSCRIPTS
from crawler.schema import Int32, Lecture, Segment, Transcript, transcript_order
from crawler.state.stage_rows import TRANSCRIPT_ROWS
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


def redacted_again(track: Transcript) -> Transcript:
    """``track`` redacted under the rules in force (:data:`crawler.privacy.rule.PRIVACY_RULE`): a row read
    from its file under earlier rules loses what the rules now find, as a file read tonight would; the same
    object when they find nothing."""
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


class TranscriptsTable(FileTable[Transcript, str, TranscriptStats]):
    """The ``transcripts`` table: written in chunks, its unchanged event files carried."""

    spec = TRANSCRIPTS
    kind = TRANSCRIPT_ROWS
    stats_type = TranscriptStats
    # Tracks are gathered until this much text, then written as row groups (a bound under the row group's).
    chunk_bytes = 16_000_000
    # Lectures whose tracks are gathered at once (the previous release's carried rows are read per batch).
    batch = 256
    shards_key = "transcript_shards"
    order_columns = ("locale", "subtitle_url")
    key_columns = ("subtitle_url",)

    def listed(self, lecture: Lecture) -> list[str]:
        """The subtitle URLs the lecture's record lists, once each, in its order (a track without one is
        no row)."""
        return list(dict.fromkeys(url for s in lecture.subtitles or [] if (url := s.get("url"))))

    def order(self, row: Transcript) -> tuple[tuple[int, str], str, str]:
        return transcript_order(row)

    def redacted_again(self, row: Transcript) -> Transcript:
        return redacted_again(row)

    def redacted(self, row: Transcript) -> Transcript:
        """``row`` without the redacted authors' names in its text and its segments' texts, e-mail
        addresses replaced."""
        if redactions := self.redactions:
            text = None if row.text is None else without_redacted_names(row.text, redactions)
            segments: list[Segment] = [
                {**s, "text": without_redacted_names(s["text"], redactions)} for s in row.segments
            ]
            if text != row.text or segments != row.segments:
                row = replace(row, text=text, segments=segments)
        return scrubbed_transcript(row)

    def writer_options(self) -> WriterOptions:
        """The lectures' settings but for the sort order (rows are in ``transcript_order``, numeric ids
        first, which is not Parquet's order of strings) and the bloom filter (its size would need the
        rows counted before they are written)."""
        options = writer_options(self.spec, num_rows=0)
        del options["sorting_columns"]
        return options

    def weight(self, row: Transcript) -> int:
        """Its texts, and a little per segment."""
        return len(row.text or "") + sum(len(s["text"] or "") + 16 for s in row.segments) + 256
