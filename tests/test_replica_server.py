from __future__ import annotations

import dataclasses
import html
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from email.utils import format_datetime, parsedate_to_datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from crawler.pages.jsonapi import camel_case
from crawler.replica import attributes
from crawler.replica.faults import FaultProfile, named_profile
from crawler.replica.layout import (
    SESSION_KIND_ORAL,
    SESSION_KIND_POSTER,
    Lecture,
    ReplicaSite,
    build_site,
    ground_truth,
    load_records,
    normalize_block,
)
from crawler.replica.server import ReplicaServer, RequestRecord
from crawler.text.latex import clean_latex

REPO = Path(__file__).resolve().parents[1]
ROBOTS = "User-agent: *\nDisallow: /log-in\nDisallow: /downloadable_materials/\n"
# Lines every lecture page shows, as on the real pages (the seeds).
BOILERPLATE = [
    "## Welcome!",
    "*Message from the General Chair, Dirk Hovy*",
    "[**Link to Conference Handbook**](https://drive.google.com/file/d/1johU5QqVVYO4RfH7QcIORr7qrVBdzdwC/view"
    "?usp=sharing)",
    "<br>",
    "Celebrate 30 Years of EMNLP!",
    "EMNLP 2025 will be held in Suzhou, China from November 5th to November 9th, 2025.",
    "Downloads",
    "Next from EMNLP 2025",
    "Similar lecture",
    "Stay up to date with the latest Underline news!",
    "PRESENTATIONS",
    "CONFERENCES",
    "COMPANY",
    "RESOURCES",
]
WELCOME_2024 = [
    "## Welcome to EMNLP 2024!",
    "### [Conference Handbook](https://drive.google.com/file/d/1WPROgxjLAC96AJL7Ugy0tEnYm7dkrbHt/view?usp=sharing)",
    "Please register!",
    "EMNLP 2024 will take place in Miami, Florida from Nov 12th to Nov 16th, 2024, at the Hyatt Regency Miami"
    " Hote and on Underline for remote participants.",
]


@dataclasses.dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.body)


def fetch(
    server: ReplicaServer, target: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> Answer:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request(method, target, headers=headers or {})
        response = conn.getresponse()
        body = response.read()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, body)
    finally:
        conn.close()


def next_data(page: str) -> Any:
    match = re.search(r'<script id="__NEXT_DATA__" type="application/json">(.*?)</script>', page, re.DOTALL)
    assert match is not None
    return json.loads(match.group(1))


def find_doc(data: Any, type_: str, id_: str) -> dict[str, Any]:
    """The fallback document whose single resource is (type, id): the keys are not a contract."""
    for doc in data["props"]["pageProps"]["fallback"].values():
        resource = doc.get("data")
        if isinstance(resource, dict) and (resource["type"], resource["id"]) == (type_, id_):
            return dict(doc)
    raise AssertionError(f"no {type_} {id_} document")


def visible_lines(page: str) -> list[str]:
    body = re.sub(r"<script\b.*?</script>|<head>.*?</head>", "", page, flags=re.DOTALL)
    parts = re.split(r"<(?:p|div|h1|h3|li|span|a|ul|section|header|footer|main)\b[^>]*>", body)
    lines = (html.unescape(re.sub(r"<[^>]+>", "", part)).strip() for part in parts)
    return [line for line in lines if line]


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return load_records()


@pytest.fixture(scope="module")
def site(records: list[dict[str, Any]]) -> ReplicaSite:
    return build_site(records, seed=0, lectures=60)


@pytest.fixture(scope="module")
def server(site: ReplicaSite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicaServer]:
    log = tmp_path_factory.mktemp("log") / "requests.jsonl"
    with ReplicaServer(site, request_log_path=log) as running:
        yield running


def lecture_in(site: ReplicaSite, kind: str) -> Lecture:
    return next(x for x in site.event_lectures("502") if site.sessions[x.session_id].kind == kind)


def test_base_url_and_lifecycle(site: ReplicaSite) -> None:
    replica = ReplicaServer(site)
    with pytest.raises(RuntimeError):
        _ = replica.base_url
    replica.start()
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", replica.base_url)
        assert fetch(replica, "/robots.txt").status == 200
    finally:
        replica.stop()
    replica.stop()
    with pytest.raises(ConnectionRefusedError):
        fetch(replica, "/robots.txt")


