"""The Scrapy add-on that makes a crawl a fleet worker when ``FRONTIER_URL`` is set (a no-op otherwise).

The ``FRONTIER_*`` settings' defaults are the project's (``crawler/settings.py``); the add-on edits the
component dictionaries in place, so components the project adds stay:

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

import os
import re
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from crawler.state.stage import check_worker_name

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

URL_SCHEMES = ("redis", "rediss", "unix")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class FrontierAddon:
    def update_settings(self, settings: BaseSettings) -> None:
        if not settings.get("FRONTIER_URL"):
            return
        from crawler.frontier.extension import FrontierExtension, FrontierStartMiddleware
        from crawler.frontier.pacing import HostPacingMiddleware

        # The shared queue and the shared stage are what make a worker part of the fleet: no setting may
        # keep the local ones.
        settings.set("SCHEDULER", "crawler.frontier.scheduler.FrontierScheduler", priority="cmdline")
        settings.set("STAGE_FLEET", "crawler.frontier.fleet_stage.FleetStage", priority="cmdline")
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", HostPacingMiddleware, 950)
        settings.set_in_component_priority_dict("SPIDER_MIDDLEWARES", FrontierStartMiddleware, 1)
        settings.set_in_component_priority_dict("EXTENSIONS", FrontierExtension, 500)


def default_worker_name() -> str:
    """``<hostname>-<pid>``, made a valid stage worker name."""
    host = _UNSAFE.sub("-", socket.gethostname()).strip("-._") or "worker"
    pid = str(os.getpid())
    return f"{host[: 63 - len(pid)]}-{pid}"


def frontier_settings(url: str, worker: str | None) -> Mapping[str, object]:
    """The settings that make this crawl one worker of the fleet sharing the frontier at *url*.

    Raises ``ValueError`` for a URL that is not a Redis URL and ``StageError`` for a bad worker name.
    """
    parts = urlsplit(url)
    if parts.scheme not in URL_SCHEMES or not (parts.netloc or parts.path):
        raise ValueError(f"--frontier expects redis://HOST:PORT/DB (or rediss://, unix://), got {url!r}")
    return {
        "FRONTIER_URL": url,
        "STAGE_WORKER": check_worker_name(worker) if worker else default_worker_name(),
        "ADDONS": {"crawler.frontier.addon.FrontierAddon": 0},
    }
