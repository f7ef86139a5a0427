"""The counters of a crawl's part before a resume: what the resumed crawl adds to its own."""

from __future__ import annotations

from crawler.extensions.crawl_stats import add_counters, earlier_part


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