def test_canonical_page(server: ReplicaServer, site: ReplicaSite) -> None:
    lec = site.event_lectures("502")[0]
    answer = fetch(server, lec.path)
    assert answer.status == 200
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    assert answer.headers["cache-control"] == "public, max-age=0, must-revalidate"
    assert re.fullmatch(r'"[0-9a-f]{32}"', answer.headers["etag"])
    assert parsedate_to_datetime(answer.headers["last-modified"]) == site.last_modified()
    page = answer.text
    assert page.startswith('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>')
    assert f"<title>{html.escape(lec.title)} | Underline</title>" in page
    assert f'<link rel="canonical" href="{server.base_url}{lec.path}">' in page
    lines = visible_lines(page)
    assert lines[0] == "China"
    assert lines[1] == lec.abstract.strip()
    assert lines[2:4] == ["EMNLP 2025", lec.title]
    for line in BOILERPLATE:
        assert line in [x.strip() for x in lines], line
    assert lines[-5:] == BOILERPLATE[-5:]
    assert ("Premium content" in lines) == (lec.package != "free")


def test_next_data_documents(server: ReplicaServer, site: ReplicaSite) -> None:
    lec = site.event_lectures("502")[3]
    data = next_data(fetch(server, lec.path).text)
    assert data["page"] == "/lecture/[lectureSlug]"
    assert data["query"] == {"lectureSlug": f"{lec.id}-{lec.slug}"}
    assert data["buildId"] == "replica" and data["isFallback"] is False
    assert data["props"]["__N_SSG"] is True
    doc = find_doc(data, "thin_lectures", lec.id)
    attrs = doc["data"]["attributes"]
    assert sorted(attrs) == sorted(
        [
            "title",
            "abstract",
            "slug",
            "heldAt",
            "publishedAt",
            "playlist",
            "paperUrl",
            "underlineDoi",
            "videoDoi",
            "eventId",
            "package",
            "posterLecture",
            "slideshowUrl",
            "posterDocumentUrl",
            "keywords",
            # ... and the attributes registered beyond them, camelCased as every attribute here.
            *(camel_case(name) for name in attributes.SERVED_ATTRIBUTES),
        ]
    )
    assert attrs["title"] == lec.title and attrs["abstract"] == lec.abstract
    assert attrs["eventId"] == 502
    assert attrs["heldAt"] == lec.held_at.isoformat().replace("+00:00", "Z")
    assert attrs["keywords"] == list(lec.keywords)
    assert doc["data"]["relationships"] == {
        "event": {"data": {"type": "thin_events", "id": "502"}},
        "tag": {"data": {"type": "tags", "id": lec.tag_id}},
        "eventSession": {"data": {"type": "thin_event_sessions", "id": lec.session_id}},
        "sortedProfiles": {"data": [{"type": "profiles", "id": p.id} for p in lec.profiles]},
    }
    included = {(r["type"], r["id"]): r for r in doc["included"]}
    assert set(included) == {
        ("thin_events", "502"),
        ("tags", lec.tag_id),
        ("thin_event_sessions", lec.session_id),
        *(("profiles", p.id) for p in lec.profiles),
    }
    assert included[("thin_events", "502")]["attributes"]["startDate"] == "2025-11-05"
    assert included[("thin_event_sessions", lec.session_id)]["attributes"]["eventId"] == 502
    related = [
        d
        for d in data["props"]["pageProps"]["fallback"].values()
        if isinstance(d.get("data"), list) and d["data"] and d["data"][0]["type"] == "thin_lectures"
    ]
    assert len(related) == 1
    assert [r["id"] for r in related[0]["data"]] == [link.lecture_id for link in lec.related]
    assert find_doc(data, "thin_lectures", lec.next.lecture_id)["data"]["id"] == lec.next.lecture_id
    assert lec.similar is not None
    find_doc(data, "thin_lectures", lec.similar.lecture_id)


