"""The spider's listing callback on answers built here, without a network: when the listing is whole,
and that nothing that goes wrong while a page is handled truncates it silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import TextResponse

from crawler import stats_keys as keys
from crawler.pages import read_listing
from crawler.spiders.underline import UnderlineSpider
from tests.support.settings import project_crawler

API = "http://api.test"


def lecture(i: int) -> dict[str, Any]:
    return {"type": "thin_lectures", "id": str(100 + i), "attributes": {"title": f"T{i}", "slug": f"t-{i}"}}


def listing(ids: range, pages: int | None, count: int | None) -> str:
    meta = {k: v for k, v in (("total_pages", pages), ("total_count", count)) if v is not None}
    return json.dumps({"data": [lecture(i) for i in ids], "meta": meta})


def spider(tmp_path: Path, **extra: Any) -> UnderlineSpider:
    settings = {
        "STAGE_STATE_DIR": str(tmp_path),
        "UNDERLINE_PAGE_SIZE": 2,
        "UNDERLINE_API_BASE": API,
        **extra,
    }
    crawler = project_crawler(UnderlineSpider, settings)
    crawler.stats.open_spider()  # type: ignore[union-attr]
    made = UnderlineSpider.from_crawler(crawler)
    made.crawler = crawler
    return made


def handle(made: UnderlineSpider, page: int, body: str, after: list[Any] | None = None) -> list[Any]:
    """The listing callback's output for page ``page``, answered to the request ``after`` (the output of
    the page before) yielded for it."""
    request = next((r for r in after or [] if isinstance(r, Request) and "page" in r.cb_kwargs), None)
    response = TextResponse(f"{API}/page/{page}", body=body.encode(), encoding="utf-8", request=request)
    return list(made.listing_output(response, read_listing(body, base_url=API), page, "502"))


def next_pages(out: list[Any]) -> list[int]:
    return [r.cb_kwargs["page"] for r in out if isinstance(r, Request) and "page" in r.cb_kwargs]


def test_a_listing_that_agrees_with_its_meta_is_whole(tmp_path: Path) -> None:
    made = spider(tmp_path)
    first = handle(made, 1, listing(range(2), 2, 3))
    assert next_pages(first) == [2]
    assert next_pages(handle(made, 2, listing(range(2, 3), 2, 3), after=first)) == []
    assert made.stats.get_value(keys.LISTING_FAILED) is None
    assert made.stats.get_value(keys.LISTED) == 3


@pytest.mark.parametrize(
    ("pages", "why"),
    [
        # Page 2 of 3 answers with no lectures: the listing goes on to page 3, and is incomplete.
        ([(range(2), 3, 5), (range(0), 3, 5), (range(4, 5), 3, 5)], keys.LISTING_EMPTY_PAGE),
        # The last page brings fewer lectures than meta counts.
        ([(range(2), 2, 4), (range(2, 3), 2, 4)], keys.LISTING_SHORT),
        # A page that shrank the count still leaves the larger count it gave earlier unmet.
        ([(range(2), 2, 5), (range(3, 4), 2, 3)], keys.LISTING_SHORT),
        # A page that repeats the one before instead of its own lectures.
        ([(range(2), 2, 4), (range(2), 2, 4)], keys.LISTING_SHORT),
    ],
)
def test_a_listing_that_disagrees_with_its_meta_is_incomplete(
    tmp_path: Path, pages: list[tuple[range, int, int]], why: str
) -> None:
    made = spider(tmp_path)
    out: list[Any] = []
    for number, (ids, total, count) in enumerate(pages, start=1):
        out = handle(made, number, listing(ids, total, count), after=out)
    assert made.stats.get_value(why) == 1
    assert made.stats.get_value(keys.LISTING_FAILED) >= 1


def test_a_listing_without_meta_ends_with_a_page_that_brings_nothing_new(tmp_path: Path) -> None:
    made = spider(tmp_path)
    first = handle(made, 1, listing(range(2), None, None))
    second = handle(made, 2, listing(range(2, 3), None, None), after=first)
    assert (next_pages(first), next_pages(second)) == ([2], [3])
    assert next_pages(handle(made, 3, listing(range(0), None, None), after=second)) == []
    assert made.stats.get_value(keys.LISTING_FAILED) is None


class Exploding:
    def get(self, lecture_id: str) -> Any:
        raise RuntimeError("boom")


def test_any_failure_in_the_listing_callback_leaves_the_listing_incomplete(tmp_path: Path) -> None:
    made = spider(tmp_path)
    made._previous = Exploding()  # type: ignore[assignment]
    out = handle(made, 1, listing(range(2), 3, 6))
    assert next_pages(out) == []
    assert made.stats.get_value(keys.LISTING_CALLBACK_ERROR) == 1
    assert made.stats.get_value(keys.LISTING_FAILED) == 1


@pytest.mark.parametrize("share", ["inf", "1e308", "nan", "-1"])
def test_any_revalidate_share_leaves_the_listing_whole(tmp_path: Path, share: str) -> None:
    made = spider(tmp_path, UNDERLINE_REVALIDATE_SHARE=share)
    out = handle(made, 1, listing(range(2), 2, 4))
    assert next_pages(out) == [2]
    assert sorted(r.cb_kwargs["lecture_id"] for r in out if "lecture_id" in r.cb_kwargs) == ["100", "101"]
    assert made.stats.get_value(keys.LISTING_FAILED) is None


def test_what_the_pages_before_held_travels_with_the_next_request(tmp_path: Path) -> None:
    # In a fleet, another process reads the next page: it knows the earlier pages from the request only.
    first = handle(spider(tmp_path / "a"), 1, listing(range(2), 2, 4))
    other = spider(tmp_path / "b")
    handle(other, 2, listing(range(2, 4), 2, 4), after=first)
    assert other.stats.get_value(keys.LISTING_FAILED) is None
    short = spider(tmp_path / "c")
    handle(short, 2, listing(range(2, 3), 2, 4), after=first)
    assert short.stats.get_value(keys.LISTING_SHORT) == 1
