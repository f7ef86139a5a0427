"""Generated pages and JSON through the parser and the cleaning steps: no unhandled exception, and no
record carries text that is not on the page."""

from __future__ import annotations

import contextlib
import functools
import html as html_lib
import json
import re
import unicodedata
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scrapy.crawler import Crawler

from crawler.items import LectureItem
from crawler.pages import LecturePage, PageParseError, parse_lecture_list, parse_lecture_page
from crawler.pages.fields import ITEM_FIELD_NAMES
from crawler.pipelines.boilerplate import BoilerplatePipeline
from crawler.pipelines.normalize import NormalizePipeline
from crawler.pipelines.privacy import PrivacyPipeline
from crawler.privacy.emails import contains_email
from crawler.schema import TEXT_BLOCK_FIELDS
from crawler.text.blocks import parse_page
from crawler.text.boilerplate import own_content_blocks
from crawler.text.normalize import collapse_whitespace, normalize_line, normalize_text, without_surrogates
from tests.support.settings import project_crawler
from tests.test_pages_underline import EXPECTED, fixture, html_pieces, json_values, next_data, urls

SEED_PAGE = fixture("seed001_skeleton")
SEED_URL = EXPECTED["seed001"]["skeleton_url"]
STRING_FIELDS = ("title", "abstract", "presentation_type", "event_name", "session_name", "doi", "slug")

hostile_snippets = st.sampled_from(
    [
        "<div>" * 300, "</div>" * 50, "<script>", "</script>", "<!--", "-->", "<![CDATA[", "]]>",
        '<script id="__NEXT_DATA__" type="application/json">', "{", "[" * 2000, '"', "\\", "\ufeff",
        "\u202e", "\u200b", "\ud800", "\x00", "\x07", "&#0;", "&#xD800;", "&#x110000;", "&amp;amp;lt;br&gt;",
        "<br>", "<p hidden>secret</p>", "<template><p>inside</p></template>", '<base href="//evil.example/">',
        '<a href="javascript:alert(1)//lecture/1">x</a>', '<a href="//evil.example/lecture/3-x">x</a>',
        "jane.doe@example.org", "x [at] y [dot] org", "<title>", "</title>", '<meta charset="utf-16">',
        '<meta name="description" content="', "</html>", "<html>", "<body>", "<table><tr><td>",
    ]
)  # fmt: skip


@st.composite
def mutated_seed_pages(draw: st.DrawFn) -> str:
    """The real seed page cut, with hostile snippets put in at drawn places."""
    page = SEED_PAGE
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(page)))
        page = page[:at] + draw(st.one_of(hostile_snippets, st.text(max_size=20))) + page[at:]
    if draw(st.booleans()):
        page = page[: draw(st.integers(0, len(page)))]
    return page


@st.composite
def encoded(draw: st.DrawFn, pages: st.SearchStrategy[str]) -> tuple[bytes | str, str | None]:
    page = draw(pages)
    encoding = draw(st.sampled_from([None, "utf-8", "latin-1", "cp1252", "utf-16", "x-bogus", "ascii"]))
    as_bytes = draw(st.sampled_from(["utf-8", "utf-16", "cp1252", None]))
    if as_bytes is None:
        return page, encoding
    body = page.encode(as_bytes, "surrogatepass" if as_bytes.startswith("utf") else "replace")
    if draw(st.booleans()):
        body = draw(st.binary(max_size=8)) + body + draw(st.binary(max_size=8))
    return body, encoding


def page_sources(raw: bytes | str, encoding: str | None, url: str) -> str:
    """Everything the page holds as text: its text nodes, attribute values and __NEXT_DATA__ strings,
    and the URL it was fetched at (a slug may come from there)."""
    parsed = parse_page(raw, encoding)
    parts = [url, parsed.text]
    if parsed.root is not None:
        parts.append(parsed.root.text_content())
        for element in parsed.root.iter():
            parts.extend(str(v) for v in element.attrib.values())
            if element.text:
                parts.append(element.text)
    # The parser drops characters libxml2 cannot take before it reads the page: so does this.
    found = [c for text in (parsed.text, _CONTROL.sub("", parsed.text)) for c in _json_candidates(text)]
    if parsed.root is not None:
        for script in parsed.root.iter("script"):
            for variant in (script.text or "", html_lib.unescape(script.text or "")):
                with contextlib.suppress(ValueError, RecursionError):
                    found.append(json.loads(variant))
    for candidate in found:
        parts.extend(_strings(candidate))
    return collapse_whitespace(without_surrogates("\n".join(parts)))


_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _json_candidates(text: str) -> list[Any]:
    found = []
    start = 0
    while True:
        at = text.find("__NEXT_DATA__", start)
        if at < 0:
            return found
        body_start = text.find(">", at) + 1
        body_end = text.find("</script", body_start)
        chunk = text[body_start : body_end if body_end >= 0 else len(text)]
        for variant in (chunk, html_lib.unescape(chunk)):
            with contextlib.suppress(ValueError, RecursionError):
                found.append(json.loads(variant))
        start = at + 1


def _strings(value: Any) -> list[str]:
    out: list[str] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, dict):
            stack.extend(node.values())
            out.extend(k for k in node if isinstance(k, str))
        elif isinstance(node, list):
            stack.extend(node)
    return out


def check_from_the_page(page: LecturePage, sources: str) -> None:
    assert page.extraction in ("next_data", "visible_text")
    fields = page.fields
    if fields is None:
        return
    assert fields.lecture_id.isdigit()
    assert all(isinstance(i, str) for i in fields.related_lecture_ids)
    assert fields.lecture_id not in fields.related_lecture_ids
    values = [getattr(fields, name) for name in STRING_FIELDS]
    values += list(fields.keywords)
    for value in values:
        if value is None:
            continue
        assert isinstance(value, str), f"{value=}"
        assert without_surrogates(value) == value, f"{value=}"
        assert collapse_whitespace(value) in sources, value[:80]
    for url in page.lecture_links:
        assert url.startswith(("http://", "https://")), f"{url=}"


