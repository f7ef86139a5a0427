"""Which rows a release's ``transcripts`` table holds, lecture by lecture (written by
:mod:`crawler.publish.transcripts`).

For each lecture the release publishes (withdrawn ones included), the tracks its record lists with a URL
(``subtitles[].url``: the record's track list is the authority); each is the staged track when the stage
holds one (:class:`TranscriptSource`), else the previous release's row of the same (lecture_id,
subtitle_url) (:class:`PreviousTranscripts`), else no row; a staged track without text gives way to the
published one unless its file said it is gone (:func:`crawler.schema.sources.settle_row`); a record merged
from several ids (``alternate_ids``) takes the tracks staged or published under any of them
(:func:`united_tracks`), as rows of its own id. Every row loses the redacted authors' names as a lecture's
``text`` does, is redacted again when it was redacted under earlier privacy rules (:func:`redacted_again`)
and is scrubbed of e-mail addresses (:func:`crawler.publish.records.scrubbed_transcript`); its
``lecture_id`` and ``event_id`` are its lecture's. The previous release's rows are read a row group at a
time, only where a track is carried.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import pyarrow.parquet as pq

from crawler.privacy.spoken import TRANSCRIPT_PRIVACY_RULE, redact_segments, redact_spoken
from crawler.publish.manifest import EventShardEntry
from crawler.publish.previous import PreviousRelease
from crawler.publish.records import scrubbed_transcript
from crawler.publish.removals import Redactions, without_redacted_names
from crawler.publish.tables import TRANSCRIPTS
from crawler.schema import Int32, Lecture, Segment, Transcript, transcript_order
from crawler.schema.sources import has_content, settle_row
from crawler.state.stage_transcripts import PRIVACY_RULE_KEY, StagedTranscript
from crawler.transcripts.rolling import TimedText

# Lectures whose tracks are gathered at once (the previous release's carried rows are read per batch).
LECTURE_BATCH = 256
NO_REDACTIONS = Redactions(frozenset(), frozenset())


class TranscriptSource(Protocol):
    """Where the staged tracks come from: the stage index (or the last finished stage)."""

    def transcripts_of(self, lecture_id: str) -> Sequence[StagedTranscript]:
        """The lecture's staged tracks."""
        ...


def listed_urls(lecture: Lecture) -> list[str]:
    """The subtitle URLs the lecture's record lists, once each, in its order (a track without one is no
    row)."""
    return list(dict.fromkeys(url for s in lecture.subtitles or [] if (url := s.get("url"))))


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


def batch_tracks(lectures: Sequence[Lecture], sources: TranscriptSources) -> list[Transcript]:
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
    now = batch_tracks(lectures, sources)
    held = before.rows_of(before.keys_of(lec.lecture_id for lec in lectures)) if before is not None else {}
    then = [
        track
        for lec in lectures
        for track in sorted(held.get(lec.lecture_id, {}).values(), key=transcript_order)
    ]
    return now != then
