"""Personal data said aloud, out of a transcript: e-mail addresses (written, obfuscated or spoken: "jane
dot doe at example dot com") and phone numbers.

Written addresses are the project's e-mail scrubber's (:func:`crawler.privacy.emails.scrub_emails`); the
spoken form and phone numbers are read here. Redaction works on spans of one text, so a whole track is
redacted once, after its rolling cues are folded and joined: an address said across two cues is found
whole, then each segment gets its part of the result (the placeholder where the address starts).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from crawler.privacy.emails import PLACEHOLDER as EMAIL_PLACEHOLDER
from crawler.privacy.emails import may_hold_address, scrub_emails
from crawler.text.normalize import collapse_whitespace

if TYPE_CHECKING:
    # Only named: the transcripts package imports this module to read a track.
    from crawler.transcripts.rolling import TimedText

PHONE_PLACEHOLDER = "[phone removed]"

# Characters the e-mail scrubber is asked to put for each address, to find where the addresses were:
# private-use characters, which no address holds (one the text does not hold is taken).
_MARKERS = "\ue000\ue001\ue002\ue003"

_WORD = r"[^\W_]+"
# A spoken address: a name (words joined by "dot", "underscore", "dash" or "hyphen", or written "." "_"
# "-"), "at", a domain whose last dot is said, and a top-level domain that is no common English word.
_LOCAL_JOIN = r"(?:\s+(?:dot|underscore|dash|hyphen)\s+|[._-])"
_DOMAIN_JOIN = r"(?:\s+(?:dot|dash|hyphen)\s+|[.-])"
_TLDS = (
    "com|org|net|edu|gov|mil|io|ai|co|uk|de|fr|ca|au|ch|nl|es|se|dk|fi|jp|cn|kr|br|ru|pl|cz|info|biz|eu"
    "|dev|app|tech|xyz|ac"
)
_SPOKEN_EMAIL = re.compile(
    rf"(?<![\w.@-])(?P<local>{_WORD}(?:{_LOCAL_JOIN}{_WORD}){{0,6}})\s+at\s+"
    rf"{_WORD}(?:{_DOMAIN_JOIN}{_WORD}){{0,8}}\s+dot\s+(?:{_TLDS})(?![\w])",
    re.IGNORECASE,
)
# Words that come before "at" in speech and are no one's address: "look at example dot com".
_NOT_A_NAME_WORDS = (
    "a an the and or but so is are was were be been am it this that these those here there me us you "
    "him her them we they i look looks looking looked find found available online hosted posted "
    "published code paper slides website site page link visit check go see arrive arrived work works "
    "working worked based located live lives living stay stayed meet met up out back down"
)
_NOT_A_NAME = frozenset(_NOT_A_NAME_WORDS.split())
# A phone number: international (+CC and 2 to 5 groups), (555) 123-4567, or 555-123-4567 / 555.123.4567
# / 555 123 4567. Never glued to a word, a "+" or a decimal point, so years, timestamps and 3.14 stay.
_PHONE = re.compile(
    r"(?<![\w+])(?<!\d[.,:])"
    r"(?:\+\d{1,3}(?:[ .\-]?\(\d{1,4}\))?(?:[ .\-]?\d{1,5}){2,5}"
    r"|\(\d{3}\)[ .\-]?\d{3}[ .\-]\d{4}"
    r"|\d{3}[ .\-]\d{3}[ .\-]\d{4})"
    r"(?!\w)(?![.,:]\d)"
)
# Digits in an international number (ITU E.164: at most 15; fewer than 7 is no number one can call).
_PHONE_DIGITS = range(7, 16)

Span = tuple[int, int, str]


def redact_spoken(text: str) -> tuple[str, int]:
    """``text`` with every e-mail address (written or spoken) and phone number replaced by a placeholder,
    and how many were."""
    spans = redaction_spans(text)
    return _applied(text, spans), len(spans)


def redaction_spans(text: str) -> list[Span]:
    """Where ``text`` holds personal data, in order and not overlapping: (start, end, placeholder)."""
    spans = [(start, end, EMAIL_PLACEHOLDER) for start, end in _written_email_spans(text)]
    for match in _SPOKEN_EMAIL.finditer(text):
        if match["local"].casefold() not in _NOT_A_NAME:
            spans.append((match.start(), match.end(), EMAIL_PLACEHOLDER))
    for match in _PHONE.finditer(text):
        digits = sum(c.isdigit() for c in match[0])
        if not match[0].startswith("+") or digits in _PHONE_DIGITS:
            spans.append((match.start(), match.end(), PHONE_PLACEHOLDER))
    return _without_overlaps(spans)


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


def _applied(text: str, spans: Sequence[Span]) -> str:
    pieces: list[str] = []
    at = 0
    for start, end, placeholder in spans:
        pieces += [text[at:start], placeholder]
        at = end
    pieces.append(text[at:])
    return collapse_whitespace("".join(pieces))


def split_address_spans(joined: str, boundaries: Sequence[int]) -> list[Span]:
    """Written addresses broken by a cue boundary, which the joining space splits (``jane.doe@`` then
    ``example.com``): at each boundary (the index of a joining space in ``joined``), the word before it
    and the word after it are read glued together, and an address that crosses the glue spans both
    words. What no boundary splits is :func:`redaction_spans`' to find."""
    spans: list[Span] = []
    for boundary in boundaries:
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
        inside = [(max(s, start), min(e, end), p if s >= start else "") for s, e, p in spans]
        inside = [(s, e, p) for s, e, p in inside if s < e or (p and s == e)]
        text = _applied(joined[start:end], [(s - start, e - start, p) for s, e, p in inside])
        if text:
            out.append(dataclasses.replace(segment, text=text))
        start = end + 1
    return out, len(spans)
