"""The Scrapy add-on that makes a crawl a fleet worker when ``FRONTIER_URL`` is set (a no-op otherwise).

It registers the ``FRONTIER_*`` defaults (:data:`crawler.frontier.settings.DEFAULTS`, below every setting
the project or the command line gives) and edits the component dictionaries in place, so components the
project adds stay:

- ``SCHEDULER``: :class:`crawler.frontier.scheduler.FrontierScheduler` (scrapy-redis scheduler and
  dupefilter on the frontier's keys);
- ``DOWNLOADER_MIDDLEWARES``: :class:`crawler.frontier.pacing.HostPacingMiddleware` at 950;
- ``SPIDER_MIDDLEWARES``: :class:`crawler.frontier.extension.FrontierStartMiddleware` at 1 (nearest the
  engine: a worker that does not seed never runs the spider's ``start()``);
- ``EXTENSIONS``: :class:`crawler.frontier.extension.FrontierExtension`;
- ``STAGE_FLEET``: :class:`crawler.frontier.fleet_stage.FleetStage`, so that the stage pipeline writes to the
  stage the fleet shares.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler.frontier.settings import DEFAULTS

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

SCHEDULER = "crawler.frontier.scheduler.FrontierScheduler"
STAGE_FLEET = "crawler.frontier.fleet_stage.FleetStage"
PACING_ORDER = 950
START_ORDER = 1
EXTENSION_ORDER = 500


class FrontierAddon:
    def update_settings(self, settings: BaseSettings) -> None:
        if not settings.get("FRONTIER_URL"):
            return
        for name, value in DEFAULTS.items():
            settings.set(name, value, priority="addon")
        from crawler.frontier.extension import FrontierExtension, FrontierStartMiddleware
        from crawler.frontier.pacing import HostPacingMiddleware

        # The shared queue and the shared stage are what make a worker part of the fleet: no setting may
        # keep the local ones.
        settings.set("SCHEDULER", SCHEDULER, priority="cmdline")
        settings.set("STAGE_FLEET", STAGE_FLEET, priority="cmdline")
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", HostPacingMiddleware, PACING_ORDER)
        settings.set_in_component_priority_dict("SPIDER_MIDDLEWARES", FrontierStartMiddleware, START_ORDER)
        settings.set_in_component_priority_dict("EXTENSIONS", FrontierExtension, EXTENSION_ORDER)
