"""Scrapy items, derived from the one schema in :mod:`crawler.schema`."""

from __future__ import annotations

from typing import Any

import scrapy

from crawler.schema import FIELDS

# Visible text blocks of the whole page: the boilerplate step turns them into ``text`` and drops them,
# so they never reach the stage.
PAGE_BLOCKS = "page_blocks"


def _lecture_item_class() -> type[scrapy.Item]:
    fields: dict[str, Any] = {f.name: scrapy.Field(description=f.description) for f in FIELDS}
    fields[PAGE_BLOCKS] = scrapy.Field(description="Transient: the page's visible text blocks.")
    fields["__doc__"] = "One lecture as the spider saw it; its fields are the schema's."
    return type("LectureItem", (scrapy.Item,), fields)


LectureItem = _lecture_item_class()


class LectureAlias(scrapy.Item):
    """A URL seen linking to a lecture page: merged into that lecture's ``source_urls``."""

    lecture_id = scrapy.Field()
    url = scrapy.Field()
