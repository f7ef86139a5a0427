"""Guards of the spider's crawl, each against the replica over real HTTP, each failing within seconds when
the guard is gone: a lecture another event's listing names is not this event's; a night revalidates at
most UNDERLINE_REVALIDATE_SHARE of a listing page's unchanged lectures, the ones fetched longest ago; the
listing never asks for more than the API's 100 lectures a page, whatever UNDERLINE_PAGE_SIZE says; and a
listing that never ends stops after UNDERLINE_MAX_LISTING_PAGES pages."""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from crawler import stats_keys as keys
from crawler.replica.faults import SiteFaults
from crawler.replica.layout import Lecture, ReplicaSite, build_site, load_records
from crawler.replica.pages import Renderer, api_json
from crawler.replica.server import API, ReplicaServer
from tests.support.commands import CHECKOUT
from tests.support.replica import crawl_args, eventcrawl, fast_crawl_settings
from tests.support.sites import Override
from tests.support.staged import read_stage

EVENT, OTHER = "502", "469"
PAGE_SIZE = 10
# A guard switched off makes a crawl of this small site run on (an endless listing) or fetch pages it
# must not; none of these crawls takes more than a few seconds when the guards hold.
TIMEOUT = 60
LECTURE_PATH = re.compile(r"/lecture/(\d+)")


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records(), seed=11, lectures=60, side_event_every=4)


def own_lectures(site: ReplicaSite, event: str = EVENT) -> set[str]:
    return {i for i, lecture in site.lectures.items() if lecture.event_id == event}


