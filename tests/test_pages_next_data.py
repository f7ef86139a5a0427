"""Finding the ``__NEXT_DATA__`` script in a page's raw text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crawler.pages.next_data import decode_json, next_data_span

PAGES = Path(__file__).resolve().parent / "fixtures" / "pages"
# The definition in one expression: the first opening tag whose id is __NEXT_DATA__ (any case, quoted
# or not), up to the first closing tag after it.
ONE_EXPRESSION = re.compile(
    r"""<script\b[^>]*\bid\s*=\s*["']?__NEXT_DATA__["']?[^>]*>(.*?)</script\s*>""", re.IGNORECASE | re.DOTALL
)

CASES = [
    '<html><script id="__NEXT_DATA__" type="application/json">{"a":1}</script></html>',
    "<script type=application/json id=__NEXT_DATA__>{}</SCRIPT >",
    '<script src="x.js"></script><p>__NEXT_DATA__</p><script id="__NEXT_DATA__">[1]</script  >tail',
    '<SCRIPT ID = "__next_data__">{"b":2}</script><script id="__NEXT_DATA__">{"c":3}</script>',
    '<script id="__NEXT_DATA__">{"cut short": true',
    '<script id="__NEXT_DATA__"></script>',
    '<script id="__NEXT_DATA__X">{}</script>',
    '<script data-id="__NEXT_DATA__">{}</script><script id="__NEXT_DATA__">{"d":4}</script>',
    "no script at all, only the words __NEXT_DATA__ and </script>",
    '<script id="__NEXT_DATA__">{"s":"<\\/script>"}</script>',
]


def expected(text: str) -> tuple[int, int] | None:
    if "__NEXT_DATA__" not in text:
        return None
    found = ONE_EXPRESSION.search(text)
    return (found.start(1), found.end(1)) if found else None


@pytest.mark.parametrize("text", CASES)
def test_the_span_is_the_one_expression_s_match(text: str) -> None:
    assert next_data_span(text) == expected(text)


def test_the_span_of_real_pages() -> None:
    pages = sorted(PAGES.glob("*.html"))
    assert pages
    for page in pages:
        text = page.read_text(encoding="utf-8", errors="surrogateescape")
        span = next_data_span(text)
        assert span == expected(text), page.name


def test_known_spans() -> None:
    first = CASES[0].index('{"a"')
    assert next_data_span(CASES[0]) == (first, first + len('{"a":1}'))
    # The lower-case id comes first: the script matched is that one.
    second = CASES[3].index('{"b"')
    assert next_data_span(CASES[3]) == (second, second + len('{"b":2}'))
    assert next_data_span(CASES[4]) is None


def test_the_size_limit_counts_utf8_bytes() -> None:
    # A text short enough in characters is within the limit whatever they are; any other is measured in
    # UTF-8 (lone surrogates as they would be written).
    cases = [
        ('"\U0001f600"', 12, "\U0001f600"),
        ('"\U0001f600"', 6, "\U0001f600"),
        ('"\U0001f600"', 5, None),
        ('"' + "\U0001f600" * 6 + '"', 26, "\U0001f600" * 6),
        ('"' + "\U0001f600" * 6 + '"', 25, None),
        ('"\u00e9\u00e9"', 6, "\u00e9\u00e9"),
        ('"\u00e9\u00e9"', 5, None),
        ('"\ud800"', 5, "\ud800"),
        ('"\ud800"', 4, None),
        ('"ab"', 4, "ab"),
        ('"ab"', 3, None),
    ]
    for text, limit, value in cases:
        decoded, why = decode_json(text, limit)
        if value is None:
            assert (decoded, why) == (None, f"__NEXT_DATA__ larger than {limit} bytes"), (
                f"case {text!r} {limit}"
            )
        else:
            assert (decoded, why) == (value, None), f"case {text!r} {limit}"
    assert decode_json("x" * 50, None) == (
        None,
        "__NEXT_DATA__ is not JSON: Expecting value: line 1 column 1 (char 0)",
    )


def test_html_escaped_json_is_read_when_the_text_is_not_json() -> None:
    cases = {
        "json": ('{"a": "&quot;"}', ({"a": "&quot;"}, None)),
        "escaped": ("{&quot;a&quot;: 1}", ({"a": 1}, None)),
        "escaped, still not json": (
            "{&quot;a&quot;: }",
            (None, "__NEXT_DATA__ is not JSON: Expecting value: line 1 column 7 (char 6)"),
        ),
        "not json": (
            "{a: 1}",
            (
                None,
                "__NEXT_DATA__ is not JSON: Expecting property name enclosed in double quotes: "
                "line 1 column 2 (char 1)",
            ),
        ),
        "empty": ("  ", (None, "__NEXT_DATA__ is empty")),
    }
    for case, (text, expected_result) in cases.items():
        assert decode_json(text) == expected_result, f"case {case}"
