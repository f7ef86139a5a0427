"""Keep only the lecture's own content in ``text``: the rest of the page is the site's template
(welcome text, labels, footer) or other lectures' teasers."""

from __future__ import annotations

from typing import Any

from scrapy.crawler import Crawler
from scrapy.statscollectors import StatsCollector

from crawler.items import PAGE_BLOCKS, LectureItem
from crawler.text.boilerplate import own_content_blocks, text_from_blocks
from crawler.text.normalize import normalize_line


def fields_as_blocks(item: Any) -> list[str]:
    """The lecture block as the page should show it, built from the extracted fields alone."""
    parts = [item.get("abstract"), item.get("event_name"), item.get("title")]
    parts += list(item.get("keywords") or [])
    parts.append(item.get("presentation_type"))
    blocks = [normalize_line(p) for p in parts if isinstance(p, str)]
    return [b for b in blocks if b]


class BoilerplatePipeline:
    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BoilerplatePipeline:
        assert crawler.stats is not None
        return cls(crawler.stats)

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, LectureItem):
            return item
        blocks = item.pop(PAGE_BLOCKS, None) or []
        own = own_content_blocks(blocks, dict(item))
        if not own:
            # The page showed none of the lecture's fields: fall back to the fields themselves so the
            # record still carries its content, and count it for the quality report.
            own = fields_as_blocks(item)
            self.stats.inc_value("boilerplate/no_visible_content")
        item["text"] = text_from_blocks(own)
        self.stats.inc_value("boilerplate/blocks_kept", len(own))
        self.stats.inc_value("boilerplate/blocks_removed", max(0, len(blocks) - len(own)))
        return item
