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
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import sleep
from scrapy.utils.misc import load_object
from scrapy.utils.python import global_object_name

from crawler import stats_keys as keys
from crawler.middlewares.slots import SlotFloors

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.core.downloader import Downloader
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

FLOOR_OWNER = "backoff"
_DELTA_SECONDS = re.compile(r"\d+(\.\d+)?")


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
        self.hosts: dict[str, HostBackoff] = {}
        self.floors = SlotFloors.of(crawler)
        crawler.signals.connect(self._on_response_downloaded, signal=signals.response_downloaded)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        state = self.hosts.get(self._downloader().get_slot_key(request))
        if state is None:
            return
        counted = False
        while (wait := state.hold_until - monotonic()) > 0:
            if not counted:
                self.stats.inc_value(keys.BACKOFF_HELD_REQUESTS)
                counted = True
            await sleep(wait)

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if (
            response.status not in self.http_codes
            or request.meta.get("dont_retry", False)
            or "cached" in response.flags
        ):
            return response
        return self._retry(request, str(response.status)) or response

    def process_exception(self, request: Request, exception: Exception) -> Request | None:
        if not isinstance(exception, self.exceptions):
            return None
        key = request.meta.get("download_slot")
        if key is not None:
            self.back_off(key)
        if request.meta.get("dont_retry", False):
            return None
        return self._retry(request, global_object_name(type(exception)))

    def back_off(self, key: str, retry_after: float | None = None) -> None:
        """Slow down slot *key* after an error and hold it for the backoff wait."""
        now = monotonic()
        state = self.hosts.setdefault(key, HostBackoff())
        state.errors_in_a_row += 1
        slot = self._downloader().slots.get(key)
        current = max(state.delay, slot.delay if slot is not None else self.floors.default_delay(key))
        state.delay = min(self.max_delay, max(self.min_delay, current * self.factor))
        state.changed_at = now
        self.floors.set(key, FLOOR_OWNER, state.delay)
        self.stats.inc_value(keys.BACKOFF_DELAY_RAISED)
        wait = full_jitter_wait(state.errors_in_a_row, self.min_delay, self.factor, self.max_delay)
        if retry_after is not None:
            self.stats.inc_value(keys.BACKOFF_RETRY_AFTER_HONOURED)
            if retry_after > self.max_delay:
                self.stats.inc_value(keys.BACKOFF_RETRY_AFTER_CAPPED)
            wait = max(wait, min(retry_after, self.max_delay))
        self._hold(key, state, now + wait)
        logger.info(
            "Backing off %(slot)s: delay %(delay).2fs, no request for %(wait).2fs",
            {"slot": key, "delay": state.delay, "wait": wait},
        )

    def _hold(self, key: str, state: HostBackoff, until: float) -> None:
        state.hold_until = max(state.hold_until, until)
        slot = self._downloader().slots.get(key)
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
            self.stats.inc_value(keys.BACKOFF_RECOVERED)
            logger.info("Backoff of %(slot)s over", {"slot": key})
        else:
            self.floors.relax(key, FLOOR_OWNER, state.delay)
            self.stats.inc_value(keys.BACKOFF_DELAY_LOWERED)

    def _on_response_downloaded(self, response: Response, request: Request, spider: Spider) -> None:
        key = request.meta.get("download_slot")
        if key is None:
            return
        if response.status in self.http_codes:
            self.back_off(key, parse_retry_after(response.headers.get(b"Retry-After")))
        else:
            self._recover(key)

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
        retry = request.copy()
        retry.meta["retry_times"] = retries
        retry.dont_filter = True
        retry.priority = request.priority + self.priority_adjust
        self.stats.inc_value(keys.BACKOFF_RETRY_COUNT)
        self.stats.inc_value(keys.BACKOFF_RETRY_COUNT_PREFIX + reason)
        logger.debug(
            "Retrying %(request)s (failed %(times)d times): %(reason)s",
            {"request": request, "times": retries, "reason": reason},
        )
        return retry

    def _downloader(self) -> Downloader:
        return self.crawler.engine.downloader
