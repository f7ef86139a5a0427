"""Where a subtitle file may be fetched from, why a request brought none, and what the budget pays."""

from __future__ import annotations

import logging

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler
from twisted.internet.error import ConnectionRefusedError
from twisted.python.failure import Failure

from crawler.items import LectureItem, TranscriptItem
from crawler.privacy.spoken import TRANSCRIPT_PRIVACY_RULE
from crawler.schema import Transcript
from crawler.spiders.asset_files import failure_problem
from crawler.spiders.spending import BudgetTerms
from crawler.spiders.subtitles import SubtitleFiles
from crawler.state.stage_rows import PRIVACY_RULE_KEY
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


def _subtitle_files(before: list[TranscriptItem]) -> SubtitleFiles:
    crawler = get_crawler()
    crawler.stats = MemoryStatsCollector(crawler)
    return SubtitleFiles(
        crawler.stats,
        "https://app.underline.io",
        site_hosts=SITE,
        asset_hosts=ASSETS,
        max_bytes=1024,
        max_tracks=20,
        callbacks=(lambda *a: None, lambda *a: None, lambda *a: None, lambda *a: None),
        previous=lambda lecture_id: before if lecture_id == "7" else [],
        logger=logging.LoggerAdapter(logging.getLogger("test"), {}),
    )


def test_a_track_list_that_did_not_answer_keeps_the_tracks_the_last_stage_read() -> None:
    url = "https://assets.underline.io/lecture/7/transcripts/en.vtt"
    staged = TranscriptItem(
        record=Transcript(
            lecture_id="7", event_id="502", locale="en", language="English", auto_generated=True,
            subtitle_url=url, text="hello", cues_skipped=0,
        ),
        validators={"etag": '"x"', PRIVACY_RULE_KEY: TRANSCRIPT_PRIVACY_RULE},
    )  # fmt: skip
    files = _subtitle_files([staged])
    for case in ("failed", "unreadable"):
        item = LectureItem(
            lecture_id="7", event_id="502", url="https://underline.io/lecture/7-x", extraction=""
        )
        request = Request("https://app.underline.io/api/v1/transcripts", cb_kwargs={"item": item})
        if case == "failed":
            failure = Failure(HttpError(Response(request.url, status=500), "500"))
            failure.request = request  # type: ignore[attr-defined]
            out = list(files.tracks_failed(failure))
        else:
            out = list(files.tracks(TextResponse(request.url, body=b"<html>", request=request), item))
        assert out == [item, staged], f"case {case}"
        assert item.subtitles == [{"locale": "en", "name": "English", "auto_generated": True, "url": url}], (
            f"case {case}"
        )
    # A lecture the last stage read no track of keeps none: nothing is made up.
    item = LectureItem(lecture_id="8", event_id="502", url="https://underline.io/lecture/8-x", extraction="")
    failure = Failure(HttpError(Response("https://app.underline.io/x", status=500), "500"))
    failure.request = Request("https://app.underline.io/x", cb_kwargs={"item": item})  # type: ignore[attr-defined]
    assert list(files.tracks_failed(failure)) == [item]
    assert item.subtitles is None


def test_a_staged_track_of_earlier_privacy_rules_is_kept_redacted_under_todays() -> None:
    """A track the last stage read under earlier rules (its line names other rules, or none) is kept
    redacted under the rules in force, and its line says so: it is redacted again once, not each night."""
    url = "https://assets.underline.io/lecture/7/transcripts/en.vtt"
    said = "Reach me at 415-555-2671 please"
    staged = TranscriptItem(
        record=Transcript(
            lecture_id="7", event_id="502", locale="en", language="English", auto_generated=True,
            subtitle_url=url, text=said, cues_skipped=0,
        ),
        validators={"etag": '"x"'},
    )  # fmt: skip
    files = _subtitle_files([staged])
    (kept,) = files.carried("7")
    assert kept.record.text == "Reach me at [phone removed] please"
    assert kept.validators == {"etag": '"x"', PRIVACY_RULE_KEY: TRANSCRIPT_PRIVACY_RULE}