@functools.cache
def pipeline_crawler() -> Crawler:
    """The crawler the cleaning steps are built from, built once: the steps take only its settings and
    its stats (which no check here reads), and building it costs more than the example it cleans."""
    return project_crawler(settings_dict={"STAGE_STATE_DIR": "", "NORMALIZE_LATEX": False})


def run_pipelines(page: LecturePage, url: str) -> dict[str, Any]:
    crawler = pipeline_crawler()
    steps = [NormalizePipeline, PrivacyPipeline, BoilerplatePipeline]
    assert page.fields is not None
    # As the spider does: fields the item does not have yet are left out.
    parsed = page.fields.parsed_record()
    fields = {k: getattr(parsed, k) for k in ITEM_FIELD_NAMES}
    fields["is_premium"] = bool(fields["is_premium"])
    item = LectureItem(**fields, url=url, extraction=page.extraction)
    item.page_blocks = list(page.blocks)
    for step in steps:
        item = step.from_crawler(crawler).process_item(item)
    return {**item.record(), "page_blocks": item.page_blocks}


def check_text(page: LecturePage, item: dict[str, Any]) -> None:
    assert item["page_blocks"] == []
    for name, value in item.items():
        for text in value if isinstance(value, list) else [value]:
            assert not (isinstance(text, str) and contains_email(text)), name
    blocks = {normalize_line(b) for b in page.blocks}
    assert page.fields is not None
    own_values: list[Any] = []
    for name in TEXT_BLOCK_FIELDS:
        value = getattr(page.fields, name)
        own_values += value if isinstance(value, list) else [value]
    fields = {normalize_line(v) for v in own_values if isinstance(v, str)}
    allowed = {normalize_line(x) for x in blocks | fields}
    for paragraph in filter(None, item["text"].split("\n\n")):
        # A paragraph is one of the page's blocks or one of the lecture's own values, scrubbed.
        assert contains_email(paragraph) is False, f"{paragraph=}"
        assert paragraph in allowed or any(
            _same_but_scrubbed(paragraph, candidate) for candidate in allowed
        ), paragraph[:80]


def _same_but_scrubbed(paragraph: str, candidate: str) -> bool:
    from crawler.privacy.emails import scrub_emails

    return scrub_emails(candidate)[0] == paragraph


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=encoded(mutated_seed_pages()), url=st.sampled_from([SEED_URL, SEED_URL + "?tab=video", "http://h/x"])
)
def test_mutated_real_pages(body: tuple[bytes | str, str | None], url: str) -> None:
    raw, encoding = body
    try:
        page = parse_lecture_page(raw, url, encoding=encoding)
    except PageParseError:
        return
    check_from_the_page(page, page_sources(raw, encoding, url))
    if page.fields is not None:
        check_text(page, run_pipelines(page, url))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=next_data, before=html_pieces, after=html_pieces, url=urls, escape=st.booleans())
def test_generated_next_data(data: Any, before: str, after: str, url: str, escape: bool) -> None:
    payload = json.dumps(data).replace("<", "\\u003c")
    if escape:
        payload = payload.replace('"', "&quot;")
    raw = f"{before}<script id='__NEXT_DATA__'>{payload}</script>{after}"
    try:
        page = parse_lecture_page(raw, url)
    except PageParseError:
        return
    check_from_the_page(page, page_sources(raw, None, url))
    if page.fields is not None:
        check_text(page, run_pipelines(page, "http://h/lecture/" + page.fields.lecture_id))


@settings(max_examples=300, deadline=None)
@given(raw=st.one_of(st.binary(max_size=400), st.text(max_size=400), html_pieces), url=urls)
def test_arbitrary_input(raw: str | bytes, url: str) -> None:
    try:
        page = parse_lecture_page(raw, url)
    except PageParseError:
        return
    check_from_the_page(page, page_sources(raw, None, url))


@settings(max_examples=200, deadline=None)
@given(doc=json_values)
def test_arbitrary_api_answers(doc: Any) -> None:
    listing = parse_lecture_list(doc)
    assert listing.total_pages is None or 0 <= listing.total_pages <= 1_000_000
    assert all(r.lecture_id.isdigit() for r in listing.records)


@settings(max_examples=500, deadline=None)
@given(text=st.text(max_size=300))
def test_cleaning_is_idempotent_and_leaves_nothing_invisible(text: str) -> None:
    line = normalize_line(text)
    assert normalize_line(line) == line
    assert line == line.strip()
    for char in line:
        category = unicodedata.category(char)
        assert category not in ("Cc", "Cs"), repr(char)
        assert (
            char not in "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
        ), f"{char=}"
    paragraphs = normalize_text(text)
    assert normalize_text(paragraphs) == paragraphs


@settings(max_examples=300, deadline=None)
@given(blocks=st.lists(st.text(max_size=30), max_size=30), fields=st.dictionaries(
    st.sampled_from(TEXT_BLOCK_FIELDS),
    st.one_of(st.text(max_size=30), st.lists(st.text(max_size=10), max_size=4), json_values),
))  # fmt: skip
def test_own_content_is_always_page_blocks(blocks: list[str], fields: dict[str, Any]) -> None:
    own = own_content_blocks(blocks, fields)
    normalized = [normalize_line(b) for b in blocks]
    assert all(b in normalized for b in own)
