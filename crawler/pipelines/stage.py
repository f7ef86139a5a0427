"""Append each lecture to the crawl's state directory, so that ``eventcrawl publish`` can run later."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.statscollectors import StatsCollector

from crawler.items import LectureAlias, LectureItem
from crawler.schema import validate_record
from crawler.stage import StageWriter


class StagePipeline:
    def __init__(self, state_dir: Path, worker: str, stats: StatsCollector) -> None:
        self.writer = StageWriter(state_dir, worker)
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StagePipeline:
        state_dir = crawler.settings.get("STAGE_STATE_DIR")
        if not state_dir:
            raise NotConfigured("STAGE_STATE_DIR is not set")
        assert crawler.stats is not None
        pipeline = cls(Path(state_dir), crawler.settings.get("STAGE_WORKER", "main"), crawler.stats)
        crawler.signals.connect(pipeline.spider_closed, signal=signals.spider_closed)
        return pipeline

    def open_spider(self) -> None:
        self.writer.open()
        if self.writer.resumed:
            self.stats.set_value("stage/resumed", True)
        if self.writer.torn_bytes_dropped:
            self.stats.set_value("stage/torn_bytes_dropped", self.writer.torn_bytes_dropped)

    def process_item(self, item: Any) -> Any:
        if isinstance(item, LectureAlias):
            self.writer.write_alias(item["lecture_id"], item["url"])
            self.stats.inc_value("stage/aliases")
            return item
        if not isinstance(item, LectureItem):
            return item
        record = dict(item)
        problems = validate_record(record)
        if problems:
            self.stats.inc_value("stage/invalid")
            raise DropItem(f"lecture {record.get('lecture_id')!r} not staged: {'; '.join(problems)}")
        self.writer.write_lecture(record)
        self.stats.inc_value("stage/lectures")
        return item

    def spider_closed(self, spider: Spider, reason: str) -> None:
        stats = self.stats.get_stats()
        summary = {
            "reason": reason,
            "worker": self.writer.worker,
            "lectures": stats.get("stage/lectures", 0),
            "event_id": getattr(spider, "event_id", None),
            "web_base": getattr(spider, "web_base", None),
        }
        self.writer.close(complete=reason == "finished", summary=summary)
