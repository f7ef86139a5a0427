"""The transcript lines of a stage (:mod:`crawler.state.stage_rows`): one subtitle track of a lecture, its
``transcripts`` row and the subtitle file's validators, named among its lecture's by ``subtitle_url``.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawler.schema import TRANSCRIPT_FIELDS, Transcript
from crawler.state.stage_rows import PRIVACY_RULE_KEY, RowKind, RowLines, StagedRow

__all__ = [
    "PRIVACY_RULE_KEY",
    "TRANSCRIPT_KIND",
    "TRANSCRIPT_ROWS",
    "StagedTranscript",
    "TranscriptLines",
]

TRANSCRIPT_KIND = "transcript"


@dataclass(frozen=True)
class StagedTranscript(StagedRow[Transcript]):
    """One subtitle track as a stage holds it: the ``transcripts`` row and the file's validators."""


TRANSCRIPT_ROWS: RowKind[Transcript] = RowKind(
    TRANSCRIPT_KIND, Transcript, TRANSCRIPT_FIELDS, "subtitle_url", StagedTranscript
)


class TranscriptLines(RowLines[Transcript]):
    """Where each track's latest transcript line is, by lecture id and subtitle URL."""

    def __init__(self) -> None:
        super().__init__(TRANSCRIPT_ROWS)

    def transcripts_of(self, lecture_id: str) -> list[StagedTranscript]:
        """The lecture's tracks, read back from the stage, in subtitle URL order."""
        return [t for t in self.rows_of(lecture_id) if isinstance(t, StagedTranscript)]
