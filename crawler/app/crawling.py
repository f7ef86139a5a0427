"""The crawl as a library: the Scrapy settings of a crawl into a state directory, one crawl run in this
process and what it reports (:class:`CrawlResult`, ``crawl-report.json``), and the published release made
the base of its refresh. ``eventcrawl crawl``, ``run`` and ``demo`` call it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scrapy.settings import Settings

from crawler import __version__
from crawler import stats_keys as keys
from crawler.json_types import JsonObject
from crawler.schema import lecture_order
from crawler.state.fsutil import read_json_file, write_json_atomic
from crawler.state.layout import StateDir

SPIDER_NAME = "underline"
# Settings a dataset's provenance records: the ones that change what or how politely was fetched.
PROVENANCE_SETTINGS = (
    "USER_AGENT",
    "ROBOTSTXT_OBEY",
    "DOWNLOAD_DELAY",
    "CONCURRENT_REQUESTS_PER_DOMAIN",
    "AUTOTHROTTLE_ENABLED",
    "HTTPCACHE_ENABLED",
    "UNDERLINE_WEB_BASE",
    "UNDERLINE_API_BASE",
    "UNDERLINE_REFRESH",
)
# Our own server on loopback: politeness delays would only slow a crawl of it down.
LOOPBACK_CRAWL_SETTINGS: dict[str, int | bool | str] = {
    "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False,
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "LOG_LEVEL": "WARNING",
}

Overrides = Mapping[str, Any] | Iterable[tuple[str, Any]]


@dataclass(frozen=True)
class CrawlResult:
    """How a crawl ended: Scrapy's finish reason, its statistics and the settings that shaped it."""

    reason: str
    # Scrapy's statistics (counts, and a few times and texts) and the settings' values, as they are.
    stats: dict[str, object]
    settings: dict[str, object]

    def count(self, key: str) -> int:
        value = self.stats.get(key, 0)
        return int(value) if isinstance(value, int | float) else 0

    @property
    def finished(self) -> bool:
        return self.reason == "finished"

    @property
    def lectures(self) -> int:
        return self.count(keys.STAGE_LECTURES)

    def empty_events(self) -> list[str]:
        """One line per crawled event whose listing named no lecture, with the HTTP status it gave."""
        lines = []
        for key, status in sorted(self.stats.items()):
            if key.startswith(keys.LISTING_STATUS_PREFIX):
                event = key[len(keys.LISTING_STATUS_PREFIX) :]
                # The site said of the event itself that it is there (kept back) or gone (withdrawn).
                settled = (keys.LISTED_PREFIX, keys.EVENT_KEPT_BACK_PREFIX, keys.EVENT_GONE_PREFIX)
                if not any(self.stats.get(prefix + event) for prefix in settled):
                    lines.append(f"event {event} lists no lectures (the API answered HTTP {status})")
        return lines

    def kept_back_events(self) -> list[str]:
        """The events whose listing could not be read whole: their rows stay as last published."""
        prefix = keys.EVENT_KEPT_BACK_PREFIX
        return sorted((k[len(prefix) :] for k in self.stats if k.startswith(prefix)), key=lecture_order)

    def pages(self) -> str:
        """What the crawl asked of the site, and what its pace means in wall time for the host."""
        fetched = self.count(keys.PAGES_FETCHED)
        revalidated = self.count(keys.PAGES_REVALIDATED)
        carried = self.count(keys.PAGES_CARRIED)
        requests = self.count(keys.REQUESTS_SENT)
        # The delay the crawl ran with (a report's value, not a Scrapy setting read).
        found = self.settings.get("DOWNLOAD_DELAY")
        delay = float(found) if isinstance(found, int | float | str) and found else 0.0
        pace = f", ~{requests * delay / 60:.0f} min at {1 / delay:g} req/s" if delay > 0 else ""
        return (
            f"{fetched} pages fetched, {revalidated} revalidated, {carried} carried over; "
            f"{requests} requests{pace}"
        )

    def explain(self) -> str:
        """One line on why a crawl did not finish, for the operator."""
        if self.reason == "finished":
            return "the crawl finished"
        empty = self.empty_events()
        if empty:
            return "; ".join(empty)
        if self.reason == keys.LISTING_UNBOUNDED_REASON:
            return (
                "an event's listing did not end (see the log); nothing may be published from this crawl. "
                "If the event really has that many lectures, raise UNDERLINE_MAX_LISTING_PAGES"
            )
        if self.reason == keys.LISTING_INCOMPLETE_REASON:
            events = ", ".join(self.kept_back_events())
            return (
                f"the crawl could not read the whole lecture listing{f' of event {events}' if events else ''}"
                "; nothing may be published from it, and the next crawl resumes it"
            )
        if self.reason == "shutdown":
            return "the crawl was stopped (SIGTERM or Ctrl-C); the next crawl resumes where this one stopped"
        if self.reason == "closespider_timeout":
            return (
                "the crawl ran out of its time (CLOSESPIDER_TIMEOUT); the next crawl resumes where it stopped"
            )
        if not self.stats.get("response_received_count") and self.stats.get("downloader/exception_count"):
            return "the site could not be reached; the next crawl resumes where this one stopped"
        return f"the crawl ended with {self.reason!r}; the next crawl resumes where this one stopped"


