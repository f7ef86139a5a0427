"""E-mail addresses out of crawled text: every address is replaced by a placeholder before anything is
stored.

Authors' addresses turn up in abstracts, titles and keywords, written plainly (``jane@example.org``),
with look-alike characters (``＠``, ``．``), as HTML character references (``&#64;``), percent-encoded
in URLs (``%40``), obfuscated (``jane [at] example [dot] org``) or with invisible characters inside.
Every one of those forms counts as an address here. Matching is linear in the text's length: the local
part is taken as one atomic run that starts where a run of address characters starts, so a megabyte of
letters with one ``@`` in it costs one pass.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

PLACEHOLDER = "[email removed]"
# A placeholder that keeps a URL a URL (no space, no brackets).
URL_PLACEHOLDER = "email-removed"

# Zero-width, bidi and other invisible characters someone may hide inside an address.
_INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e"
    "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
)
_LOCAL_CHARS = rf"\w.+\-{_INVISIBLE}"
_LABEL_CHARS = rf"\w\-{_INVISIBLE}"
_OPEN = r"[\[\(\{<]"
_CLOSE = r"[\]\)\}>]"
_AT = (
    rf"[{_INVISIBLE}]*"
    rf"(?:@|\uff20|\ufe6b|&\#0*64;|&\#x0*40;|&commat;|%40|\s{{0,3}}{_OPEN}\s{{0,3}}at\s{{0,3}}{_CLOSE}\s{{0,3}})"
    rf"[{_INVISIBLE}]*"
)
_DOT = (
    rf"[{_INVISIBLE}]*"
    rf"(?:\.|\uff0e|\u3002|\ufe52|&\#0*46;|&\#x0*2e;|&period;|\s{{0,3}}{_OPEN}\s{{0,3}}dot\s{{0,3}}{_CLOSE}\s{{0,3}})"
    rf"[{_INVISIBLE}]*"
)
_TLD = r"(?:xn--[a-z0-9-]{2,59}|[^\W\d_]{2,63})"
_EMAIL = re.compile(
    rf"(?<![{_LOCAL_CHARS}])(?>[{_LOCAL_CHARS}]+){_AT}(?:(?>[{_LABEL_CHARS}]+){_DOT}){{1,10}}{_TLD}",
    re.IGNORECASE,
)
# Cheap test first: most text has none of these, and then the expression never runs.
_MARKERS = ("@", "\uff20", "\ufe6b", "&commat;", "%40")
# Only the references that spell an "@": every page carries other character references (&#39;), and
# a marker they all match would run the full expression over every page.
_REFERENCE_AT = re.compile(r"&#(?:0*64|x0*40);", re.IGNORECASE)
_BRACKETED_AT = re.compile(rf"{_OPEN}\s{{0,3}}at\s{{0,3}}{_CLOSE}", re.IGNORECASE)


def _may_hold_address(text: str) -> bool:
    return (
        any(marker in text for marker in _MARKERS)
        or _REFERENCE_AT.search(text) is not None
        or _BRACKETED_AT.search(text) is not None
    )


def scrub_emails(text: str, placeholder: str = PLACEHOLDER) -> tuple[str, int]:
    """``text`` with every e-mail address replaced by ``placeholder``, and how many were replaced.

    Replacing can join a placeholder and what followed an address into a new one (``a@b.cc@d.ee``
    with a placeholder made of address characters): the text is scrubbed again until none is left.
    Each pass that replaces something removes an ``@``, so the passes end.
    """
    if len(text) <= _MEMO_MAX_CHARS:
        return _scrubbed_short(text, placeholder)
    return _scrubbed(text, placeholder)


# The same short strings come back item after item (a site's navigation, footer and labels in every
# page's blocks): measured on 686 lecture pages, 44,678 of the 55,671 strings scrubbed had been seen among
# the last _MEMO_STRINGS.
_MEMO_MAX_CHARS = 2000
_MEMO_STRINGS = 4096


@functools.lru_cache(maxsize=_MEMO_STRINGS)
def _scrubbed_short(text: str, placeholder: str) -> tuple[str, int]:
    return _scrubbed(text, placeholder)


def _scrubbed(text: str, placeholder: str) -> tuple[str, int]:
    if not _may_hold_address(text):
        return text, 0
    total = 0
    while True:
        text, count = _EMAIL.subn(placeholder, text)
        total += count
        if not count:
            return text, total


_URL_PIECES = re.compile(r"([/?#&=;])")
_LECTURE_SEGMENT = re.compile(r"^(\d+-)(.*)$", re.DOTALL)


def scrub_url(url: str, placeholder: str = URL_PLACEHOLDER) -> tuple[str, int]:
    """A URL with addresses replaced piece by piece (path segments, query names and values), keeping
    the lecture id that starts a ``<id>-<slug>`` segment: the URL still names its lecture."""
    if not _may_hold_address(url):
        return url, 0
    total = 0
    pieces = _URL_PIECES.split(url)
    for i, piece in enumerate(pieces):
        match = _LECTURE_SEGMENT.match(piece)
        head, rest = (match[1], match[2]) if match else ("", piece)
        clean, count = scrub_emails(rest, placeholder)
        if count:
            pieces[i] = head + clean
            total += count
    return ("".join(pieces), total) if total else (url, 0)


def contains_email(text: str) -> bool:
    """True when :func:`scrub_emails` would change ``text``."""
    return _may_hold_address(text) and _EMAIL.search(text) is not None


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
    fields: Mapping[str, Any], url_fields: frozenset[str] | set[str] = frozenset()
) -> tuple[dict[str, Any], dict[str, int]]:
    """Every string field (and string inside a list field) of a record scrubbed.

    Fields named in ``url_fields`` get :data:`URL_PLACEHOLDER`, the others :data:`PLACEHOLDER`.
    Returns the scrubbed copy and, for each field that held addresses, how many.
    """
    out: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for name, value in fields.items():
        is_url = name in url_fields
        clean, count = scrub_value(value, URL_PLACEHOLDER if is_url else PLACEHOLDER, url=is_url)
        out[name] = clean
        if count:
            counts[name] = count
    return out, counts
