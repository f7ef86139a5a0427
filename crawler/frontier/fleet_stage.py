"""The fleet's side of the stage: the workers of one frontier run share ``<state>/stage``.

:class:`FleetStage` is what :class:`crawler.pipelines.stage.StagePipeline` asks of the fleet (the frontier
add-on names it in ``STAGE_FLEET``):

- the run a worker's stage belongs to (``<namespace> <run>``), so that a finished stage is moved aside once
  per frontier run (:func:`crawler.state.stage.start_stage`);
- the fleet's count of staged lectures, one per lecture a worker stages;
- ``COMPLETE`` only when the frontier is drained: every request of every worker crawled, every item staged.
  Its summary is the fleet's (lectures staged by all workers, the frontier's run and keys).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from crawler import stats_keys
from crawler.frontier.core import DONE, Frontier, FrontierSummary

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class FleetStage:
    def __init__(self, crawler: Crawler, frontier: Frontier) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.frontier = frontier

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, Frontier.of(crawler))

    def join(self) -> str:
        spider = self.crawler.spider
        assert spider is not None
        frontier = self.frontier
        frontier.open(spider)
        assert frontier.run is not None and frontier.keys is not None
        return f"{frontier.keys.namespace} {frontier.run}"

    def count_staged(self) -> None:
        try:
            self.frontier.count_staged()
        except Exception as exc:
            # The lecture is staged; only the fleet's count in COMPLETE misses it.
            self.stats.inc_value(stats_keys.FRONTIER_ERRORS)
            logger.warning("Could not count a staged lecture on the frontier: %s", exc)

    def completion(self, reason: str, *, marked: bool) -> dict[str, FrontierSummary | int] | None:
        frontier = self.frontier
        # A worker that joined a finished crawl only restores a missing marker.
        restores = frontier.role != DONE or not marked
        if not (reason == "finished" and frontier.drained and restores):
            return None
        fleet = frontier.summary()
        return {"frontier": fleet, "lectures": int(fleet.get("staged", 0))}
