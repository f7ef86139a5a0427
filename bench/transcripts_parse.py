"""Reading subtitle files: ``crawler.transcripts.parse_subtitle_file`` against the libraries' own parse of
the same files, in one process.

``python -m bench.transcripts_parse [--files 300] [--seed 0] [--passes 3]`` makes ``--files`` realistic
subtitle files of 5 to 30 KB, spoken text drawn from the replica's real EMNLP 2025 abstracts: a third
rolling speech recognition tracks (WebVTT as such tracks come: each cue shows the line before again, words
timed inline, a 10 ms cue between two), a third human WebVTT tracks (numbered cues, voice spans,
entities, italics) and a third human SubRip tracks. It prints, as JSON, the tracks read per CPU-second
by ``parse_subtitle_file`` (everything: decoding, reading the cues, cleaning, folding rolling cues and
redacting) and by the libraries alone (``webvtt.from_buffer`` over the bytes for WebVTT, ``srt.parse``
over the decoded text for SubRip: cue timings and raw text, nothing cleaned), the best of ``--passes``
passes each, and ``ratio``: the libraries' CPU time over ``parse_subtitle_file``'s (below 1: slower
than the bare libraries, by that factor); ``cpu_ratio`` is its inverse, overall and for each format
(``by_format``: the WebVTT files, rolling and human, and the SubRip ones), the figure held to 1.5.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import srt
import webvtt

from crawler.replica.layout import load_records
from crawler.transcripts import SUBTITLE_MAX_BYTES, ParsedTrack, parse_subtitle_file

KINDS = ("rolling", "webvtt", "srt")
# parse_subtitle_file's CPU time over the libraries' alone: at most this.
MAX_CPU_RATIO = 1.5
_SPEAKERS = ("Dr. Jane Roe", "Moderator", "Speaker 2")


def spoken_words(seed: int = 0) -> list[str]:
    """What the talks say: the words of the replica's real abstracts, in order, shuffled by abstract."""
    abstracts = [str(r.get("abstract") or "") for r in load_records()]
    random.Random(seed).shuffle(abstracts)
    return [w for text in abstracts for w in re.findall(r"[\w'-]+[.,;:?!]?", text)]


def _stamp(ms: int, separator: str = ".") -> str:
    seconds, millis = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{separator}{millis:03d}"


def _lines(words: Sequence[str], rng: random.Random, size: int) -> list[str]:
    """Caption lines of a few words each, about ``size`` bytes of them."""
    lines: list[str] = []
    at = rng.randrange(len(words))
    total = 0
    while total < size:
        count = rng.randint(3, 8)
        line = " ".join(words[(at + i) % len(words)] for i in range(count))
        at += count
        lines.append(line)
        total += len(line) + 1
    return lines


def rolling_track(lines: Sequence[str], rng: random.Random) -> str:
    """A speech recognition track: each line timed word by word, shown under the line before it; a 10 ms
    cue showing the line alone between two cues."""
    blocks = ["WEBVTT\nKind: captions\nLanguage: en"]
    start = 0
    previous = " "
    for line in lines:
        end = start + rng.randint(1500, 4000)
        words = line.split()
        step = (end - start) // len(words)
        timed = words[0] + "".join(
            f"<{_stamp(start + step * i)}><c> {word}</c>" for i, word in enumerate(words[1:], 1)
        )
        blocks.append(f"{_stamp(start)} --> {_stamp(end)} align:start position:0%\n{previous}\n{timed}")
        blocks.append(f"{_stamp(end)} --> {_stamp(end + 10)} align:start position:0%\n{line}\n ")
        previous, start = line, end + 10
    return "\n\n".join(blocks) + "\n"


def human_track(lines: Sequence[str], rng: random.Random, subrip: bool) -> str:
    """A human track: numbered cues of one or two lines, now and then a voice span, an entity, italics."""
    blocks = [] if subrip else ["WEBVTT"]
    start = 0
    for number, at in enumerate(range(0, len(lines), 2), 1):
        shown = list(lines[at : at + 2])
        if rng.random() < 0.2:
            shown[0] = f"<i>{shown[0]}</i>"
        if rng.random() < 0.1:
            shown[-1] = shown[-1].replace(" and ", " &amp; ", 1)
        if not subrip and rng.random() < 0.3:
            shown[0] = f"<v {rng.choice(_SPEAKERS)}>{shown[0]}"
        end = start + rng.randint(2000, 6000)
        separator = "," if subrip else "."
        text = "\n".join(shown)
        blocks.append(f"{number}\n{_stamp(start, separator)} --> {_stamp(end, separator)}\n{text}")
        start = end + rng.randint(0, 300)
    return "\n\n".join(blocks) + "\n"


