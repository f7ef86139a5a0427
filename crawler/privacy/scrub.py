"""The walk over a record's strings: every string inside a value (lists, tuples, mappings) scrubbed of
e-mail addresses by :func:`crawler.privacy.emails.scrub_emails`, URLs piece by piece
(:func:`crawler.privacy.emails.scrub_url`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from crawler.privacy.emails import PLACEHOLDER, URL_PLACEHOLDER, scrub_emails, scrub_url, strings_to_scrub
from crawler.schema import OWN_URL_FIELDS

# The fields of a lecture record that hold URLs of the lecture itself: scrubbed with URL_PLACEHOLDER.
RECORD_URL_FIELDS = OWN_URL_FIELDS


# A tuple, not ``list | tuple``: that expression builds a new object each time it runs.
_SEQUENCES = (list, tuple)


def strings_in(value: object, out: list[str]) -> None:
    """Every string inside ``value`` (itself, or inside its lists, tuples and mappings' values) appended
    to ``out``, in no particular order; walked without a call per list or mapping (an author is a mapping
    with a list), and without recursion."""
    pending = [value]
    while pending:
        value = pending.pop()
        members: Iterable[object]
        if isinstance(value, str):
            out.append(value)
            continue
        if isinstance(value, _SEQUENCES):
            members = value
        elif isinstance(value, Mapping):
            members = value.values()
        else:
            continue
        for member in members:
            if isinstance(member, str):
                out.append(member)
            elif member is not None:
                pending.append(member)


def values_may_hold_address(values: Iterable[object]) -> bool:
    """False when :func:`scrub_value` would change none of ``values`` (whether as text or as URLs): the
    strings inside them are searched as one text, so a record without an address costs one search."""
    strings: list[str] = []
    for value in values:
        strings_in(value, strings)
    return bool(strings_to_scrub(strings))


def scrub_value(value: Any, placeholder: str = PLACEHOLDER, *, url: bool = False) -> tuple[Any, int]:
    """A string, or the strings inside lists, tuples and mappings, scrubbed; other values unchanged.

    ``url``: the strings are URLs (see :func:`scrub_url`). Returns the value (the same object when
    nothing changed) and the number of addresses replaced.
    """
    if isinstance(value, str):
        return scrub_url(value, placeholder) if url else scrub_emails(value, placeholder)
    if isinstance(value, list | tuple):
        total = 0
        items = []
        for item in value:
            clean, count = scrub_value(item, placeholder, url=url)
            items.append(clean)
            total += count
        if not total:
            return value, 0
        return (items if isinstance(value, list) else tuple(items)), total
    if isinstance(value, Mapping):
        total = 0
        out = {}
        for key, item in value.items():
            clean, count = scrub_value(item, placeholder, url=url)
            out[key] = clean
            total += count
        return (out, total) if total else (value, 0)
    return value, 0


def scrub_fields(
    fields: Mapping[str, object], url_fields: frozenset[str] | set[str] = frozenset()
) -> tuple[dict[str, object], dict[str, int]]:
    """Every string field (and string inside a list field) of a record scrubbed.

    Fields named in ``url_fields`` get :data:`URL_PLACEHOLDER`, the others :data:`PLACEHOLDER`.
    Returns the scrubbed copy and, for each field that held addresses, how many.
    """
    out: dict[str, object] = {}
    counts: dict[str, int] = {}
    for name, value in fields.items():
        is_url = name in url_fields
        clean, count = scrub_value(value, URL_PLACEHOLDER if is_url else PLACEHOLDER, url=is_url)
        out[name] = clean
        if count:
            counts[name] = count
    return out, counts
