"""A PDF's text, page by page, read with PDFium (pypdfium2's bindings of its C interface).

:func:`read_pdf` opens the bytes, reads each page's text layer in page order and closes every PDFium
object it opened before it returns: each page and its text page before the next page is loaded, the
document at the end. It calls PDFium's functions directly rather than through pypdfium2's objects (which
close what they hold when collected): the same calls, fewer Python objects a page.

A page's text is normalised by :func:`normalized_page`: PDFium writes a hyphen that ends a line before a
word goes on as U+FFFE and joins the two lines ("Rank\\ufffe1" for "Rank-" at a line's end and "1" on the
next), which becomes a plain hyphen with nothing after it ("Rank-1"); what is left of noncharacters and
control characters is dropped, the text is NFC and every run of whitespace (line breaks included) is one
space, none at either end. A page without a text layer (a scanned slide) reads as ``""``.

A file that cannot be read gives no pages and a problem: :data:`PROBLEM_ENCRYPTED` when it asks for a
password (a user password that is not empty, or a security handler PDFium does not know),
:data:`PROBLEM_UNREADABLE` when it is no PDF or PDFium cannot open it (a file cut short before its
trailer: PDFium rebuilds a broken cross-reference table by scanning the objects, but only a trailer
names the catalogue), :data:`PROBLEM_TOO_LARGE` when memory runs out. A file PDFium opens is read: a
page it cannot load (a file cut short after an early trailer, as a linearised file has, loses the pages
past the cut) or whose content stream is cut short reads as ``""``, never as a part of its text.

PDFium is not safe to call from two threads at once: read from one thread at a time (or in a worker
process, see :func:`read_pdf_bounded`).
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import os
import re
import resource
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

import pypdfium2.raw as pdfium_c

PROBLEM_UNREADABLE = "unreadable"
PROBLEM_ENCRYPTED = "encrypted"
PROBLEM_TOO_LARGE = "too_large"
# Pages past this many are not read (a deck of thousands of pages is a generated file, not slides).
MAX_PAGES = 2000

# What PDFium says when a file asks for a password, or is locked by a security handler it cannot open.
_LOCKED = frozenset({pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY})
# PDFium's mark of a hyphen ending a line: a letter before it, a letter or digit after it (the
# condition PDFium itself marks it on); any whitespace after it is the line break, which goes too.
_LINE_END_HYPHEN = re.compile("(?<=[^\\W\\d_])\ufffe\\s*(?=[^\\W_])")
# Noncharacters (U+FDD0..U+FDEF and the last two code points of every plane) and the control characters
# that are not whitespace (NUL among them): nothing a reader sees.
_NONCHARACTERS = "\ufdd0-\ufdef" + "".join(
    chr(plane << 16 | 0xFFFE) + chr(plane << 16 | 0xFFFF) for plane in range(17)
)
_INVISIBLE = re.compile(f"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f{_NONCHARACTERS}]")


@dataclass(frozen=True)
class DocumentText:
    """A document's text: one string a page read, in page order (None when it could not be read), and
    what went wrong (None when nothing did)."""

    pages: tuple[str, ...] | None
    problem: str | None


def normalized_page(text: str) -> str:
    """A page's text as PDFium gives it, normalised (see the module's description)."""
    if "\ufffe" in text:
        text = _LINE_END_HYPHEN.sub("-", text)
    text = " ".join(text.split())
    # Collapsed, a text of printable characters (nearly every page) holds nothing to drop.
    if not text.isprintable():
        text = " ".join(_INVISIBLE.sub("", text).split())
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return text


def read_pdf(data: bytes, *, max_pages: int = MAX_PAGES) -> DocumentText:
    """The text of every page of the PDF ``data`` (the first ``max_pages`` only: pages past them are
    not read, and that is no problem), or the problem that kept it from being read. Never raises."""
    try:
        return _read(bytes(data), max_pages)
    except MemoryError:
        return DocumentText(None, PROBLEM_TOO_LARGE)
    except Exception:
        # PDFium and its bindings may fail in any way on a hostile file: that file is unreadable.
        return DocumentText(None, PROBLEM_UNREADABLE)


def _read(data: bytes, max_pages: int) -> DocumentText:
    if not data:
        return DocumentText(None, PROBLEM_UNREADABLE)
    # PDFium reads ``data`` in place: it stays referenced here until the document is closed.
    document = pdfium_c.FPDF_LoadMemDocument64(data, len(data), None)
    if not document:
        locked = pdfium_c.FPDF_GetLastError() in _LOCKED
        return DocumentText(None, PROBLEM_ENCRYPTED if locked else PROBLEM_UNREADABLE)
    try:
        count = min(pdfium_c.FPDF_GetPageCount(document), max(0, max_pages))
        return DocumentText(tuple(_page_text(document, index) for index in range(count)), None)
    finally:
        pdfium_c.FPDF_CloseDocument(document)


def _page_text(document: pdfium_c.FPDF_DOCUMENT, index: int) -> str:
    """The normalised text of one page; ``""`` for a page PDFium cannot load or read."""
    page = pdfium_c.FPDF_LoadPage(document, index)
    if not page:
        return ""
    try:
        textpage = pdfium_c.FPDFText_LoadPage(page)
        if not textpage:
            return ""
        try:
            return normalized_page(_text_of(textpage))
        finally:
            pdfium_c.FPDFText_ClosePage(textpage)
    finally:
        pdfium_c.FPDF_ClosePage(page)


def _text_of(textpage: pdfium_c.FPDF_TEXTPAGE) -> str:
    """A text page's text as PDFium gives it: the characters from the first to the last that are text
    (PDFium leaves some characters out of the text, and asked for a range that starts or ends on one it
    reads past the range), in UTF-16."""
    first, last = 0, pdfium_c.FPDFText_CountChars(textpage) - 1
    while first <= last and pdfium_c.FPDFText_GetTextIndexFromCharIndex(textpage, first) < 0:
        first += 1
    while first <= last and pdfium_c.FPDFText_GetTextIndexFromCharIndex(textpage, last) < 0:
        last -= 1
    if first > last:
        return ""
    size = (
        pdfium_c.FPDFText_GetTextIndexFromCharIndex(textpage, last)
        - pdfium_c.FPDFText_GetTextIndexFromCharIndex(textpage, first)
        + 2
    )
    buffer = (ctypes.c_ushort * size)()
    written = pdfium_c.FPDFText_GetText(textpage, first, last - first + 1, buffer)
    # ``written`` counts the terminating NUL.
    return codecs.decode(memoryview(buffer)[: max(0, min(written, size) - 1)], "utf-16-le", "ignore")


def read_pdf_bounded(data: bytes, *, memory_bytes: int, max_pages: int = MAX_PAGES) -> DocumentText:
    """:func:`read_pdf` with the process's address space bounded to what it uses now plus
    ``memory_bytes`` while it reads, the bound as it was again afterwards.

    A hostile PDF can balloon (a content stream that inflates to gigabytes, a page tree that refers to
    itself): bounded, the read fails with :data:`PROBLEM_TOO_LARGE` instead of taking the machine's
    memory. The bound is the process's (``RLIMIT_AS``), every thread's allocations count against it,
    and PDFium ends the process on some failed allocations rather than report them: call this in a
    worker process that reads one document at a time and whose end the caller survives. The soft limit
    is only lowered, never raised: a process already held under a tighter one keeps it. Where the
    process's address space cannot be read (no ``/proc``), the read is not bounded.
    """
    with _address_space_bound(memory_bytes):
        return read_pdf(data, max_pages=max_pages)


def address_space_used() -> int | None:
    """The bytes of address space this process maps now (None where ``/proc`` does not say)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def _address_space_bound(extra_bytes: int) -> Iterator[None]:
    used = address_space_used()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    bound = (used or 0) + max(0, extra_bytes)
    # Lowered only: the hard limit caps any soft one, so a soft limit above the bound is below the hard.
    lower = used is not None and (soft == resource.RLIM_INFINITY or soft > bound)
    if lower:
        resource.setrlimit(resource.RLIMIT_AS, (bound, hard))
    try:
        yield
    finally:
        if lower:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
