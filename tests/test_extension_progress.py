from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.exceptions import NotConfigured

from crawler.extensions.progress import ProgressLine, format_progress, format_refresh
from crawler.middlewares.backoff import host_outlook
from tests.support.polite_server import Reply, run_crawl, serve
from tests.support.settings import project_crawler


def test_the_line_gives_done_queued_items_rate_and_time_left() -> None:
    assert format_progress(120, 600, 118, 60.0) == (
        "120 pages done, 600 queued, 118 items, 2.0 pages/s, about 300 s left"
    )


def test_before_any_page_the_time_left_is_unknown() -> None:
    assert format_progress(0, 10, 0, 0.0).endswith("0.0 pages/s, about unknown left")


def test_it_can_be_turned_off() -> None:
    with pytest.raises(NotConfigured):
        ProgressLine.from_crawler(project_crawler(settings_dict={"PROGRESS_ENABLED": False}))


def test_the_refresh_part_says_what_the_listing_decided() -> None:
    stats = {"underline/pages/fetched": 8, "underline/pages/carried": 690, "underline/pages/revalidated": 2}
    assert format_refresh(stats) == "lecture pages: 8 fetched, 2 revalidated, 690 carried over"
    assert format_refresh({}) == "lecture pages: 0 fetched, 0 revalidated, 0 carried over"


def test_the_time_left_counts_the_retries_ahead_and_their_waits() -> None:
    # 600 queued and 4 retries at 2 pages/s; the failing host's waits are shorter.
    assert format_progress(120, 600, 118, 60.0, (4, 59.0)) == (
        "120 pages done, 600 queued (and up to 4 retries), 118 items, 2.0 pages/s, about 302 s left"
    )
    # The queue is nearly done, but a failing host waits minutes before its last retry.
    assert format_progress(120, 10, 118, 60.0, (4, 420.0)).endswith("about 420 s left")


def test_a_failing_host_has_its_remaining_failures_and_growing_waits_ahead() -> None:
    # Failed twice of six: four more requests, the first once the 3 s left of its hold have passed, then
    # each after the delay doubled (8, 16, 32).
    assert host_outlook(2, bound=6, waiting=3.0, delay=4.0, factor=2.0, max_delay=300.0) == (
        4,
        3.0 + 8 + 16 + 32,
    )
    # The delay stops at its maximum.
    assert host_outlook(1, bound=4, waiting=0.0, delay=100.0, factor=2.0, max_delay=150.0) == (
        3,
        150.0 + 150.0,
    )
    # A host that answered well, or has no failure left before it is deferred, has nothing ahead.
    assert host_outlook(0, bound=6, waiting=0.0, delay=1.0, factor=2.0, max_delay=300.0) == (0, 0.0)
    assert host_outlook(6, bound=6, waiting=10.0, delay=64.0, factor=2.0, max_delay=300.0) == (0, 0.0)


def test_the_line_of_a_crawl_waiting_on_a_failing_host_counts_its_retries(tmp_path: Path) -> None:
    """A host deferred after three failures in a row: held after its first failure, then its second, the
    line counts the requests it may still be sent (two, then one)."""
    settings = {
        "EXTENSIONS": {"crawler.extensions.progress.ProgressLine": 500},
        "PROGRESS_INTERVAL": 0.2,
        "BACKOFF_HOST_MAX_FAILURES": 3,
        "BACKOFF_MIN_DELAY": 1.0,
        "BACKOFF_MAX_DELAY": 2.0,
    }
    with serve({"/f": Reply(503)}) as server:
        result = run_crawl([server.url("/f")], settings, tmp_path)
    lines = [line for line in result.log.splitlines() if "eventcrawl.progress" in line]
    assert len(server.log) == 3
    assert any("0 queued (and up to 2 retries)" in line for line in lines), lines
    assert any("0 queued (and up to 1 retries)" in line for line in lines), lines
