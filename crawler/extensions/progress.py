"""A progress line for unattended crawls: pages done and queued, items, rate and time left."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from crawler import stats_keys as keys
from crawler.middlewares.backoff import BackoffOutlook, crawl_backoff

logger = logging.getLogger("eventcrawl.progress")


def format_progress(
    done: int, queued: int, items: int, elapsed: float, backoff: BackoffOutlook | None = None
) -> str:
    """One human line; the time left assumes the rate so far holds for what is queued and for the retries
    the backoff may still send to failing hosts, and is never less than the longest of their backoff waits
    (other hosts' requests go on meanwhile)."""
    retries, waits = backoff or (0, 0.0)
    rate = done / elapsed if elapsed > 0 else 0.0
    left = f"{max((queued + retries) / rate, waits):.0f} s" if rate > 0 else "unknown"
    ahead = f" (and up to {retries} retries)" if retries else ""
    return f"{done} pages done, {queued} queued{ahead}, {items} items, {rate:.1f} pages/s, about {left} left"


def format_refresh(stats: Mapping[str, Any]) -> str:
    """What the listing decided so far: pages fetched (new or changed), revalidated, carried over."""
    fetched = int(stats.get(keys.PAGES_FETCHED, 0))
    revalidated = int(stats.get(keys.PAGES_REVALIDATED, 0))
    carried = int(stats.get(keys.PAGES_CARRIED, 0))
    return f"lecture pages: {fetched} fetched, {revalidated} revalidated, {carried} carried over"


def budget_summary(stats: Mapping[str, Any]) -> dict[str, int] | None:
    """The page budget's account from a crawl's statistics, as the run report holds it: the budget, the
    lecture pages fetched, those waiting (by why: new, changed, stale) and the crawls still needed at this
    budget for every waiting lecture's page, none new meanwhile (-1 when the budget buys no page); None
    for a crawl without a budget."""
    budget = int(stats.get(keys.PAGE_BUDGET, 0) or 0)
    if budget <= 0:
        return None
    new, changed, stale = (int(stats.get(key, 0) or 0) for key in keys.PAGES_WAITING)
    fetched = int(stats.get(keys.PAGES_FETCHED, 0) or 0) + int(stats.get(keys.PAGES_REVALIDATED, 0) or 0)
    per_night = int(stats.get(keys.PAGE_BUDGET_LECTURES, 0) or 0)
    waiting = new + changed + stale
    nights = math.ceil(waiting / per_night) if per_night > 0 else (0 if waiting == 0 else -1)
    return {
        "budget": budget,
        "fetched": fetched,
        "waiting_new": new,
        "waiting_changed": changed,
        "waiting_stale": stale,
        "nights": nights,
        "waiting": waiting,
    }


def format_budget(stats: Mapping[str, Any]) -> str:
    """What a page budget left for later crawls: how many lectures wait for their page (new, changed,
    stale) and how many nights that is at this budget; empty for a crawl without a budget."""
    summary = budget_summary(stats)
    if summary is None:
        return ""
    nights = f"{summary['nights']} more night(s) at this budget" if summary["nights"] >= 0 else "never at it"
    return (
        "page budget {budget}: {fetched} lecture pages fetched, {waiting} wait ({waiting_new} new, "
        "{waiting_changed} changed, {waiting_stale} stale): ".format_map(summary)
        + nights
    )


class ProgressLine:
    def __init__(self, crawler: Crawler, interval: float) -> None:
        self.crawler = crawler
        self.interval = interval
        self.started = time.monotonic()
        self.task: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProgressLine:
        interval = crawler.settings.getfloat("PROGRESS_INTERVAL")
        if not crawler.settings.getbool("PROGRESS_ENABLED") or interval <= 0:
            raise NotConfigured("PROGRESS_ENABLED is off")
        extension = cls(crawler, interval)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        self.started = time.monotonic()
        self.task = create_looping_call(self.report)
        self.task.start(self.interval, now=False)

    def report(self) -> None:
        stats = self.crawler.stats.get_stats()
        done = int(stats.get("response_received_count", 0) or 0)
        items = int(stats.get("item_scraped_count", 0) or 0)
        engine = self.crawler.engine
        scheduler = engine.scheduler if engine is not None else None
        queued = len(scheduler) if scheduler is not None and hasattr(scheduler, "__len__") else 0
        backoff = crawl_backoff(self.crawler)
        outlook = backoff.outlook() if backoff is not None else None
        line = format_progress(done, queued, items, time.monotonic() - self.started, outlook)
        budget = format_budget(stats)
        logger.info(f"{line}; {format_refresh(stats)}" + (f"; {budget}" if budget else ""))

    def spider_closed(self, spider: Spider) -> None:
        if self.task is not None and self.task.running:
            self.task.stop()
