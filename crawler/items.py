"""Scrapy items: the lecture record of :mod:`crawler.schema` with what travels beside it, and sessions."""

from __future__ import annotations

from typing import TypeGuard

import scrapy

# One lecture as the spider sees it: the schema's record with what travels beside it through the pipelines
# to the stage. Declared beside the parsers, which return it (they import nothing of Scrapy).
from crawler.pages.fields import LectureItem
from crawler.state.stage_rows import StagedSlides, StagedTranscript

# One subtitle track as the crawl read it (or kept it from the last stage): the ``transcripts`` row, and
# beside it the file's validators the next revalidation sends (never published). The stage's own shape of a
# track: what the spider yields is what the stage writes and reads back.
TranscriptItem = StagedTranscript
# One document of a lecture (its slide deck or poster) as the crawl read it, the same way.
SlidesItem = StagedSlides

__all__ = ["LectureItem", "SessionItem", "SlidesItem", "TranscriptItem", "to_clean"]


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
