"""Personal data in any text, said or written: e-mail addresses (written, obfuscated, spoken or spelled)
and phone numbers, where they are (:func:`redaction_spans`), and a transcript's tracks redacted.

Written addresses are found by the project's e-mail scrubber
(:func:`crawler.privacy.emails.scrub_emails`) and phone numbers by :mod:`crawler.privacy.phones`; the
spoken forms are read here: "jane dot doe at example dot com", "carol.x at gmail.com", "jane dot doe at
gmail" (a mail provider said alone), a name spelled out and a spaced "@" ("d a v e @ example . com").
An abstract or a session's description writes them too, so every text the project keeps is read with
these rules (:func:`crawler.privacy.scrub.scrub_text`). "at" and "dot" are plain English too ("we
looked at the dot product", "papers at aclweb.org", "she interned at yahoo.com"): what tells an address
is in :func:`_is_spoken_address`. A spoken form or a phone number wholly inside a URL is none (a video
id of ten digits, a path): the URL stays as it is but for written addresses. Redaction works on spans of
one text, so a whole track is redacted once, after its rolling cues are folded and joined: an address
said across two cues is found whole, then each segment gets its part of the result (the placeholder
where the address starts)."""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from crawler.privacy.emails import PLACEHOLDER as EMAIL_PLACEHOLDER
from crawler.privacy.emails import address_positions, may_hold_address, scrub_emails, spliced
from crawler.privacy.phones import PHONE_PLACEHOLDER, phone_positions, phone_spans
from crawler.privacy.rule import PRIVACY_RULE
from crawler.privacy.shape import text_shape
from crawler.text.normalize import collapse_whitespace

if TYPE_CHECKING:
    # Only named: the transcripts package imports this module to read a track.
    from crawler.transcripts.rolling import TimedText

# Characters the e-mail scrubber is asked to put for each address, to find where the addresses were:
# private-use characters, which no address holds (one the text does not hold is taken).
_MARKERS = "\ue000\ue001\ue002\ue003"

