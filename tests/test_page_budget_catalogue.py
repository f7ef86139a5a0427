"""A page budget over a catalogue of events: the replica serves six events (each with its own ids, names,
dates and sessions), every event is given with ``--event-id``, and two nights run at a budget much smaller
than the catalogue. The pages asked are counted by the replica's request log, not by the crawler.

Night 1 stages every listed lecture once, the listing's fields as the replica's ground truth says, the
pages it did not fetch marked ``api_listing``. Night 2 may revalidate every page it fetched on night 1
(any age is due), yet the budget goes to lectures never fetched: none of night 1's pages is asked again.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from crawler.replica.layout import ReplicaSite, build_catalogue, ground_truth, load_records
from crawler.replica.server import KIND_LECTURE_PAGE, KIND_LISTING, ReplicaServer
from crawler.schema import format_timestamp
from crawler.settings import UNDERLINE_LISTINGS_AT_ONCE
from tests.support.commands import run_command
from tests.support.replica import LISTING_FIELDS, fast_crawl_settings
from tests.support.staged import read_stage

EVENTS = 6
LECTURES = 1200
BUDGET = 150
LECTURE_PAGE = re.compile(r"^/lecture/(\d+)(?:-|$)")
# Every page fetched is due for revalidation: only the ranking keeps night 2 from asking them again.
ALL_DUE = ("-s", "UNDERLINE_REVALIDATE_AFTER_DAYS=0", "-s", "UNDERLINE_REVALIDATE_SHARE=1.0")


@dataclass
class Nights:
    site: ReplicaSite
    truth: dict[str, dict[str, Any]]
    runs: list[subprocess.CompletedProcess[str]] = field(default_factory=list)
    asked: list[list[str]] = field(default_factory=list)
    listings: list[list[tuple[str, int]]] = field(default_factory=list)
    stages: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    duplicates: list[int] = field(default_factory=list)


def pages_asked(server: ReplicaServer) -> list[str]:
    """The lecture ids whose pages the replica answered, one per request (a page asked twice twice)."""
    ids = []
    for record in server.requests:
        match = LECTURE_PAGE.match(record.path.split("?", 1)[0])
        if record.kind == KIND_LECTURE_PAGE and match:
            ids.append(match.group(1))
    return ids


def listing_pages_asked(server: ReplicaServer) -> list[tuple[str, int]]:
    """The (event id, page number) of every listing request the replica answered, in order."""
    pages = []
    for record in server.requests:
        if record.kind == KIND_LISTING:
            query = parse_qs(urlsplit(record.path).query)
            pages.append((query["filter[event_id]"][0], int(query["page[number]"][0])))
    return pages


def most_listings_at_once(pages: list[tuple[str, int]]) -> int:
    """The most events whose listings were read at once: an event's from its first listing request to
    its last."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for at, (event, _) in enumerate(pages):
        first.setdefault(event, at)
        last[event] = at
    return max(sum(1 for e in first if first[e] <= at <= last[e]) for at in range(len(pages)))


def night(server: ReplicaServer, state: Path, nights: Nights, *extra: str) -> None:
    server.clear_requests()
    events = [arg for event_id in nights.site.events for arg in ("--event-id", event_id)]
    command = [
        sys.executable, "-m", "crawler.app.cli", "crawl",
        "--web-base", server.base_url, "--api-base", server.base_url, "--state", str(state), *events,
        "--page-budget", str(BUDGET), *fast_crawl_settings(), "-s", "PROGRESS_ENABLED=False", *extra,
    ]  # fmt: skip
    nights.runs.append(run_command(command, timeout=300))
    nights.asked.append(pages_asked(server))
    nights.listings.append(listing_pages_asked(server))
    staged = read_stage(state)
    nights.stages.append({r.lecture_id: r.values() for r in staged.records})
    nights.duplicates.append(staged.duplicate_lectures)


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nights]:
    site = build_catalogue(load_records(), events=EVENTS, lectures=LECTURES, seed=11)
    state = tmp_path_factory.mktemp("catalogue") / "state"
    with ReplicaServer(site) as server:
        truth = {t["lecture_id"]: t for t in ground_truth(site, server.base_url, event_ids=list(site.events))}
        nights = Nights(site, truth)
        night(server, state, nights)
        night(server, state, nights, *ALL_DUE)
    yield nights


