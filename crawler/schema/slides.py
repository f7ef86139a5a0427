"""The record of a ``slides`` row: one document a lecture names (its slide deck or its poster), what was
shown in it, page by page.

:class:`Slides` declares the table's columns once, as :class:`crawler.schema.Lecture` declares the
lectures'; ``SLIDES_FIELDS`` is read off it, and the Parquet schema, the ``datasets`` features, the card's
column table and the JSON form (the stage line) derive from it.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from crawler.json_types import JsonObject
from crawler.schema.columns import Field, Int32, column, fields_of
from crawler.schema.lecture import lecture_order
from crawler.schema.values import record_to_json, record_values

DocumentKind = Literal["slides", "poster"]
# The documents a lecture may name, in the order its rows are written, with the lecture column naming each.
DOCUMENT_COLUMNS: tuple[tuple[DocumentKind, str], ...] = (("slides", "slides_url"), ("poster", "poster_url"))


@dataclass(kw_only=True)
class Slides:
    """One document of a lecture: the one declaration of the ``slides`` table's columns."""

    lecture_id: str = column(
        "Id of the lecture the document belongs to (`lectures.lecture_id`).", nullable=False
    )
    event_id: str | None = column("Underline event id of that lecture.", nullable=False, default=None)
    document: str = column(
        "`slides` (the lecture's slide deck, `lectures.slides_url`) or `poster` (its poster,"
        " `lectures.poster_url`).",
        nullable=False,
        default="slides",
    )
    url: str = column("The PDF the text was read from.", nullable=False, default="")
    pages: list[str] | None = column(
        "Each page's text in page order, whitespace normalised (a page without a text layer, such as a"
        ' scanned slide, is `""`: no OCR); e-mail addresses and phone numbers redacted. Null when the file'
        " could not be read (see `problem`).",
        default=None,
    )
    page_count: Int32 | None = column(
        "Number of pages of the document; null when it could not be read.", default=None
    )
    text: str | None = column(
        "The pages' texts joined by blank lines (`\\n\\n`); null when `pages` is.", default=None
    )
    bytes: int | None = column("Size of the PDF in bytes, as downloaded; null when none was.", default=None)
    sha256: str | None = column("SHA-256 of the PDF's bytes; null when none was downloaded.", default=None)
    problem: str | None = column(
        "Why `pages` is null: `not_found` (the file is gone), `too_large` (past the size limit, or the"
        " reader's memory bound), `encrypted` (it needs a password), `unreadable` (not a PDF, or cut"
        " short), `timed_out` (the reader ran past its time limit), `off_host` (not on the site's or its"
        " asset hosts), `robots` (the host's robots.txt forbids it), `waiting` (the night's byte budget"
        " was spent: it is asked on the next one), `failed` (no answer). Null when none.",
        default=None,
    )
    fetched_at: datetime | None = column("When the PDF was fetched (UTC).", default=None)

    @classmethod
    def from_json(cls, record: Mapping[str, object]) -> typing.Self:
        """The record a mapping holds (a stage line's, a release row's); a field it lacks is empty."""
        values: dict[str, typing.Any] = record_values(record, SLIDES_FIELDS)
        # The codec makes a missing list empty; ``pages`` null (unread) is not ``[]`` (a PDF of no page).
        if record.get("pages") is None:
            values["pages"] = None
        return cls(**values)

    def to_json(self) -> JsonObject:
        """The record as JSON holds it (timestamps as ISO strings): the stage line's form."""
        out = record_to_json(self.values(), SLIDES_FIELDS)
        if self.pages is None:
            out["pages"] = None
        return out

    def values(self) -> dict[str, object]:
        """The table's fields by name, values as they are."""
        return {f.name: getattr(self, f.name) for f in SLIDES_FIELDS}

    def with_pages(self, pages: list[str]) -> Slides:
        """The row holding ``pages``: its ``page_count`` and ``text`` (the pages joined) derived from them."""
        return dataclasses.replace(self, pages=pages, page_count=Int32(len(pages)), text="\n\n".join(pages))


SLIDES_FIELDS: tuple[Field, ...] = fields_of(Slides)


def slides_order(row: Slides) -> tuple[tuple[int, str], int, str]:
    """Rows are written lecture by lecture (numeric ids in numeric order), the slides before the poster."""
    kinds = [kind for kind, _ in DOCUMENT_COLUMNS]
    rank = kinds.index(row.document) if row.document in kinds else len(kinds)
    return (lecture_order(row.lecture_id), rank, row.url)


def listed_documents(lecture: object) -> list[tuple[DocumentKind, str]]:
    """The documents a lecture's record names, as (document, URL) in row order: its slide deck
    (``slides_url``) and its poster (``poster_url``), each when it has a URL."""
    out: list[tuple[DocumentKind, str]] = []
    for kind, name in DOCUMENT_COLUMNS:
        url = getattr(lecture, name, None)
        if isinstance(url, str) and url:
            out.append((kind, url))
    return out
