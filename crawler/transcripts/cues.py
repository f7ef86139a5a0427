"""A subtitle file's text as timed cues: the format told from the content, the file cut into blocks, each
cue block read by a library, one malformed block skipped and counted while its neighbours are kept.

Both formats are cut into blocks here: an empty line ends a block, and so does a line that cannot be
the current block's text (a missing empty line): in WebVTT any line with the timing arrow ``-->`` (cue
text never holds one), in SubRip only a line that starts like a timing line (SubRip text may say
``click File --> Save``). Neither library says which cue of a file it left out, and ``srt`` reads a file
badly around a broken cue (a block whose timing line is garbled becomes part of the cue before it,
timing line and all), so each is handed one block at a time. A block's timing line is checked first
(fields bounded, minutes and seconds under 60: ``srt`` reads ``00:61:00,000`` as an hour and
``00:05,000`` as five minutes, and raises ValueError or OverflowError on an hours field past Python's
limits): a SubRip file's cues (hours required, a comma or a dot) are read by ``srt``; a WebVTT file's
by webvtt-py (hours optional, ``0:0:3.5`` too), or by ``srt`` when written with a comma. A cue whose
times no talk has (an end before its start, past a 32-bit millisecond) is malformed too."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta

WEBVTT = "webvtt"
SRT = "srt"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# One timestamp: hours (optional, up to 10 digits), minutes and seconds under 60, a dot or a comma, one
# to three digits of a second.
_STAMP = r"(?:\d{1,10}:)?[0-5]?\d:[0-5]?\d[.,]\d{1,3}"
_TIMING = re.compile(rf"[ \t]*({_STAMP})[ \t]*-->[ \t]*({_STAMP})(?:[ \t].*)?")
# A SubRip line that starts a cue block: digits and a colon (a timestamp, garbled or not) before "-->".
_SUBRIP_TIMING_LIKE = re.compile(r"[ \t]*[\d.,\-]*\d:[\d:.,\-]*[ \t]*-->")
# A timing line each library is known to read, and read only one way: ASCII digits, a WebVTT line with dots
# (webvtt-py pads a short fraction: ".5" is 500 ms), a SubRip line with the arrow between spaces only (``srt``
# reads the fraction as a number: ",5" is 5 ms). Its cue's times are read here at once, as the library
# would read them; any other timing line is the library's to read.
_ASCII_STAMP = r"([0-9]{1,10}):([0-5]?[0-9]):([0-5]?[0-9])"
_PLAIN_WEBVTT_TIMING = re.compile(
    r"[ \t]*(?:([0-9]{1,10}):)?([0-5]?[0-9]):([0-5]?[0-9])\.([0-9]{1,3})[ \t]*-->"
    r"[ \t]*(?:([0-9]{1,10}):)?([0-5]?[0-9]):([0-5]?[0-9])\.([0-9]{1,3})(?:[ \t].*)?"
)
_PLAIN_SUBRIP_TIMING = re.compile(
    rf"[ \t]*{_ASCII_STAMP}[.,]([0-9]{{1,3}}) *--> *{_ASCII_STAMP}[.,]([0-9]{{1,3}})(?:[ \t].*)?"
)
# What may start a SubRip text line that ``srt`` could take for the next cue's index: a digit or a dash.
_SUBRIP_INDEX_START = frozenset("-0123456789")
# A header line: "WEBVTT" alone or followed by a space or a tab and a description.
_HEADER = re.compile(r"WEBVTT(?:[ \t].*)?")
# Blocks that are never text: comments, style sheets and region definitions.
_NOT_TEXT = re.compile(r"(?:NOTE|STYLE|REGION)(?:[ \t].*)?")
# How many blocks are looked at, at most, to tell a file without a WEBVTT header for SubRip.
_SNIFF_BLOCKS = 8
_ONE_MS = timedelta(milliseconds=1)
# The largest time a segment holds: its columns are 32-bit milliseconds.
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Cue:
    """One cue as the file has it: start and end in milliseconds, its text lines with their markup."""

    start_ms: int
    end_ms: int
    lines: tuple[str, ...]


def split_lines(text: str) -> list[str]:
    """``text`` cut at CRLF, lone CR and LF."""
    return _LINE_BREAK.split(text) if "\r" in text else text.split("\n")


def sniff_format(lines: Sequence[str]) -> str | None:
    """``webvtt`` for a file that starts with the WEBVTT header (blank lines and byte order marks before
    it aside), ``srt`` for one whose first readable cue block (among the first few) is numbered SubRip
    (``1`` then ``00:00:01,000 --> 00:00:02,000``, a dot allowed for the comma), None for neither: a
    file whose first readable cue is written the WebVTT way has no header, and is no SubRip. A malformed
    cue before it does not decide (it is skipped and counted when the cues are read). Only the content is
    read: SRT is served under ``.vtt`` names."""
    first = next((line.lstrip("\ufeff \t") for line in lines if line.strip("\ufeff \t")), "")
    if _HEADER.fullmatch(first):
        return WEBVTT
    for seen, block in enumerate(blocks(lines, SRT)):
        if seen >= _SNIFF_BLOCKS:
            break
        if _is_numbered(block) and read_cue_block(block, SRT) is not None:
            return SRT
        if _is_readable_webvtt_cue(block):
            return None
    return None


def _is_numbered(block: Sequence[str]) -> bool:
    """A block that starts with a timing line, or with a number and then one: a SubRip cue's start."""
    return "-->" in block[0] or (len(block) > 1 and block[0].strip().isdigit() and "-->" in block[1])