def test_every_page_agrees_with_the_ground_truth(server: ReplicaServer, site: ReplicaSite) -> None:
    """A miniature crawl: canonical pages only, links and fields read back from HTML and JSON."""
    base = server.base_url
    truth = {t["lecture_id"]: t for t in ground_truth(site, base)}
    seen_at: dict[str, set[str]] = {i: {t["url"]} for i, t in truth.items()}
    with_2024 = 0
    for lecture_id, expected in truth.items():
        answer = fetch(server, urlsplit(expected["url"]).path)
        assert answer.status == 200, f"{lecture_id=}, {expected=}"
        page = answer.text
        for href in re.findall(r'<a href="([^"]+)">', page):
            href = html.unescape(href)
            match = re.search(r"/(\d+)(?:-[^/?]*)?(?:\?.*)?$", href)
            assert match is not None, f"{lecture_id=}, {expected=}, {href=}"
            if match.group(1) in seen_at:
                seen_at[match.group(1)].add(base + href)
        data = next_data(page)
        attrs = find_doc(data, "thin_lectures", lecture_id)["data"]["attributes"]
        assert attrs["abstract"] == expected["abstract"], f"{lecture_id=}, {expected=}"
        assert " ".join(attrs["title"].split()) == expected["title"], f"{lecture_id=}, {expected=}"
        assert attrs["keywords"] == expected["keywords"], f"{lecture_id=}, {expected=}"
        assert attrs["heldAt"] == expected["held_at"], f"{lecture_id=}, {expected=}"
        assert attrs["publishedAt"] == expected["published_at"], f"{lecture_id=}, {expected=}"
        assert attrs["underlineDoi"] == expected["doi"], f"{lecture_id=}, {expected=}"
        assert (attrs["package"] != "free") == expected["is_premium"], f"{lecture_id=}, {expected=}"
        related = next(
            d for d in data["props"]["pageProps"]["fallback"].values() if isinstance(d["data"], list)
        )
        assert [r["id"] for r in related["data"]] == expected["related_lecture_ids"], (
            f"{lecture_id=}, {expected=}"
        )
        section = re.search(r"<main>\s*<section>(.*?)</section>", page, re.DOTALL)
        assert section is not None, f"{lecture_id=}, {expected=}"
        blocks = [clean_latex(normalize_block(b)) for b in visible_lines(section.group(1))]
        assert "\n\n".join(b for b in blocks if b) == expected["text"], f"{lecture_id=}, {expected=}"
        if "## Welcome to EMNLP 2024!" in visible_lines(page):
            with_2024 += 1
            assert any(site.lectures[i].event_id == "469" for i in expected["related_lecture_ids"]), (
                f"{lecture_id=}, {expected=}"
            )
            for line in WELCOME_2024:
                assert line in visible_lines(page), f"{lecture_id=}, {expected=}, {line=}"
    assert {i: sorted(urls) for i, urls in seen_at.items()} == {i: t["source_urls"] for i, t in truth.items()}
    assert with_2024 == sum(
        any(site.lectures[link.lecture_id].event_id == "469" for link in lec.related)
        for lec in site.event_lectures("502")
    )
    assert with_2024 > 0


def test_alias_urls_serve_the_same_page(server: ReplicaServer, site: ReplicaSite) -> None:
    oral = lecture_in(site, SESSION_KIND_ORAL)
    poster = lecture_in(site, SESSION_KIND_POSTER)
    canonical = fetch(server, oral.path)
    alias = fetch(server, f"/events/502/sessions/{oral.session_id}/lecture/{oral.id}-{oral.slug}")
    assert alias.status == 200 and alias.body == canonical.body
    assert alias.headers["etag"] == canonical.headers["etag"]
    poster_page = fetch(server, poster.path).body
    for query in ("", "?tab=video", "?tab=abstract", "?tab=poster"):
        answer = fetch(
            server, f"/events/502/posters/{poster.session_id}/poster/{poster.id}-{poster.slug}{query}"
        )
        assert answer.status == 200 and answer.body == poster_page, f"{query=}"


@pytest.mark.parametrize(
    "form",
    [
        "/lecture/{id}",
        "/lecture/{id}-wrong-slug",
        "/lecture/0{id}-{slug}",
        "/events/502/sessions/1/lecture/{id}",
    ],
)
def test_redirects_to_the_canonical_url(server: ReplicaServer, site: ReplicaSite, form: str) -> None:
    lec = site.event_lectures("502")[5]
    answer = fetch(server, form.format(id=lec.id, slug=lec.slug))
    assert answer.status == 301
    assert answer.headers["location"] == server.base_url + lec.path


