"""The counters of a crawl's part before a resume: what the resumed crawl adds to its own."""

from __future__ import annotations

from pathlib import Path

from scrapy.statscollectors import StatsCollector
from scrapy.utils.test import get_crawler

from crawler.extensions.crawl_stats import CrawlStatsSnapshot, add_counters, earlier_part


def test_the_part_before_a_resume_counts_listing_once_and_lectures_from_the_stage() -> None:
    snapshot = {
        # The listing, read again whole by the resumed part.
        "underline/listed": 120,
        "underline/listed/502": 120,
        "underline/listing_pages": 2,
        "underline/listing_status/502": 200,
        "underline/resume_skipped": 7,
        # Lecture outcomes: the snapshot's figures are stale (a failure staged after it is missing).
        "underline/fetch_failed": 1,
        "underline/extraction/next_data": 30,
        "stage/lectures": 31,
        # Requests and retries: the snapshot's.
        "downloader/request_count": 40,
        "backoff/max_reached": 1,
    }
    staged = {"underline/fetch_failed": 2, "underline/extraction/next_data": 33, "stage/lectures": 35}
    earlier = earlier_part(snapshot, staged)
    assert earlier == {
        "underline/fetch_failed": 2,
        "underline/extraction/next_data": 33,
        "stage/lectures": 35,
        "downloader/request_count": 40,
        "backoff/max_reached": 1,
    }
    resumed = {
        "underline/listed": 200,
        "underline/listing_status/502": 200,
        "underline/extraction/next_data": 165,
    }
    whole = add_counters(earlier, resumed)
    assert whole["underline/listed"] == 200
    assert whole["underline/listing_status/502"] == 200
    assert whole["underline/extraction/next_data"] == 198
    assert whole["underline/fetch_failed"] == 2


def test_a_kill_before_the_first_snapshot_still_counts_what_was_staged() -> None:
    assert earlier_part({}, {"underline/fetch_failed": 1, "stage/lectures": 4}) == {
        "underline/fetch_failed": 1,
        "stage/lectures": 4,
    }


def test_the_close_adds_the_earlier_part_only_to_counters_that_are_numbers(tmp_path: Path) -> None:
    """A resumed crawl stopped by a limit closes with counters Scrapy left unset or not numeric: the
    earlier part's sums go where they can, and nothing raises."""
    crawler = get_crawler(settings_dict={"STAGE_STATE_DIR": str(tmp_path)})
    crawler.stats = StatsCollector(crawler)
    crawler.stats.set_value("memusage/max", None)
    crawler.stats.set_value("stage/lectures", 5)
    snapshot = CrawlStatsSnapshot(crawler, tmp_path / "stats.json", 60.0)
    snapshot.earlier = {"memusage/max": 2048, "stage/lectures": 3, "downloader/request_count": 7}
    snapshot.spider_closed()
    stats = crawler.stats.get_stats()
    assert stats["stage/lectures"] == 8
    assert stats["downloader/request_count"] == 7
    assert stats["memusage/max"] is None
