"""What the parsers return: a lecture's fields, a page of the lecture list, a lecture page."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from crawler.json_types import JsonObject
from crawler.schema import (
    FIELDS_BY_NAME,
    PARSED_FIELDS,
    Author,
    Field,
    Lecture,
    column,
    fields_of,
    record_to_json,
    record_values,
)
from crawler.text.normalize import nfc_collapsed

Extraction = Literal["next_data", "visible_text"]
# Where a field's value came from: the API listing, the page's JSON, what the page shows, or nowhere.
FieldSource = Literal["api", "next_data", "visible_text", "none"]


# What a plain attribute field holds once read (see ``crawler.schema.Field.attribute``).
AttributeValue = str | list[str] | datetime | bool | int | float | None


class PageParseError(ValueError):
    """A page from which not even a lecture id or a title can be read."""


class DocumentError(ValueError):
    """An API answer that holds no lecture."""


@dataclass(kw_only=True)
class LectureFields(Lecture):
    """A lecture as a listing or a page gives it: the schema's record (:class:`~crawler.schema.Lecture`)
    with the fields the parsers fill (``crawler.schema.PARSED_FIELDS``; strings untouched, timestamps
    aware UTC), and the crawl's bookkeeping beside it. A field added to the schema is read, carried,
    merged and published with no declaration here.
    """

    # The lecture's slug, for its canonical URL.
    slug: str | None = column("The slug of the lecture's URL.", default=None)
    # What ``is_premium`` is read from.
    package: str | None = column("The lecture's package as its source names it.", default=None)
    # False when nothing said whether the lecture is premium (no usable ``package`` and no label on the
    # page, which a damaged page may simply have lost): ``is_premium`` is then a gap, not a "free".
    premium_known: bool = column(
        "Whether a source said if the lecture is premium.", default=True, compare=False
    )
    # The event whose listing named the lecture (None: read from its page alone): its page belongs to that
    # event unless the page says. Bookkeeping of the crawl, never hashed.
    listed_in: str | None = column(
        "The event whose listing named the lecture.", in_content_hash=False, default=None, compare=False
    )
    # Values the source gave in a form that could not be used (they read as missing above); diagnostic,
    # no part of what the source says of the lecture, so never hashed.
    problems: list[str] = column(
        "What the source gave that could not be used.", in_content_hash=False, factory=list, compare=False
    )

    def record(self) -> Lecture:
        """The lecture record of what the parsers filled (``crawler.schema.PARSED_FIELDS``; lists copied,
        the crawler's own fields at their defaults).

        Only ``title`` changes form (NFC, whitespace collapsed, as the schema asks), and ``is_premium`` is
        None when nothing said; ``url``, ``source_urls``, ``text``, ``extraction``, ``fetched_at`` and
        ``content_sha256`` are the crawler's to add.
        """
        values: dict[str, Any] = {}
        for name in ITEM_FIELD_NAMES:
            value = getattr(self, name)
            values[name] = list(value) if isinstance(value, list) else value
        values["title"] = nfc_collapsed(self.title) if self.title is not None else None
        values["is_premium"] = self.is_premium if self.premium_known else None
        values["authors"] = [
            Author(name=a["name"], affiliations=list(a["affiliations"]), orcid=a["orcid"])
            for a in self.authors
        ]
        return Lecture(**values)

    @classmethod
    def from_json(cls, record: Mapping[str, object]) -> typing.Self:
        """The fields :meth:`to_json` wrote (the schema's codec); raises TypeError or ValueError for a
        mapping that does not hold them (:meth:`read_json` does not)."""
        values: Mapping[str, Any] = record_values(record, CARRIED_FIELDS)
        return cls(**values)

    def to_json(self) -> JsonObject:
        """The parsed fields and the bookkeeping as JSON holds them (the schema's codec): the form they
        travel in, in a request's ``cb_kwargs`` (read by another process in a crawl fleet) and in the
        page budget's file. Every field of every kind comes back as it was."""
        return record_to_json({f.name: getattr(self, f.name) for f in CARRIED_FIELDS}, CARRIED_FIELDS)

    @classmethod
    def read_json(cls, data: object) -> LectureFields | None:
        """:meth:`from_json` of what may not be its JSON: None for anything else."""
        if not isinstance(data, Mapping) or not isinstance(data.get("lecture_id"), str):
            return None
        try:
            return cls.from_json(data)
        except (TypeError, ValueError):
            return None


# The fields of the schema a lecture's sources give, in schema order (``Field.filled_by``).
ITEM_FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in PARSED_FIELDS)
# What travels of a lecture between a listing and its page request: the parsed fields, then the
# bookkeeping declared here (the fields :class:`LectureFields` adds to the record).
CARRIED_FIELDS: tuple[Field, ...] = (
    *PARSED_FIELDS,
    *(f for f in fields_of(LectureFields) if f.name not in FIELDS_BY_NAME),
)


@dataclass
class LectureListPage:
    """One page of the API's lecture list."""

    records: list[LectureFields]
    total_pages: int | None
    total_count: int | None = None
    skipped: int = 0  # entries of ``data`` that are not lecture resources
    problems: list[str] = field(default_factory=list)


@dataclass
class LecturePage:
    """What a lecture page holds.

    ``problems`` explains a fallback to the visible text and lists disagreements between the JSON
    and the visible page; it is diagnostic, the fields are usable whenever ``fields`` is set.
    ``sources`` says, for each item field, where its value came from.
    """

    fields: LectureFields | None
    blocks: list[str]
    lecture_links: list[str]
    extraction: Extraction
    problems: list[str] = field(default_factory=list)
    sources: dict[str, FieldSource] = field(default_factory=dict, compare=False)
