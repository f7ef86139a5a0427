"""One crawl in this process, the crawler's spider or a baseline, with the same project settings.

``baseline`` fetches the same URLs through the project's settings and middlewares; ``bare`` fetches them
with Scrapy's defaults and stock filesystem HTTP cache (only identity, robots.txt, concurrency of requests
and items, and delays taken from the project's settings): what a plain Scrapy spider costs. ``same-job``
runs on the bare spider's settings and does the crawl's job on each lecture page as a user would write it
(``bench/same_job_spider.py``), its items written by Scrapy's JSON lines feed exporter to
``DIR/lectures.jsonl``.
``python -m bench.crawl_child --spider underline|baseline|bare|same-job --base URL --state DIR --out FILE
[--urls FILE] [-s KEY=VALUE ...]`` writes the crawl's Scrapy stats and effective settings to FILE.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SPIDERS = ("underline", "baseline", "bare", "same-job", "underline-no-pipelines", "underline-no-aliases")
# The bare and same-job spiders run on Scrapy's defaults plus these, taken from the project's crawl
# settings: the same identity, robots.txt, concurrency and delays, and Scrapy's stock filesystem HTTP cache.
BARE_SETTINGS = (
    "USER_AGENT",
    "ROBOTSTXT_OBEY",
    "DOWNLOAD_DELAY",
    "CONCURRENT_REQUESTS",
    "CONCURRENT_REQUESTS_PER_DOMAIN",
    "CONCURRENT_ITEMS",
    "AUTOTHROTTLE_ENABLED",
    "HTTPCACHE_ENABLED",
    "HTTPCACHE_DIR",
    "DOWNLOAD_TIMEOUT",
    "LOG_LEVEL",
)
# Settings that must be equal for the two spiders to be compared (the baseline has no item pipelines).
COMPARED_SETTINGS = (
    "USER_AGENT",
    "ROBOTSTXT_OBEY",
    "DOWNLOAD_DELAY",
    "CONCURRENT_REQUESTS",
    "CONCURRENT_REQUESTS_PER_DOMAIN",
    "CONCURRENT_ITEMS",
    "AUTOTHROTTLE_ENABLED",
    "HTTPCACHE_ENABLED",
    "HTTPCACHE_POLICY",
    "HTTPCACHE_STORAGE",
    "DOWNLOADER_MIDDLEWARES",
    "SPIDER_MIDDLEWARES",
    "EXTENSIONS",
    "DOWNLOAD_HANDLERS",
    "TWISTED_REACTOR",
)


def _without_aliases() -> type:
    """The crawler's spider minus the aliases it stages for the lecture links on each page."""
    from crawler.items import LectureItem
    from crawler.spiders.underline import UnderlineSpider

    class NoAliasSpider(UnderlineSpider):
        async def parse_lecture(self, response: Any, *args: Any, **kwargs: Any) -> Any:
            async for out in super().parse_lecture(response, *args, **kwargs):
                if isinstance(out, LectureItem):
                    out.page_aliases = []
                yield out

    return NoAliasSpider