def realistic_files(count: int, seed: int = 0) -> list[bytes]:
    """``count`` subtitle files of 5 to 30 KB, the three kinds in turn."""
    rng = random.Random(seed)
    words = spoken_words(seed)
    files: list[bytes] = []
    for index in range(count):
        kind = KINDS[index % len(KINDS)]
        target = rng.randint(5_300, 30_000)
        # About the words that fit (a rolling track shows each line three times), lines dropped from the
        # end while the file is too large.
        lines = _lines(words, rng, target // 4 if kind == "rolling" else target * 4 // 5)
        kept = len(lines)
        while True:
            body = _track(kind, lines[:kept], rng).encode("utf-8")
            if len(body) <= target or kept == 1:
                break
            kept -= max(1, kept // 20)
        files.append(body)
    return files


def _track(kind: str, lines: Sequence[str], rng: random.Random) -> str:
    if kind == "rolling":
        return rolling_track(lines, rng)
    return human_track(lines, rng, subrip=kind == "srt")


def library_parse(body: bytes) -> int:
    """The libraries' own read of a file: webvtt-py from a buffer for WebVTT, srt for SubRip. Returns the
    number of cues."""
    if body.lstrip(b"\xef\xbb\xbf").startswith(b"WEBVTT"):
        return len(webvtt.from_buffer(io.BytesIO(body)).captions)
    return len(list(srt.parse(body.decode("utf-8"))))


def _cpu_s(files: Sequence[bytes], read: Callable[[bytes], object]) -> float:
    started = time.process_time()
    for body in files:
        read(body)
    return time.process_time() - started


def file_format(body: bytes) -> str:
    """``webvtt`` or ``srt``: which library :func:`library_parse` reads the file with."""
    return "webvtt" if body.lstrip(b"\xef\xbb\xbf").startswith(b"WEBVTT") else "srt"


def _ours(body: bytes) -> ParsedTrack:
    return parse_subtitle_file(body, auto_generated=None, max_bytes=SUBTITLE_MAX_BYTES)


def measure(files: list[bytes], passes: int = 3) -> dict[str, Any]:
    """Tracks per CPU-second of :func:`parse_subtitle_file` and of the libraries' own parse over ``files``
    (best of ``passes``), and their ratio (the libraries' CPU time over ours); ``by_format``, the same for
    the WebVTT and the SubRip files apart, and ``cpu_ratio``, our CPU time over the libraries' (overall
    and per format). Each pass reads each format's files ours then the libraries' way, one after the
    other, so that both meet the same load."""
    groups = {fmt: [body for body in files if file_format(body) == fmt] for fmt in ("webvtt", "srt")}
    best = {(fmt, reader): float("inf") for fmt in groups for reader in ("ours", "library")}
    for _ in range(passes):
        for fmt, group in groups.items():
            best[fmt, "ours"] = min(best[fmt, "ours"], _cpu_s(group, _ours))
            best[fmt, "library"] = min(best[fmt, "library"], _cpu_s(group, library_parse))
    by_format = {
        fmt: {
            "files": len(group),
            "parse_subtitle_file_cpu_s": round(best[fmt, "ours"], 4),
            "library_cpu_s": round(best[fmt, "library"], 4),
            "cpu_ratio": round(best[fmt, "ours"] / max(best[fmt, "library"], 1e-9), 3),
        }
        for fmt, group in groups.items()
        if group
    }
    ours_s = max(sum(best[fmt, "ours"] for fmt in by_format), 1e-9)
    library_s = max(sum(best[fmt, "library"] for fmt in by_format), 1e-9)
    tracks = [_ours(body) for body in files]
    return {
        "files": len(files),
        "bytes": sum(len(body) for body in files),
        "cues": sum(library_parse(body) for body in files),
        "segments": sum(len(t.segments) for t in tracks),
        "cues_skipped": sum(t.cues_skipped for t in tracks),
        "parse_subtitle_file": {"cpu_s": round(ours_s, 4), "tracks_per_cpu_s": round(len(files) / ours_s, 1)},
        "library": {"cpu_s": round(library_s, 4), "tracks_per_cpu_s": round(len(files) / library_s, 1)},
        "ratio": round(library_s / ours_s, 3),
        "cpu_ratio": round(ours_s / library_s, 3),
        "by_format": by_format,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args(argv)
    print(json.dumps(measure(realistic_files(args.files, args.seed), args.passes), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
