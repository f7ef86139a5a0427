"""A text's shape: one byte a character, for the quick look of whether a text may hold personal data.

Most texts hold none, and an expression that starts with a class of characters (a digit, a letter of a
word) reads a text several times slower than a search for a literal. The shape keeps of each character
only what the looks ask, so they become literal searches over bytes:

- a decimal digit (what ``\\d`` matches) is ``0``;
- whitespace (what ``\\s`` matches) is a space;
- an ASCII letter is itself in lower case;
- ``( ) - . / +`` are themselves, and so are the dashes a phone number may be written with
  (``U+2010`` to ``U+2013``), as ``-``;
- anything else is ``#``.

The shape has the text's length: a position in one is the same position in the other. Making it costs
an encoding and a translation, each at the speed of a copy.
"""

from __future__ import annotations

import codecs

_ERRORS = "crawler.privacy.shape"
_DASHES = frozenset("\u2010\u2011\u2012\u2013")


def _shape(char: str) -> str:
    """The shape of one character (see the module's text)."""
    if char.isdecimal():
        return "0"
    if char.isspace():
        return " "
    if char.isascii() and char.isalpha():
        return char.lower()
    if char in "()-./+":
        return char
    return "-" if char in _DASHES else "#"


def _shape_beyond_ascii(error: UnicodeError) -> tuple[str, int]:
    """The shape of the characters beyond ASCII an encoding stopped at, one for each."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return "".join(map(_shape, error.object[error.start : error.end])), error.end


codecs.register_error(_ERRORS, _shape_beyond_ascii)
_TABLE = bytes(ord(_shape(chr(byte))) if byte < 128 else ord("#") for byte in range(256))


def text_shape(text: str) -> bytes:
    """The shape of ``text`` (see the module's text): as long as ``text``, one byte a character."""
    return text.encode("ascii", _ERRORS).translate(_TABLE)
