"""E-mail addresses out of crawled text: every address is replaced by a placeholder before anything is
stored.

Authors' addresses turn up in abstracts, titles and keywords, written plainly (``jane@example.org``),
with look-alike characters (``＠``, ``．``), as HTML character references (``&#64;``), percent-encoded
in URLs (``%40``), obfuscated (``jane [at] example [dot] org``, ``jane(at)example.org``), with spaces
around the "@" (``jane @ example.org``) or with invisible characters inside. Every one of those forms
counts as an address here, and is replaced whole:

- the local part is a run of letters, digits, ``. _ + -``, with an apostrophe (``o'brien``, ``o’brien``)
  or one of RFC 5322's rarer characters (``! # $ * = ? ^ ` | ~``) inside it or just before the "@" but
  never first, so a quote or a Markdown mark before an address stays (``'jane@…'``); or it is quoted
  (``"jane doe"@example.org``);
- the "@" is any form above; a plain one has no space on either side, or one to three spaces within the
  line on both sides;
- the domain is dotted labels ending in a top-level domain of two or more letters (or ``xn--``), the
  host's own name ``localhost``, or a host written as its address: ``[192.168.1.1]``,
  ``[IPv6:2001:db8::1]``, or a bare ``192.168.1.1``. Case does not matter.

What this leaves as text: an "@" without a local part before it (``@emnlp``, a decorator
``@dataclass``, ``@article{...}``), or without such a domain after it (``e.g. A @ B``, ``x = A @ B.T``,
``pass@1``, ``mAP@0.5``, ``user@localhost-dev``), spaces on one side of the "@" only (``jane @example``,
``data@ 5.org``), "at" and "dot" as plain words (``jane at example dot org``: prose says "at" too) and
names with apostrophes (``J. O'Brien``). An expression that reads like one is taken for one
(``y @ np.linalg``). What looks like an address but is none of these forms is for the dataset card's
count to find (:mod:`crawler.privacy.email_like`), which reads wider on purpose.

Matching is linear in the text's length: the local part is taken as one atomic run that starts where a
run of address characters starts, so a megabyte of letters with one ``@`` in it costs one pass.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate

PLACEHOLDER = "[email removed]"
# A placeholder that keeps a URL a URL (no space, no brackets).
URL_PLACEHOLDER = "email-removed"

# Zero-width, bidi and other invisible characters someone may hide inside an address.
_INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e"
    "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
)
_LOCAL_CHARS = rf"\w.+\-{_INVISIBLE}"
# What a local part may hold between two runs of address characters, or just before its "@", but never
# first: the apostrophe of o'brien@ (and its typographic form) and RFC 5322's rarer characters. Never
# first, so that a quote or a Markdown mark before an address ('jane@…', `jane@…`) stays text.
_JOINERS = "'\u2019!#$*=?^`|~"
_LABEL_CHARS = rf"\w\-{_INVISIBLE}"
_OPEN = r"[\[\(\{<]"
_CLOSE = r"[\]\)\}>]"
# Spaces within a line: "jane @ example.org" writes its "@" between one to three of them on each side.
_LINE_SPACE = r"[ \t\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]"
_LINE_SPACES = frozenset(" \t\u00a0\u1680\u202f\u205f\u3000") | {chr(c) for c in range(0x2000, 0x200B)}
_AT_FORMS = (
    rf"(?:@|\uff20|\ufe6b|{_LINE_SPACE}{{1,3}}[@\uff20\ufe6b]{_LINE_SPACE}{{1,3}}"
    rf"|&\#0*64;|&\#x0*40;|&commat;|%40|\s{{0,3}}{_OPEN}\s{{0,3}}at\s{{0,3}}{_CLOSE}\s{{0,3}})"
)
_AT = rf"[{_INVISIBLE}]*{_AT_FORMS}[{_INVISIBLE}]*"
_DOT = (
    rf"[{_INVISIBLE}]*"
    rf"(?:\.|\uff0e|\u3002|\ufe52|&\#0*46;|&\#x0*2e;|&period;|\s{{0,3}}{_OPEN}\s{{0,3}}dot\s{{0,3}}{_CLOSE}\s{{0,3}})"
    rf"[{_INVISIBLE}]*"
)
_TLD = r"(?:xn--[a-z0-9-]{2,59}|[^\W\d_]{2,63})"
_IPV4 = r"(?:\d{1,3}\.){3}\d{1,3}"
_DOMAIN = (
    rf"(?:(?:(?>[{_LABEL_CHARS}]+){_DOT}){{1,10}}{_TLD}"
    # The host's own name, and a host written as its address: bracketed (RFC 5321's address literals,
    # IPv6 too) or bare.
    rf"|localhost(?![{_LABEL_CHARS}])"
    rf"|\[(?:ipv6:)?(?:{_IPV4}|(?=[0-9a-f.]*:[0-9a-f.]*:)[0-9a-f:.]{{2,45}})\]"
    rf"|(?>{_IPV4})(?![\d.]*\d))"
)
# A local part: a run of address characters, joiners inside it, not one run's tail (the lookbehinds).
_LOCAL = (
    rf"(?<![{_LOCAL_CHARS}])(?<![{_LOCAL_CHARS}][{_JOINERS}])"
    rf"(?>[{_LOCAL_CHARS}]+(?:[{_JOINERS}][{_LOCAL_CHARS}]+)*[{_JOINERS}]?)"
)
# A quoted local part ("jane doe"@example.org): what it holds can start no form of "@" (so that no "@"
# is inside it), spans no line, and neither starts nor ends with a space nor holds what separates values
# in markup, so that the quotes of two HTML attributes or JSON strings (title="@example.org",
# {"domain":"@example.org"}) never make one.
_QUOTED = r'"(?!\s)[^"\r\n@\uff20\ufe6b&%\[\]\(\)\{\}<>\\=:,;]{1,64}(?<!\s)"'
_EMAIL = re.compile(rf"(?:{_QUOTED}{_AT_FORMS}[{_INVISIBLE}]*|{_LOCAL}{_AT}){_DOMAIN}", re.IGNORECASE)
# Every form of "@" starts with one of these: "@" and its look-alikes, "&" (character references),
# "%" (percent-encoding) or, for the bracketed forms, up to three spaces and an opening bracket.
_AT_CHARS = ("@", "\uff20", "\ufe6b")
_WIDE_AT_CHARS = ("\uff20", "\ufe6b")
# Only the references that spell an "@": every page carries other character references (&#39;), and
# a marker they all match would run the full expression over every page.
_REFERENCE_AT = re.compile(r"&(?:\#0*64;|\#x0*40;|commat;)", re.IGNORECASE)


def _bracketed_at(space: str) -> tuple[re.Pattern[str], tuple[re.Pattern[str], ...]]:
    """The bracketed "at" with up to three ``space`` on each side of it: one expression for any opening
    bracket, and one for each. Whether a text holds the bracketed form is asked of every text scrubbed:
    one search per opening bracket starts with a literal, which the expression engine scans for several
    times faster than for a class."""

    def compiled(opening: str) -> re.Pattern[str]:
        return re.compile(rf"{opening}{space}{{0,3}}at{space}{{0,3}}{_CLOSE}", re.IGNORECASE)

    return compiled(_OPEN), tuple(compiled(re.escape(bracket)) for bracket in "[({<")


_BRACKETED_AT, _BRACKETED_AT_EACH = _bracketed_at(r"\s")
# The bracketed form as JSON text writes it: its spaces may be the short escapes of a tab, a line feed,
# a carriage return or a form feed.
_JSON_BRACKETED_AT, _JSON_BRACKETED_AT_EACH = _bracketed_at(r"(?:\s|\\[tnrf])")
_SPACE = re.compile(r"\s")
# A \u escape in JSON text of a character some form of "@" holds: any ASCII one (the forms' letters,
# digits, signs, brackets and spaces), the wide "@"s and the spaces beyond ASCII. Escapes of anything
# else (accented letters, CJK, typographic quotes: all of a text written ASCII-only) cannot make one.
# An escaped backslash before a "u" is found too, which only costs a look.
_FORM_ESCAPE = re.compile(
    r"\\u(?:00(?:[0-7][0-9a-fA-F]|85|[aA]0)|1680|20(?:0[0-9aA]|2[89fF]|5[fF])|3000|[fF][fF]20|[fF][eE]6[bB])"
)
_LOCAL_CHAR = re.compile(rf"[{_LOCAL_CHARS}{_JOINERS}]", re.IGNORECASE)
# The whole local part that ends where the search ends: where it starts.
_LOCAL_RUN_TO_END = re.compile(rf"{_LOCAL}\Z", re.IGNORECASE)
_QUOTED_MAX = 64
_QUOTED_LOCAL = re.compile(_QUOTED)
# How far back a local part is first looked for; longer ones are found by doubling it.
_LOCAL_WINDOW = 64


def address_positions(text: str) -> list[int]:
    """Where the text after a local part may start an "@" in any of its forms, in order: empty when
    :func:`scrub_emails` would change nothing. Every form is found within a text, so texts joined by a
    character no form holds (``"\\x00"``) are searched as one.

    Every address has one, right after its local part, and these are rare in ordinary text: the full
    expression then runs only there instead of at every character. Single characters are found with
    ``str.find`` (a memory scan); only the bracketed form needs an expression.
    """
    found: list[int] = []
    for at in _at_signs(text):
        # "jane @ example.org": the form starts with the (up to three) spaces before its "@".
        start = at
        while start > 0 and at - start < 3 and text[start - 1] in _LINE_SPACES:
            start -= 1
        found.append(start)
    _coded_at_positions(text, found)
    if _any_search(_BRACKETED_AT_EACH, text):
        for match in _BRACKETED_AT.finditer(text):
            # The form may start with up to three spaces before its bracket.
            start = match.start()
            for _ in range(3):
                if start == 0 or not _SPACE.match(text, start - 1):
                    break
                start -= 1
            found.append(start)
    return sorted(set(found))


def _at_signs(text: str) -> Iterator[int]:
    """Where ``text`` writes an "@" sign, narrow or wide, in order of the sign."""
    for char in _AT_CHARS if not text.isascii() else _AT_CHARS[:1]:
        yield from _each(text, char)


def _each(text: str, char: str) -> Iterator[int]:
    """Every position of ``char`` in ``text``: a search for one character is a memory scan."""
    at = text.find(char)
    while at >= 0:
        yield at
        at = text.find(char, at + 1)


def _coded_at_positions(text: str, found: list[int]) -> None:
    """Where ``text`` writes an "@" percent-encoded or as a character reference, appended to ``found``:
    "%40" and the references are read where a "%" or a "&" is found."""
    found.extend(at for at in _each(text, "&") if _REFERENCE_AT.match(text, at))
    found.extend(at for at in _each(text, "%") if text.startswith("40", at + 1))


def _quoted_start(text: str, end: int, floor: int) -> int | None:
    """Where the quoted local part that ends at ``end`` opens, if it opens at ``floor`` or later; None
    when there is none. What it holds has no quote, so only the nearest quote before its last can open
    it."""
    if end - 1 <= floor or text[end - 1] != '"':
        return None
    opening = text.rfind('"', max(floor, end - 2 - _QUOTED_MAX), end - 1)
    if opening < 0 or _QUOTED_LOCAL.fullmatch(text, opening, end) is None:
        return None
    return opening


def _local_start(text: str, end: int, floor: int) -> int | None:
    """Where the local part (a run of address characters and joiners) that ends at ``end`` starts, if it
    starts at ``floor`` or later; None when there is none."""
    if end <= floor or not _LOCAL_CHAR.match(text, end - 1):
        return None
    window = _LOCAL_WINDOW
    while True:
        low = max(floor, end - window)
        run = _LOCAL_RUN_TO_END.search(text, low, end)
        if run is not None:
            return run.start()
        if low == floor:
            return None
        window *= 2


def _addresses(text: str, positions: list[int]) -> Iterator[re.Match[str]]:
    """The matches of the full expression, as ``finditer`` would find them, tried only at ``positions``.

    A match starts where a local part starts (the lookbehinds) and its local part is that whole run of
    address characters and joiners (atomic), or a quoted one, so its "@" starts right where the local
    part ends: at one of ``positions``. Each position is tried in order from the start of the local
    part before it; a match ends before the next try. Local parts never cross a position (no form of
    "@" starts with an address character or a joiner, and a quoted local part holds none), so the
    search for a start stops at the previous position and the whole text is read a bounded number of
    times.
    """
    resume = 0
    floor = 0
    for at in positions:
        if at < resume:
            continue
        low = max(floor, resume)
        start = _local_start(text, at, low)
        if start is None:
            start = _quoted_start(text, at, low)
        floor = at + 1
        if start is None:
            continue
        match = _EMAIL.match(text, start)
        if match is not None:
            resume = match.end()
            yield match


def strings_to_scrub(
    strings: Sequence[str], positions_of: Callable[[str], list[int]] = address_positions
) -> set[str]:
    """Those of ``strings`` that :func:`scrub_emails` may change: it returns every other one unchanged.
    ``positions_of``: where a text may hold what the scrub looks for (by default, a form of "@").

    All of them are searched as one text, so many short strings (a JSON answer's) cost one search
    rather than one each. They are joined by a character that no form of "@" contains and that is no
    address character (nor part of any spoken address or phone number), so what one string holds is
    found within it and no form spans two of them.
    """
    if not strings:
        return set()
    joined = "\x00".join(strings)
    positions = positions_of(joined)
    if not positions:
        return set()
    ends = list(accumulate(len(text) + 1 for text in strings))
    return {strings[bisect_right(ends, at)] for at in positions}


def json_may_hold_address(text: str) -> bool:
    """Whether a string of the JSON text ``text`` may hold an address: False when :func:`scrub_emails`
    would change none of its strings, keys included.

    For JSON written with ``ensure_ascii`` off (``json.dumps``), which writes each character of a string
    as it is but quotes, backslashes and control characters: every address holds a form of "@" written
    without those, but for the spaces of a bracketed "at", which may be escapes (``(\\tat)``,
    ``(\\u000bat)``). Each form is looked for with a scan of its own, the most common first.
    """
    if "@" in text or "%40" in text:
        return True
    if not text.isascii() and any(char in text for char in _WIDE_AT_CHARS):
        return True
    if "&" in text and _REFERENCE_AT.search(text) is not None:
        return True
    if _has_u_escape(text):
        return True
    return _any_search(_JSON_BRACKETED_AT_EACH, text)


def json_address_positions(text: str) -> tuple[list[int], bool]:
    """Where a string of the JSON text ``text`` may hold an address, and whether ``text`` read as plain
    text may: :func:`scrub_emails` changes no string of ``text`` (keys included) whose literal holds none
    of the positions, and leaves ``text`` itself as it is when the flag is False.

    ``text`` must be JSON (any JSON: a server's, escapes anywhere). Every form of "@" is written with
    characters JSON writes as they are, so a string that holds one holds it in its literal, but for a
    ``\\u`` escape of a character a form holds (one position each) and a bracketed "at" spaced with
    short escapes. Every position is inside a string literal: none of these characters or escapes is
    JSON outside one.
    """
    found = list(_at_signs(text))
    _coded_at_positions(text, found)
    plain = bool(found)
    if _any_search(_JSON_BRACKETED_AT_EACH, text):
        for match in _JSON_BRACKETED_AT.finditer(text):
            found.append(match.start())
            plain = plain or _BRACKETED_AT.match(text, match.start()) is not None
    found.extend(match.start() for match in _FORM_ESCAPE.finditer(text))
    return sorted(found), plain


def _any_search(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
    return any(pattern.search(text) is not None for pattern in patterns)


def _has_u_escape(text: str) -> bool:
    """Whether JSON text holds a ``\\u`` escape: not a backslash written ``\\\\`` before a "u" (LaTeX's
    ``\\url``), so the backslashes before the "u" are odd in number."""
    at = text.find("\\u")
    while at >= 0:
        start = at
        while start > 0 and text[start - 1] == "\\":
            start -= 1
        if (at - start) % 2 == 0:
            return True
        at = text.find("\\u", at + 2)
    return False


def may_hold_address(text: str) -> bool:
    """Whether ``text`` holds any form of "@" the scrubber reads (written, escaped, bracketed, wide):
    False when :func:`scrub_emails` would change nothing."""
    return bool(address_positions(text))


def _replace_once(text: str, placeholder: str) -> tuple[str, int]:
    """``_EMAIL.subn(placeholder, text)``, reading the text only around its "@"s."""
    positions = address_positions(text)
    if not positions:
        return text, 0
    if "\\" in placeholder:
        # A replacement template (group references, escapes): let the expression expand it.
        return _EMAIL.subn(placeholder, text)
    spans = [(match.start(), match.end(), placeholder) for match in _addresses(text, positions)]
    return (spliced(text, spans), len(spans)) if spans else (text, 0)


def spliced(text: str, spans: Iterable[tuple[int, int, str]]) -> str:
    """``text`` with each of ``spans`` (start, end, what replaces it; in order, not overlapping)
    replaced."""
    pieces: list[str] = []
    kept = 0
    for start, end, new in spans:
        pieces += [text[kept:start], new]
        kept = end
    pieces.append(text[kept:])
    return "".join(pieces)


def scrub_emails(text: str, placeholder: str = PLACEHOLDER) -> tuple[str, int]:
    """``text`` with every e-mail address replaced by ``placeholder``, and how many were replaced.

    Replacing can join a placeholder and what followed an address into a new one (``a@b.cc@d.ee``
    with a placeholder made of address characters): the text is scrubbed again until none is left.
    Each pass that replaces something removes an ``@``, so the passes end.
    """
    return _scrubbed(text, placeholder)


Scrub = Callable[[str, str], tuple[str, int]]


def remembering_short_texts(scrub: Scrub) -> Scrub:
    """``scrub`` (of a text, with a placeholder) remembering what it made of the last 4096 texts of up to
    2000 characters: the same short strings come back item after item (a site's navigation, footer and
    labels in every page's blocks, event and session names): measured on 686 lecture pages, 44,678 of
    the 55,671 strings scrubbed had been seen among the last 4096."""
    remembered = functools.lru_cache(maxsize=4096)(scrub)

    def scrubbed(text: str, placeholder: str) -> tuple[str, int]:
        if len(text) > 2000:
            return scrub(text, placeholder)
        clean, count = remembered(text, placeholder)
        # What is remembered is an equal string, perhaps another object: the one given comes back.
        return (clean, count) if count else (text, 0)

    return scrubbed


@remembering_short_texts
def _scrubbed(text: str, placeholder: str) -> tuple[str, int]:
    total = 0
    while True:
        text, count = _replace_once(text, placeholder)
        total += count
        if not count:
            return text, total


_URL_PIECES = re.compile(r"([/?#&=;])")
_LECTURE_SEGMENT = re.compile(r"^(\d+-)(.*)$", re.DOTALL)


def scrub_url(url: str, placeholder: str = URL_PLACEHOLDER) -> tuple[str, int]:
    """A URL with addresses replaced piece by piece (path segments, query names and values), keeping
    the lecture id that starts a ``<id>-<slug>`` segment: the URL still names its lecture."""
    if not may_hold_address(url):
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
    return next(_addresses(text, address_positions(text)), None) is not None
