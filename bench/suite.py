"""The benchmark suite behind ``bench/run``: every figure against a baseline measured in the same run.

Sections (``--only`` picks some): ``cost`` (the project's crawl vs a bare Scrapy spider with Scrapy's stock
filesystem HTTP cache, same pages and settings, where the crawl's CPU goes, and pairs of the crawl and a
hand-written Scrapy spider doing the same job), ``throughput`` (crawler
vs a fetch-only spider), ``cleaning`` (parse and pipelines vs trafilatura on stored pages), ``quality``
(text-quality and duplicate figures, ``bench.quality.section`` when present), ``publish``
(``bench/bench_publish.py``, when present),
``scale`` (1,000 vs 10,000 lectures: CPU, wall time and peak memory), ``polite`` (default settings' request
rate), ``recrawl`` (a second crawl through the HTTP cache) and ``anthology`` (linking 30,000 synthetic
lectures to 30,000 synthetic Anthology papers, against reading and normalising them, and against 3,000),
``catalogue`` (publishing synthetic stages of 3,740 lectures over 4 events and 30,740 over 32: peak
memory and CPU and wall time per lecture on the first night and on a night that changed one percent of
the lectures, and the bytes that night rewrites) and
``catalogue_crawl`` (two nights of ``crawl --page-budget 2500`` and ``publish`` on replica catalogues of
3,740 lectures of 4 events and 30,740 of 32: the crawl's peak memory and time per lecture, the pages a
night asks, what night 1 publishes and whether night 2 asks a page again) and ``transcripts``
(``bench.bench_transcripts.section``: the peak memory of publishing 3,740 and 30,740 lectures with their
subtitle tracks) and ``slides_read`` (``bench.slides_read``: reading the replica's slide decks and posters
with ``crawler.slides.read_pdf``, redaction included, against pypdfium2 alone on the same files) and
``slides_publish`` (``bench.bench_transcripts.slides_section``: the peak memory and the time of publishing
3,740 and 30,740 lectures with their slide decks and posters) and ``slides_crawl``
(``bench.bench_slides_crawl.section``: a replica crawl's requests and bytes per lecture with ``--slides``
against without, and the documents a second night asks).
Prints one table and writes every figure, with the commit it measured, as JSON
(``bench/results/latest.json``), from which ``python -m bench.readme_table`` renders the table of
``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import compileall
import itertools
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import procs

RESULTS = procs.REPO / "bench" / "results" / "latest.json"
SECTIONS = (
    "cost",
    "throughput",
    "cleaning",
    "quality",
    "publish",
    "scale",
    "polite",
    "recrawl",
    "anthology",
    "catalogue",
    "catalogue_crawl",
    "transcripts",
    "slides_read",
    "slides_publish",
    "slides_crawl",
)
# Publishing 8 times the lectures may take at most this many times the peak memory, and this many times
# the CPU per lecture.
CATALOGUE_MEMORY_TARGET = 1.5
CATALOGUE_TIME_TARGET = 1.2
# Crawling 8.2 times the lectures at a page budget may take at most this many times the crawl's peak
# memory; a night asks at most the budget's pages, and night 1 publishes at least this share of the
# listing's fields right.
CATALOGUE_CRAWL_MEMORY_TARGET = 1.5
CATALOGUE_CRAWL_BUDGET = 2500
CATALOGUE_CRAWL_FIELDS_TARGET = 0.995
# Linking 10 times as many lectures against 10 times as many papers may cost at most this many times
# as much per lecture (comparing all pairs would cost 10 times as much).
ANTHOLOGY_SCALING_TARGET = 2.0
# The project's crawl may take at most this many times the wall time of a bare Scrapy spider, and this
# many times its CPU time (the crawl's worker processes counted).
COST_TARGET = 1.5
COST_CPU_TARGET = 1.4
# Against a hand-written Scrapy spider doing the same job on each lecture page (bench/same_job_spider.py),
# the crawl may take at most this many times its CPU from the first lecture page to idle.
SAME_JOB_CPU_TARGET = 1.3
# Peak memory at 10,000 lectures at most this many times that at 1,000.
MEMORY_TARGET = 1.3
# The replica stamps a request when it has read it: arrival jitter on loopback, not a shorter delay.
GAP_TOLERANCE_S = 0.01
# ABBA order: a drift of the machine's speed during the runs hits both spiders alike.
ABBA = ("underline", "baseline", "baseline", "underline")


@dataclass
class Figure:
    figure: str
    value: float | str | None
    unit: str = ""
    baseline: float | str | None = None
    baseline_label: str = ""
    ratio: float | None = None
    target: str = "-"
    met: bool | None = None


@dataclass
class Section:
    figures: list[Figure] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or not baseline:
        return None
    return value / baseline


def _lecture_times(requests: Sequence[dict[str, Any]]) -> list[float]:
    return sorted(r["time"] for r in requests if r["path"].startswith("/lecture/"))


def steady_rate(times: Sequence[float]) -> float | None:
    """Requests per second between the first and the last of ``times`` (start-up and shutdown excluded)."""
    if len(times) < 2 or times[-1] <= times[0]:
        return None
    return (len(times) - 1) / (times[-1] - times[0])


# -- 1. throughput -------------------------------------------------------------------------------


def _listing_urls(base: str, lectures: int) -> list[str]:
    from crawler.spiders.underline import UnderlineSpider

    spider = UnderlineSpider(event_id="502")
    spider.api_base = base
    spider.page_size = 100
    return [spider.listing_url(page) for page in range(1, max(1, math.ceil(lectures / 100)) + 1)]


def lecture_urls_file(base: str, work: Path, truth: Sequence[dict[str, Any]]) -> Path:
    """The listing and lecture URLs a fetch-only spider asks for: what the crawler's spider fetches."""
    urls = work / "urls.txt"
    urls.write_text("\n".join(_listing_urls(base, len(truth)) + [t["url"] for t in truth]) + "\n")
    return urls


def _child_crawl(
    rep: Any, work: Path, urls: Path, spider: str, index: int
) -> tuple[procs.Measured, dict[str, Any], list[float]]:
    """One crawl in a child process (``bench.crawl_child``): how it ran, what it reported, and the times
    of the lecture pages the replica answered during it."""
    before = len(rep.requests())
    out = work / f"run{index}-{spider}.json"
    cmd = [sys.executable, "-m", "bench.crawl_child", "--spider", spider, "--base", rep.base_url]
    cmd += ["--state", str(work / f"state{index}"), "--out", str(out), "--urls", str(urls)]
    measured = procs.measure([*cmd, *procs.fast_settings()], workdir=work, name=f"run{index}")
    result = json.loads(out.read_text()) if out.exists() else {"stats": {}, "settings": {}}
    return measured, result, _lecture_times(rep.requests()[before:])


