"""crawler.transcripts.parse_subtitle_file over subtitle files as the site's assets host may serve them:
each broken kind of file read to exact segments, counts and problems."""

from __future__ import annotations

import gzip
import time
import tracemalloc
import urllib.request

import pytest

from crawler.transcripts import SUBTITLE_MAX_BYTES, ParsedTrack, parse_subtitle_file
from tests.support.bad_site import BadSite, Canned

MAX = SUBTITLE_MAX_BYTES


def parse(body: bytes, auto_generated: bool | None = False, max_bytes: int = MAX) -> ParsedTrack:
    return parse_subtitle_file(body, auto_generated=auto_generated, max_bytes=max_bytes)


def seg(start_ms: int, end_ms: int, text: str) -> dict[str, object]:
    return {"start_ms": start_ms, "end_ms": end_ms, "text": text}


PLAIN_VTT = (
    "WEBVTT\n\n00:00:01.000 --> 00:00:02.500\nHello everyone,\n\n"
    "00:00:02.500 --> 00:00:04.000\nwelcome to the talk.\n"
)
PLAIN_SEGMENTS = [seg(1000, 2500, "Hello everyone,"), seg(2500, 4000, "welcome to the talk.")]


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("utf-8", b"\xef\xbb\xbf" + PLAIN_VTT.encode()),
        ("utf-16-le", b"\xff\xfe" + PLAIN_VTT.encode("utf-16-le")),
        ("utf-16-be", b"\xfe\xff" + PLAIN_VTT.encode("utf-16-be")),
        ("srt utf-8", b"\xef\xbb\xbf1\n00:00:01,000 --> 00:00:02,500\nHello everyone,\n"),
    ],
)
def test_a_byte_order_mark_is_read_and_dropped(name: str, body: bytes) -> None:
    track = parse(body)
    expected = PLAIN_SEGMENTS if name != "srt utf-8" else PLAIN_SEGMENTS[:1]
    assert (track.segments, track.problem, track.cues_skipped) == (expected, None, 0)
    assert track.text == " ".join(str(s["text"]) for s in expected)


@pytest.mark.parametrize("end", ["\r\n", "\r"])
def test_crlf_and_lone_cr_line_ends(end: str) -> None:
    body = PLAIN_VTT.replace("\n", end).encode()
    track = parse(body)
    assert (track.segments, track.cues_skipped, track.format) == (PLAIN_SEGMENTS, 0, "webvtt")
    assert track.text == "Hello everyone, welcome to the talk."


def test_cue_identifiers_and_settings_are_not_text() -> None:
    body = (
        b"WEBVTT - a lecture\n\n"
        b"intro\n00:00:01.000 --> 00:00:02.000 align:start position:10% line:0\nFirst line\n\n"
        b"2\n00:00:02.000 --> 00:00:03.000 size:50%\nSecond line\n\n"
        b"00:00:03.000 --> 00:00:04.000\tvertical:rl\nThird line\n"
    )
    track = parse(body)
    assert track.segments == [
        seg(1000, 2000, "First line"),
        seg(2000, 3000, "Second line"),
        seg(3000, 4000, "Third line"),
    ]
    assert track.cues_skipped == 0


def test_note_style_and_region_blocks_are_never_text_nor_skipped_cues() -> None:
    body = (
        b"WEBVTT\n\n"
        b"REGION\nid:speaker width:40% lines:3\n\n"
        b"STYLE\n::cue { color: yellow }\n::cue(.loud) { font-weight: bold }\n\n"
        b"NOTE recorded at the conference\n\n"
        b"00:00:01.000 --> 00:00:02.000 region:speaker\nSpoken words\n\n"
        b"NOTE\nan editor's comment\non two lines\n\n"
        b"00:00:02.000 --> 00:00:03.000\nmore words\n"
    )
    track = parse(body)
    assert track.segments == [seg(1000, 2000, "Spoken words"), seg(2000, 3000, "more words")]
    assert (track.cues_skipped, track.text) == (0, "Spoken words more words")


