"""The ``slides`` table of a release: one row per lecture and document (its slide deck, its poster),
written event by event beside the lectures' files, ``data/slides/<event folder>.parquet``
(:mod:`crawler.publish.file_tables` makes, writes and checks the rows; this is what is the table's own).

A lecture's files are the documents its record names (:func:`crawler.schema.listed_documents`), a row's
key its (document, url). A row loses the redacted authors' names from its pages, and what the privacy
rules in force find there (:func:`crawler.slides.document.redacted_pages`).

An event's rows are made and written together (an event's documents' text is tens of megabytes at most),
in row groups under the release's bound.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from crawler.publish.file_tables import FileTable, RowStats
from crawler.publish.parquet import WriterOptions
from crawler.publish.removals import without_redacted_names
from crawler.publish.tables import SLIDES
from crawler.schema import Lecture, Slides, listed_documents, slides_order
from crawler.slides.document import redacted_pages
from crawler.state.stage_rows import SLIDES_ROWS

# A document's key among its lecture's rows.
DocKey = tuple[str, str]  # (document, url)


@dataclass
class SlidesStats(RowStats):
    """What the card tells of the documents (``rows``), counted as they are written."""

    pages: int = 0
    # Lectures with slide text and with poster text, by event.
    slides_by_event: Counter[str] = field(default_factory=Counter)
    posters_by_event: Counter[str] = field(default_factory=Counter)

    def count(self, row: Slides) -> None:
        if row.pages is None:
            self.without_text[row.problem or "unknown"] += 1
            return
        self.pages += len(row.pages)
        if any(row.pages):
            by_event = self.posters_by_event if row.document == "poster" else self.slides_by_event
            by_event[str(row.event_id)] += 1


class SlidesTable(FileTable[Slides, DocKey, SlidesStats]):
    """The ``slides`` table: an event's rows made and written at once, written anew every release."""

    spec = SLIDES
    kind = SLIDES_ROWS
    stats_type = SlidesStats
    order_columns = ("document", "url")
    key_columns = ("document", "url")

    def listed(self, lecture: Lecture) -> list[DocKey]:
        return list(listed_documents(lecture))

    def order(self, row: Slides) -> tuple[tuple[int, str], int, str]:
        return slides_order(row)

    def redacted_again(self, row: Slides) -> Slides:
        if row.pages is None:
            return row
        pages, found = redacted_pages(tuple(row.pages))
        return row.with_pages(list(pages)) if found else row

    def redacted(self, row: Slides) -> Slides:
        if self.redactions and row.pages is not None:
            pages = [without_redacted_names(p, self.redactions) for p in row.pages]
            if pages != row.pages:
                row = row.with_pages(pages)
        return row

    def writer_options(self) -> WriterOptions:
        return {"compression": "zstd", "write_statistics": True}