def test_session_listing_page(server: ReplicaServer, site: ReplicaSite) -> None:
    session = next(s for s in site.sessions.values() if s.event_id == "502")
    # A session ends when its last lecture (15 minutes each) does.
    n_lectures = sum(lec.session_id == session.id for lec in site.lectures.values())
    answer = fetch(server, f"/events/502/sessions?eventSessionId={session.id}")
    assert answer.status == 200
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    data = next_data(answer.text)
    assert data["query"] == {"eventId": "502", "eventSessionId": session.id}
    doc = find_doc(data, "thin_event_sessions", session.id)
    assert doc["data"]["attributes"] == {
        "name": session.name,
        "description": session.description,
        "eventId": 502,
        "startAt": session.starts_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "endAt": (session.starts_at + n_lectures * timedelta(minutes=15)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    assert session.name in visible_lines(answer.text)
    assert not any(lec.title in answer.text for lec in site.lectures.values())
    assert fetch(server, "/events/502/sessions?eventSessionId=1").status == 404
    assert fetch(server, "/events/502/sessions").status == 404
    side = next(s for s in site.sessions.values() if s.event_id == "469")
    assert fetch(server, f"/events/502/sessions?eventSessionId={side.id}").status == 404


def test_api_lecture_document(server: ReplicaServer, site: ReplicaSite) -> None:
    lec = site.event_lectures("502")[7]
    answer = fetch(server, f"/api/v1/thin_lectures/{lec.id}?include=tag,event,event_session")
    assert answer.status == 200
    assert answer.headers["content-type"] == "application/vnd.api+json"
    assert "etag" in answer.headers and "last-modified" in answer.headers
    doc = answer.json()
    resource = doc["data"]
    assert (resource["type"], resource["id"]) == ("thin_lectures", lec.id)
    attrs = resource["attributes"]
    assert attrs["held_at"] == lec.held_at.isoformat().replace("+00:00", "Z")
    assert attrs["underline_doi"] == lec.underline_doi
    assert attrs["event_id"] == 502
    assert attrs["poster_lecture"] is lec.poster_lecture
    assert attrs["paper_url"] in (None, f"{server.base_url}/downloadable_materials/lectures/{lec.id}/paper")
    assert set(resource["relationships"]) == {"event", "tag", "event_session"}
    assert sorted(r["type"] for r in doc["included"]) == ["tags", "thin_event_sessions", "thin_events"]
    event = next(r for r in doc["included"] if r["type"] == "thin_events")["attributes"]
    assert event["name"] == "EMNLP 2025" and event["location"] == "Suzhou, China"
    assert event["description"].startswith("## Welcome!\n")
    assert (event["start_date"], event["end_date"]) == ("2025-11-05", "2025-11-09")
    related = fetch(server, f"/api/v1/thin_lectures/{lec.id}/related").json()
    assert [r["id"] for r in related["data"]] == [link.lecture_id for link in lec.related]
    assert fetch(server, f"/api/v1/thin_lectures/{lec.id}/next").json()["data"]["id"] == lec.next.lecture_id


def test_registered_attributes_are_in_every_lecture_resource_and_follow_the_night(
    site: ReplicaSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attribute registered in ``crawler.replica.attributes`` is in the listing's, the lecture's own
    and the related lectures' resources (snake_case) and in the page's JSON (camelCase); one that is a
    function of the night has the server's night's value, the others the same every night."""
    monkeypatch.setattr(
        attributes,
        "SERVED_ATTRIBUTES",
        {
            "room_name": lambda lec, night: f"Room {int(lec.id) % 5}",
            "view_count": lambda lec, night: 1000 * night + int(lec.id) % 97,
        },
    )
    lec = site.event_lectures("502")[4]
    dates = []
    for night in (0, 2):
        with ReplicaServer(site, night=night, assets=False) as replica:
            listing = fetch(replica, "/api/v1/thin_lectures?filter[event_id]=502&page[size]=100")
            own = fetch(replica, f"/api/v1/thin_lectures/{lec.id}").json()["data"]["attributes"]
            related = fetch(replica, f"/api/v1/thin_lectures/{lec.id}/related").json()["data"]
            page = next_data(fetch(replica, lec.path).text)
        dates.append(parsedate_to_datetime(listing.headers["last-modified"]))
        listed = {r["id"]: r["attributes"] for r in listing.json()["data"]}
        assert len(listed) == len(site.event_lectures("502")), f"{night=}"
        for lecture_id, attrs in listed.items():
            assert attrs["room_name"] == f"Room {int(lecture_id) % 5}", f"{lecture_id=}"
            assert attrs["view_count"] == 1000 * night + int(lecture_id) % 97, f"{lecture_id=}"
        assert (own["room_name"], own["view_count"]) == (
            listed[lec.id]["room_name"],
            listed[lec.id]["view_count"],
        ), f"{night=}"
        for resource in related:
            expected = 1000 * night + int(resource["id"]) % 97
            assert resource["attributes"]["view_count"] == expected, f"{night=}, {resource['id']=}"
        camel = find_doc(page, "thin_lectures", lec.id)["data"]["attributes"]
        assert (camel["roomName"], camel["viewCount"]) == (
            f"Room {int(lec.id) % 5}",
            1000 * night + int(lec.id) % 97,
        ), f"{night=}"
        assert "room_name" not in camel and "view_count" not in camel, f"{night=}"
    # A later night's documents were modified later, so a client revalidating with a date sees them.
    assert dates[1] - dates[0] == timedelta(days=2)


def test_api_not_found_is_a_jsonapi_error(server: ReplicaServer) -> None:
    for target in ("/api/v1/thin_lectures/1", "/api/v1/thin_event_sessions/1", "/api/v1/thin_events/1"):
        answer = fetch(server, target)
        assert answer.status == 404, f"{target=}"
        assert answer.headers["content-type"] == "application/vnd.api+json", f"{target=}"
        assert answer.json()["errors"][0]["status"] == "404", f"{target=}"


def test_api_sessions_and_events(server: ReplicaServer, site: ReplicaSite) -> None:
    session = next(s for s in site.sessions.values() if s.kind == SESSION_KIND_POSTER)
    n_lectures = sum(lec.session_id == session.id for lec in site.lectures.values())
    doc = fetch(server, f"/api/v1/thin_event_sessions/{session.id}").json()
    assert doc["data"]["attributes"] == {
        "name": session.name,
        "description": session.description,
        "event_id": int(session.event_id),
        "start_at": session.starts_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "end_at": (session.starts_at + n_lectures * timedelta(minutes=15)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    for event_id, name, location in (
        ("502", "EMNLP 2025", "Suzhou, China"),
        ("469", "EMNLP 2024", "Miami, Florida"),
    ):
        attrs = fetch(server, f"/api/v1/thin_events/{event_id}").json()["data"]["attributes"]
        assert (attrs["name"], attrs["location"]) == (name, location), f"{event_id=}, {name=}, {location=}"


def test_api_paging_covers_every_lecture_once(server: ReplicaServer, site: ReplicaSite) -> None:
    expected = [lec.id for lec in site.event_lectures("502")]
    assert len(expected) == 59
    ids: list[str] = []
    number = 1
    while True:
        answer = fetch(
            server,
            "/api/v1/thin_lectures?filter%5Bevent_id%5D=502&filter%5Bpublished%5D=all&sort=held_at,id"
            f"&include=tag,event,event_session&page%5Bsize%5D=7&page%5Bnumber%5D={number}",
        )
        assert answer.status == 200, f"{number=}"
        doc = answer.json()
        assert doc["meta"] == {"total_pages": 9, "total_count": 59}, f"{number=}"
        if not doc["data"]:
            break
        keys = [(r["type"], r["id"]) for r in doc["included"]]
        assert len(keys) == len(set(keys)), f"{number=}"
        for resource in doc["data"]:
            ids.append(resource["id"])
            for rel in resource["relationships"].values():
                assert (rel["data"]["type"], rel["data"]["id"]) in keys, f"{resource=}, {rel=}"
        number += 1
    assert number == 10
    assert ids == expected
    default = fetch(server, "/api/v1/thin_lectures?filter[event_id]=502").json()
    assert [r["id"] for r in default["data"]] == expected[:16]
    assert default["meta"] == {"total_pages": 4, "total_count": 59}
    everything = fetch(server, "/api/v1/thin_lectures?filter[event_id]=502&page[size]=500").json()
    assert [r["id"] for r in everything["data"]] == expected
    side = fetch(server, "/api/v1/thin_lectures?filter[event_id]=469").json()
    assert side["meta"] == {"total_pages": 1, "total_count": 1}
    session_id = site.event_lectures("502")[0].session_id
    narrowed = fetch(
        server, f"/api/v1/thin_lectures?filter[event_session_id]={session_id}&page[size]=100"
    ).json()
    assert [r["id"] for r in narrowed["data"]] == [
        x.id for x in site.event_lectures("502") if x.session_id == session_id
    ]


@pytest.mark.parametrize(
    "query", ["page[size]=501", "page[size]=0", "page[size]=ten", "page[number]=0", "page[number]=-1"]
)
def test_api_bad_paging_is_400(server: ReplicaServer, query: str) -> None:
    answer = fetch(server, f"/api/v1/thin_lectures?filter[event_id]=502&{query}")
    assert answer.status == 400
    assert answer.json()["errors"][0]["status"] == "400"


def test_gated_download_and_login(server: ReplicaServer, site: ReplicaSite) -> None:
    lec = site.event_lectures("502")[0]
    answer = fetch(server, f"/downloadable_materials/lectures/{lec.id}/paper")
    assert answer.status == 302
    assert answer.headers["location"] == f"{server.base_url}/log-in"
    login = fetch(server, "/log-in")
    assert login.status == 200
    assert "Log in" in login.text
    assert fetch(server, "/downloadable_materials/lectures/1/paper").status == 404


def test_robots_not_found_and_methods(server: ReplicaServer) -> None:
    robots = fetch(server, "/robots.txt")
    assert robots.status == 200
    assert robots.text == ROBOTS
    assert robots.headers["content-type"] == "text/plain; charset=utf-8"
    for target in ("/", "/lecture/", "/lecture/abc", "/lecture/1-nothing", "/events/502", "/api/v1/nothing"):
        assert fetch(server, target).status == 404, target
    assert fetch(server, "/robots.txt", method="POST").status == 405


def test_conditional_requests(server: ReplicaServer, site: ReplicaSite) -> None:
    lec = site.event_lectures("502")[1]
    for target in (lec.path, f"/api/v1/thin_lectures/{lec.id}", "/api/v1/thin_lectures?filter[event_id]=502"):
        first = fetch(server, target)
        etag, modified = first.headers["etag"], first.headers["last-modified"]
        not_modified = fetch(server, target, {"If-None-Match": etag})
        assert not_modified.status == 304 and not_modified.body == b"", f"{target=}"
        assert not_modified.headers["etag"] == etag, f"{target=}"
        assert fetch(server, target, {"If-None-Match": f'"other", W/{etag}'}).status == 304, f"{target=}"
        assert fetch(server, target, {"If-None-Match": '"other"'}).status == 200, f"{target=}"
        assert fetch(server, target, {"If-Modified-Since": modified}).status == 304, f"{target=}"
        earlier = format_datetime(site.last_modified().replace(year=2020), usegmt=True)
        assert fetch(server, target, {"If-Modified-Since": earlier}).status == 200, f"{target=}"
        # If-None-Match wins over If-Modified-Since.
        assert (
            fetch(server, target, {"If-None-Match": '"other"', "If-Modified-Since": modified}).status == 200
        ), f"{target=}"
        assert fetch(server, target, {"If-Modified-Since": "not a date"}).status == 200, f"{target=}"
    head = fetch(server, lec.path, method="HEAD")
    assert head.status == 200 and head.body == b""
    assert int(head.headers["content-length"]) == len(fetch(server, lec.path).body)


def test_request_records_and_log(site: ReplicaSite, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    lec = site.event_lectures("502")[0]
    with ReplicaServer(site, request_log_path=log) as replica:
        before = time.time()
        fetch(replica, "/robots.txt", {"User-Agent": "eventcrawl/test"})
        fetch(replica, lec.path, {"User-Agent": "eventcrawl/test", "If-None-Match": '"x"'})
        fetch(replica, f"/lecture/{lec.id}")
        records = replica.requests
    assert [(r.method, r.path, r.status) for r in records] == [
        ("GET", "/robots.txt", 200),
        ("GET", lec.path, 200),
        ("GET", f"/lecture/{lec.id}", 301),
    ]
    assert records[1] == RequestRecord(
        time=records[1].time,
        method="GET",
        path=lec.path,
        if_none_match='"x"',
        if_modified_since=None,
        user_agent="eventcrawl/test",
        status=200,
        fault=None,
        kind="lecture_page",
    )
    assert before <= records[0].time <= records[1].time <= records[2].time <= time.time()
    logged = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert logged == [dataclasses.asdict(r) for r in records]


def test_throughput_on_loopback(server: ReplicaServer, site: ReplicaSite) -> None:
    paths = [lec.path for lec in site.event_lectures("502")]
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    started = time.monotonic()
    for i in range(400):
        conn.request("GET", paths[i % len(paths)])
        response = conn.getresponse()
        response.read()
        assert response.status == 200, f"{i=}"
    elapsed = time.monotonic() - started
    conn.close()
    assert 400 / elapsed > 200


# Faults ----------------------------------------------------------------------------------------------


def outcome(server: ReplicaServer, target: str, user_agent: str = "test") -> str:
    """What a client sees: a status, or the kind of broken answer."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", target, headers={"User-Agent": user_agent})
        response = conn.getresponse()
        response.read()
        return str(response.status)
    except http.client.IncompleteRead:
        return "incomplete"
    except (ConnectionResetError, http.client.RemoteDisconnected):
        return "reset"
    finally:
        conn.close()


def test_named_profiles() -> None:
    assert named_profile("none") is None
    flaky = named_profile("flaky", seed=5)
    assert flaky is not None and flaky.seed == 5
    assert flaky.fault_rate == pytest.approx(0.20)
    robots = named_profile("robots")
    assert robots is not None and robots.robots_extra() == "Disallow: /events/\nCrawl-delay: 2\n"
    strict = named_profile("strict")
    assert strict is not None and strict.strict_rate == 1.5
    with pytest.raises(ValueError):
        named_profile("chaos")


def test_flaky_profile_counts_are_fixed_by_the_seed(site: ReplicaSite) -> None:
    profile = named_profile("flaky", seed=7)
    assert profile is not None
    profile = dataclasses.replace(profile, slow_seconds=0.01)
    targets = [lec.path for lec in site.event_lectures("502")[:30]] * 10
    with ReplicaServer(site, faults=profile) as replica:
        seen = Counter(outcome(replica, t) for t in targets)
        kinds = [r.fault for r in replica.requests]
    assert seen == {"200": 237, "500": 22, "reset": 13, "429": 11, "503": 11, "incomplete": 6}
    assert Counter(kinds) == {
        None: 233,
        "500": 22,
        "reset": 13,
        "429": 11,
        "503": 11,
        "truncated": 6,
        "slow": 4,
    }
    # The same decisions without any HTTP: faults depend on the seed and request order only.
    fresh = dataclasses.replace(profile)
    replay = []
    for t in targets:
        fault = fresh.decide(t, "test", 0.0)
        replay.append(fault.kind if fault else None)
    assert replay == kinds


def test_no_url_faults_more_than_three_times_in_a_row(site: ReplicaSite) -> None:
    lec = site.event_lectures("502")[0]
    with ReplicaServer(site, faults=FaultProfile(rate_500=1.0)) as replica:
        statuses = [outcome(replica, lec.path) for _ in range(8)]
        other = outcome(replica, f"/lecture/{lec.id}")
        robots = [outcome(replica, "/robots.txt") for _ in range(5)]
    assert statuses == ["500", "500", "500", "200", "500", "500", "500", "200"]
    assert other == "500"
    assert robots == ["200"] * 5


def test_retry_after_in_seconds_or_as_a_date(site: ReplicaSite) -> None:
    profile = FaultProfile(seed=1, rate_429=1.0, max_consecutive=1000, retry_after_date_share=0.5)
    forms: Counter[str] = Counter()
    with ReplicaServer(site, faults=profile) as replica:
        for _ in range(20):
            before = time.time()
            answer = fetch(replica, "/api/v1/thin_events/502")
            assert answer.status == 429, f"{forms=}"
            value = answer.headers["retry-after"]
            if value.isdigit():
                forms["seconds"] += 1
                assert 1 <= int(value) <= 2, f"{value=}"
            else:
                forms["date"] += 1
                wait = parsedate_to_datetime(value).timestamp() - before
                assert 1 <= wait <= 4, f"{value=}, {wait=}"
    assert forms == {"seconds": 9, "date": 11}


def test_resets_and_truncated_bodies(site: ReplicaSite) -> None:
    lec = site.event_lectures("502")[0]
    with ReplicaServer(site, faults=FaultProfile(rate_reset=1.0)) as replica:
        assert [outcome(replica, lec.path) for _ in range(4)] == ["reset", "reset", "reset", "200"]
        assert [r.status for r in replica.requests] == [0, 0, 0, 200]
    with ReplicaServer(site, faults=FaultProfile(rate_truncated=1.0)) as replica:
        full = replica.router.renderer.lecture_page(lec)
        conn = http.client.HTTPConnection("127.0.0.1", replica.port, timeout=10)
        conn.request("GET", lec.path)
        response = conn.getresponse()
        assert response.status == 200
        assert int(response.getheader("Content-Length") or 0) > len(full)
        with pytest.raises(http.client.IncompleteRead) as caught:
            response.read()
        conn.close()
        assert caught.value.partial == full[: len(full) // 2]
        assert [outcome(replica, lec.path) for _ in range(3)] == ["incomplete", "incomplete", "200"]
        assert [r.fault for r in replica.requests] == ["truncated"] * 3 + [None]


def test_slow_answers(site: ReplicaSite) -> None:
    with ReplicaServer(site, faults=FaultProfile(rate_slow=1.0, slow_seconds=0.3)) as replica:
        started = time.monotonic()
        assert fetch(replica, "/api/v1/thin_events/502").status == 200
        assert time.monotonic() - started >= 0.3
        assert replica.requests[0].fault == "slow"


def test_robots_profile(site: ReplicaSite) -> None:
    with ReplicaServer(site, faults=named_profile("robots")) as replica:
        robots = fetch(replica, "/robots.txt").text
        lec = lecture_in(site, SESSION_KIND_ORAL)
        alias = fetch(replica, f"/events/502/sessions/{lec.session_id}/lecture/{lec.id}-{lec.slug}")
    assert robots == ROBOTS + "Disallow: /events/\nCrawl-delay: 2\n"
    # robots.txt asks; the server does not enforce it.
    assert alias.status == 200


def test_strict_profile_throttles_fast_clients(site: ReplicaSite) -> None:
    lec = site.event_lectures("502")[0]
    with ReplicaServer(site, faults=named_profile("strict")) as replica:
        fast = [outcome(replica, lec.path, "fast") for _ in range(9)]
        robots = outcome(replica, "/robots.txt", "fast")
        polite = outcome(replica, lec.path, "polite")
        throttled = fetch(replica, lec.path, {"User-Agent": "fast"})
    assert fast == ["200"] * 6 + ["429"] * 3
    assert robots == "200"
    assert polite == "200"
    assert throttled.status == 429 and throttled.headers["retry-after"] == "1"


def test_strict_window_slides() -> None:
    profile = named_profile("strict")
    assert profile is not None
    # One request every 0.7 s stays within 1.5/s over the 4 s window; every 0.5 s does not.
    steady = [profile.decide("/a", "steady", i * 0.7) for i in range(20)]
    assert steady == [None] * 20
    burst = [profile.decide("/a", "burst", i * 0.5) for i in range(10)]
    assert [f.kind if f else None for f in burst] == [None] * 6 + ["strict"] * 4
    later = profile.decide("/a", "burst", 4.5 + 4.0)
    assert later is None


# The command line ------------------------------------------------------------------------------------


def test_entry_point_prints_its_url_and_stops_on_sigterm(
    tmp_path: Path, records: list[dict[str, Any]]
) -> None:
    truth_path = tmp_path / "truth.jsonl"
    log_path = tmp_path / "requests.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "crawler.replica", "--lectures", "20", "--seed", "2", "--faults", "robots"]
    cmd += ["--ground-truth", str(truth_path), "--request-log", str(log_path)]
    process = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", first), first
        # The second line: the assets origin, which serves the subtitle files, on a port of its own.
        assets = process.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", assets) and assets != first, assets
        port = int(first.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/robots.txt", headers={"User-Agent": "eventcrawl/test"})
        robots = conn.getresponse().read().decode()
        conn.close()
        assert "Crawl-delay: 2" in robots
        truth = [json.loads(line) for line in truth_path.read_text(encoding="utf-8").splitlines()]
        assert truth == ground_truth(build_site(records, seed=2, lectures=20), first, assets_base=assets)
    finally:
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=10)
    assert process.returncode == 0, stderr
    assert stdout == ""
    logged = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()]
    assert [(r["path"], r["user_agent"], r["status"]) for r in logged] == [
        ("/robots.txt", "eventcrawl/test", 200)
    ]


def test_replica_does_not_import_scrapy() -> None:
    code = "import sys, crawler.replica, crawler.replica.server; print('scrapy' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "False"
