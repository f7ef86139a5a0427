"""What the parsers return: a lecture's fields, a page of the lecture list, a lecture page."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from crawler.schema import FIELDS, Author
from crawler.text.normalize import nfc_collapsed

Extraction = Literal["next_data", "visible_text"]
# Where a field's value came from: the API listing, the page's JSON, what the page shows, or nowhere.
FieldSource = Literal["api", "next_data", "visible_text", "none"]


# What a plain attribute field holds once read (see ``crawler.schema.Field.attribute``).
AttributeValue = str | list[str] | datetime | bool | None


class PageParseError(ValueError):
    """A page from which not even a lecture id or a title can be read."""


class DocumentError(ValueError):
    """An API answer that holds no lecture."""


@dataclass
class LectureFields:
    """A lecture's fields as the site gives them (strings untouched, timestamps aware UTC).

    Its fields named like the schema's are the record's; a plain attribute field added to the schema
    is declared here with its type and is then read, merged and published without more code.
    """

    lecture_id: str
    slug: str | None = None
    title: str | None = None
    abstract: str | None = None
    keywords: list[str] = field(default_factory=list)
    presentation_type: str | None = None
    event_id: str | None = None
    event_name: str | None = None
    session_id: str | None = None
    session_name: str | None = None
    held_at: datetime | None = None
    published_at: datetime | None = None
    doi: str | None = None
    package: str | None = None
    is_premium: bool = False
    # False when nothing said whether the lecture is premium (no usable ``package`` and no label on the
    # page, which a damaged page may simply have lost): ``is_premium`` is then a gap, not a "free".
    premium_known: bool = field(default=True, compare=False)
    paper_url: str | None = None
    related_lecture_ids: list[str] = field(default_factory=list)
    # The authors in their published order (dicts, so that the fields travel as JSON unchanged).
    authors: list[Author] = field(default_factory=list)
    video_url: str | None = None
    video_doi: str | None = None
    slides_url: str | None = None
    poster_url: str | None = None
    is_poster: bool | None = None
    # Values the source gave in a form that could not be used (they read as missing above).
    problems: list[str] = field(default_factory=list, compare=False)

    def to_item_fields(self) -> dict[str, Any]:
        """The fields under the record schema's names (``crawler.schema.FIELDS``): every schema field
        this class declares, lists copied.

        Only ``title`` changes form (NFC, whitespace collapsed, as the schema asks), and ``is_premium`` is
        None when nothing said; ``url``, ``source_urls``, ``text``, ``extraction``, ``fetched_at`` and
        ``content_sha256`` are the crawler's to add.
        """
        out: dict[str, Any] = {}
        for name in ITEM_FIELD_NAMES:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, list) else value
        out["title"] = nfc_collapsed(self.title) if self.title is not None else None
        out["is_premium"] = self.is_premium if self.premium_known else None
        out["authors"] = [
            Author(name=a["name"], affiliations=list(a["affiliations"]), orcid=a["orcid"])
            for a in self.authors
        ]
        return out


# The schema's fields a lecture's sources give, in schema order: those :class:`LectureFields` declares.
# Every plain attribute field of the schema must be among them (a test checks it).
ITEM_FIELD_NAMES: tuple[str, ...] = tuple(
    f.name for f in FIELDS if f.name in {d.name for d in dataclasses.fields(LectureFields)}
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
