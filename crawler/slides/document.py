"""A document as the crawl keeps it: the PDF's pages read (:mod:`crawler.slides.read`), each page's text
redacted by the privacy rules every text of the dataset goes through. The worker job of a document's
answer: bytes in, text out, nothing of the PDF kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawler.privacy.scrub import scrub_text
from crawler.slides.read import read_pdf, read_pdf_bounded


@dataclass(frozen=True)
class ReadDocument:
    """A document's pages, redacted (None when it could not be read), why not, and how many addresses
    and numbers were redacted."""

    pages: tuple[str, ...] | None
    problem: str | None
    redactions: int = 0


def redacted_pages(pages: tuple[str, ...]) -> tuple[tuple[str, ...], int]:
    """Each page's text with e-mail addresses and phone numbers replaced, in every form the privacy rules
    know, and how many were."""
    out = []
    found = 0
    for page in pages:
        text, count = scrub_text(page) if page else (page, 0)
        out.append(text)
        found += count
    return tuple(out), found


def read_document(data: bytes, *, memory_bytes: int | None) -> ReadDocument:
    """The pages of the PDF ``data``, redacted; a file that cannot be read gives no pages and its
    problem (``encrypted``, ``unreadable``, ``too_large``). Never raises. ``memory_bytes``: how much more
    memory than it holds already the reader may take (a hostile file can make a reader balloon; it then
    fails ``too_large`` instead of taking the machine); None: no bound (the crawl's own process)."""
    read = read_pdf(data) if memory_bytes is None else read_pdf_bounded(data, memory_bytes=memory_bytes)
    if read.pages is None:
        return ReadDocument(None, read.problem)
    pages, found = redacted_pages(read.pages)
    return ReadDocument(pages, read.problem, found)
