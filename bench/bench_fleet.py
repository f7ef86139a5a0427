"""Fleet throughput: one crawl worker against three on one Redis frontier, over several hosts.

    python bench/bench_fleet.py [--hosts 3] [--lectures 120] [--delays 0.1,0.005] [--workers 3]
                                [--redis redis://HOST:PORT/DB]

Each host is a replica process on its own loopback address (127.0.0.1, 127.0.0.2, ...): different host names,
so Scrapy gives each its own download slot and the frontier its own pacing key, as for different sites. The
crawl lists the event on the first host and fetches lecture *i* from host ``i mod hosts`` (this module is
also the spider module of the workers: :class:`MultiHostSpider` replaces ``underline``). Every configuration
crawls into a fresh state directory under a fresh frontier prefix; ``eventcrawl crawl`` runs as a user runs
it. Without ``--redis`` a throwaway ``redis-server`` is started.

For each per-host delay it prints lecture pages per second (pages / time from the first request to the last,
as the replicas logged them; process start-up excluded) for a plain single-process crawl, one frontier
worker and ``--workers`` frontier workers, the ratio of the last two, and the smallest gap between two
requests to one host (the politeness check: never under the delay) and the CPU seconds the workers used.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import Crawler

from crawler.spiders.underline import UnderlineSpider

REPO = Path(__file__).resolve().parents[1]
SPIDER_MODULE = "bench.bench_fleet"


class MultiHostSpider(UnderlineSpider):
    """The crawler's spider, with lecture pages spread over ``BENCH_WEB_BASES``."""

    name = "underline"
    web_bases: list[str]

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> MultiHostSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, MultiHostSpider)
        spider.web_bases = [b.rstrip("/") for b in crawler.settings.getlist("BENCH_WEB_BASES")]
        hosts = {urlsplit(b).hostname or "" for b in spider.web_bases}
        spider.allowed_domains = sorted(set(spider.allowed_domains) | hosts)
        return spider

    def parse_listing(self, response: Any, page: int) -> Iterator[Any]:
        for output in super().parse_listing(response, page):
            if (
                isinstance(output, scrapy.Request)
                and output.callback == self.parse_lecture
                and self.web_bases
            ):
                base = self.web_bases[int(output.cb_kwargs["lecture_id"]) % len(self.web_bases)]
                output = output.replace(url=base + urlsplit(output.url).path)
            yield output


@dataclass
class Host:
    base_url: str
    process: subprocess.Popen[str]
    log: Path
    seen: int = 0

    def new_requests(self) -> list[dict[str, Any]]:
        """Requests logged since the last call."""
        lines = self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []
        fresh = [json.loads(line) for line in lines[self.seen :] if line.strip()]
        self.seen = len(lines)
        return fresh


@contextmanager
def replica_host(address: str, lectures: int, workdir: Path) -> Iterator[Host]:
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "requests.jsonl"
    cmd = [sys.executable, "-m", "crawler.replica", "--host", address, "--port", "0"]
    cmd += ["--lectures", str(lectures), "--request-log", str(log)]
    with (workdir / "replica.err").open("w") as err:
        process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=REPO, env=_env())
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        if not first.startswith(f"http://{address}:"):
            raise RuntimeError(f"the replica on {address} did not start: {first!r}")
        yield Host(first, process, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def redis_url(given: str | None, workdir: Path) -> Iterator[str]:
    if given:
        yield given
        return
    sys.path.insert(0, str(REPO))
    from tests.support.redis_server import running_redis

    with running_redis(workdir / "redis") as server:
        yield server.url()


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}


def crawl_settings(delay: float, bases: Sequence[str]) -> list[str]:
    pairs = {
        "SPIDER_MODULES": SPIDER_MODULE,
        "BENCH_WEB_BASES": ",".join(bases),
        "DOWNLOAD_DELAY": str(delay),
        "AUTOTHROTTLE_ENABLED": "False",
        "CONCURRENT_REQUESTS": "16",
        "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
        "LOG_LEVEL": "WARNING",
    }
    return [arg for key, value in pairs.items() for arg in ("-s", f"{key}={value}")]


@dataclass
class Result:
    label: str
    pages: int
    unique_pages: int
    span_s: float
    wall_s: float
    min_gap_s: float
    cpu_s: float
    failed: int

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.span_s if self.span_s > 0 else 0.0


