"""Finding the ``__NEXT_DATA__`` script in a page's raw text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crawler.pages.next_data import next_data_span

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
