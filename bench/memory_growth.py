"""Where a crawl's memory goes: the crawler's spider in this process, its state measured as it runs.

``python -m bench.memory_growth --base URL --state DIR [--every 500] [--out FILE]`` crawls the replica
at URL with politeness off. Every ``--every`` responses it reads the process's resident memory and the
deep size (objects reachable from it, each counted once) of what the crawl keeps: the spider's listed
lectures, the scheduler's request queue, the duplicate filter, every item pipeline and the stats. It
prints the sample with the highest resident memory and the last one, as JSON. Comparing two site sizes
shows which of them grows with the number of lectures. ``--tracemalloc N`` also lists the N allocation
sites that grew most between the spider's start and the peak (several times slower).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tracemalloc
from collections.abc import Iterable, Sequence, Sized
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

_PAGE = os.sysconf("SC_PAGE_SIZE")
_SKIP = (type, ModuleType, FunctionType)


def rss_mib() -> float:
    with open("/proc/self/statm", encoding="ascii") as fh:
        return int(fh.read().split()[1]) * _PAGE / 2**20


def deep_size(roots: Iterable[Any], exclude: Iterable[Any] = ()) -> int:
    """Bytes of every object reachable from ``roots`` (classes, modules and functions not followed)."""
    seen = {id(obj) for obj in exclude}
    stack = list(roots)
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _SKIP):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


def _holders(crawler: Any) -> dict[str, tuple[list[Any], list[Any]]]:
    """What to size: name -> (roots, objects not to follow from them). Each holder is sized without the
    others' big parts, so a string both listed and queued counts where the traversal meets it first."""
    engine = crawler.engine
    spider = engine.spider if engine is not None else None
    scheduler = engine._slot.scheduler if engine is not None and engine._slot is not None else None
    shared: list[Any] = [crawler, engine, spider, crawler.stats, crawler.settings, crawler.signals]
    if engine is not None:
        shared += [engine.downloader, engine.scraper]
    listed = getattr(spider, "listed", {})
    out: dict[str, tuple[list[Any], list[Any]]] = {"spider.listed": ([listed], shared)}
    if scheduler is not None:
        out["scheduler queue (requests)"] = ([scheduler.mqs], [*shared, scheduler, listed])
        out["duplicate filter"] = ([scheduler.df], [*shared, scheduler])
    if engine is not None:
        out["downloader (slots, middlewares)"] = (
            [engine.downloader],
            [s for s in shared if s is not engine.downloader],
        )
        out["scraper (responses, items in progress)"] = ([engine.scraper.slot], shared)
        for pipe in engine.scraper.itemproc.middlewares:
            # Attribute by attribute: which of a pipeline's structures grows.
            for attr, value in vars(pipe).items():
                if attr != "stats":
                    out[f"{type(pipe).__name__}.{attr}"] = ([value], shared)
    out["stats"] = ([crawler.stats.get_stats()], [])
    return out


def run(base: str, state: Path, every: int, top: int, overrides: Sequence[str]) -> dict[str, Any]:
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    from crawler.app.crawling import LOOPBACK_CRAWL_SETTINGS, crawl_settings

    state = state.resolve()
    state.mkdir(parents=True, exist_ok=True)
    settings = crawl_settings(state, web_base=base, api_base=base, overrides=LOOPBACK_CRAWL_SETTINGS)
    for text in overrides:
        key, _, value = text.partition("=")
        settings.set(key.strip(), value, priority="cmdline")
    process = CrawlerProcess(settings)
    crawler = process.create_crawler("underline")
    if top:
        tracemalloc.start(6)
    samples: list[dict[str, Any]] = []
    marks: dict[str, Any] = {"responses": 0, "start": None, "peak_snapshot": None, "peak_rss": 0.0}

    def sample(label: str) -> None:
        # Resident memory first: sizing allocates a large set of its own.
        resident = round(rss_mib(), 1)
        sizes = {
            name: round(deep_size(roots, exclude) / 2**20, 2)
            for name, (roots, exclude) in _holders(crawler).items()
        }
        scheduler = crawler.engine._slot.scheduler if crawler.engine and crawler.engine._slot else None
        samples.append(
            {
                "at": label,
                "responses": marks["responses"],
                "rss_mib": resident,
                "requests_queued": len(scheduler) if isinstance(scheduler, Sized) else None,
                "deep_mib": sizes,
            }
        )
        if top and samples[-1]["rss_mib"] > marks["peak_rss"]:
            marks["peak_rss"] = samples[-1]["rss_mib"]
            marks["peak_snapshot"] = tracemalloc.take_snapshot()

    def opened(spider: Any) -> None:
        if top:
            marks["start"] = tracemalloc.take_snapshot()

    def received(response: Any, request: Any, spider: Any) -> None:
        marks["responses"] += 1
        if marks["responses"] % every == 0:
            sample(f"response {marks['responses']}")

    def idle(spider: Any) -> None:
        sample("idle")

    crawler.signals.connect(opened, signal=signals.spider_opened)
    crawler.signals.connect(received, signal=signals.response_received)
    crawler.signals.connect(idle, signal=signals.spider_idle)
    process.crawl(crawler, event_id="502")
    process.start()
    result: dict[str, Any] = {
        "responses": marks["responses"],
        "peak": max(samples, key=lambda s: s["rss_mib"]) if samples else None,
        "last": samples[-1] if samples else None,
        "samples": samples,
    }
    if top and marks["start"] is not None and marks["peak_snapshot"] is not None:
        grown = marks["peak_snapshot"].compare_to(marks["start"], "traceback")
        result["grown_sites"] = [
            {"kib": round(s.size_diff / 1024), "blocks": s.count_diff, "where": _where(s.traceback)}
            for s in grown[:top]
        ]
    return result


def _where(trace: tracemalloc.Traceback) -> str:
    mine = [f for f in trace if "/crawler/" in f.filename or "/scrapy/" in f.filename] or list(trace)
    return " <- ".join(f"{_short(f.filename)}:{f.lineno}" for f in reversed(mine[-3:]))


def _short(filename: str) -> str:
    for marker in ("/crawler/", "/scrapy/", "/twisted/", "/lib/python3"):
        if marker in filename:
            return marker.strip("/") + "/" + filename.split(marker, 1)[1]
    return filename


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.memory_growth")
    parser.add_argument("--base", required=True)
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--tracemalloc", dest="top", type=int, default=0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("-s", dest="settings", action="append", default=[])
    args = parser.parse_args(argv)
    result = run(args.base, args.state, args.every, args.top, args.settings)
    text = json.dumps(result, indent=2)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