def throughput(work: Path, lectures: int, reps: int) -> Section:
    section = Section()
    runs: list[dict[str, Any]] = []
    with procs.replica(work / "replica", "--lectures", str(lectures)) as rep:
        truth = rep.ground_truth()
        urls = lecture_urls_file(rep.base_url, work, truth)

        def crawl(spider: str, index: int) -> dict[str, Any]:
            measured, result, times = _child_crawl(rep, work, urls, spider, index)
            stats = result["stats"]
            elapsed = stats.get("elapsed_time_seconds")
            return {
                "spider": spider,
                "returncode": measured.returncode,
                "pages": len(times),
                "pages_per_s": steady_rate(times),
                "responses_per_elapsed_s": stats.get("response_received_count", 0) / elapsed
                if elapsed
                else None,
                "cpu_ms_per_page": result.get("steady_cpu_ms_per_page"),
                "process_cpu_ms_per_page": measured.cpu_s * 1000 / len(times) if times else None,
                "wall_s": measured.wall_s,
                "max_rss_mib": measured.max_rss_mib,
                "staged": stats.get("stage/lectures"),
                "settings": result["settings"],
            }

        crawl("baseline", 0)  # warms the replica's page cache; not counted
        order = [ABBA[i % 4] for i in range(2 * reps)]
        runs = [crawl(spider, i + 1) for i, spider in enumerate(order)]
        diagnostics = [
            crawl(s, 100 + i) for i, s in enumerate(("underline-no-pipelines", "underline-no-aliases"))
        ]
    ours = [r for r in runs if r["spider"] == "underline"]
    base = [r for r in runs if r["spider"] == "baseline"]
    failed = [
        r
        for r in runs + diagnostics
        if r["returncode"] != 0
        or r["pages"] != len(truth)
        or (r["spider"] in ("underline", "underline-no-aliases") and r["staged"] != len(truth))
    ]
    if failed:
        section.notes.append(f"{len(failed)} throughput run(s) failed or fetched a different page count")
    best = max((r["pages_per_s"] or 0 for r in ours), default=0)
    best_base = max((r["pages_per_s"] or 0 for r in base), default=0)
    ratio = _ratio(best, best_base)
    section.figures.append(
        Figure(
            f"crawl throughput, politeness off, {len(truth)} lecture pages (best of {reps})",
            best,
            "pages/s",
            best_base,
            "fetch-only spider",
            ratio,
            ">= 0.80",
            ratio is not None and ratio >= 0.8,
        )
    )
    cpu = statistics.median(r["cpu_ms_per_page"] for r in ours)
    cpu_base = statistics.median(r["cpu_ms_per_page"] for r in base)
    cpu_ratio = _ratio(cpu, cpu_base)
    section.figures.append(
        Figure(
            "crawl process CPU per lecture page, steady state (median)",
            cpu,
            "ms",
            cpu_base,
            "fetch-only spider",
            cpu_ratio,
            "<= 1.25",
            cpu_ratio is not None and cpu_ratio <= 1.25,
        )
    )
    by_name = {r["spider"]: r["cpu_ms_per_page"] for r in diagnostics}
    no_pipes, no_alias = by_name.get("underline-no-pipelines"), by_name.get("underline-no-aliases")
    if no_pipes is not None and no_alias is not None:
        section.details["cpu_breakdown_ms_per_page"] = {
            "fetching (the fetch-only spider)": cpu_base,
            "spider callbacks: parse, build items": no_pipes - cpu_base,
            "item pipelines (all items)": cpu - no_pipes,
            "crawler total": cpu,
            "aliases staged from page links (spider + pipelines)": cpu - no_alias,
        }
    compared = {k: v for k, v in ours[0]["settings"].items()} if ours else {}
    differing = [k for k, v in compared.items() if base and base[0]["settings"].get(k) != v]
    if differing:
        section.notes.append(f"settings differ between the spiders: {', '.join(differing)}")
    section.details["settings_compared"] = sorted(compared)
    section.details["settings_differing"] = differing
    for run in runs + diagnostics:
        del run["settings"]
    section.details.update(runs=runs, diagnostics=diagnostics, lectures=len(truth))
    return section


# -- 1b. crawl cost ---------------------------------------------------------------------------------


def crawl_cost(work: Path, lectures: int, reps: int, pairs: int) -> Section:
    """Wall and CPU time of the project's crawl against a bare Scrapy spider with Scrapy's stock filesystem
    HTTP cache fetching the same URLs with the same settings (politeness off), each from an empty cache, in
    ABBA order, best of ``reps`` each; a fetch-only spider through the project's own stack after each pair
    says what fetching and storing alone cost it (see :func:`_cost_breakdown`). Then ``pairs`` pairs of the
    crawl and a hand-written spider doing the same job on the same pages (see :func:`_same_job`)."""
    section = Section()
    with procs.replica(work / "replica", "--lectures", str(lectures)) as rep:
        truth = rep.ground_truth()
        urls = lecture_urls_file(rep.base_url, work, truth)

        def crawl(spider: str, index: int) -> dict[str, Any]:
            measured, result, times = _child_crawl(rep, work, urls, spider, index)
            shutil.rmtree(work / f"state{index}", ignore_errors=True)
            # The disk writes of one crawl (the stock cache's seven files a page, then their removal) are
            # flushed before the next starts, or they land in its system time.
            os.sync()
            return {
                "spider": spider,
                "returncode": measured.returncode,
                "pages": len(times),
                "wall_s": measured.wall_s,
                "cpu_s": measured.cpu_s,
                # The stock cache's seven files a page are mostly system time, which varies with the disk.
                "user_s": measured.user_s,
                "system_s": measured.system_s,
                "max_rss_mib": measured.max_rss_mib,
                "staged": result["stats"].get("stage/lectures"),
                "items": result["stats"].get("item_scraped_count"),
                # From the first lecture page to idle, the crawl's worker processes included.
                "steady_cpu_ms_per_page": result.get("steady_cpu_ms_per_page"),
                "steady_user_cpu_ms_per_page": result.get("steady_user_cpu_ms_per_page"),
            }

        crawl("bare", 0)  # warms the replica and the file cache; not counted
        # ABBA pairs of the crawl and the bare spider, a fetch-only spider through the project's own
        # middlewares, cache and worker after each pair: what fetching and storing alone cost it.
        order: list[str] = []
        for i in range(2 * reps):
            order += [("underline", "bare", "bare", "underline")[i % 4]] + (["baseline"] if i % 2 else [])
        runs = [crawl(spider, i + 1) for i, spider in enumerate(order)]
        # The pairs alternate which spider goes first (ABBA over pairs), so a drift of the machine's
        # speed does not favour either; each pair's ratio is taken from two crawls a few seconds apart.
        same_job_order = [
            spider
            for i in range(pairs)
            for spider in (("underline", "same-job"), ("same-job", "underline"))[i % 2]
        ]
        paired = [crawl(spider, len(order) + i + 1) for i, spider in enumerate(same_job_order)]
    ours = [r for r in runs if r["spider"] == "underline"]
    bare = [r for r in runs if r["spider"] == "bare"]
    fetching = [r for r in runs if r["spider"] == "baseline"]
    failed = [r for r in runs if r["returncode"] != 0 or r["pages"] != len(truth)]
    failed += [r for r in ours if r["staged"] != len(truth)]
    if failed:
        section.notes.append(f"{len(failed)} crawl-cost run(s) failed or fetched a different page count")
    wall, wall_bare = min(r["wall_s"] for r in ours), min(r["wall_s"] for r in bare)
    cpu, cpu_bare = min(r["cpu_s"] for r in ours), min(r["cpu_s"] for r in bare)
    ratio, cpu_ratio = _ratio(wall, wall_bare), _ratio(cpu, cpu_bare)
    section.figures += [
        Figure(
            f"crawl cost: first crawl, {len(truth)} lecture pages, no politeness, wall (best of {reps})",
            wall,
            "s",
            wall_bare,
            "bare Scrapy spider + stock HTTP cache",
            ratio,
            f"<= {COST_TARGET:.2f}",
            ratio is not None and ratio <= COST_TARGET,
        ),
        Figure(
            "crawl cost: CPU time of the same crawls (best)",
            cpu,
            "s",
            cpu_bare,
            "bare Scrapy spider + stock HTTP cache",
            cpu_ratio,
            f"<= {COST_CPU_TARGET:.2f}",
            cpu_ratio is not None and cpu_ratio <= COST_CPU_TARGET,
        ),
    ]
    # The stock cache's seven files a page make the bare spider's system time follow the disk (0.7 to
    # 1.5 s in one hour on one machine, its user time steady): user time alone shows the work each does.
    user, user_bare = min(r["user_s"] for r in ours), min(r["user_s"] for r in bare)
    section.figures.append(
        Figure(
            "crawl cost: user CPU time of the same crawls (best; the disk's system time left out)",
            user,
            "s",
            user_bare,
            "bare Scrapy spider + stock HTTP cache",
            _ratio(user, user_bare),
            "-",
            None,
        )
    )
    section.figures += _cost_breakdown(cpu, cpu_bare, min(r["cpu_s"] for r in fetching), len(truth))
    same_job_figures, same_job_details, same_job_failed = _same_job(paired, len(truth))
    section.figures += same_job_figures
    if same_job_failed:
        section.notes.append(
            f"{same_job_failed} same-job pair(s) left out: a crawl failed, fetched a different page count "
            "or wrote a different number of items"
        )
    section.details = {
        "runs": runs,
        "lectures": len(truth),
        "bare_system_s": [min(r["system_s"] for r in bare), max(r["system_s"] for r in bare)],
        "same_job": same_job_details,
    }
    return section


