"""Subtitle files read into the ``transcripts`` table's values: :func:`parse_subtitle_file`."""

from crawler.transcripts.parse import SUBTITLE_MAX_BYTES, ParsedTrack, parse_subtitle_file

__all__ = ["SUBTITLE_MAX_BYTES", "ParsedTrack", "parse_subtitle_file"]
