"""Text the site sent (an event's name, a problem quoting a page), made safe to show and to keep.

A name may hold what a terminal obeys rather than shows: escape sequences (``ESC [31m`` colours what
follows, others move the cursor or set the window's title), other C0 and C1 control characters, and
Unicode's format characters: bidirectional overrides, embeddings, isolates and marks (``U+202E`` shows
what follows backwards), zero-width spaces and joiners, the byte order mark, the soft hyphen. The rule is
Unicode's: a character of category Cc (control), Cf (format), Cs (lone surrogate: no terminal can even
be written one), Zl or Zp (line and paragraph separators) is unsafe; so is every escape sequence whole.

:func:`terminal_text` shows each unsafe character as a visible escape (``\\x1b``, ``\\u202e``), so a
reader sees that something is there and what; :func:`kept_text` removes them (an escape sequence with its
parameters), turns whitespace into single spaces and strips the ends. Both replace personal data (e-mail
addresses written, obfuscated or spoken, phone numbers) as the dataset's transcripts have it replaced
(:func:`crawler.privacy.spoken.redaction_spans`), found in the text as it reads once the unsafe
characters are gone: a character hidden inside an address does not keep it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from crawler.privacy.spoken import redaction_spans

UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})

# ECMA-48 escape sequences: a control sequence (ESC [ or the one-byte CSI, parameters, intermediates, a
# final byte), a control string (OSC, DCS, SOS, PM, APC up to BEL or ST: a window title, a hyperlink), any
# other escape (ESC, intermediates, a final byte). A string that never ends is an ESC and text.
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]"
)


def _is_unsafe(char: str) -> bool:
    return unicodedata.category(char) in UNSAFE_CATEGORIES


def _escaped(text: str) -> str:
    """``text`` with each unsafe character written as Python writes it in a string (``\\x1b``,
    ``\\u202e``, ``\\t``); the others as they are."""
    return "".join(c.encode("unicode_escape").decode("ascii") if _is_unsafe(c) else c for c in text)


def _units(text: str) -> Iterator[tuple[str, str]]:
    """``text`` cut into escape sequences and single characters, each with what is kept of it: nothing
    for a sequence or an unsafe character, a space for whitespace, the character itself otherwise."""
    at = 0
    while at < len(text):
        match = _ESCAPE_SEQUENCE.match(text, at)
        if match is not None:
            yield match[0], ""
            at = match.end()
            continue
        char = text[at]
        at += 1
        if char.isspace():
            yield char, " "
        else:
            yield char, "" if _is_unsafe(char) else char


def _cleaned(text: str) -> tuple[str, str]:
    """What :func:`terminal_text` and :func:`kept_text` make of ``text`` (the second before whitespace
    is collapsed)."""
    if text.isprintable():
        if not redaction_spans(text):
            return text, text  # nearly every name: one search, nothing to escape or replace
        units = [(char, char) for char in text]
    else:
        units = list(_units(text))
    plain = "".join(kept for _, kept in units)
    spans = iter(redaction_spans(plain))
    span = next(spans, None)
    shown: list[str] = []
    kept_out: list[str] = []
    position = 0  # where in ``plain`` the unit starts
    for raw, kept in units:
        while span is not None and position >= span[1]:
            span = next(spans, None)
        start, _, placeholder = span if span is not None else (len(plain) + 1, 0, "")
        if position == start and kept:
            shown.append(placeholder)
            kept_out.append(placeholder)
        elif position <= start:
            # What the site hid just before an address is shown before the placeholder; what it hid
            # inside one goes with the address.
            shown.append(raw if raw == kept else _escaped(raw))
            kept_out.append(kept)
        position += len(kept)
    return "".join(shown), "".join(kept_out)


def terminal_text(text: str) -> str:
    """``text`` safe to print: every unsafe character a visible escape, personal data replaced."""
    return _cleaned(text)[0]


def kept_text(text: str) -> str:
    """``text`` safe to keep in a file: escape sequences and unsafe characters removed, personal data
    replaced, whitespace collapsed to single spaces, stripped."""
    return " ".join(_cleaned(text)[1].split())
