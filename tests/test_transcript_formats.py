"""Subtitle files as other tools write them, read right: a generated track that rolls one word at a time,
rolling captions in scripts written without spaces, a malformed first cue, SubRip read by its own rules,
and files from YouTube, Microsoft Teams and SubRip editors (tests/fixtures/subtitles/), each to its exact
text and segment starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler.transcripts import SUBTITLE_MAX_BYTES, ParsedTrack, parse_subtitle_file

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "subtitles"


def parse(body: bytes, auto_generated: bool | None) -> ParsedTrack:
    return parse_subtitle_file(body, auto_generated=auto_generated, max_bytes=SUBTITLE_MAX_BYTES)


def said(track: ParsedTrack) -> tuple[str | None, list[int], list[str]]:
    """The text, the segments' starts and their texts."""
    return track.text, [int(s["start_ms"]) for s in track.segments], [str(s["text"]) for s in track.segments]


# -- a generated track that rolls one word at a time ----------------------------------------------------

LINE_OF_A_SPACE = " "
TIMED_LINE = "".join(
    f"<00:00:0{at}><c> {word}</c>"
    for at, word in [
        ("1.500", "this"),
        ("1.800", "will"),
        ("2.100", "happen"),
        ("2.300", "is"),
        ("2.500", "I'm"),
        ("2.700", "telling"),
    ]
)
ONE_WORD_AT_A_TIME = f"""WEBVTT
Kind: captions
Language: en

00:00:00.000 --> 00:00:01.000 align:start position:0%
{LINE_OF_A_SPACE}
yeah

00:00:01.000 --> 00:00:01.500 align:start position:0%
yeah
what

00:00:01.500 --> 00:00:03.000 align:start position:0%
{TIMED_LINE}

00:00:03.000 --> 00:00:03.010 align:start position:0%
this will happen is I'm telling
""".encode()


def test_a_generated_track_rolling_one_word_at_a_time_is_folded() -> None:
    track = parse(ONE_WORD_AT_A_TIME, auto_generated=True)
    assert said(track) == (
        "yeah what this will happen is I'm telling",
        [0, 1000, 1500],
        ["yeah", "what", "this will happen is I'm telling"],
    )
    assert (track.cues_skipped, track.problem) == (0, None)


def test_a_word_said_twice_in_a_track_rolling_one_word_at_a_time_stays_twice() -> None:
    body = (
        b"WEBVTT\n\n"
        b"00:00:01.000 --> 00:00:02.000\nvery\n\n"
        b"00:00:02.000 --> 00:00:03.000\nvery\nvery\n\n"
        b"00:00:03.000 --> 00:00:04.000\nvery\ngood\n\n"
        b"00:00:04.000 --> 00:00:05.000\ngood\nwork\n"
    )
    assert said(parse(body, auto_generated=True)) == (
        "very very good work",
        [1000, 2000, 3000, 4000],
        ["very", "very", "good", "work"],
    )


def test_a_generated_track_whose_cues_only_share_a_word_at_their_edge_is_kept_as_cued() -> None:
    # One word at a cue's start that ended the cue before is said again, not shown again: no cue repeats
    # all of the cue before it.
    body = (
        b"WEBVTT\n\n"
        b"00:00:01.000 --> 00:00:02.000\nwe said no\n\n"
        b"00:00:02.000 --> 00:00:03.000\nno one came\n\n"
        b"00:00:03.000 --> 00:00:04.000\ncame back later\n"
    )
    assert said(parse(body, auto_generated=True))[0] == "we said no no one came came back later"


# -- scripts written without spaces --------------------------------------------------------------------

JAPANESE = """WEBVTT

00:00:01.000 --> 00:00:03.000
今日は機械翻訳について

00:00:03.000 --> 00:00:05.000
今日は機械翻訳について
話します

00:00:05.000 --> 00:00:05.010
話します

00:00:05.010 --> 00:00:07.000
話します
最新の研究を紹介します
"""
CHINESE = """WEBVTT

00:00:01.000 --> 00:00:03.000
我们今天讨论机器翻译

00:00:03.000 --> 00:00:05.000
我们今天讨论机器翻译
的最新进展

00:00:05.000 --> 00:00:05.010
的最新进展

00:00:05.010 --> 00:00:07.000
的最新进展
谢谢大家
"""


@pytest.mark.parametrize(
    ("body", "segments"),
    [
        (JAPANESE, ["今日は機械翻訳について", "話します", "最新の研究を紹介します"]),
        (CHINESE, ["我们今天讨论机器翻译", "的最新进展", "谢谢大家"]),
    ],
)
@pytest.mark.parametrize("auto_generated", [True, None])
def test_rolling_captions_without_spaces_are_folded_by_characters(
    body: str, segments: list[str], auto_generated: bool | None
) -> None:
    track = parse(body.encode(), auto_generated=auto_generated)
    assert said(track) == (" ".join(segments), [1000, 3000, 5010], segments)


# A line that grows, then rolls on: each cue says the end of the one before again, with no space after it.
GROWING = """WEBVTT

00:00:01.000 --> 00:00:02.000
今日は機械翻訳

00:00:02.000 --> 00:00:03.000
今日は機械翻訳について話します

00:00:03.000 --> 00:00:04.000
について話します最新の研究を

00:00:04.000 --> 00:00:05.000
最新の研究を紹介します
"""


@pytest.mark.parametrize("auto_generated", [True, None])
def test_a_growing_line_without_spaces_is_folded_by_characters(auto_generated: bool | None) -> None:
    segments = ["今日は機械翻訳", "について話します", "最新の研究を", "紹介します"]
    track = parse(GROWING.encode(), auto_generated=auto_generated)
    assert said(track) == (" ".join(segments), [1000, 2000, 3000, 4000], segments)


