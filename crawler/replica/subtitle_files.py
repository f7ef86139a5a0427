"""The bytes of a subtitle file as the assets origin serves it, for each kind of track.

Every writer is a pure function of a :class:`crawler.replica.subtitles.TrackPlan`: the same plan, the
same bytes. A clean file is UTF-8 WebVTT with LF line ends; the broken kinds change one thing each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from crawler.replica.subtitles import (
    KIND_BLOCKS,
    KIND_BOM,
    KIND_CP1252,
    KIND_CRLF,
    KIND_CUE_SETTINGS,
    KIND_ENTITIES,
    KIND_INLINE_TIMESTAMPS,
    KIND_OVERSIZE,
    KIND_SPANS,
    KIND_SRT,
    OVERSIZE_BYTES,
    Cue,
    TrackPlan,
)

VTT_HEADER = "WEBVTT"
BLOCKS_HEADER = (
    "WEBVTT - Replica captions\n"
    "\n"
    "STYLE\n"
    "::cue {\n"
    "  color: yellow;\n"
    "}\n"
    "\n"
    "REGION\n"
    "id:speaker\n"
    "width:40%\n"
    "lines:3\n"
    "regionanchor:0%,100%\n"
    "viewportanchor:10%,90%\n"
    "scroll:up\n"
    "\n"
    "NOTE This file was made by the captioning team.\n"
    "Nobody says what a note holds.\n"
)
# Written before every fifth cue of a file with blocks.
NOTE_BLOCK = "NOTE\nreviewed twice by the editors\n"
CUE_SETTINGS = "align:start position:10% line:85% size:80%"
VOICE = "Presenter"
# Characters cue text writes as entities, in the order they are replaced ('&' first).
ENTITIES: tuple[tuple[str, str], ...] = (
    ("&", "&amp;"),
    ("<", "&lt;"),
    (">", "&gt;"),
    ('"', "&quot;"),
    ("'", "&#39;"),
)


def vtt_time(ms: int) -> str:
    """``HH:MM:SS.mmm``."""
    seconds, millis = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}"


def srt_time(ms: int) -> str:
    """``HH:MM:SS,mmm``."""
    return vtt_time(ms).replace(".", ",")


def broken_timing(cue: Cue) -> str:
    """A timing line no parser can read: the start's first ':' is a '-'."""
    return f"{vtt_time(cue.start_ms).replace(':', '-', 1)} --> {vtt_time(cue.end_ms)}"


def with_entities(text: str) -> str:
    for char, entity in ENTITIES:
        text = text.replace(char, entity)
    return text


_SPAN_TAGS = (("<i>", "</i>"), ("<b>", "</b>"), ("<c.yellow>", "</c>"), ("<u>", "</u>"))


def with_spans(text: str) -> str:
    """The line inside a voice span, a few of its words in italics, bold, underline and a class span."""
    words = text.split()
    for index, (open_, close) in zip((1, len(words) - 1, 2, 3), _SPAN_TAGS, strict=True):
        if 0 < index < len(words) and not words[index].startswith("<"):
            words[index] = f"{open_}{words[index]}{close}"
    return f"<v.loud {VOICE}>{' '.join(words)}</v>"


def with_word_times(cue: Cue) -> str:
    """The new line of a rolling cue with every word after the first led by its start time."""
    words = cue.new.split()
    timed = [f"<{vtt_time(t)}><c> {w}</c>" for w, t in zip(words[1:], cue.word_starts[1:], strict=True)]
    return words[0] + "".join(timed)


def cue_lines(plan: TrackPlan, cue: Cue) -> list[str]:
    """The text lines of ``cue`` as the track's kind writes them."""
    if plan.kind == KIND_SPANS:
        return [with_spans(line) for line in cue.lines]
    if plan.kind == KIND_ENTITIES:
        return [with_entities(line) for line in cue.lines]
    if plan.kind == KIND_INLINE_TIMESTAMPS and cue.new:
        return [*cue.lines[:-1], with_word_times(cue)]
    return list(cue.lines)


def vtt_blocks(plan: TrackPlan, cues: Sequence[Cue]) -> list[str]:
    """The cue blocks of a WebVTT file (each without its blank line)."""
    blocks = []
    for k, cue in enumerate(cues):
        timing = f"{vtt_time(cue.start_ms)} --> {vtt_time(cue.end_ms)}"
        if k == plan.malformed:
            timing = broken_timing(cue)
        lines = []
        if plan.kind == KIND_BLOCKS and k and k % 5 == 0:
            blocks.append(NOTE_BLOCK.rstrip("\n"))
        if plan.kind == KIND_CUE_SETTINGS:
            lines.append(str(k + 1) if k % 2 == 0 else f"cue-{k + 1}")
            timing += " " + CUE_SETTINGS
        blocks.append("\n".join([*lines, timing, *cue_lines(plan, cue)]))
    return blocks


def vtt_text(plan: TrackPlan, cues: Sequence[Cue] | None = None) -> str:
    header = BLOCKS_HEADER if plan.kind == KIND_BLOCKS else VTT_HEADER + "\n"
    body = "\n\n".join(vtt_blocks(plan, plan.cues if cues is None else cues))
    return f"{header}\n{body}\n"


def srt_text(plan: TrackPlan) -> str:
    blocks = [
        f"{k + 1}\n{srt_time(c.start_ms)} --> {srt_time(c.end_ms)}\n" + "\n".join(c.lines)
        for k, c in enumerate(plan.cues)
    ]
    return "\n\n".join(blocks) + "\n"


def oversize_cues(plan: TrackPlan, limit: int = OVERSIZE_BYTES) -> list[Cue]:
    """The plan's cues over and over (each round later than the one before) until the file passes
    ``limit`` bytes."""
    if not plan.cues:
        return []
    span = plan.cues[-1].end_ms + 1000
    per_round = len(vtt_text(plan).encode("utf-8"))
    rounds = limit // max(1, per_round) + 1
    return [
        Cue(c.start_ms + r * span, c.end_ms + r * span, c.lines, c.new, c.word_starts)
        for r in range(rounds)
        for c in plan.cues
    ]


_WRITERS: dict[str, Callable[[TrackPlan], bytes]] = {
    KIND_SRT: lambda plan: srt_text(plan).encode("utf-8"),
    KIND_BOM: lambda plan: b"\xef\xbb\xbf" + vtt_text(plan).encode("utf-8"),
    KIND_CRLF: lambda plan: vtt_text(plan).replace("\n", "\r\n").encode("utf-8"),
    KIND_CP1252: lambda plan: vtt_text(plan).encode("cp1252"),
    KIND_OVERSIZE: lambda plan: vtt_text(plan, oversize_cues(plan)).encode("utf-8"),
}


def file_bytes(plan: TrackPlan) -> bytes:
    """The file of the track, as stored (before any Content-Encoding)."""
    writer = _WRITERS.get(plan.kind)
    return writer(plan) if writer is not None else vtt_text(plan).encode("utf-8")
