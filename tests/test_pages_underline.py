from __future__ import annotations

import contextlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.pages import (
    DocumentError,
    LectureItem,
    LectureListPage,
    LecturePage,
    PageParseError,
    parse_lecture_document,
    parse_lecture_list,
    parse_lecture_page,
)
from crawler.schema import FIELD_NAMES
from crawler.schema.check import validate_record

FIXTURES = Path(__file__).parent / "fixtures" / "pages"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
WEB = "http://127.0.0.1:8765"
NEXT_DATA = re.compile(r'<script id="__NEXT_DATA__" type="application/json">.*?</script>', re.S)


def fixture(name: str) -> str:
    return (FIXTURES / f"{name}.html").read_text(encoding="utf-8")


def with_next_data(html: str, payload: str) -> str:
    return NEXT_DATA.sub(
        lambda _: f'<script id="__NEXT_DATA__" type="application/json">{payload}</script>', html
    )


def api_lecture(lecture_id: str = "130123", **attributes: Any) -> dict[str, Any]:
    return {
        "type": "thin_lectures",
        "id": lecture_id,
        "attributes": {
            "title": "Router-Tuning: A Simple and Effective Approach for Dynamic Depth",
            "abstract": "The Mixture of Depths (MoD) was introduced ...",
            "slug": "router-tuning-a-simple-and-effective-approach-for-dynamic-depth",
            "held_at": "2025-11-06T02:30:00.000Z",
            "published_at": "2025-10-28T12:00:00Z",
            "playlist": None,
            "paper_url": f"{WEB}/downloadable_materials/lectures/{lecture_id}/paper",
            "underline_doi": "10.48448/7fqa-2p0c",
            "video_doi": None,
            "event_id": 502,
            "package": "free",
            "poster_lecture": True,
            "keywords": ["layer skip", "computation efficiency"],
            **attributes,
        },
        "relationships": {
            "event": {"data": {"type": "thin_events", "id": "502"}},
            "tag": {"data": {"type": "tags", "id": "3"}},
            "event_session": {"data": {"type": "thin_event_sessions", "id": "8841"}},
        },
    }


INCLUDED = [
    {"type": "thin_events", "id": "502", "attributes": {"name": "EMNLP 2025", "location": "Suzhou, China"}},
    {"type": "tags", "id": "3", "attributes": {"name": "poster"}},
    {
        "type": "thin_event_sessions",
        "id": "8841",
        "attributes": {"name": "Poster Session 2", "event_id": 502},
    },
]
ROUTER_TUNING = LectureItem(
    lecture_id="130123",
    slug="router-tuning-a-simple-and-effective-approach-for-dynamic-depth",
    title="Router-Tuning: A Simple and Effective Approach for Dynamic Depth",
    abstract="The Mixture of Depths (MoD) was introduced ...",
    keywords=["layer skip", "computation efficiency"],
    presentation_type="poster",
    event_id="502",
    event_name="EMNLP 2025",
    session_id="8841",
    session_name="Poster Session 2",
    held_at=datetime(2025, 11, 6, 2, 30, tzinfo=UTC),
    published_at=datetime(2025, 10, 28, 12, 0, tzinfo=UTC),
    doi="10.48448/7fqa-2p0c",
    package="free",
    is_premium=False,
    paper_url=f"{WEB}/downloadable_materials/lectures/130123/paper",
    is_poster=True,
)


# -- API documents ------------------------------------------------------------------------------


def test_parse_lecture_document() -> None:
    fields = parse_lecture_document({"data": api_lecture(), "included": INCLUDED})
    assert fields == ROUTER_TUNING
    assert fields.problems == []
    assert fields.held_at is not None and fields.held_at.tzinfo is UTC


def test_parse_lecture_document_errors() -> None:
    with pytest.raises(DocumentError, match="API error: 404 Not Found"):
        parse_lecture_document({"errors": [{"status": "404", "title": "Not Found"}]})
    with pytest.raises(DocumentError, match="not a thin_lectures resource"):
        parse_lecture_document({"data": [api_lecture()]})
    with pytest.raises(DocumentError, match="not a JSON object"):
        parse_lecture_document(["data"])


def test_parse_lecture_list() -> None:
    doc = {
        "data": [api_lecture("130123"), api_lecture("130124", package="premium", keywords=None)],
        "included": INCLUDED,
        "meta": {"total_pages": 7, "total_count": 101},
    }
    page = parse_lecture_list(doc)
    assert page.records[0] == ROUTER_TUNING
    assert page.records[1].lecture_id == "130124"
    assert page.records[1].is_premium is True
    assert page.records[1].keywords == []
    assert (page.total_pages, page.total_count, page.skipped, page.problems) == (7, 101, 0, [])


