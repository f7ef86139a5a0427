"""The subtitle files of the lectures the crawl fetched: one request per listed track with a subtitle URL,
what its answer makes of the track (a :class:`~crawler.schema.Transcript`), and what a track that cannot be
asked keeps.

A track is asked when its lecture is fetched (new, changed, or revalidated); a carried lecture carries its
transcripts from the last stage with it. A file is asked as :mod:`crawler.spiders.asset_files` says (a
subtitle file may hold what a speaker said of themselves: it is parsed, redacted and staged, never stored
raw): a 304 keeps the staged transcript. The parsing is :mod:`crawler.transcripts`'.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import scrapy
from scrapy.http import Response
from scrapy.statscollectors import StatsCollector
from twisted.python.failure import Failure

from crawler import stats_keys as keys
from crawler.items import LectureItem, TranscriptItem
from crawler.json_types import JsonObject
from crawler.pages import parse_transcripts
from crawler.pages.api import is_track_list
from crawler.privacy.spoken import TRANSCRIPT_PRIVACY_RULE
from crawler.publish.tables import TRANSCRIPTS
from crawler.publish.transcripts import redacted_again
from crawler.schema import Subtitle, Transcript
from crawler.schema.sources import GONE_STATUSES
from crawler.spiders.asset_files import FileRows, asset_file_request, failure_problem, response_validators
from crawler.state.stage_rows import PRIVACY_RULE_KEY
from crawler.transcripts import parse_subtitle_file
from crawler.urls import API_ACCEPT, subtitle_host_allowed, transcripts_url


def bounded_tracks(tracks: Sequence[Subtitle], limit: int) -> tuple[list[Subtitle], int]:
    """The first ``limit`` tracks with a subtitle URL (each URL once), and how many more the list named:
    a site may hand out any number, and each is a request and a row."""
    kept: list[Subtitle] = []
    seen: set[str] = set()
    over = 0
    for track in tracks:
        url = track.get("url")
        if url and url in seen:
            continue
        if url:
            seen.add(url)
        if len(kept) < limit:
            kept.append(track)
        else:
            over += 1
    return kept, over


def subtitle_answer(response: Response) -> bool:
    """Whether an answer may be a subtitle file: not an HTML page (a maintenance or login page served
    with 200 where a file was asked says nothing of the file). The body decides, as it decides the
    format: a file that starts as one (``WEBVTT``, a cue number) is read whatever its Content-Type."""
    head = response.body[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith(b"webvtt") or head[:1].isdigit():
        return True
    if head.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        return False
    kind = (response.headers.get(b"Content-Type") or b"").split(b";")[0].strip().lower()
    return kind not in (b"text/html", b"application/xhtml+xml")


def staged_under_current_rules(staged: TranscriptItem) -> TranscriptItem:
    """A staged track as the privacy rules in force redact it: its line names the rules it was redacted
    under, and one of earlier rules is redacted again and says so."""
    if staged.validators.get(PRIVACY_RULE_KEY) == TRANSCRIPT_PRIVACY_RULE:
        return staged
    validators = {**staged.validators, PRIVACY_RULE_KEY: TRANSCRIPT_PRIVACY_RULE}
    return TranscriptItem(record=redacted_again(staged.record), validators=validators)


def track_json(item: LectureItem, subtitle: Subtitle) -> JsonObject:
    """What a subtitle request carries of its track (JSON, so that a fleet's queue can hold it)."""
    return {
        "lecture_id": item.lecture_id,
        "event_id": item.event_id,
        "locale": subtitle.get("locale"),
        "language": subtitle.get("name"),
        "auto_generated": subtitle.get("auto_generated"),
        "subtitle_url": subtitle.get("url"),
    }


def transcript_from(track: Mapping[str, Any], **values: Any) -> Transcript:
    """The track's row with ``values`` (text, segments, problem, ...) set."""
    return Transcript(
        lecture_id=str(track["lecture_id"]),
        event_id=track.get("event_id"),
        locale=track.get("locale"),
        language=track.get("language"),
        auto_generated=track.get("auto_generated"),
        subtitle_url=str(track["subtitle_url"]),
        **values,
    )


@dataclasses.dataclass(eq=False)
class SubtitleFiles(FileRows[TranscriptItem]):
    """The spider's requests for lectures' track lists (from ``api_base``; None: subtitles are not asked
    for) and subtitle files, and the transcripts their answers make. ``callbacks`` are the spider's (a
    request's callbacks must be the spider's methods): the track list's answer and failure, then a file's;
    ``previous(lecture_id)`` gives the last stage's transcripts of a lecture with their validators;
    ``allowance`` is how many subtitle requests the page budget still pays (None: no limit)."""

    table = TRANSCRIPTS
    matched = ("subtitle_url",)
    label = "Subtitle file"
    # Tracks whose answer was no evidence (an HTML page, robots, off the hosts, unreadable, no answer): the
    # text read before is kept.
    kept_unreadable_key = "underline/subtitles/kept_unreadable"
    carried_key = keys.SUBTITLES_CARRIED

    stats: StatsCollector
    api_base: str | None
    _: dataclasses.KW_ONLY
    site_hosts: Sequence[str]
    asset_hosts: Sequence[str]
    max_bytes: int
    max_tracks: int
    callbacks: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any], Callable[..., Any]]
    previous: Callable[[str], list[TranscriptItem]]
    logger: logging.LoggerAdapter[logging.Logger]
    allowance: int | None = None

    def __post_init__(self) -> None:
        self.tracks_answered, self.tracks_failure, self.answered, self.failed = self.callbacks
        # The last stage's tracks as tonight's privacy rules redact them: one redacted under earlier rules
        # (a 304 kept it, a carried lecture carried it) is redacted again and staged so, once.
        staged = self.previous
        self.previous = lambda lecture_id: [staged_under_current_rules(t) for t in staged(lecture_id)]

    def with_tracks(self, item: LectureItem) -> Iterator[Any]:
        """The lecture's item, with its track list asked first when subtitles are asked for."""
        if self.api_base is None:
            yield item
            return
        yield scrapy.Request(
            transcripts_url(self.api_base, item.lecture_id),
            headers={"Accept": API_ACCEPT},
            callback=self.tracks_answered,
            errback=self.tracks_failure,
            cb_kwargs={"item": item},
            dont_filter=True,
        )

    def tracks(self, response: Response, item: LectureItem) -> Iterator[Any]:
        """The lecture's track list read into ``item.subtitles`` (at most ``max_tracks`` of them, the rest
        counted): the item, then a request for each subtitle file it lists. An answer that is no track
        list (not JSON, an ``errors`` document, ``data`` not a list) is no evidence: the lecture keeps
        the tracks the last stage read."""
        try:
            doc = json.loads(response.text)
        except (ValueError, AttributeError, RecursionError):
            doc = None
        if not is_track_list(doc):
            self.stats.inc_value(keys.TRANSCRIPTS_UNREADABLE)
            yield from self.kept_tracks(item)
            return
        listed = parse_transcripts(doc, base_url=self.api_base)
        if doc["data"] and not listed and self.previous(item.lecture_id):
            # Tracks listed, none of them readable (a shape the parser does not know): no evidence that
            # the tracks read before are gone.
            self.stats.inc_value(keys.TRANSCRIPTS_UNREADABLE)
            yield from self.kept_tracks(item)
            return
        item.subtitles, over = bounded_tracks(listed, self.max_tracks)
        if over:
            self.stats.inc_value("underline/subtitles/over_limit", over)
            self.logger.warning(
                "Lecture %s lists %d subtitle tracks: only the first %d are asked and published",
                item.lecture_id,
                over + self.max_tracks,
                self.max_tracks,
            )
        yield item
        yield from self.requests(item)

    def tracks_failed(self, failure: Failure) -> Iterator[Any]:
        self.stats.inc_value("underline/transcripts_failed")
        yield from self.kept_tracks(failure.request.cb_kwargs["item"])  # type: ignore[attr-defined]

    def kept_tracks(self, item: LectureItem) -> Iterator[Any]:
        """A lecture whose track list could not be read: no answer is no evidence, so it keeps the tracks
        the last stage read (its transcripts, and the track list they were read from), not an empty one."""
        before = self.previous(item.lecture_id)
        if before and item.subtitles is None:
            item.subtitles = [
                Subtitle(
                    locale=t.record.locale,
                    name=t.record.language,
                    auto_generated=t.record.auto_generated,
                    url=t.record.subtitle_url,
                )
                for t in before
            ]
        yield item
        if before:
            self.stats.inc_value(keys.SUBTITLES_CARRIED, len(before))
        yield from before

    def requests(self, item: LectureItem) -> Iterator[Any]:
        """A request for each subtitle file the lecture lists (in its order, each URL once: its list is
        :func:`bounded_tracks`'); a track that cannot be asked keeps what the last stage has of it."""
        before = {staged.record.subtitle_url: staged for staged in self.previous(item.lecture_id)}
        for subtitle in item.subtitles or []:
            url = subtitle.get("url")
            if not url:
                continue
            track = track_json(item, subtitle)
            if not subtitle_host_allowed(url, self.site_hosts, self.asset_hosts):
                self.stats.inc_value(keys.SUBTITLES_OFF_HOST)
                self.logger.warning("Not fetching subtitle file %s: not on the site's or an asset host", url)
                yield self.evidence(TranscriptItem(record=transcript_from(track, problem="off_host")))
                continue
            if self.allowance is not None and self.allowance <= 0:
                self.stats.inc_value("underline/subtitles/waiting")
                if url in before:
                    yield before[url]
                continue
            if self.allowance is not None:
                self.allowance -= 1
            staged = before.get(url)
            yield self.request(url, track, staged.validators if staged is not None else {})

    def request(self, url: str, track: JsonObject, validators: Mapping[str, str]) -> scrapy.Request:
        request = asset_file_request(
            url,
            callback=self.answered,
            errback=self.failed,
            cb_kwargs={"track": track},
            validators=validators,
            max_bytes=self.max_bytes,
        )
        self.stats.inc_value("underline/subtitles/asked")
        return request

    def transcript(self, response: Response, track: Mapping[str, Any]) -> Iterator[TranscriptItem]:
        """What a subtitle file's answer makes of its track."""
        yield self.settled(self.read(response, track))

    def read(self, response: Response, track: Mapping[str, Any]) -> TranscriptItem:
        now = datetime.now(UTC)
        if response.status == 304:
            kept = self.kept(track)
            if kept is not None:
                self.stats.inc_value("underline/subtitles/unchanged")
                return kept
            self.stats.inc_value("underline/subtitles/failed")
            return TranscriptItem(record=transcript_from(track, problem="failed", fetched_at=now))
        if response.status in GONE_STATUSES:
            self.stats.inc_value("underline/subtitles/not_found")
            return TranscriptItem(record=transcript_from(track, problem="not_found", fetched_at=now))
        if not subtitle_answer(response):
            # An HTML page (a maintenance or login page) where a file was asked: no evidence of the file.
            return self.unreadable(track, "unparsable", now)
        parsed = parse_subtitle_file(
            response.body, auto_generated=track.get("auto_generated"), max_bytes=self.max_bytes
        )
        self.stats.inc_value(
            "underline/subtitles/parsed" if parsed.text is not None else "underline/subtitles/unparsable"
        )
        if parsed.cues_skipped:
            self.stats.inc_value("underline/subtitles/cues_skipped", parsed.cues_skipped)
        if parsed.problem:
            self.stats.inc_value(keys.SUBTITLES_PROBLEM_PREFIX + parsed.problem)
        if parsed.redactions:
            self.stats.inc_value("underline/subtitles/redacted", parsed.redactions)
        transcript = transcript_from(
            track,
            text=parsed.text,
            segments=list(parsed.segments),
            cues_skipped=parsed.cues_skipped,
            problem=parsed.problem,
            fetched_at=now,
        )
        validators = {**response_validators(response), PRIVACY_RULE_KEY: TRANSCRIPT_PRIVACY_RULE}
        found = TranscriptItem(record=transcript, validators=validators)
        return self.evidence(found)

    def unreadable(self, track: Mapping[str, Any], problem: str, now: datetime) -> TranscriptItem:
        """A track whose answer was no file: its last stage's row when there is one with text, else a row
        without text naming the ``problem``."""
        self.stats.inc_value(keys.SUBTITLES_PROBLEM_PREFIX + problem)
        return self.evidence(TranscriptItem(record=transcript_from(track, problem=problem, fetched_at=now)))

    def failure(self, failure: Failure) -> Iterator[TranscriptItem]:
        """A subtitle request that brought no file: no evidence, so the track keeps the text the last
        stage read; a track read for the first time gets its row without text, saying why."""
        request = getattr(failure, "request", None)
        track = request.cb_kwargs.get("track") if request is not None else None
        if not isinstance(track, Mapping):
            return
        problem = failure_problem(failure)
        if problem == "too_large":
            # Stopped at UNDERLINE_SUBTITLE_MAX_BYTES: never held whole in memory.
            self.stats.inc_value("underline/subtitles/cut_short")
        self.logger.warning("Subtitle file %s: %s (%s)", track.get("subtitle_url"), problem, failure.value)
        yield self.settled(self.unreadable(track, problem, datetime.now(UTC)))