def _is_readable_webvtt_cue(block: Sequence[str]) -> bool:
    """A block that reads as a WebVTT cue (its timing line written without hours, say) but not as a
    SubRip one."""
    return any("-->" in line for line in block) and read_cue_block(block, WEBVTT) is not None


def blocks(lines: Sequence[str], fmt: str) -> Iterator[list[str]]:
    """The file's blocks of lines: an empty line ends one (a line of spaces does not: WebVTT's rule, and
    speech recognition tracks put one inside their cues); a line that cannot be the current block's text
    starts a new one, taking along the block's last line when that line is a bare number (the next cue's
    index, its blank line missing). In WebVTT that is a line with ``-->`` that cannot be the current
    block's timing line (the block already has one, or more than an identifier before it, or it is a
    WebVTT header); in SubRip, a line starting like a timing line once the block has its own."""
    block: list[str] = []
    in_header = fmt == WEBVTT
    subrip = fmt == SRT
    for line in lines:
        if not line:
            if block:
                yield block
                block, in_header = [], False
            continue
        if (
            block
            and "-->" in line
            and (in_header or len(block) > 1 or "-->" in block[0])
            and (not subrip or _SUBRIP_TIMING_LIKE.match(line))
        ):
            carried = [block.pop()] if len(block) > 2 and block[-1].strip().isdigit() else []
            yield block
            block, in_header = carried, False
        block.append(line)
    if block:
        yield block


def read_cues(lines: Sequence[str], fmt: str) -> tuple[list[Cue], int]:
    """The cues of a file of format ``fmt`` (see :func:`sniff_format`), in file order, and how many of its
    cue blocks were malformed. A block that is
    neither the header, a NOTE, STYLE or REGION block, a bare index nor a readable cue (one with an
    impossible time among them) is skipped and counted, wherever it stands."""
    cues: list[Cue] = []
    skipped = 0
    for index, block in enumerate(blocks(lines, fmt)):
        if index == 0 and fmt == WEBVTT and _HEADER.fullmatch(block[0].lstrip("\ufeff \t")):
            continue
        cue = read_cue_block(block, fmt)
        if cue is not None:
            cues.append(cue)
        elif not _is_never_text(block):
            skipped += 1
    return cues, skipped


def _is_never_text(block: Sequence[str]) -> bool:
    """A comment, style or region block, or a bare number (an index whose cue is elsewhere): no cue was
    lost in it."""
    if "-->" in block[0] or (len(block) > 1 and "-->" in block[1]):
        return False
    return bool(_NOT_TEXT.fullmatch(block[0])) or (len(block) == 1 and block[0].strip().isdigit())


