"""The refresh decision: what the listing says of a lecture against what the last crawl staged of it,
and so whether its page is fetched, revalidated or carried over (see "The nightly refresh" in the README).

Pure functions of the listing's fields and the staged record, as Scrapy's ``get_retry_request`` is to its
middleware: the spider wraps them. The listing's fields travel as JSON between a listing's callback and
its lectures' page requests (and a page budget's file): :func:`listing_to_json` and
:func:`listing_from_json` are that codec.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, cast

from crawler import stats_keys as keys
from crawler.items import RECORD_FIELDS
from crawler.json_types import JsonObject, JsonValue
from crawler.pages import LectureFields
from crawler.pages.profiles import AUTHOR_PROFILES_MISSING
from crawler.schema import (
    BOOKKEEPING_FIELDS,
    FIELDS,
    PAGE_FIELDS,
    format_timestamp,
    has_value,
    listing_only_extraction,
    parse_timestamp,
)
from crawler.state.previous_stage import PreviousLecture, StagedLecture

# Fields where the page's JSON and the API may disagree; the page wins, the API fills gaps. Every schema
# field both describe: not what only the page shows, nor what the crawl itself decides.
NOT_CROSS_CHECKED = BOOKKEEPING_FIELDS | {f.name for f in FIELDS if f.from_page}
CROSS_CHECKED = tuple(f.name for f in FIELDS if f.name not in NOT_CROSS_CHECKED)
TIMESTAMP_FIELDS = frozenset(f.name for f in FIELDS if f.kind == "timestamp")
# Record fields under another name in the listing's fields, and back.
LISTING_NAMES = {f.name: f.listing_name for f in FIELDS if f.listing_name}
RECORD_NAMES = {v: k for k, v in LISTING_NAMES.items()}
# Staged in place of a listing field's hash when the page disagreed with the listing on that field: the
# page may lag its listing, so the next crawl fetches it again.
DISAGREED = "page-disagreed"
# Why a lecture needs its page, in the order a page budget spends itself on them (see PageBudget).
NEW, CHANGED, STALE = 0, 1, 2


@dataclasses.dataclass
class Decision:
    """What the listing says of one lecture, and what the last crawl staged of it."""

    fields: LectureFields
    hashes: dict[str, str]
    previous: PreviousLecture | None
    staged: StagedLecture | None
    unchanged: bool


def revalidation_due(
    decisions: Iterable[Decision], share: float, after: timedelta, now: datetime
) -> set[str]:
    """The lectures of one listing page whose unchanged page is due for revalidation: the oldest first, at
    most ``share`` of the page's lectures, each fetched longer than ``after`` ago."""
    listed = list(decisions)
    stale = sorted(
        (d for d in listed if d.unchanged and d.previous is not None),
        key=lambda d: d.previous.fetched_at if d.previous is not None else now,
    )
    return {
        d.fields.lecture_id
        for d in stale[: math.ceil(share * len(listed))]
        if d.previous is not None and now - d.previous.fetched_at > after
    }


def need_rank(decision: Decision) -> int:
    """Why a lecture needs its page: NEW when no crawl fetched it (none staged it, or staged only its
    listing's fields), CHANGED when its listing changed since, else STALE (due for revalidation)."""
    staged = decision.staged
    if staged is None or listing_only(staged.record):
        return NEW
    return STALE if decision.unchanged else CHANGED


def listing_only(record: Mapping[str, Any]) -> bool:
    """Whether a staged record holds only its listing's fields (no crawl read its page): its extraction
    is ``api_listing``, perhaps with a suffix a pipeline added (``api_listing+text_from_fields``)."""
    return listing_only_extraction(record.get("extraction"))


def _value_hash(value: Any) -> str:
    blob = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def listing_hashes(fields: LectureFields) -> dict[str, str]:
    """A short hash of each of a lecture's listing fields (as :func:`listing_to_json` writes them): the
    next crawl fetches the page again when a field both crawls know hashes differently."""
    listed = listing_to_json(fields)
    return {name: _value_hash(value) for name, value in listed.items() if name != "lecture_id"}


