"""The refresh decision: what the listing says of a lecture against what the last crawl staged of it,
and so whether its page is fetched, revalidated or carried over (see docs/refresh.md, "The nightly refresh").

Pure functions of the listing's fields and the staged record, as Scrapy's ``get_retry_request`` is to its
middleware: the spider wraps them. The listing's fields travel as JSON between a listing's callback and
its lectures' page requests (and a page budget's file) in the lecture's one JSON form:
:meth:`LectureItem.to_json` and :meth:`LectureItem.read_json`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from crawler import stats_keys as keys
from crawler.items import LectureItem
from crawler.pages.fields import JSON_FIELDS
from crawler.pages.lecture import NO_VALUE
from crawler.pages.profiles import AUTHOR_PROFILES_MISSING
from crawler.schema import (
    FIELDS,
    FIELDS_BY_NAME,
    PAGE_FIELDS,
    PARSED_FIELDS,
    VOLATILE_FIELDS,
    has_value,
    is_listing_only,
)

# Fields where the page's JSON and the API may disagree; the page wins, the API fills gaps. Every field
# the parsers fill that both describe: not what only the page shows, nor what the crawl itself decides.
# A volatile field is the listing's, never checked against the page.
CROSS_CHECKED = tuple(f.name for f in PARSED_FIELDS if not (f.bookkeeping or f.from_page or f.volatile))
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
    """What the listing says of one lecture, and what the last crawl staged of it (``fetched_at``: when its
    page was fetched; None when it staged none)."""

    fields: LectureItem
    hashes: dict[str, str]
    fetched_at: datetime | None
    staged: LectureItem | None
    unchanged: bool


def revalidation_due(
    decisions: Iterable[Decision], share: float, after: timedelta, now: datetime
) -> set[str]:
    """The lectures of one listing page whose unchanged page is due for revalidation: the oldest first, at
    most ``share`` of the page's lectures, each fetched longer than ``after`` ago."""
    listed = list(decisions)
    stale = sorted(
        (d for d in listed if d.unchanged and d.fetched_at is not None),
        key=lambda d: d.fetched_at if d.fetched_at is not None else now,
    )
    return {
        d.fields.lecture_id
        for d in stale[: math.ceil(share * len(listed))]
        if d.fetched_at is not None and now - d.fetched_at > after
    }


def need_rank(decision: Decision) -> int:
    """Why a lecture needs its page: NEW when no crawl fetched it (none staged it, or staged only its
    listing's fields), CHANGED when its listing changed since, else STALE (due for revalidation)."""
    staged = decision.staged
    if staged is None or is_listing_only(staged):
        return NEW
    return STALE if decision.unchanged else CHANGED


# ``json.dumps`` with these options, without building an encoder on every call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str).encode


def _value_hash(value: Any) -> str:
    return hashlib.sha256(_ENCODE(value).encode("utf-8")).hexdigest()[:16]


# The listing's fields hashed: every field the parsers fill (the record's and their side data) but the id,
# the diagnostics and the volatile fields (whose new values need no page).
HASHED_LISTING_FIELDS = frozenset(
    f.name for f in JSON_FIELDS if f.filled_by == "parser" and f.hashed and f.name != "lecture_id"
)


def listing_hashes(fields: LectureItem) -> dict[str, str]:
    """A short hash of each of a lecture's listing fields (as :meth:`LectureItem.to_json` writes
    them): the next crawl fetches the page again when a field both crawls know hashes differently."""
    listed = fields.to_json()
    # A lecture's listing is hashed when the listing is read, and again when its page comes back (from
    # the fields its request carried): the second time, its hashes are found by its JSON's digest.
    key = hashlib.sha256(_ENCODE(listed).encode("utf-8")).digest()
    hashes = _recent_hashes.get(key)
    if hashes is None:
        hashes = {name: _value_hash(value) for name, value in listed.items() if name in HASHED_LISTING_FIELDS}
        if len(_recent_hashes) >= _RECENT_HASHES:
            del _recent_hashes[next(iter(_recent_hashes))]
        _recent_hashes[key] = hashes
    return dict(hashes)


