"""The per-slot delay floors the politeness middlewares share, and the per-host minimum interval.

Scrapy throttles per download slot (one slot per host by default): a slot sends its next request once
``slot.delay`` has passed since it sent the previous one. Several components here want a *minimum* for that
delay (robots.txt ``Crawl-delay``, ``HOST_MAX_RATE``, backoff after errors) while AutoThrottle moves the delay
up and down with latency. :class:`SlotFloors` keeps every component's minimum and puts the slot delay back
above the highest one whenever something may have lowered it.

It also makes the downloader keep to the slot concurrency (``CONCURRENT_REQUESTS_PER_DOMAIN``) when the slot
delay is 0. Scrapy 2.19 counts a request as transferring only once its download task has started, while the
loop that takes requests off the slot queue checks the count right away: with a delay, it takes one request
per pass and the count is up to date by the next one; without, it takes the whole queue at once. Requests that
piled up behind a backoff hold (and were let go when it ended) all went out together, and a 429 among them
came too late to stop the others. :func:`count_dispatched_as_transferring` closes that gap.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from scrapy import Request, signals
from scrapy.http import Response
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.core.downloader import Slot
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

_REGISTRY: WeakKeyDictionary[Crawler, SlotFloors] = WeakKeyDictionary()


_Queued = tuple[Request, Deferred[Response]]


def host_min_interval(settings: BaseSettings) -> float:
    """The configured minimum seconds between two requests to one host: ``DOWNLOAD_DELAY``, or
    ``1 / HOST_MAX_RATE`` when that is longer (robots.txt ``Crawl-delay`` may raise it per host)."""
    rate = settings.getfloat("HOST_MAX_RATE")
    return max(settings.getfloat("DOWNLOAD_DELAY"), 1.0 / rate if rate > 0 else 0.0)


class _DispatchQueue(deque[_Queued]):
    """A slot queue whose ``popleft`` (the downloader taking a request to send) counts it as transferring."""

    def __init__(self, items: Iterable[_Queued], transferring: set[Request]) -> None:
        super().__init__(items)
        self.transferring = transferring

    def popleft(self) -> _Queued:
        item = super().popleft()
        self.transferring.add(item[0])
        return item


def count_dispatched_as_transferring(slot: Slot) -> None:
    """Make *slot* count a request against its concurrency as soon as the downloader takes it off the queue.

    ``Downloader._process_queue`` pops requests while ``slot.free_transfer_slots() > 0``, but the request
    only joins ``slot.transferring`` when its download task first runs, on a later turn of the event loop;
    with a slot delay of 0 nothing breaks the loop, so the whole queue goes out whatever the concurrency.
    Adding the request when it is popped makes the check exact; ``_download`` adds it again (a set, no
    change) and removes it when the download is over, as before.
    """
    if not isinstance(slot.queue, _DispatchQueue):
        slot.queue = _DispatchQueue(slot.queue, slot.transferring)


class SlotFloors:
    """Minimum delays of download slots, each set by a named owner; the highest one wins.

    Floors are applied when a request reaches the downloader (so a slot that Scrapy garbage-collected and
    re-created gets its floor back before it sends anything) and after every downloaded response. AutoThrottle
    adjusts delays in its own ``response_downloaded`` handler; it is an extension, and extensions are built
    (and connect their handlers) before the engine builds the downloader middlewares that create this object,
    so these handlers run after AutoThrottle's and before the downloader picks the next request of the slot.

    A slot with a floor gets no random jitter (``DOWNLOAD_DELAY_JITTER``, formerly
    ``RANDOMIZE_DOWNLOAD_DELAY``, which scales the delay by 0.5..1.5): the floor is a true minimum interval.
    """

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler
        self._floors: dict[str, dict[str, float]] = {}
        self._saved_jitter: dict[str, float] = {}
        self._download_delay = crawler.settings.getfloat("DOWNLOAD_DELAY")
        crawler.signals.connect(self._on_request_reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(self._on_response_downloaded, signal=signals.response_downloaded)

    @classmethod
    def of(cls, crawler: Crawler) -> SlotFloors:
        """The one instance for *crawler*, created on first use."""
        floors = _REGISTRY.get(crawler)
        if floors is None:
            floors = cls(crawler)
            _REGISTRY[crawler] = floors
        return floors

    def floor(self, key: str, excluding: str | None = None) -> float:
        """The highest floor of slot *key*, leaving out *excluding*'s."""
        owners = self._floors.get(key, {})
        return max((seconds for owner, seconds in owners.items() if owner != excluding), default=0.0)

    def set(self, key: str, owner: str, seconds: float) -> None:
        """Raise (or keep) the delay of slot *key* to at least *seconds* on behalf of *owner*."""
        self._floors.setdefault(key, {})[owner] = seconds
        self.apply(key)

    def relax(self, key: str, owner: str, seconds: float) -> None:
        """Lower *owner*'s floor of slot *key* to *seconds* and bring the slot delay down with it."""
        self._floors.setdefault(key, {})[owner] = seconds
        self._reset_delay(key)

    def clear(self, key: str, owner: str) -> None:
        """Drop *owner*'s floor of slot *key*; the slot goes back to its configured delay or other floors."""
        owners = self._floors.get(key)
        if not owners or owner not in owners:
            return
        del owners[owner]
        self._reset_delay(key)
        if not owners:
            del self._floors[key]
            slot = self._slot(key)
            jitter = self._saved_jitter.pop(key, None)
            if slot is not None and jitter is not None:
                slot.jitter = jitter

    def default_delay(self, key: str) -> float:
        """The delay the slot has without floors: its ``DOWNLOAD_SLOTS`` entry or ``DOWNLOAD_DELAY``."""
        per_slot = self._crawler.engine.downloader.per_slot_settings.get(key, {})
        return float(per_slot.get("delay", self._download_delay))

    def apply(self, key: str) -> None:
        slot = self._slot(key)
        floor = self.floor(key)
        if slot is None or floor <= 0:
            return
        if slot.jitter:
            self._saved_jitter.setdefault(key, slot.jitter)
            slot.jitter = 0.0
        if slot.delay < floor:
            slot.delay = floor

    def _reset_delay(self, key: str) -> None:
        slot = self._slot(key)
        if slot is not None:
            slot.delay = max(self.default_delay(key), self.floor(key))
            self.apply(key)

    def _slot(self, key: str) -> Slot | None:
        return self._crawler.engine.downloader.slots.get(key)

    def _on_request_reached(self, request: Request, spider: Spider) -> None:
        key = request.meta.get("download_slot")
        if key is None:
            return
        slot = self._slot(key)
        if slot is not None:
            # Sent before the request joins the queue: every slot, new or re-created, is covered in time.
            count_dispatched_as_transferring(slot)
        if key in self._floors:
            self.apply(key)

    def _on_response_downloaded(self, response: Response, request: Request, spider: Spider) -> None:
        self._on_request_reached(request, spider)
