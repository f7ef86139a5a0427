"""Scrapy items: the lecture record of :mod:`crawler.schema` with what travels beside it, and sessions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeGuard

import scrapy

from crawler.schema import Lecture
from crawler.state.stage_slides import StagedSlides
from crawler.state.stage_transcripts import StagedTranscript

# One subtitle track as the crawl read it (or kept it from the last stage): the ``transcripts`` row, and
# beside it the file's validators the next revalidation sends (never published). The stage's own shape of a
# track: what the spider yields is what the stage writes and reads back.
TranscriptItem = StagedTranscript
# One document of a lecture (its slide deck or poster) as the crawl read it, the same way.
SlidesItem = StagedSlides


@dataclass(kw_only=True)
class LectureItem(Lecture):
    """One lecture as the spider saw it: the schema's record (:class:`~crawler.schema.Lecture`), and what
    travels beside it through the pipelines to the stage, never as part of the record."""

    # The page's visible text blocks: the boilerplate step turns them into ``text``.
    page_blocks: list[str] = field(default_factory=list)
    # ``[lecture_id, url]`` of the other lectures the page links.
    page_aliases: list[list[str]] = field(default_factory=list)
    # A hash of each listing field (None: compare nothing, fetch the page again next time).
    listing_hashes: dict[str, str] | None = None
    # The statistics counters the lecture's outcome added.
    counted: list[str] = field(default_factory=list)
    # A lecture whose listing has not changed since the last crawl (or whose page failed this time): its
    # previous record staged again as it was, without its page, with the transcripts and documents the
    # last stage held of it. The cleaning steps leave it as it is (see :func:`to_clean`).
    carried: bool = False
    carried_transcripts: list[TranscriptItem] = field(default_factory=list)
    carried_slides: list[SlidesItem] = field(default_factory=list)
    # The one hash over every listing field a stage written before there were per-field hashes compares
    # by (read back from such a stage, never written).
    listing_sha256: str | None = None

    @classmethod
    def carried_over(
        cls,
        record: Lecture,
        *,
        listing_hashes: dict[str, str] | None,
        counted: list[str] | None = None,
        transcripts: list[TranscriptItem] | None = None,
        slides: list[SlidesItem] | None = None,
        listing_sha256: str | None = None,
    ) -> LectureItem:
        """The last stage's record of a lecture, staged again as it was (or as a refresh reads it back:
        with the hashes its listing was staged with)."""
        values: dict[str, Any] = record.values()
        return cls(
            **values,
            listing_hashes=listing_hashes,
            counted=list(counted or []),
            carried=True,
            carried_transcripts=list(transcripts or []),
            carried_slides=list(slides or []),
            listing_sha256=listing_sha256,
        )

    def record(self) -> dict[str, object]:
        """The record's fields, as the stage and the publisher take them."""
        return self.values()


def to_clean(item: object) -> TypeGuard[LectureItem]:
    """Whether the cleaning steps (normalize, privacy, boilerplate, dedup) work on *item*: a lecture read
    this crawl, not one carried as the last stage held it (cleaned then)."""
    return isinstance(item, LectureItem) and not item.carried


class SessionItem(scrapy.Item):
    """What an event's listing says of one of its sessions."""

    session_id = scrapy.Field()
    event_id = scrapy.Field()
    name = scrapy.Field()
    description = scrapy.Field()
    start = scrapy.Field()
    end = scrapy.Field()
