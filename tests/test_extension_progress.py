from __future__ import annotations

import pytest
from scrapy.exceptions import NotConfigured

from crawler.extensions.progress import ProgressLine, format_progress, format_refresh
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
