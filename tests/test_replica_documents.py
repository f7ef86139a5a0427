"""The replica's slide decks and posters over real HTTP on loopback: the assets origin serves each as a PDF
with validators (304 to a request that has it), a missing one as S3's NoSuchKey, every outage of the host
as it serves subtitle files, and counts their requests as documents; every kind is among the documents
of the demo's site; and the truth of each is what a reader of the bytes finds."""

from __future__ import annotations

import dataclasses
import hashlib
import http.client
import json
import subprocess
import sys
import urllib.robotparser
from collections import Counter
from collections.abc import Iterator
from email.utils import format_datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from crawler.privacy.spoken import redact_spoken
from crawler.replica import assets
from crawler.replica.assets import KIND_DOCUMENT, AssetsRouter, assets_request_kind
from crawler.replica.documents import (
    KIND_SHARES,
    KIND_TEXT,
    KINDS,
    SPECIAL_KINDS,
    document_bytes,
    plan_of,
    site_documents,
)
from crawler.replica.gold import documents_truth, page_text
from crawler.replica.layout import ReplicaSite, build_catalogue, build_site, load_records
from crawler.replica.server import ReplicaServer
from crawler.replica.tracks import transcripts_truth
from crawler.slides import DocumentText, read_pdf

REPO = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def get(port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET") -> Answer:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        body = response.read()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, body)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return load_records()


@pytest.fixture(scope="module")
def site(records: list[dict[str, Any]]) -> ReplicaSite:
    # The demo's size.
    return build_site(records, seed=0, lectures=120)


@pytest.fixture(scope="module")
def server(site: ReplicaSite) -> Iterator[ReplicaServer]:
    with ReplicaServer(site) as running:
        yield running


@pytest.fixture(scope="module")
def truth(site: ReplicaSite, server: ReplicaServer) -> list[dict[str, Any]]:
    return documents_truth(site, server.assets_url, event_ids=list(site.events))


def assets_port(server: ReplicaServer) -> int:
    assert server.assets_url is not None
    return int(urlsplit(server.assets_url).port or 0)


def first_of(truth: list[dict[str, Any]], kind: str, document: str | None = None) -> dict[str, Any]:
    return next(t for t in truth if t["kind"] == kind and document in (None, t["document"]))


def fetch(server: ReplicaServer, doc: dict[str, Any], headers: dict[str, str] | None = None) -> Answer:
    url = urlsplit(doc["url"])
    assert f"{url.scheme}://{url.netloc}" == server.assets_url, doc
    return get(assets_port(server), url.path, headers)


# -- the kinds ----------------------------------------------------------------------------------------


def test_the_demos_site_has_every_kind_and_every_case_a_reader_meets(
    site: ReplicaSite, truth: list[dict[str, Any]]
) -> None:
    assert {t["kind"] for t in truth} == set(KINDS)
    main = Counter(t["kind"] for t in truth if t["event_id"] == "502")
    assert all(main[k] >= 1 for k in SPECIAL_KINDS), main
    # Broken documents are a few in a hundred each; most are good text documents.
    assert all(main[k] <= 2 for k in ("cut_short", "encrypted", "not_a_pdf", "not_found")), main
    assert main[KIND_TEXT] > sum(main.values()) * 0.7
    assert {t["document"] for t in truth} == {"slides", "poster"}
    good = [t for t in truth if t["pages"] is not None]
    assert any(t["hyphenated"] for t in good) and any(t["accented"] for t in good)
    assert any("" in t["pages"] for t in good)
    assert (
        sum(t["personal_data"] is not None for t in truth)
        == Counter(t["kind"] for t in truth)["personal_data"]
    )
    streams = Counter(
        frozenset(page.compressed for page in plan_of(site, d).pages)
        for d in site_documents(site)
        if d.kind == KIND_TEXT
    )
    assert streams[frozenset({False})] and streams[frozenset({True})] and streams[frozenset({False, True})]


@pytest.mark.parametrize(("lectures", "seed"), [(100, 0), (200, 2), (None, 1)])
def test_a_crawl_of_one_event_meets_every_kind(
    records: list[dict[str, Any]], lectures: int | None, seed: int
) -> None:
    one = build_site(records, seed=seed, lectures=lectures)
    assert {t["kind"] for t in documents_truth(one, event_ids=["502"])} == set(KINDS)


@pytest.mark.parametrize("seed", [1, 2])
def test_every_kind_is_in_a_catalogue_of_small_events(records: list[dict[str, Any]], seed: int) -> None:
    catalogue = build_catalogue(records, events=3, lectures=125, seed=seed)
    assert {t["kind"] for t in documents_truth(catalogue)} == set(KINDS)


def test_a_large_site_has_a_fixed_small_share_of_each_kind(records: list[dict[str, Any]]) -> None:
    full = build_site(records, seed=0)
    kinds = Counter(t["kind"] for t in documents_truth(full, event_ids=["502"]))
    documents = sum(kinds.values())
    assert {k: kinds[k] for k in SPECIAL_KINDS} == {
        k: round(documents * KIND_SHARES[k]) for k in SPECIAL_KINDS
    }


def test_decks_are_3_to_12_pages_and_posters_one_page_with_more_text(truth: list[dict[str, Any]]) -> None:
    good = [t for t in truth if t["pages"] is not None]
    decks = [t for t in good if t["document"] == "slides"]
    posters = [t for t in good if t["document"] == "poster" and t["kind"] != "scanned"]
    assert decks and posters
    assert all(3 <= len(t["pages"]) <= 12 for t in decks), [len(t["pages"]) for t in decks]
    assert all(len(t["pages"]) == 1 for t in good if t["document"] == "poster")
    longest_slide = max(len(p) for t in decks for p in t["pages"])
    assert min(len(t["pages"][0]) for t in posters) > longest_slide / 2
    assert sum(len(t["pages"][0]) for t in posters) / len(posters) > longest_slide


def test_the_words_are_the_lectures_own(site: ReplicaSite, truth: list[dict[str, Any]]) -> None:
    for doc in (t for t in truth if t["pages"] is not None and t["kind"] != "scanned"):
        lecture = site.lectures[doc["lecture_id"]]
        head = doc["pages"][0]
        words = [w for w in lecture.title.split() if w.isascii() and w.isalpha()][:3]
        assert words and all(w in head for w in words), (doc["url"], words)
        assert site.events[lecture.event_id].name in head, doc["url"]


def test_the_planted_address_and_phone_are_on_the_title_slide_and_the_privacy_rules_take_them(
    truth: list[dict[str, Any]],
) -> None:
    planted = [t for t in truth if t["personal_data"] is not None]
    assert planted
    for doc in planted:
        email, phone = doc["personal_data"]["email"], doc["personal_data"]["phone"]
        head = doc["pages"][0]
        assert f"Contact: {email}" in head and f"Phone: {phone}" in head, doc["url"]
        redacted, count = redact_spoken(head)
        assert count >= 2 and email not in redacted and phone not in redacted, (doc["url"], redacted)
    others = [t for t in truth if t["personal_data"] is None and t["pages"] is not None]
    assert not any("Contact:" in p or "Phone:" in p for t in others for p in t["pages"])


def test_the_page_text_convention_of_the_truth() -> None:
    assert page_text(["Rank-", "1 results"]) == "Rank-1 results"
    assert page_text(["vis-", "ual recognition"]) == "vis-ual recognition"
    assert (
        page_text(["end 3-", "4", "a -", "b", "c-", "(d)", "Zoë  ", "", "  Müller"])
        == "end 3- 4 a - b c- (d) Zoë Müller"
    )
    assert page_text([]) == ""


# -- on the wire ----------------------------------------------------------------------------------------


def test_a_document_is_served_as_a_pdf_with_validators(
    site: ReplicaSite, server: ReplicaServer, truth: list[dict[str, Any]]
) -> None:
    doc = first_of(truth, KIND_TEXT)
    answer = fetch(server, doc)
    assert answer.status == 200 and answer.headers["content-type"] == "application/pdf"
    assert answer.body.startswith(b"%PDF-1.4\n") and answer.body.endswith(b"%%EOF\n")
    assert int(answer.headers["content-length"]) == len(answer.body)
    found = next(d for d in site_documents(site) if d.url.endswith(urlsplit(doc["url"]).path))
    assert answer.body == document_bytes(plan_of(site, found))
    assert answer.headers["etag"] == f'"{hashlib.sha256(answer.body).hexdigest()[:32]}"'
    modified = format_datetime(site.last_modified().replace(microsecond=0), usegmt=True)
    assert answer.headers["last-modified"] == modified
    assert fetch(server, doc).body == answer.body
    head = get(assets_port(server), urlsplit(doc["url"]).path, method="HEAD")
    assert (head.status, head.body, head.headers["content-length"]) == (200, b"", str(len(answer.body)))


def test_a_document_revalidates_with_304(server: ReplicaServer, truth: list[dict[str, Any]]) -> None:
    doc = first_of(truth, "encrypted")
    full = fetch(server, doc)
    etag, modified = full.headers["etag"], full.headers["last-modified"]
    for headers in (
        {"If-None-Match": etag},
        {"If-Modified-Since": modified},
        {"If-None-Match": f'"x", {etag}'},
    ):
        again = fetch(server, doc, headers)
        assert (again.status, again.body, again.headers.get("etag")) == (304, b"", etag), headers
    assert fetch(server, doc, {"If-None-Match": '"0000"', "If-Modified-Since": modified}).status == 200
    assert fetch(server, doc, {"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"}).body == full.body


def test_a_missing_document_answers_s3s_no_such_key(
    server: ReplicaServer, truth: list[dict[str, Any]]
) -> None:
    answer = fetch(server, first_of(truth, "not_found"))
    assert (answer.status, answer.headers["content-type"]) == (404, "application/xml")
    assert b"<Code>NoSuchKey</Code>" in answer.body
    other = get(assets_port(server), "/lecture/1/slideshow/000000000000.pdf")
    assert (other.status, other.body) == (404, answer.body)


def test_each_broken_kind_is_on_the_wire_as_declared(
    server: ReplicaServer, truth: list[dict[str, Any]]
) -> None:
    body = {k: fetch(server, first_of(truth, k)) for k in ("cut_short", "encrypted", "not_a_pdf")}
    assert all(a.status == 200 and a.headers["content-type"] == "application/pdf" for a in body.values())
    cut = body["cut_short"].body
    assert cut.startswith(b"%PDF-") and b"trailer" not in cut and b"%%EOF" not in cut
    assert cut.count(b"stream\n") > cut.count(b"endstream")
    encrypted = body["encrypted"].body
    assert b"/Encrypt" in encrypted and b"/ID [<" in encrypted and encrypted.endswith(b"%%EOF\n")
    assert not body["not_a_pdf"].body.startswith(b"%PDF")


def test_the_truth_is_what_a_reader_of_the_served_files_finds(
    server: ReplicaServer, truth: list[dict[str, Any]]
) -> None:
    for doc in truth:
        answer = fetch(server, doc)
        if doc["problem"] == "not_found":
            assert answer.status == 404, doc["url"]
            continue
        assert answer.status == 200, doc["url"]
        expected = DocumentText(tuple(doc["pages"]) if doc["pages"] is not None else None, doc["problem"])
        assert read_pdf(answer.body) == expected, doc["url"]


@pytest.mark.parametrize(
    ("outage", "status", "content_type", "body"),
    [
        ("html", 200, "text/html; charset=utf-8", assets.MAINTENANCE_PAGE.encode()),
        ("unavailable", 503, "text/plain; charset=utf-8", b"503 Service Unavailable\n"),
        ("empty", 200, "application/pdf", b""),
        ("gone", 404, "application/xml", assets.NOT_FOUND_XML.encode()),
    ],
)
def test_an_outage_of_the_host_applies_to_documents(
    server: ReplicaServer,
    truth: list[dict[str, Any]],
    outage: str,
    status: int,
    content_type: str,
    body: bytes,
) -> None:
    server.assets_router.outage = outage
    try:
        for kind in (KIND_TEXT, "not_found"):
            answer = fetch(server, first_of(truth, kind))
            assert (answer.status, answer.headers["content-type"], answer.body) == (
                status,
                content_type,
                body,
            ), kind
    finally:
        server.assets_router.outage = None
    assert fetch(server, first_of(truth, KIND_TEXT)).body.startswith(b"%PDF")


def test_a_disallowing_robots_txt_covers_documents(
    server: ReplicaServer, truth: list[dict[str, Any]]
) -> None:
    port = assets_port(server)
    allowed = urllib.robotparser.RobotFileParser()
    allowed.parse(get(port, "/robots.txt").body.decode().splitlines())
    assert all(allowed.can_fetch("eventcrawl", t["url"]) for t in truth)
    server.assets_router.outage = "disallow"
    try:
        robots = urllib.robotparser.RobotFileParser()
        robots.parse(get(port, "/robots.txt").body.decode().splitlines())
    finally:
        server.assets_router.outage = None
    assert not any(robots.can_fetch("eventcrawl", t["url"]) for t in truth)


def test_the_request_log_counts_documents_apart(site: ReplicaSite, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with ReplicaServer(site, request_log_path=log) as running:
        slides = first_of(documents_truth(site, running.assets_url), KIND_TEXT, "slides")
        poster = first_of(documents_truth(site, running.assets_url), KIND_TEXT, "poster")
        track = next(t for t in transcripts_truth(site, running.assets_url) if t["kind"] == "clean")
        port = assets_port(running)
        paths = [urlsplit(u).path for u in (slides["url"], poster["url"], track["subtitle_url"])]
        for target in ("/robots.txt", *paths, "/lecture/1/slideshow/x.png"):
            get(port, target)
        seen = [(r.origin, r.kind, r.path, r.status) for r in running.requests]
    assert seen == [
        ("assets", "assets_robots", "/robots.txt", 200),
        ("assets", KIND_DOCUMENT, paths[0], 200),
        ("assets", KIND_DOCUMENT, paths[1], 200),
        ("assets", "subtitle", paths[2], 200),
        ("assets", "assets_other", "/lecture/1/slideshow/x.png", 404),
    ]
    logged = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [r["kind"] for r in logged] == [k for _, k, _, _ in seen]
    assert assets_request_kind("/lecture/12/poster_document/abc.pdf?x=1") == KIND_DOCUMENT
    assert assets_request_kind("/private/lecture/12/slideshow/abc.pdf") == "assets_other"


def test_documents_are_written_when_first_asked_for_and_kept(
    site: ReplicaSite, truth: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []
    write = assets.document_bytes

    def counting(plan: Any) -> bytes | None:
        written.append(plan.lecture_id)
        return write(plan)

    monkeypatch.setattr(assets, "document_bytes", counting)
    router = AssetsRouter(site, "http://127.0.0.1:1")
    assert written == []
    path = urlsplit(first_of(truth, KIND_TEXT)["url"]).path
    bodies = [router.respond(path, {}).body for _ in range(3)]
    assert len(written) == 1 and bodies[0] == bodies[1] == bodies[2]
    assert router.respond(urlsplit(first_of(truth, "not_found")["url"]).path, {}).status == 404
    assert len(written) == 2


def digest(site: ReplicaSite) -> str:
    files = hashlib.sha256()
    for found in site_documents(site):
        files.update(found.path.encode() + b"\0" + (document_bytes(plan_of(site, found)) or b"-"))
    return files.hexdigest()


def test_the_documents_are_the_same_for_a_seed_in_every_process(site: ReplicaSite) -> None:
    code = (
        "from crawler.replica.layout import build_site, load_records\n"
        "from tests.test_replica_documents import digest\n"
        "print(digest(build_site(load_records(), seed=0, lectures=120)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == digest(site)
