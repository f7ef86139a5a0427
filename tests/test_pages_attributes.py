"""The table of attribute spellings, and the report of attributes no table knows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from crawler.pages import (
    LECTURE_ATTRIBUTES,
    UnknownAttribute,
    lecture_resources,
    parse_lecture_document,
    parse_lecture_page,
    unknown_attributes,
)
from crawler.pages.attributes import attribute, lookup, present_spelling, relationship_name
from crawler.pages.jsonapi import camel_case
from crawler.schema import ATTRIBUTE_FIELDS
from tests.test_pages_jsonapi import JsonDict, JsonMap
from tests.test_pages_underline import WEB

# A value per field as the site sends it, and the value of that field once read (written by hand).
WRITTEN: dict[str, tuple[Any, Any]] = {
    "title": ("Router-Tuning", "Router-Tuning"),
    "abstract": ("The Mixture of Depths", "The Mixture of Depths"),
    "slug": ("router-tuning", "router-tuning"),
    "keywords": (["layer skip"], ["layer skip"]),
    "held_at": ("2025-11-06T02:30:00.000Z", datetime(2025, 11, 6, 2, 30, tzinfo=UTC)),
    "published_at": ("2025-10-28T12:00:00Z", datetime(2025, 10, 28, 12, 0, tzinfo=UTC)),
    "doi": ("10.48448/7fqa-2p0c", "10.48448/7fqa-2p0c"),
    "event_id": (502, "502"),
    "package": ("premium", "premium"),
    "paper_url": ("https://app.underline.io/p/1/paper", "https://app.underline.io/p/1/paper"),
    "video_url": ("https://assets.underline.io/v/1.m3u8", "https://assets.underline.io/v/1.m3u8"),
    "video_doi": ("10.48448/video-1", "10.48448/video-1"),
    "slides_url": ("https://assets.underline.io/s/1.pdf", "https://assets.underline.io/s/1.pdf"),
    "poster_url": ("https://assets.underline.io/p/1.pdf", "https://assets.underline.io/p/1.pdf"),
    "is_poster": (True, True),
}
# A value of each kind a plain attribute may be of, as sent and as read (written by hand): what a field the
# schema declares since the table above was written is tried with.
OF_KIND: dict[str, tuple[Any, Any]] = {
    "string": ("Track 2", "Track 2"),
    "bool": (False, False),  # False is a value
    "int": (2**40, 2**40),
    "int32": (-7, -7),
    "float": (3, 3.0),
    "timestamp": ("2025-11-02T09:30:00+01:00", datetime(2025, 11, 2, 8, 30, tzinfo=UTC)),
    "string_list": (["en", "de"], ["en", "de"]),
}
LINK = ("https://assets.underline.io/x/1.pdf", "https://assets.underline.io/x/1.pdf")
SENT_AND_READ: dict[str, tuple[Any, Any]] = {
    **WRITTEN,
    **{f.name: LINK if f.link else OF_KIND[f.kind] for f in ATTRIBUTE_FIELDS if f.name not in WRITTEN},
}
EVERY_SPELLING = [(f, name) for f, names in LECTURE_ATTRIBUTES.items() for name in names]


def test_every_mapped_field_has_a_known_value() -> None:
    assert set(SENT_AND_READ) == set(LECTURE_ATTRIBUTES)


def test_the_table_holds_the_known_spellings() -> None:
    assert LECTURE_ATTRIBUTES["poster_url"] == ("poster_document_url", "posterDocument", "posterDocumentUrl")
    assert LECTURE_ATTRIBUTES["video_url"] == ("playlist",)
    assert LECTURE_ATTRIBUTES["slides_url"] == ("slideshow_url", "slideshowUrl")
    assert LECTURE_ATTRIBUTES["is_poster"] == ("poster_lecture", "posterLecture")
    assert LECTURE_ATTRIBUTES["doi"] == ("underline_doi", "underlineDoi")


@pytest.mark.parametrize("names", list(LECTURE_ATTRIBUTES.values()))
def test_every_snake_case_spelling_has_its_camel_case_twin(names: tuple[str, ...]) -> None:
    # The page JSON spells in camelCase what the API spells in snake_case.
    assert all(camel_case(name) in names for name in names if "_" in name)


@pytest.mark.parametrize(("field", "spelling"), EVERY_SPELLING)
def test_each_spelling_maps_from_the_api(field: str, spelling: str) -> None:
    sent, read = SENT_AND_READ[field]
    doc = {"data": {"type": "thin_lectures", "id": "7", "attributes": {spelling: sent}}}
    fields = parse_lecture_document(doc)
    assert getattr(fields, field) == read
    assert fields.problems == []


@pytest.mark.parametrize(("field", "spelling"), EVERY_SPELLING)
def test_each_spelling_maps_from_the_page_json(field: str, spelling: str) -> None:
    sent, read = SENT_AND_READ[field]
    doc = {"data": {"type": "thin_lectures", "id": "7", "attributes": {spelling: sent}}}
    payload = json.dumps({"props": {"pageProps": {"fallback": {"k": doc}}}})
    page = parse_lecture_page(f"<script id='__NEXT_DATA__'>{payload}</script>", f"{WEB}/lecture/7")
    assert page.extraction == "next_data"
    assert page.fields is not None
    assert getattr(page.fields, field) == read


def test_a_null_under_one_spelling_does_not_hide_a_value_under_another() -> None:
    attributes = {"poster_document_url": None, "posterDocument": "https://assets.underline.io/p/2.pdf"}
    fields = parse_lecture_document({"data": {"type": "thin_lectures", "id": "7", "attributes": attributes}})
    assert fields.poster_url == "https://assets.underline.io/p/2.pdf"


def lecture(ident: str, **attributes: Any) -> dict[str, Any]:
    return {"type": "thin_lectures", "id": ident, "attributes": {"title": f"T{ident}", **attributes}}


def test_unknown_attributes_are_counted_with_a_scrubbed_example() -> None:
    resources = [
        lecture("1", topics=["layer skip", "routing"], contact="write to jane.doe@example.org please"),
        lecture("2", topics=["mixture of depths"], heldAt="2025-11-06T02:30:00Z", extra=None),
        lecture("3", topics=[], blurb="x" * 200, poster_document_url=None),
        lecture("4", note="a" * 70 + " jane.doe@example.org"),
        {"type": "thin_lectures", "id": "5", "attributes": "not a mapping"},
        "junk",
    ]
    assert unknown_attributes(resources) == {
        "topics": UnknownAttribute(3, '["layer skip", "routing"]'),
        "blurb": UnknownAttribute(1, "x" * 79 + "\u2026"),
        "contact": UnknownAttribute(1, "write to [email removed] please"),
        "extra": UnknownAttribute(1, "null"),
        "note": UnknownAttribute(1, "a" * 70 + " [email r\u2026"),
    }


def test_a_renamed_attribute_shows_up_while_the_field_goes_empty() -> None:
    doc = {
        "data": [lecture("1", topics=["a"]), lecture("2", topics=["b", "c"])],
        "included": [
            {"type": "thin_events", "id": "502", "attributes": {"name": "EMNLP 2025", "city": "Suzhou"}}
        ],
    }
    assert [parse_lecture_document({"data": d}).keywords for d in doc["data"]] == [[], []]
    assert unknown_attributes(lecture_resources([doc])) == {"topics": UnknownAttribute(2, '["a"]')}


def test_a_page_without_unknown_attributes_reports_none() -> None:
    attributes = {spelling: SENT_AND_READ[field][0] for field, spelling in EVERY_SPELLING}
    assert unknown_attributes([lecture("1", **attributes)]) == {}


def test_spellings_are_looked_up_in_any_mapping() -> None:
    # A dict is looked up on its fast path; any other mapping as it always was, with the same answers.
    attributes = {"heldAt": None, "held_at": "2025-11-06T02:30:00Z", "slug": "x"}
    spellings = ("heldAt", "held_at")
    for kind in (dict, JsonDict, JsonMap):
        given = kind(attributes)
        assert lookup(given, spellings) == "2025-11-06T02:30:00Z", f"case {kind.__name__}"
        assert present_spelling(given, spellings) == "heldAt", f"case {kind.__name__}"
        assert lookup(given, ("absent",)) is None, f"case {kind.__name__}"
        assert present_spelling(given, ("absent",)) is None, f"case {kind.__name__}"
        resource = kind({"attributes": given, "relationships": kind({"eventSession": kind({"data": None})})})
        assert attribute(resource, spellings) == "2025-11-06T02:30:00Z", f"case {kind.__name__}"
        assert relationship_name(resource, ("event_session", "eventSession")) == "eventSession", (
            f"case {kind.__name__}"
        )
    assert lookup(["held_at"], spellings) is None
    assert present_spelling("held_at", spellings) is None
