"""The one schema of a published lecture record.

:class:`Lecture` declares every field once, with its type; ``FIELDS`` is read off it, and every consumer
derives from ``FIELDS``: the pyarrow schema the Parquet writer uses, the ``datasets.Features`` declared in
the card, the card's field table, the parsers' plain attributes and the coverage gate.

Here too are the record's JSON form (the stage's and the change files' codec, which
:meth:`Lecture.from_json` and :meth:`Lecture.to_json` use), its content hash and the one "has a value".
The Arrow and ``datasets`` forms are :mod:`crawler.schema.arrow`'s; the check of a record from outside is
:mod:`crawler.schema.check`'s.
"""

from __future__ import annotations

import hashlib
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

from crawler.json_types import JsonObject
from crawler.schema.columns import Field, column, fields_of
from crawler.schema.values import record_to_json, record_values


class Author(TypedDict):
    name: str
    affiliations: list[str]
    orcid: str | None


class Subtitle(TypedDict):
    locale: str | None
    name: str | None
    auto_generated: bool | None
    url: str | None


class AnthologyMatch(TypedDict):
    method: str
    score: float
    title_score: float
    author_score: float | None
    abstract_score: float | None
    margin: float
    refused_for_date: int | None


@dataclass(kw_only=True)
class Lecture:
    """One lecture record: the one declaration of the dataset's columns.

    Each field is declared once, here, with its type and its column (description, nullability, hashing,
    the listing attribute it is read from); the Parquet schema, the ``datasets`` features, the card's
    tables, the parsers' plain attributes and the coverage gate derive from :data:`FIELDS`, which is read
    off this class. The types are those a record has in flight: a field the published table never leaves
    empty (``nullable=False``) may still be None before the crawl has filled it.
    """

    lecture_id: str = column(
        "Underline's lecture id (a JSON:API id, kept as a string).",
        nullable=False,
        card_statistic=True,
        hashed_when_empty=True,
        bookkeeping=True,
    )
    url: str = column(
        "Canonical lecture page URL: `<web base>/lecture/<id>-<slug>`.",
        nullable=False,
        hashed_when_empty=True,
        filled_by="spider",
        bookkeeping=True,
        own_url=True,
        default="",
    )
    source_urls: list[str] = column(
        "Every URL the lecture was fetched at or linked from, sorted; includes `url`.",
        nullable=False,
        in_content_hash=False,
        factory=list,
        hashed_when_empty=True,
        filled_by="spider",
        bookkeeping=True,
        own_url=True,
    )
    title: str | None = column(
        "Lecture title, Unicode NFC with whitespace collapsed.",
        nullable=False,
        attribute=("title",),
        one_line=True,
        default=None,
        site_required=True,
        card_statistic=True,
        hashed_when_empty=True,
        text_block=3,
    )
    abstract: str | None = column(
        "Abstract exactly as the site publishes it (not normalized).",
        nullable=False,
        attribute=("abstract",),
        default=None,
        site_required=True,
        hashed_when_empty=True,
        text_block=1,
    )
    keywords: list[str] = column(
        "Keywords shown under the title, in page order.",
        nullable=False,
        attribute=("keywords",),
        one_line=True,
        factory=list,
        site_required=True,
        card_statistic=True,
        hashed_when_empty=True,
        text_block=4,
    )
    presentation_type: str | None = column(
        "Presentation type (the lecture's tag), e.g. `poster`.",
        one_line=True,
        default=None,
        site_required=True,
        card_statistic=True,
        hashed_when_empty=True,
        text_block=5,
    )
    event_id: str | None = column(
        "Underline event id (502 is EMNLP 2025).",
        nullable=False,
        default=None,
        card_statistic=True,
        hashed_when_empty=True,
    )
    event_name: str | None = column(
        "Event name, e.g. `EMNLP 2025`.",
        one_line=True,
        default=None,
        site_required=True,
        hashed_when_empty=True,
        text_block=2,
    )
    session_id: str | None = column(
        "Id of the event session the lecture belongs to.",
        default=None,
        card_statistic=True,
        hashed_when_empty=True,
    )
    session_name: str | None = column(
        "Name of that session.",
        one_line=True,
        default=None,
        site_required=True,
        card_statistic=True,
        hashed_when_empty=True,
    )
    held_at: datetime | None = column(
        "When the lecture is held (UTC).",
        attribute=("held_at", "heldAt"),
        default=None,
        site_required=True,
        card_statistic=True,
        hashed_when_empty=True,
    )
    published_at: datetime | None = column(
        "When the lecture was published on the site (UTC).",
        attribute=("published_at", "publishedAt"),
        default=None,
        hashed_when_empty=True,
    )
    doi: str | None = column(
        "Underline DOI of the lecture (prefix 10.48448), if any.",
        attribute=("underline_doi", "underlineDoi"),
        default=None,
        card_statistic=True,
        hashed_when_empty=True,
    )
    is_premium: bool = column(
        "True when the lecture's package is not free (`Premium content`).",
        nullable=False,
        default=False,
        card_statistic=True,
        listing_name="package",
        hashed_when_empty=True,
    )
    authors: list[Author] = column(
        "The authors in the order the site lists them: `name` (NFC, whitespace collapsed),"
        " `affiliations` (as published; empty when none) and `orcid` (the bare 16-character ORCID iD,"
        " null when unknown). Empty when the site lists none or the crawl did not read them.",
        nullable=False,
        factory=list,
        site_required=True,
        card_statistic=True,
    )
    video_url: str | None = column(
        "The lecture's video (the site's playlist URL); null when none.",
        attribute=("playlist",),
        link=True,
        default=None,
    )
    video_doi: str | None = column(
        "DOI of the lecture's video, if any.",
        attribute=("video_doi", "videoDoi"),
        default=None,
    )
    paper_url: str | None = column(
        "Absolute URL of the paper download (the site may ask for a log-in); null when none.",
        attribute=("paper_url", "paperUrl"),
        link=True,
        default=None,
    )
    slides_url: str | None = column(
        "URL of the slides (PDF); null when none.",
        attribute=("slideshow_url", "slideshowUrl"),
        link=True,
        default=None,
    )
    poster_url: str | None = column(
        "URL of the poster (PDF); null when none.",
        attribute=("poster_document_url", "posterDocument", "posterDocumentUrl"),
        link=True,
        default=None,
    )
    is_poster: bool | None = column(
        "True when the lecture is a poster presentation, false when not, null when the site does not say.",
        attribute=("poster_lecture", "posterLecture"),
        default=None,
    )
    # Set at publish time from the ACL Anthology's XML (``--anthology``), not by the crawl: a lecture
    # without a link keeps its hash, and a link added, changed or dropped changes it.
    anthology_id: str | None = column(
        "Id of the lecture's paper in the ACL Anthology, e.g. `2025.emnlp-main.1`; null when no paper was"
        " found, the evidence was not clear (a near tie between two papers, or a paper two lectures"
        " claim), or the release was published without the Anthology's files.",
        default=None,
        card_statistic=True,
        filled_by="release",
    )
    anthology_url: str | None = column(
        "The paper's page, `https://aclanthology.org/<anthology_id>/`; null when `anthology_id` is.",
        default=None,
        filled_by="release",
        bookkeeping=True,
    )
    anthology_match: AnthologyMatch | None = column(
        "The evidence for `anthology_id`: `method` (what agreed, joined by `+`: `exact_title` (equal once"
        " markup, case, punctuation and diacritics are gone) or `title`, then `authors`, `abstract`),"
        " `score` (0 to 1, the weighted mean of the next three), `title_score`, `author_score` (family"
        " names; null when either side lists none), `abstract_score` (null when either has none),"
        " `margin` (`score` minus the runner-up paper's) and `refused_for_date` (papers that matched as"
        " clearly but were refused for their date: published after the lecture's event, or a journal"
        " paper from before the 12 months before it; null in links made before it was counted); null"
        " when `anthology_id` is.",
        in_content_hash=False,
        default=None,
        filled_by="release",
        bookkeeping=True,
    )
    # Subtitles are fetched (one request per lecture) only for lectures whose content changed since the
    # last crawl, so an unchanged lecture has them null in one crawl and listed in another; in the hash
    # they would make it look changed for a reason that is only the fetch plan.
    subtitles: list[Subtitle] | None = column(
        "Subtitle tracks: `locale`, language `name`, `auto_generated` and the subtitle file `url`; null"
        " when they were not fetched, empty when the lecture has none.",
        in_content_hash=False,
        from_page=True,
        default=None,
        filled_by="spider",
    )
    related_lecture_ids: list[str] = column(
        "Ids of the related lectures the page shows, in page order.",
        nullable=False,
        from_page=True,
        factory=list,
        hashed_when_empty=True,
    )
    text: str = column(
        "The lecture's own visible content (abstract, event, title, keywords, type), one block per"
        " paragraph, normalized; no site boilerplate and no other lecture's content.",
        nullable=False,
        from_page=True,
        default="",
        hashed_when_empty=True,
        filled_by="pipeline",
    )
    withdrawn: bool = column(
        "True when the lecture was in an earlier release but is no longer on the site; the record keeps"
        " its last published content.",
        nullable=False,
        in_content_hash=False,
        default=False,
        card_statistic=True,
        hashed_when_empty=True,
        filled_by="release",
        bookkeeping=True,
    )
    alternate_ids: list[str] = column(
        "Other lecture ids of the same talk (equal title and abstract, e.g. the paper in two sessions),"
        " merged into this record; empty when none.",
        factory=list,
        hashed_when_empty=True,
        filled_by="release",
        bookkeeping=True,
    )
    near_duplicate_cluster: str | None = column(
        "Lowest lecture id of the records whose title and abstract nearly match this one's (MinHash LSH,"
        " word 3-shingle Jaccard >= 0.7); null when none.",
        in_content_hash=False,
        default=None,
        hashed_when_empty=True,
        filled_by="release",
        bookkeeping=True,
    )
    extraction: str = column(
        "How the fields were extracted: `next_data` (the page's JSON), `visible_text`, or `api_listing`"
        " (the page could not be read: the listing's fields); `+text_from_fields` is appended when the"
        " page showed none of the lecture's blocks and `text` was rebuilt from the extracted fields.",
        nullable=False,
        in_content_hash=False,
        card_statistic=True,
        hashed_when_empty=True,
        filled_by="spider",
        bookkeeping=True,
        default="",
    )
    fetched_at: datetime | None = column(
        "When the page was fetched (UTC).",
        nullable=False,
        in_content_hash=False,
        default=None,
        hashed_when_empty=True,
        filled_by="spider",
        bookkeeping=True,
    )
    content_sha256: str = column(
        "SHA-256 of the lecture's content fields; equal hashes mean an unchanged lecture.",
        nullable=False,
        in_content_hash=False,
        default="",
        hashed_when_empty=True,
        filled_by="pipeline",
        bookkeeping=True,
    )

    @classmethod
    def from_json(cls, record: Mapping[str, object]) -> typing.Self:
        """The record a mapping holds: a stage line's record, a release's row or a change file's lecture.

        Timestamps may be ISO strings or datetimes; a field the mapping lacks (a column added since it was
        written) takes its empty value; keys that are not fields are left out.
        """
        # The values are what the mapping held, put in their fields' shape; their types are checked by
        # crawler.schema.check.validate_record where the mapping came from outside (a stage line, a
        # caller's records).
        values: Mapping[str, typing.Any] = record_values(record, FIELDS)
        return cls(**values)

    def to_json(self) -> JsonObject:
        """The record as JSON takes it (timestamps as ISO strings): the stage's and the change files' form."""
        return to_json_record(self.values())

    def values(self) -> dict[str, object]:
        """The schema's fields by name, values as they are (timestamps stay datetimes)."""
        return {name: getattr(self, name) for name in FIELD_NAMES}


