"""Broken and hostile pages at the parser: a clear problem or a safe result, never an exception."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from crawler.pages import (
    MAX_LECTURE_LINKS,
    MAX_LINK_LENGTH,
    LectureItem,
    PageParseError,
    parse_lecture_document,
    parse_lecture_list,
    parse_lecture_page,
)
from crawler.pages.fields import ITEM_FIELD_NAMES
from crawler.replica.layout import ReplicaSite, build_site, ground_truth, load_records
from crawler.text.blocks import parse_page
from tests.scenarios import hostile
from tests.test_pages_underline import (
    EXPECTED,
    INCLUDED,
    SEED_PAGES,
    WEB,
    api_lecture,
    fixture,
    with_next_data,
)

SEED = "seed001"
URL = EXPECTED[SEED]["skeleton_url"]
FIELDS = SEED_PAGES[SEED]


def seed_page() -> str:
    return fixture(f"{SEED}_skeleton")


def next_data_payload(page: str) -> str:
    return hostile.split_page(page)[1]


# -- malformed and truncated HTML ----------------------------------------------------------------


def test_malformed_markup_reads_the_same() -> None:
    page = seed_page()
    head, payload, tail = hostile.split_page(page)
    broken = head.replace("</p>", "").replace("</li>", "").replace("</div>", "")
    broken = broken.replace("<main>", "<main></section></span><b><i><table><tr>", 1) + payload + tail
    parsed = parse_lecture_page(broken, URL)
    assert parsed.extraction == "next_data"
    assert parsed.fields == FIELDS
    assert parsed.blocks[1:4] == EXPECTED[SEED]["own_blocks"][:3]


@pytest.mark.parametrize("share", [0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 0.999])
def test_a_truncated_page_never_raises_and_keeps_the_lecture_id(share: float) -> None:
    page = seed_page().encode("utf-8")
    cut = page[: int(len(page) * share)]
    parsed = parse_lecture_page(cut, URL)
    assert parsed.fields is not None
    assert parsed.fields.lecture_id == FIELDS.lecture_id
    if parsed.extraction == "visible_text":
        assert parsed.problems[0] in ("no __NEXT_DATA__ script",) or parsed.problems[0].startswith(
            "__NEXT_DATA__ is not JSON"
        )


def test_a_page_cut_short_loses_its_last_fragment() -> None:
    page = seed_page()
    cut = page[: page.index("## Welcome!") + len("## Welcome!</")]
    parsed = parse_lecture_page(cut, URL)
    assert parsed.blocks[-1] == FIELDS.presentation_type
    assert "the page ends before </html>: cut short, its last block dropped" in parsed.problems


def test_a_truncated_page_without_the_premium_label_leaves_premium_a_gap() -> None:
    page = fixture("seed002_skeleton")
    cut = page[: page.index("Premium content")]
    parsed = parse_lecture_page(cut, EXPECTED["seed002"]["skeleton_url"])
    assert parsed.extraction == "visible_text"
    assert parsed.fields is not None
    assert parsed.fields.parsed_record().values()["is_premium"] is None
    shown = parse_lecture_page(
        page.replace(next_data_payload(page), "{"), EXPECTED["seed002"]["skeleton_url"]
    )
    assert shown.fields is not None and shown.fields.parsed_record().values()["is_premium"] is True


@pytest.mark.parametrize("depth", [300, 2000])
def test_deep_markup_within_the_parser_limit_is_read_whole(depth: int) -> None:
    page = seed_page().replace("<main>", "<main>" + "<div>" * depth + "</div>" * depth, 1)
    parsed = parse_lecture_page(page, URL)
    assert (parsed.extraction, parsed.problems, parsed.fields) == ("next_data", [], FIELDS)


def test_markup_nested_past_the_limit_is_reported_and_the_json_still_read() -> None:
    page = seed_page().replace("<main>", "<main>" + "<div>" * 5000, 1)
    parsed = parse_lecture_page(page, URL)
    assert parsed.extraction == "next_data"
    assert parsed.fields == FIELDS
    assert "the markup nests too deeply: the page's text after that point is lost" in parsed.problems


def test_an_html_document_type_with_entities_expands_nothing() -> None:
    doctype = '<!DOCTYPE html [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    page = doctype + "<title>T</title><p>" + "&b;" * 1000 + "</p>"
    parsed = parse_lecture_page(page, f"{WEB}/lecture/5")
    assert parsed.fields == LectureItem(lecture_id="5", title="T")
    assert sum(len(b) for b in parsed.blocks) < 10_000


# -- __NEXT_DATA__ --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ("{'props': 1}", "__NEXT_DATA__ is not JSON: Expecting property name enclosed in double quotes"),
        ('{"props": NaN', "__NEXT_DATA__ is not JSON: Expecting ',' delimiter: line 1 column 14 (char 13)"),
        ("\x00\x01", "__NEXT_DATA__ is empty"),
        ('{"a": "' + "x" * 6_000_000 + '"}', "__NEXT_DATA__ larger than 5000000 bytes"),
        ('{"a": ' + "[" * 200_000 + "]" * 200_000 + "}", "__NEXT_DATA__ nested too deeply"),
        ('{"a": ' + '{"b": ' * 50_000 + "1" + "}" * 50_001, "__NEXT_DATA__ nested too deeply"),
        ("null", "__NEXT_DATA__ holds no document of this lecture"),
        ('"just a string"', "__NEXT_DATA__ holds no document of this lecture"),
    ],
)
def test_unusable_next_data_falls_back_with_a_clear_problem(payload: str, problem: str) -> None:
    parsed = parse_lecture_page(with_next_data(seed_page(), payload), URL)
    assert parsed.extraction == "visible_text"
    assert parsed.problems[0].startswith(problem)
    assert parsed.fields is not None
    assert (parsed.fields.lecture_id, parsed.fields.title) == (FIELDS.lecture_id, FIELDS.title)


def _wrong(value: Any) -> Any:
    return {str: [1], list: "x", bool: "yes", int: {"n": 1}, type(None): 3.5}.get(type(value), True)


def test_wrong_types_in_every_field_read_as_gaps() -> None:
    tree = json.loads(next_data_payload(seed_page()))
    for doc in tree["props"]["pageProps"]["fallback"].values():
        data = doc["data"]
        if isinstance(data, dict) and data["id"] == FIELDS.lecture_id:
            data["attributes"] = {k: _wrong(v) for k, v in data["attributes"].items()}
            data["relationships"] = {k: [None, 5] for k in data["relationships"]}
            for resource in doc["included"]:
                resource["attributes"] = {k: _wrong(v) for k, v in resource["attributes"].items()}
    parsed = parse_lecture_page(with_next_data(seed_page(), json.dumps(tree)), URL)
    assert parsed.extraction == "next_data"
    assert parsed.fields is not None
    fields = parsed.fields.parsed_record().values()
    assert fields["lecture_id"] == FIELDS.lecture_id
    gaps = {k for k in ITEM_FIELD_NAMES if fields[k] in (None, [])}
    # Every field the parsers fill is a gap, but the id and the related lectures (read from elsewhere).
    assert gaps == set(ITEM_FIELD_NAMES) - {"lecture_id", "related_lecture_ids"}
    # The page shows no premium label and the package is unusable: a gap the API fills, not "free".
    assert parsed.fields.related_lecture_ids == FIELDS.related_lecture_ids
    assert "title is not a string" in parsed.problems
    assert "keywords is not a list" in parsed.problems


def test_lone_surrogates_from_json_escapes_are_dropped() -> None:
    lecture = api_lecture(title="Ro\ud800uter", abstract="\udfffAbs", keywords=["k\ud83d", "ok"])
    payload = json.dumps({"d": {"data": lecture, "included": INCLUDED}})
    parsed = parse_lecture_page(f"<script id='__NEXT_DATA__'>{payload}</script>", f"{WEB}/lecture/130123")
    assert parsed.fields is not None
    assert (parsed.fields.title, parsed.fields.abstract) == ("Router", "Abs")
    assert parsed.fields.keywords == ["k", "ok"]
    assert "title holds lone surrogates (dropped)" in parsed.problems
    assert "keywords hold lone surrogates (dropped)" in parsed.problems
    json.dumps(parsed.fields.parsed_record().values(), default=str, ensure_ascii=False).encode("utf-8")


def test_a_one_megabyte_title_is_read_in_linear_time() -> None:
    title = "A " + "very long title " * 65_536
    lecture = api_lecture(title=title)
    payload = json.dumps({"d": {"data": lecture, "included": INCLUDED}})
    html = f"<title>{title} | Underline</title><h1>{title}</h1><script id='__NEXT_DATA__'>{payload}</script>"
    started = time.process_time()  # CPU time: the suite's other workers share the cores
    parsed = parse_lecture_page(html, f"{WEB}/lecture/130123")
    assert time.process_time() - started < 5
    assert parsed.fields is not None and parsed.fields.title == title
    assert parsed.fields.parsed_record().values()["title"] == " ".join(title.split())


def test_problem_messages_never_carry_an_email_address() -> None:
    lecture = api_lecture(held_at="mail jane.doe@example.org", published_at="x [at] y [dot] org")
    page = parse_lecture_list({"data": [lecture], "meta": {"total_pages": "write to a@b.example.com"}})
    messages = [*page.records[0].problems, *page.problems]
    assert messages == [
        "held_at is not an ISO 8601 timestamp: 'mail [email removed]'",
        "published_at is not an ISO 8601 timestamp: '[email removed]'",
        "meta.total_pages is not a page count: 'write to [email removed]'",
    ]


# -- encodings -----------------------------------------------------------------------------------


NON_ASCII_TITLE = "Caf\u00e9 \u2014 na\u00efve \u201cquotes\u201d \u4e2d\u6587"


def non_ascii_page(meta_charset: str | None = "utf-8") -> str:
    meta = f'<meta charset="{meta_charset}">' if meta_charset else ""
    return (
        f"<html><head>{meta}<title>{NON_ASCII_TITLE} | Underline</title></head><body><h1>x</h1></body></html>"
    )


@pytest.mark.parametrize(
    ("body", "encoding", "problems"),
    [
        # A byte order mark wins over a wrong header and a wrong meta.
        (b"\xef\xbb\xbf" + non_ascii_page("iso-8859-1").encode("utf-8"), "iso-8859-1", []),
        # No charset anywhere: UTF-8, even with an invalid byte elsewhere on the page.
        (
            non_ascii_page(None).encode("utf-8").replace(b"<h1>", b"<p>\xff</p><h1>"),
            None,
            ["not valid utf-8"],
        ),
        # An unknown charset in the header is ignored for the meta.
        (non_ascii_page("utf-8").encode("utf-8"), "x-no-such-charset", []),
        # A declared single-byte charset, with what it cannot hold as character references.
        (non_ascii_page("windows-1252").encode("cp1252", "xmlcharrefreplace"), "windows-1252", []),
        # UTF-16 with its byte order mark.
        (non_ascii_page(None).encode("utf-16"), None, []),
    ],
)
def test_charsets(body: bytes, encoding: str | None, problems: list[str]) -> None:
    parsed = parse_lecture_page(body, f"{WEB}/lecture/9", encoding=encoding)
    assert parsed.fields is not None and parsed.fields.title == NON_ASCII_TITLE
    assert [p for p in parsed.problems if p != "no __NEXT_DATA__ script"] == [
        f"the page is {p}: undecodable bytes shown as U+FFFD" for p in problems
    ]


def test_invalid_utf8_is_replaced_and_reported() -> None:
    body = seed_page().encode("utf-8").replace(b"China", b"Ch\xc3\x28ina\x80", 1)
    parsed = parse_lecture_page(body, URL, encoding="utf-8")
    assert parsed.fields == FIELDS
    assert parsed.blocks[0] == "Ch\ufffd(ina\ufffd"
    assert parsed.problems == ["the page is not valid utf-8: undecodable bytes shown as U+FFFD"]


@pytest.mark.parametrize("body", [b"", b"   \n\t ", b"\x00\x00", b"\xef\xbb\xbf", "\ufeff"])
def test_an_empty_200_is_a_page_without_content(body: str | bytes) -> None:
    parsed = parse_lecture_page(body, f"{WEB}/lecture/5-x")
    assert parsed.fields == LectureItem(lecture_id="5")
    assert parsed.problems[0] == "the page is empty"
    with pytest.raises(PageParseError, match="empty page and no lecture id"):
        parse_lecture_page(body, f"{WEB}/about")


def test_a_page_of_several_megabytes() -> None:
    filler = "<div><p>filler paragraph text</p><span>more</span></div>" * 150_000
    page = seed_page().replace("</main>", filler + "</main>", 1)
    assert len(page) > 8_000_000
    started = time.process_time()  # CPU time: the suite's other workers share the cores
    parsed = parse_lecture_page(page.encode("utf-8"), URL)
    assert time.process_time() - started < 20
    assert parsed.fields == FIELDS
    assert parsed.extraction == "next_data"


# -- links ---------------------------------------------------------------------------------------


def test_links_of_other_schemes_are_never_lecture_links() -> None:
    hrefs = [
        "javascript:alert(1)//lecture/7",
        " JaVaScRiPt:void(0)/lecture/7-x",
        "java\nscript:alert(1)/lecture/7",
        "data:text/html,<a href=/lecture/7>x</a>",
        "mailto:x@evil.example?body=/lecture/7",
        "ftp://evil.example/lecture/7-x",
        "vbscript:msgbox/lecture/7",
        "https://evil.example/lecture/8-kept-for-the-crawler-to-judge",
        "//evil.example/lecture/9",
        "/lecture/" + "1" * 5000,
        "/lecture/" + "2" * (MAX_LINK_LENGTH + 1),
    ]
    html = "<title>T</title>" + "".join(f'<a href="{h}">x</a>' for h in hrefs)
    parsed = parse_lecture_page(html, f"{WEB}/lecture/5")
    assert parsed.lecture_links == [
        "https://evil.example/lecture/8-kept-for-the-crawler-to-judge",
        "http://evil.example/lecture/9",
    ]
    assert f"2 link(s) longer than {MAX_LINK_LENGTH} characters ignored" in parsed.problems


def test_the_number_of_lecture_links_is_bounded() -> None:
    html = "<title>T</title>" + "".join(
        f'<a href="/lecture/{i}">x</a>' for i in range(MAX_LECTURE_LINKS + 50)
    )
    parsed = parse_lecture_page(html, f"{WEB}/lecture/5")
    assert len(parsed.lecture_links) == MAX_LECTURE_LINKS
    assert f"50 lecture link(s) beyond the first {MAX_LECTURE_LINKS} ignored" in parsed.problems


def test_a_canonical_link_with_an_absurd_id_is_not_a_lecture() -> None:
    html = f'<link rel="canonical" href="/lecture/{"3" * 6000}"><title>T</title>'
    with pytest.raises(PageParseError):
        parse_lecture_page(html.replace("<title>T</title>", ""), f"{WEB}/log-in")
    assert parse_lecture_page(html, f"{WEB}/log-in").fields is None


# -- API answers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "read", "problems"),
    [
        (7, 7, []),
        (10**15, None, ["meta.total_pages 1000000000000000 is not believable (more than 1000000)"]),
        (-1, None, ["meta.total_pages is not a page count: '-1'"]),
        ("many", None, ["meta.total_pages is not a page count: 'many'"]),
        (1e300, None, ["meta.total_pages is not a page count: '1e+300'"]),
        ([3], None, ["meta.total_pages is not a page count: '<list>'"]),
        (None, None, []),
    ],
)
def test_absurd_total_pages_are_not_believed(total: Any, read: int | None, problems: list[str]) -> None:
    page = parse_lecture_list({"data": [api_lecture()], "meta": {"total_pages": total}})
    assert (page.total_pages, page.problems) == (read, problems)


@pytest.mark.parametrize(
    "lecture_id", ["../../log-in", "1/../2", "12a", "", " ", "1" * 19, "-5", "\u0661\u0662"]
)
def test_lecture_ids_that_are_not_numbers_are_skipped(lecture_id: str) -> None:
    page = parse_lecture_list({"data": [api_lecture(lecture_id)]})
    assert (page.records, page.skipped) == ([], 1)


@pytest.mark.parametrize("slug", ["../../log-in", "a/b", "x?y=1", "x#frag", "sp ace", "new\nline", "x" * 301])
def test_slugs_that_would_leave_the_path_segment_are_dropped(slug: str) -> None:
    fields = parse_lecture_document({"data": api_lecture(slug=slug), "included": INCLUDED})
    assert fields.slug is None
    assert fields.problems[0].startswith("slug is not one URL path segment")


# -- every hostile variant the replica serves, at the parser -------------------------------------


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records(), seed=0, lectures=60)


PARSER_OUTCOMES = {
    "bad_json": "visible_text",
    "deep_json": "visible_text",
    "huge_json": "visible_text",
    "truncated": "visible_text",
    "empty": "visible_text",
    **{v: "next_data" for v in (*hostile.CHARSET, *hostile.INTACT, "oversize", "slow_drip")},
}


@pytest.mark.parametrize("variant", sorted(PARSER_OUTCOMES))
def test_replica_variants_at_the_parser(site: ReplicaSite, variant: str) -> None:
    base = "http://127.0.0.1:8000"
    server_side = hostile.HostileSite(site, base, hostile.plan(site, variants=(variant,)))
    ((lecture_id, _),) = server_side.variants.items()
    lecture = site.lectures[lecture_id]
    answer = server_side.lecture_page(lecture, {})
    assert answer is not None and answer.status == 200
    charset = (answer.content_type or "").partition("charset=")[2] or None
    parsed = parse_lecture_page(answer.body, base + lecture.path, encoding=charset)
    assert parsed.extraction == PARSER_OUTCOMES[variant]
    assert parsed.fields is not None and parsed.fields.lecture_id == lecture_id
    truth = next(t for t in ground_truth(site, base) if t["lecture_id"] == lecture_id)
    if variant in (*hostile.CHARSET, "malformed", "huge_page", "foreign_links", "oversize"):
        item = parsed.fields.parsed_record().values()
        assert {k: item[k] for k in ("title", "abstract", "keywords", "doi")} == {
            k: truth[k] for k in ("title", "abstract", "keywords", "doi")
        }


def test_gzip_bomb_and_redirects_at_the_replica(site: ReplicaSite) -> None:
    server_side = hostile.HostileSite(
        site, "http://h", hostile.plan(site, variants=("gzip_bomb", "redirect_loop", "endless_redirect"))
    )
    by_variant = {v: site.lectures[i] for i, v in server_side.variants.items()}
    bomb = server_side.lecture_page(by_variant["gzip_bomb"], {})
    assert bomb is not None and ("Content-Encoding", "gzip") in bomb.headers
    assert len(bomb.body) < 2 * 1024 * 1024
    loop = server_side.lecture_page(by_variant["redirect_loop"], {})
    assert loop is not None and loop.status == 302
    back = server_side.lecture_page(by_variant["redirect_loop"], {"loop": ["1"]})
    assert back is not None and dict(back.headers)["Location"] == dict(loop.headers)["Location"].split("?")[0]
    hop = server_side.lecture_page(by_variant["endless_redirect"], {"hop": ["41"]})
    assert hop is not None and dict(hop.headers)["Location"].endswith("?hop=42")


def test_parse_page_reports_what_it_could_not_read() -> None:
    assert parse_page(b"<p>ok</p>").problems == []
    assert parse_page(b"<p>\xff</p>", "utf-8").problems == [
        "the page is not valid utf-8: undecodable bytes shown as U+FFFD"
    ]
    assert parse_page("").root is None
