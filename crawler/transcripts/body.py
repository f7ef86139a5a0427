"""A subtitle file's bytes as text: gzip undone within a bound, the size cap kept, the byte order mark
read, bytes that are not UTF-8 replaced (and said so).

Nothing here trusts the body: a gzip member may claim anything and expand a thousandfold, so at most
``max_bytes`` are ever decompressed, and a body past the cap is never decoded.
"""

from __future__ import annotations

import codecs
import zlib

GZIP_MAGIC = b"\x1f\x8b"
# Byte order marks: the encoding they announce and their length. UTF-8's is dropped too.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# A gzip body holds at most this many members (concatenated streams): a body of thousands of empty
# members costs no more than this many decompressors.
_MAX_GZIP_MEMBERS = 64


def decode_body(body: bytes, max_bytes: int) -> tuple[str | None, str | None, bool]:
    """The subtitle file ``body`` as text, or None with the reason (``too_large``, ``unparsable``), and
    whether bytes that are not text in the file's encoding were replaced by U+FFFD: gunzipped when it
    starts with gzip's magic bytes (never more than ``max_bytes`` out), ``too_large`` when it or what it
    expands to is longer than ``max_bytes``, decoded by its byte order mark (UTF-8, UTF-16 LE or BE) or
    else as UTF-8, bytes that do not decode replaced."""
    if len(body) > max_bytes:
        return None, "too_large", False
    if body.startswith(GZIP_MAGIC):
        data, problem = gunzip_bounded(body, max_bytes)
        if data is None:
            return None, problem, False
        body = data
    text, replaced = decode_text(body)
    return text, None, replaced


def gunzip_bounded(body: bytes, max_bytes: int) -> tuple[bytes | None, str | None]:
    """The decompressed gzip ``body`` (every member of it), or None and why: ``too_large`` as soon as
    more than ``max_bytes`` would come out, ``unparsable`` for a corrupt or truncated stream."""
    out = bytearray()
    rest = body
    for _ in range(_MAX_GZIP_MEMBERS):
        stream = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            out += stream.decompress(rest, max_bytes + 1 - len(out))
        except zlib.error:
            return None, "unparsable"
        if len(out) > max_bytes or stream.unconsumed_tail:
            return None, "too_large"
        if not stream.eof:
            return None, "unparsable"
        rest = stream.unused_data
        if not rest.strip(b"\x00"):
            return bytes(out), None
        if not rest.startswith(GZIP_MAGIC):
            return None, "unparsable"
    return None, "unparsable"


def decode_text(data: bytes) -> tuple[str, bool]:
    """``data`` as text by its byte order mark (dropped), UTF-8 without one; True when bytes had to be
    replaced."""
    encoding = "utf-8"
    for bom, name in _BOMS:
        if data.startswith(bom):
            encoding = name
            data = data[len(bom) :]
            break
    try:
        return data.decode(encoding), False
    except UnicodeDecodeError:
        return data.decode(encoding, errors="replace"), True