def test_parse_lecture_list_counts_and_skips_wrong_types() -> None:
    bad = api_lecture(
        "130125",
        title=["not", "text"],
        held_at="next tuesday",
        published_at=12,
        keywords=["ok", 5, None],
        package=None,
        event_id=True,
    )
    bad["relationships"]["event_session"] = {"data": [{"type": "thin_event_sessions", "id": "1"}]}
    doc = {
        "data": [bad, {"type": "thin_events", "id": "502"}, "junk", None, {"id": "1"}],
        "meta": {"total_pages": "3", "total_count": -1},
    }
    page = parse_lecture_list(doc)
    assert page.skipped == 4
    assert page.total_pages == 3
    assert page.total_count is None
    (fields,) = page.records
    assert fields.title is None
    assert fields.held_at is None and fields.published_at is None
    assert fields.keywords == ["ok"]
    assert fields.is_premium is False and fields.package is None
    assert fields.event_id == "502"  # from the event relationship
    assert fields.event_name is None and fields.session_id is None and fields.presentation_type is None
    assert fields.problems == [
        "title is not a string",
        "2 keyword(s) not strings",
        "held_at is not an ISO 8601 timestamp: 'next tuesday'",
        "published_at is not an ISO 8601 timestamp: '12'",
    ]


@pytest.mark.parametrize(
    ("doc", "problems"),
    [
        ("text", ["answer is not a JSON object"]),
        ({"data": {"type": "thin_lectures", "id": "1"}}, ["data is not a list"]),
        (
            {"errors": [{"status": "400", "detail": "page[size] too large"}]},
            ["API error: 400 page[size] too large"],
        ),
        ({"data": [], "meta": {"total_pages": 0}}, []),
    ],
)
def test_parse_lecture_list_never_raises(doc: Any, problems: list[str]) -> None:
    page = parse_lecture_list(doc)
    assert page.records == []
    assert page.problems == problems


def test_camel_case_pagination_meta() -> None:
    assert parse_lecture_list({"data": [], "meta": {"totalPages": 2.0}}) == LectureListPage([], 2)


# Item fields the record schema does not have yet: the spider leaves them out until it does.


def test_item_fields_fit_the_schema() -> None:
    item = ROUTER_TUNING.parsed_record().values()
    # Every field a parser fills is a column of the schema, under the same name.
    assert sorted(set(item) - set(FIELD_NAMES)) == []
    record = {
        **item,
        "url": f"{WEB}/lecture/130123-router-tuning",
        "source_urls": [f"{WEB}/lecture/130123-router-tuning"],
        "text": "x",
        "extraction": "next_data",
        "withdrawn": False,
        "fetched_at": datetime(2025, 12, 1, tzinfo=UTC),
        "content_sha256": "0" * 64,
    }
    assert validate_record(record) == []
    assert LectureItem(lecture_id="1", title=" A\u0301  b\n").parsed_record().values()["title"] == "\u00c1 b"


# -- lecture pages ------------------------------------------------------------------------------