REMOTE_CONTROL = "scrapy.extensions.remote_control.RemoteControl"


def crawl_settings(
    state_dir: Path,
    *,
    web_base: str | None = None,
    api_base: str | None = None,
    overrides: Overrides = (),
) -> Settings:
    """The Scrapy settings of a crawl into ``state_dir``: the project's, then the caller's overrides."""
    from scrapy.utils.project import get_project_settings

    # Outside a checkout there is no scrapy.cfg to name the settings module.
    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "crawler.settings")
    settings = get_project_settings()
    state_dir = Path(state_dir).resolve()
    settings.set("STAGE_STATE_DIR", str(state_dir), priority="cmdline")
    settings.set("HTTPCACHE_DIR", str(StateDir(state_dir).http_cache), priority="cmdline")
    if web_base:
        settings.set("UNDERLINE_WEB_BASE", web_base, priority="cmdline")
    if api_base:
        settings.set("UNDERLINE_API_BASE", api_base, priority="cmdline")
    pairs = overrides.items() if isinstance(overrides, Mapping) else overrides
    for key, value in pairs:
        settings.set(key, value, priority="cmdline")
    if not settings.getbool("REMOTE_CONTROL_ENABLED"):
        # Scrapy imports every extension its settings name, even one set to None, before it learns the
        # extension is off; this one imports aiohttp and builds its TLS contexts, a quarter of a second
        # at the start of every crawl. Only a name absent from both dicts is never imported.
        for name in ("EXTENSIONS_BASE", "EXTENSIONS"):
            extensions = {k: v for k, v in settings.getdict(name).items() if k != REMOTE_CONTROL}
            settings.set(name, extensions, priority=settings.getpriority(name) or "project")
    return settings


def crawl(
    *,
    event_ids: Sequence[str],
    state_dir: Path,
    web_base: str | None = None,
    api_base: str | None = None,
    overrides: Overrides = (),
    release_dir: Path | None = None,
) -> CrawlResult:
    """Run the spider in this process (once: Twisted's reactor cannot restart) and report on it.
    ``release_dir``: the release this crawl will be published onto, the base of its refresh for every
    lecture the state's stage lacks (see :func:`base_on_release`)."""
    from scrapy.crawler import CrawlerProcess

    state_dir = Path(state_dir).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    if release_dir is not None:
        base_on_release(state_dir, release_dir)
    settings = crawl_settings(state_dir, web_base=web_base, api_base=api_base, overrides=overrides)
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SPIDER_NAME)
    process.crawl(crawler, event_ids=",".join(event_ids))
    process.start()
    assert crawler.stats is not None
    # A resumed crawl's counters include the parts before the resume (extensions/crawl_stats.py).
    stats = dict(crawler.stats.get_stats())
    used = {key: crawler.settings.get(key) for key in PROVENANCE_SETTINGS}
    result = CrawlResult(reason=str(stats.get("finish_reason", "unknown")), stats=stats, settings=used)
    write_crawl_report(state_dir, result, list(event_ids))
    return result


def base_on_release(state_dir: Path, release_dir: Path) -> int:
    """Make the published release the base of the next crawl's refresh for the live lectures the state's
    stage lacks (a lost or fresh state, an event kept back, an event first crawled by another state): the
    crawl carries their published rows, its listing fields updated, instead of publishing its listing's
    fields alone over them, and asks whether they are still on the site before any leaves. Returns the
    rows the base holds."""
    from crawler.publish.manifest import read_manifest
    from crawler.publish.previous import read_previous_release
    from crawler.state.previous_stage import refresh_base_ids, write_release_base

    if read_manifest(release_dir) is None:
        return write_release_base(state_dir, [])
    previous = read_previous_release(release_dir)
    have = refresh_base_ids(state_dir)
    states = previous.states()
    lacking = {i for i, s in states.items() if not s.withdrawn and i not in have}
    events = sorted({states[i].event_id for i in lacking}, key=lecture_order)
    rows = (
        (lec.values() for lec in previous.lectures_of([event]) if lec.lecture_id in lacking)
        for event in events
    )
    return write_release_base(state_dir, rows)


def write_crawl_report(state_dir: Path, result: CrawlResult, event_ids: list[str]) -> Path:
    report = {
        "event_ids": event_ids,
        "finish_reason": result.reason,
        "crawler_version": __version__,
        "settings": result.settings,
        "stats": result.stats,
    }
    return write_json_atomic(StateDir.of(state_dir).crawl_report, report, sort_keys=True)


def read_crawl_report(state_dir: Path) -> JsonObject:
    path = StateDir.of(state_dir).crawl_report
    if not path.exists():
        return {}
    report = read_json_file(
        path, recovery=f"remove it and crawl again (`eventcrawl crawl --state {state_dir}`)"
    )
    return report if isinstance(report, dict) else {}
