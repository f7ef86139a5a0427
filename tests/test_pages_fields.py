"""The parser's lecture fields are the schema's: a plain attribute field is declared once, in the schema
(spellings, kind, type), and is then read from the listing and the page alike, under each spelling."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path
from typing import Any

from crawler.pages import parse_lecture_document
from crawler.pages.attributes import LECTURE_ATTRIBUTES
from crawler.pages.fields import ITEM_FIELD_NAMES, JSON_FIELDS, LectureItem
from crawler.publish.card_statistics import table_cell
from crawler.schema import ATTRIBUTE_FIELDS, FIELDS, PARSED_FIELDS, Field, Lecture
from docsgen.columns import render_page

# A value of each kind an attribute may have, as the site sends it and as it is read (written here, not
# taken from the parser).
SENT_AND_READ: dict[str, tuple[Any, Any]] = {
    "string": ("v", "v"),
    "string_list": (["a", "b"], ["a", "b"]),
    "timestamp": ("2025-11-05T09:00:00.000Z", datetime.fromisoformat("2025-11-05T09:00:00+00:00")),
    "bool": (True, True),
    "int": (2**40, 2**40),
    "int32": (-7, -7),
    "float": (0.5, 0.5),
}
LINK = ("https://assets.underline.io/x.pdf", "https://assets.underline.io/x.pdf")


def test_the_parser_s_record_is_the_schema_s_with_bookkeeping_beside_it() -> None:
    """No field of the schema is declared again: the parser's record is the schema's, every field of it
    travels in the lecture's JSON, and what it adds is no column of the schema (nor of its record)."""
    assert issubclass(LectureItem, Lecture)
    own = {f.name for f in dataclasses.fields(LectureItem)} - {f.name for f in dataclasses.fields(Lecture)}
    schema_names = {f.name for f in FIELDS}
    assert own and not own & schema_names
    assert tuple(f.name for f in PARSED_FIELDS) == ITEM_FIELD_NAMES
    travels = [f.name for f in JSON_FIELDS]
    assert travels[: len(FIELDS)] == [f.name for f in FIELDS]
    assert set(travels[len(FIELDS) :]) < own
    side = LectureItem(lecture_id="7", slug="s", counted=["c"], carried=True, listing_hashes={"title": "h"})
    assert list(side.record()) == list(side.values()) == [f.name for f in FIELDS]
    assert side.record() == Lecture(lecture_id="7").values()
    for f in ATTRIBUTE_FIELDS:
        assert f.name in ITEM_FIELD_NAMES, f"{f=}"
        assert LECTURE_ATTRIBUTES[f.name] == f.attribute, f"{f=}"


def _sent_and_read(f: Field) -> tuple[Any, Any]:
    return LINK if f.link else SENT_AND_READ[f.kind]


def test_each_plain_attribute_is_read_under_each_of_its_spellings() -> None:
    """Every spelling of every plain attribute of the schema gives the same value, of the field's kind."""
    depth = max(len(f.attribute) for f in ATTRIBUTE_FIELDS)
    for which in range(depth):
        sent = {f.attribute[min(which, len(f.attribute) - 1)]: _sent_and_read(f)[0] for f in ATTRIBUTE_FIELDS}
        doc = {"data": {"type": "thin_lectures", "id": "7", "attributes": sent}}
        fields = parse_lecture_document(doc)
        assert fields.problems == [], f"spelling {which}"
        for f in ATTRIBUTE_FIELDS:
            assert getattr(fields, f.name) == _sent_and_read(f)[1], f"spelling {which}, {f.name}"


def test_every_field_of_every_kind_travels_in_the_schema_s_codec() -> None:
    """A lecture's fields as a page request carries them (JSON) come back equal, bookkeeping included."""
    values = {f.name: _sent_and_read(f)[1] for f in ATTRIBUTE_FIELDS}
    fields = LectureItem(lecture_id="7", slug="s", package="premium", premium_known=False, **values)
    fields.problems = ["p"]
    fields.counted, fields.carried, fields.listing_hashes = ["c"], True, {"title": "h"}
    back = LectureItem.read_json(fields.to_json())
    assert back is not None
    for name in [*(f.name for f in JSON_FIELDS), "listing_hashes"]:
        assert getattr(back, name) == getattr(fields, name), name
    assert LectureItem.from_json(Lecture(lecture_id="7").to_json()) == LectureItem(lecture_id="7")
    assert LectureItem.read_json({"lecture_id": 7}) is None
    assert LectureItem.read_json(["7"]) is None


def test_the_docs_describe_every_column() -> None:
    """``docs/columns.md`` as MkDocs builds it: a row per column, with the schema's description."""
    source = (Path(__file__).resolve().parents[1] / "docs" / "columns.md").read_text(encoding="utf-8")
    page = render_page(source)
    table = page[page.index("## The `lectures` columns") :]
    table = table[: table.index("\n## ", 1)]
    rows = {line.split(" | ")[0]: line for line in table.splitlines() if line.startswith("| `")}
    for f in FIELDS:
        row = rows.get(f"| `{f.name}`")
        assert row is not None, f"{f.name}: no row in docs/columns.md"
        assert f"| {table_cell(f.meaning)} |" in row, f"{f.name}: described otherwise in docs/columns.md"
