"""The ground truth's own small implementations of what the crawler computes, written apart from it.

A bug in the crawler's URL builder, content hash, timestamp format, name normalization, LaTeX cleaner or
PDF reader must not appear on both sides of a comparison, so none of them is imported here. The cleaned
text of the real records' abstracts and titles is a table of literal values (``data/clean_text.jsonl.gz``,
each a reviewed snapshot of what a reader of the rendered paper sees); text the table does not know and
that holds nothing LaTeX-like is its own cleaned form, and a block the table knows followed by such text
is the block's cleaned form followed by that text.

Which fields a record has, and what each is (hashed always or only when set, a timestamp, a list, a link),
is the schema's declaration (:data:`crawler.schema.FIELDS`), read here as the crawler reads it: what a
field is declared to be is not one of the computations a comparison with the truth checks.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from crawler.replica.documents import EXPECTED_PROBLEMS, KIND_PERSONAL, NO_TEXT_KINDS, plan_of, site_documents
from crawler.schema import FIELDS, Field

if TYPE_CHECKING:
    from crawler.replica.layout import ReplicaSite

CLEAN_TEXT_FILE = "clean_text.jsonl.gz"
# Which fields the content hash covers, and which of those only when they hold a value (the fields added
# after records were first hashed, so that a record without them keeps its hash), is the schema's word
# (``Field.hashed``, ``Field.hashed_when_empty``); how the hash is made is written here.
_HASHED_ALWAYS: tuple[Field, ...] = tuple(f for f in FIELDS if f.hashed and f.hashed_when_empty)
_HASHED_WHEN_SET: tuple[Field, ...] = tuple(f for f in FIELDS if f.hashed and not f.hashed_when_empty)
_LIST_KINDS = frozenset({"string_list", "struct_list"})
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
    for f in _HASHED_ALWAYS:
        value = record.get(f.name)
        payload[f.name] = list(value or []) if f.kind in _LIST_KINDS else value
    for f in _HASHED_WHEN_SET:
        value = record.get(f.name)
        if value is not None and value != []:
            payload[f.name] = value
    blob = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def published_attribute(f: Field, value: Any, api_base: str) -> Any:
    """A plain listing attribute's value as the site sends it, in the form the truth holds a field of
    kind ``f.kind`` in (JSON: timestamps as :func:`timestamp` writes them); None, or an empty list, when
    the site sends none."""
    if value is None or (value == "" and f.kind == "timestamp"):
        return [] if f.kind == "string_list" else None
    if f.kind == "timestamp":
        parsed = datetime.fromisoformat(value)
        return timestamp(parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC))
    if f.kind == "float":
        return float(value)
    if f.kind == "string_list":
        return list(value)
    if f.kind == "string" and f.link:
        return urljoin(api_base.rstrip("/") + "/", value)
    if f.kind == "string" and f.one_line:
        return collapse(value)
    return value


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


# -- slide decks and posters ----------------------------------------------------------------------------


def _joined_by_hyphen(before: str, after: str) -> bool:
    """Whether a PDF reader joins two lines at a hyphen: the first ends with a hyphen after a letter and
    the second starts with a letter or a digit (a word broken across the lines, or a compound broken
    after its hyphen). The hyphen stays, with nothing after it."""
    return len(before) >= 2 and before[-1] == "-" and before[-2].isalpha() and after[:1].isalnum()


def page_text(lines: Sequence[str]) -> str:
    """The text a reader finds on a page of ``lines`` (top down, as written): the lines joined by one
    space, or by nothing after a hyphen that joins them (:func:`_joined_by_hyphen`); NFC, whitespace
    collapsed."""
    text = ""
    for raw in lines:
        line = collapse(raw)
        if not line:
            continue
        if text and not _joined_by_hyphen(text, line):
            text += " "
        text += line
    return text


def document_url(path: str, assets_base: str | None, listed: str) -> str:
    """A document's URL on the assets origin at ``assets_base`` (None: as the listing names it)."""
    return assets_base.rstrip("/") + path if assets_base else listed


def documents_truth(
    site: ReplicaSite, assets_base: str | None = None, event_ids: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """What a reader must find in every slide deck and poster the events' lectures list (every event's
    when ``event_ids`` is None), by lecture id (numerically), slides before poster; one record each:

    - ``lecture_id``, ``event_id``, ``document`` (``"slides"`` or ``"poster"``), ``url`` (under
      ``assets_base``, else the listing's), ``kind`` (see :mod:`crawler.replica.documents`);
    - ``pages``: the text of each page in order, as a reader finds it (whitespace collapsed, a line-end
      hyphen joining a word kept, ``""`` for a scanned page); None when the file cannot be read (cut
      short, encrypted, not a PDF, not found);
    - ``problem``: None, ``"unreadable"``, ``"encrypted"`` or ``"not_found"``;
    - ``personal_data``: ``{"email": .., "phone": ..}`` as the title slide gives them, for the document
      that carries them (its ``pages`` hold them as written: a crawl publishes them redacted); else None;
    - ``hyphenated`` and ``accented``: whether a word is broken across two lines with a hyphen, and
      whether an acknowledgement with accented names is on it (``pages`` show both).
    """
    wanted = None if event_ids is None else set(event_ids)
    out = []
    for found in site_documents(site):
        if wanted is not None and found.listed_by.event_id not in wanted:
            continue
        plan = plan_of(site, found)
        readable = found.kind not in NO_TEXT_KINDS
        pages = [page_text([line.text for line in page.lines]) for page in plan.pages] if readable else None
        personal = plan.personal if found.kind == KIND_PERSONAL else None
        out.append(
            {
                "lecture_id": found.listed_by.id,
                "event_id": found.listed_by.event_id,
                "document": found.document,
                "url": document_url(found.path, assets_base, found.url),
                "kind": found.kind,
                "pages": pages,
                "problem": EXPECTED_PROBLEMS.get(found.kind),
                "personal_data": {"email": personal[0], "phone": personal[1]} if personal else None,
                "hyphenated": readable and plan.hyphenated,
                "accented": readable and plan.accented,
            }
        )
    return out
