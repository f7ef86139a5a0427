"""The slides lines of a stage (:mod:`crawler.state.stage_rows`): one document of a lecture (its slide
deck or its poster), its ``slides`` row and the PDF's validators, named among its lecture's by
``document``.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawler.schema import SLIDES_FIELDS, Slides
from crawler.state.stage_rows import RowKind, RowLines, StagedRow

SLIDES_KIND = "slides"


@dataclass(frozen=True)
class StagedSlides(StagedRow[Slides]):
    """One document as a stage holds it: the ``slides`` row and the PDF's validators."""


SLIDES_ROWS: RowKind[Slides] = RowKind(SLIDES_KIND, Slides, SLIDES_FIELDS, "document", StagedSlides)


class SlidesLines(RowLines[Slides]):
    """Where each document's latest slides line is, by lecture id and document."""

    def __init__(self) -> None:
        super().__init__(SLIDES_ROWS)

    def slides_of(self, lecture_id: str) -> list[StagedSlides]:
        """The lecture's documents, read back from the stage (``poster`` before ``slides``)."""
        return [s for s in self.rows_of(lecture_id) if isinstance(s, StagedSlides)]