SEED_PAGES = {
    "seed000": LectureItem(
        lecture_id="131245",
        slug="a-systematic-analysis-of-base-model-choice-for-reward-modeling",
        title="A Systematic Analysis of Base Model Choice for Reward Modeling",
        abstract=EXPECTED["seed000"]["own_blocks"][0],
        keywords=["reward models", "reinforcement learning from human feedback", "large language models"],
        presentation_type="poster",
        event_id="502",
        event_name="EMNLP 2025",
        session_id="8841",
        session_name="Poster Session 2",
        held_at=datetime(2025, 11, 6, 2, 30, tzinfo=UTC),
        published_at=datetime(2025, 10, 28, 12, 0, tzinfo=UTC),
        doi="10.48448/r3kd-9x2m",
        package="free",
        is_premium=False,
        paper_url=f"{WEB}/downloadable_materials/lectures/131245/paper",
        is_poster=True,
        related_lecture_ids=[
            "130655",
            "108934",
            "130412",
            "130298",
            "130871",
            "130940",
            "131002",
            "131067",
            "131190",
            "131311",
        ],
    ),
    "seed001": LectureItem(
        lecture_id="130412",
        slug="router-tuning-a-simple-and-effective-approach-for-dynamic-depth",
        title="Router-Tuning: A Simple and Effective Approach for Dynamic Depth",
        abstract=EXPECTED["seed001"]["own_blocks"][0],
        keywords=["layer skip", "computation efficiency", "mixture of depths"],
        presentation_type="poster",
        event_id="502",
        event_name="EMNLP 2025",
        session_id="8841",
        session_name="Poster Session 2",
        held_at=datetime(2025, 11, 6, 2, 30, tzinfo=UTC),
        published_at=datetime(2025, 10, 28, 12, 0, tzinfo=UTC),
        doi="10.48448/7fqa-2p0c",
        package="free",
        is_premium=False,
        paper_url=f"{WEB}/downloadable_materials/lectures/130412/paper",
        is_poster=True,
        related_lecture_ids=[
            "130298",
            "130871",
            "130940",
            "131002",
            "131067",
            "131190",
            "131311",
            "131488",
            "131533",
            "131561",
        ],
    ),
    "seed002": LectureItem(
        lecture_id="131877",
        slug="rearank-reasoning-re-ranking-agent-via-reinforcement-learning",
        title="REARANK: Reasoning Re-ranking Agent via Reinforcement Learning",
        abstract=EXPECTED["seed002"]["own_blocks"][0],
        keywords=[],
        presentation_type="technical paper",
        event_id="502",
        event_name="EMNLP 2025",
        session_id="8790",
        session_name="Oral: Information Retrieval 1",
        held_at=datetime(2025, 11, 5, 6, 15, tzinfo=UTC),
        published_at=datetime(2025, 10, 28, 12, 0, tzinfo=UTC),
        doi="10.48448/k8vz-41hn",
        package="premium",
        is_premium=True,
        paper_url=f"{WEB}/downloadable_materials/lectures/131877/paper",
        is_poster=False,
        related_lecture_ids=[
            "130377",
            "130466",
            "130529",
            "130588",
            "130702",
            "130815",
            "130903",
            "131034",
            "131129",
            "131277",
        ],
    ),
}


@pytest.mark.parametrize("variant", ["skeleton", "seed_order"])
@pytest.mark.parametrize("seed", ["seed000", "seed001", "seed002"])
def test_seed_pages(seed: str, variant: str) -> None:
    expected = EXPECTED[seed]
    page = parse_lecture_page(fixture(f"{seed}_{variant}").encode("utf-8"), expected[f"{variant}_url"])
    assert page.extraction == "next_data"
    assert page.problems == []
    assert page.fields == SEED_PAGES[seed]
    assert page.lecture_links == expected[f"{variant}_links"]
    assert page.blocks[0] == "China"
    assert page.blocks[1:4] == expected["own_blocks"][:3]


def test_lecture_links_are_absolute_and_as_written() -> None:
    html = (
        "<html><head><title>T | Underline</title></head><body>"
        '<a href="/lecture/7-x?tab=video#top">a</a><a href=" 8-b\n">b</a><a href="/log-in">no</a>'
        '<a href="https://underline.io/events/502/posters/9/poster/9-y?tab=poster">c</a>'
        '<a href="mailto:x@example.org">no</a><a>no href</a><a href="http://[bad">no</a>'
        '<a href="/events/502/sessions?eventSessionId=8841">no</a></body></html>'
    )
    page = parse_lecture_page(html, f"{WEB}/events/502/sessions/8841/lecture/5-z")
    assert page.lecture_links == [
        f"{WEB}/lecture/7-x?tab=video#top",
        f"{WEB}/events/502/sessions/8841/lecture/8-b",
        "https://underline.io/events/502/posters/9/poster/9-y?tab=poster",
    ]
    based = parse_lecture_page('<base href="/lecture/"><a href="10-q">x</a><h1>T</h1>', f"{WEB}/lecture/5")
    assert based.lecture_links == [f"{WEB}/lecture/10-q"]


def test_lecture_found_by_slug_when_the_url_has_no_id() -> None:
    page = parse_lecture_page(fixture("seed001_skeleton"), f"{WEB}/some/redirected/place")
    assert page.extraction == "next_data"
    assert page.fields == SEED_PAGES["seed001"]


