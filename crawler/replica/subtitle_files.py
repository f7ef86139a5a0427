"""The bytes of a subtitle file as the assets origin serves it, for each kind of track.

Every writer is a pure function of a :class:`crawler.replica.subtitles.TrackPlan`: the same plan, the
same bytes. A clean file is UTF-8 WebVTT with LF line ends; the broken kinds change one thing each.

Some tracks of a kind are written in the *style* of a tool that writes such files (:func:`file_style`,
chosen by the plan, so that every style is among the tracks of a large event):

- ``youtube`` (inline timestamps, a generated track): YouTube's automatic captions, a ``Kind:`` and a
  ``Language:`` line under the header, ``align:start position:0%`` on every timing line, the talk's first
  line rolling one word at a time, each cue showing the line before (a line of one space at first) above
  the new line with every word after its first timed inline (``<00:00:01.500><c> word</c>``), a 10 ms cue
  showing the new line again above a line of one space, and one cue running into the next timing line
  without its blank line;
- ``mm_ss`` (inline timestamps, a generated track): rolling cues timed ``mm:ss.ttt`` (hours left out, as
  WebVTT allows under an hour), their words timed inline the same way;
- ``teams`` (spans, a human track): Microsoft Teams transcripts, cue identifiers ``<uuid>/<n>-0``, times
  ``h:m:s.t`` (no padding, a second's fraction without its trailing zeros), each cue one voice span
  (``<v Jordan Lee>``), a long sentence on two lines;
- ``subrip_tags`` (SubRip, a human track): every line in ``<font color="#ffff00">``, its second word in
  ``<i>``, and a last cue whose sentence holds a literal ``<`` (:data:`SUBRIP_LITERAL_SENTENCE`).

:func:`written_cues` gives the cues a style writes, with what each newly says: the ground truth of a
styled track is read from them.
"""

from __future__ import annotations

import hashlib
import uuid
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
    REPEAT_CUE_MS,
    Cue,
    TrackPlan,
)

STYLE_PLAIN = "plain"
STYLE_YOUTUBE = "youtube"
STYLE_MM_SS = "mm_ss"
STYLE_TEAMS = "teams"
STYLE_SUBRIP_TAGS = "subrip_tags"
# The styles a kind's tracks are written in (the first: as the kind alone says).
KIND_STYLES: dict[str, tuple[str, ...]] = {
    KIND_INLINE_TIMESTAMPS: (STYLE_PLAIN, STYLE_YOUTUBE, STYLE_MM_SS),
    KIND_SPANS: (STYLE_PLAIN, STYLE_TEAMS),
    KIND_SRT: (STYLE_PLAIN, STYLE_SUBRIP_TAGS),
}
# Styles a generated track is never written in (their cues are whole sentences).
HUMAN_STYLES = frozenset({STYLE_TEAMS, STYLE_SUBRIP_TAGS})
YOUTUBE_HEADER = "WEBVTT\nKind: captions\nLanguage: en\n"
YOUTUBE_SETTINGS = "align:start position:0%"
LINE_OF_A_SPACE = " "
# The cue of a youtube-style file that runs into the next timing line, its blank line missing.
YOUTUBE_UNENDED_CUE = 3
TEAMS_VOICE = "Jordan Lee"
# A Teams cue of more words than this is shown on two lines.
TEAMS_LINE_WORDS = 12
SUBRIP_FONT = '<font color="#ffff00">'
SUBRIP_LITERAL_SENTENCE = "Keep in mind that p < 0.05 is not the whole story."
# The last cue of a subrip_tags file: this long after the talk's last cue ends, for this long.
SUBRIP_LITERAL_GAP_MS = 400
SUBRIP_LITERAL_MS = 2500

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


def short_time(ms: int) -> str:
    """``MM:SS.mmm`` under an hour (WebVTT leaves the hours out), ``HH:MM:SS.mmm`` from an hour on."""
    return vtt_time(ms)[3:] if ms < 3_600_000 else vtt_time(ms)


def teams_time(ms: int) -> str:
    """``h:m:s.t`` as Teams writes it: no field padded, the second's fraction without trailing zeros
    (one digit at least): ``0:0:3.92``, ``0:1:2.5``, ``1:0:0.0``."""
    seconds, millis = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes}:{seconds}.{f'{millis:03d}'.rstrip('0') or '0'}"


def with_word_times(cue: Cue, stamp: Callable[[int], str] = vtt_time) -> str:
    """The new line of a rolling cue with every word after the first led by its start time."""
    words = cue.new.split()
    timed = [f"<{stamp(t)}><c> {w}</c>" for w, t in zip(words[1:], cue.word_starts[1:], strict=True)]
    return words[0] + "".join(timed)


def file_style(plan: TrackPlan) -> str:
    """The style the track's file is written in: one of its kind's (:data:`KIND_STYLES`), by when its
    talk starts (a generated track is never in a human style)."""
    styles = [s for s in KIND_STYLES.get(plan.kind, (STYLE_PLAIN,)) if not (plan.auto and s in HUMAN_STYLES)]
    if not plan.sentences or len(styles) < 2:
        return STYLE_PLAIN
    return styles[plan.sentences[0].start_ms % len(styles)]