FIELDS: tuple[Field, ...] = fields_of(Lecture)
FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in FIELDS)
# Fields the crawl and the dataset's bookkeeping decide, not what the site says of a lecture: neither
# monitored for coverage nor compared between the page and the listing (``Field.bookkeeping``).
BOOKKEEPING_FIELDS = frozenset(f.name for f in FIELDS if f.bookkeeping)
# The fields the parsers of a lecture's listing and page fill (``Field.filled_by``), in schema order.
PARSED_FIELDS: tuple[Field, ...] = tuple(f for f in FIELDS if f.filled_by == "parser")
# The fields holding the lecture's own URLs (``Field.own_url``).
OWN_URL_FIELDS = frozenset(f.name for f in FIELDS if f.own_url)
# The fields shown as the lecture's blocks on its page, in the order the page shows them.
TEXT_BLOCK_FIELDS: tuple[str, ...] = tuple(
    f.name for f in sorted((f for f in FIELDS if f.text_block), key=lambda f: f.text_block)
)
FIELDS_BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}
# The fields that are plain attributes of the lecture resource (see ``Field.attribute``).
ATTRIBUTE_FIELDS: tuple[Field, ...] = tuple(f for f in FIELDS if f.attribute)
# The fields the normalize step cleans as one line of text.
ONE_LINE_FIELDS: tuple[Field, ...] = tuple(f for f in FIELDS if f.one_line)
CONTENT_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.hashed)
# The fields taken from the listing every night, whether the page is fetched or not (``Field.volatile``).
VOLATILE_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.volatile)
# What a published row read from its page keeps when its listing alone gives the next record: the fields
# only the page gives, and how and when it was read.
PAGE_FIELDS: tuple[str, ...] = (*(f.name for f in FIELDS if f.from_page), "extraction", "fetched_at")
# The extraction of a record its listing alone gave (a pipeline may append ``+text_from_fields``).
LISTING_ONLY_EXTRACTION = "api_listing"