def test_fallback_without_next_data() -> None:
    html = NEXT_DATA.sub("", fixture("seed002_skeleton"))
    page = parse_lecture_page(html, EXPECTED["seed002"]["skeleton_url"])
    assert page.extraction == "visible_text"
    assert page.problems == ["no __NEXT_DATA__ script"]
    assert page.fields == LectureItem(
        lecture_id="131877",
        slug="rearank-reasoning-re-ranking-agent-via-reinforcement-learning",
        title="REARANK: Reasoning Re-ranking Agent via Reinforcement Learning",
        abstract=EXPECTED["seed002"]["own_blocks"][0],
        is_premium=True,
    )
    assert page.lecture_links == EXPECTED["seed002"]["skeleton_links"]


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ('{"props": ', "__NEXT_DATA__ is not JSON: Expecting value: line 1 column 11 (char 10)"),
        ("", "__NEXT_DATA__ is empty"),
        ("[" * 5000 + "]" * 5000, "__NEXT_DATA__ nested too deeply"),
        ('{"props": {"pageProps": {"fallback": {}}}}', "__NEXT_DATA__ holds no document of this lecture"),
        ("[1, 2]", "__NEXT_DATA__ holds no document of this lecture"),
        (json.dumps({"x": "\u00e9" * 15_000}, ensure_ascii=False), "__NEXT_DATA__ larger than 20000 bytes"),
    ],
)
def test_fallback_on_unusable_next_data(payload: str, problem: str) -> None:
    html = with_next_data(fixture("seed000_skeleton"), payload)
    page = parse_lecture_page(html, EXPECTED["seed000"]["skeleton_url"], max_json_bytes=20_000)
    assert page.extraction == "visible_text"
    assert page.problems == [problem]
    assert page.fields is not None
    assert page.fields.lecture_id == "131245"
    assert page.fields.title == "A Systematic Analysis of Base Model Choice for Reward Modeling"
    assert page.fields.is_premium is False


def test_fallback_keeps_related_ids_and_reads_the_slug_id() -> None:
    doc = {"data": [api_lecture("1"), api_lecture("2"), api_lecture("1")]}
    payload = json.dumps({"props": {"pageProps": {"fallback": {"r": doc}}}, "query": {"lectureSlug": "2-x"}})
    page = parse_lecture_page(f"<title>T</title><script id='__NEXT_DATA__'>{payload}</script>", f"{WEB}/")
    assert page.extraction == "visible_text"
    assert page.fields == LectureItem(lecture_id="2", title="T", related_lecture_ids=["1"])


def test_html_escaped_next_data_is_read() -> None:
    payload = json.dumps({"d": {"data": api_lecture(), "included": INCLUDED}}).replace('"', "&quot;")
    page = parse_lecture_page(f"<script id='__NEXT_DATA__'>{payload}</script>", f"{WEB}/lecture/130123")
    assert page.extraction == "next_data"
    assert page.fields == ROUTER_TUNING
    assert page.problems == ["the page shows no text"]


def test_cross_check_problems() -> None:
    doc = {"data": api_lecture(package="premium", title="Another title"), "included": INCLUDED}
    payload = json.dumps({"props": {"pageProps": {"fallback": {"k": doc}}}})
    html = f"<h1>Router-Tuning</h1><script id='__NEXT_DATA__'>{payload}</script>"
    page = parse_lecture_page(html, f"{WEB}/lecture/130123-router-tuning")
    assert page.extraction == "next_data"
    assert page.problems == [
        "title of __NEXT_DATA__ not visible on the page",
        "abstract of __NEXT_DATA__ not visible on the page",
        "package 'premium' but the 'Premium content' label is missing",
    ]


@pytest.mark.parametrize(
    ("html", "title"),
    [
        (
            '<meta property="og:title" content=" OG  title | Underline"><title>Doc | Underline</title>',
            "OG title",
        ),
        ("<title>\n Doc title | Underline</title><h1>H1</h1>", "Doc title"),
        ("<title> | Underline</title><h1> <b>H1</b> title</h1>", "H1 title"),
        ("<p>no title at all</p>", None),
    ],
)
def test_visible_title_sources(html: str, title: str | None) -> None:
    page = parse_lecture_page(html, f"{WEB}/lecture/42-answer")
    assert page.fields == LectureItem(lecture_id="42", slug="answer", title=title)
    assert page.problems == ["no __NEXT_DATA__ script"]


def test_lecture_id_from_canonical_link() -> None:
    html = '<link rel="canonical" href="/lecture/77-x"><meta name="description" content="Abs &amp; more">'
    html += "<h1>T</h1>"
    page = parse_lecture_page(html, f"{WEB}/log-in")
    assert page.fields == LectureItem(lecture_id="77", title="T", abstract="Abs & more")


def test_page_with_a_title_but_no_lecture_id() -> None:
    page = parse_lecture_page("<title>Log in | Underline</title>", f"{WEB}/log-in")
    assert page.fields is None
    assert page.extraction == "visible_text"
    assert page.problems == ["no __NEXT_DATA__ script", "no lecture id for the page titled 'Log in'"]


