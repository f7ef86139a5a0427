"""Retries with exponential backoff that slow down the whole host and honour ``Retry-After``.

Replaces Scrapy's ``RetryMiddleware`` (disable that one). Settings (same vocabulary as Scrapy's own backoff;
their defaults are in ``crawler/settings.py``):

- ``BACKOFF_ENABLED``: when false the middleware is not loaded.
- ``BACKOFF_HTTP_CODES``: statuses that slow the host and are retried.
- ``BACKOFF_EXCEPTIONS`` (None: Scrapy's ``RETRY_EXCEPTIONS``): download exceptions that slow the host and are
  retried (timeouts, refused / lost / reset connections, responses never received or cut short).
- ``BACKOFF_MAX_RETRIES``: retries per request; ``request.meta["backoff_max_retries"]`` overrides it and
  ``request.meta["dont_retry"]`` turns retrying off for a request (its errors still slow the host).
- ``BACKOFF_MIN_DELAY``, ``BACKOFF_DELAY_FACTOR``, ``BACKOFF_MAX_DELAY``: on each error
  the host's slot delay becomes ``min(MAX, max(MIN, delay * FACTOR))``, and the host is held for a full-jitter
  exponential wait, ``uniform(0, min(MAX, MIN * FACTOR ** (n - 1)))`` for the n-th error in a row, or for the
  ``Retry-After`` of the response when that is longer (capped at ``BACKOFF_MAX_DELAY``).
- ``BACKOFF_WINDOW``: recovery. Once the hold is over, every good answer that comes at least a window
  after the last change divides the raised delay by ``FACTOR``, until the configured delay is back.
- ``BACKOFF_PRIORITY_ADJUST``: priority of a retry relative to the failed request.
- ``BACKOFF_HOST_MAX_FAILURES``: after this many failures in a row on one host (scheme, host and port: a
  status of ``BACKOFF_HTTP_CODES``, or one of the exceptions; any other answer resets the count), the rest of
  that host's requests are not sent by this crawl: each fails with :class:`HostDeferred` (an
  ``IgnoreRequest``), and the host is logged once. 0: never.

A failing host is thus bounded: its waits grow with each failure, and the bound stops them before they
grow past a night. The crawl's end is bounded too: once the engine closes (``CLOSESPIDER_TIMEOUT``, the
first SIGTERM or Ctrl-C), the requests this middleware holds, waiting here or in a download slot's queue,
are handed back to the scheduler unsent, as every other request the closing crawl did not reach, instead of
keeping the close waiting for the backoff's waits (up to ``BACKOFF_MAX_DELAY`` each).

"Held" means no request to that host is sent before the time has passed: requests already waiting in the
download slot are held by moving the slot's ``lastseen`` forward (the slot sends its next request at
``lastseen + delay``), and requests that reach this middleware later wait in ``process_request`` (an awaited
timer, the reactor keeps running). A response is seen in the ``response_downloaded`` signal, which the
downloader sends before it picks the slot's next request; a download exception is only seen in
``process_exception``, after that pick, so one request already queued behind a failed one may still go out.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from time import monotonic, time
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.asyncio import CallLaterResult, call_later, create_looping_call
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import load_object
from scrapy.utils.python import global_object_name
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from crawler import stats_keys as keys
from crawler.middlewares.slots import SlotFloors

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

FLOOR_OWNER = "backoff"
_DELTA_SECONDS = re.compile(r"\d+(\.\d+)?")
# What a request of a failing host fails with: the spider reads it as no answer (a subtitle row's problem
# is "failed", a lecture page keeps its last record), never as robots.txt or a size cap.
HOST_FAILING = "host failing: deferred to the next night"
# How often the middleware looks whether the engine is closing (Scrapy sends no signal when it starts to).
CLOSE_POLL_SECONDS = 0.5


def parse_retry_after(value: bytes | str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delta seconds or an HTTP date (0 for a date in the past).

    None when the value is missing or unreadable. *now* is the current Unix time (default: the clock).
    """
    if value is None:
        return None
    text = (value.decode("latin-1") if isinstance(value, bytes) else value).strip()
    if not text:
        return None
    if _DELTA_SECONDS.fullmatch(text):
        return float(text)
    try:
        date = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if date.tzinfo is None:
        date = date.replace(tzinfo=UTC)
    return max(0.0, date.timestamp() - (time() if now is None else now))


