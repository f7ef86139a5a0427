"""The transcript lines of a stage (:mod:`crawler.state.stage_rows`): one subtitle track of a lecture, its
``transcripts`` row and the subtitle file's validators, named among its lecture's by ``subtitle_url``.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawler.schema import TRANSCRIPT_FIELDS, Transcript
from crawler.state.stage_rows import RowKind, StagedRow

TRANSCRIPT_KIND = "transcript"


@dataclass(frozen=True)
class StagedTranscript(StagedRow[Transcript]):
    """One subtitle track as a stage holds it: the ``transcripts`` row and the file's validators."""


TRANSCRIPT_ROWS: RowKind[Transcript] = RowKind(
    TRANSCRIPT_KIND, Transcript, TRANSCRIPT_FIELDS, "subtitle_url", StagedTranscript
)
