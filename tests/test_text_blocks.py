from __future__ import annotations

import json
from pathlib import Path

import lxml.html

from crawler.text.blocks import (
    parse_html,
    parse_page,
    parseable_utf8,
    split_blocks,
    visible_blocks,
)

FIXTURES = Path(__file__).parent / "fixtures" / "pages"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))


def test_skeleton_blocks() -> None:
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>T | Underline</title>'
        '<meta name="description" content="An abstract."></head>'
        '<body><div id="__next"><header><div>China</div></header><main>'
        "<section><p>An  abstract\n with &amp; entities.</p><div>EMNLP 2025</div><h1>T</h1>"
        "<ul><li>kw one</li><li>kw two</li></ul><span>poster</span></section>"
        "<section><div><p>## Welcome!</p><p>&lt;br&gt;</p></div></section>"
        '<section><a href="/lecture/1-x"><p>Other abstract.</p><h3>Other title</h3></a></section>'
        '<div>Downloads</div><div>Next from EMNLP 2025</div><a href="/lecture/2-y">Next title</a>'
        "</main><footer><p>Stay up to date with the latest Underline news!</p><div>COMPANY</div>"
        "</footer></div>"
        '<script id="__NEXT_DATA__" type="application/json">{"props": {}}</script></body></html>'
    )
    assert visible_blocks(page) == [
        "China",
        "An abstract with & entities.",
        "EMNLP 2025",
        "T",
        "kw one",
        "kw two",
        "poster",
        "## Welcome!",
        "<br>",
        "Other abstract.",
        "Other title",
        "Downloads",
        "Next from EMNLP 2025",
        "Next title",
        "Stay up to date with the latest Underline news!",
        "COMPANY",
    ]


def test_inline_elements_join_and_boundaries_split() -> None:
    page = (
        "<div>one <b>bold</b><i>italic</i> <a href='#'>link</a>\u00a0end<br>after break<br/>"
        "<span>span</span><p>para</p>tail of div</div>"
        "<a href='/x'><div>block in link</div>text in link</a>after link"
        "<table><tr><td>cell 1</td><td>cell 2</td></tr></table>"
    )
    assert visible_blocks(page) == [
        "one bolditalic link end",
        "after break",
        "span",
        "para",
        "tail of div",
        "block in link",
        "text in linkafter link",
        "cell 1",
        "cell 2",
    ]


def test_hidden_content_is_skipped() -> None:
    page = (
        "<html><head><title>head title</title><style>p {}</style></head><body>"
        "<p>a<!-- comment -->b<?pi x?>c</p><script>var x = '<p>no</p>';</script><noscript>no js</noscript>"
        "<template><p>tpl</p></template><div hidden>hidden div</div>after hidden"
        "<style>.x{}</style><p>last</p></body></html>"
    )
    assert visible_blocks(page) == ["abc", "after hidden", "last"]


def test_decoding() -> None:
    assert visible_blocks(b"<meta charset='latin-1'><p>caf\xe9</p>") == ["caf\u00e9"]
    assert visible_blocks(b"<p>caf\xe9</p>", encoding="cp1252") == ["caf\u00e9"]
    assert visible_blocks(b"<p>caf\xc3\xa9 \xff\xfe bad</p>") == ["caf\u00e9 \ufffd\ufffd bad"]
    assert visible_blocks(b"<p>caf\xc3\xa9</p>", encoding="no-such-codec") == ["caf\u00e9"]
    assert parse_page("already text").text == "already text"


def test_degenerate_input() -> None:
    assert visible_blocks("") == []
    assert visible_blocks(b"") == []
    assert visible_blocks(" \n\t") == []
    assert parse_html("") is None
    assert visible_blocks("plain text, no tags") == ["plain text, no tags"]
    assert visible_blocks("<p>nul\x00 and ctrl\x01\x0c chars \ud800</p>") == ["nul and ctrl chars"]
    assert visible_blocks('<?xml version="1.0" encoding="latin-1"?><p>x</p>') == ["x"]
    assert visible_blocks("<<<>>><p") == ["<<<>>>"]
    nested = "<div>" * 200 + "deep" + "</div>" * 200 + "<p>after</p>"
    assert visible_blocks(nested) == ["deep", "after"]
    # libxml2 stops building the tree past its depth limit (256); what it built is still read.
    assert visible_blocks("<div>" * 20000 + "deep" + "</div>" * 20000) == []


