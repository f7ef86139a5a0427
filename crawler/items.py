"""Scrapy items: the lecture record of :mod:`crawler.schema` with what travels beside it, and sessions."""

from __future__ import annotations

from dataclasses import dataclass, field

import scrapy

from crawler.schema import Lecture
from crawler.state.stage_slides import StagedSlides
from crawler.state.stage_transcripts import StagedTranscript


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

    def record(self) -> dict[str, object]:
        """The record's fields, as the stage and the publisher take them."""
        return self.values()


# One subtitle track as the crawl read it (or kept it from the last stage): the ``transcripts`` row, and
# beside it the file's validators the next revalidation sends (never published). The stage's own shape of a
# track: what the spider yields is what the stage writes and reads back.
TranscriptItem = StagedTranscript
# One document of a lecture (its slide deck or poster) as the crawl read it, the same way.
SlidesItem = StagedSlides


class CarriedLecture(scrapy.Item):
    """A lecture whose listing has not changed since the last crawl (or whose page failed this time):
    its previous record is staged again as it was, without fetching its page."""

    # The schema's record (crawler.schema.Lecture), as the last stage held it.
    record = scrapy.Field()
    listing_hashes = scrapy.Field()
    counted = scrapy.Field()
    # The last stage's transcripts of the lecture (TranscriptItem), staged again with it.
    transcripts = scrapy.Field()
    # The last stage's documents of the lecture (SlidesItem), staged again with it.
    slides = scrapy.Field()


class SessionItem(scrapy.Item):
    """What an event's listing says of one of its sessions."""

    session_id = scrapy.Field()
    event_id = scrapy.Field()
    name = scrapy.Field()
    description = scrapy.Field()
    start = scrapy.Field()
    end = scrapy.Field()
