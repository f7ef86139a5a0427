"""The text of the slide decks and posters lectures link to: a PDF read page by page with PDFium
(:func:`crawler.slides.read.read_pdf`), each page's text in reading order with its whitespace collapsed and
PDFium's line-end hyphen marks made plain hyphens, and what went wrong when a file cannot be read (a
password it asks for, bytes that are no PDF or a PDF cut short, a file too large for the memory it is
given). The reader is pure and never raises; :func:`crawler.slides.read.read_pdf_bounded` reads under a
bound of the address space, for a worker process that must not be taken down by a PDF that balloons.
"""

from __future__ import annotations

from crawler.slides.read import (
    MAX_PAGES,
    PROBLEM_ENCRYPTED,
    PROBLEM_TOO_LARGE,
    PROBLEM_UNREADABLE,
    DocumentText,
    normalized_page,
    read_pdf,
    read_pdf_bounded,
)

__all__ = [
    "MAX_PAGES",
    "PROBLEM_ENCRYPTED",
    "PROBLEM_TOO_LARGE",
    "PROBLEM_UNREADABLE",
    "DocumentText",
    "normalized_page",
    "read_pdf",
    "read_pdf_bounded",
]