def listing_only_extraction(extraction: object) -> bool:
    """Whether an ``extraction`` value says no crawl read the lecture's page (``api_listing...``)."""
    return str(extraction or "").split("+", 1)[0] == LISTING_ONLY_EXTRACTION


def is_listing_only(lecture: Lecture) -> bool:
    """Whether the record holds only its listing's fields (no crawl read its page)."""
    return listing_only_extraction(lecture.extraction)


# Rows are written in this order so that re-publishing the same data gives the same bytes.
SORT_KEY = "lecture_id"


def lecture_order(lecture_id: str) -> tuple[int, str]:
    """Sort key of lecture ids: numeric ids in numeric order (shorter first), then as text."""
    return (len(lecture_id), lecture_id)


def to_json_record(record: Mapping[str, object]) -> JsonObject:
    """A lecture record with every schema field, timestamps as ISO strings: the staging format."""
    return record_to_json(record, FIELDS)


def content_sha256(record: Mapping[str, Any]) -> str:
    """SHA-256 hex digest of the content fields, stable across processes and crawls."""
    # Only the hashed fields are put in their JSON form: each field's form is its own.
    canonical = record_to_json(record, _CONTENT_HASH_FIELDS)
    payload = {
        f.name: canonical[f.name]
        for f in _CONTENT_HASH_FIELDS
        if f.hashed_when_empty or canonical[f.name] not in (None, [])
    }
    return hashlib.sha256(_ENCODE_SORTED(payload).encode("utf-8")).hexdigest()


_CONTENT_HASH_FIELDS: tuple[Field, ...] = tuple(f for f in FIELDS if f.hashed)
_VOLATILE: tuple[Field, ...] = tuple(f for f in FIELDS if f.volatile)


def volatile_digest(values: Mapping[str, object]) -> str:
    """The volatile fields' values (``Field.volatile``; a missing one as null) as one text, empty when
    the schema has none: what tells two releases apart besides the content hash, since a new view count
    is a new release but no change of the lecture."""
    if not _VOLATILE:
        return ""
    canonical = record_to_json({f.name: values.get(f.name) for f in _VOLATILE}, _VOLATILE)
    return _ENCODE_SORTED(canonical)


# ``json.dumps`` with these options, without building an encoder on every call.
_ENCODE_SORTED = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode
