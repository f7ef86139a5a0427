"""robots.txt obeyed for every request, and a minimum interval between requests to a host: robots.txt
``Crawl-delay``, ``HOST_MAX_RATE`` and ``DOWNLOAD_DELAY`` as floors of the host's download slot delay.

:class:`SafeRobotsTxtMiddleware` replaces Scrapy's ``RobotsTxtMiddleware`` (same order, 100). In Scrapy 2.19
the requests that wait for a host's robots.txt while it is being downloaded all await one shared Deferred; the
first waiter's callback swallows the parser, so the third and later requests get ``None`` and go out even when
robots.txt disallows them. The subclass reads the parser back from where the middleware stored it.

Scrapy's ``RobotsTxtMiddleware`` obeys ``Disallow`` (and counts refusals as ``robotstxt/forbidden``) but
ignores ``Crawl-delay``. :class:`RobotsCrawlDelayMiddleware` reads it from the parser that
``RobotsTxtMiddleware`` built, through the ``robots_parsed`` signal, which Scrapy sends before it lets any
request of that host go on; the slot delay is raised there, so the first request after robots.txt already
waits the crawl delay (counted from the robots.txt request itself).

Settings (their defaults are in ``crawler/settings.py``):

- ``ROBOTSTXT_CRAWLDELAY_ENABLED`` (only with ``ROBOTSTXT_OBEY``): honour ``Crawl-delay``.
- ``ROBOTSTXT_CRAWLDELAY_MAX``: cap for a ``Crawl-delay``, in seconds.
- ``HOST_MAX_RATE`` (0 = off): requests per second per host, i.e. a floor of ``1 / HOST_MAX_RATE`` seconds.

The floor of a slot is ``max(DOWNLOAD_DELAY, Crawl-delay, 1 / HOST_MAX_RATE)``. AutoThrottle may raise the
delay but never lowers it under the floor, and floored slots get no random jitter, so the time between two
requests to a host is never under the floor whatever ``DOWNLOAD_DELAY_JITTER`` (``RANDOMIZE_DOWNLOAD_DELAY``
before Scrapy 2.19) says. ``DOWNLOAD_DELAY_JITTER = 0`` is still the setting to use, for the slots that have
no floor (``DOWNLOAD_DELAY = 0``) and while the middleware is not loaded.

It is loaded when ``ROBOTSTXT_OBEY`` is on or ``HOST_MAX_RATE`` is set, and has no request or response hook:
it is a downloader middleware so that it is built after the extensions (AutoThrottle), which puts its signal
handlers after AutoThrottle's. With ``ROBOTSTXT_OBEY`` on it also sets ``robotstxt/forbidden`` to 0 when the
spider opens, so the count shows even when nothing was refused.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import NotConfigured
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import load_object
from twisted.internet.defer import Deferred

from crawler import stats_keys as keys
from crawler.middlewares.slots import SlotFloors, host_min_interval

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser

logger = logging.getLogger(__name__)
# Where Scrapy's RobotsTxtMiddleware logs a robots.txt it could not download.
_ROBOTSTXT_LOG = logging.getLogger("scrapy.downloadermiddlewares.robotstxt")


def _owner(netloc: str) -> str:
    # One floor per host:port, as robots.txt is per host:port while a slot may serve several ports of a host.
    return f"host:{netloc}"


class SafeRobotsTxtMiddleware(RobotsTxtMiddleware):
    """Scrapy's ``RobotsTxtMiddleware``, with every request that waited for robots.txt checked against it,
    and a robots.txt that failed with a download error the crawl retries logged on one line."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._retried = tuple(
            load_object(e) if isinstance(e, str) else e for e in crawler.settings.getlist("RETRY_EXCEPTIONS")
        )
        _ROBOTSTXT_LOG.addFilter(self._one_line)
        crawler.signals.connect(self._on_engine_stopped, signal=signals.engine_stopped)

    def _one_line(self, record: logging.LogRecord) -> bool:
        """Drops the traceback from a record whose exception the crawl retries: Scrapy logs a robots.txt
        that could not be downloaded with its traceback, where a site that does not answer is a failure
        the crawl expects and the message (request and error) says all of it."""
        if record.exc_info and isinstance(record.exc_info[1], self._retried):
            record.exc_info, record.exc_text = None, None
        return True

    def _on_engine_stopped(self) -> None:
        _ROBOTSTXT_LOG.removeFilter(self._one_line)

    async def robot_parser(self, request: Request) -> RobotParser | None:
        parser = await super().robot_parser(request)
        if parser is None:
            stored = self._parsers.get(urlparse_cached(request).netloc)
            if stored is not None and not isinstance(stored, Deferred):
                return stored
        return parser


