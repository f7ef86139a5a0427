"""Authors from the API's ``profiles``, read through an allow-list.

A lecture's ``sorted_profiles`` relationship gives its authors in their published order; the profiles
themselves sit in the document's ``included``, whose order means nothing. A profile also carries an
e-mail address, an avatar and more: only the name, the affiliation and the ORCID iD are ever read, and
:func:`allowed_profile` is the one place that decides what of a profile may be kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from operator import mul
from typing import Any

from crawler.json_types import JsonObject, JsonValue
from crawler.pages.attributes import (
    LECTURE_RELATIONSHIPS,
    PROFILE_ATTRIBUTES,
    known_names,
    lookup,
    relationship_name,
)
from crawler.pages.fields import Author
from crawler.pages.jsonapi import Resource, ResourceKey, member, related_keys
from crawler.pages.values import shown
from crawler.text.normalize import nfc_collapsed, person_name, without_surrogates

PROFILE_TYPES = frozenset({"profiles"})
# Every problem about an ORCID iD starts so: a crawl counts them.
INVALID_ORCID = "invalid ORCID iD dropped"
# The problem of a lecture whose authors' profiles were left out of ``included`` ends so: its author list
# is incomplete, and a crawl keeps the lecture's last authors.
AUTHOR_PROFILES_MISSING = "author profile(s) not included"

_ORCID = re.compile(r"^(\d{4})-?(\d{4})-?(\d{4})-?(\d{3}[\dX])$")
_ORCID_URL = re.compile(r"^(?:https?://)?(?:www\.)?orcid\.org/", re.IGNORECASE)


_BASE_DIGITS = 15
_WEIGHTS = [2 ** (_BASE_DIGITS - i) for i in range(_BASE_DIGITS)]
_ZERO_OFFSET = ord("0") * sum(_WEIGHTS)


def orcid_check_digit(base_digits: str) -> str:
    """The ISO 7064 MOD 11-2 check character of an ORCID iD's first 15 digits."""
    if len(base_digits) == _BASE_DIGITS and base_digits.isascii() and base_digits.isdigit():
        # An iD's 15 ASCII digits (every one normalize_orcid checks): the loop below sums each digit
        # times a power of two, here from the digits' bytes (48 above their values) in one pass.
        total = sum(map(mul, base_digits.encode("ascii"), _WEIGHTS)) - _ZERO_OFFSET
    else:
        total = 0
        for digit in base_digits:
            total = (total + int(digit)) * 2
    result = (12 - total % 11) % 11
    return "X" if result == 10 else str(result)


def normalize_orcid(value: str) -> str | None:
    """The bare iD (``0000-0002-1825-0097``) of an ORCID iD written bare or as its URL; None when it
    is not one or its check digit is wrong."""
    text = _ORCID_URL.sub("", value.strip()).strip().rstrip("/").upper()
    match = _ORCID.match(text) if text.isascii() else None
    if match is None:
        return None
    digits = "".join(match.groups())
    if orcid_check_digit(digits[:15]) != digits[15]:
        return None
    return "-".join(match.groups())


def _orcid(value: Any, problems: list[str]) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    orcid = normalize_orcid(value) if isinstance(value, str) else None
    if orcid is None:
        problems.append(f"{INVALID_ORCID}: {shown(value)!r}")
    return orcid


def _clean(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    if value.isascii():  # nearly every name: no surrogate to drop, and NFC leaves it as it is
        return " ".join(value.split()) or None
    return nfc_collapsed(without_surrogates(value)) or None


def _name(attributes: Any) -> str | None:
    """``full_name``, else ``first_name`` and ``last_name`` joined by a space; in the form of
    :func:`~crawler.text.normalize.person_name` (format characters removed, NFC, whitespace collapsed),
    nothing else changed."""
    full = _clean(lookup(attributes, PROFILE_ATTRIBUTES["full_name"]))
    name = _person_name(full) if full else None
    if name:
        return name
    parts = [
        _clean(lookup(attributes, PROFILE_ATTRIBUTES["first_name"])),
        _clean(lookup(attributes, PROFILE_ATTRIBUTES["last_name"])),
    ]
    return _person_name(" ".join(p for p in parts if p)) or None


def _person_name(cleaned: str) -> str:
    """:func:`~crawler.text.normalize.person_name` of a name :func:`_clean` gave (or of such names
    joined by a space)."""
    # Such a name in ASCII is its own person_name: it has no format character or surrogate to remove,
    # NFC leaves ASCII alone, and its whitespace is collapsed already.
    return cleaned if cleaned.isascii() else person_name(cleaned)


def _affiliations(attributes: Any) -> list[str]:
    """The profile's affiliation as a list: one element for a string (never split), the strings of a
    list, [] for none."""
    value = lookup(attributes, PROFILE_ATTRIBUTES["affiliation"])
    if value is None:
        return []
    if isinstance(value, str):  # the usual one affiliation
        one = _clean(value)
        return [one] if one else []
    values = value if isinstance(value, list) else [value]
    cleaned = (_clean(v) for v in values)
    return list(dict.fromkeys(v for v in cleaned if v))


def author(profile: Any, problems: list[str]) -> Author | None:
    """An author from a profile resource; None (and a problem) for a profile without a name."""
    # Its attributes are looked up once, for every field read from them.
    attributes = member(profile, "attributes")
    name = _name(attributes)
    orcid = _orcid(lookup(attributes, PROFILE_ATTRIBUTES["orcid"]), problems)
    if name is None:
        problems.append("an author profile has no name")
        return None
    return Author(name=name, affiliations=_affiliations(attributes), orcid=orcid)


def lecture_authors(
    lecture: Resource, index: Mapping[ResourceKey, Resource], problems: list[str]
) -> list[Author]:
    """The lecture's authors in the order of its ``sorted_profiles`` relationship."""
    keys = related_keys(lecture, relationship_name(lecture, LECTURE_RELATIONSHIPS["authors"]))
    authors: list[Author] = []
    missing = 0
    for key in keys:
        profile = index.get(key)
        if profile is None:
            missing += 1
            continue
        found = author(profile, problems)
        if found is not None:
            authors.append(found)
    if missing:
        problems.append(f"{missing} {AUTHOR_PROFILES_MISSING}")
    return authors


_ALLOWED = known_names(PROFILE_ATTRIBUTES)


def allowed_profile(profile: Mapping[str, JsonValue]) -> JsonObject:
    """A profile resource with nothing but its type, id and allowed attributes (name parts,
    affiliation, ORCID iD): no e-mail, avatar, links, meta or relationships."""
    out: JsonObject = {key: profile[key] for key in ("type", "id") if key in profile}
    attributes = member(profile, "attributes")
    if isinstance(attributes, Mapping):
        out["attributes"] = {k: v for k, v in attributes.items() if k in _ALLOWED}
    return out
