"""Fleet-wide politeness: one host gets the single-process pace however many workers crawl it.

Each download slot (a host, as Scrapy throttles it) has a pacing token in Redis. Before a request goes to the
downloader, this middleware waits (asynchronously: the reactor keeps running) until it holds the slot's token
and the host is free; it gives the token back when the response or the error is in, and the host is free again
one interval later. So, whatever the number of workers: one request in flight per host, as with
``CONCURRENT_REQUESTS_PER_DOMAIN = 1``, and every request leaves at least an interval after the previous
response arrived, hence after the previous request reached the server. A send time reserved in advance would
not give that: a worker busy with a response sends late and bunches up with the next worker's request.

The interval is the one the single-process crawl keeps between two requests to the slot: the slot's current
delay (which AutoThrottle, robots.txt ``Crawl-delay`` and backoff floors move), never less than
``DOWNLOAD_DELAY`` or ``1 / HOST_MAX_RATE``. It is counted from the response, not from the request as Scrapy
counts it, so a fleet is slower per host than one process by one response time per request. With no delay
at all (``DOWNLOAD_DELAY = 0`` and no ``HOST_MAX_RATE``) hosts are not paced.

Per worker, one request per slot at a time goes for the token (a local lock), after its own slot's delay, so
that the token is not held while the local slot still waits. A worker that dies holding a token loses it
once its heartbeat expires. Registered at 950, after the HTTP cache (900): cache hits never get here.

Fails closed: a request never goes out without its token. When Redis cannot be asked, the worker waits and
asks again with backoff (``_RETRY_MIN`` doubling to ``_RETRY_MAX`` seconds); after
``FRONTIER_PACE_FAIL_TIMEOUT`` seconds without an answer it stops with the reason
``frontier_pace_unavailable``: the request is dropped here without being sent and its lease kept, so the
fleet's queue gets it back when the worker leaves or its heartbeat expires.

Stats: ``frontier/pace/requests``, ``frontier/pace/waits``, ``frontier/pace/wait_seconds`` (total),
``frontier/pace/max_wait_seconds``, ``frontier/pace/errors`` (a Redis call that failed),
``frontier/pace/retry_seconds`` (total time spent waiting for Redis to answer again) and
``frontier/pace/gave_up`` (requests not sent because Redis stayed unreachable).
"""

from __future__ import annotations

import logging
from time import monotonic
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.asyncio import sleep
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import DeferredLock

from crawler import stats_keys
from crawler.frontier.core import Frontier
from crawler.middlewares.slots import host_min_interval

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.core.downloader import Slot
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# How often a waiting worker asks again while another one holds the token (a fraction of the interval, so
# that the ask after the release lands within the interval and the wait is then exact).
_POLL_FRACTION = 0.25
_POLL_MIN, _POLL_MAX = 0.002, 0.1
# Backoff while Redis does not answer.
_RETRY_MIN, _RETRY_MAX = 0.1, 5.0
PACE_UNAVAILABLE = "frontier_pace_unavailable"


class PacingUnavailable(IgnoreRequest):
    """Redis could not be asked for the host's token within ``FRONTIER_PACE_FAIL_TIMEOUT``: not sent."""


def slot_wait(slot: Slot | None) -> float:
    """Seconds until *slot* would send its next request (its longest jittered delay after the last one)."""
    if slot is None:
        return 0.0
    return slot.lastseen + slot.delay * (1 + slot.jitter) - monotonic()


