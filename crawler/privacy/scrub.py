"""One scrub for every text the project keeps, and the walk over a record's strings.

:func:`scrub_text` replaces every e-mail address (written in any form, spoken or spelled: ``carol.x at
gmail.com``, ``d a v e @ example . com``) and every phone number in a text, whatever the text is: an
abstract, a page's text, a title, a session's or an event's name or description, an affiliation, a
transcript, a slide's text. :func:`scrub_value` scrubs every string inside a value (lists, tuples,
mappings) with it, URLs piece by piece (:func:`crawler.privacy.emails.scrub_url`): a URL's ids and paths
are no phone numbers.

Most texts hold nothing: :func:`texts_to_scrub` tells which of many texts may, with one search of them
all, and only those are read with the rules (:func:`crawler.privacy.spoken.redaction_spans`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crawler.privacy.emails import (
    PLACEHOLDER,
    URL_PLACEHOLDER,
    remembering_short_texts,
    scrub_url,
    spliced,
    strings_to_scrub,
)
from crawler.privacy.spoken import personal_data_positions, redaction_spans
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


def scrub_text(text: str, placeholder: str = PLACEHOLDER) -> tuple[str, int]:
    """``text`` with every e-mail address (written, obfuscated, spoken or spelled) replaced by
    ``placeholder`` and every phone number by :data:`crawler.privacy.phones.PHONE_PLACEHOLDER`, and how
    many were replaced. Nothing else changes: not a space, not a number without a phone number's
    evidence, not an "@" or an "at" that is no address's. The same string when there is nothing to
    replace; scrubbing what it returns changes nothing.
    """
    return _scrubbed(text, placeholder)


# Each pass replaces what it finds with placeholders, which no rule reads as personal data; a text is
# read again after a pass, in case a replacement joined what was around it into something new.
_MAX_PASSES = 8


@remembering_short_texts
def _scrubbed(text: str, placeholder: str) -> tuple[str, int]:
    total = 0
    for _ in range(_MAX_PASSES):
        if not personal_data_positions(text):
            break
        spans = redaction_spans(text)
        if not spans:
            break
        text = spliced(text, [(s, e, placeholder if new == PLACEHOLDER else new) for s, e, new in spans])
        total += len(spans)
    return text, total


def texts_to_scrub(strings: Sequence[str]) -> set[str]:
    """Those of ``strings`` that :func:`scrub_text` (or :func:`scrub_url`) may change: it returns every
    other one unchanged.

    All of them are searched as one text (see :func:`crawler.privacy.emails.strings_to_scrub`), so many
    short strings (a record's) cost one search rather than one each.
    """
    return strings_to_scrub(strings, personal_data_positions)


def values_may_hold_address(values: Iterable[object]) -> bool:
    """False when :func:`scrub_value` would change none of ``values`` (whether as text or as URLs): the
    strings inside them are searched as one text, so a record without personal data costs one search."""
    strings: list[str] = []
    for value in values:
        strings_in(value, strings)
    return bool(texts_to_scrub(strings))


def scrub_value(value: Any, placeholder: str = PLACEHOLDER, *, url: bool = False) -> tuple[Any, int]:
    """A string, or the strings inside lists, tuples and mappings, scrubbed (:func:`scrub_text`); other
    values unchanged.

    ``url``: the strings are URLs (see :func:`scrub_url`). ``placeholder`` replaces addresses (phone
    numbers get theirs). Returns the value (the same object when nothing changed) and the number of
    addresses and phone numbers replaced.
    """
    if isinstance(value, str):
        return scrub_url(value, placeholder) if url else scrub_text(value, placeholder)
    if not isinstance(value, list | tuple | Mapping):
        return value, 0
    total = 0
    out = {}
    for key, item in value.items() if isinstance(value, Mapping) else enumerate(value):
        out[key], count = scrub_value(item, placeholder, url=url)
        total += count
    if not total:
        return value, 0
    if isinstance(value, Mapping):
        return out, total
    return (list(out.values()) if isinstance(value, list) else tuple(out.values())), total


def scrub_fields(
    fields: Mapping[str, object], url_fields: frozenset[str] | set[str] = frozenset()
) -> tuple[dict[str, object], dict[str, int]]:
    """Every string field (and string inside a list field) of a record scrubbed.

    Fields named in ``url_fields`` get :data:`URL_PLACEHOLDER`, the others :data:`PLACEHOLDER` (and
    phone numbers theirs). Returns the scrubbed copy and, for each field that held personal data, how
    many.
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
