"""Where a subtitle file may be fetched from, why a request brought none, and what the budget pays."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet.error import ConnectionRefusedError
from twisted.python.failure import Failure

from crawler.spiders.spending import BudgetTerms
from crawler.spiders.subtitles import failure_problem
from crawler.urls import host_of, subtitle_host_allowed

SITE = ("underline.io", "app.underline.io")
ASSETS = ("assets.underline.io",)


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://assets.underline.io/lecture/1/transcripts/en.vtt", True),
        ("http://ASSETS.underline.io./lecture/1/en.vtt", True),
        ("https://app.underline.io:8443/files/en.vtt", True),
        ("https://underline.io/en.vtt", True),
        ("https://evil.assets.underline.io.example.com/en.vtt", False),
        ("https://example.com/en.vtt", False),
        ("ftp://assets.underline.io/en.vtt", False),
        ("file:///etc/passwd", False),
        ("https://169.254.169.254/latest/meta-data", False),
        ("//assets.underline.io/en.vtt", False),
    ],
)
def test_a_subtitle_file_is_fetched_only_from_the_site_or_an_asset_host(url: str, allowed: bool) -> None:
    assert subtitle_host_allowed(url, SITE, ASSETS) is allowed, url


def test_the_site_s_own_host_counts_on_any_port() -> None:
    site = (host_of("http://127.0.0.1:8123"), host_of("http://127.0.0.1:8123/api/v1"))
    assert site == ("127.0.0.1", "127.0.0.1")
    assert subtitle_host_allowed("http://127.0.0.1:9999/lecture/1/en.vtt", site, ())
    assert not subtitle_host_allowed("http://localhost:9999/lecture/1/en.vtt", site, ())
    assert subtitle_host_allowed("http://localhost:9999/lecture/1/en.vtt", site, ("localhost",))
    assert host_of("assets.underline.io") == "assets.underline.io"


def _failure(error: Exception, **meta: object) -> Failure:
    failure = Failure(error)
    failure.request = Request("https://assets.underline.io/en.vtt", meta=meta)  # type: ignore[attr-defined]
    return failure


def test_why_a_subtitle_request_brought_no_file() -> None:
    response = Response("https://assets.underline.io/en.vtt", status=500)
    cases = {
        "too_large": _failure(IgnoreRequest("body (3000000 bytes) is larger than the download max size")),
        "robots": _failure(IgnoreRequest("Forbidden by robots.txt")),
        "off_host": _failure(IgnoreRequest("redirects off"), off_origin="https://elsewhere.invalid/x"),
        "failed": _failure(HttpError(response, "Ignoring non-200 response")),
    }
    cases_refused = _failure(ConnectionRefusedError())
    for expected, failure in cases.items():
        assert failure_problem(failure) == expected, f"case {expected}"
    assert failure_problem(cases_refused) == "failed"


def test_the_budget_pays_subtitle_files_from_what_the_pages_leave() -> None:
    terms = BudgetTerms(page_budget=30, subtitles=True, spent_before=0)
    assert terms.page_cost() == 3
    assert terms.pages_left() == 10
    # 10 pages and their 10 track lists leave 10 files; 2 presence questions take 2 of them.
    assert terms.subtitle_allowance(presence_asked=0, pages=10) == 10
    assert terms.subtitle_allowance(presence_asked=2, pages=9) == 10
    # Fewer lectures to fetch than the budget buys: the rest pays files.
    assert terms.subtitle_allowance(presence_asked=0, pages=4) == 22
    assert BudgetTerms(page_budget=30, subtitles=True, spent_before=3).subtitle_allowance(0, 7) == 10
    assert BudgetTerms(page_budget=0, subtitles=True, spent_before=0).subtitle_allowance(0, 7) is None
    assert BudgetTerms(page_budget=30, subtitles=False, spent_before=0).subtitle_allowance(0, 7) is None
