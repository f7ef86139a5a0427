"""The HTTP cache's entry files, pure: a downloaded answer decoded, stripped of personal data, encoded with
its length and sha256, and written whole or not at all; an entry read back and checked.

Scrapy's side of the cache (policy, middleware, storage) is :mod:`crawler.cache.httpcache`. This module
imports no Scrapy, so that a worker process that stores entries for the crawl starts without it (about half a
second of a worker's start-up, and the crawl's first listing page waits for a worker).
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypedDict, TypeVar, cast

from crawler.privacy.stored import strip_answer_text, strip_page_personal_data, strip_personal_data

ENTRY_SUFFIX = ".entry"
TEMP_SUFFIX = ".tmp"
ENTRY_FORMAT = "eventcrawl-httpcache/1"
_JSON_TYPES = (b"application/json", b"application/vnd.api+json")

R = TypeVar("R")


class EntryHeader(TypedDict, total=False):
    """The JSON line that starts an entry: the answer without its body. ``format``, ``body_length`` and
    ``body_sha256`` are added when the entry is encoded."""

    url: str
    method: str
    status: int
    response_url: str
    timestamp: float
    headers: list[tuple[str, list[str]]]
    flags: list[str]
    protocol: str | None
    format: str
    body_length: int
    body_sha256: str


# How a downloaded body is sent and what it holds: its content encodings in the order they were applied,
# whether it is JSON, and the largest size it may decode to (0: no limit).
BodyForm = tuple[tuple[bytes, ...], bool, int]


@dataclass(frozen=True)
class StoredRead(Generic[R]):
    """What a worker's store job returns: whether the entry was written, and what a reader made of the
    decoded body on the way (its result, or the exception it raised), with that body's length."""

    stored: bool
    body_length: int = 0
    value: R | None = None
    error: Exception | None = None


# A pure function of a stored answer's decoded body, run in the job that stores the answer (see
# BoundedFilesystemCacheStorage): the body goes to a worker process once, for both.
BodyReader = Callable[[bytes], R]


class BrokenEntry(Exception):
    """A stored entry that cannot be used: torn header, or a body that does not match its length or hash."""


def encode_entry(header: EntryHeader, body: bytes) -> bytes:
    """One entry: the JSON header line (with the body's length and sha256 added), then the body."""
    meta: EntryHeader = {
        **header,
        "format": ENTRY_FORMAT,
        "body_length": len(body),
        "body_sha256": hashlib.sha256(body).hexdigest(),
    }
    return json.dumps(meta, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n" + body


def decode_entry(data: bytes) -> tuple[EntryHeader, bytes]:
    """The header and body of an entry; :class:`BrokenEntry` unless the body is whole and unchanged."""
    line, newline, body = data.partition(b"\n")
    if not newline:
        raise BrokenEntry("no header line")
    try:
        header = json.loads(line)
    except ValueError as exc:
        raise BrokenEntry(f"unreadable header: {exc}") from None
    if not isinstance(header, dict) or header.get("format") != ENTRY_FORMAT:
        raise BrokenEntry("not an entry of this cache")
    if header.get("body_length") != len(body):
        raise BrokenEntry(f"body is {len(body)} bytes, {header.get('body_length')} were stored")
    if header.get("body_sha256") != hashlib.sha256(body).hexdigest():
        raise BrokenEntry("body does not match its stored sha256")
    return cast(EntryHeader, header), body


def write_entry(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all: a temporary file renamed into place.

    Not synced: a killed crawl loses nothing the kernel was given, and after a power loss an entry the disk
    did not keep fails its length and sha256 check and is fetched again (syncing cost about 0.5 ms an
    entry, on the path of every page).

    The entry's directory is made only when the temporary file cannot be created for want of it: it
    exists for nearly every entry, and asking for it each time cost a failing ``mkdir`` and a ``stat``
    an entry (the directory may be removed between two entries, by a purge: it is then made again)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}{TEMP_SUFFIX}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    try:
        fd = os.open(tmp, flags, 0o644)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, path)


# -- personal data ------------------------------------------------------------------------------------


def decoded_body(body: bytes, encodings: tuple[bytes, ...] | list[bytes], max_size: int) -> bytes | None:
    """``body`` without its content ``encodings``; None for an encoding that cannot be read here."""
    for encoding in reversed(encodings):
        if encoding not in (b"gzip", b"x-gzip", b"deflate"):
            return None
        # 47: a zlib or gzip header, detected; a bounded output guards against a compression bomb.
        decoder = zlib.decompressobj(47 if encoding != b"deflate" else 15)
        try:
            out = decoder.decompress(body, max_size + 1 if max_size else 0)
        except zlib.error:
            try:
                out = zlib.decompressobj(-15).decompress(body, max_size + 1 if max_size else 0)
            except zlib.error:
                return None
        if max_size and len(out) > max_size:
            return None
        body = out
    return body


def is_json_type(content_type: bytes) -> bool:
    """Whether a ``Content-Type`` value names JSON."""
    media_type = content_type.split(b";")[0].strip().lower()
    return media_type in _JSON_TYPES or media_type.endswith(b"+json")


def stripped_body(body: bytes, *, is_json: bool) -> bytes:
    """``body`` (already decoded) with personal data removed: JSON through ``strip_personal_data``
    (a UTF-8 object written again only where it held some, see ``strip_answer_text``), anything else
    through ``strip_page_personal_data``. JSON that does not parse is scrubbed as text."""
    if is_json:
        try:
            # Only what held personal data is written again (most answers are UTF-8 JSON objects).
            text = body.decode("utf-8")
            clean_text = strip_answer_text(text)
        except (UnicodeDecodeError, ValueError, RecursionError):
            pass
        else:
            return body if clean_text is text else clean_text.encode("utf-8", "surrogatepass")
        try:
            doc = json.loads(body)
        except ValueError:
            return strip_page_personal_data(body)
        clean = strip_personal_data(doc)
        if clean == doc:
            return body
        return json.dumps(clean, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return strip_page_personal_data(body)


def new_entry(header: EntryHeader, body: bytes, form: BodyForm) -> tuple[bytes, bytes] | None:
    """The stored form of a downloaded answer: its body decoded and stripped of personal data, after
    ``header`` (see :func:`encode_entry`), with the decoded body; None when its content encoding cannot be
    read here."""
    encodings, is_json, max_size = form
    decoded = decoded_body(body, encodings, max_size)
    if decoded is None:
        return None
    return encode_entry(header, stripped_body(decoded, is_json=is_json)), decoded


def store_entry(
    path: Path, header: EntryHeader, body: bytes, form: BodyForm, reader: BodyReader[R] | None = None
) -> StoredRead[R]:
    """Build a downloaded answer's entry (:func:`new_entry`) and write it to ``path`` whole or not at
    all; not stored when its content encoding cannot be read here (nothing is written, nothing read).

    ``reader``, when given, reads the decoded body (before it is stripped) in the same job: what it
    returns or raises comes back in the :class:`StoredRead`, after the entry is written."""
    built = new_entry(header, body, form)
    if built is None:
        return StoredRead(stored=False)
    entry, decoded = built
    write_entry(path, entry)
    if reader is None:
        return StoredRead(stored=True, body_length=len(decoded))
    try:
        return StoredRead(stored=True, body_length=len(decoded), value=reader(decoded))
    except Exception as exc:  # the reader's own failure (an unparsable page): the spider gets it
        return StoredRead(stored=True, body_length=len(decoded), error=exc)