def read_cue_block(block: Sequence[str], fmt: str) -> Cue | None:
    """The cue a block holds (its timing line first, or second after an identifier), read by webvtt-py or
    by ``srt`` according to how its timestamps are written; None when it holds none, is malformed or
    has an impossible time (an end before its start, or past what a 32-bit millisecond holds: a time no
    talk has is never made into one). In WebVTT no text line holds ``-->``; in SubRip one may, and a
    SubRip timing line must have its hours."""
    at = 0 if "-->" in block[0] else 1
    if at >= len(block) or (fmt == WEBVTT and any("-->" in line for line in block[at + 1 :])):
        return None
    # A plain timing line is one _TIMING reads too, with its hours, in the format's own way (a SubRip
    # file's either way, a WebVTT file's with dots): the cue is the plain one, or none.
    cue = _plain_subrip_cue(block, at) if fmt == SRT else _plain_webvtt_cue(block, at)
    if cue is None:
        timing = _TIMING.fullmatch(block[at])
        if timing is None:
            return None
        stamps = timing.groups()
        subrip = fmt == SRT or any("," in stamp for stamp in stamps)
        if subrip and not all(stamp.count(":") == 2 for stamp in stamps):
            return None
        cue = _plain_subrip_cue(block, at) if subrip else _plain_webvtt_cue(block, at)
        try:
            if cue is None:
                cue = _subrip_cue(block[at:]) if subrip else _webvtt_cue(block[at:])
        except ImportError:  # a library missing is the installation's fault, not the block's
            raise
        except Exception:
            # The libraries' own errors (MalformedCaptionError, SRTParseError, ValueError or OverflowError
            # for a field past its range) and any other failure on one untrusted block lose that block only.
            return None
    return cue if cue is not None and cue.start_ms <= cue.end_ms <= _INT32_MAX else None


def _plain_webvtt_cue(block: Sequence[str], at: int) -> Cue | None:
    """The cue webvtt-py reads from ``block``'s lines from ``at`` on (the timing line first, no text line
    holding ``-->``), when its timing line is a plain one; None when it is the library's to read.
    webvtt-py takes the lines after the timing line as the text, as they are."""
    timing = _PLAIN_WEBVTT_TIMING.fullmatch(block[at])
    if timing is None:
        return None
    h1, m1, s1, f1, h2, m2, s2, f2 = timing.groups()
    start = ((int(h1 or 0) * 60 + int(m1)) * 60 + int(s1)) * 1000 + int(f1.ljust(3, "0"))
    end = ((int(h2 or 0) * 60 + int(m2)) * 60 + int(s2)) * 1000 + int(f2.ljust(3, "0"))
    return Cue(start, end, tuple(block[at + 1 :]))


def _plain_subrip_cue(block: Sequence[str], at: int) -> Cue | None:
    """The cue ``srt`` reads from ``block``'s lines from ``at`` on (the timing line first), when its timing
    line is a plain one and no text line starts like an index (``srt`` would take it for the next cue's);
    None when it is the library's to read. ``srt`` takes the lines after the timing line as the text."""
    timing = _PLAIN_SUBRIP_TIMING.fullmatch(block[at])
    if timing is None:
        return None
    text = tuple(block[at + 1 :])
    for line in text:
        if line[:1] in _SUBRIP_INDEX_START:
            return None
    h1, m1, s1, f1, h2, m2, s2, f2 = timing.groups()
    start = ((int(h1) * 60 + int(m1)) * 60 + int(s1)) * 1000 + int(f1)
    return Cue(start, ((int(h2) * 60 + int(m2)) * 60 + int(s2)) * 1000 + int(f2), text)


def _webvtt_cue(lines: Sequence[str]) -> Cue | None:
    # Imported where a cue is read, not with the module: a crawl without subtitles never needs them.
    import webvtt.vtt

    caption = webvtt.vtt.parse_item(lines)
    if not isinstance(caption, webvtt.Caption):
        return None
    return Cue(caption.start_time.in_milliseconds(), caption.end_time.in_milliseconds(), tuple(caption.lines))


def _subrip_cue(lines: Sequence[str]) -> Cue | None:
    import srt

    subtitles = list(srt.parse("\n".join(lines)))
    if len(subtitles) != 1:
        return None
    sub = subtitles[0]
    return Cue(
        sub.start // _ONE_MS,
        sub.end // _ONE_MS,
        tuple(split_lines(sub.content)) if sub.content else (),
    )