def crawl(server: ReplicaServer, state: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = crawl_args(server.base_url, state, "--event-id", EVENT, *fast_crawl_settings(), *extra)
    return eventcrawl(*args, timeout=TIMEOUT)


def crawl_stats(state: Path) -> dict[str, Any]:
    return dict(json.loads((state / "crawl-report.json").read_text(encoding="utf-8"))["stats"])


def pages_asked(server: ReplicaServer) -> list[str]:
    """The ids of the lecture pages the crawl asked for, in order."""
    found = (LECTURE_PATH.match(r.path) for r in server.requests if r.kind == "lecture_page")
    return [m.group(1) for m in found if m is not None]


def listing_queries(server: ReplicaServer) -> list[dict[str, list[str]]]:
    return [parse_qs(urlsplit(r.path).query) for r in server.requests if r.kind == "listing"]


# -- a lecture of another event in the listing --------------------------------------------------------


class ListingWithIntruder:
    """Page overrides: the first listing page of the main event also names ``intruder``, a lecture of the
    other event (as a site's search index that mixed two events up would); its meta counts the main
    event's lectures only."""

    def __init__(self, site: ReplicaSite, base_url: str, intruder: Lecture) -> None:
        self.renderer = Renderer(site, base_url)
        self.intruder = intruder

    def lecture_page(self, lecture: Lecture, query: Mapping[str, list[str]]) -> Override | None:
        return None

    def listing(self, lectures: list[Lecture], size: int, number: int) -> Override | None:
        if number != 1 or not lectures or lectures[0].event_id != EVENT:
            return None
        pages = -(-len(lectures) // size)
        chunk = [*lectures[:size], self.intruder]
        doc = self.renderer.chunk_doc(chunk, pages, len(lectures), profiles=True)
        return Override(200, api_json(doc), API)


def test_a_lecture_of_another_event_in_the_listing_is_not_counted_staged_or_fetched(
    site: ReplicaSite, tmp_path: Path
) -> None:
    intruder = site.lectures[min(own_lectures(site, OTHER), key=int)]
    state = tmp_path / "state"

    def overrides(served: ReplicaSite, base_url: str) -> ListingWithIntruder:
        return ListingWithIntruder(served, base_url, intruder)

    with ReplicaServer(site, overrides=overrides) as server:
        first_page = urllib.request.urlopen(
            f"{server.base_url}/api/v1/thin_lectures?filter[event_id]={EVENT}&page[size]={PAGE_SIZE}"
        ).read()
        server.clear_requests()
        done = crawl(server, state, "-s", f"UNDERLINE_PAGE_SIZE={PAGE_SIZE}")
        asked = pages_asked(server)
    # The listing did name it, with its own event.
    named = {d["id"]: str(d["attributes"]["event_id"]) for d in json.loads(first_page)["data"]}
    assert named[intruder.id] == OTHER
    assert done.returncode == 0, done.stderr[-3000:]
    stats = crawl_stats(state)
    own = own_lectures(site)
    assert stats.get(keys.LISTING_OTHER_EVENT) == 1
    assert stats[keys.LISTED_PREFIX + EVENT] == stats[keys.LISTED] == len(own)
    assert intruder.id not in asked
    assert sorted(asked, key=int) == sorted(own, key=int)
    staged = read_stage(state)
    assert sorted(r.lecture_id for r in staged.records) == sorted(own, key=int)
    # Nor is the intruder's session this event's, unless a lecture of this event holds it too.
    sessions = {s["session_id"] for s in staged.sessions}
    own_sessions = {site.lectures[i].session_id for i in own}
    assert sessions == own_sessions, sessions - own_sessions


# -- revalidation: a share of each listing page, the oldest first --------------------------------------

SHARE = 0.25
# Every staged page was fetched long before UNDERLINE_REVALIDATE_AFTER_DAYS (30 days by default).
LONG_AGO = datetime(2025, 1, 1, tzinfo=UTC)


def listing_pages(server: ReplicaServer, size: int) -> list[list[str]]:
    """The lecture ids of each page of the main event's listing, as the replica lists them."""
    pages: list[list[str]] = []
    url = f"{server.base_url}/api/v1/thin_lectures?filter[event_id]={EVENT}&page[size]={size}"
    while True:
        doc = json.loads(urllib.request.urlopen(f"{url}&page[number]={len(pages) + 1}").read())
        pages.append([d["id"] for d in doc["data"]])
        if len(pages) >= doc["meta"]["total_pages"]:
            return pages


def age_staged_pages(state: Path, fetched: Mapping[str, datetime]) -> None:
    """Rewrite when the finished stage says each lecture's page was fetched."""
    for path in (state / "stage").glob("*.jsonl"):
        lines = []
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            payload = json.loads(line)
            record = payload.get("lecture") if payload.get("kind") == "lecture" else None
            if isinstance(record, dict) and record.get("lecture_id") in fetched:
                record["fetched_at"] = fetched[record["lecture_id"]].isoformat()
                line = json.dumps(payload, ensure_ascii=False) + "\n"
            lines.append(line)
        path.write_text("".join(lines), encoding="utf-8")


def test_a_night_revalidates_the_oldest_share_of_each_listing_page(site: ReplicaSite, tmp_path: Path) -> None:
    state = tmp_path / "state"
    settings = ("-s", f"UNDERLINE_PAGE_SIZE={PAGE_SIZE}", "-s", f"UNDERLINE_REVALIDATE_SHARE={SHARE}")
    with ReplicaServer(site) as server:
        first = crawl(server, state, *settings)
        assert first.returncode == 0, first.stderr[-3000:]
        pages = listing_pages(server, PAGE_SIZE)
        # Fetched hours apart, in an order that is not the listing's.
        ids = [i for page in pages for i in page]
        order = random.Random(5).sample(ids, len(ids))
        fetched = {lecture_id: LONG_AGO + timedelta(hours=n) for n, lecture_id in enumerate(order)}
        age_staged_pages(state, fetched)
        server.clear_requests()
        night = crawl(server, state, *settings)
        asked = pages_asked(server)
    assert night.returncode == 0, night.stderr[-3000:]
    assert sorted(ids, key=int) == sorted(own_lectures(site), key=int)
    # Of a page of 10, ceil(2.5) = 3 are due; of the last page of 5, ceil(1.25) = 2.
    assert [len(page) for page in pages] == [10] * (len(pages) - 1) + [len(pages[-1])]
    expected: list[str] = []
    for number, page in enumerate(pages, start=1):
        oldest = sorted(page, key=fetched.__getitem__)[: math.ceil(SHARE * len(page))]
        # The listing's order alone would pick other lectures: the choice is by age.
        assert oldest != page[: len(oldest)], f"page {number}"
        expected += oldest
    assert sorted(asked, key=int) == sorted(expected, key=int)
    stats = crawl_stats(state)
    assert stats[keys.PAGES_REVALIDATED] == len(expected)
    assert stats[keys.PAGES_CARRIED] == len(ids) - len(expected)
    assert keys.PAGES_FETCHED not in stats


# -- the listing's own bounds -------------------------------------------------------------------------


def test_the_listing_asks_for_at_most_100_lectures_a_page_whatever_the_setting_says(
    site: ReplicaSite, tmp_path: Path
) -> None:
    # ``scrapy crawl`` takes any setting as it is (``eventcrawl`` refuses a page size above 100); it runs
    # in a fresh interpreter, as Scrapy's command line does not start from a forked one.
    state = tmp_path / "state"
    with ReplicaServer(site) as server:
        done = subprocess.run(
            [
                sys.executable, "-m", "scrapy", "crawl", "underline", "-a", f"event_id={EVENT}",
                "-s", f"UNDERLINE_WEB_BASE={server.base_url}", "-s", f"UNDERLINE_API_BASE={server.base_url}",
                "-s", f"STAGE_STATE_DIR={state}", "-s", f"HTTPCACHE_DIR={state / 'httpcache'}",
                "-s", "UNDERLINE_PAGE_SIZE=500", *fast_crawl_settings(),
            ],
            cwd=CHECKOUT, capture_output=True, text=True, timeout=TIMEOUT, check=False,
        )  # fmt: skip
        queries = listing_queries(server)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [q["page[size]"] for q in queries] == [["100"]]
    assert sorted(r.lecture_id for r in read_stage(state).records) == sorted(own_lectures(site), key=int)


@pytest.mark.parametrize(
    ("meta", "extra", "pages"),
    [
        # No meta to stop at: only UNDERLINE_MAX_LISTING_PAGES ends it, here before the real lectures end.
        ("absent", ("-s", "UNDERLINE_MAX_LISTING_PAGES=3"), 3),
        # Meta counts the real pages (5 of 10): full pages go on one page past it, and no further.
        ("small", (), 6),
    ],
)
def test_a_listing_that_never_ends_stops_where_its_bounds_say(
    site: ReplicaSite, tmp_path: Path, meta: str, extra: tuple[str, ...], pages: int
) -> None:
    # Every page brings new lectures, whatever its number: without its bounds the listing runs on.
    state = tmp_path / "state"
    with ReplicaServer(site, site_faults=SiteFaults(endless_listing=meta)) as server:
        done = crawl(server, state, "-s", f"UNDERLINE_PAGE_SIZE={PAGE_SIZE}", *extra)
        queries = listing_queries(server)
    assert -(-len(own_lectures(site)) // PAGE_SIZE) == 5
    assert [q["page[number]"] for q in queries] == [[str(n)] for n in range(1, pages + 1)], f"meta {meta}"
    assert f"did not end after {pages} pages" in done.stderr, f"meta {meta}"
    assert crawl_stats(state)["finish_reason"] == "listing_unbounded", f"meta {meta}"
    assert done.returncode != 0, f"meta {meta}"