# A word, taken whole (possessive): what follows a word in an address is never a letter, and giving back
# its letters one by one at every word of a track would double the search's cost.
_WORD = r"[^\W_]++"
# Three or more single letters or digits, spaced: a name spelled out ("d a v e").
# Read from the first of them only (not after a single character and a space): tried again inside a
# long run, it would read the run again from every one of its characters.
_SPELLED = r"(?<!(?<![^\W_])[^\W_] )(?:[^\W_] ){2,63}[^\W_](?![^\W_])"
# A spoken address: a name (words or spelled names joined by "dot", "underscore", "dash" or "hyphen", or
# written "." "_" "-"), "at" or a spaced "@", and a domain ending in a top-level domain that is no common
# English word (its dot said or written, spaced or not), or a well-known mail provider said alone.
_LOCAL_JOIN = r"(?:\s+(?:dot|underscore|dash|hyphen)\s+|[._-])"
_LOCAL_PART = rf"(?:{_SPELLED}|{_WORD})"
_DOMAIN_JOIN = r"(?:\s+(?:dot|dash|hyphen)\s+|[ ]?[.\uff0e-][ ]?)"
_TLD_JOIN = r"(?:\s+(?P<said_dot>dot)\s+|[ ]?[.\uff0e][ ]?)"
_TLDS = (
    "com|org|net|edu|gov|mil|io|ai|co|uk|de|fr|ca|au|ch|nl|es|se|dk|fi|jp|cn|kr|br|ru|pl|cz|info|biz|eu"
    "|dev|app|tech|xyz|ac"
)
# Mail providers whose name alone says the domain ("jane dot doe at gmail").
_PROVIDERS = "gmail|googlemail|hotmail|outlook|yahoo|icloud|gmx|protonmail|proton|yandex|aol|qq"
_PROVIDER_NAMES = frozenset(_PROVIDERS.split("|"))
_SPOKEN_EMAIL = re.compile(
    # Not inside a word: after a letter's apostrophe ("it's") is inside one, after a quote is not.
    rf"(?<![\w.@-])(?<!\w['\u2019])(?P<local>{_LOCAL_PART}(?:{_LOCAL_JOIN}{_LOCAL_PART}){{0,6}})"
    rf"(?:(?P<sign>[ \t]*[@\uff20\ufe6b][ \t]*)|\s+at\s+)"
    rf"(?:(?P<host>{_WORD})(?:{_DOMAIN_JOIN}{_WORD}){{0,8}}{_TLD_JOIN}(?:{_TLDS})|(?P<provider>{_PROVIDERS}))"
    r"(?!\w)",
    re.IGNORECASE,
)
# Every spoken address has a sign ("@" or a look-alike) or an "at" between spaces followed by what
# _AFTER_SPOKEN_AT reads (the form's domain or provider): a text that holds neither holds no address, and
# the whole expression, which is tried at every word, need not run over it. "at" is looked back at once
# found (the quicker way round).
_SPOKEN_AT = re.compile(r"at(?<=\sat)(?=\s)", re.IGNORECASE)
_AFTER_SPOKEN_AT = re.compile(
    rf"\s+(?:{_WORD}(?:{_DOMAIN_JOIN}{_WORD}){{0,8}}(?:\s+dot\s+|[ ]?[.\uff0e][ ]?)(?:{_TLDS})"
    rf"|(?:{_PROVIDERS}))(?!\w)",
    re.IGNORECASE,
)
# The same "at" in a text's shape (see :mod:`crawler.privacy.shape`): a search for a literal.
_SHAPE_AT = re.compile(rb"at(?<= at)(?= )")
_SIGNS = ("@", "\uff20", "\ufe6b")
# What every form of "@" the e-mail scrubber reads starts with (see
# :func:`crawler.privacy.emails.may_hold_address`): "@" and its look-alikes, "&" (references), "%"
# (percent-encoding) and opening brackets.
_ADDRESS_SIGN = re.compile(r"[@\uff20\ufe6b&%\[({<]")
_SPACE = re.compile(r"\s")
# Words that come before "at" in speech and are no one's address: "look at example dot com".
_NOT_A_NAME_WORDS = (
    "a an the and or but so is are was were be been am it this that these those here there me us you "
    "him her them we they i look looks looking looked find found available online hosted posted "
    "published code paper slides website site page link visit check go see arrive arrived work works "
    "working worked based located live lives living stay stayed meet met up out back down "
    # Who or what is "at" a provider in prose: "she interned at yahoo.com", "users at gmail.com".
    "interned intern interns internship employed employee employees engineer engineers researcher "
    "researchers scientist scientists team teams staff user users account accounts data service services "
    "email emails mail inbox"
)
_NOT_A_NAME = frozenset(_NOT_A_NAME_WORDS.split())
# Words no dictated name is made of, but prose before "at" is: "we looked at the dot product at
# arxiv.org" says no name "the dot product". (Single letters may be initials: "a dot smith".)
_PROSE_IN_A_NAME_WORDS = (
    "the this that these those our their its your my we they it is are was were of in on for with and or "
    "to from by as"
)
_PROSE_IN_A_NAME = frozenset(_PROSE_IN_A_NAME_WORDS.split())
_LOCAL_JOINS = re.compile(_LOCAL_JOIN, re.IGNORECASE)


def _is_spoken_address(match: re.Match[str]) -> bool:
    """Whether a match of the spoken form is an address: a spaced "@" says so; after "at", a dot said
    before the top-level domain does, unless the name is a word that comes before "at" in speech or
    a dictated name holds a word of prose ("the dot product"); a
    domain written ("carol.x at gmail.com") or a provider said alone ("jane dot doe at gmail") does when
    the name is dictated (joined or spelled) or the domain is a provider's ("x at gmail.com"), since
    prose says "papers at aclweb.org" too."""
    if match["sign"]:
        return True
    local = match["local"]
    if local.casefold() in _NOT_A_NAME:
        return False
    if " " in local and not _PROSE_IN_A_NAME.isdisjoint(_LOCAL_JOINS.split(local.casefold())):
        return False
    if match["said_dot"]:
        return True
    dictated = " " in local or any(char in local for char in "._-")
    if match["provider"]:
        return dictated
    return dictated or match["host"].casefold() in _PROVIDER_NAMES


Span = tuple[int, int, str]


def redact_spoken(text: str) -> tuple[str, int]:
    """``text`` with every e-mail address (written or spoken) and phone number replaced by a placeholder,
    and how many were."""
    spans = redaction_spans(text)
    return collapse_whitespace(spliced(text, spans)), len(spans)


