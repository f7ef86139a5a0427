"""The crawl's counters, kept in the stage so that a resumed crawl is judged whole.

A crawl killed near its end resumes where it stopped; without this the quality gate would compute its
rates over the pages fetched after the resume alone. Every few seconds (and at close) the counters are
written atomically to ``<stage>/stats-<worker>.json``; a crawl that opens an unfinished stage adds the
counters of the part before it to its own when it closes. The file moves aside with its finished stage.

The earlier part's counters are exact, whenever the kill came:

- what a lecture's outcome counted (``stats_keys.STAGED_PREFIXES``: pages fetched, failed, read without
  their JSON...) is staged with the lecture's line and counted from the stage, not from the snapshot: a
  lecture staged after the last snapshot is counted, and one counted but not staged (its item in flight
  at the kill) is done, and counted, again by the resumed part only;
- what the listing counts (``stats_keys.RECOUNTED_PREFIXES``) is counted whole again by the resumed part,
  which reads the listing from its first page: the earlier part's figures are dropped;
- every other counter (requests, retries, bytes) is the snapshot's, added.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from crawler import stats_keys as keys
from crawler.state.fsutil import write_json_atomic
from crawler.state.layout import StateDir
from crawler.state.stage_index import staged_counts

if TYPE_CHECKING:
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

logger = logging.getLogger(__name__)
RESUMED_PARTS = "crawl/resumed_parts"
# Statistics of one process, not of the crawl's work: never added across a resume.
PER_PROCESS = (
    "memusage/",
    "elapsed_time_seconds",
    "start_time",
    "finish_time",
    "finish_reason",
    "log_count/",
)


# A counter's value: Scrapy's statistics also hold times and texts, which are never counters.
Number = int | float


def _is_counter(value: object, key: str) -> TypeGuard[Number]:
    return isinstance(value, int | float) and not isinstance(value, bool) and not key.startswith(PER_PROCESS)


def _counters(stats: Mapping[str, object]) -> dict[str, Number]:
    return {k: v for k, v in stats.items() if _is_counter(v, k)}


def add_counters(earlier: Mapping[str, object], current: Mapping[str, object]) -> dict[str, object]:
    """``current`` with every numeric counter of ``earlier`` added in (times and memory are not)."""
    merged = dict(current)
    for key, value in _counters(earlier).items():
        mine = merged.get(key, 0)
        if _is_counter(mine, key):
            merged[key] = mine + value
    return merged


def earlier_part(snapshot: Mapping[str, Number], staged: Mapping[str, int]) -> dict[str, Number]:
    """The counters of a crawl's part before a resume: the snapshot's, less what the resumed part counts
    whole again (the listing) and what the stage counts exactly (lecture outcomes), plus the latter."""
    kept = {
        k: v
        for k, v in snapshot.items()
        if not k.startswith(keys.RECOUNTED_PREFIXES) and not k.startswith(keys.STAGED_PREFIXES)
    }
    return {**kept, **{k: v for k, v in staged.items() if v}}


class CrawlStatsSnapshot:
    def __init__(self, crawler: Crawler, path: Path, interval: float) -> None:
        self.crawler = crawler
        self.path = path
        self.interval = interval
        self.earlier: dict[str, Number] = {}
        self.task: AsyncioLoopingCall | LoopingCall | None = None
        self.state_dir: Path | None = None
        self.worker = "main"

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlStatsSnapshot:
        settings = crawler.settings
        interval = settings.getfloat("CRAWL_STATS_INTERVAL")
        if not settings.getbool("CRAWL_STATS_ENABLED") or interval <= 0:
            raise NotConfigured("CRAWL_STATS_ENABLED is off")
        state_dir = Path(settings["STAGE_STATE_DIR"])
        path = StateDir(state_dir).crawl_stats(settings["STAGE_WORKER"])
        extension = cls(crawler, path, interval)
        extension.state_dir = state_dir
        extension.worker = settings["STAGE_WORKER"]
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self) -> None:
        # The stage pipeline has opened the stage by now: a finished one was moved aside, so a snapshot
        # and lecture lines still here belong to the unfinished crawl this one resumes.
        snapshot: dict[str, Number] = {}
        if self.path.is_file():
            try:
                loaded = json.loads(self.path.read_text(encoding="utf-8"))
                snapshot = _counters(loaded) if isinstance(loaded, dict) else {}
            except (OSError, ValueError) as exc:
                logger.warning("Ignoring unreadable crawl statistics %s: %s", self.path, exc)
        staged = staged_counts(self.state_dir, self.worker) if self.state_dir is not None else {}
        if snapshot or staged:
            parts = int(snapshot.get(RESUMED_PARTS, 0))
            self.earlier = earlier_part(snapshot, staged)
            self.earlier[RESUMED_PARTS] = parts + 1
        self.task = create_looping_call(self.write)
        self.task.start(self.interval, now=False)

    def write(self) -> None:
        whole = add_counters(self.earlier, _counters(self.crawler.stats.get_stats()))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self.path, whole, sort_keys=True)
        except OSError as exc:
            logger.warning("Could not keep the crawl statistics in %s: %s", self.path, exc)

    def spider_closed(self) -> None:
        if self.task is not None and self.task.running:
            self.task.stop()
        stats = self.crawler.stats
        # The same sums as the snapshots': a counter this part left unset or set to something that is not
        # a number (Scrapy's memusage extension does) is not a sum to add to.
        merged = add_counters(self.earlier, stats.get_stats())
        for key in self.earlier:
            if key == RESUMED_PARTS:
                stats.set_value(key, self.earlier[key])
            elif key in merged:
                stats.set_value(key, merged[key])
        self.earlier = {}
        self.write()
