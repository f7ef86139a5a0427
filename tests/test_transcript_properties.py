"""Properties of crawler.transcripts.parse_subtitle_file over generated files: it never raises, no entity,
byte order mark or CR reaches any text it returns, nor any markup of the file's format (in WebVTT no
cue tag, timing arrow or timestamp either; SubRip text keeps what is not a SubRip tag), and a rolling
track of distinct words folds back to exactly those words."""

from __future__ import annotations

import gzip
import html
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawler.transcripts import ParsedTrack, parse_subtitle_file

# Markup as a player would read it: a cue or SubRip tag, or an inline timestamp.
TAG = re.compile(r"</?(?:v|c|i|b|u|s|lang|ruby|rt|font)(?=[\s./>])[^<>]*>|<[\d:.]+>", re.IGNORECASE)
SUBRIP_TAG = re.compile(r"</?(?:b|i|u|font)(?=[\s/>])[^<>]*>", re.IGNORECASE)
STAMP = re.compile(r"\d:\d{2}[.,]\d{3}")
INT32_MAX = 2**31 - 1

# Cue text made of the pieces files carry: words, tags, entities (whole, nested, broken), timestamps,
# arrows, line ends, byte order marks and override blocks.
PIECES = st.sampled_from(
    [
        "hello",
        "world",
        " ",
        "<v Bob>",
        "<v.loud Jane Roe>",
        "</v>",
        "<c.yellow>",
        "</c>",
        "<i>",
        "</i>",
        "<b>",
        "<ruby>",
        "<rt>",
        "</rt>",
        "<lang en>",
        "<00:00:01.500>",
        "<01:02.003>",
        "&amp;",
        "&lt;",
        "&gt;",
        "&amp;lt;i&amp;gt;",
        "&#39;",
        "&#x2019;",
        "&nbsp;",
        "&",
        "<",
        ">",
        ";",
        "-->",
        "--",
        "\r",
        "\ufeff",
        "{\\an8}",
        '<font color="red">',
        "00:00:01,000",
        "\u200b",
    ]
)
CUE_TEXT = st.lists(PIECES, max_size=12).map("".join)


def assert_clean(track: ParsedTrack) -> None:
    texts = [str(s["text"]) for s in track.segments] + ([track.text] if track.text is not None else [])
    for text in texts:
        assert "\r" not in text and "\ufeff" not in text, f"case {text!r}"
        assert html.unescape(text) == text, f"case {text!r}"
        assert text == " ".join(text.split()), f"case {text!r}"
        if track.format == "srt":
            assert SUBRIP_TAG.search(text) is None, f"case {text!r}"
        else:
            assert "-->" not in text and TAG.search(text) is None, f"case {text!r}"
            assert STAMP.search(text) is None, f"case {text!r}"
    if track.text is not None:
        assert track.text == " ".join(str(s["text"]) for s in track.segments)
    for segment in track.segments:
        assert 0 <= int(segment["start_ms"]) <= int(segment["end_ms"]) <= INT32_MAX, f"case {segment}"
        assert segment["text"], f"case {segment}"


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=3000), auto_generated=st.sampled_from([True, False, None]))
def test_arbitrary_bytes_never_raise(body: bytes, auto_generated: bool | None) -> None:
    for data in (body, b"WEBVTT\n\n" + body, gzip.compress(body)):
        assert_clean(parse_subtitle_file(data, auto_generated=auto_generated, max_bytes=4096))


def _webvtt(cues: list[tuple[int, int, str]]) -> str:
    blocks = [f"{_stamp(a, '.')} --> {_stamp(b, '.')} align:start\n{text}" for a, b, text in cues]
    return "WEBVTT\n\n" + "\n\n".join(blocks) + "\n"


def _subrip(cues: list[tuple[int, int, str]]) -> str:
    blocks = [f"{i}\n{_stamp(a, ',')} --> {_stamp(b, ',')}\n{text}" for i, (a, b, text) in enumerate(cues, 1)]
    return "\n\n".join(blocks) + "\n"


def _stamp(ms: int, separator: str) -> str:
    seconds, millis = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{separator}{millis:03d}"


TIMES = st.integers(min_value=0, max_value=10**10)
CUES = st.lists(st.tuples(TIMES, TIMES, CUE_TEXT), max_size=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cues=CUES,
    subrip=st.booleans(),
    line_end=st.sampled_from(["\n", "\r\n", "\r"]),
    auto_generated=st.sampled_from([True, False, None]),
)
def test_cue_markup_never_reaches_the_text(
    cues: list[tuple[int, int, str]], subrip: bool, line_end: str, auto_generated: bool | None
) -> None:
    text = (_subrip(cues) if subrip else _webvtt(cues)).replace("\n", line_end)
    track = parse_subtitle_file(text.encode(), auto_generated=auto_generated, max_bytes=1 << 20)
    assert_clean(track)


WORDS = st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=60, unique=True)


@settings(max_examples=200, deadline=None)
@given(numbers=WORDS, line_words=st.integers(min_value=1, max_value=7), auto=st.sampled_from([True, None]))
def test_a_rolling_track_of_distinct_words_folds_to_them_once(
    numbers: list[int], line_words: int, auto: bool | None
) -> None:
    words = [f"w{n}" for n in numbers]
    lines = [" ".join(words[i : i + line_words]) for i in range(0, len(words), line_words)]
    cues: list[tuple[int, int, str]] = []
    starts: list[int] = []
    for index, line in enumerate(lines):
        start = 2000 * index
        shown = f"{lines[index - 1]}\n{line}" if index else line
        starts.append(start)
        cues.append((start, start + 1990, shown))
        cues.append((start + 1990, start + 2000, line))
    track = parse_subtitle_file(_webvtt(cues).encode(), auto_generated=auto, max_bytes=1 << 20)
    if auto is None and len(lines) < 2:
        return
    assert track.text == " ".join(words)
    assert [s["start_ms"] for s in track.segments] == starts
    assert [s["text"] for s in track.segments] == lines
