"""A fleet worker's life: seed once, keep the heartbeat, release finished leases, stay until drained.

- Seeding: :class:`FrontierStartMiddleware` lets the spider's ``start()`` through only in the worker that
  joined as ``seed``; seeding counts as done once ``start()`` is exhausted (its requests are queued by then).
  If the seeder dies first, the next idle worker takes over and runs ``start()`` itself.
- Every ``FRONTIER_POLL_INTERVAL``: refresh the heartbeat, release the leases of requests the engine no longer
  holds, and wake the engine when the shared queue has work (other workers fill it; Scrapy would otherwise
  look again only every 5 s).
- On ``spider_idle``: run the drain check. The worker stays (``DontCloseSpider``) while the crawl has work
  outstanding: requests queued, seeding pending, or leases held by another worker, live or dead (a dead
  worker's leases look held until its heartbeat expires; the check then re-queues them). While it waits,
  the heartbeat tick wakes the engine so that the check runs again every ``FRONTIER_POLL_INTERVAL``. It
  closes with ``finished`` once the frontier is drained, or with ``frontier_idle_timeout`` after
  ``FRONTIER_IDLE_TIMEOUT`` seconds (0: never) in which the check could not show any work outstanding
  (:class:`IdleClock`): never while a lease is out, for the last worker to leave would strand it.
- On close: unregister; leases still held (none after a normal close) go back to the queue.

Stats: ``frontier/acked``, ``frontier/reclaimed`` (leases of this worker's killed earlier run, put back on
joining; set by the scheduler), ``frontier/requeued`` (leases of dead workers this worker put back),
``frontier/returned`` (own leases put back on close), ``frontier/idle_waits``, ``frontier/drained``,
``frontier/reseeded``, ``frontier/errors``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from time import monotonic
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import CloseSpider, DontCloseSpider, NotConfigured
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.defer import deferred_from_coro

from crawler import stats_keys
from crawler.frontier.core import DONE, SEED, Drain, Frontier

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Spider
    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

logger = logging.getLogger(__name__)


def engine_requests(engine: ExecutionEngine) -> set[Request] | None:
    """The requests the engine took from the scheduler and has not finished with (download, callback,
    the callback's requests queued and items processed); None when this Scrapy does not expose them."""
    slot = getattr(engine, "_slot", None)
    inprogress = getattr(slot, "inprogress", None)
    return inprogress if isinstance(inprogress, set) else None


def running_engine(crawler: Crawler) -> ExecutionEngine | None:
    """The crawler's engine; None before the crawl starts (Scrapy 2.14 returns None, later ones raise)."""
    try:
        return crawler.engine
    except RuntimeError:
        return None


def wake(engine: ExecutionEngine | None) -> None:
    """Ask the engine to poll the scheduler now; Scrapy has no public call for it."""
    nextcall = getattr(getattr(engine, "_slot", None), "nextcall", None)
    if nextcall is not None:
        nextcall.schedule()


class IdleClock:
    """How long a waiting worker has gone without the frontier showing any work outstanding, against
    ``FRONTIER_IDLE_TIMEOUT`` (*timeout*; 0: never expires). Work outstanding anywhere in the fleet sets
    it back to zero; so does work of this worker's own (:meth:`reset`)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.since: float | None = None

    def reset(self) -> None:
        self.since = None

    def expired(self, found: Drain | None, now: float) -> bool:
        """Note the drain check's answer at *now* (None: the frontier could not be asked); True once the
        worker has waited *timeout* seconds without any work outstanding."""
        if found is not None and found.outstanding:
            self.since = None
            return False
        if self.since is None:
            self.since = now
        return self.timeout > 0 and now - self.since >= self.timeout


class FrontierExtension:
    def __init__(self, crawler: Crawler, frontier: Frontier) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.frontier = frontier
        self.stats = crawler.stats
        self.poll_interval = settings.getfloat("FRONTIER_POLL_INTERVAL")
        self.idle = IdleClock(settings.getfloat("FRONTIER_IDLE_TIMEOUT"))
        # The engine is idle and kept open: the tick wakes it so that the drain check runs again.
        self.waiting = False
        self.told_busy = False
        self.loop: AsyncioLoopingCall | LoopingCall | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.get("FRONTIER_URL"):
            raise NotConfigured("FRONTIER_URL is not set")
        return cls(crawler, Frontier.of(crawler))

    def spider_opened(self, spider: Spider) -> None:
        self.frontier.open(spider)
        if self.frontier.role == DONE:
            return
        self.loop = create_looping_call(self.tick)
        self.loop.start(self.poll_interval, now=False)

    def _acks(self) -> list[int]:
        engine = running_engine(self.crawler)
        acks = self.frontier.finished(engine_requests(engine) if engine is not None else None)
        if acks:
            self.stats.inc_value("frontier/acked", len(acks))
        return acks

    def tick(self) -> None:
        engine = running_engine(self.crawler)
        if engine is None or self.frontier.keys is None:
            return
        try:
            queued = self.frontier.heartbeat(self._acks())
        except Exception as exc:
            self.stats.inc_value(stats_keys.FRONTIER_ERRORS)
            logger.warning("Frontier heartbeat failed: %s", exc)
            return
        if self.frontier.held:
            self.waiting = False
            self.idle.reset()
        if queued or self.waiting:
            wake(engine)

    def spider_idle(self, spider: Spider) -> None:
        frontier = self.frontier
        if frontier.role == DONE:
            return
        try:
            frontier.heartbeat(self._acks())
            found = frontier.drain()
        except Exception as exc:
            self.stats.inc_value(stats_keys.FRONTIER_ERRORS)
            logger.warning("Frontier drain check failed: %s", exc)
            found = None
        if found is not None and found.status == DONE:
            self.stats.set_value("frontier/drained", True)
            if found.flipped and frontier.keys is not None:
                logger.info("The frontier %s is drained: the crawl is complete", frontier.keys.namespace)
            return
        if not self.waiting:
            self.waiting, self.told_busy = True, False
            self.stats.inc_value("frontier/idle_waits")
        if found is not None and found.status == "requeued":
            self.stats.inc_value("frontier/requeued", found.count)
            logger.warning("Re-queued %d requests of workers that stopped answering", found.count)
            wake(running_engine(self.crawler))
        elif found is not None and found.status == SEED:
            self.stats.inc_value("frontier/reseeded")
            logger.warning("The seeding worker stopped answering; seeding again from this worker")
            deferred_from_coro(self._reseed(spider))
        elif found is not None and found.status == "busy" and not self.told_busy:
            self.told_busy = True
            logger.info(
                "Waiting for %d workers to finish the requests they hold (those of a worker that stopped "
                "answering go back to the queue %g s after its last heartbeat)",
                found.count,
                frontier.ttl,
            )
        if self.idle.expired(found, monotonic()):
            raise CloseSpider("frontier_idle_timeout")
        raise DontCloseSpider

    async def _reseed(self, spider: Spider) -> None:
        engine = self.crawler.engine
        try:
            async for output in spider.start():
                if isinstance(output, Request):
                    engine.crawl(output)
                else:
                    self.stats.inc_value("frontier/reseed_items_skipped")
        finally:
            self.frontier.mark_seeded()

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        frontier = self.frontier
        try:
            acks = self._acks()
            if frontier.keys is not None and frontier.role != DONE:
                frontier.heartbeat(acks)
            returned = frontier.leave()
        except Exception as exc:
            self.stats.inc_value(stats_keys.FRONTIER_ERRORS)
            logger.warning("Could not leave the frontier cleanly: %s", exc)
            return
        if returned:
            self.stats.inc_value("frontier/returned", returned)
        try:
            self.stats.set_value("frontier/summary", frontier.summary())
        except Exception as exc:
            logger.warning("Could not read the frontier's summary: %s", exc)


class FrontierStartMiddleware:
    """Only the seeding worker runs the spider's ``start()``; the others get their work from the queue."""

    def __init__(self, frontier: Frontier) -> None:
        self.frontier = frontier

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.get("FRONTIER_URL"):
            raise NotConfigured("FRONTIER_URL is not set")
        return cls(Frontier.of(crawler))

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        if self.frontier.role != SEED:
            return
        try:
            async for output in start:
                yield output
        except Exception:
            # Another worker would only fail the same way; let the fleet drain what was queued.
            self.frontier.mark_seeded()
            raise
        # Not in a ``finally``: a start() abandoned by a stopping engine is not done, and whoever finds this
        # worker gone takes over the seeding.
        self.frontier.mark_seeded()
