"""A subtitle file as a transcript: its text, said once and in order, and its timed segments.

:func:`parse_subtitle_file` takes the file's bytes as fetched (any name, any Content-Type: the content
says what it is) and never raises: what it cannot read is counted (``cues_skipped``) or named
(``problem``), never changed into something the file did not say.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from crawler.privacy.spoken import redact_segments
from crawler.schema import Int32, Segment
from crawler.transcripts.body import decode_body
from crawler.transcripts.cue_text import cue_text
from crawler.transcripts.cues import Cue, read_cues, sniff_format, split_lines
from crawler.transcripts.rolling import TimedText, folded

# The largest subtitle file read, compressed or not: an hour of dense captions is about 100 KB.
SUBTITLE_MAX_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class ParsedTrack:
    """What a subtitle file says: ``text`` (the segments' texts joined by single spaces; None when the
    file is too large, unparsable or holds no cue), the timed ``segments``, ``cues_skipped`` (malformed
    cues left out, those with an impossible time among them), ``problem`` (None, ``not_utf8``,
    ``too_large``, ``unparsable`` or ``empty``: a file with no cue at all, which says nothing of the
    talk), ``format`` (``webvtt``, ``srt`` or None) and ``redactions`` (e-mail addresses and phone
    numbers replaced)."""

    text: str | None
    segments: list[Segment] = field(default_factory=list)
    cues_skipped: int = 0
    problem: str | None = None
    format: str | None = None
    redactions: int = 0


def parse_subtitle_file(body: bytes, *, auto_generated: bool | None, max_bytes: int) -> ParsedTrack:
    """The transcript a subtitle file (WebVTT or SRT, gzipped or not) holds.

    ``auto_generated``: the site's word on the track. False keeps the cues as they are (a human track);
    True folds its rolling cues (each cue's newly said words only) unless they visibly do not roll; None
    folds them when they visibly roll (see :func:`crawler.transcripts.rolling.folds`). ``max_bytes``
    bounds the body and what it decompresses to (:data:`SUBTITLE_MAX_BYTES` is the default)."""
    text, problem, replaced = decode_body(body, max_bytes)
    if text is None:
        return ParsedTrack(None, problem=problem)
    lines = split_lines(text)
    fmt = sniff_format(lines)
    if fmt is None:
        return ParsedTrack(None, problem="unparsable")
    cues, skipped = read_cues(lines, fmt)
    if not cues:
        problem = "unparsable" if skipped else "empty"
        return ParsedTrack(None, cues_skipped=skipped, problem=problem, format=fmt)
    generated = auto_generated is True
    kept = folded([timed_cue(cue, fmt, first_line=generated) for cue in cues], auto_generated)
    redacted, redactions = redact_segments(kept)
    return ParsedTrack(
        " ".join(t.text for t in redacted),
        segments=segments_of(redacted),
        cues_skipped=skipped,
        problem="not_utf8" if replaced else None,
        format=fmt,
        redactions=redactions,
    )


def timed_cue(cue: Cue, fmt: str, *, first_line: bool = False) -> TimedText:
    """A cue of a file of format ``fmt``: its cleaned text and its times in milliseconds (as read: a cue
    with an impossible time is never read, see :func:`crawler.transcripts.cues.read_cue_block`); with
    ``first_line``, also the text of its first line that is not blank when more lines follow it."""
    text = cue_text(cue.lines, fmt)
    if not first_line:
        return TimedText(cue.start_ms, cue.end_ms, text)
    shown = [line for line in cue.lines if line.strip()]
    first = cue_text(shown[:1], fmt) if len(shown) > 1 else None
    return TimedText(cue.start_ms, cue.end_ms, text, first)


def segments_of(timed: Sequence[TimedText]) -> list[Segment]:
    """The ``segments`` column's values."""
    return [Segment(start_ms=Int32(t.start_ms), end_ms=Int32(t.end_ms), text=t.text) for t in timed]