class RobotsCrawlDelayMiddleware:
    """Keeps each host's slot delay at or above ``max(DOWNLOAD_DELAY, Crawl-delay, 1 / HOST_MAX_RATE)``."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.obey_robots = settings.getbool("ROBOTSTXT_OBEY")
        self.crawl_delay_enabled = self.obey_robots and settings.getbool("ROBOTSTXT_CRAWLDELAY_ENABLED")
        self.crawl_delay_max = settings.getfloat("ROBOTSTXT_CRAWLDELAY_MAX")
        self.min_interval = host_min_interval(settings)
        if not (self.obey_robots or settings.getfloat("HOST_MAX_RATE") > 0):
            raise NotConfigured
        self.crawler = crawler
        self.stats = crawler.stats
        self.robots_user_agent: str | None = settings.get("ROBOTSTXT_USER_AGENT")
        self.default_user_agent: str = settings.get("USER_AGENT")
        self.crawl_delays: dict[str, float] = {}
        self.floors = SlotFloors.of(crawler)
        crawler.signals.connect(self._on_spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._on_robots_parsed, signal=signals.robots_parsed)
        crawler.signals.connect(self._on_request_reached, signal=signals.request_reached_downloader)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def host_floor(self, netloc: str) -> float:
        """Minimum seconds between two requests to *netloc*."""
        return max(self.min_interval, self.crawl_delays.get(netloc, 0.0))

    def _on_spider_opened(self, spider: Spider) -> None:
        if self.obey_robots and self.stats.get_value(keys.ROBOTSTXT_FORBIDDEN) is None:
            # Scrapy only creates the key on the first refusal; a zero makes "none refused" visible too.
            self.stats.set_value(keys.ROBOTSTXT_FORBIDDEN, 0)

    def _on_robots_parsed(self, robotparser: RobotParser, request: Request) -> None:
        if not self.crawl_delay_enabled:
            return
        delay = robotparser.crawl_delay(self._user_agent(request))
        if delay is None or delay <= 0:
            return
        netloc = urlparse_cached(request).netloc
        self.crawl_delays[netloc] = min(delay, self.crawl_delay_max)
        self.stats.inc_value("robotstxt/crawl_delay/hosts")
        if delay > self.crawl_delay_max:
            self.stats.inc_value("robotstxt/crawl_delay/capped")
        logger.info(
            "robots.txt of %(netloc)s asks for Crawl-delay %(delay)s, using %(used).2fs",
            {"netloc": netloc, "delay": delay, "used": self.crawl_delays[netloc]},
        )
        key = self.crawler.engine.downloader.get_slot_key(request)
        self.floors.set(key, _owner(netloc), self.host_floor(netloc))

    def _on_request_reached(self, request: Request, spider: Spider) -> None:
        netloc = urlparse_cached(request).netloc
        floor = self.host_floor(netloc)
        key = request.meta.get("download_slot")
        if floor > 0 and key is not None:
            self.floors.set(key, _owner(netloc), floor)

    def _user_agent(self, request: Request) -> str | bytes:
        if self.robots_user_agent:
            return self.robots_user_agent
        return request.headers.get(b"User-Agent") or self.default_user_agent
