"""bench/transcripts_parse.py: its realistic files are what it says, parse whole, and fold back to what
was said; its measure reports both rates and their ratio."""

from __future__ import annotations

import random

import pytest

from bench.transcripts_parse import KINDS, measure, realistic_files, rolling_track, spoken_words
from crawler.transcripts import SUBTITLE_MAX_BYTES, parse_subtitle_file


def test_realistic_files_are_5_to_30_kb_of_each_kind_and_read_whole() -> None:
    files = realistic_files(9, seed=3)
    for index, body in enumerate(files):
        kind = KINDS[index % len(KINDS)]
        assert 5_000 <= len(body) <= 30_000, f"case {index} ({kind}): {len(body)} bytes"
        track = parse_subtitle_file(body, auto_generated=None, max_bytes=SUBTITLE_MAX_BYTES)
        assert (track.format, track.cues_skipped, track.problem) == (
            "srt" if kind == "srt" else "webvtt",
            0,
            None,
        ), f"case {index} ({kind})"


@pytest.mark.parametrize("auto_generated", [True, None])
def test_a_generated_rolling_track_folds_to_its_lines_said_once(auto_generated: bool | None) -> None:
    words = spoken_words(seed=1)[:400]
    lines = [" ".join(words[i : i + 6]) for i in range(0, len(words), 6)]
    body = rolling_track(lines, random.Random(1)).encode()
    track = parse_subtitle_file(body, auto_generated=auto_generated, max_bytes=SUBTITLE_MAX_BYTES)
    assert [s["text"] for s in track.segments] == lines
    assert track.text == " ".join(words)


def test_measure_reports_both_rates_and_their_ratio() -> None:
    files = realistic_files(3, seed=0)
    result = measure(files, passes=1)
    assert (result["files"], result["bytes"], result["cues_skipped"]) == (3, sum(map(len, files)), 0)
    ours, library = result["parse_subtitle_file"], result["library"]
    assert ours["tracks_per_cpu_s"] > 0 and library["tracks_per_cpu_s"] > 0
    assert result["ratio"] == pytest.approx(library["cpu_s"] / ours["cpu_s"], rel=0.05)
