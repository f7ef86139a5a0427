"""The Scrapy add-on that makes a crawl a fleet worker when ``FRONTIER_URL`` is set (a no-op otherwise).

It edits the component dictionaries in place, so components the project adds stay:

- ``SCHEDULER``: :class:`crawler.frontier.scheduler.FrontierScheduler` (scrapy-redis scheduler and
  dupefilter on the frontier's keys);
- ``DOWNLOADER_MIDDLEWARES``: :class:`crawler.frontier.pacing.HostPacingMiddleware` at 950;
- ``SPIDER_MIDDLEWARES``: :class:`crawler.frontier.extension.FrontierStartMiddleware` at 1 (nearest the
  engine: a worker that does not seed never runs the spider's ``start()``);
- ``EXTENSIONS``: :class:`crawler.frontier.extension.FrontierExtension`;
- ``ITEM_PIPELINES``: :class:`crawler.frontier.stage.FleetStagePipeline` in place of ``StagePipeline``.
"""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

SCHEDULER = "crawler.frontier.scheduler.FrontierScheduler"
PACING_ORDER = 950
START_ORDER = 1
EXTENSION_ORDER = 500


class FrontierAddon:
    def update_settings(self, settings: BaseSettings) -> None:
        if not settings.get("FRONTIER_URL"):
            return
        from crawler.frontier.extension import FrontierExtension, FrontierStartMiddleware
        from crawler.frontier.pacing import HostPacingMiddleware
        from crawler.frontier.stage import FleetStagePipeline
        from crawler.pipelines.stage import StagePipeline

        # The shared queue is what makes a worker part of the fleet: no setting may keep the local one.
        settings.set("SCHEDULER", SCHEDULER, priority="cmdline")
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", HostPacingMiddleware, PACING_ORDER)
        settings.set_in_component_priority_dict("SPIDER_MIDDLEWARES", FrontierStartMiddleware, START_ORDER)
        settings.set_in_component_priority_dict("EXTENSIONS", FrontierExtension, EXTENSION_ORDER)
        # Without the stage pipeline (staging turned off) there is nothing to replace.
        with suppress(KeyError):
            settings.replace_in_component_priority_dict("ITEM_PIPELINES", StagePipeline, FleetStagePipeline)