def listing_view(record: dict[str, Any]) -> dict[str, Any]:
    # The stage reads timestamps back as datetimes; the truth writes them as text.
    return {f: format_timestamp(v) if isinstance(v, datetime) else v for f, v in record.items()}


def test_the_catalogue_has_events_of_their_own(nights: Nights) -> None:
    assert len(nights.site.events) == EVENTS
    assert len(nights.truth) == LECTURES
    per_event = {e: sum(1 for t in nights.truth.values() if t["event_id"] == e) for e in nights.site.events}
    assert set(per_event.values()) == {LECTURES // EVENTS}
    assert len({t["event_name"] for t in nights.truth.values()}) == EVENTS


def test_night_one_asks_at_most_the_budget_and_stages_every_listed_lecture_once(nights: Nights) -> None:
    run = nights.runs[0]
    assert run.returncode == 0, run.stderr[-3000:]
    asked = nights.asked[0]
    assert len(asked) == BUDGET
    assert len(set(asked)) == BUDGET
    stage = nights.stages[0]
    assert set(stage) == set(nights.truth)
    assert nights.duplicates[0] == 0
    waiting = LECTURES - BUDGET
    assert f"{BUDGET} lecture pages fetched, {waiting} wait ({waiting} new, 0 changed, 0 stale)" in run.stdout


def test_night_one_stages_the_listing_fields_of_every_lecture(nights: Nights) -> None:
    stage, fetched = nights.stages[0], set(nights.asked[0])
    for lecture_id, record in stage.items():
        expected = "next_data" if lecture_id in fetched else "api_listing"
        assert record["extraction"].split("+")[0] == expected, lecture_id
        got, truth = listing_view(record), nights.truth[lecture_id]
        assert {f: got[f] for f in LISTING_FIELDS} == {f: truth[f] for f in LISTING_FIELDS}, lecture_id
        if lecture_id not in fetched:
            assert record["related_lecture_ids"] == [], f"{lecture_id=}, {record=}"
        else:
            assert record["related_lecture_ids"] == truth["related_lecture_ids"], f"{lecture_id=}, {record=}"


def test_night_two_asks_at_most_the_budget_and_none_of_night_ones_pages(nights: Nights) -> None:
    run = nights.runs[1]
    assert run.returncode == 0, run.stderr[-3000:]
    one, two = nights.asked
    assert len(two) == BUDGET
    assert len(set(two)) == BUDGET
    assert not set(one) & set(two)
    stage = nights.stages[1]
    assert set(stage) == set(nights.truth)
    assert nights.duplicates[1] == 0
    # Night 1's pages wait as stale ones and keep the records their pages gave.
    page_read = {i for i, r in stage.items() if r["extraction"].split("+")[0] == "next_data"}
    assert page_read == set(one) | set(two)
    waiting = LECTURES - BUDGET
    assert (
        f"{BUDGET} lecture pages fetched, {waiting} wait ({waiting - BUDGET} new, 0 changed, {BUDGET} stale)"
        in run.stdout
    )


def test_no_more_events_listings_are_read_at_once_than_the_setting_says(nights: Nights) -> None:
    # More events than are read at once: a crawl that asked every event's first page together would read
    # all six at once.
    assert EVENTS > UNDERLINE_LISTINGS_AT_ONCE >= 1
    for pages in nights.listings:
        assert {event for event, _ in pages} == set(nights.site.events), f"{pages=}"
        assert max(page for _, page in pages) >= 2, f"{pages=}"
        assert most_listings_at_once(pages) == UNDERLINE_LISTINGS_AT_ONCE, f"{pages=}"