def test_parsed_tree_is_accepted() -> None:
    root = parse_html("<p>x</p><p>y</p>")
    assert root is not None
    assert visible_blocks(root) == ["x", "y"]


def test_seed_fixture_blocks() -> None:
    html = (FIXTURES / "seed002_skeleton.html").read_bytes()
    blocks = visible_blocks(html)
    seed = EXPECTED["seed002"]
    assert blocks[:5] == ["China", *seed["own_blocks"]]
    assert blocks[5:13] == [
        "## Welcome!",
        '"I am excited to welcome you to this year’s edition of the Conference on Empirical Methods'
        " in Natural Language Processing! Importantly, it marks the 30th edition of EMNLP. With over 8,000"
        " submissions, more than 3,000 accepted papers, and thousands of attendees, we have come a long way"
        " from that first",
        "workshop, which had 14 accepted papers. As the field looks ahead, Suzhou is the fitting location"
        " for celebrating this milestone: rooted in a long literary tradition, yet modern and"
        ' forward-looking, and home to a large share of the NLP community."<br>',
        "*Message from the General Chair, Dirk Hovy*",
        "[**Link to Conference Handbook**](https://drive.google.com/file/d/1johU5QqVVYO4RfH7QcIORr7qrVBdzdwC/"
        "view?usp=sharing)",
        "<br>",
        "Celebrate 30 Years of EMNLP!",
        "EMNLP 2025 will be held in Suzhou, China from November 5th to November 9th, 2025.",
    ]
    assert blocks[-10:] == [
        "Med-PRM: Medical Reasoning Models with Stepwise, Guideline-verified Process Rewards",
        "Premium content",
        "Downloads",
        "Next from EMNLP 2025",
        "SEA: Supervised Embedding Alignment for Token-Level Visual-Textual Integration in MLLMs",
        "Stay up to date with the latest Underline news!",
        "PRESENTATIONS",
        "CONFERENCES",
        "COMPANY",
        "RESOURCES",
    ]
    assert len(blocks) == 5 + 8 + 2 * 10 + 9


# Each character libxml2 cannot take, as a page may send it: whitespace ones read as a space, the
# others as nothing. A page without any is parsed from its own UTF-8 bytes, unchanged.
UNPARSEABLE_CASES = {
    "NUL": ("a\x00b", "ab"),
    "C0 control": ("a\x01b\x08c", "abc"),
    "vertical tab": ("a\x0bb", "a b"),
    "form feed": ("a\x0cb", "a b"),
    "separator": ("a\x1cb\x1fc", "a b c"),
    "escape": ("a\x1bb", "ab"),
    "lone surrogate": ("a\ud800b\udfffc", "abc"),
    "non-character FFFE": ("a\ufffeb", "ab"),
    "non-character FFFF": ("a\uffffb", "ab"),
}


def test_unparseable_characters_are_dropped_and_clean_text_is_kept() -> None:
    for case, (given, shown) in UNPARSEABLE_CASES.items():
        page = f"<p>{given}</p><p>caf\u00e9 \u4e2d\u6587 \U0001f600</p>"
        assert visible_blocks(page) == [shown, "caf\u00e9 \u4e2d\u6587 \U0001f600"], f"case {case}"
        if case != "lone surrogate":  # UTF-8 cannot carry one
            sent = page.encode("utf-8")
            assert visible_blocks(sent) == [shown, "caf\u00e9 \u4e2d\u6587 \U0001f600"], f"case {case}"
    clean = "<p>caf\u00e9 \u4e2d\u6587 \U0001f600 \t tab</p>"
    assert parseable_utf8(clean) == (clean, clean.encode("utf-8"))
    assert parseable_utf8(clean, clean.encode("utf-8")) == (clean, clean.encode("utf-8"))
    assert parseable_utf8("a\x0bb\x01\ud800c", None) == ("a bc", b"a bc")
    assert parseable_utf8("a\ufffeb", "a\ufffeb".encode()) == ("ab", b"ab")
    assert parseable_utf8("a\x01b", b"a\x01b") == ("ab", b"ab")
    assert parseable_utf8("") == ("", b"")


