"""The lecture page object: where each field came from."""

from __future__ import annotations

from crawler.pages import LectureItem, field_sources, parse_lecture_page
from crawler.pages.visible import cut_short
from crawler.schema import PARSED_FIELDS
from tests.test_pages_underline import EXPECTED, NEXT_DATA, fixture

# Where each field the parsers fill comes from on the recorded page: a field the schema declares since the
# page was recorded is in none of its sources.
SEED001_SOURCES = {
    **{f.name: "none" for f in PARSED_FIELDS},
    "lecture_id": "next_data",
    "title": "next_data",
    "abstract": "next_data",
    "keywords": "next_data",
    "presentation_type": "next_data",
    "event_id": "next_data",
    "event_name": "next_data",
    "session_id": "next_data",
    "session_name": "next_data",
    "held_at": "next_data",
    "published_at": "next_data",
    "doi": "next_data",
    "is_premium": "next_data",
    "related_lecture_ids": "next_data",
    "authors": "none",
    "video_url": "none",
    "video_doi": "none",
    "paper_url": "next_data",
    "slides_url": "none",
    "poster_url": "none",
    "is_poster": "next_data",
}


def test_sources_of_a_page_read_from_its_json() -> None:
    page = parse_lecture_page(fixture("seed001_skeleton"), EXPECTED["seed001"]["skeleton_url"])
    assert page.sources == SEED001_SOURCES
    assert field_sources(page) == SEED001_SOURCES


def test_the_listing_fills_what_the_page_json_lacks() -> None:
    page = parse_lecture_page(fixture("seed001_skeleton"), EXPECTED["seed001"]["skeleton_url"])
    listed = LectureItem(
        lecture_id="130412", title="Other title", video_url="https://assets.underline.io/v.m3u8"
    )
    assert field_sources(page, listed) == {**SEED001_SOURCES, "video_url": "api"}


VISIBLE_SOURCES = {
    **{name: "none" for name in SEED001_SOURCES},
    "lecture_id": "visible_text",
    "title": "visible_text",
    "abstract": "visible_text",
    "is_premium": "visible_text",
}


def test_sources_of_a_page_read_from_what_it_shows() -> None:
    html = NEXT_DATA.sub("", fixture("seed002_skeleton"))
    page = parse_lecture_page(html, EXPECTED["seed002"]["skeleton_url"])
    assert page.extraction == "visible_text"
    assert page.sources == VISIBLE_SOURCES
    listed = LectureItem(
        lecture_id="131877", title="REARANK", keywords=["re-ranking"], package="premium", is_premium=True
    )
    assert field_sources(page, listed) == {
        **VISIBLE_SOURCES,
        "lecture_id": "api",
        "title": "api",
        "keywords": "api",
        "is_premium": "api",
    }


def test_a_page_without_the_premium_label_or_package_leaves_premium_unsourced() -> None:
    page = parse_lecture_page("<title>T | Underline</title>", "http://127.0.0.1:8765/lecture/5-x")
    assert page.sources["is_premium"] == "none"
    assert page.sources["lecture_id"] == "visible_text"
    assert page.sources["title"] == "visible_text"


def test_an_empty_page_names_its_lecture_from_the_url_only() -> None:
    page = parse_lecture_page(b"", "http://127.0.0.1:8765/lecture/5-x")
    assert page.sources == {**{name: "none" for name in SEED001_SOURCES}, "lecture_id": "visible_text"}


def test_a_page_is_cut_short_only_without_any_closing_html_tag() -> None:
    # The usual "</html>" is found from the end; every other spelling of the closing tag still counts.
    cases = {
        "closed": ("<html><body><p>x</p></body></html>", False),
        "closed, then more": ("<html><p>x</p></html>\n<!-- after -->", False),
        "closed in capitals": ("<HTML><p>x</p></HTML>", False),
        "closed with a space": ("<html><p>x</p></html >", False),
        "closed with a newline": ("<html><p>x</p></html\n>", False),
        "never closed": ("<html><body><p>x</p>", True),
        "only an opening tag's look-alike": ("<html><p>x</p></htm", True),
        "no html tag": ("<p>x</p>", False),
    }
    for case, (text, expected) in cases.items():
        assert cut_short(text) is expected, f"case {case}"
        assert cut_short(text.replace("<p>x</p>", "<p>\u4e2d</p>")) is expected, f"case {case}, not ASCII"
