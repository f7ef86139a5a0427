"""One record per lecture: fingerprint each lecture's content and drop what was already seen.

A lecture reached again (a retry that succeeded twice, a resumed crawl, an alias URL) is passed on
only when it brings something new: changed content or a URL not seen before.
"""

from __future__ import annotations

from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem
from scrapy.statscollectors import StatsCollector

from crawler.items import LectureAlias, LectureItem
from crawler.schema import content_sha256


class DedupePipeline:
    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats
        self.hashes: dict[str, str] = {}
        self.urls: dict[str, set[str]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DedupePipeline:
        assert crawler.stats is not None
        return cls(crawler.stats)

    def process_item(self, item: Any) -> Any:
        if isinstance(item, LectureAlias):
            return self._alias(item)
        if not isinstance(item, LectureItem):
            return item
        lecture_id = item["lecture_id"]
        item["content_sha256"] = content_sha256(item)
        known_urls = self.urls.setdefault(lecture_id, set())
        new_urls = set(item.get("source_urls") or []) - known_urls
        previous = self.hashes.get(lecture_id)
        self.hashes[lecture_id] = item["content_sha256"]
        known_urls.update(new_urls)
        if previous is None:
            self.stats.inc_value("dedupe/unique")
            return item
        if previous != item["content_sha256"]:
            self.stats.inc_value("dedupe/changed_on_refetch")
            return item
        if new_urls:
            self.stats.inc_value("dedupe/merged_urls")
            return item
        self.stats.inc_value("dedupe/dropped")
        raise DropItem(f"lecture {lecture_id} already staged with the same content", log_level="DEBUG")

    def _alias(self, item: Any) -> Any:
        urls = self.urls.setdefault(item["lecture_id"], set())
        if item["url"] in urls:
            self.stats.inc_value("dedupe/alias_dropped")
            raise DropItem(f"alias {item['url']} already staged", log_level="DEBUG")
        urls.add(item["url"])
        self.stats.inc_value("dedupe/alias")
        return item
