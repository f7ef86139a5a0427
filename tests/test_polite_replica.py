"""Politeness measured on the replica's own request log: what the crawler really did to the site."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from crawler.replica.faults import FaultProfile, named_profile
from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.replica.server import ReplicaServer, RequestRecord
from crawler.schema import CONTENT_FIELDS
from tests.support.pace import ARRIVAL_NOISE, spaced_at_least
from tests.support.replica import eventcrawl, fast_crawl_settings
from tests.support.staged import read_stage


def crawl(server: ReplicaServer, state: Path, *settings: str) -> dict[str, Any]:
    result = eventcrawl(
        "crawl", "--web-base", server.base_url, "--api-base", server.base_url, "--state", str(state),
        "-s", "PROGRESS_ENABLED=False", *settings,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return {r.lecture_id: r.values() for r in read_stage(state).records}


def content(records: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {i: tuple(r[f] for f in (*CONTENT_FIELDS, "source_urls")) for i, r in records.items()}


def gaps(requests: list[RequestRecord]) -> list[float]:
    times = sorted(r.time for r in requests if r.path != "/robots.txt")
    return [b - a for a, b in itertools.pairwise(times)]


@pytest.fixture(scope="module")
def small_site() -> ReplicaSite:
    return build_site(load_records(), seed=5, lectures=8)


def test_disallowed_paths_are_never_requested_and_crawl_delay_is_a_floor(
    small_site: ReplicaSite, tmp_path: Path
) -> None:
    blocked = sorted(small_site.event_lectures("502"), key=lambda lec: lec.id)[0]
    faults = FaultProfile(name="robots", crawl_delay=0.5, robots_disallow=(blocked.path,))
    with ReplicaServer(small_site, faults=faults) as server:
        records = crawl(server, tmp_path / "state", "-s", "DOWNLOAD_DELAY=0.2")
        requests = server.requests
    assert requests[0].path == "/robots.txt"
    assert not any(r.path.startswith(blocked.path) for r in requests)
    # Still listed, so still published, from the listing's fields alone.
    assert records[blocked.id]["extraction"] == "api_listing+text_from_fields"
    assert len(records) == len(small_site.event_lectures("502"))
    measured = gaps(requests)
    assert len(measured) >= 7
    assert spaced_at_least(measured, 0.5), measured


def test_a_flaky_site_still_gives_every_lecture_once_and_the_same_dataset(tmp_path: Path) -> None:
    site = build_site(load_records(), seed=6, lectures=40)
    # Retry-After (one or two seconds here) is honoured up to BACKOFF_MAX_DELAY: a fifth of a second keeps
    # the retries and the backoff, without the waits, which this test is not about.
    quick_backoff = [
        "-s",
        "BACKOFF_MAX_DELAY=0.2",
        "-s",
        "BACKOFF_WINDOW=0.5",
        "-s",
        "BACKOFF_MIN_DELAY=0.05",
        "-s",
        "BACKOFF_MAX_RETRIES=8",
        "-s",
        "HTTPCACHE_ENABLED=False",
    ]
    with ReplicaServer(site) as server:
        clean = crawl(server, tmp_path / "clean", *fast_crawl_settings(), *quick_backoff)
        port = int(server.base_url.rsplit(":", 1)[1])
    flaky = named_profile("flaky", seed=11)
    assert flaky is not None
    with ReplicaServer(site, port=port, faults=flaky) as server:
        faulty = crawl(server, tmp_path / "flaky", *fast_crawl_settings(), *quick_backoff)
        requests = server.requests
    faults = [r for r in requests if r.fault]
    assert len(faults) >= 0.1 * len(requests)
    assert content(faulty) == content(clean)
    report = (tmp_path / "flaky" / "crawl-report.json").read_text(encoding="utf-8")
    assert '"backoff/retry_count"' in report


def test_nothing_is_sent_before_retry_after_has_passed(tmp_path: Path) -> None:
    site = build_site(load_records(), seed=9, lectures=12)
    faults = FaultProfile(name="busy", seed=3, rate_429=0.3, retry_after_max=1)
    one_at_a_time = ["-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1", "-s", "DOWNLOAD_DELAY=0"]
    one_at_a_time += ["-s", "AUTOTHROTTLE_ENABLED=False", "-s", "BACKOFF_MIN_DELAY=0.05"]
    one_at_a_time += ["-s", "BACKOFF_MAX_DELAY=2", "-s", "BACKOFF_WINDOW=0.5"]
    with ReplicaServer(site, faults=faults) as server:
        records = crawl(server, tmp_path / "state", *one_at_a_time)
        requests = sorted(server.requests, key=lambda r: r.time)
    assert len(records) == len(site.event_lectures("502"))
    answered_429 = [i for i, r in enumerate(requests) if r.status == 429]
    assert len(answered_429) >= 3
    # Retry-After is one second on this profile, as seconds or as an HTTP date.
    for i in answered_429:
        if i + 1 < len(requests):
            assert requests[i + 1].time - requests[i].time >= 1.0 - ARRIVAL_NOISE, requests[i]


def test_the_strict_site_never_has_to_answer_429_at_default_settings(tmp_path: Path) -> None:
    site = build_site(load_records(), seed=7, lectures=10)
    with ReplicaServer(site, faults=named_profile("strict")) as server:
        records = crawl(server, tmp_path / "state")
        requests = server.requests
    assert len(records) == len(site.event_lectures("502"))
    assert [r for r in requests if r.status == 429] == []
    assert spaced_at_least(gaps(requests), 1.0), gaps(requests)


def test_a_second_crawl_revalidates_every_page_and_changes_nothing(tmp_path: Path) -> None:
    site = build_site(load_records(), seed=8, lectures=40)
    state = tmp_path / "state"
    with ReplicaServer(site) as server:
        first = crawl(server, state, *fast_crawl_settings())
        server.clear_requests()
        # Every page asked for again (a refresh would not ask for unchanged lectures at all).
        second = crawl(server, state, *fast_crawl_settings(), "-s", "UNDERLINE_REFRESH=False")
        requests = server.requests
    pages = [r for r in requests if r.path.startswith("/lecture/")]
    assert len(pages) == len(site.event_lectures("502"))
    assert all(r.if_none_match for r in pages)
    not_modified = sum(r.status == 304 for r in requests if r.path != "/robots.txt")
    assert not_modified >= 0.95 * (len(requests) - 1)
    assert content(second) == content(first)
