from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.text.normalize import (
    collapse_whitespace,
    nfc_collapsed,
    normalize_line,
    normalize_lines,
    normalize_text,
)

INVISIBLE = {"\u00ad", "\u061c", "\u180e", "\u2060", "\ufeff"} | {chr(c) for c in range(0x200B, 0x2010)}
INVISIBLE |= {chr(c) for c in range(0x202A, 0x202F)} | {chr(c) for c in range(0x2066, 0x206A)}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  a\u00a0 b\t\n c  ", "a b c"),
        ("Zero- &amp; Few-Shot", "Zero- & Few-Shot"),
        ("&lt;1% &quot;hard&quot;", '<1% "hard"'),
        ("double &amp;amp; escaped", "double & escaped"),
        ('home to a large share of the NLP community."<br>', 'home to a large share of the NLP community."'),
        ("<br>", ""),
        ("&lt;br&gt;", ""),
        ("&amp;lt;br /&amp;gt;", ""),
        ("line<BR/>break< br >and<br class='x'>more", "line break and more"),
        ("<brain> stays", "<brain> stays"),
        ("Cafe\u0301 re\u0301sume\u0301", "Caf\u00e9 r\u00e9sum\u00e9"),
        ("zero\u200bwidth\u200d join\ufeff", "zerowidth join"),
        ("\u202eevil\u202c \u2066iso\u2069 \u200emark", "evil iso mark"),
        ("ctrl\x00\x07\x1b\x7f\x9fchars", "ctrlchars"),
        ("form\x0cfeed\x0bvt\x85nel\u2028ls", "form feed vt nel ls"),
        ("soft\u00adhyphen", "softhyphen"),
        ("\u3000ideographic\u3000space\u3000", "ideographic space"),
        ("", ""),
        ("   ", ""),
    ],
)
def test_normalize_line_examples(raw: str, expected: str) -> None:
    assert normalize_line(raw) == expected


def test_normalize_line_keeps_plain_text_exactly() -> None:
    title = "Think Wider, Detect Sharper: Reinforced Reference Coverage for Document-Level Self-Contradiction"
    assert normalize_line(title) == title
    assert normalize_line("LLM’s gender–profession output — 30–75% (MLMs)") == (
        "LLM’s gender–profession output — 30–75% (MLMs)"
    )


def test_normalize_text_keeps_paragraphs() -> None:
    raw = "First  line\nsame paragraph\n\n\n \t \n<br>\n\r\n\r\nSecond &amp; last\r\n"
    assert normalize_text(raw) == "First line same paragraph\n\nSecond & last"
    assert normalize_text("\n\n  \n") == ""
    assert normalize_text("one") == "one"


def test_welcome_markdown_lines() -> None:
    welcome = (
        "## Welcome!\n"
        '"I am excited to welcome you." \n\n'
        "*Message from the General Chair, Dirk Hovy*\n\n\n\n\n\n<br>\n\n"
        "Celebrate 30 Years of EMNLP! \n"
        "EMNLP 2025 will be held in Suzhou, China from November 5th to November 9th, 2025."
    )
    assert normalize_text(welcome) == (
        '## Welcome! "I am excited to welcome you."\n\n'
        "*Message from the General Chair, Dirk Hovy*\n\n"
        "Celebrate 30 Years of EMNLP! EMNLP 2025 will be held in Suzhou, China from November 5th to"
        " November 9th, 2025."
    )


def test_title_form() -> None:
    assert nfc_collapsed("  A\u0301  title\n") == "\u00c1 title"
    assert nfc_collapsed("keeps &amp; and <br>") == "keeps &amp; and <br>"
    assert collapse_whitespace(" a \n\t b ") == "a b"


text_strategy = st.lists(
    st.one_of(
        st.characters(),
        st.sampled_from(["&", "amp;", "&amp;", "&lt;", "br", "<br>", "&#8203;", "&#10;", "\n", "\n\n", " "]),
        st.sampled_from([*sorted(INVISIBLE), "e", "\u0301", "\u0327", "\u00a0", ";", "<", ">", "#"]),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(text_strategy)
def test_normalize_line_properties(raw: str) -> None:
    once = normalize_line(raw)
    assert normalize_line(once) == once
    assert unicodedata.is_normalized("NFC", once)
    assert not any(unicodedata.category(c) in ("Cc", "Cs") for c in once)
    assert not INVISIBLE & set(once)
    assert once == once.strip()
    assert "  " not in once


@settings(max_examples=300, deadline=None)
@given(text_strategy)
def test_normalize_text_properties(raw: str) -> None:
    once = normalize_text(raw)
    assert normalize_text(once) == once
    assert unicodedata.is_normalized("NFC", once)
    paragraphs = once.split("\n\n") if once else []
    assert all(p and p == normalize_line(p) and "\n" not in p for p in paragraphs)


def test_normalize_lines_is_normalize_line_of_each_without_the_empty_ones() -> None:
    long = "A long &amp; block\u200b of text, " * 100  # past the lines remembered
    texts = ["  Downloads ", "<br>", "", "Caf\u0065\u0301 &lt;b&gt;", long, "\u200b", long]
    expected = [normalize_line(t) for t in texts if normalize_line(t)]
    assert normalize_lines(texts) == expected
    assert expected[0] == "Downloads" and expected[2] == normalize_line(long) == expected[3]
    assert normalize_lines([]) == []