def _same_job(runs: Sequence[dict[str, Any]], pages: int) -> tuple[list[Figure], dict[str, Any], int]:
    """The crawl against a hand-written Scrapy spider doing the same job (``bench/same_job_spider.py``: the
    bare spider's settings, each lecture page's JSON read, its visible text joined, a JSON line written
    by Scrapy's feed exporter), from consecutive pairs of ``runs``. Each figure's ratio is the median of
    the pairs' own ratios, which a slow moment of the machine moves in one pair only; the value and the
    baseline are each spider's median. The CPU is counted from the first lecture page to idle, worker
    processes included, as ``bench.crawl_child`` reports it: the same span for both spiders. Returns the
    figures, the pairs' details and how many pairs were left out."""
    pairs, failed = [], 0
    for first, second in zip(runs[::2], runs[1::2], strict=True):
        ours, theirs = (first, second) if first["spider"] == "underline" else (second, first)
        cpu, cpu_theirs = ours["steady_cpu_ms_per_page"], theirs["steady_cpu_ms_per_page"]
        user, user_theirs = ours["steady_user_cpu_ms_per_page"], theirs["steady_user_cpu_ms_per_page"]
        if (
            any(r["returncode"] != 0 or r["pages"] != pages for r in (ours, theirs))
            or ours["staged"] != pages
            or theirs["items"] != pages
            or not (cpu and cpu_theirs and user and user_theirs)
        ):
            failed += 1
            continue
        pairs.append(
            {
                "first": first["spider"],
                "cpu": [cpu, cpu_theirs],
                "cpu_ratio": cpu / cpu_theirs,
                "user_cpu": [user, user_theirs],
                "user_cpu_ratio": user / user_theirs,
                "process_cpu": [ours["cpu_s"], theirs["cpu_s"]],
                "process_cpu_ratio": ours["cpu_s"] / theirs["cpu_s"],
                "wall": [ours["wall_s"], theirs["wall_s"]],
                "wall_ratio": ours["wall_s"] / theirs["wall_s"],
            }
        )
    details: dict[str, Any] = {"pairs": pairs, "pairs_left_out": failed}
    if not pairs:
        return [], details, failed
    label = "hand-written Scrapy spider doing the same job, same pages and stock HTTP cache"

    def figure(what: str, how: str, key: str, unit: str, target: float | None = None) -> Figure:
        ratios = [p[f"{key}_ratio"] for p in pairs]
        ratio = statistics.median(ratios)
        details[f"{key}_ratio"] = {"median": ratio, "min": min(ratios), "max": max(ratios)}
        return Figure(
            f"crawl cost: {what} against a hand-written same-job spider, {how} (ratio: median of "
            f"{len(pairs)} pairs' ratios, pairs {min(ratios):.2f} to {max(ratios):.2f}; values: medians)",
            statistics.median(p[key][0] for p in pairs),
            unit,
            statistics.median(p[key][1] for p in pairs),
            label,
            ratio,
            "-" if target is None else f"<= {target:.2f}",
            None if target is None else ratio <= target,
        )

    figures = [
        figure(
            "CPU",
            f"{pages} lecture pages, first lecture page to idle, worker processes included",
            "cpu",
            "ms/page",
            target=SAME_JOB_CPU_TARGET,
        ),
        # The stock cache's files make the same-job spider's system time follow the disk, as the bare
        # spider's: user time alone shows the work each does.
        figure("user CPU", "the same window, the disk's system time left out", "user_cpu", "ms/page"),
        figure("CPU", "whole process, start-up and shutdown included", "process_cpu", "s"),
        figure("wall time", "whole process", "wall", "s"),
    ]
    return figures, details, failed


def _cost_breakdown(cpu: float, cpu_bare: float, cpu_fetching: float, pages: int) -> list[Figure]:
    """Where the crawl's CPU goes against the target: fetching and storing the pages (a fetch-only spider
    through the project's middlewares, cache and worker, which strips each page of personal data before
    storing it) against the bare spider; what the crawl adds to that, per page, and what a page's own
    work costs as pure functions in one process (parsed, cleaned, hashed, signed: no Scrapy, worker or
    file), each against the CPU per page the target leaves beyond fetching and storing. A page's own
    work above 1 means the target is lower than the cost of that work, whatever runs it."""
    from bench.cleaning import page_work_ms_per_page

    allowed = (COST_CPU_TARGET * cpu_bare - cpu_fetching) * 1000 / pages if pages else None
    added = (cpu - cpu_fetching) * 1000 / pages if pages else None
    work = page_work_ms_per_page(pages)
    left = f"CPU per page the <= {COST_CPU_TARGET:.2f} target leaves beyond fetching and storing"
    return [
        Figure(
            "crawl cost: fetching and storing alone, CPU (a fetch-only spider through the project's "
            "middlewares, cache and worker; best)",
            cpu_fetching,
            "s",
            cpu_bare,
            "bare Scrapy spider + stock HTTP cache",
            _ratio(cpu_fetching, cpu_bare),
            "-",
            None,
        ),
        Figure(
            "crawl cost: what the crawl adds to fetching and storing, CPU per page (best against best)",
            added,
            "ms/page",
            allowed,
            left,
            _ratio(added, allowed),
            "-",
            None,
        ),
        Figure(
            "crawl cost: a page's own work alone, as pure functions in one process (parsed, cleaned, "
            "hashed, signed; best of 3)",
            work,
            "ms/page",
            allowed,
            left,
            _ratio(work, allowed),
            "-",
            None,
        ),
    ]


# -- 2. cleaning ----------------------------------------------------------------------------------


def cleaning(work: Path, passes: int) -> Section:
    from bench import cleaning as bench_cleaning

    result = bench_cleaning.run(passes=passes)
    section = Section(details=result)
    ours, theirs = result["ours_ms_per_page"], result["trafilatura_ms_per_page"]
    section.figures.append(
        Figure(
            f"cleaning alone, {result['pages']} stored pages (parse + normalize + boilerplate + hash)",
            ours,
            "ms/page",
            theirs,
            "trafilatura.extract",
            _ratio(ours, theirs),
        )
    )
    section.figures.append(
        Figure(
            "cleaned text equal to the ground truth",
            f"{result['ours_text_exact']}/{result['pages']}",
            baseline=f"{result['trafilatura_with_welcome_text']}/{result['pages']} keep welcome text",
            baseline_label="trafilatura",
            target="all",
            met=result["ours_text_exact"] == result["pages"],
        )
    )
    return section