def test_the_page_bytes_are_read_as_their_encoding_says() -> None:
    # A byte order mark is not text; a U+FFFD the page itself holds is no decoding problem; bytes that
    # another encoding's decoder replaces without a U+FFFD (gb18030's 0x80) still are.
    cases = {
        "utf-8": (b"<p>caf\xc3\xa9</p>", ["caf\u00e9"], []),
        "utf-8 with a bom": (b"\xef\xbb\xbf<p>caf\xc3\xa9</p>", ["caf\u00e9"], []),
        "utf-8 holding U+FFFD": (b"<p>a\xef\xbf\xbdb</p>", ["a\ufffdb"], []),
        "bad utf-8": (
            b"<p>a\xffb</p>",
            ["a\ufffdb"],
            ["the page is not valid utf-8: undecodable bytes shown as U+FFFD"],
        ),
        "gb18030 0x80": (
            b"<meta charset='gb18030'><p>a\x80b</p>",
            ["a\u20acb"],
            ["the page is not valid gb18030: undecodable bytes shown as U+FFFD"],
        ),
        "latin-1": (b"<meta charset='latin-1'><p>caf\xe9</p>", ["caf\u00e9"], []),
    }
    for case, (data, blocks, problems) in cases.items():
        parsed = parse_page(data)
        assert parsed.problems == problems, f"case {case}"
        assert parsed.root is not None, f"case {case}"
        assert visible_blocks(parsed.root) == blocks, f"case {case}"


def test_blocks_collapse_every_kind_of_whitespace() -> None:
    # Text with nothing to collapse is kept as it is; any other whitespace, doubled spaces and spaces at
    # either end are collapsed as str.split() reads whitespace. Format characters are not whitespace.
    cases = {
        "plain": ("one two", "one two"),
        "doubled space": ("one  two", "one two"),
        "ends": ("  one two ", "one two"),
        "newline and tab": ("one\n\ttwo", "one two"),
        "no-break space": ("one\u00a0two", "one two"),
        "ideographic space": ("\u4e00\u3000\u4e8c", "\u4e00 \u4e8c"),
        "next line": ("one\x85two", "one two"),
        "line separator": ("one\u2028two", "one two"),
        "zero-width space": ("one\u200btwo", "one\u200btwo"),
        "soft hyphen and space": ("one\u00ad  two", "one\u00ad two"),
        "only whitespace": (" \u00a0\u3000 ", None),
    }
    for case, (given, block) in cases.items():
        expected = [block] if block is not None else []
        assert visible_blocks(f"<div><p>{given}</p></div>") == expected, f"case {case}"
        assert split_blocks(f"\x00{given}\x00\x00 \n\x00") == expected, f"case {case}"


def test_pages_parse_to_lxml_html_classes() -> None:
    # The parser's own class lookup gives every node the class lxml.html's lookup gives it.
    page = (
        "<html><body><form><input name=a><select><option>o</option></select><textarea>t</textarea>"
        "<label>l</label></form><!-- c --><?pi x?><p>p</p><div><a href='/x'>a</a></div></body></html>"
    )
    ours = parse_html(page)
    theirs = lxml.html.document_fromstring(page)
    assert ours is not None
    pairs = list(zip(ours.iter(), theirs.iter(), strict=True))
    assert len(pairs) == 13
    for mine, reference in pairs:
        assert type(mine) is type(reference), f"case {reference.tag}"
