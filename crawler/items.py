"""Scrapy items, derived from the one schema in :mod:`crawler.schema`."""

from __future__ import annotations

from typing import Any

import scrapy

from crawler.schema import FIELDS

# Visible text blocks of the whole page: the boilerplate step turns them into ``text`` and drops them,
# so they never reach the stage.
PAGE_BLOCKS = "page_blocks"
# The other lectures a page links, as ``[lecture_id, url]`` pairs: staged as aliases (URLs merged into those
# lectures' ``source_urls``) just before the lecture itself, never as part of its record.
PAGE_ALIASES = "page_aliases"
# A hash of each of the lecture's listing fields: staged beside the record, for the next crawl to compare.
LISTING_HASHES = "listing_hashes"
# The statistics counters the lecture's outcome added: staged beside the record (a resumed crawl counts
# the part before the resume from them).
COUNTED = "counted"


def _lecture_item_class() -> type[scrapy.Item]:
    fields: dict[str, Any] = {f.name: scrapy.Field(description=f.description) for f in FIELDS}
    fields[PAGE_BLOCKS] = scrapy.Field(description="Transient: the page's visible text blocks.")
    fields[PAGE_ALIASES] = scrapy.Field(description="Transient: [lecture_id, url] of the lectures it links.")
    fields[LISTING_HASHES] = scrapy.Field(description="Staged beside the record: its listing fields' hashes.")
    fields[COUNTED] = scrapy.Field(description="Staged beside the record: the counters its outcome added.")
    fields["__doc__"] = "One lecture as the spider saw it; its fields are the schema's."
    return type("LectureItem", (scrapy.Item,), fields)


LectureItem = _lecture_item_class()


class CarriedLecture(scrapy.Item):
    """A lecture whose listing has not changed since the last crawl (or whose page failed this time):
    its previous record is staged again as it was, without fetching its page."""

    record = scrapy.Field()
    listing_hashes = scrapy.Field()
    counted = scrapy.Field()


class SessionItem(scrapy.Item):
    """What an event's listing says of one of its sessions."""

    session_id = scrapy.Field()
    event_id = scrapy.Field()
    name = scrapy.Field()
    description = scrapy.Field()
    start = scrapy.Field()
    end = scrapy.Field()
