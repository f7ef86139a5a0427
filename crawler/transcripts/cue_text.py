"""A cue's text as plain words, each format read by its own rules: markup, entities and stray timings
out, one line.

WebVTT cue text carries voice spans (``<v Speaker>``, ``<v.loud Speaker>``: the speaker's name is inside
the tag, never said), class, italic, bold, underline and language spans, ruby (its ``<rt>`` annotation is
a reading aid, not a second saying), inline timestamps (``<00:00:01.500>``) and character references.
A SubRip cue's text is what its lines say, less SubRip's own tags (``<b>``, ``<i>``, ``<u>``, ``<font
color=..>``) and the ASS override blocks its writers add (``{\\an8}``): ``if x<y and y>z`` and ``click File
--> Save`` are text, and so is a time it says. Entities are decoded by
:func:`crawler.text.normalize.normalize_line` (nested ones too, with NFC and whitespace collapsed), and a
cue or SubRip tag that decoding reveals (``&lt;i&gt;``) is removed in the next round; ``&lt;and&gt;`` is
text a player shows as ``<and>``, and stays. A literal ``&`` or ``<`` that is no entity and opens no tag
(``R&D``, ``x < y``) is text too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crawler.text.normalize import collapse_whitespace, normalize_line
from crawler.transcripts.cues import SRT

# A tag of the cue text as written: a name right after "<" or "</" (v, c.yellow, i, lang en, font
# color=..), or a timestamp. A "<" followed by a space ("x < y") opens none. A player shows none of them.
_TAG = re.compile(r"</?[A-Za-z][^<>]*>|<[\d:.]+>")
# A tag that decoding revealed (&lt;i&gt;, double-encoded markup): only the names cue text and SubRip
# use, and timestamps; "&lt;and&gt;" is text a player shows as "<and>", and stays.
_KNOWN_TAG = re.compile(
    r"</?(?:v|c|i|b|u|s|lang|ruby|rt|font|span|br|p|em|strong)(?=[\s./>])[^<>]*>|<[\d:.]+>",
    re.IGNORECASE,
)
# SubRip's own tags, the only markup its text has.
_SUBRIP_TAG = re.compile(r"</?(?:b|i|u|font)(?=[\s/>])[^<>]*>", re.IGNORECASE)
# Ruby text: what <rt> annotates is read once, from the base text.
_RUBY_TEXT = re.compile(r"<rt\b[^<>]*>[^<]*(?:</rt\s*>)?", re.IGNORECASE)
# SubRip's ASS override blocks: {\an8}, {\i1}, {\c&H00FFFF&}.
_OVERRIDE = re.compile(r"\{\\[^{}]*\}")
# A timing arrow that decoding made (--&gt;): never left in text.
_ARROW = re.compile(r"(?<!-)-{2,}>")
# A timestamp with milliseconds (00:01:02.500, 00:01:02,500, 01:02.500), glued to others or not: a timing
# line's piece, never a spoken time.
_STAMP = re.compile(r"(?:\d{1,10}:)?\d{1,2}:\d{2}[.,]\d{3}")
# What keeps an ASCII text from being its own clean form, but for its whitespace: what may open a tag, an
# entity or an override block, and the control characters normalizing removes.
_NEEDS_CLEANING = re.compile(r"[\x00-\x08\x0e-\x1b\x7f&<{]")
# Rounds of decoding and stripping: real cues need one or two; the cap guards against deep nesting.
_MAX_ROUNDS = 8


def cue_text(lines: Sequence[str], fmt: str) -> str:
    """The text of a cue's lines in format ``fmt`` (``webvtt`` or ``srt``), joined by a space: markup,
    tags and entities removed, NFC, whitespace collapsed. Never holds an entity, a byte order mark or a
    CR; a WebVTT cue's text never holds a cue tag, a timing arrow or a timestamp, a SubRip cue's never a
    SubRip tag."""
    joined = " ".join(lines)
    if joined.isascii() and _NEEDS_CLEANING.search(joined) is None:
        # Nothing to strip, decode or compose: normalizing it only collapses its whitespace.
        if fmt == SRT:
            return " ".join(joined.split())
        return collapse_whitespace(_ARROW.sub("->", _STAMP.sub(" ", joined)))
    if fmt == SRT:
        return collapse_whitespace(_without_markup(joined, _SUBRIP_TAG, _SUBRIP_TAG, ruby=False))
    text = _without_markup(joined, _TAG, _KNOWN_TAG, ruby=True)
    return collapse_whitespace(_ARROW.sub("->", _STAMP.sub(" ", text)))


def _without_markup(text: str, tag: re.Pattern[str], revealed: re.Pattern[str], *, ruby: bool) -> str:
    """``text`` without ``tag`` markup (and ruby text), entities decoded, and without the ``revealed``
    markup decoding made, round after round."""
    text = _stripped(text, tag, ruby)
    for _ in range(_MAX_ROUNDS):
        stripped = _stripped(normalize_line(text), revealed, ruby)
        if stripped == text:
            return text
        text = stripped
    return _stripped(text, tag, ruby).replace("&", " ")


def _stripped(text: str, tag: re.Pattern[str], ruby: bool) -> str:
    if "<" in text:
        text = tag.sub("", _RUBY_TEXT.sub("", text) if ruby else text)
    if "{" in text:
        text = _OVERRIDE.sub("", text)
    return text