def test_a_human_track_without_spaces_is_kept_as_cued() -> None:
    track = parse(JAPANESE.encode(), auto_generated=False)
    assert [s["start_ms"] for s in track.segments] == [1000, 3000, 5000, 5010]


# -- a malformed cue wherever it stands ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            b"1\n00:00:01 --> 00:00:02,000\nfirst\n\n2\n00:00:02,000 --> 00:00:03,000\nsecond cue fine\n",
            ("second cue fine", [2000], ["second cue fine"]),
        ),
        (
            b"1\n00:00:00,000 --> 00:00:01,000\nzero\n\n2\n00:00:01 --> 00:00:02,000\nfirst\n\n"
            b"3\n00:00:02,000 --> 00:00:03,000\nsecond cue fine\n",
            ("zero second cue fine", [0, 2000], ["zero", "second cue fine"]),
        ),
        (
            b"\xef\xbb\xbf1\n00:00:01 --> 00:00:02,000\nfirst\n\n"
            b"2\n00:00:02-000 --> 00:00:03,000\nbad too\n\n"
            b"3\n00:00:03,000 --> 00:00:04,000\nthird\n",
            ("third", [3000], ["third"]),
        ),
    ],
    ids=["first", "second", "first two"],
)
def test_a_malformed_subrip_cue_is_skipped_and_counted_wherever_it_stands(
    body: bytes, expected: tuple[str, list[int], list[str]]
) -> None:
    track = parse(body, auto_generated=False)
    assert said(track) == expected
    skipped = body.count(b"-->") - len(expected[1])
    assert (track.format, track.problem, track.cues_skipped) == ("srt", None, skipped)


def test_a_file_without_a_header_whose_first_readable_cue_is_written_the_webvtt_way_is_unparsable() -> None:
    body = b"1\n00:00:01 --> 00:00:02,000\nfirst\n\n00:02.000 --> 00:03.000\nno hours\n"
    assert (parse(body, auto_generated=False).problem, parse(body, auto_generated=False).format) == (
        "unparsable",
        None,
    )


# -- SubRip read by its own rules ----------------------------------------------------------------------


def test_subrip_text_keeps_arrows_and_angle_brackets_and_loses_only_subrip_tags() -> None:
    body = (
        b"1\n00:00:01,000 --> 00:00:03,000\nclick File --> Save now\nif x<y and y>z then\n\n"
        b"2\n00:00:03,000 --> 00:00:04,000\n"
        b'<i>done</i>, <font color="#ff0000">red</font> <v Bob> &lt;b&gt;\n\n'
        b"3\n00:00:04,000 --> 00:00:05,000\nat 00:00:04,500 sharp\n00:00:05,000 --> 00:00:06,000\nnext\n"
    )
    track = parse(body, auto_generated=False)
    assert said(track) == (
        "click File --> Save now if x<y and y>z then done, red <v Bob> at 00:00:04,500 sharp next",
        [1000, 3000, 4000, 5000],
        ["click File --> Save now if x<y and y>z then", "done, red <v Bob>", "at 00:00:04,500 sharp", "next"],
    )
    assert (track.format, track.cues_skipped) == ("srt", 0)


def test_webvtt_keeps_its_own_rules() -> None:
    body = (
        b"WEBVTT\n\n00:00:01.000 --> 00:00:03.000\nif x &lt; y and <v Bob>z</v>\n"
        b"00:00:03.000 --> 00:00:04.000\nnext\n"
    )
    assert said(parse(body, auto_generated=False)) == (
        "if x < y and z next",
        [1000, 3000],
        ["if x < y and z", "next"],
    )


# -- files written by other tools ----------------------------------------------------------------------

FILES = {
    "youtube_auto.vtt": (
        True,
        "webvtt",
        [
            (30, "yeah"),
            (1000, "what"),
            (1500, "so this is what we built"),
            (4000, "and it works very very well"),
            (6500, "thanks"),
        ],
    ),
    "mmss_inline.vtt": (
        True,
        "webvtt",
        [
            (480, "We study how models parse"),
            (3000, "subtitle files written by tools."),
            (6000, "The first result is simple."),
            (62000, "Thank you."),
        ],
    ),
    "teams.vtt": (
        False,
        "webvtt",
        [
            (0, "Good morning, everyone."),
            (3920, "Today I'll present our results."),
            (7500, "Thanks, Jane. Can you share the slides?"),
            (62250, "Sure, here they are."),
        ],
    ),
    "styled.srt": (
        False,
        "srt",
        [
            (500, "Welcome back to the second session."),
            (2750, "Recall that p < 0.05 is not the whole story."),
            (5000, "x<y and y>z"),
            (7250, "Press Ctrl --> Save, then Done."),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_files_written_by_other_tools_are_read_to_what_was_said(name: str) -> None:
    auto, fmt, expected = FILES[name]
    track = parse((FIXTURES / name).read_bytes(), auto_generated=auto)
    assert said(track) == (
        " ".join(text for _, text in expected),
        [start for start, _ in expected],
        [text for _, text in expected],
    )
    assert (track.format, track.problem, track.cues_skipped) == (fmt, None, 0)
    if auto:
        # A track the site says nothing of reads the same: these roll visibly.
        assert said(parse((FIXTURES / name).read_bytes(), auto_generated=None)) == said(track)


def test_the_teams_file_ends_past_an_hour() -> None:
    track = parse((FIXTURES / "teams.vtt").read_bytes(), auto_generated=False)
    assert track.segments[-1]["end_ms"] == 3_600_125
