"""scrapy-redis's scheduler and dupefilter on the frontier's keys, with a queue that leases what it hands out.

scrapy-redis 0.9 still passes ``spider=`` to the stats collector (deprecated in Scrapy 2.14+) and, unless
told to persist, flushes the queue and the seen-set when *one* worker closes; here no closing worker flushes
anything (the drained frontier cleans itself up). Requests are serialized as scrapy-redis does it:
``Request.to_dict()`` pickled, callbacks and errbacks by name, so ``cb_kwargs`` must be picklable (the
spider keeps them JSON-able).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_redis import picklecompat
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.queue import PriorityQueue
from scrapy_redis.scheduler import Scheduler

from crawler.frontier.core import DONE, Frontier

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler


class LeasingQueue(PriorityQueue):
    """scrapy-redis's priority queue whose ``pop`` leases the request to this worker (see ``core``)."""

    def __init__(self, frontier: Frontier, spider: Spider, key: str, serializer: Any) -> None:
        # scrapy-redis formats keys with ``%(spider)s``.
        super().__init__(frontier.client, spider, key.replace("%", "%%"), serializer=serializer)
        self.frontier = frontier

    def pop(self, timeout: float = 0) -> Request | None:
        found = self.frontier.lease()
        if found is None:
            return None
        lease_id, data = found
        request: Request = self._decode_request(data)
        self.frontier.held[lease_id] = request
        return request


class FrontierScheduler(Scheduler):
    """The shared queue and seen-set of the fleet; joins the frontier when the spider opens."""

    frontier: Frontier

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        frontier = Frontier.of(crawler)
        scheduler = cls(server=frontier.client, persist=True, serializer=picklecompat)
        scheduler.frontier = frontier
        scheduler.stats = crawler.stats
        scheduler.debug = crawler.settings.getbool("DUPEFILTER_DEBUG")
        return scheduler

    def open(self, spider: Spider) -> None:
        self.spider = spider
        frontier = self.frontier
        role = frontier.open(spider)
        keys = frontier.keys
        assert keys is not None
        self.queue = LeasingQueue(frontier, spider, keys.queue, self.serializer)
        self.df = RFPDupeFilter(frontier.client, key=keys.seen, debug=self.debug)
        self.stats.set_value("frontier/role", role)
        if frontier.reclaimed:
            self.stats.set_value("frontier/reclaimed", frontier.reclaimed)
            spider.logger.warning(
                "Took back %d requests that an earlier run of worker %s held when it stopped",
                frontier.reclaimed,
                frontier.worker,
            )
        if role == DONE:
            spider.logger.info(
                "The frontier %s holds a finished crawl: nothing to do. Set FRONTIER_RESET=True (or another "
                "FRONTIER_KEY_PREFIX) to crawl again.",
                keys.namespace,
            )
        else:
            spider.logger.info(
                "Worker %s joined the frontier %s as %s (%d requests queued)",
                frontier.session,
                keys.namespace,
                role,
                len(self.queue),
            )

    def close(self, reason: str) -> None:
        """Nothing to flush: the queue and seen-set belong to the whole fleet."""

    def enqueue_request(self, request: Request) -> bool:
        if self.frontier.role == DONE:
            return False
        if not request.dont_filter and self.df.request_seen(request):
            self.df.log(request, self.spider)
            self.stats.inc_value("frontier/filtered")
            return False
        self.queue.push(request)
        self.stats.inc_value("frontier/enqueued")
        return True

    def next_request(self) -> Request | None:
        if self.frontier.role == DONE:
            return None
        request: Request | None = self.queue.pop()
        if request is not None:
            self.stats.inc_value("frontier/leased")
        return request

    def has_pending_requests(self) -> bool:
        return self.frontier.role != DONE and len(self) > 0
