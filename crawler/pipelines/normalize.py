"""Normalize the text fields of a lecture: Unicode NFC, HTML entities, stray markup, whitespace."""

from __future__ import annotations

from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.statscollectors import StatsCollector

from crawler.items import PAGE_BLOCKS, LectureItem
from crawler.text.normalize import normalize_line

# ``abstract`` is left as the site publishes it; ``text`` carries the normalized abstract.
LINE_FIELDS = ("title", "presentation_type", "event_name", "session_name")


class NormalizePipeline:
    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NormalizePipeline:
        if not crawler.settings.getbool("NORMALIZE_ENABLED"):
            raise NotConfigured("NORMALIZE_ENABLED is off")
        assert crawler.stats is not None
        return cls(crawler.stats)

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, LectureItem):
            return item
        changed = 0
        for name in LINE_FIELDS:
            value = item.get(name)
            if isinstance(value, str):
                clean = normalize_line(value)
                changed += clean != value
                item[name] = clean or None
        keywords = [normalize_line(k) for k in item.get("keywords") or [] if isinstance(k, str)]
        item["keywords"] = [k for k in keywords if k]
        blocks = [normalize_line(b) for b in item.get(PAGE_BLOCKS) or []]
        item[PAGE_BLOCKS] = [b for b in blocks if b]
        self.stats.inc_value("normalize/items")
        if changed:
            self.stats.inc_value("normalize/fields_changed", changed)
        return item