# -- 2b. text quality and duplicates (bench/quality.py) ------------------------------------------


def quality(work: Path, quick: bool) -> Section:
    try:
        from bench import quality as bench_quality
    except ImportError as exc:
        return Section(notes=[f"bench/quality.py could not be imported ({exc}): quality skipped"])
    run = getattr(bench_quality, "section", None)
    if run is None:
        return Section(notes=["bench.quality has no section(): quality skipped"])
    result: Section = run(work, quick)
    return result


# -- 2c. publishing transcripts (bench/bench_transcripts.py) ---------------------------------------


def transcripts(work: Path, quick: bool) -> Section:
    """Reading subtitle files (tracks per CPU-second against the libraries' own parse of the same files),
    then the peak memory of publishing transcripts at two sizes."""
    from bench import bench_transcripts, transcripts_parse

    files = transcripts_parse.realistic_files(60 if quick else 300)
    parsed = transcripts_parse.measure(files)
    ours, library = parsed["parse_subtitle_file"], parsed["library"]
    reading = Figure(
        f"subtitle files read into transcripts ({len(files)} files of 5-30 KB, WebVTT and SRT, rolling and"
        " human; decode, sniff, parse, clean, fold, redact), best of 3",
        ours["tracks_per_cpu_s"],
        "tracks/CPU-s",
        library["tracks_per_cpu_s"],
        "webvtt-py / srt parse alone, same files",
        parsed["ratio"],
    )
    names = {"webvtt": "WebVTT", "srt": "SRT"}
    against = [
        Figure(
            f"subtitle files read into transcripts, {label}: parse_subtitle_file's CPU (redaction on) against"
            " the library's own parse of the same files, best of 3",
            round(cpu["parse_subtitle_file_cpu_s"], 3),
            "CPU-s",
            round(cpu["library_cpu_s"], 3),
            "webvtt-py / srt parse alone, same files",
            cpu["cpu_ratio"],
            f"<= {transcripts_parse.MAX_CPU_RATIO}",
            cpu["cpu_ratio"] <= transcripts_parse.MAX_CPU_RATIO,
        )
        for label, cpu in [
            *((f"{names[fmt]} ({cpu['files']} files)", cpu) for fmt, cpu in parsed["by_format"].items()),
            (
                "both formats",
                {
                    "parse_subtitle_file_cpu_s": ours["cpu_s"],
                    "library_cpu_s": library["cpu_s"],
                    "cpu_ratio": parsed["cpu_ratio"],
                },
            ),
        ]
    ]
    result: Section = bench_transcripts.section(work, quick)
    result.figures[:0] = [reading, *against]
    result.details["parse"] = parsed
    return result


def slides_read(quick: bool) -> Section:
    """Reading slide decks and posters: ``read_pdf`` with ``redact_spoken`` on each page against
    pypdfium2 alone, over the replica's readable documents, CPU seconds (median of the rounds)."""
    from bench import slides_read as bench_slides

    documents = bench_slides.replica_documents(120 if quick else None)
    rounds = 3 if quick else 7
    measured = bench_slides.measure(documents, rounds)
    ours, alone = measured["read_pdf"], measured["pypdfium2"]
    files = f"{measured['documents']} replica decks and posters, {measured['pages']:,} pages"
    return Section(
        figures=[
            Figure(
                f"slides and posters read: read_pdf CPU, redaction included ({files}), median of {rounds}",
                ours["cpu_s"],
                "CPU-s",
                alone["cpu_s"],
                "pypdfium2 alone, same files",
                measured["cpu_ratio"],
                f"<= {bench_slides.MAX_CPU_RATIO}",
                measured["cpu_ratio"] <= bench_slides.MAX_CPU_RATIO,
            ),
            Figure(
                "slides and posters read: pages per CPU-second, redaction included",
                ours["pages_per_cpu_s"],
                "pages/CPU-s",
                alone["pages_per_cpu_s"],
                "pypdfium2 alone, same files",
                _ratio(ours["pages_per_cpu_s"], alone["pages_per_cpu_s"]),
            ),
        ],
        details=measured,
    )


# -- 3. publish (someone else's script) --------------------------------------------------------


def slides_publish(work: Path, quick: bool) -> Section:
    """The peak memory and the time of publishing slide decks and posters at two sizes."""
    from bench import bench_transcripts

    result: Section = bench_transcripts.slides_section(work, quick)
    return result


def slides_crawl(work: Path, quick: bool) -> Section:
    """A replica crawl's requests and bytes per lecture with its slides on, against without."""
    from bench import bench_slides_crawl

    result: Section = bench_slides_crawl.section(work, quick)
    return result


def publish_script(work: Path) -> Section:
    section = Section()
    script = procs.REPO / "bench" / "bench_publish.py"
    if not script.exists():
        section.notes.append("bench/bench_publish.py is not there: publish benchmark skipped")
        return section
    measured = procs.measure([sys.executable, str(script)], workdir=work, name="bench_publish", timeout=900)
    section.details = {
        "returncode": measured.returncode,
        "wall_s": measured.wall_s,
        "output": measured.stdout,
    }
    if measured.returncode != 0:
        section.notes.append(
            f"bench/bench_publish.py failed ({measured.returncode}): {measured.stderr[-500:]}"
        )
        return section
    publish = re.search(r"publish_release \(best of \d+\)\s+([\d.]+)s", measured.stdout)
    bare = re.search(r"bare pq\.write_table\s+([\d.]+)s", measured.stdout)
    records = re.search(r"^records\s+(\d+)", measured.stdout, re.MULTILINE)
    if publish and bare:
        value, baseline = float(publish[1]), float(bare[1])
        count = f"{int(records[1]):,} synthetic records" if records else "synthetic records"
        section.figures.append(
            Figure(
                f"publish_release, {count} (bench_publish.py)",
                value,
                "s",
                baseline,
                "bare pq.write_table",
                _ratio(value, baseline),
            )
        )
    else:
        section.figures.append(Figure("bench_publish.py", "see its output below"))
    return section


# -- 4. scale --------------------------------------------------------------------------------------


def _crawl_cmd(base: str, state: Path, *settings: str) -> list[str]:
    return procs.eventcrawl_cmd(
        "crawl", "--web-base", base, "--api-base", base, "--state", str(state), *settings
    )


def _report(state: Path) -> dict[str, Any]:
    path = state / "crawl-report.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"stats": {}, "settings": {}}