@pytest.mark.parametrize("html", ["", b"", b"\xff\xfe\x00", "<p>hello</p>", "<html><body></body></html>"])
def test_page_parse_error(html: str | bytes) -> None:
    with pytest.raises(PageParseError, match="no lecture id"):
        parse_lecture_page(html, f"{WEB}/about")


def test_empty_page_at_a_lecture_url() -> None:
    page = parse_lecture_page(b"", f"{WEB}/lecture/5-x")
    assert page == LecturePage(LectureItem(lecture_id="5"), [], [], "visible_text", ["the page is empty"])


def test_invalid_utf8_and_declared_encoding() -> None:
    html = fixture("seed001_skeleton").encode("utf-8").replace(b"China", b"Ch\xffina")
    page = parse_lecture_page(html, EXPECTED["seed001"]["skeleton_url"])
    assert page.blocks[0] == "Ch\ufffdina"
    assert page.fields == SEED_PAGES["seed001"]
    latin = "<title>Caf\u00e9 | Underline</title>".encode("latin-1")
    assert parse_lecture_page(latin, f"{WEB}/lecture/3", encoding="latin-1").fields == LectureItem(
        lecture_id="3", title="Caf\u00e9"
    )


# -- nothing but PageParseError, whatever the input ---------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
attribute_values = st.one_of(
    json_values, st.sampled_from(["2025-11-06T02:30:00Z", "free", "premium", "9999-99-99", "130123"])
)
lectureish = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["thin_lectures", "thin_events", "tags", 5]),
        "id": st.one_of(st.sampled_from(["130123", "1", "", 130123, True]), json_values),
        "attributes": st.one_of(
            st.dictionaries(
                st.sampled_from(
                    ["title", "abstract", "slug", "heldAt", "held_at", "publishedAt", "package", "keywords",
                     "eventId", "underlineDoi", "paperUrl", "name"]
                ),
                attribute_values,
                max_size=8,
            ),
            json_values,
        ),
        "relationships": st.one_of(
            st.dictionaries(
                st.sampled_from(["event", "tag", "eventSession", "event_session"]),
                st.one_of(
                    st.fixed_dictionaries(
                        {"data": st.fixed_dictionaries({"type": st.sampled_from(["thin_events", "tags"]),
                                                         "id": st.sampled_from(["502", "3", 7])})}
                    ),
                    json_values,
                ),
                max_size=3,
            ),
            json_values,
        ),
    }
)  # fmt: skip
documents = st.fixed_dictionaries(
    {
        "data": st.one_of(lectureish, st.lists(lectureish, max_size=3), json_values),
        "included": st.one_of(st.lists(lectureish, max_size=3), json_values),
    }
)
# Whole page JSON trees: test_hostile_properties parses pages built around them and checks every field
# it reads against what the page holds.
next_data = st.fixed_dictionaries(
    {
        "props": st.fixed_dictionaries(
            {
                "pageProps": st.fixed_dictionaries(
                    {"fallback": st.dictionaries(st.text(max_size=5), documents)}
                )
            }
        ),
        "query": st.one_of(
            st.fixed_dictionaries({"lectureSlug": st.one_of(st.text(max_size=8), json_values)})
        ),
    }
)
html_pieces = st.lists(
    st.one_of(
        st.sampled_from(
            ["<p>", "</p>", "<div>", "</div>", "<a href='/lecture/1-x'>", "<a href='", "</a>", "<br>", "<h1>",
             "<title>", "</title>", "<meta property='og:title' content='", "'>", "<script>", "</script>",
             "<!--", "-->", "&amp;", "&#0;", "<![CDATA[", "<link rel=canonical href='/lecture/9'>", "\x00"]
        ),
        st.text(max_size=10),
    ),
    max_size=25,
).map("".join)  # fmt: skip
urls = st.sampled_from(
    [
        f"{WEB}/lecture/130123-x",
        f"{WEB}/lecture/1",
        f"{WEB}/",
        "",
        "not a url",
        "http://[bad/lecture/5",
        "/lecture/3",
    ]
)


@settings(max_examples=150, deadline=None)
@given(raw=st.one_of(st.binary(max_size=200), html_pieces), url=urls)
def test_generated_html_never_crashes(raw: str | bytes, url: str) -> None:
    with contextlib.suppress(PageParseError):
        parse_lecture_page(raw, url, encoding=None)


@settings(max_examples=100, deadline=None)
@given(doc=st.one_of(documents, json_values))
def test_generated_api_answers_never_crash(doc: Any) -> None:
    parse_lecture_list(doc)
    with contextlib.suppress(DocumentError):
        parse_lecture_document(doc)
