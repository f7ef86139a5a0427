"""The parser's lecture fields follow the schema: a plain attribute field is declared once in the schema
(spellings, kind) and once here with its type, and is then read from the listing and the page alike."""

from __future__ import annotations

import typing
from datetime import datetime
from pathlib import Path

from crawler.pages import parse_lecture_document
from crawler.pages.attributes import LECTURE_ATTRIBUTES
from crawler.pages.fields import ITEM_FIELD_NAMES, LectureFields
from crawler.schema import ATTRIBUTE_FIELDS, FIELDS, ONE_LINE_FIELDS

# What each kind of plain attribute reads into (written here, not taken from the parser).
EXPECTED_TYPES = {
    "string": str | None,
    "string_list": list[str],
    "timestamp": datetime | None,
    "bool": bool | None,
}


def test_every_plain_attribute_field_is_declared_with_the_type_of_its_kind() -> None:
    hints = typing.get_type_hints(LectureFields)
    for f in ATTRIBUTE_FIELDS:
        assert f.name in hints, f"{f.name}: declare it in crawler/pages/fields.py LectureFields"
        assert hints[f.name] == EXPECTED_TYPES[f.kind], f.name
        assert f.name in ITEM_FIELD_NAMES, f"{f=}"


def test_the_plain_attributes_are_the_schema_s_and_their_spellings_are_tried() -> None:
    assert [f.name for f in ATTRIBUTE_FIELDS] == [
        "title",
        "abstract",
        "keywords",
        "held_at",
        "published_at",
        "doi",
        "video_url",
        "video_doi",
        "paper_url",
        "slides_url",
        "poster_url",
        "is_poster",
    ]
    for f in ATTRIBUTE_FIELDS:
        assert LECTURE_ATTRIBUTES[f.name] == f.attribute, f"{f=}"
    assert [f.name for f in ONE_LINE_FIELDS] == [
        "title",
        "keywords",
        "presentation_type",
        "event_name",
        "session_name",
    ]


def test_each_plain_attribute_is_read_under_its_second_spelling_too() -> None:
    """The page JSON's camelCase spelling of every attribute that has one gives the same value."""
    attributes = {
        "title": "T",
        "abstract": "A",
        "keywords": ["k"],
        "heldAt": "2025-11-05T09:00:00.000Z",
        "publishedAt": "2025-10-01T00:00:00Z",
        "underlineDoi": "10.48448/abcd-1234",
        "playlist": "https://assets.underline.io/video/1/file/abr/x.m3u8",
        "videoDoi": "10.48448/v1de-0123",
        "paperUrl": "https://app.underline.io/downloadable_materials/lectures/7/paper",
        "slideshowUrl": "https://assets.underline.io/slides.pdf",
        "posterDocument": "https://assets.underline.io/poster.pdf",
        "posterLecture": True,
    }
    fields = parse_lecture_document({"data": {"type": "thin_lectures", "id": "7", "attributes": attributes}})
    assert fields.problems == []
    assert (fields.title, fields.abstract, fields.keywords) == ("T", "A", ["k"])
    assert fields.held_at == datetime.fromisoformat("2025-11-05T09:00:00+00:00")
    assert fields.published_at == datetime.fromisoformat("2025-10-01T00:00:00+00:00")
    assert (fields.doi, fields.video_doi) == ("10.48448/abcd-1234", "10.48448/v1de-0123")
    assert fields.video_url == "https://assets.underline.io/video/1/file/abr/x.m3u8"
    assert fields.paper_url == "https://app.underline.io/downloadable_materials/lectures/7/paper"
    assert (fields.slides_url, fields.poster_url) == (
        "https://assets.underline.io/slides.pdf",
        "https://assets.underline.io/poster.pdf",
    )
    assert fields.is_poster is True


def test_the_readme_describes_every_column() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("### The `lectures` columns") :]
    table = table[: table.index("\n### ", 1)]
    for f in FIELDS:
        assert f"`{f.name}`" in table, f"{f.name}: describe the column in README.md"