def youtube_cues(plan: TrackPlan) -> list[Cue]:
    """The cues of a youtube-style file: the plan's rolling lines, the first one word at a time; each
    line's cue shows the line before (one space above the first) above it, its words timed inline, and
    a 10 ms cue shows the line again above a line of one space."""
    rolled = [c for c in plan.cues if c.new]
    if not rolled:
        return []
    first = rolled[0]
    warm_up = [Cue(0, 0, (), w, (t,)) for w, t in zip(first.new.split(), first.word_starts, strict=True)]
    lines = [*warm_up, *rolled[1:]]
    final_end = plan.cues[-1].end_ms
    cues: list[Cue] = []
    for k, line in enumerate(lines):
        start = line.word_starts[0]
        end = lines[k + 1].word_starts[0] if k + 1 < len(lines) else final_end
        above = lines[k - 1].new if k else LINE_OF_A_SPACE
        cues.append(
            Cue(start, end - REPEAT_CUE_MS, (above, with_word_times(line)), line.new, line.word_starts)
        )
        cues.append(Cue(end - REPEAT_CUE_MS, end, (line.new, LINE_OF_A_SPACE), ""))
    return cues


def mm_ss_cues(plan: TrackPlan) -> list[Cue]:
    """The plan's rolling cues, the new line's words timed inline in ``mm:ss.ttt``."""
    return [
        Cue(c.start_ms, c.end_ms, (*c.lines[:-1], with_word_times(c, short_time)), c.new, c.word_starts)
        if c.new
        else c
        for c in plan.cues
    ]


def teams_cues(plan: TrackPlan) -> list[Cue]:
    """The plan's cues, each one voice span, a long sentence cut over two lines."""
    cues = []
    for c in plan.cues:
        words = c.new.split()
        half = (len(words) + 1) // 2 if len(words) > TEAMS_LINE_WORDS else len(words)
        spoken = f"<v {TEAMS_VOICE}>{' '.join(words[:half])}"
        lines = (spoken, f"{' '.join(words[half:])}</v>") if half < len(words) else (f"{spoken}</v>",)
        cues.append(Cue(c.start_ms, c.end_ms, lines, c.new))
    return cues


def subrip_tags_cues(plan: TrackPlan) -> list[Cue]:
    """The plan's cues in a font tag, their second word in italics, and a last cue that says a
    literal ``<``."""
    cues = []
    for c in plan.cues:
        words = c.new.split()
        if len(words) > 1:
            words[1] = f"<i>{words[1]}</i>"
        cues.append(Cue(c.start_ms, c.end_ms, (f"{SUBRIP_FONT}{' '.join(words)}</font>",), c.new))
    start = (plan.cues[-1].end_ms if plan.cues else 0) + SUBRIP_LITERAL_GAP_MS
    words = SUBRIP_LITERAL_SENTENCE.split()
    line = f"<i>{' '.join(words[:3])}</i> {' '.join(words[3:])}"
    return [*cues, Cue(start, start + SUBRIP_LITERAL_MS, (line,), SUBRIP_LITERAL_SENTENCE)]


_STYLED_CUES: dict[str, Callable[[TrackPlan], list[Cue]]] = {
    STYLE_YOUTUBE: youtube_cues,
    STYLE_MM_SS: mm_ss_cues,
    STYLE_TEAMS: teams_cues,
    STYLE_SUBRIP_TAGS: subrip_tags_cues,
}


def written_cues(plan: TrackPlan) -> list[Cue]:
    """The cues the track's file holds, as its style writes them, each with what it newly says."""
    styled = _STYLED_CUES.get(file_style(plan))
    return styled(plan) if styled is not None else list(plan.cues)


def youtube_text(plan: TrackPlan) -> str:
    blocks = [
        "\n".join([f"{vtt_time(c.start_ms)} --> {vtt_time(c.end_ms)} {YOUTUBE_SETTINGS}", *c.lines])
        for c in youtube_cues(plan)
    ]
    body = "".join(block + ("\n" if k == YOUTUBE_UNENDED_CUE else "\n\n") for k, block in enumerate(blocks))
    return f"{YOUTUBE_HEADER}\n{body}"


def mm_ss_text(plan: TrackPlan) -> str:
    blocks = [
        f"{short_time(c.start_ms)} --> {short_time(c.end_ms)}\n" + "\n".join(c.lines)
        for c in mm_ss_cues(plan)
    ]
    return f"{VTT_HEADER}\n\n" + "\n\n".join(blocks) + "\n"


def teams_text(plan: TrackPlan) -> str:
    ident = uuid.UUID(
        bytes=hashlib.sha256(" ".join(c.new for c in plan.cues).encode()).digest()[:16], version=4
    )
    blocks = [
        f"{ident}/{k + 1}-0\n{teams_time(c.start_ms)} --> {teams_time(c.end_ms)}\n" + "\n".join(c.lines)
        for k, c in enumerate(teams_cues(plan))
    ]
    return f"{VTT_HEADER}\n\n" + "\n\n".join(blocks) + "\n"


def subrip_tags_text(plan: TrackPlan) -> str:
    blocks = [
        f"{k + 1}\n{srt_time(c.start_ms)} --> {srt_time(c.end_ms)}\n" + "\n".join(c.lines)
        for k, c in enumerate(subrip_tags_cues(plan))
    ]
    return "\n\n".join(blocks) + "\n"


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


_STYLE_WRITERS: dict[str, Callable[[TrackPlan], str]] = {
    STYLE_YOUTUBE: youtube_text,
    STYLE_MM_SS: mm_ss_text,
    STYLE_TEAMS: teams_text,
    STYLE_SUBRIP_TAGS: subrip_tags_text,
}


def file_bytes(plan: TrackPlan) -> bytes:
    """The file of the track, as stored (before any Content-Encoding)."""
    styled = _STYLE_WRITERS.get(file_style(plan))
    if styled is not None:
        return styled(plan).encode("utf-8")
    writer = _WRITERS.get(plan.kind)
    return writer(plan) if writer is not None else vtt_text(plan).encode("utf-8")
