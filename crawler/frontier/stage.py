"""The stage pipeline of a fleet worker: its own ``<worker>.jsonl`` in the shared state directory.

Differences from :class:`crawler.pipelines.stage.StagePipeline`, which it replaces when a frontier is used:

- Moving a finished stage aside (to ``stage.previous/``) happens once per frontier run, by the first worker
  of the run that opens the stage, under a lock file; the run is written to ``stage/FRONTIER``. A worker
  that joins later, or after the run finished, appends to the same stage and never moves it.
- ``COMPLETE`` is written only when the frontier is drained: every request of every worker crawled, every
  item staged. Its summary is the fleet's (lectures staged by all workers, the frontier's run and keys).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.statscollectors import StatsCollector

from crawler.frontier.core import DONE, Frontier
from crawler.fsutil import exclusive_lock
from crawler.items import LectureItem
from crawler.pipelines.stage import StagePipeline
from crawler.stage import COMPLETE_MARKER, STAGE_DIRNAME, StageWriter, _drop_torn_tail, stage_dir

logger = logging.getLogger(__name__)

RUN_FILE = "FRONTIER"
LOCK_FILE = ".stage.lock"


def prepare_stage(state_dir: Path, run: str) -> bool:
    """Make ``<state>/stage`` ready for *run*: a finished stage of another run is moved to
    ``stage.previous/``. Returns whether it was."""
    directory = stage_dir(state_dir)
    run_file = directory / RUN_FILE
    with exclusive_lock(Path(state_dir) / LOCK_FILE):
        current = run_file.read_text(encoding="utf-8").strip() if run_file.exists() else None
        moved = (directory / COMPLETE_MARKER).exists() and current != run
        if moved:
            previous = directory.with_name(STAGE_DIRNAME + ".previous")
            if previous.exists():
                shutil.rmtree(previous)
            directory.rename(previous)
        directory.mkdir(parents=True, exist_ok=True)
        if current != run or moved:
            run_file.write_text(run + "\n", encoding="utf-8")
    return moved


class AppendingStageWriter(StageWriter):
    """A :class:`StageWriter` that appends to the stage as it is; :func:`prepare_stage` did the rest."""

    def open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.resumed = self.path.exists() and self.path.stat().st_size > 0
        self.torn_bytes_dropped = _drop_torn_tail(self.path)
        self._fh = self.path.open("a", encoding="utf-8")


class FleetStagePipeline(StagePipeline):
    def __init__(self, state_dir: Path, worker: str, stats: StatsCollector, crawler: Crawler) -> None:
        super().__init__(state_dir, worker, stats)
        self.state_dir = Path(state_dir)
        self.writer = AppendingStageWriter(state_dir, worker)
        self.crawler = crawler
        self.frontier = Frontier.of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FleetStagePipeline:
        state_dir = crawler.settings.get("STAGE_STATE_DIR")
        if not state_dir:
            raise NotConfigured("STAGE_STATE_DIR is not set")
        assert crawler.stats is not None
        pipeline = cls(Path(state_dir), crawler.settings.get("STAGE_WORKER", "main"), crawler.stats, crawler)
        crawler.signals.connect(pipeline.spider_closed, signal=signals.spider_closed)
        return pipeline

    def open_spider(self) -> None:
        spider = self.crawler.spider
        assert spider is not None
        frontier = self.frontier
        frontier.open(spider)
        assert frontier.run is not None and frontier.keys is not None
        if prepare_stage(self.state_dir, f"{frontier.keys.namespace} {frontier.run}"):
            self.stats.set_value("stage/previous_moved", True)
        super().open_spider()

    def process_item(self, item: Any) -> Any:
        result = super().process_item(item)
        if isinstance(item, LectureItem):
            try:
                self.frontier.count_staged()
            except Exception as exc:
                # The lecture is staged; only the fleet's count in COMPLETE misses it.
                self.stats.inc_value("frontier/errors")
                logger.warning("Could not count a staged lecture on the frontier: %s", exc)
        return result

    def spider_closed(self, spider: Spider, reason: str) -> None:
        stats = self.stats.get_stats()
        frontier = self.frontier
        marker = self.writer.directory / COMPLETE_MARKER
        # A worker that joined a finished crawl only restores a missing marker.
        restores = frontier.role != DONE or not marker.exists()
        complete = reason == "finished" and frontier.drained and restores
        summary: dict[str, Any] = {
            "reason": reason,
            "worker": self.writer.worker,
            "worker_lectures": stats.get("stage/lectures", 0),
            "event_id": getattr(spider, "event_id", None),
            "web_base": getattr(spider, "web_base", None),
        }
        if complete:
            fleet = frontier.summary()
            summary["frontier"] = fleet
            summary["lectures"] = fleet.get("staged", 0)
        self.writer.close(complete=complete, summary=summary)