def test_voice_class_and_style_spans_leave_only_the_words() -> None:
    body = (
        "WEBVTT\n\n"
        "00:00:01.000 --> 00:00:02.000\n<v Dr. Jane Roe>Good morning</v>\n\n"
        "00:00:02.000 --> 00:00:03.000\n<v.loud.first Bob>Thank <c.yellow.bg_blue>you</c> all</v>\n\n"
        "00:00:03.000 --> 00:00:04.000\n<i>in</i> <b>bold</b> <u>terms</u> <lang en-US>really</lang>\n\n"
        "00:00:04.000 --> 00:00:05.000\n<ruby>漢<rt>kan</rt>字<rt>ji</rt></ruby> written\n"
    ).encode()
    track = parse(body)
    assert [s["text"] for s in track.segments] == [
        "Good morning",
        "Thank you all",
        "in bold terms really",
        "漢字 written",
    ]


def test_inline_timestamps_are_not_text() -> None:
    body = (
        b"WEBVTT\n\n"
        b"00:00:01.000 --> 00:00:03.000\n"
        b"we<00:00:01.500><c> propose</c><00:00:02.000><c> a</c><00:02.500> model\n"
    )
    assert parse(body).segments == [seg(1000, 3000, "we propose a model")]


def test_entities_are_decoded() -> None:
    body = (
        b"WEBVTT\n\n"
        b"00:00:01.000 --> 00:00:02.000\nR&amp;D &lt;and&gt; it&#39;s what&#x2019;s&nbsp;next\n\n"
        b"00:00:02.000 --> 00:00:03.000\n&amp;lt;i&amp;gt;twice encoded&amp;lt;/i&amp;gt;\n"
    )
    assert [s["text"] for s in parse(body).segments] == [
        "R&D <and> it's what\u2019s next",
        "twice encoded",
    ]


def test_subrip_tags_and_override_blocks_are_removed() -> None:
    body = (
        b'1\n00:00:01,000 --> 00:00:02,000\n{\\an8}<font color="#ffff00">On top</font>\n\n'
        b"2\n00:00:02,000 --> 00:00:03,000\n<i>two</i>\n<b>lines</b>\n"
    )
    track = parse(body)
    assert (track.segments, track.format) == (
        [seg(1000, 2000, "On top"), seg(2000, 3000, "two lines")],
        "srt",
    )


def test_a_gzipped_file_reads_as_the_file() -> None:
    track = parse(gzip.compress(PLAIN_VTT.encode()))
    assert (track.segments, track.problem) == (PLAIN_SEGMENTS, None)