def redaction_spans(text: str) -> list[Span]:
    """Where ``text`` holds personal data, in order and not overlapping: (start, end, placeholder)."""
    spans = [(start, end, EMAIL_PLACEHOLDER) for start, end in _written_email_spans(text)]
    read: list[Span] = []
    if _may_say_address(text):
        for match in _SPOKEN_EMAIL.finditer(text):
            if _is_spoken_address(match):
                read.append((match.start(), match.end(), EMAIL_PLACEHOLDER))
    read.extend((start, end, PHONE_PLACEHOLDER) for start, end in phone_spans(text))
    if read:
        spans.extend(_outside_urls(text, read))
    return _without_overlaps(spans)


# A URL as prose writes it: a scheme's "//" or "www.", up to a space or what ends one in markup.
_URL = re.compile(r"(?<![\w.+-])(?:[a-z][a-z0-9+.-]{0,15}://|www\.)[^\s<>\"'\u2018-\u201f]+", re.IGNORECASE)


def _outside_urls(text: str, spans: list[Span]) -> list[Span]:
    """``spans`` but those wholly inside a URL of ``text``: its digits and words are an id's, a path's
    (``watch?v=0612345678``); a URL's written addresses are found as anywhere else."""
    if "//" not in text and "www." not in text.casefold():
        return spans
    urls = [(url.start(), url.end()) for url in _URL.finditer(text)]
    return [span for span in spans if not any(start <= span[0] and span[1] <= end for start, end in urls)]


def personal_data_positions(text: str) -> list[int]:
    """Where in ``text`` personal data may be, unsorted and perhaps repeated: empty when
    :func:`redaction_spans` finds nothing. Each is a form of "@" (see
    :func:`crawler.privacy.emails.address_positions`), a spoken "at" with a domain or provider after it,
    or the first digit of a run a phone number may be written with. Whatever a text holds is found within
    it, so texts joined by a character no form holds (``"\\x00"``) are searched as one."""
    found = address_positions(text)
    shape = text_shape(text)
    found.extend(at.start() for at in _SHAPE_AT.finditer(shape) if _AFTER_SPOKEN_AT.match(text, at.end()))
    found.extend(phone_positions(text, shape))
    return found


def _may_say_address(text: str) -> bool:
    """False when ``text`` cannot hold the spoken form: no "@" in it, and no "at" with a domain or a mail
    provider after it (each match of the form has one or the other where its name ends)."""
    if any(sign in text for sign in _SIGNS):
        return True
    return any(_AFTER_SPOKEN_AT.match(text, at.end()) for at in _SPOKEN_AT.finditer(text))


def _without_overlaps(spans: Sequence[Span]) -> list[Span]:
    """``spans`` in order, those that overlap made one (it covers all of them, with the placeholder of
    the first): what one finding leaves of another is no less personal."""
    kept: list[Span] = []
    for start, end, placeholder in sorted(spans):
        if kept and start < kept[-1][1]:
            kept[-1] = (kept[-1][0], max(end, kept[-1][1]), kept[-1][2])
        else:
            kept.append((start, end, placeholder))
    return kept


def _written_email_spans(text: str) -> list[tuple[int, int]]:
    """Where the e-mail scrubber finds addresses: it replaces each with a marker, the text between them
    is the text's own, so each address starts where the text before it ends, and ends where the text
    after it starts again."""
    marker = next((m for m in _MARKERS if m not in text), None)
    if marker is None:
        text = text.translate(dict.fromkeys(map(ord, _MARKERS), " "))
        marker = _MARKERS[0]
    scrubbed, count = scrub_emails(text, marker)
    if not count:
        return []
    pieces = scrubbed.split(marker)
    spans: list[tuple[int, int]] = []
    at = len(pieces[0])
    for index, after in enumerate(pieces[1:], start=1):
        last = index == len(pieces) - 1
        end = len(text) - len(after) if last else _address_end(text, at, after, marker)
        spans.append((at, end))
        at = end + len(after)
    return spans


def _address_end(text: str, start: int, after: str, marker: str) -> int:
    """The end of the address that starts at ``start`` and is followed by ``after``: the first place
    ``after`` follows a whole address."""
    end = text.find(after, start + 1)
    while end >= 0:
        if scrub_emails(text[start:end], marker) == (marker, 1):
            return end
        end = text.find(after, end + 1)
    return max(start + 1, text.find(after, start + 1))


