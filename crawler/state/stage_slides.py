"""The slides lines of a stage (:mod:`crawler.state.stage_rows`): one document of a lecture (its slide
deck or its poster), its ``slides`` row and the PDF's validators, named among its lecture's by
``document``.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawler.schema import SLIDES_FIELDS, Slides
from crawler.state.stage_rows import RowKind, StagedRow

SLIDES_KIND = "slides"


@dataclass(frozen=True)
class StagedSlides(StagedRow[Slides]):
    """One document as a stage holds it: the ``slides`` row and the PDF's validators."""


SLIDES_ROWS: RowKind[Slides] = RowKind(SLIDES_KIND, Slides, SLIDES_FIELDS, "document", StagedSlides)