def scale_point(work: Path, lectures: int, startup_cpu_s: float = 0.0) -> dict[str, Any]:
    state = work / f"state-{lectures}"
    with procs.replica(work / f"replica-{lectures}", "--lectures", str(lectures)) as rep:
        expected = len(rep.ground_truth())
        crawl = procs.measure(
            _crawl_cmd(rep.base_url, state, *procs.fast_settings()), workdir=work, name=f"crawl-{lectures}"
        )
        base_url = rep.base_url
    stats = _report(state)["stats"]
    staged = int(stats.get("stage/lectures", 0))
    elapsed = float(stats.get("elapsed_time_seconds") or crawl.wall_s)
    publish = procs.measure(
        procs.eventcrawl_cmd(
            "publish", "--state", str(state), "--out", str(work / f"out-{lectures}"), "--name", "bench"
        ),
        workdir=work,
        name=f"publish-{lectures}",
    )
    published = re.search(r"published (\d+) lectures", publish.stdout)
    return {
        "lectures": lectures,
        "expected": expected,
        "staged": staged,
        "crawl_returncode": crawl.returncode,
        "crawl_elapsed_s": elapsed,
        "crawl_wall_s": crawl.wall_s,
        "crawl_cpu_s": crawl.cpu_s,
        "crawl_ms_per_lecture": elapsed * 1000 / staged if staged else None,
        "crawl_cpu_ms_per_lecture": (crawl.cpu_s - startup_cpu_s) * 1000 / staged if staged else None,
        "crawl_max_rss_mib": crawl.max_rss_mib,
        "near_duplicates_seen": stats.get("dedup/near_duplicate_seen", 0),
        "publish_returncode": publish.returncode,
        "published": int(published[1]) if published else None,
        "publish_wall_s": publish.wall_s,
        "publish_max_rss_mib": publish.max_rss_mib,
        "publish_error": publish.stderr[-800:] if publish.returncode else None,
        "base_url": base_url,
    }


