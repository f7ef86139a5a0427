from __future__ import annotations

import pytest
from scrapy.exceptions import NotConfigured

from crawler.extensions.progress import ProgressLine, format_progress
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