def test_a_gzip_bomb_stops_at_the_cap_without_expanding() -> None:
    bomb = gzip.compress(b"WEBVTT\n\n" + b"\0" * (48 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < 100_000
    tracemalloc.start()
    try:
        track = parse(bomb, max_bytes=1024 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (track.text, track.segments, track.problem, track.format) == (None, [], "too_large", None)
    assert peak < 8 * 1024 * 1024


def test_gzip_that_expands_to_exactly_the_cap_is_read() -> None:
    body = PLAIN_VTT.encode()
    assert parse(gzip.compress(body), max_bytes=len(body)).segments == PLAIN_SEGMENTS
    assert parse(gzip.compress(body), max_bytes=len(body) - 1).problem == "too_large"


def test_a_corrupt_or_truncated_gzip_is_unparsable() -> None:
    whole = gzip.compress(PLAIN_VTT.encode())
    for name, body in [("truncated", whole[:-12]), ("corrupt", whole[:12] + b"\xff" * 20)]:
        track = parse(body)
        assert (track.text, track.problem) == (None, "unparsable"), f"case {name}"


def test_bytes_that_are_not_utf8_are_replaced_and_said() -> None:
    body = "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nCaf\u00e9 na\u00efve\n".encode("latin-1")
    track = parse(body)
    assert (track.text, track.problem) == ("Caf\ufffd na\ufffdve", "not_utf8")
    assert track.segments == [seg(1000, 2000, "Caf\ufffd na\ufffdve")]


def test_a_file_past_the_cap_is_too_large_and_not_read() -> None:
    body = PLAIN_VTT.encode()
    assert parse(body, max_bytes=len(body)).segments == PLAIN_SEGMENTS
    track = parse(body, max_bytes=len(body) - 1)
    assert (track.text, track.segments, track.problem) == (None, [], "too_large")


def test_one_malformed_webvtt_cue_is_skipped_and_counted_its_neighbours_kept() -> None:
    body = (
        b"WEBVTT\n\n"
        b"00:00:01.000 --> 00:00:02.000\nfirst\n\n"
        b"00:00:02.000 --> 00:00:61.000\nseconds past 59\n\n"
        b"00:00:03.000 --> later\nno end time\n\n"
        b"a block of text without timing\n\n"
        b"00:00:04.000 --> 00:00:04.3001\nfour digits of a second\n\n"
        b"00:00:05.000 --> 00:00:06.000\nlast\n"
    )
    track = parse(body)
    assert track.segments == [seg(1000, 2000, "first"), seg(5000, 6000, "last")]
    assert (track.cues_skipped, track.problem, track.text) == (4, None, "first last")


def test_one_malformed_subrip_cue_is_skipped_and_counted_not_read_into_its_neighbour() -> None:
    body = (
        b"1\n00:00:01,000 --> 00:00:02,000\nfirst\n\n"
        b"2\n00:00:02,000 -> 00:00:03,000\nbroken arrow\n\n"
        b"3\n99999999999:00:00,000 --> 00:00:04,000\nhours past any talk\n\n"
        b"4\n00:05,000 --> 00:06,000\nno hours\n\n"
        b"5\n00:00:07,000 --> 00:00:08,000\nfifth\n\n"
        b"6\nx00:00:09,000 --> 00:00:10,000\ntiming line garbled\n\n"
        b"7\n00:61:00,000 --> 00:62:00,000\nminutes past 59\n\n"
        b"8\n00:00:11,000 --> 00:00:12,000\nlast\n"
    )
    track = parse(body)
    assert track.segments == [seg(1000, 2000, "first"), seg(7000, 8000, "fifth"), seg(11000, 12000, "last")]
    assert (track.cues_skipped, track.text) == (5, "first fifth last")


def test_a_file_of_malformed_cues_only_is_unparsable() -> None:
    body = b"WEBVTT\n\n00:00:01.000 --> soon\nnothing readable\n"
    track = parse(body)
    assert (track.text, track.problem, track.cues_skipped, track.format) == (None, "unparsable", 1, "webvtt")


def test_neither_format_is_unparsable() -> None:
    for name, body in [
        ("html", b"<html><body>Not found</body></html>"),
        ("empty", b""),
        ("json", b'{"cues": []}'),
        ("timings without hours nor header", b"00:01.000 --> 00:02.000\nhello\n"),
    ]:
        track = parse(body)
        assert (track.text, track.problem, track.format) == (None, "unparsable", None), f"case {name}"


def test_subrip_served_under_a_webvtt_name_is_told_by_its_content() -> None:
    srt_body = (
        b"1\n00:00:01,000 --> 00:00:02,500\nHello everyone,\n\n"
        b"2\n00:00:02.500 --> 00:00:04.000\nwelcome to the talk.\n"
    )

    def answer(path: str) -> Canned:
        return Canned(body=srt_body, content_type="text/vtt; charset=utf-8")

    with BadSite("http://127.0.0.1:9", answer) as site:
        url = f"{site.base_url}/transcripts/132280/subtitles-en.vtt"
        with urllib.request.urlopen(url, timeout=10) as reply:
            assert reply.headers["Content-Type"] == "text/vtt; charset=utf-8"
            body = reply.read()
    track = parse(body)
    assert (track.format, track.segments, track.cues_skipped) == ("srt", PLAIN_SEGMENTS, 0)


def test_subrip_with_dots_and_webvtt_with_commas_are_read() -> None:
    dotted = (
        b"1\n00:00:01.000 --> 00:00:02.500\nHello everyone,\n\n"
        b"2\n00:00:02.500 --> 00:00:04.000\nwelcome to the talk.\n"
    )
    with_commas = (
        b"WEBVTT\n\n1\n00:00:01,000 --> 00:00:02,500\nHello everyone,\n\n"
        b"00:00:02,500 --> 00:00:04,000\nwelcome to the talk.\n"
    )
    for name, body, fmt in [("srt with dots", dotted, "srt"), ("webvtt with commas", with_commas, "webvtt")]:
        track = parse(body)
        assert (track.format, track.segments, track.cues_skipped) == (fmt, PLAIN_SEGMENTS, 0), f"case {name}"


def test_a_track_without_cues_is_empty_with_no_text() -> None:
    # A file with no cue says nothing of the talk: not a silent talk's empty text, a problem named.
    for name, body in [
        ("header", b"WEBVTT\n"),
        ("header and note", b"WEBVTT\n\nNOTE nothing said yet\n"),
        ("header, style and region", b"WEBVTT\n\nSTYLE\n::cue { color: red }\n\nREGION\nid:r1\n"),
    ]:
        track = parse(body)
        assert (track.text, track.segments, track.problem, track.format, track.cues_skipped) == (
            None,
            [],
            "empty",
            "webvtt",
            0,
        ), f"case {name}"


def test_cues_that_say_nothing_are_a_silent_talk_not_empty() -> None:
    track = parse(b"WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n\n00:00:02.000 --> 00:00:03.000\n<i></i>\n")
    assert (track.text, track.segments, track.problem, track.cues_skipped) == ("", [], None, 0)


def test_webvtt_without_hours_and_cues_without_blank_lines_between() -> None:
    body = (
        b"WEBVTT\n\n"
        b"00:01.000 --> 00:02.000\nfirst\n"
        b"00:02.000 --> 00:03.500\nsecond\n"
        b"3\n00:00:03.500 --> 00:00:04.000\nthird\n"
    )
    track = parse(body)
    assert track.segments == [seg(1000, 2000, "first"), seg(2000, 3500, "second"), seg(3500, 4000, "third")]


def test_cues_are_kept_in_file_order_and_impossible_times_skipped_and_counted() -> None:
    # A time no talk has is never changed into one: the cue is left out and counted.
    body = (
        b"WEBVTT\n\n"
        b"00:00:05.000 --> 00:00:06.000\nlater cue first\n\n"
        b"00:00:02.000 --> 00:00:01.000\nends before it starts\n\n"
        b"999999:00:00.000 --> 1000000:00:00.000\npast a 32-bit millisecond\n\n"
        b"596:31:23.647 --> 596:31:23.648\nends one past the 32-bit limit\n\n"
        b"00:00:03.000 --> 00:00:03.000\nas long as it is short\n\n"
        b"596:31:23.000 --> 596:31:23.647\nends at the 32-bit limit\n"
    )
    track = parse(body)
    assert track.segments == [
        seg(5000, 6000, "later cue first"),
        seg(3000, 3000, "as long as it is short"),
        seg(2_147_483_000, 2**31 - 1, "ends at the 32-bit limit"),
    ]
    assert (track.cues_skipped, track.problem) == (3, None)
    assert track.text == "later cue first as long as it is short ends at the 32-bit limit"


def test_a_subrip_cue_with_an_impossible_time_is_skipped_and_counted() -> None:
    body = (
        b"1\n00:00:01,000 --> 00:00:02,000\nfirst\n\n"
        b"2\n00:00:04,000 --> 00:00:03,000\nends before it starts\n\n"
        b"3\n600:00:00,000 --> 600:00:01,000\npast a 32-bit millisecond\n\n"
        b"4\n00:00:05,000 --> 00:00:06,000\nlast\n"
    )
    track = parse(body)
    assert (track.segments, track.cues_skipped, track.format) == (
        [seg(1000, 2000, "first"), seg(5000, 6000, "last")],
        2,
        "srt",
    )


# A speech recognition track as such tracks roll: each cue shows the line before it again with the new
# words after it (the first with a line of one space above), and a 10 ms cue shows the line once more.
# The speaker says "very" twice on purpose, and a line that ends with the word it starts with rolls.
LINE_OF_A_SPACE = " "
ROLLING = f"""WEBVTT
Kind: captions
Language: en

00:00:00.000 --> 00:00:02.310 align:start position:0%
{LINE_OF_A_SPACE}
so<00:00:00.480><c> this</c><00:00:00.960><c> is</c><00:00:01.199><c> very</c>

00:00:02.310 --> 00:00:02.320 align:start position:0%
so this is very
{LINE_OF_A_SPACE}

00:00:02.320 --> 00:00:04.870 align:start position:0%
so this is very
very<00:00:02.560><c> important</c><00:00:02.800><c> work</c>

00:00:04.870 --> 00:00:04.880 align:start position:0%
very important work
{LINE_OF_A_SPACE}

00:00:04.880 --> 00:00:06.000 align:start position:0%
very important work
that<00:00:05.000><c> is</c><c> that</c>

00:00:06.000 --> 00:00:06.010 align:start position:0%
very important work
that is that

00:00:06.010 --> 00:00:08.000 align:start position:0%
that is that
together<c> thanks</c>
"""
ROLLING_SAID = "so this is very very important work that is that together thanks"
ROLLING_SEGMENTS = [
    seg(0, 2310, "so this is very"),
    seg(2320, 4870, "very important work"),
    seg(4880, 6000, "that is that"),
    seg(6010, 8000, "together thanks"),
]


@pytest.mark.parametrize("auto_generated", [True, None])
def test_rolling_captions_are_folded_to_what_was_said_once(auto_generated: bool | None) -> None:
    track = parse(ROLLING.encode(), auto_generated=auto_generated)
    assert track.text == ROLLING_SAID
    assert track.segments == ROLLING_SEGMENTS
    assert track.cues_skipped == 0


def test_a_human_track_is_kept_as_cued() -> None:
    body = (
        b"WEBVTT\n\n"
        b"00:00:01.000 --> 00:00:02.000\nWe said no.\n\n"
        b"00:00:02.000 --> 00:00:03.000\nNo means no.\n\n"
        b"00:00:03.000 --> 00:00:04.000\nno means no\n\n"
        b"00:00:04.000 --> 00:00:05.000\n\n"
        b"00:00:05.000 --> 00:00:06.000\nThank you.\n"
    )
    expected = [
        seg(1000, 2000, "We said no."),
        seg(2000, 3000, "No means no."),
        seg(3000, 4000, "no means no"),
        seg(5000, 6000, "Thank you."),
    ]
    for auto_generated in (False, None):
        track = parse(body, auto_generated=auto_generated)
        assert track.segments == expected, f"case {auto_generated}"
        assert track.text == "We said no. No means no. no means no Thank you.", f"case {auto_generated}"


def test_a_generated_track_that_does_not_roll_keeps_a_word_said_again_at_a_cue_start() -> None:
    # The site says the track is generated, but no cue repeats the one before it: the "no" that starts
    # the second and third cues was said again, not shown again.
    body = (
        b"WEBVTT\n\n"
        b"00:00:01.000 --> 00:00:02.000\nWe said no\n\n"
        b"00:00:02.000 --> 00:00:03.000\nno one came\n\n"
        b"00:00:03.000 --> 00:00:04.000\ncame back later\n\n"
        b"00:00:04.000 --> 00:00:05.000\nThank you.\n"
    )
    track = parse(body, auto_generated=True)
    assert track.text == "We said no no one came came back later Thank you."
    assert [s["start_ms"] for s in track.segments] == [1000, 2000, 3000, 4000]


def test_a_human_rolling_looking_track_marked_human_is_kept_as_cued() -> None:
    track = parse(ROLLING.encode(), auto_generated=False)
    assert len(track.segments) == 7
    assert track.segments[1] == seg(2310, 2320, "so this is very")


SPOKEN = """WEBVTT

00:00:01.000 --> 00:00:03.000
I am Jane Doe from Example Labs,

00:00:03.000 --> 00:00:04.000
I am Jane Doe from Example Labs,
write to jane dot doe at

00:00:04.000 --> 00:00:04.010
write to jane dot doe at

00:00:04.010 --> 00:00:06.000
write to jane dot doe at
example dot com or to j.doe@example.org

00:00:06.000 --> 00:00:08.000
example dot com or to j.doe@example.org
or call +44 20 7946 0958 or (555) 123-4567

00:00:08.000 --> 00:00:10.000
or call +44 20 7946 0958 or (555) 123-4567
or 555-123-4567 since 2023 at 3.14 past 00:01:02
"""


def test_spoken_personal_data_is_redacted_names_stay() -> None:
    track = parse(SPOKEN.encode(), auto_generated=True)
    assert track.segments == [
        seg(1000, 3000, "I am Jane Doe from Example Labs,"),
        seg(3000, 4000, "write to [email removed]"),
        seg(4010, 6000, "or to [email removed]"),
        seg(6000, 8000, "or call [phone removed] or [phone removed]"),
        seg(8000, 10000, "or [phone removed] since 2023 at 3.14 past 00:01:02"),
    ]
    assert track.text == (
        "I am Jane Doe from Example Labs, write to [email removed] or to [email removed] or call"
        " [phone removed] or [phone removed] or [phone removed] since 2023 at 3.14 past 00:01:02"
    )
    assert track.redactions == 5


def _cues(*texts: str) -> bytes:
    """A WebVTT file of one-second cues with these texts."""
    blocks = [f"00:00:{i:02d}.000 --> 00:00:{i + 1:02d}.000\n{text}" for i, text in enumerate(texts)]
    return ("WEBVTT\n\n" + "\n\n".join(blocks) + "\n").encode()


# An address written across two cues, broken anywhere: each cue alone holds none, joined they hold one
# only if read without the joining space.
SPLIT_ADDRESSES = [
    (("write to jane.doe@", "example.com for slides"), ["write to [email removed]", "for slides"]),
    (("or to john.smith", "@example.org thanks"), ["or to [email removed]", "thanks"]),
    (("mail jane.doe@exam", "ple.com now"), ["mail [email removed]", "now"]),
    (("mail jane.doe@example.", "co.uk now"), ["mail [email removed]", "now"]),
    (("mail jane.doe[at]", "example.com now"), ["mail [email removed]", "now"]),
    (("mail jane.doe", "(at)example.com now"), ["mail [email removed]", "now"]),
    (("mail jane.doe\uff20", "example.com now"), ["mail [email removed]", "now"]),
]
# Cues that join into no broken address: an address whole in one cue, with a word on the other side of
# the boundary, stays as it was redacted; a handle and a spoken "at" are no written address.
NOT_SPLIT = [
    (("to j.doe@example.org", "or call"), ["to [email removed]", "or call"]),
    (("please mail", "jane@example.org today"), ["please mail", "[email removed] today"]),
    (("follow @acl2025", "and us"), ["follow @acl2025", "and us"]),
    (("we met at", "example.com"), ["we met at", "example.com"]),
]


@pytest.mark.parametrize(("texts", "redacted"), SPLIT_ADDRESSES + NOT_SPLIT)
def test_an_address_written_across_two_cues_is_redacted_whole(
    texts: tuple[str, ...], redacted: list[str]
) -> None:
    track = parse(_cues(*texts))
    assert [s["text"] for s in track.segments] == redacted, texts
    assert track.text == " ".join(redacted), texts
    assert track.redactions == sum("[email removed]" in text for text in redacted), texts


HOSTILE_CUE_TEXTS = {
    "dashes": "-" * 200_000,
    "digits": "1" * 200_000,
    "digits and colons": "1:" * 100_000,
    "open tags": "<a" * 100_000,
    "entities": "&amp;" * 40_000,
    "spoken dots": "a dot " * 33_000,
    "at signs": "a@" * 100_000,
    "override blocks": "{\\" * 100_000,
}


def test_hostile_cue_text_is_read_in_linear_time() -> None:
    for name, text in HOSTILE_CUE_TEXTS.items():
        body = f"WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n{text}\n".encode()
        started = time.process_time()
        track = parse(body, auto_generated=None)
        spent = time.process_time() - started
        assert track.problem is None, f"case {name}"
        assert spent < 3.0, f"case {name}: {spent:.1f} s"