def memory_growth(work: Path, lectures: int) -> dict[str, Any]:
    """The crawl's holders' deep sizes at the end of a crawl of ``lectures`` (``bench.memory_growth``)."""
    out = work / f"memory-{lectures}.json"
    with procs.replica(work / f"replica-mem-{lectures}", "--lectures", str(lectures)) as rep:
        cmd = [sys.executable, "-m", "bench.memory_growth", "--base", rep.base_url]
        cmd += ["--state", str(work / f"state-mem-{lectures}"), "--every", str(max(200, lectures // 5))]
        procs.measure([*cmd, "--out", str(out)], workdir=work, name=f"memory-{lectures}")
    return json.loads(out.read_text()) if out.exists() else {}


def startup_cpu(work: Path) -> float:
    """CPU seconds of ``eventcrawl crawl`` on a one-lecture site: start-up and shutdown, nearly no work."""
    with procs.replica(work / "replica-1", "--lectures", "1") as rep:
        crawl = procs.measure(
            _crawl_cmd(rep.base_url, work / "state-1", *procs.fast_settings()), workdir=work, name="crawl-1"
        )
    return crawl.cpu_s


def scale(work: Path, sizes: tuple[int, int], diagnose: bool, diagnose_sizes: tuple[int, int]) -> Section:
    section = Section()
    fixed = startup_cpu(work)
    small, large = (scale_point(work, n, fixed) for n in sizes)
    section.details = {"small": small, "large": large, "startup_cpu_s": fixed}
    for point in (small, large):
        if point["staged"] != point["expected"] or point["crawl_returncode"] != 0:
            section.notes.append(
                f"{point['lectures']:,} lectures: staged {point['staged']} of {point['expected']} "
                f"(crawl exit {point['crawl_returncode']})"
            )
        if point["publish_returncode"] != 0:
            section.notes.append(f"publish of {point['lectures']:,} failed: {point['publish_error']}")
    if large["near_duplicates_seen"]:
        section.notes.append(
            f"{large['near_duplicates_seen']:,} of the {large['staged']:,} lectures were flagged as "
            "near-duplicates: the synthesized lectures are copies of the real ones with a new title suffix"
        )
    n_small, n_large = (f"{n:,}" for n in sizes)
    t_ratio = _ratio(large["crawl_ms_per_lecture"], small["crawl_ms_per_lecture"])
    c_ratio = _ratio(large["crawl_cpu_ms_per_lecture"], small["crawl_cpu_ms_per_lecture"])
    m_ratio = _ratio(large["crawl_max_rss_mib"], small["crawl_max_rss_mib"])
    section.figures += [
        Figure(
            f"crawl CPU per lecture at {n_large} (vs {n_small}; start-up {fixed:.1f} s left out)",
            large["crawl_cpu_ms_per_lecture"],
            "ms",
            small["crawl_cpu_ms_per_lecture"],
            f"at {n_small}",
            c_ratio,
            "<= 1.20 (flat)",
            c_ratio is not None and c_ratio <= 1.2,
        ),
        Figure(
            f"crawl wall time per lecture at {n_large} (vs {n_small})",
            large["crawl_ms_per_lecture"],
            "ms",
            small["crawl_ms_per_lecture"],
            f"at {n_small}",
            t_ratio,
            "<= 1.20 (flat)",
            t_ratio is not None and t_ratio <= 1.2,
        ),
        Figure(
            f"crawl peak RSS at {n_large} (vs {n_small})",
            large["crawl_max_rss_mib"],
            "MiB",
            small["crawl_max_rss_mib"],
            f"at {n_small}",
            m_ratio,
            f"<= {MEMORY_TARGET:.2f}",
            m_ratio is not None and m_ratio <= MEMORY_TARGET,
        ),
        Figure(
            f"lectures staged at {n_large}",
            f"{large['staged']}/{large['expected']}",
            target="all",
            met=large["staged"] == large["expected"],
        ),
        Figure(
            f"publish wall time at {n_large} (vs {n_small})",
            large["publish_wall_s"],
            "s",
            small["publish_wall_s"],
            f"at {n_small}",
            _ratio(large["publish_wall_s"], small["publish_wall_s"]),
        ),
        Figure(
            f"publish peak RSS at {n_large} (vs {n_small})",
            large["publish_max_rss_mib"],
            "MiB",
            small["publish_max_rss_mib"],
            f"at {n_small}",
            _ratio(large["publish_max_rss_mib"], small["publish_max_rss_mib"]),
        ),
    ]
    missed = (c_ratio or 0) > 1.2 or (m_ratio or 0) > MEMORY_TARGET
    if diagnose or missed:
        grown = {n: memory_growth(work, n) for n in diagnose_sizes}
        section.details["what_grows_mib"] = _what_grows(grown, diagnose_sizes)
        section.details["memory_growth_peak"] = {n: g.get("peak") for n, g in grown.items()}
    return section


def _what_grows(grown: dict[int, dict[str, Any]], sizes: tuple[int, int]) -> dict[str, Any]:
    """Each holder's deep size at the end of both crawls, its largest during the larger one, and the
    growth per lecture between the two ends."""
    small, large = (grown.get(n, {}) for n in sizes)
    end_small, end_large = (g.get("last") or {} for g in (small, large))
    holders = sorted(set(end_small.get("deep_mib", {})) | set(end_large.get("deep_mib", {})))
    out: dict[str, Any] = {}
    for name in holders:
        a = end_small.get("deep_mib", {}).get(name, 0.0)
        b = end_large.get("deep_mib", {}).get(name, 0.0)
        most = max((s["deep_mib"].get(name, 0.0) for s in large.get("samples", [])), default=b)
        per = (b - a) * 1024 / (sizes[1] - sizes[0])
        out[name] = {
            f"end {sizes[0]}": a,
            f"end {sizes[1]}": b,
            f"max {sizes[1]}": most,
            "KiB/lecture": round(per, 2),
        }
    out["RSS"] = {
        f"end {sizes[0]}": end_small.get("rss_mib"),
        f"end {sizes[1]}": end_large.get("rss_mib"),
        f"max {sizes[1]}": max((s["rss_mib"] for s in large.get("samples", [])), default=None),
    }
    return out


# -- 5. the polite default ------------------------------------------------------------------------


def polite(work: Path, lectures: int, timeout_s: int) -> Section:
    section = Section()
    state = work / "state"
    with procs.replica(work / "replica", "--lectures", str(lectures)) as rep:
        crawl = procs.measure(
            _crawl_cmd(
                rep.base_url, state, "-s", f"CLOSESPIDER_TIMEOUT={timeout_s}", "-s", "LOG_LEVEL=WARNING"
            ),
            workdir=work,
            name="crawl",
        )
        requests = rep.requests()
    report = _report(state)
    delay = float(report["settings"].get("DOWNLOAD_DELAY") or 1.0)
    times = sorted(r["time"] for r in requests)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    rate = steady_rate(times)
    configured = 1 / delay
    ratio = _ratio(rate, configured)
    section.figures += [
        Figure(
            f"polite default: request rate over {timeout_s} s ({len(times)} requests)",
            rate,
            "req/s",
            configured,
            f"1 / DOWNLOAD_DELAY ({delay:g} s)",
            ratio,
            "0.90 - 1.00",
            ratio is not None and 0.9 <= ratio <= 1.0,
        ),
        Figure(
            "polite default: smallest gap between two requests (server clock)",
            min(gaps) if gaps else None,
            "s",
            delay,
            "DOWNLOAD_DELAY",
            _ratio(min(gaps) if gaps else None, delay),
            f">= 1.00 (-{GAP_TOLERANCE_S * 1000:g} ms)",
            bool(gaps) and min(gaps) >= delay - GAP_TOLERANCE_S,
        ),
    ]
    section.details = {
        "requests": len(times),
        "finish_reason": report.get("finish_reason"),
        "crawl_returncode": crawl.returncode,
        "median_gap_s": statistics.median(gaps) if gaps else None,
        "settings": report.get("settings"),
    }
    return section


# -- 6. re-crawl through the HTTP cache -----------------------------------------------------------


def _body_bytes(requests: Sequence[dict[str, Any]], base_url: str, lectures: int | None) -> int:
    """Body bytes the replica sent for ``requests``: the same site answers them again, in this process."""
    from crawler.replica.layout import build_site, load_records
    from crawler.replica.server import Router

    router = Router(build_site(load_records(), seed=0, lectures=lectures), base_url)
    total = 0
    for r in requests:
        if r["method"] != "GET" or r["status"] in (0, 304):
            continue
        answer = router.respond(
            r["path"], {"if-none-match": r["if_none_match"], "if-modified-since": r["if_modified_since"]}
        )
        total += len(answer.body)
    return total


def recrawl(work: Path, lectures: int | None) -> Section:
    section = Section()
    state = work / "state"
    extra = ("--lectures", str(lectures)) if lectures else ()
    crawls: list[dict[str, Any]] = []
    with procs.replica(work / "replica", *extra) as rep:
        before = 0
        for index in (1, 2):
            measured = procs.measure(
                _crawl_cmd(rep.base_url, state, *procs.fast_settings()), workdir=work, name=f"crawl{index}"
            )
            requests = rep.requests()[before:]
            before += len(requests)
            stats = _report(state)["stats"]
            crawls.append(
                {
                    "returncode": measured.returncode,
                    "requests": len(requests),
                    "answered_304": sum(r["status"] == 304 for r in requests),
                    "conditional": sum(bool(r["if_none_match"] or r["if_modified_since"]) for r in requests),
                    "body_bytes": _body_bytes(requests, rep.base_url, lectures),
                    "scrapy_response_bytes": stats.get("downloader/response_bytes"),
                    "elapsed_s": stats.get("elapsed_time_seconds"),
                    "wall_s": measured.wall_s,
                    "staged": stats.get("stage/lectures"),
                    "httpcache": {k: v for k, v in stats.items() if k.startswith("httpcache/")},
                }
            )
    first, second = crawls
    section.details = {"first": first, "second": second}
    section.figures += [
        Figure(
            "re-crawl through the HTTP cache: requests to the site",
            second["requests"],
            "requests",
            first["requests"],
            "first crawl",
            _ratio(second["requests"], first["requests"]),
        ),
        Figure(
            "re-crawl through the HTTP cache: answered 304 Not Modified",
            f"{second['answered_304']}/{second['requests']}",
            baseline=f"{first['answered_304']}/{first['requests']}",
            baseline_label="first crawl",
        ),
        Figure(
            "re-crawl through the HTTP cache: body bytes sent by the site",
            second["body_bytes"],
            "B",
            first["body_bytes"],
            "first crawl",
            _ratio(second["body_bytes"], first["body_bytes"]),
        ),
        Figure(
            "re-crawl through the HTTP cache: crawl time",
            second["elapsed_s"],
            "s",
            first["elapsed_s"],
            "first crawl",
            _ratio(second["elapsed_s"], first["elapsed_s"]),
        ),
    ]
    if first["staged"] != second["staged"]:
        section.notes.append(f"the re-crawl staged {second['staged']} lectures, the first {first['staged']}")
    return section


# -- 7. links to the ACL Anthology (bench/bench_anthology.py) ---------------------------------------


def anthology_point(work: Path, papers: int) -> dict[str, Any]:
    """One run of ``bench.bench_anthology`` in its own process: its JSON figures and its peak RSS."""
    out = work / f"anthology-{papers}.json"
    cmd = [sys.executable, "-m", "bench.bench_anthology", "--papers", str(papers), "--out", str(out)]
    measured = procs.measure(cmd, workdir=work, name=f"anthology-{papers}", timeout=1800)
    if measured.returncode != 0 or not out.exists():
        return {"error": measured.stderr[-800:], "returncode": measured.returncode}
    point: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    point["process_max_rss_mib"] = measured.max_rss_mib
    point["process_wall_s"] = measured.wall_s
    return point


def anthology(work: Path, sizes: tuple[int, int]) -> Section:
    section = Section()
    small, large = (anthology_point(work, n) for n in sizes)
    section.details = {"small": small, "large": large}
    for point in (small, large):
        if "error" in point:
            section.notes.append(f"bench/bench_anthology.py failed: {point['error']}")
            return section
    n_small, n_large = (f"{n:,}" for n in sizes)
    baseline = large["read_cpu_s"] + large["normalise_cpu_s"]
    per_lecture = _ratio(large["link_cpu_ms_per_lecture"], small["link_cpu_ms_per_lecture"])
    memory = _ratio(large["peak_rss_mib"], small["peak_rss_mib"])
    precision, recall = large["precision"], large["recall"]
    section.figures += [
        Figure(
            f"anthology links, {large['lectures']:,} lectures against {large['papers']:,} papers, CPU"
            " (index + match)",
            large["link_cpu_s"],
            "s",
            baseline,
            "read the XML, normalise every title, abstract and name once",
            _ratio(large["link_cpu_s"], baseline),
        ),
        Figure(
            f"anthology links, CPU per lecture at {n_large} (vs {n_small})",
            large["link_cpu_ms_per_lecture"],
            "ms",
            small["link_cpu_ms_per_lecture"],
            f"at {n_small}",
            per_lecture,
            f"<= {ANTHOLOGY_SCALING_TARGET:.2f} (all pairs: 10)",
            per_lecture is not None and per_lecture <= ANTHOLOGY_SCALING_TARGET,
        ),
        Figure(
            f"anthology links, peak RSS of the linking process at {n_large} (vs {n_small})",
            large["peak_rss_mib"],
            "MiB",
            small["peak_rss_mib"],
            f"at {n_small}",
            memory,
        ),
        Figure(
            f"anthology links, precision / recall on the synthetic {n_large}",
            f"{precision:.4f} / {recall:.4f}",
            target=">= 0.99 / 0.97",
            met=precision >= 0.99 and recall >= 0.97,
        ),
    ]
    return section


# -- the table -----------------------------------------------------------------------------------


def catalogue_point(work: Path, lectures: int, events: int) -> dict[str, Any]:
    """One run of ``bench.bench_catalogue`` in its own process (it publishes in children of its own)."""
    cmd = [sys.executable, "-m", "bench.bench_catalogue", "--lectures", str(lectures)]
    cmd += ["--events", str(events), "--work", str(work / f"catalogue-{lectures}")]
    measured = procs.measure(cmd, workdir=work, name=f"catalogue-{lectures}", timeout=3600)
    if measured.returncode != 0:
        return {"lectures": lectures, "events": events, "error": measured.stderr[-800:]}
    point: dict[str, Any] = json.loads(measured.stdout)
    return point


def _catalogue_failures(points: Sequence[dict[str, Any]]) -> list[str]:
    notes = []
    for point in points:
        for night in ("first", "second"):
            run = point.get(night) or {}
            if "error" in point or run.get("returncode"):
                notes.append(
                    f"catalogue of {point['lectures']:,}: {night} publish failed: "
                    f"{point.get('error') or run.get('error')}"
                )
    return notes


def _catalogue_night(small: dict[str, Any], large: dict[str, Any], night: str) -> list[Figure]:
    """Peak memory and CPU and wall time per lecture of one night, the large catalogue against the small."""
    label = "first publish" if night == "first" else "1% night"
    prefix = "" if night == "first" else "second_"
    at = f"{small['lectures']:,} lectures of {small['events']} events"
    memory = _ratio(large[night]["max_rss_mib"], small[night]["max_rss_mib"])
    cpu = _ratio(large[f"{prefix}cpu_per_lecture"], small[f"{prefix}cpu_per_lecture"])
    wall = _ratio(large[f"{prefix}seconds_per_lecture"], small[f"{prefix}seconds_per_lecture"])
    size = f"{large['lectures']:,} lectures of {large['events']} events"
    return [
        Figure(
            f"{label}: peak RSS, {size}",
            large[night]["max_rss_mib"],
            "MiB",
            small[night]["max_rss_mib"],
            at,
            memory,
            f"<= {CATALOGUE_MEMORY_TARGET:.2f}",
            memory is not None and memory <= CATALOGUE_MEMORY_TARGET,
        ),
        Figure(
            f"{label}: CPU per lecture, {size}",
            large[f"{prefix}cpu_per_lecture"] * 1000,
            "ms",
            small[f"{prefix}cpu_per_lecture"] * 1000,
            at,
            cpu,
            f"<= {CATALOGUE_TIME_TARGET:.2f}",
            cpu is not None and cpu <= CATALOGUE_TIME_TARGET,
        ),
        Figure(
            f"{label}: wall time per lecture, {size}",
            large[f"{prefix}seconds_per_lecture"] * 1000,
            "ms",
            small[f"{prefix}seconds_per_lecture"] * 1000,
            at,
            wall,
            f"<= {CATALOGUE_TIME_TARGET:.2f}",
            wall is not None and wall <= CATALOGUE_TIME_TARGET,
        ),
    ]


def catalogue(work: Path, points: tuple[tuple[int, int], tuple[int, int]]) -> Section:
    """Publishing synthetic stages of a few events and of many events of the same size: peak memory and
    CPU and wall time per lecture of the first publish and of a night that changed one percent of the
    lectures, the large catalogue against the small, and the bytes that night rewrites."""
    section = Section()
    small, large = (catalogue_point(work, lectures, events) for lectures, events in points)
    section.details = {"small": small, "large": large}
    section.notes += _catalogue_failures((small, large))
    if any(
        "error" in p or p["first"].get("returncode") or p["second"].get("returncode") for p in (small, large)
    ):
        return section
    section.figures += _catalogue_night(small, large, "first") + _catalogue_night(small, large, "second")
    section.figures.append(
        Figure(
            f"bytes a night that changed 1% of {large['lectures']:,} lectures rewrites (vs the release)",
            large["rewritten_bytes"] / 2**20,
            "MiB",
            large["release_bytes"] / 2**20,
            "release total",
            _ratio(large["rewritten_bytes"], large["release_bytes"]),
        )
    )
    section.notes.append(
        f"catalogue: the 1% night changed {large['changed_lectures']:,} lectures of the last event(s) and "
        f"rewrote {large['rewritten_files']} of {large['files']} files"
    )
    return section


def catalogue_crawl_point(work: Path, lectures: int, events: int, budget: int) -> dict[str, Any]:
    """One run of ``bench.bench_catalogue_crawl`` (two nights of crawl and publish) in its own process."""
    cmd = [sys.executable, "-m", "bench.bench_catalogue_crawl", "--lectures", str(lectures)]
    cmd += ["--events", str(events), "--budget", str(budget), "--work", str(work / f"crawl-{lectures}")]
    measured = procs.measure(cmd, workdir=work, name=f"catalogue-crawl-{lectures}", timeout=4 * 3600)
    if measured.returncode != 0:
        return {"lectures": lectures, "error": measured.stderr[-800:]}
    point: dict[str, Any] = json.loads(measured.stdout)
    return point


def catalogue_crawl(
    work: Path, sizes: tuple[tuple[int, int], tuple[int, int]], budget: int = CATALOGUE_CRAWL_BUDGET
) -> Section:
    """Two nights of ``crawl --page-budget`` then ``publish`` on replica catalogues of two sizes (lectures,
    events): the crawl's peak memory and wall time per lecture against the catalogue's size, the pages
    each night asks, and what night 1 publishes."""
    section = Section()
    small, large = (catalogue_crawl_point(work, n, events, budget) for n, events in sizes)
    section.details = {"small": small, "large": large}
    for point in (small, large):
        if "error" in point:
            section.notes.append(f"catalogue crawl of {point['lectures']:,}: {point['error']}")
            continue
        for n, night in enumerate(point["nights"], start=1):
            for step in ("crawl", "publish"):
                if night[f"{step}_returncode"]:
                    section.notes.append(
                        f"catalogue crawl of {point['lectures']:,}, night {n}: {step} exited "
                        f"{night[f'{step}_returncode']}: {night[f'{step}_error']}"
                    )
    if any("error" in p for p in (small, large)):
        return section
    (n_small, e_small), (n_large, e_large) = sizes
    label = f"at {n_small:,}/{e_small} events"

    def peak(point: dict[str, Any]) -> float:
        return max(night["crawl_max_rss_mib"] for night in point["nights"])

    memory = _ratio(peak(large), peak(small))
    wall = [
        _ratio(a, b)
        for a, b in zip(large["crawl_seconds_per_lecture"], small["crawl_seconds_per_lecture"], strict=True)
    ]
    asked = max(night["pages_requested"] for night in large["nights"])
    first = large["nights"][0]
    release = first.get("release") or {}
    right = release.get("listing_fields_right")
    published = f"{first['published'] or 0}/{large['lectures']}"
    section.figures += [
        Figure(
            f"crawl peak RSS, {n_large:,} lectures of {e_large} events, budget {budget:,} (vs {n_small:,})",
            peak(large),
            "MiB",
            peak(small),
            label,
            memory,
            f"<= {CATALOGUE_CRAWL_MEMORY_TARGET:.2f}",
            memory is not None and memory <= CATALOGUE_CRAWL_MEMORY_TARGET,
        ),
        *(
            Figure(
                f"crawl wall time per lecture, night {n}, at {n_large:,} (vs {n_small:,})",
                large["crawl_seconds_per_lecture"][n - 1] * 1000,
                "ms",
                small["crawl_seconds_per_lecture"][n - 1] * 1000,
                label,
                wall[n - 1],
            )
            for n in (1, 2)
        ),
        Figure(
            f"lecture pages a night asks at {n_large:,} (most of 2 nights)",
            asked,
            baseline=budget,
            baseline_label="budget",
            target=f"<= {budget:,}",
            met=asked <= budget,
        ),
        Figure(
            f"lectures published on night 1 at {n_large:,} / listed",
            published,
            target="all, once",
            met=first["published"] == large["lectures"] and release.get("repeated") == 0,
        ),
        Figure(
            f"listing fields right on night 1 at {n_large:,}",
            right,
            target=f">= {CATALOGUE_CRAWL_FIELDS_TARGET}",
            met=right is not None and right >= CATALOGUE_CRAWL_FIELDS_TARGET,
        ),
        Figure(
            f"pages night 2 asks that night 1 fetched, at {n_large:,}",
            large["night2_asked_again"],
            target="0",
            met=large["night2_asked_again"] == 0,
        ),
    ]
    return section


def _num(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, int) or value >= 1000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3f}" if value < 1.5 else f"{value:.2f}"


def table(figures: Sequence[Figure]) -> str:
    rows = [["figure", "value", "baseline", "ratio", "target", "met"]]
    for f in figures:
        value = f"{_num(f.value)} {f.unit}".strip()
        baseline = f"{_num(f.baseline)} {f.unit if not isinstance(f.baseline, str) else ''}".strip()
        if f.baseline_label and f.baseline is not None:
            baseline += f" ({f.baseline_label})"
        met = "-" if f.met is None else ("yes" if f.met else "NO")
        rows.append([f.figure, value, baseline, _num(f.ratio), f.target, met])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    import scrapy

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=procs.REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], cwd=procs.REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "scrapy": scrapy.__version__,
        "commit": commit + ("+changes" if dirty else ""),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/run", description=__doc__)
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument("--quick", action="store_true", help="small sizes, one repetition (a smoke run)")
    parser.add_argument("--diagnose", action="store_true", help="measure what grows even when targets hold")
    parser.add_argument("--out", type=Path, default=RESULTS, help="JSON results (default bench/results/)")
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="with --only: drop the other sections' figures instead of keeping them from the results file",
    )
    args = parser.parse_args(argv)
    wanted = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(wanted) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown sections: {', '.join(unknown)}")
    quick = args.quick
    work = Path(tempfile.mkdtemp(prefix="eventcrawl-bench-"))
    runners: dict[str, Callable[[Path], Section]] = {
        "cost": lambda w: crawl_cost(
            w, lectures=200 if quick else 700, reps=1 if quick else 3, pairs=2 if quick else 6
        ),
        "quality": lambda w: quality(w, quick),
        "throughput": lambda w: throughput(w, lectures=300 if quick else 1000, reps=1 if quick else 3),
        "cleaning": lambda w: cleaning(w, passes=1 if quick else 3),
        "publish": publish_script,
        "scale": lambda w: scale(
            w,
            (100, 1000) if quick else (1000, 10000),
            args.diagnose,
            (100, 400) if quick else (1000, 4000),
        ),
        "polite": lambda w: polite(w, lectures=30, timeout_s=8 if quick else 30),
        "recrawl": lambda w: recrawl(w, lectures=200 if quick else None),
        "anthology": lambda w: anthology(w, (300, 3000) if quick else (3000, 30000)),
        "catalogue": lambda w: catalogue(w, ((400, 4), (3200, 32)) if quick else ((3740, 4), (30740, 32))),
        "catalogue_crawl": lambda w: catalogue_crawl(
            w, ((300, 2), (1200, 8)) if quick else ((3740, 4), (30740, 32)), budget=100 if quick else 2500
        ),
        "transcripts": lambda w: transcripts(w, quick),
        "slides_read": lambda w: slides_read(quick),
        "slides_publish": lambda w: slides_publish(w, quick),
        "slides_crawl": lambda w: slides_crawl(w, quick),
    }
    # Every crawl a section starts imports the project as an installed copy would, from bytecode: a
    # checkout run with PYTHONDONTWRITEBYTECODE would compile it from source in each one (about 0.1 s).
    compileall.compile_dir(procs.REPO / "crawler", quiet=1)
    compileall.compile_dir(procs.REPO / "bench", quiet=1)
    info = machine()
    print(f"eventcrawl benchmarks on {info['cores']} cores ({info['platform']}, Python {info['python']}, "
          f"Scrapy {info['scrapy']}, {info['commit']})", flush=True)  # fmt: skip
    results: dict[str, Any] = {}
    started = time.monotonic()
    try:
        for name in [s for s in SECTIONS if s in wanted]:
            t0 = time.monotonic()
            print(f"  {name} ...", end="", flush=True)
            directory = work / name
            directory.mkdir()
            section = runners[name](directory)
            print(f" {time.monotonic() - t0:.0f} s", flush=True)
            results[name] = {**asdict(section), "measured": _measured(info)}
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print()
    info["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(
        f"cores: {info['cores']}, total {time.monotonic() - started:.0f} s, load average (1, 5, 15 min) "
        f"{info['load_average_at_start']} at the start, {info['load_average_at_end']} at the end"
    )
    figures = [Figure(**f) for name in SECTIONS if name in results for f in results[name]["figures"]]
    print(table(figures))
    _print_explanations(results)
    # A run of some sections keeps the figures of the others from the results file, each section saying
    # the commit and the date it was measured at: the table then quotes every section, none by hand.
    kept = {} if args.fresh or set(wanted) >= set(SECTIONS) else _earlier_sections(args.out)
    sections = {name: results.get(name) or kept[name] for name in SECTIONS if name in results or name in kept}
    every = [f for section in sections.values() for f in section["figures"]]
    payload = {"machine": info, "figures": every, "sections": sections}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"\nresults: {args.out}")
    return 0


def _measured(info: dict[str, Any]) -> dict[str, Any]:
    return {k: info.get(k) for k in ("commit", "date", "cores", "load_average_at_start")}


def _earlier_sections(path: Path) -> dict[str, Any]:
    """The sections of an earlier results file, each with the machine facts it was measured under."""
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    facts = earlier.get("machine", {})
    return {
        name: {**section, "measured": section.get("measured") or _measured(facts)}
        for name, section in earlier.get("sections", {}).items()
        if name in SECTIONS and isinstance(section, dict)
    }


def _print_explanations(results: dict[str, Any]) -> None:
    for name, section in results.items():
        for note in section["notes"]:
            print(f"note ({name}): {note}")
    breakdown = results.get("throughput", {}).get("details", {}).get("cpu_breakdown_ms_per_page")
    if breakdown:
        print("\nWhere the crawl process's CPU goes, ms per lecture page (one run each of the variants):")
        for part, ms in breakdown.items():
            print(f"  {part:<45} {ms:6.2f}")
    profile = results.get("cleaning", {}).get("details", {}).get("profile")
    if profile:
        print("\nCleaning, one pass under cProfile (own time):")
        print("\n".join("  " + line for line in profile.strip().splitlines()[-14:]))
    grows = results.get("scale", {}).get("details", {}).get("what_grows_mib")
    if grows:
        print("\nWhat the crawl keeps, deep size in MiB (end of crawl, and largest while it ran):")
        for holder, sizes in grows.items():
            if any(isinstance(v, float) and abs(v) >= 0.05 for v in sizes.values()):
                print(f"  {holder:<40} {json.dumps(sizes)}")
    output = results.get("publish", {}).get("details", {}).get("output")
    if output:
        print("\nbench/bench_publish.py:")
        print("\n".join("  " + line for line in output.strip().splitlines()))


if __name__ == "__main__":
    raise SystemExit(main())