def full_jitter_wait(errors_in_a_row: int, min_delay: float, factor: float, max_delay: float) -> float:
    """A random wait in ``[0, min(max_delay, min_delay * factor ** (errors_in_a_row - 1))]`` (full jitter)."""
    # Imported here: only an error needs it, and most crawls meet none (a fiftieth of a second saved at
    # every start).
    from tenacity import RetryCallState, Retrying, wait_random_exponential

    state = RetryCallState(Retrying(), None, (), {})
    state.attempt_number = max(1, errors_in_a_row)
    return float(wait_random_exponential(multiplier=min_delay, max=max_delay, exp_base=factor)(state))


@dataclass
class HostBackoff:
    """Backoff state of one download slot."""

    delay: float = 0.0
    errors_in_a_row: int = 0
    hold_until: float = 0.0
    changed_at: float = 0.0


class HostDeferred(IgnoreRequest):
    """A request not sent by this crawl because its host kept failing: no answer, the next crawl asks."""

    def __init__(self, host: str) -> None:
        super().__init__(f"{HOST_FAILING} ({host})")


class _HandedBack(Exception):
    """Takes a request out of a download slot's queue when the engine closes (see ``process_exception``)."""


@dataclass
class HostFailures:
    """Failures in a row of one host (scheme, host and port), and whether it is deferred for this crawl."""

    # The download slot the host's requests go through (its backoff delay and hold).
    slot: str
    in_a_row: int = 0
    deferred: bool = False


def request_host(request: Request) -> str:
    """The host a request's failures are counted for: scheme, host and port of its URL (two servers on one
    host name, such as the site and its assets origin on loopback, are two hosts)."""
    url = urlparse_cached(request)
    return f"{url.scheme}://{url.netloc}"


def deferral(request: Request, failures: HostFailures | None, stats: StatsCollector) -> HostDeferred | None:
    """The exception that keeps *request* from being sent (or retried) by this crawl when its host is
    deferred, counted in *stats* (in total and per host); None when it may go. Like Scrapy's
    ``get_retry_request``: the decision, which the middleware raises."""
    if failures is None or not failures.deferred:
        return None
    host = request_host(request)
    stats.inc_value("backoff/deferred")
    stats.inc_value("backoff/deferred/" + host)
    return HostDeferred(host)


def engine_closing(engine: ExecutionEngine | None) -> bool:
    """Whether the engine has begun to close its spider (``CLOSESPIDER_*``, a signal, an error)."""
    if engine is None:
        return False
    # Scrapy has no public word for it: the engine's slot gets its ``closing`` Deferred the moment the close
    # begins, and then waits for every request in progress before anything else of the close happens.
    slot = getattr(engine, "_slot", None)
    return slot is not None and getattr(slot, "closing", None) is not None


# What the backoff still has ahead: requests to failing hosts it may send (retries), and the seconds of
# backoff waits before the last of them, on the host that waits longest.
BackoffOutlook = tuple[int, float]


def host_outlook(
    failures_in_a_row: int, *, bound: int, waiting: float, delay: float, factor: float, max_delay: float
) -> BackoffOutlook:
    """The outlook of a host that failed *failures_in_a_row* times in a row: up to ``bound - failures``
    more requests before it is deferred (each failing, at worst), the first after the *waiting* seconds
    left of its hold, each later one after the slot *delay* raised by *factor* (capped at *max_delay*)."""
    retries = max(0, bound - failures_in_a_row) if failures_in_a_row > 0 else 0
    if retries == 0:
        return 0, 0.0
    seconds, step = max(0.0, waiting), delay
    for _ in range(retries - 1):
        step = min(max_delay, step * factor)
        seconds += step
    return retries, seconds


class BackoffMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("BACKOFF_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.stats = crawler.stats
        self.http_codes = frozenset(int(c) for c in settings.getlist("BACKOFF_HTTP_CODES"))
        # Unset, the exceptions are Scrapy's, as its RetryMiddleware (which this one replaces) would retry.
        own = settings.get("BACKOFF_EXCEPTIONS") is not None
        exceptions = settings.getlist("BACKOFF_EXCEPTIONS" if own else "RETRY_EXCEPTIONS")
        self.exceptions: tuple[type[BaseException], ...] = tuple(
            load_object(e) if isinstance(e, str) else e for e in exceptions
        )
        self.max_retries = settings.getint("BACKOFF_MAX_RETRIES")
        self.min_delay = settings.getfloat("BACKOFF_MIN_DELAY")
        self.factor = settings.getfloat("BACKOFF_DELAY_FACTOR")
        self.max_delay = settings.getfloat("BACKOFF_MAX_DELAY")
        self.window = settings.getfloat("BACKOFF_WINDOW")
        self.priority_adjust = settings.getint("BACKOFF_PRIORITY_ADJUST")
        if self.min_delay <= 0 or self.factor < 1 or self.max_delay < self.min_delay:
            raise ValueError(
                "BACKOFF_* needs 0 < BACKOFF_MIN_DELAY <= BACKOFF_MAX_DELAY and BACKOFF_DELAY_FACTOR >= 1"
            )
        self.max_failures = settings.getint("BACKOFF_HOST_MAX_FAILURES")
        self.hosts: dict[str, HostBackoff] = {}
        # By host (request_host), not by slot: the failures of one server.
        self.failures: dict[str, HostFailures] = {}
        self.floors = SlotFloors.of(crawler)
        self.closing = False
        self._waiting: set[Deferred[None]] = set()
        self._close_watch: Any = None
        crawler.signals.connect(self._on_response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self._on_spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._on_spider_closed, signal=signals.spider_closed)
        _REGISTRY[crawler] = self

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_request(self, request: Request) -> Request | None:
        if self.closing:
            # Once the crawl closes, nothing more is sent: a request that reaches the downloader after the
            # queues were swept (one released from a robots.txt wait) would wait out a raised slot delay.
            return self._hand_back(request)
        deferred = deferral(request, self.failures.get(request_host(request)), self.stats)
        if deferred is not None:
            raise deferred
        state = self.hosts.get(self.crawler.engine.downloader.get_slot_key(request))
        if state is None:
            return None
        counted = False
        while (wait := state.hold_until - monotonic()) > 0:
            if self.closing:
                return self._hand_back(request)
            if not counted:
                self.stats.inc_value("backoff/held_requests")
                counted = True
            await self._wait(wait)
            deferred = deferral(request, self.failures.get(request_host(request)), self.stats)
            if deferred is not None:
                raise deferred
        return None

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if (
            response.status not in self.http_codes
            or request.meta.get("dont_retry", False)
            or "cached" in response.flags
        ):
            return response
        return self._retry(request, str(response.status)) or response

    def process_exception(self, request: Request, exception: Exception) -> Request | None:
        if isinstance(exception, _HandedBack):
            return self._hand_back(request)
        if not isinstance(exception, self.exceptions):
            return None
        key = request.meta.get("download_slot")
        if key is not None:
            self.back_off(key)
        self._count_answer(request, failed=True)
        if request.meta.get("dont_retry", False):
            return None
        return self._retry(request, global_object_name(type(exception)))

    def outlook(self) -> BackoffOutlook:
        """The requests the backoff may still send to the hosts failing now, and the longest wait of one
        host before its last one (the hosts wait side by side)."""
        bound = self.max_failures if self.max_failures > 0 else self.max_retries + 1
        now = monotonic()
        retries, seconds = 0, 0.0
        for failures in self.failures.values():
            if failures.deferred or failures.in_a_row == 0:
                continue
            state = self.hosts.get(failures.slot, HostBackoff())
            slot = self.crawler.engine.downloader.slots.get(failures.slot)
            free_at = slot.lastseen + slot.delay if slot is not None else 0.0
            waiting = max(state.hold_until, free_at) - now
            delay = max(state.delay, slot.delay if slot is not None else 0.0)
            host_retries, host_seconds = host_outlook(
                failures.in_a_row,
                bound=bound,
                waiting=waiting,
                delay=delay,
                factor=self.factor,
                max_delay=self.max_delay,
            )
            retries += host_retries
            seconds = max(seconds, host_seconds)
        return retries, seconds

    def _count_answer(self, request: Request, *, failed: bool) -> None:
        """Count one answer of the request's host (a failure, or any other answer, which resets the count);
        the failure that reaches ``BACKOFF_HOST_MAX_FAILURES`` (0: none does) defers the host, once: a
        deferred host stays deferred for the crawl."""
        host = request_host(request)
        failures = self.failures.get(host)
        if failures is None:
            if not failed:
                return
            failures = self.failures[host] = HostFailures(
                self.crawler.engine.downloader.get_slot_key(request)
            )
        if failures.deferred:
            return
        failures.in_a_row = failures.in_a_row + 1 if failed else 0
        if self.max_failures <= 0 or failures.in_a_row < self.max_failures:
            return
        failures.deferred = True
        self.stats.inc_value("backoff/hosts_deferred")
        logger.warning(
            "%(host)s failed %(times)d times in a row: its other requests wait for the next crawl",
            {"host": host, "times": failures.in_a_row},
        )
        # The requests already queued in the slot would go out one by one, at the raised delay.
        self._take_from_queue(
            failures.slot, lambda r: request_host(r) == host, lambda r: deferral(r, failures, self.stats)
        )

    def _take_from_queue(
        self, key: str, which: Callable[[Request], bool], error: Callable[[Request], Exception | None]
    ) -> None:
        """Fail the requests of slot *key*'s queue that *which* picks with *error*'s exception, unsent."""
        slot = self.crawler.engine.downloader.slots.get(key)
        if slot is None:
            return
        taken = [(r, d) for r, d in slot.queue if which(r)]
        for item in taken:
            slot.queue.remove(item)
        for request, queued in taken:
            queued.errback(Failure(error(request) or _HandedBack()))

    def _hand_back(self, request: Request) -> Request:
        """*request* again, for the scheduler: the closing crawl leaves it unsent, as the rest of its
        queue."""
        self.stats.inc_value(keys.BACKOFF_HANDED_BACK_AT_CLOSE)
        again = request.copy()
        again.dont_filter = True
        return again

    async def _wait(self, seconds: float) -> None:
        """Sleep *seconds*, or until the engine closes."""
        woken: Deferred[None] = Deferred()
        timer: CallLaterResult = call_later(seconds, _fire, woken)
        self._waiting.add(woken)
        try:
            await maybe_deferred_to_future(woken)
        finally:
            self._waiting.discard(woken)
            timer.cancel()

    def _on_spider_opened(self, spider: Spider) -> None:
        self._close_watch = create_looping_call(self._watch_close)
        self._close_watch.start(CLOSE_POLL_SECONDS, now=False)

    def _on_spider_closed(self, spider: Spider) -> None:
        if self._close_watch is not None and self._close_watch.running:
            self._close_watch.stop()

    def _watch_close(self) -> None:
        if self.closing or not engine_closing(self.crawler.engine):
            return
        self.closing = True
        for woken in list(self._waiting):
            _fire(woken)
        for key in list(self.crawler.engine.downloader.slots):
            self._take_from_queue(key, lambda r: True, lambda r: _HandedBack())

    def back_off(self, key: str, retry_after: float | None = None) -> None:
        """Slow down slot *key* after an error and hold it for the backoff wait."""
        now = monotonic()
        state = self.hosts.setdefault(key, HostBackoff())
        state.errors_in_a_row += 1
        slot = self.crawler.engine.downloader.slots.get(key)
        current = max(state.delay, slot.delay if slot is not None else self.floors.default_delay(key))
        state.delay = min(self.max_delay, max(self.min_delay, current * self.factor))
        state.changed_at = now
        self.floors.set(key, FLOOR_OWNER, state.delay)
        self.stats.inc_value("backoff/delay_raised")
        wait = full_jitter_wait(state.errors_in_a_row, self.min_delay, self.factor, self.max_delay)
        if retry_after is not None:
            self.stats.inc_value("backoff/retry_after_honoured")
            if retry_after > self.max_delay:
                self.stats.inc_value("backoff/retry_after_capped")
            wait = max(wait, min(retry_after, self.max_delay))
        self._hold(key, state, now + wait)
        logger.info(
            "Backing off %(slot)s: delay %(delay).2fs, no request for %(wait).2fs",
            {"slot": key, "delay": state.delay, "wait": wait},
        )

    def _hold(self, key: str, state: HostBackoff, until: float) -> None:
        state.hold_until = max(state.hold_until, until)
        slot = self.crawler.engine.downloader.slots.get(key)
        if slot is not None:
            # The slot sends its next queued request once lastseen + delay has passed, and its delay never
            # drops under the floor (no jitter on floored slots): this holds the queue until hold_until.
            slot.lastseen = max(slot.lastseen, state.hold_until - self.floors.floor(key))

    def _recover(self, key: str) -> None:
        state = self.hosts.get(key)
        if state is None or state.delay <= 0:
            return
        now = monotonic()
        if now < state.hold_until or now - state.changed_at < self.window:
            return
        state.changed_at = now
        state.errors_in_a_row = max(0, state.errors_in_a_row - 1)
        state.delay /= self.factor
        baseline = max(self.floors.default_delay(key), self.floors.floor(key, excluding=FLOOR_OWNER))
        if self.factor <= 1 or state.delay < self.min_delay or state.delay <= baseline:
            state.delay = 0.0
            state.errors_in_a_row = 0
            self.floors.clear(key, FLOOR_OWNER)
            self.stats.inc_value("backoff/recovered")
            logger.info("Backoff of %(slot)s over", {"slot": key})
        else:
            self.floors.relax(key, FLOOR_OWNER, state.delay)
            self.stats.inc_value("backoff/delay_lowered")

    def _on_response_downloaded(self, response: Response, request: Request, spider: Spider) -> None:
        key = request.meta.get("download_slot")
        if key is None:
            return
        failed = response.status in self.http_codes
        if failed:
            self.back_off(key, parse_retry_after(response.headers.get(b"Retry-After")))
        else:
            self._recover(key)
        # Here, before the downloader takes the slot's next request: a deferred host's next one stays.
        self._count_answer(request, failed=failed)

    def _retry(self, request: Request, reason: str) -> Request | None:
        retries = int(request.meta.get("retry_times", 0)) + 1
        max_retries = int(request.meta.get("backoff_max_retries", self.max_retries))
        if retries > max_retries:
            self.stats.inc_value(keys.BACKOFF_GAVE_UP)
            logger.error(
                "Gave up retrying %(request)s (failed %(times)d times): %(reason)s",
                {"request": request, "times": retries, "reason": reason},
            )
            return None
        # The retry of a request whose host is deferred is not sent either.
        deferred = deferral(request, self.failures.get(request_host(request)), self.stats)
        if deferred is not None:
            raise deferred
        retry = request.copy()
        retry.meta["retry_times"] = retries
        retry.dont_filter = True
        retry.priority = request.priority + self.priority_adjust
        self.stats.inc_value("backoff/retry_count")
        self.stats.inc_value("backoff/retry_count/" + reason)
        logger.debug(
            "Retrying %(request)s (failed %(times)d times): %(reason)s",
            {"request": request, "times": retries, "reason": reason},
        )
        return retry


_REGISTRY: WeakKeyDictionary[Crawler, BackoffMiddleware] = WeakKeyDictionary()


def crawl_backoff(crawler: Crawler) -> BackoffMiddleware | None:
    """The backoff middleware of *crawler*'s engine (None before the engine is built, or when it is off)."""
    return _REGISTRY.get(crawler)


def _fire(woken: Deferred[None]) -> None:
    if not woken.called:
        woken.callback(None)