def run_configuration(
    label: str, hosts: list[Host], workers: int, frontier: str | None, delay: float, workdir: Path
) -> Result:
    state = workdir / "state"
    bases = [h.base_url for h in hosts]
    cmd = [sys.executable, "-m", "crawler.app.cli", "crawl", "--web-base", bases[0], "--api-base", bases[0]]
    cmd += ["--state", str(state), *crawl_settings(delay, bases)]
    if frontier:
        cmd += ["--frontier", frontier, "-s", f"FRONTIER_KEY_PREFIX=bench-{workdir.name}"]
    for host in hosts:
        host.new_requests()
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with ExitStack() as stack:
        procs = []
        for i in range(workers):
            out = stack.enter_context((workdir / f"w{i}.out").open("w"))
            err = stack.enter_context((workdir / f"w{i}.err").open("w"))
            worker = ["--worker", f"w{i}"] if frontier else []
            procs.append(subprocess.Popen(cmd + worker, stdout=out, stderr=err, cwd=REPO, env=_env()))
        codes = [p.wait(timeout=900) for p in procs]
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    per_host = [h.new_requests() for h in hosts]
    everything = sorted(r["time"] for reqs in per_host for r in reqs)
    pages = [r["path"] for reqs in per_host for r in reqs if r["path"].startswith("/lecture/")]
    gaps = [
        b - a
        for reqs in per_host
        for a, b in zip(sorted(r["time"] for r in reqs), sorted(r["time"] for r in reqs)[1:], strict=False)
    ]
    return Result(
        label=label,
        pages=len(pages),
        unique_pages=len(set(pages)),
        span_s=everything[-1] - everything[0] if everything else 0.0,
        wall_s=wall,
        min_gap_s=min(gaps) if gaps else 0.0,
        cpu_s=cpu,
        failed=sum(code != 0 for code in codes),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--hosts", type=int, default=3, help="replica hosts (default 3)")
    parser.add_argument("--lectures", type=int, default=120, help="lectures of the site (default 120)")
    parser.add_argument("--delays", default="0.1,0.005", help="per-host delays to try, comma-separated")
    parser.add_argument("--workers", type=int, default=3, help="workers of the fleet (default 3)")
    parser.add_argument("--redis", help="an existing Redis to use (default: start a throwaway one)")
    args = parser.parse_args(argv)
    delays = [float(d) for d in args.delays.split(",") if d.strip()]
    work = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    print(f"{args.hosts} hosts, {args.lectures} lectures, {os.cpu_count()} CPUs; work in {work}", flush=True)
    with ExitStack() as stack:
        hosts = [
            stack.enter_context(replica_host(f"127.0.0.{i + 1}", args.lectures, work / f"host{i + 1}"))
            for i in range(args.hosts)
        ]
        frontier = stack.enter_context(redis_url(args.redis, work))
        for delay in delays:
            results = []
            configurations = [
                ("single process", 1, None),
                ("1 frontier worker", 1, frontier),
                (f"{args.workers} frontier workers", args.workers, frontier),
            ]
            for n, (label, workers, url) in enumerate(configurations):
                workdir = work / f"delay{delay}-{n}"
                workdir.mkdir(parents=True)
                results.append(run_configuration(label, hosts, workers, url, delay, workdir))
            budget = f"{args.hosts / delay:.0f}" if delay else "unlimited"
            print(f"\nper-host delay {delay} s (politeness budget {budget} pages/s)")
            head = ("pages/s", "pages", "unique", "span s", "wall s", "min gap", "CPU s")
            widths = (8, 6, 6, 7, 7, 8, 6)
            print(f"  {'':22} " + " ".join(f"{h:>{w}}" for h, w in zip(head, widths, strict=True)))
            for r in results:
                flag = f"  ({r.failed} workers exited non-zero)" if r.failed else ""
                print(
                    f"  {r.label:22} {r.pages_per_s:8.1f} {r.pages:6d} {r.unique_pages:6d} {r.span_s:7.2f} "
                    f"{r.wall_s:7.2f} {r.min_gap_s:8.3f} {r.cpu_s:6.2f}{flag}"
                )
            one, fleet = results[1], results[2]
            ratio = fleet.pages_per_s / one.pages_per_s if one.pages_per_s else 0.0
            print(f"  {args.workers} workers / 1 worker: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