def run(spider: str, base: str, state: Path, urls: Path | None, overrides: Sequence[str]) -> dict[str, Any]:
    from scrapy.crawler import CrawlerProcess

    from crawler.app.crawling import crawl_settings

    state = state.resolve()
    state.mkdir(parents=True, exist_ok=True)
    # The same settings as ``eventcrawl crawl`` gives the spider.
    pairs = [(k.strip(), v) for k, _, v in (text.partition("=") for text in overrides)]
    settings = crawl_settings(state, web_base=base, api_base=base, overrides=pairs)
    if spider in ("underline-no-pipelines", "underline-no-aliases"):
        # Diagnostics: where the crawler's time goes beyond the baseline's.
        if spider == "underline-no-pipelines":
            settings.set("ITEM_PIPELINES", {}, priority="cmdline")
        process = CrawlerProcess(settings)
        crawler = process.create_crawler(
            _without_aliases() if spider == "underline-no-aliases" else "underline"
        )
        process.crawl(crawler, event_id="502")
    elif spider in ("bare", "same-job"):
        from scrapy.settings import Settings

        from bench.baseline_spider import BaselineSpider
        from bench.same_job_spider import SameJobSpider

        if urls is None:
            raise SystemExit(f"--urls is required for the {spider} spider")
        settings = Settings({key: settings[key] for key in BARE_SETTINGS}, priority="cmdline")
        if spider == "same-job":
            # What ``scrapy crawl same-job -O lectures.jsonl`` sets; UTF-8 as a new project's settings.py.
            feed = {"format": "jsonlines", "encoding": "utf-8", "overwrite": True}
            settings.set("FEEDS", {str(state / "lectures.jsonl"): feed}, priority="cmdline")
        process = CrawlerProcess(settings)
        crawler = process.create_crawler(SameJobSpider if spider == "same-job" else BaselineSpider)
        process.crawl(crawler, urls_file=str(urls))
    elif spider == "baseline":
        from bench.baseline_spider import BaselineSpider

        if urls is None:
            raise SystemExit("--urls is required for the baseline")
        settings.set("ITEM_PIPELINES", {}, priority="cmdline")
        process = CrawlerProcess(settings)
        crawler = process.create_crawler(BaselineSpider)
        process.crawl(crawler, urls_file=str(urls))
    else:
        process = CrawlerProcess(settings)
        crawler = process.create_crawler("underline")
        process.crawl(crawler, event_id="502")
    # CPU seconds at the first lecture page and when the crawl goes idle (every page processed).
    marks: dict[str, float] = {}
    pages = [0]

    def cpu_now() -> tuple[float, float]:
        """User and user + system CPU seconds so far."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        user, system = _workers_cpu(crawler)
        return usage.ru_utime + user, usage.ru_utime + usage.ru_stime + user + system

    def received(response: Any, request: Any, spider: Any) -> None:
        if "/lecture/" in response.url:
            pages[0] += 1
            if "first" not in marks:  # reading the clock costs: once, not on every page
                marks["first_user"], marks["first"] = cpu_now()

    def idle(spider: Any) -> None:
        if "first" in marks and "idle" not in marks:
            marks["idle_user"], marks["idle"] = cpu_now()
            marks["pages"] = pages[0]

    from scrapy import signals

    crawler.signals.connect(received, signal=signals.response_received)
    crawler.signals.connect(idle, signal=signals.spider_idle)
    process.start()
    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    used = {key: _plain(crawler.settings, key) for key in COMPARED_SETTINGS}
    steady = steady_user = None
    if "idle" in marks and marks["pages"] > 1:
        # Start-up and shutdown left out; the first page's own processing is inside the window.
        steady = (marks["idle"] - marks["first"]) * 1000 / marks["pages"]
        # User time alone: the system time of a cache's file writes follows the disk and its other users.
        steady_user = (marks["idle_user"] - marks["first_user"]) * 1000 / marks["pages"]
    return {
        "spider": spider,
        "stats": {k: (v if isinstance(v, int | float | str) else str(v)) for k, v in stats.items()},
        "settings": used,
        "steady_cpu_ms_per_page": steady,
        "steady_user_cpu_ms_per_page": steady_user,
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _workers_cpu(crawler: Any) -> tuple[float, float]:
    """User and system CPU seconds used so far by the crawl's worker processes (they read pages for it),
    from /proc."""
    from crawler.extensions.workers import crawler_pool

    workers = crawler_pool(crawler)
    user = system = 0.0
    for pid in workers.pids() if workers is not None else []:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime and stime, fields 14 and 15 of stat(5), in clock ticks.
        user += int(fields[11]) / os.sysconf("SC_CLK_TCK")
        system += int(fields[12]) / os.sysconf("SC_CLK_TCK")
    return user, system


def _plain(settings: Any, key: str) -> Any:
    """A setting as JSON: component dictionaries merged with their ``_BASE`` and sorted."""
    from scrapy.settings import BaseSettings

    value = settings.get(key)
    if isinstance(value, BaseSettings):
        items = sorted((str(k), v) for k, v in settings.getwithbase(key).copy_to_dict().items())
        return json.loads(json.dumps(dict(items), default=str))
    return json.loads(json.dumps(value, default=str))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.crawl_child")
    parser.add_argument("--spider", choices=SPIDERS, required=True)
    parser.add_argument("--base", required=True)
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--urls", type=Path)
    parser.add_argument("-s", dest="settings", action="append", default=[])
    args = parser.parse_args(argv)
    result = run(args.spider, args.base, args.state, args.urls, args.settings)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0 if result["stats"].get("finish_reason") == "finished" else 1


if __name__ == "__main__":
    raise SystemExit(main())
