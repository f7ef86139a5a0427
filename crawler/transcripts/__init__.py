"""Subtitle files read into the ``transcripts`` table's values: :func:`parse_subtitle_file`."""

from crawler.transcripts.parse import SUBTITLE_MAX_BYTES, ParsedTrack, parse_subtitle_file
from crawler.transcripts.spoken import redact_spoken

__all__ = ["SUBTITLE_MAX_BYTES", "ParsedTrack", "parse_subtitle_file", "redact_spoken"]