def listing_sha256(fields: LectureFields) -> str:
    """One hash over all of a lecture's listing fields: what stages written before there were per-field
    hashes compared by (kept so that such a stage is still a refresh's base)."""
    listed = listing_to_json(fields)
    blob = json.dumps(listed, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def changed_listing_fields(stored: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """The listing fields both crawls know whose hashes differ: a field new to the listing (the crawler
    learned it) or gone from it is no change of the lecture."""
    return sorted(name for name in stored.keys() & current.keys() if stored[name] != current[name])


def listing_unchanged(staged: StagedLecture, listed: LectureFields, hashes: Mapping[str, str]) -> bool:
    """Whether the lecture's listing says nothing its page could change since the last crawl staged it."""
    if staged.listing_hashes is not None:
        return not changed_listing_fields(staged.listing_hashes, hashes)
    if staged.listing_sha256 is not None:
        return staged.listing_sha256 == listing_sha256(listed)
    return False  # a page that failed, or showed another lecture: fetched again


def with_new_listing_fields(
    staged: StagedLecture, fields: LectureFields, hashes: Mapping[str, str]
) -> StagedLecture:
    """The staged lecture, its record's fields that come from a listing field new since it was staged
    filled from the listing (a field the crawler learned needs no page request)."""
    # A record no listing was hashed with (a published row the release is the base for, a page that
    # failed): every field the listing gives a value is the listing's; what it leaves empty is no news.
    unhashed = staged.listing_hashes is None
    known = staged.listing_hashes.keys() if staged.listing_hashes is not None else set()
    new = {RECORD_NAMES.get(name, name) for name in hashes.keys() - known} - set(PAGE_FIELDS)
    listed = fields.to_item_fields()
    # A listing that does not say (no package): not premium.
    listed["is_premium"] = bool(listed["is_premium"])
    filled = {
        name: listed[name]
        for name in new
        if name in listed and name in RECORD_FIELDS and (not unhashed or has_value(listed[name]))
    }
    if not filled:
        return staged
    return dataclasses.replace(staged, record={**staged.record, **filled})


def authors_incomplete(fields: LectureFields | None) -> bool:
    """Whether the source left some of the lecture's authors' profiles out (their names unknown)."""
    return fields is not None and any(p.endswith(AUTHOR_PROFILES_MISSING) for p in fields.problems)


def complete_authors(fields: LectureFields | None) -> bool:
    return fields is not None and bool(fields.authors) and not authors_incomplete(fields)


def listing_to_json(fields: LectureFields) -> JsonObject:
    """A lecture's listing fields as JSON types, to travel in a request's ``cb_kwargs`` (read by another
    process in a crawl fleet) and in the page budget's file."""
    out: JsonObject = {}
    for f in dataclasses.fields(fields):
        if f.name == "problems":
            continue
        value = getattr(fields, f.name)
        if isinstance(value, datetime):
            value = format_timestamp(value)
        elif f.name == "authors":
            value = [dict(author) for author in value]
        out[f.name] = cast(JsonValue, value)
    return out


def listing_from_json(data: Any) -> LectureFields | None:
    """The fields :func:`listing_to_json` wrote; None for anything else."""
    if not isinstance(data, dict) or not isinstance(data.get("lecture_id"), str):
        return None
    names = {f.name for f in dataclasses.fields(LectureFields)} - {"problems"}
    values = {k: v for k, v in data.items() if k in names}
    try:
        # Every timestamp of the schema comes back as one, not as the text JSON holds.
        for name in names & TIMESTAMP_FIELDS:
            values[name] = parse_timestamp(values.get(name))
        return LectureFields(**values)
    except (TypeError, ValueError):
        return None


def merge_fields(
    page: LectureFields | None,
    listed: LectureFields | None,
    stats_inc: Callable[[str], None] | None = None,
    mismatched: set[str] | None = None,
) -> LectureFields | None:
    """The lecture's fields from its page, cross-checked with (and gaps filled from) the API listing;
    the fields where both have a value and differ are added to ``mismatched``. Values are compared in
    the record's form (a title's whitespace collapsed, an unknown package as no value)."""
    if page is None and listed is None:
        return None
    source = page if page is not None else listed
    assert source is not None
    merged = dataclasses.replace(source)
    if page is None or listed is None:
        return merged
    mine_all, theirs_all = page.to_item_fields(), listed.to_item_fields()
    for name in CROSS_CHECKED:
        mine, theirs = mine_all.get(name), theirs_all.get(name)
        if _no_value(theirs):
            continue
        if _no_value(mine):
            _take_field(merged, listed, name)
            if stats_inc:
                stats_inc(keys.FILLED_FROM_API_PREFIX + name)
        elif mine != theirs:
            if stats_inc:
                stats_inc(keys.API_MISMATCH_PREFIX + name)
            if mismatched is not None:
                mismatched.add(name)
    merged.slug = merged.slug or listed.slug
    return merged


def _no_value(value: object) -> bool:
    return value is None or value == "" or value == []


def _take_field(merged: LectureFields, listed: LectureFields, name: str) -> None:
    """``merged``'s field ``name`` (a record field's name) as ``listed`` has it."""
    if name == "is_premium":
        merged.is_premium, merged.premium_known = listed.is_premium, listed.premium_known
    else:
        setattr(merged, name, getattr(listed, name))
