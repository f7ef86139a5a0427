"""Links of a lecture page: a plain site-relative link is resolved without urljoin, to the same URL."""

from __future__ import annotations

from urllib.parse import urljoin

from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.pages.links import absolute, lecture_links, origin, resolve
from crawler.text.blocks import parse_html

BASES = [
    "http://127.0.0.1:18555/lecture/1-x",
    "https://underline.io/events/1/sessions/2/lecture/3-y?tab=abstract#top",
    "HTTPS://Underline.IO/lecture/1",
    "https://user:pw@underline.io:8443/a/b/",
    "http://[::1]:8080/lecture/1",
    "https://underline.io",
    "http:///lecture/1",
    "mailto:someone",
    "/lecture/1",
    "http://[bad/lecture/1",
]

HREFS = [
    "/lecture/130412-router-tuning",
    "/lecture/130412",
    "/lecture/130412/",
    "/events/502/posters/7006/poster/131619-cure?tab=abstract",
    "/lecture/1-x?a=1&b=2.5",
    "/lecture/5-%E4%B8%AD",
    "/lecture/1-x?",
    "/lecture/1-x#part",
    "/lecture/1-x;params",
    "/lecture//1-x",
    "/lecture/./1-x",
    "/lecture/../lecture/1-x",
    "/lecture/1.5-x",
    "//other.example/lecture/1-x",
    " /lecture/1-x ",
    "/lecture/1-x\n",
    "/lec\tture/1-x",
    "lecture/1-x",
    "../lecture/1-x",
    "?tab=x",
    "#top",
    "https://other.example/lecture/1-x",
    "javascript:alert(1)",
    "/lecture/6-\u4e2d",
    "",
    "  ",
]


def test_origin_is_what_urljoin_keeps_of_an_http_base() -> None:
    expected = {
        BASES[0]: "http://127.0.0.1:18555",
        BASES[1]: "https://underline.io",
        BASES[2]: "https://Underline.IO",
        BASES[3]: "https://user:pw@underline.io:8443",
        BASES[4]: "http://[::1]:8080",
        BASES[5]: "https://underline.io",
    }
    for base in BASES:
        assert origin(base) == expected.get(base), f"case {base}"


def test_a_link_resolves_as_urljoin_resolves_it() -> None:
    # Every pair, the plain paths taken without urljoin and every other link (dot and empty segments,
    # an empty query, a fragment, parameters, whitespace, another host or scheme) by urljoin.
    for base in BASES:
        for href in HREFS:
            assert resolve(base, origin(base), href) == absolute(base, href), f"case {base!r} {href!r}"
    assert resolve(BASES[0], origin(BASES[0]), None) is None
    assert absolute(BASES[2], "/lecture/1-x") == "https://Underline.IO/lecture/1-x"
    assert absolute(BASES[0], "/lecture/a/../1-x") == "http://127.0.0.1:18555/lecture/1-x"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="/.?#;%&=+~-_aZ09 \t", max_size=24), st.sampled_from(BASES[:6]))
def test_any_link_resolves_as_urljoin_resolves_it(href: str, base: str) -> None:
    expected = urljoin(base, href.strip()) if href.strip() else None
    assert resolve(base, origin(base), href) == expected


def test_the_links_of_a_page_are_those_urljoin_gives() -> None:
    page = "".join(f'<a href="{href}">x</a>' for href in HREFS)
    root = parse_html(f"<html><body>{page}</body></html>")
    assert root is not None
    base = "https://Underline.IO/events/1/sessions/2/lecture/3-y"
    # As the links were resolved by urljoin alone.
    assert lecture_links(root, base, []) == [
        "https://Underline.IO/lecture/130412-router-tuning",
        "https://Underline.IO/lecture/130412",
        "https://Underline.IO/lecture/130412/",
        "https://Underline.IO/events/502/posters/7006/poster/131619-cure?tab=abstract",
        "https://Underline.IO/lecture/1-x?a=1&b=2.5",
        "https://Underline.IO/lecture/5-%E4%B8%AD",
        "https://Underline.IO/lecture/1-x",
        "https://Underline.IO/lecture/1-x#part",
        "https://Underline.IO/lecture/1-x;params",
        "https://Underline.IO/lecture/1-x",
        "https://Underline.IO/lecture/1-x",
        "https://other.example/lecture/1-x",
        "https://Underline.IO/lecture/1-x",
        "https://Underline.IO/lecture/1-x",
        "https://Underline.IO/lecture/1-x",
        "https://Underline.IO/events/1/sessions/2/lecture/1-x",
        "https://Underline.IO/events/1/sessions/2/lecture/3-y?tab=x",
        "https://Underline.IO/events/1/sessions/2/lecture/3-y#top",
        "https://other.example/lecture/1-x",
        "https://Underline.IO/lecture/6-中",
    ]
