"""The library listing's pages read into events and lecture counts, on hand-written documents."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from crawler.pages.catalogue import (
    EventInfo,
    EventSummary,
    LibraryPage,
    event_date,
    parse_library_page,
    summarize_events,
)


def lecture(lecture_id: str | int, event_id: str | None, *, attribute: bool = False) -> dict[str, Any]:
    resource: dict[str, Any] = {"type": "thin_lectures", "id": lecture_id, "attributes": {"title": "T"}}
    if event_id is not None and attribute:
        resource["attributes"]["event_id"] = int(event_id)
    elif event_id is not None:
        resource["relationships"] = {"event": {"data": {"type": "thin_events", "id": event_id}}}
    return resource


def event(event_id: str, **attributes: Any) -> dict[str, Any]:
    return {"type": "thin_events", "id": event_id, "attributes": attributes}


def test_a_page_gives_each_lecture_its_event_and_each_included_event_its_fields() -> None:
    doc = {
        "data": [lecture("131001", "502"), lecture(118002, "469", attribute=True), lecture("131003", "502")],
        "included": [
            event(
                "502", name="EMNLP 2025", start_date="2025-11-05", end_date="2025-11-09", location="Suzhou"
            ),
            # camelCase spellings, as in page JSON, and a timestamp where a date was expected
            event("469", name="  EMNLP\n2024 ", startDate="2024-11-12T09:00:00-05:00", endDate="2024-11-16"),
            {"type": "tags", "id": "7", "attributes": {"name": "poster"}},
        ],
        "meta": {"total_pages": 3, "total_count": 250},
    }
    page = parse_library_page(doc)
    assert page == LibraryPage(
        lectures={"131001": "502", "118002": "469", "131003": "502"},
        events={
            "502": EventInfo("502", "EMNLP 2025", date(2025, 11, 5), date(2025, 11, 9), "Suzhou"),
            "469": EventInfo("469", "EMNLP 2024", date(2024, 11, 12), date(2024, 11, 16), None),
        },
        total_pages=3,
        total_count=250,
    )


def test_a_lecture_whose_event_is_not_included_is_counted_under_an_event_without_a_name() -> None:
    doc = {
        "data": [lecture("1", "502"), lecture("2", "777"), lecture("3", "777"), lecture("4", None)],
        "included": [event("502", name="EMNLP 2025", start_date="2025-11-05")],
        "meta": {"total_pages": 1},
    }
    page = parse_library_page(doc)
    assert page.lectures == {"1": "502", "2": "777", "3": "777", "4": None}
    assert page.problems == ["lecture 4 names no event (or one whose id is not a number)"]
    assert summarize_events(page.lectures, page.events.values()) == [
        EventSummary("502", "EMNLP 2025", date(2025, 11, 5), None, None, 1),
        EventSummary("777", None, None, None, None, 2),
    ]


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        ([{"type": "thin_lectures", "id": "1"}], "the answer is not a JSON object"),
        ("<html>", "the answer is not a JSON object"),
        (None, "the answer is not a JSON object"),
        ({"data": {"type": "thin_lectures", "id": "1"}}, "data is not a list"),
        ({"meta": {"total_pages": 1}}, "data is not a list"),
        (
            {"errors": [{"status": "500", "title": "Internal Server Error", "detail": "boom"}]},
            "API error: 500 Internal Server Error boom",
        ),
    ],
)
def test_an_answer_that_is_not_a_listing_is_an_error_with_nothing_read(doc: Any, error: str) -> None:
    assert parse_library_page(doc) == LibraryPage({}, {}, error=error)


def test_an_e_mail_address_never_leaves_the_parser() -> None:
    doc = {
        "data": [lecture("1", "12"), lecture("2", "x@example.org")],
        "included": [
            event(
                "12",
                name="ACL 2024 (chairs: chair@acl2024.org)",
                location="Bangkok, contact local.chair@acl.org",
                description="## Welcome!\nWrite to pc-chairs@acl2024.org for anything.",
                start_date="2024-08-11 (ask info@acl.org)",
            ),
            event("bad@example.org", name="Broken"),
        ],
    }
    page = parse_library_page(doc)
    shown = repr(page) + repr(summarize_events(page.lectures, page.events.values()))
    assert "@" not in shown
    assert page.events == {
        "12": EventInfo(
            "12", "ACL 2024 (chairs: [email removed])", None, None, "Bangkok, contact [email removed]"
        )
    }
    assert page.problems == [
        "event 12 start is not a date: '2024-08-11 (ask [email removed])'",
        "event id '[email removed]' is not a number; left out",
        "lecture 2 names no event (or one whose id is not a number)",
    ]


def test_entries_that_are_not_lectures_and_repeated_lectures_are_left_out_and_said() -> None:
    doc = {
        "data": [
            lecture("5", "502"),
            lecture("5", "469"),
            lecture("abc", "502"),
            {"type": "thin_events", "id": "502"},
            "junk",
        ],
        "meta": {"totalPages": "2", "totalCount": 9.0},
    }
    page = parse_library_page(doc)
    assert page.lectures == {"5": "502"}
    assert page.skipped == 3
    assert (page.total_pages, page.total_count) == (2, 9)
    assert page.problems == [
        "lecture 5 is listed twice on the page",
        "3 entries of data are not lectures; left out",
    ]
    # The event in data is an event too (its fields, if any, are read).
    assert page.events == {"502": EventInfo("502")}


def test_an_unusable_page_count_is_said_and_not_believed() -> None:
    page = parse_library_page({"data": [], "meta": {"total_pages": -3}})
    assert page.total_pages is None
    assert page.problems == ["meta.total_pages is not a page count: '-3'"]


@pytest.mark.parametrize(
    ("value", "expected", "problem"),
    [
        ("2025-11-05", date(2025, 11, 5), None),
        ("2025-11-05T00:00:00.000Z", date(2025, 11, 5), None),
        (" 2025-11-05 10:00 ", date(2025, 11, 5), None),
        (None, None, None),
        ("", None, None),
        ("2025-02-30", None, "start is not a date: '2025-02-30'"),
        ("Nov 5, 2025", None, "start is not a date: 'Nov 5, 2025'"),
        (20251105, None, "start is not a date: '20251105'"),
    ],
)
def test_event_dates(value: Any, expected: date | None, problem: str | None) -> None:
    problems: list[str] = []
    assert event_date(value, "start", problems) == expected
    assert problems == ([problem] if problem else [])


def test_events_are_summed_sorted_by_start_then_id_and_the_first_value_of_each_field_wins() -> None:
    lectures = {"1": "502", "2": "502", "3": "469", "4": "900", "5": "12", "6": "11", "7": None}
    events = [
        EventInfo("502", "EMNLP 2025", date(2025, 11, 5), None, None),
        EventInfo("502", "renamed later", date(2020, 1, 1), date(2025, 11, 9), "Suzhou"),
        EventInfo("469", "EMNLP 2024", date(2024, 11, 12), date(2024, 11, 16), "Miami"),
        EventInfo("12", "B", date(2024, 11, 12), None, None),
        EventInfo("11", "A", None, None, None),
        EventInfo("300", "no lectures", date(2019, 1, 1), None, None),
    ]
    assert summarize_events(lectures, events) == [
        EventSummary("300", "no lectures", date(2019, 1, 1), None, None, 0),
        EventSummary("12", "B", date(2024, 11, 12), None, None, 1),
        EventSummary("469", "EMNLP 2024", date(2024, 11, 12), date(2024, 11, 16), "Miami", 1),
        EventSummary("502", "EMNLP 2025", date(2025, 11, 5), date(2025, 11, 9), "Suzhou", 2),
        EventSummary("11", "A", None, None, None, 1),
        EventSummary("900", None, None, None, None, 1),
    ]


def test_event_ids_are_the_numbers_event_ids_takes() -> None:
    doc = {"data": [lecture("1", "0502")], "included": [event("0502", name="EMNLP 2025")]}
    page = parse_library_page(doc)
    assert page.lectures == {"1": "502"}
    assert list(page.events) == ["502"]