# The hashes of the listings hashed last, by the digest of their JSON (the oldest dropped first):
# enough for the lectures whose pages are under way.
_RECENT_HASHES = 4096
_recent_hashes: dict[bytes, dict[str, str]] = {}


def listing_sha256(fields: LectureItem) -> str:
    """One hash over all of a lecture's listing fields: what stages written before there were per-field
    hashes compared by (kept so that such a stage is still a refresh's base)."""
    listed = {k: v for k, v in fields.to_json().items() if k == "lecture_id" or k in HASHED_LISTING_FIELDS}
    return hashlib.sha256(_ENCODE(listed).encode("utf-8")).hexdigest()


def listing_unchanged(staged: LectureItem, listed: LectureItem, hashes: Mapping[str, str]) -> bool:
    """Whether the lecture's listing says nothing its page could change since the last crawl staged it:
    every listing field both crawls know hashes the same (a field new to the listing, the crawler learned
    it, or gone from it is no change of the lecture)."""
    if (stored := staged.listing_hashes) is not None:
        return all(stored[name] == hashes[name] for name in stored.keys() & hashes.keys())
    if staged.listing_sha256 is not None:
        return staged.listing_sha256 == listing_sha256(listed)
    return False  # a page that failed, or showed another lecture: fetched again


def with_new_listing_fields(
    staged: LectureItem, fields: LectureItem, hashes: Mapping[str, str]
) -> LectureItem:
    """The staged lecture, its record's fields that come from a listing field new since it was staged
    filled from the listing (a field the crawler learned needs no page request), and its volatile fields
    as the listing gives them tonight (one it gives no value keeps the staged value)."""
    # A record no listing was hashed with (a published row the release is the base for, a page that
    # failed): every field the listing gives a value is the listing's; what it leaves empty is no news.
    unhashed = staged.listing_hashes is None
    known = staged.listing_hashes.keys() if staged.listing_hashes is not None else set()
    new = {RECORD_NAMES.get(name, name) for name in hashes.keys() - known} - set(PAGE_FIELDS)
    listed = fields.parsed_record()
    # A listing that does not say (no package): not premium.
    listed.is_premium = bool(listed.is_premium)
    filled = {
        name: getattr(listed, name)
        for name in new
        if name in FIELDS_BY_NAME and (not unhashed or has_value(getattr(listed, name)))
    }
    filled.update(
        {name: getattr(listed, name) for name in VOLATILE_FIELDS if has_value(getattr(listed, name))}
    )
    if not filled:
        return staged
    return dataclasses.replace(staged, **filled)


def authors_incomplete(fields: LectureItem | None) -> bool:
    """Whether the source left some of the lecture's authors' profiles out (their names unknown)."""
    return fields is not None and any(p.endswith(AUTHOR_PROFILES_MISSING) for p in fields.problems)


def complete_authors(fields: LectureItem | None) -> bool:
    return fields is not None and bool(fields.authors) and not authors_incomplete(fields)


def merge_fields(
    page: LectureItem | None,
    listed: LectureItem | None,
    stats_inc: Callable[[str], None] | None = None,
    mismatched: set[str] | None = None,
) -> LectureItem | None:
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
    mine_all, theirs_all = page.parsed_record(), listed.parsed_record()
    for name in CROSS_CHECKED:
        mine, theirs = getattr(mine_all, name), getattr(theirs_all, name)
        if theirs in NO_VALUE:
            continue
        if mine in NO_VALUE:
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


def with_listing_volatiles(fields: LectureItem, listed: LectureItem | None) -> LectureItem:
    """``fields`` with each volatile field the listing gives a value as the listing gives it: the listing's
    value is tonight's, the page may lag it."""
    for name in VOLATILE_FIELDS:
        value = getattr(listed, name, None)
        if value not in NO_VALUE:
            setattr(fields, name, value)
    return fields


def _take_field(merged: LectureItem, listed: LectureItem, name: str) -> None:
    """``merged``'s field ``name`` (a record field's name) as ``listed`` has it."""
    if name == "is_premium":
        merged.is_premium, merged.premium_known = listed.is_premium, listed.premium_known
    else:
        setattr(merged, name, getattr(listed, name))
