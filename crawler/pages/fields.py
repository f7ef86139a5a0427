"""What the parsers return: a lecture's fields, a page of the lecture list, a lecture page."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypedDict

from crawler.text.normalize import nfc_collapsed

Extraction = Literal["next_data", "visible_text"]
# Where a field's value came from: the API listing, the page's JSON, what the page shows, or nowhere.
FieldSource = Literal["api", "next_data", "visible_text", "none"]


class PageParseError(ValueError):
    """A page from which not even a lecture id or a title can be read."""


class DocumentError(ValueError):
    """An API answer that holds no lecture."""


class Author(TypedDict):
    """One author as published: nothing else of a profile is ever read."""

    name: str
    affiliations: list[str]
    orcid: str | None  # the bare 16-character iD, check digit verified


@dataclass
class LectureFields:
    """A lecture's fields as the site gives them (strings untouched, timestamps aware UTC)."""

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
        """The fields under the record schema's names (``crawler.schema.FIELDS``).

        Only ``title`` changes form (NFC, whitespace collapsed, as the schema asks); ``url``,
        ``source_urls``, ``text``, ``extraction``, ``fetched_at`` and ``content_sha256`` are the
        crawler's to add.
        """
        return {
            "lecture_id": self.lecture_id,
            "title": nfc_collapsed(self.title) if self.title is not None else None,
            "abstract": self.abstract,
            "keywords": list(self.keywords),
            "presentation_type": self.presentation_type,
            "event_id": self.event_id,
            "event_name": self.event_name,
            "session_id": self.session_id,
            "session_name": self.session_name,
            "held_at": self.held_at,
            "published_at": self.published_at,
            "doi": self.doi,
            "is_premium": self.is_premium if self.premium_known else None,
            "related_lecture_ids": list(self.related_lecture_ids),
            "authors": [
                Author(name=a["name"], affiliations=list(a["affiliations"]), orcid=a["orcid"])
                for a in self.authors
            ],
            "video_url": self.video_url,
            "video_doi": self.video_doi,
            "paper_url": self.paper_url,
            "slides_url": self.slides_url,
            "poster_url": self.poster_url,
            "is_poster": self.is_poster,
        }


# The fields of :meth:`LectureFields.to_item_fields`, in its order.
ITEM_FIELD_NAMES: tuple[str, ...] = tuple(LectureFields("0").to_item_fields())


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