def split_address_spans(joined: str, boundaries: Sequence[int]) -> list[Span]:
    """Written addresses broken by a cue boundary, which the joining space splits (``jane.doe@`` then
    ``example.com``): at each boundary (the index of a joining space in ``joined``), the word before it
    and the word after it are read glued together, and an address that crosses the glue spans both
    words. What no boundary splits is :func:`redaction_spans`' to find."""
    spans: list[Span] = []
    # Every form of "@" the scrubber reads holds one of these characters: a boundary whose two words hold
    # none needs no look (most texts hold none at all).
    signs = [found.start() for found in _ADDRESS_SIGN.finditer(joined)]
    if not signs:
        return spans
    # The spaces right after and right before each sign's word: the boundaries (those at a space) whose
    # words hold a sign.
    near: set[int] = set()
    end = 0
    for sign in signs:
        if sign < end:  # in the word of the sign before, walked already
            continue
        start, end = sign, sign + 1
        while start > 0 and not joined[start - 1].isspace():
            start -= 1
        while end < len(joined) and not joined[end].isspace():
            end += 1
        near.update((start - 1, end))
    for boundary in boundaries:
        at_space = 0 <= boundary < len(joined) and joined[boundary].isspace()
        if boundary not in near if at_space else not _sign_next_to(joined, boundary, signs):
            continue
        tail_start = boundary
        while tail_start > 0 and not joined[tail_start - 1].isspace():
            tail_start -= 1
        head_end = boundary + 1
        while head_end < len(joined) and not joined[head_end].isspace():
            head_end += 1
        tail, head = joined[tail_start:boundary], joined[boundary + 1 : head_end]
        if not tail or not head or not may_hold_address(tail + head):
            continue
        # An address whole on one side is no broken one: "j.doe@example.org" then "or" reads glued as
        # an address running into the next word, "mail" then "jane@example.org" as one running back.
        if any(end == len(tail) for _, end in _written_email_spans(tail)):
            continue
        if any(start == 0 for start, _ in _written_email_spans(head)):
            continue
        for start, end in _written_email_spans(tail + head):
            if start < len(tail) < end:
                spans.append((tail_start + start, boundary + 1 + end - len(tail), EMAIL_PLACEHOLDER))
    return spans


def _sign_next_to(joined: str, boundary: int, signs: Sequence[int]) -> bool:
    """Whether the word that ends at ``boundary`` or the one that starts right after it holds one of the
    ``signs`` (positions in ``joined``, in order)."""
    before = bisect.bisect_left(signs, boundary) - 1
    if before >= 0 and _SPACE.search(joined, signs[before], boundary) is None:
        return True
    after = bisect.bisect_left(signs, boundary + 1)
    return after < len(signs) and _SPACE.search(joined, boundary + 1, signs[after]) is None


def redact_segments(segments: Sequence[TimedText]) -> tuple[list[TimedText], int]:
    """The segments with personal data replaced, found on their joined text (single spaces), so data
    said across two segments is found, and so is an address written across two (see
    :func:`split_address_spans`): the placeholder goes to the segment where it starts, the rest of it
    leaves the next ones (a segment left empty is dropped). Returns them and how many were replaced."""
    joined = " ".join(segment.text for segment in segments)
    # The joining spaces: each ends a segment's text and its space.
    spaces = [end - 1 for end in itertools.accumulate(len(segment.text) + 1 for segment in segments[:-1])]
    spans = _without_overlaps([*redaction_spans(joined), *split_address_spans(joined, spaces)])
    if not spans:
        return list(segments), 0
    out: list[TimedText] = []
    start = 0
    for segment in segments:
        end = start + len(segment.text)
        inside = [(max(s, start) - start, min(e, end) - start, p if s >= start else "") for s, e, p in spans]
        inside = [(s, e, p) for s, e, p in inside if s < e or (p and s == e)]
        text = collapse_whitespace(spliced(joined[start:end], inside))
        if text:
            out.append(dataclasses.replace(segment, text=text))
        start = end + 1
    return out, len(spans)


# Names the rules a staged track's line and a release's manifest were redacted under: the rules of every
# text (see :data:`crawler.privacy.rule.PRIVACY_RULE`), a transcript's among them.
TRANSCRIPT_PRIVACY_RULE = PRIVACY_RULE
