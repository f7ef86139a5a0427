"""What the parsers return: a lecture (the one lecture type of the crawl), a page of the lecture list, a
lecture page."""

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
from crawler.state.stage_rows import StagedSlides, StagedTranscript
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
class LectureItem(Lecture):
    """One lecture as the crawl holds it, from the parsers through the pipelines to the stage: the schema's
    record (:class:`~crawler.schema.Lecture`; :meth:`record` gives exactly it) and side data beside it,
    never part of the record. The parsers fill the record's fields they read
    (``crawler.schema.PARSED_FIELDS``; strings untouched, timestamps aware UTC) and their side data; the
    spider and the pipelines fill the rest. A field added to the schema is read, carried, merged and
    published with no declaration here.

    Side data declared with :func:`~crawler.schema.column` travels with the record in the lecture's one
    JSON form (:meth:`to_json`); side data declared with ``field`` stays in the process.
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
    # The statistics counters the lecture's outcome added (staged with it, so that a resumed crawl counts
    # it exactly once).
    counted: list[str] = column(
        "The statistics counters the lecture's outcome added.",
        in_content_hash=False,
        filled_by="spider",
        factory=list,
    )
    # A lecture whose listing has not changed since the last crawl (or whose page failed this time): its
    # previous record staged again as it was, without its page, with the transcripts and documents the
    # last stage held of it. The cleaning steps leave it as it is (see ``crawler.items.to_clean``).
    carried: bool = column(
        "Whether the lecture was carried over from the last crawl.",
        in_content_hash=False,
        filled_by="spider",
        default=False,
    )
    # A hash of each listing field (None: compare nothing, fetch the page again next time). It travels in
    # the JSON too, beside the columns: a map of strings has no column kind.
    listing_hashes: dict[str, str] | None = None
    # The page's visible text blocks: the boilerplate step turns them into ``text``.
    page_blocks: list[str] = field(default_factory=list)
    # ``[lecture_id, url]`` of the other lectures the page links (staged as alias lines).
    page_aliases: list[list[str]] = field(default_factory=list)
    # What the last stage held of a carried lecture (staged as their own lines).
    carried_transcripts: list[StagedTranscript] = field(default_factory=list)
    carried_slides: list[StagedSlides] = field(default_factory=list)
    # The one hash over every listing field a stage written before there were per-field hashes compares
    # by (read back from such a stage, never written).
    listing_sha256: str | None = None

    @classmethod
    def carried_over(
        cls,
        record: Lecture,
        *,
        listing_hashes: dict[str, str] | None,
        counted: list[str] | None = None,
        transcripts: list[StagedTranscript] | None = None,
        slides: list[StagedSlides] | None = None,
        listing_sha256: str | None = None,
    ) -> LectureItem:
        """The last stage's record of a lecture, staged again as it was (or as a refresh reads it back:
        with the hashes its listing was staged with)."""
        values: dict[str, Any] = record.values()
        return cls(
            **values,
            listing_hashes=listing_hashes,
            counted=list(counted or []),
            carried=True,
            carried_transcripts=list(transcripts or []),
            carried_slides=list(slides or []),
            listing_sha256=listing_sha256,
        )

    def record(self) -> dict[str, object]:
        """The record's fields, as the stage and the publisher take them."""
        return self.values()

    def parsed_record(self) -> Lecture:
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
        """The lecture :meth:`to_json` wrote (the schema's codec; a record alone reads as a lecture without
        side data); raises TypeError or ValueError for a mapping that does not hold one (:meth:`read_json`
        does not)."""
        # Side data the mapping lacks (a record alone, a stage line an earlier version wrote): its default.
        values: dict[str, Any] = {
            name: value
            for name, value in record_values(record, JSON_FIELDS).items()
            if name in record or name in FIELDS_BY_NAME
        }
        return cls(**values, listing_hashes=_listing_hashes(record.get("listing_hashes")))

    def to_json(self) -> JsonObject:
        """The lecture's one JSON form (the schema's codec): the record's fields, then the side data that
        travels. It is the form a lecture takes in a page request's ``cb_kwargs`` (read by another process
        in a crawl fleet), in the page budget's file and in the stage's lecture line. Every field of every
        kind comes back as it was."""
        out = record_to_json({f.name: getattr(self, f.name) for f in JSON_FIELDS}, JSON_FIELDS)
        out["listing_hashes"] = dict(self.listing_hashes) if self.listing_hashes else None
        return out

    @classmethod
    def read_json(cls, data: object) -> LectureItem | None:
        """:meth:`from_json` of what may not be its JSON: None for anything else."""
        if not isinstance(data, Mapping) or not isinstance(data.get("lecture_id"), str):
            return None
        try:
            return cls.from_json(data)
        except (TypeError, ValueError):
            return None


def _listing_hashes(value: object) -> dict[str, str] | None:
    """The listing hashes a lecture's JSON holds; raises ValueError for anything but a map of strings."""
    if value is None:
        return None
    if not (isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())):
        raise ValueError("listing_hashes is not a map of strings")
    return dict(value)


# The fields of the schema a lecture's sources give, in schema order (``Field.filled_by``).
ITEM_FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in PARSED_FIELDS)
# What a lecture's JSON holds of it, written by the schema's codec: the record's fields, then the side data
# :class:`LectureItem` declares with ``column`` (the parsers' first, then the crawl's).
JSON_FIELDS: tuple[Field, ...] = fields_of(LectureItem)


@dataclass
class LectureListPage:
    """One page of the API's lecture list."""

    records: list[LectureItem]
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

    fields: LectureItem | None
    blocks: list[str]
    lecture_links: list[str]
    extraction: Extraction
    problems: list[str] = field(default_factory=list)
    sources: dict[str, FieldSource] = field(default_factory=dict, compare=False)
