"""Cleaning alone, replayed from stored pages: the crawler's parse + pipeline functions vs trafilatura.

Pages are rendered by the replica's ``Renderer`` (no HTTP) with their JSON, as the site serves them, so
the boilerplate step here is the structural layer, which the page's JSON guides: the text quality of
the step on the visible page alone is measured in ``bench/quality.py``. Each pass runs over every page,
ours and trafilatura's alike, from the same HTML; a figure is the best pass, in milliseconds per page.
A ``text`` the step rebuilt from the fields (``extraction`` ending in ``+text_from_fields``) is never
counted as equal to the ground truth: the ground truth is those fields.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from crawler.dedup import near
from crawler.items import LectureItem
from crawler.pages import parse_lecture_page
from crawler.pages.fields import ITEM_FIELD_NAMES
from crawler.pipelines.boilerplate import TEXT_FROM_FIELDS, BoilerplatePipeline
from crawler.pipelines.normalize import NormalizePipeline
from crawler.replica.layout import MAIN_EVENT_ID, build_site, ground_truth, load_records
from crawler.replica.pages import Renderer
from crawler.schema import content_sha256
from crawler.spiders.refresh import merge_fields

WEB_BASE = "http://replica.bench"
FETCHED_AT = datetime(2025, 12, 1, tzinfo=UTC)


@dataclass(frozen=True)
class StoredPage:
    lecture_id: str
    url: str
    body: bytes


def stored_pages(lectures: int | None = None, seed: int = 0) -> tuple[list[StoredPage], dict[str, str]]:
    """The event's lecture pages as the replica serves them, and each lecture's true ``text``."""
    site = build_site(load_records(), seed=seed, lectures=lectures)
    renderer = Renderer(site, WEB_BASE)
    pages = [
        StoredPage(lec.id, renderer.canonical_url(lec), renderer.lecture_page(lec))
        for lec in site.event_lectures(MAIN_EVENT_ID)
    ]
    truth = {r["lecture_id"]: r["text"] for r in ground_truth(site, WEB_BASE)}
    return pages, truth


class _Stats:
    """The part of Scrapy's stats collector the pipelines use, counting in a dict."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get_value(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set_value(self, key: str, value: Any) -> None:
        self.values[key] = value

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] = self.values.get(key, start) + count

    def max_value(self, key: str, value: Any) -> None:
        self.values[key] = max(self.values.get(key, value), value)

    def min_value(self, key: str, value: Any) -> None:
        self.values[key] = min(self.values.get(key, value), value)


class Cleaner:
    """What the crawl does to a fetched page besides fetching and staging it: the page parser, the
    item the spider builds, the normalize and boilerplate pipelines, and the content hash."""

    def __init__(self) -> None:
        stats: Any = _Stats()
        self.normalize = NormalizePipeline(stats)
        self.boilerplate = BoilerplatePipeline(stats)

    def __call__(self, page: StoredPage) -> dict[str, Any]:
        parsed = parse_lecture_page(page.body, page.url, encoding="utf-8")
        merged = merge_fields(parsed.fields, None)
        record = merged.parsed_record() if merged is not None else None
        fields = {name: getattr(record, name) for name in ITEM_FIELD_NAMES} if record is not None else {}
        # As the spider's item: a page that does not say is not premium.
        fields["is_premium"] = bool(fields.get("is_premium"))
        item = LectureItem(
            **fields,
            url=page.url,
            source_urls=[page.url],
            extraction=parsed.extraction,
            fetched_at=FETCHED_AT,
        )
        item.page_blocks = list(parsed.blocks)
        item = self.boilerplate.process_item(self.normalize.process_item(item))
        record = item.record()
        record["content_sha256"] = content_sha256(record)
        return record


def trafilatura_text(page: StoredPage) -> str:
    import trafilatura

    return trafilatura.extract(page.body, url=page.url) or ""


def best_pass_ms(
    make: Callable[[], Callable[[StoredPage], Any]],
    pages: Sequence[StoredPage],
    passes: int,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Milliseconds per page of the fastest pass by ``clock`` (wall time unless told); each pass starts
    from a fresh ``make()``."""
    best = float("inf")
    for _ in range(passes):
        work = make()
        started = clock()
        for page in pages:
            work(page)
        best = min(best, clock() - started)
    return best * 1000 / len(pages)


class PageWork:
    """What the crawl does for every lecture page it fetches beyond fetching and storing it (which strips
    it of personal data), as the pure functions it is made of, in one process: :class:`Cleaner` (parsed,
    normalized, boilerplate removed, hashed) and the near-duplicate signature. Left out: Scrapy, the
    worker's messages, the stage file."""

    def __init__(self) -> None:
        self.clean = Cleaner()

    def __call__(self, page: StoredPage) -> None:
        record = self.clean(page)
        near.keyed_signature(record.get("title"), record.get("abstract"))


def page_work_ms_per_page(lectures: int | None = None, passes: int = 3) -> float:
    """CPU milliseconds per page of :class:`PageWork` (the fastest pass, each from a fresh one): the least
    a crawl of these pages costs beyond fetching and storing them, whatever runs it."""
    pages, _ = stored_pages(lectures)
    return best_pass_ms(PageWork, pages, passes, clock=time.process_time)


def profile_top(work: Callable[[StoredPage], Any], pages: Sequence[StoredPage], top: int = 12) -> str:
    """The functions one pass spends its own time in (cProfile, sorted by tottime)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for page in pages:
        work(page)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("tottime").print_stats(top)
    return out.getvalue()


def run(lectures: int | None = None, passes: int = 3) -> dict[str, Any]:
    pages, truth = stored_pages(lectures)
    for page in pages[:5]:
        Cleaner()(page)
        trafilatura_text(page)
    ours = best_pass_ms(Cleaner, pages, passes)
    theirs = best_pass_ms(lambda: trafilatura_text, pages, passes)
    clean = Cleaner()
    records = [clean(p) for p in pages]
    from_fields = sum(r["extraction"].endswith(TEXT_FROM_FIELDS) for r in records)
    exact = sum(
        r["text"] == truth.get(r["lecture_id"]) and not r["extraction"].endswith(TEXT_FROM_FIELDS)
        for r in records
    )
    texts = [trafilatura_text(p) for p in pages]
    footer = "Stay up to date with the latest Underline news!"
    return {
        "pages": len(pages),
        "mean_page_bytes": round(sum(len(p.body) for p in pages) / len(pages)),
        "ours_ms_per_page": ours,
        "trafilatura_ms_per_page": theirs,
        "passes": passes,
        "ours_text_exact": exact,
        "ours_text_from_fields": from_fields,
        "trafilatura_with_welcome_text": sum("Welcome" in t for t in texts),
        "trafilatura_with_footer": sum(footer in t for t in texts),
        "profile": profile_top(Cleaner(), pages),
    }
