"""The ground truth's own small implementations of what the crawler computes, written apart from it.

A bug in the crawler's URL builder, content hash, timestamp format, name normalization or LaTeX
cleaner must not appear on both sides of a comparison, so none of them is imported here. The cleaned
text of the real records' abstracts and titles is a table of literal values (``data/clean_text.jsonl.gz``,
each a reviewed snapshot of what a reader of the rendered paper sees); text the table does not know and
that holds nothing LaTeX-like is its own cleaned form, and a block the table knows followed by such text
is the block's cleaned form followed by that text.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

CLEAN_TEXT_FILE = "clean_text.jsonl.gz"
# The fields the published content hash covers, in no particular order (the hash sorts keys).
CONTENT_FIELDS: tuple[str, ...] = (
    "lecture_id",
    "url",
    "title",
    "abstract",
    "keywords",
    "presentation_type",
    "event_id",
    "event_name",
    "session_id",
    "session_name",
    "held_at",
    "published_at",
    "doi",
    "is_premium",
    "related_lecture_ids",
    "text",
    "alternate_ids",
)
# Fields added to the schema after records were first hashed: hashed only when they hold a value, so a
# record without them keeps its old hash.
CONTENT_FIELDS_WHEN_SET: tuple[str, ...] = (
    "authors",
    "video_url",
    "video_doi",
    "paper_url",
    "slides_url",
    "poster_url",
    "is_poster",
    "anthology_id",
    "anthology_url",
)
_LIST_FIELDS = frozenset({"keywords", "related_lecture_ids", "alternate_ids"})
# What LaTeX markup or a PDF line-end hyphenation looks like; text without any of it needs no cleaning.
_LATEX_LIKE = re.compile(r"[\\$~]|--|[a-z]- [a-z]")


class UnknownText(LookupError):
    """Text with LaTeX-like markup that the literal table has no cleaned form for."""


def lecture_url(web_base: str, lecture_id: str, slug: str) -> str:
    return f"{web_base.rstrip('/')}/lecture/{lecture_id}-{slug}"


def timestamp(value: datetime) -> str:
    """``2025-11-05T01:00:00Z``, with microseconds only when there are any."""
    value = value.astimezone(UTC)
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}"
    text += f":{value.second:02d}"
    if value.microsecond:
        text += f".{value.microsecond:06d}"
    return text + "Z"


def content_hash(record: Mapping[str, Any]) -> str:
    """SHA-256 of the record's content fields as sorted compact JSON (missing lists count as empty)."""
    payload = {}
    for name in CONTENT_FIELDS:
        value = record.get(name)
        payload[name] = list(value or []) if name in _LIST_FIELDS else value
    for name in CONTENT_FIELDS_WHEN_SET:
        value = record.get(name)
        if value is not None and value != []:
            payload[name] = value
    blob = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def collapse(text: str) -> str:
    """NFC, every run of whitespace one space, none at either end."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def published_name(full_name: str | None, first_name: str, last_name: str) -> str:
    """An author's name as published: ``full_name``, else first and last name; NFC, spaces collapsed."""
    if full_name is not None and full_name.strip():
        return collapse(full_name)
    return collapse(f"{first_name} {last_name}")


def published_affiliation(affiliation: str | None) -> list[str]:
    if affiliation is None or not affiliation.strip():
        return []
    return [collapse(affiliation)]


@cache
def _clean_table() -> dict[str, str]:
    ref = resources.files("crawler.replica").joinpath("data").joinpath(CLEAN_TEXT_FILE)
    with ref.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as text:
        pairs = (json.loads(line) for line in text if line.strip())
        return {pair["raw"]: pair["clean"] for pair in pairs}


def clean_text(block: str) -> str:
    """The cleaned form of a normalized text block; raises :class:`UnknownText` when it is not known."""
    table = _clean_table()
    if block in table:
        return table[block]
    if _LATEX_LIKE.search(block) is None:
        return block
    # A known block with plain text appended (a copy's " (replica copy 2)", an edited abstract's added
    # sentence): the head as the table cleans it, the tail as it is. The tail is read with the two
    # characters before it, so that no markup or hyphenation straddles the cut.
    cut = len(block)
    while (cut := block.rfind(" ", 0, cut)) > 0 and _LATEX_LIKE.search(block, max(cut - 2, 0)) is None:
        if block[:cut] in table:
            return table[block[:cut]] + block[cut:]
    raise UnknownText(block[:80])
