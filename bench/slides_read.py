"""Reading slide decks and posters: ``crawler.slides.read_pdf`` against pypdfium2 alone, same files, one
process.

``python -m bench.slides_read [--lectures N] [--seed 0] [--rounds 5]`` reads the replica's readable decks
and posters (every document of a site of ``--lectures`` lectures, all 740 by default, that is not cut
short, encrypted, no PDF or missing: text decks with plain and compressed streams, scanned pages, posters)
twice a round: with :func:`crawler.slides.document.read_document`, the crawl's worker job (``read_pdf``,
then :func:`crawler.privacy.scrub.scrub_text` on each page: open, read each page, normalise, redact,
close everything; "redaction included"), and with pypdfium2 alone (open, each page's
``get_textpage().get_text_range()``, close). It prints, as JSON, each one's CPU seconds (the median of
``--rounds`` rounds), pages per CPU-second, and ``cpu_ratio``: ``read_pdf``'s CPU time over pypdfium2's
(held to :data:`MAX_CPU_RATIO`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import pypdfium2 as pdfium

from crawler.replica.documents import NO_TEXT_KINDS, document_bytes, plan_of, site_documents
from crawler.replica.layout import build_site, load_records
from crawler.slides.document import read_document

# read_pdf's CPU time (redaction included) over pypdfium2's alone: at most this.
MAX_CPU_RATIO = 1.2


def replica_documents(lectures: int | None = None, seed: int = 0) -> list[bytes]:
    """The bytes of every readable document of a replica site, in the site's order."""
    site = build_site(load_records(), seed=seed, lectures=lectures)
    bodies = [document_bytes(plan_of(site, d)) for d in site_documents(site) if d.kind not in NO_TEXT_KINDS]
    return [body for body in bodies if body is not None]


def ours(body: bytes) -> int:
    """A document read as a crawl's worker job reads it (:func:`crawler.slides.document.read_document`):
    every page's text, normalised, then redacted. Returns the number of pages."""
    return len(read_document(body, memory_bytes=None).pages or ())


def library(body: bytes) -> int:
    """pypdfium2 alone: open, each page's text, close. Returns the number of pages."""
    document = pdfium.PdfDocument(body)
    try:
        count = len(document)
        for index in range(count):
            page = document[index]
            textpage = page.get_textpage()
            textpage.get_text_range()
            textpage.close()
            page.close()
        return count
    finally:
        document.close()


def _cpu_s(bodies: Sequence[bytes], read: Callable[[bytes], int]) -> float:
    started = time.process_time()
    for body in bodies:
        read(body)
    return time.process_time() - started


def measure(bodies: Sequence[bytes], rounds: int = 5) -> dict[str, Any]:
    """CPU seconds of both readers over ``bodies`` (the median of ``rounds``; each round reads with both,
    in turn first, so that both meet the same load), pages per CPU-second, and their ratio."""
    pages = sum(library(body) for body in bodies)  # also warms PDFium and the readers' caches
    for body in bodies:
        ours(body)
    times: dict[str, list[float]] = {"read_pdf": [], "pypdfium2": []}
    for round_ in range(rounds):
        order = (("read_pdf", ours), ("pypdfium2", library))
        for name, read in order if round_ % 2 == 0 else order[::-1]:
            times[name].append(_cpu_s(bodies, read))
    median = {name: statistics.median(values) for name, values in times.items()}
    return {
        "documents": len(bodies),
        "pages": pages,
        "bytes": sum(len(body) for body in bodies),
        "rounds": rounds,
        **{
            name: {
                "cpu_s": round(median[name], 4),
                "pages_per_cpu_s": round(pages / max(median[name], 1e-9), 1),
                "rounds_cpu_s": [round(t, 4) for t in times[name]],
            }
            for name in times
        },
        "cpu_ratio": round(median["read_pdf"] / max(median["pypdfium2"], 1e-9), 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lectures", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    print(json.dumps(measure(replica_documents(args.lectures, args.seed), args.rounds), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
