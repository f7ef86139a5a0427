"""The ground truth's cleaned text (the reviewed table, and text appended to a block it knows), and the
published form of an attribute the replica registers."""

from __future__ import annotations

import gzip
import json
from importlib import resources
from typing import Any

import pytest

from crawler.replica.gold import UnknownText, clean_text, published_attribute
from crawler.schema import Field, Kind


def reviewed_pairs() -> list[tuple[str, str]]:
    """The table's pairs whose cleaned form differs from the raw block, read from the data file."""
    ref = resources.files("crawler.replica").joinpath("data").joinpath("clean_text.jsonl.gz")
    with ref.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as text:
        pairs = [json.loads(line) for line in text if line.strip()]
    return [(p["raw"], p["clean"]) for p in pairs if p["raw"] != p["clean"]]


def test_a_known_block_is_cleaned_as_reviewed() -> None:
    raw, clean = reviewed_pairs()[0]
    assert clean_text(raw) == clean


@pytest.mark.parametrize("tail", [" We also release our code.", " (replica copy 2)", " Two. Sentences."])
def test_plain_text_after_a_known_block_is_kept_as_it_is(tail: str) -> None:
    for raw, clean in reviewed_pairs()[:5]:
        assert clean_text(raw + tail) == clean + tail, f"{raw=}, {clean=}"


def test_plain_text_alone_is_its_own_cleaned_form() -> None:
    assert clean_text("No markup here at all.") == "No markup here at all."


@pytest.mark.parametrize("tail", [" and $x^2$ after it.", " a -- b"])
def test_markup_after_a_known_block_is_unknown(tail: str) -> None:
    raw, _ = reviewed_pairs()[0]
    with pytest.raises(UnknownText):
        clean_text(raw + tail)


def test_a_hyphenation_across_the_cut_is_unknown() -> None:
    # "…LLMs- and": a line-end hyphenation that only the whole text shows.
    raw = next(r for r, _ in reviewed_pairs() if r[-1].islower())
    with pytest.raises(UnknownText):
        clean_text(raw + "- and more")


@pytest.mark.parametrize(
    ("kind", "options", "sent", "held"),
    [
        ("timestamp", {}, "2025-11-02T08:30:00Z", "2025-11-02T08:30:00Z"),
        ("timestamp", {}, "2025-11-02T09:30:00.250+01:00", "2025-11-02T08:30:00.250000Z"),
        ("timestamp", {}, "2025-11-02T08:30:00", "2025-11-02T08:30:00Z"),
        ("timestamp", {}, "", None),
        ("timestamp", {}, None, None),
        ("float", {}, 3, 3.0),
        ("int", {}, 2**40, 2**40),
        ("bool", {}, False, False),
        ("string_list", {}, ["en", "de"], ["en", "de"]),
        ("string_list", {}, None, []),
        ("string", {}, " as  sent ", " as  sent "),
        ("string", {"one_line": True}, " Room\n 4 ", "Room 4"),
        ("string", {"link": True}, "/files/a.pdf", "http://api.test/files/a.pdf"),
        ("string", {"link": True}, "https://cdn.test/a.pdf", "https://cdn.test/a.pdf"),
        ("string", {}, None, None),
    ],
)
def test_an_attribute_is_held_in_its_published_form(
    kind: Kind, options: dict[str, bool], sent: Any, held: Any
) -> None:
    field = Field("An attribute.", name="added", kind=kind, attribute=("added",), **options)
    assert published_attribute(field, sent, "http://api.test/") == held
