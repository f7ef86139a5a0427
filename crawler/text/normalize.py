"""Normalization of visible text: one canonical form per line and per paragraph.

Both functions are pure and idempotent, so text may be normalized again at any later step
without changing it.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Iterable

# Control characters that are not whitespace (whitespace becomes a space instead), zero-width and
# other invisible format characters, bidi marks, embeddings, overrides and isolates, lone surrogates.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_BR = re.compile(r"<\s*/?\s*br\b[^<>]*>", re.IGNORECASE)
_BLANK_LINE = re.compile(r"\n\s*\n")
# Each round can reveal new markup only by unescaping nested entities (``&amp;lt;br&amp;gt;``);
# real text needs one or two rounds, the cap only guards against adversarial nesting.
_MAX_ROUNDS = 16


def _strip_markup(text: str) -> str:
    text = _INVISIBLE.sub("", text)
    if "&" in text:
        text = _INVISIBLE.sub("", html.unescape(text))
    if "<" in text:
        text = _BR.sub(" ", text)
    return text


def without_surrogates(text: str) -> str:
    """``text`` without lone surrogates: they are not characters, and no UTF-8 file can hold them."""
    return _SURROGATE.sub("", text) if not text.isascii() else text


def collapse_whitespace(text: str) -> str:
    """Every run of whitespace (Unicode's definition) as one space, stripped at both ends."""
    return " ".join(text.split())


def nfc_collapsed(text: str) -> str:
    """Unicode NFC with whitespace collapsed: the form of a record's ``title``."""
    return collapse_whitespace(unicodedata.normalize("NFC", text))


def normalize_line(text: str) -> str:
    """One line of visible text in canonical form.

    HTML entities unescaped (nested ones too), ``<br>`` tags (any spelling) replaced by a space,
    control, zero-width and bidi control characters removed, Unicode NFC, whitespace runs collapsed
    to one space, stripped.
    """
    if len(text) <= _MEMO_MAX_CHARS:
        return _normalized_short_line(text)
    return _normalized_line(text)


def normalize_lines(texts: Iterable[str]) -> list[str]:
    """Each text with :func:`normalize_line`, those that normalize to nothing left out: a page's blocks
    in one call rather than one call a block."""
    short, limit = _normalized_short_line, _MEMO_MAX_CHARS
    lines = [short(text) if len(text) <= limit else _normalized_line(text) for text in texts]
    return [line for line in lines if line]


# A site's pages repeat the same blocks (navigation, footer, labels, the cards of related lectures) page
# after page, and each block is normalized by more than one step: measured on 686 lecture pages, 2,205
# distinct strings among 82,614 calls. Lines up to _MEMO_MAX_CHARS are remembered (a few MiB at most);
# longer ones are rare and not worth the memory.
_MEMO_MAX_CHARS = 2000
_MEMO_LINES = 4096


def _normalized_line(text: str) -> str:
    for _ in range(_MAX_ROUNDS):
        stripped = _strip_markup(text)
        if stripped == text:
            break
        text = stripped
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return " ".join(text.split())


_normalized_short_line = functools.lru_cache(maxsize=_MEMO_LINES)(_normalized_line)


def normalize_text(text: str) -> str:
    """Paragraphs (separated by blank lines) each normalized with :func:`normalize_line`.

    Empty paragraphs are dropped; the others are joined with one blank line (``"\\n\\n"``).
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    paragraphs = (normalize_line(p) for p in _BLANK_LINE.split(text))
    return "\n\n".join(p for p in paragraphs if p)


def person_name(text: str) -> str:
    """A person's name in the one form it is published and compared in: zero-width and other format
    characters (Unicode category Cf: U+200B, joiners, bidi marks, soft hyphens) and lone surrogates
    removed, Unicode NFC, whitespace collapsed. Idempotent."""
    kept = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Cs"))
    return nfc_collapsed(kept)