class HostPacingMiddleware:
    def __init__(self, crawler: Crawler, frontier: Frontier) -> None:
        settings = crawler.settings
        self.floor = host_min_interval(settings)
        # A token outlives the slowest download it may cover; a dead holder loses it sooner (heartbeat).
        self.hold = 2 * settings.getfloat("DOWNLOAD_TIMEOUT") + 60.0
        self.crawler = crawler
        self.frontier = frontier
        self.stats = crawler.stats
        self.locks: dict[str, DeferredLock] = {}
        self.held: dict[int, tuple[Request, str, float]] = {}
        self.total_wait = 0.0
        self.fail_timeout = settings.getfloat("FRONTIER_PACE_FAIL_TIMEOUT")
        self.retry_seconds = 0.0
        self.stopping = False
        crawler.signals.connect(self._left_downloader, signal=signals.request_left_downloader)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.get("FRONTIER_URL"):
            raise NotConfigured("FRONTIER_URL is not set")
        if not crawler.settings.getbool("FRONTIER_PACE_ENABLED"):
            raise NotConfigured("FRONTIER_PACE_ENABLED is off")
        return cls(crawler, Frontier.of(crawler))

    def interval(self, slot: Slot | None) -> float:
        return max(self.floor, slot.delay if slot is not None else 0.0)

    async def process_request(self, request: Request) -> None:
        if self.stopping:
            self._give_up(request)
        downloader = self.crawler.engine.downloader
        key = downloader.get_slot_key(request)
        interval = self.interval(downloader.slots.get(key))
        if interval <= 0:
            return
        lock = self.locks.setdefault(key, DeferredLock())
        await maybe_deferred_to_future(lock.acquire())
        try:
            await self._take_token(key, interval, request)
        except BaseException:
            lock.release()
            raise
        self.held[id(request)] = (request, key, interval)

    async def _take_token(self, key: str, interval: float, request: Request) -> None:
        """Wait for the slot's token; raises :class:`PacingUnavailable` (and stops the worker) when Redis
        stays unreachable for ``FRONTIER_PACE_FAIL_TIMEOUT`` seconds."""
        downloader = self.crawler.engine.downloader
        local = slot_wait(downloader.slots.get(key))
        if local > 0:
            await sleep(local)
        poll = min(_POLL_MAX, max(_POLL_MIN, interval * _POLL_FRACTION))
        waited = 0.0
        failing_since: float | None = None
        retry = _RETRY_MIN
        while True:
            if self.stopping:
                self._give_up(request)
            try:
                wait = self.frontier.acquire(key, self.hold, poll)
            except Exception as exc:
                self.stats.inc_value(stats_keys.PACE_ERRORS)
                now = monotonic()
                if failing_since is None:
                    failing_since = now
                    logger.warning(
                        "Cannot ask the frontier for the pacing token of %s: %s; retrying", key, exc
                    )
                if now - failing_since >= self.fail_timeout:
                    self._stop(key, now - failing_since, exc)
                    self._give_up(request)
                pause = min(retry, max(0.0, failing_since + self.fail_timeout - now))
                retry = min(_RETRY_MAX, retry * 2)
                self.retry_seconds += pause
                self.stats.set_value("frontier/pace/retry_seconds", round(self.retry_seconds, 3))
                await sleep(pause)
                continue
            if failing_since is not None:
                logger.info("The frontier answers again: pacing %s", key)
                failing_since, retry = None, _RETRY_MIN
            if wait <= 0:
                break
            waited += wait
            await sleep(wait)
        self.stats.inc_value("frontier/pace/requests")
        if waited > 0:
            self.total_wait += waited
            self.stats.inc_value("frontier/pace/waits")
            self.stats.set_value("frontier/pace/wait_seconds", round(self.total_wait, 3))
            self.stats.max_value("frontier/pace/max_wait_seconds", round(waited, 3))

    def _stop(self, key: str, seconds: float, exc: Exception) -> None:
        if self.stopping:
            return
        self.stopping = True
        logger.error(
            "Stopping this worker: the frontier could not be asked for the pacing token of %s for %.0f s "
            "(%s); no request was sent without it, and the worker's requests go back to the fleet's queue",
            key,
            seconds,
            exc,
        )
        engine = self.crawler.engine
        if engine is not None:
            from scrapy.utils.defer import deferred_from_coro

            deferred_from_coro(engine.close_spider_async(reason=PACE_UNAVAILABLE))

    def _give_up(self, request: Request) -> None:
        self.frontier.keep_leased(request)
        self.stats.inc_value("frontier/pace/gave_up")
        raise PacingUnavailable(f"not sent without the pacing token: {request.url}")

    def _left_downloader(self, request: Request, spider: Spider) -> None:
        entry = self.held.pop(id(request), None)
        if entry is None:
            return
        _, key, interval = entry
        try:
            # The slot's delay may have grown with this response (AutoThrottle, backoff).
            slot = self.crawler.engine.downloader.slots.get(key)
            self.frontier.release(key, max(interval, self.interval(slot)))
        except Exception as exc:
            self.stats.inc_value(stats_keys.PACE_ERRORS)
            logger.warning("Could not release the pacing token of %s: %s", key, exc)
        finally:
            self.locks[key].release()
