"""Normalize the text fields of a lecture: Unicode NFC, HTML entities, stray markup, whitespace."""

from __future__ import annotations

from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.statscollectors import StatsCollector

from crawler import stats_keys as keys
from crawler.items import LectureItem, to_clean
from crawler.schema import ONE_LINE_FIELDS
from crawler.text.normalize import normalize_line, normalize_lines

# The schema marks which fields are one line of text (``Field.one_line``); ``abstract`` is not: it is left as
# the site publishes it, and ``text`` carries the normalized abstract.


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
        if not to_clean(item):
            return item
        return self.lecture(item)

    def lecture(self, item: LectureItem) -> LectureItem:
        changed = 0
        for f in ONE_LINE_FIELDS:
            value = getattr(item, f.name)
            if f.kind == "string_list":
                lines = [normalize_line(v) for v in value or [] if isinstance(v, str)]
                setattr(item, f.name, [line for line in lines if line])
            elif isinstance(value, str):
                clean = normalize_line(value)
                changed += clean != value
                setattr(item, f.name, clean or None)
        item.page_blocks = normalize_lines(item.page_blocks)
        self.stats.inc_value(keys.NORMALIZE_ITEMS)
        if changed:
            self.stats.inc_value(keys.NORMALIZE_FIELDS_CHANGED, changed)
        return item
