"""The replica's subtitle files over real HTTP on loopback: a second origin (the assets host) serves them
with its own robots.txt, validators and gzip; every broken kind a real crawl meets is there and is served
as declared; and the ground truth of each track says what a reader of the file must find in it."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import html
import http.client
import json
import re
import signal
import socket
import subprocess
import sys
import time
import unicodedata
import urllib.robotparser
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from crawler.replica.assets import ASSETS_ROBOTS_TXT
from crawler.replica.layout import ReplicaSite, build_catalogue, build_site, ground_truth, load_records
from crawler.replica.server import ReplicaServer
from crawler.replica.subtitle_files import KIND_STYLES, SUBRIP_LITERAL_SENTENCE, TEAMS_VOICE, file_bytes
from crawler.replica.subtitles import (
    BROKEN_KINDS,
    CP1252_SENTENCE,
    KIND_CLEAN,
    KINDS,
    MAX_SENTENCES,
    MIN_SENTENCES,
    SPOKEN_EMAIL,
    SPOKEN_PHONE,
)
from crawler.replica.tracks import plan_for, transcripts_truth
from tests.support.replica import running_replica
from tests.test_personal_data import EMAIL

REPO = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024
TIMING = re.compile(r"^(\d\d):(\d\d):(\d\d)[.,](\d{3}) --> (\d\d):(\d\d):(\d\d)[.,](\d{3})(?: .*)?$")
# Any timing line the replica writes: hours left out or not, fields unpadded, a second's fraction of one to
# three digits (a fraction: "3.5" is 3,500 ms).
ANY_TIMING = re.compile(
    r"^(?:(\d+):)?(\d+):(\d+)[.,](\d{1,3}) --> (?:(\d+):)?(\d+):(\d+)[.,](\d{1,3})(?: .*)?$"
)


@dataclasses.dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def get(port: int, path: str, headers: dict[str, str] | None = None) -> Answer:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
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
    return transcripts_truth(site, server.assets_url, event_ids=list(site.events))


def assets_port(server: ReplicaServer) -> int:
    assert server.assets_url is not None
    return int(urlsplit(server.assets_url).port or 0)


def first_of(truth: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(t for t in truth if t["kind"] == kind)


def first_plain(truth: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """The first track of ``kind`` written as the kind alone says (the first of the kind when the site
    has none such)."""
    return next((t for t in truth if t["kind"] == kind and t["style"] == "plain"), first_of(truth, kind))


def fetch_track(
    server: ReplicaServer, track: dict[str, Any], headers: dict[str, str] | None = None
) -> Answer:
    url = urlsplit(track["subtitle_url"])
    assert f"{url.scheme}://{url.netloc}" == server.assets_url, track
    return get(assets_port(server), url.path, headers)


# -- a tiny reader of what the files hold, to check the truth against the bytes ----------------------


def cue_blocks(text: str) -> Iterator[list[str]]:
    """The blocks of a file: cut at blank lines, and before a timing line that follows a cue's text
    without one."""
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = block.strip("\n").split("\n")
        while True:
            cut = next((k for k, line in enumerate(lines) if k >= 2 and "-->" in line), None)
            if cut is None:
                break
            yield lines[:cut]
            lines = lines[cut:]
        yield lines


def millis(hours: str | None, minutes: str, seconds: str, fraction: str) -> int:
    return ((int(hours or 0) * 60 + int(minutes)) * 60 + int(seconds)) * 1000 + int(fraction.ljust(3, "0"))


def read_cues(text: str) -> tuple[list[tuple[int, int, list[str]]], int]:
    """(start ms, end ms, text lines) of every readable cue, and how many cues had a broken timing line.
    Blocks without a timing line (header, NOTE, STYLE, REGION) are left out; ids and settings ignored."""
    cues, skipped = [], 0
    for lines in cue_blocks(text):
        at = next((k for k, line in enumerate(lines[:2]) if "-->" in line), None)
        if at is None:
            continue
        found = ANY_TIMING.match(lines[at])
        if found is None:
            skipped += 1
            continue
        fields = found.groups()
        start, end = millis(*fields[:4]), millis(*fields[4:])
        cues.append((start, end, [html.unescape(re.sub(r"<[^>]*>", "", line)) for line in lines[at + 1 :]]))
    return cues, skipped


def said(text: str, auto: bool) -> tuple[str, list[int], int]:
    """(text, segment starts, cues skipped) of a file: a human track's every cue, an auto track's new
    line of every cue longer than the 10 ms repeats."""
    cues, skipped = read_cues(text)
    if auto:
        cues = [(start, end, lines[-1:]) for start, end, lines in cues if end - start > 10]
    words = " ".join(" ".join(lines) for _, _, lines in cues)
    return " ".join(unicodedata.normalize("NFC", words).split()), [c[0] for c in cues], skipped


# -- the kinds ---------------------------------------------------------------------------------------


def test_every_kind_is_present_in_a_site_of_the_demos_size(truth: list[dict[str, Any]]) -> None:
    assert {t["kind"] for t in truth} == set(KINDS)
    # A small share each in the main event: one of every broken kind, the rest clean.
    main = Counter(t["kind"] for t in truth if t["event_id"] == "502")
    assert all(main[k] == 1 for k in BROKEN_KINDS), main
    assert main[KIND_CLEAN] == sum(main.values()) - len(BROKEN_KINDS)


@pytest.mark.parametrize(("lectures", "seed"), [(100, 0), (120, 0), (200, 2), (None, 1)])
def test_a_crawl_of_one_event_meets_every_kind(
    records: list[dict[str, Any]], lectures: int | None, seed: int
) -> None:
    """An event with enough tracks has every kind among its own: a crawl of it alone meets them all."""
    one = build_site(records, seed=seed, lectures=lectures)
    assert {t["kind"] for t in transcripts_truth(one, event_ids=["502"])} == set(KINDS)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_every_kind_is_present_in_a_catalogue_of_40_lectures_with_subtitles(
    records: list[dict[str, Any]], seed: int
) -> None:
    catalogue = build_catalogue(records, events=3, lectures=125, seed=seed)
    with_subtitles = [lec for lec in catalogue.lectures.values() if lec.subtitles]
    assert len(with_subtitles) >= 40
    kinds = {t["kind"] for t in transcripts_truth(catalogue, event_ids=list(catalogue.events))}
    assert kinds == set(KINDS)


def test_a_large_site_has_a_fixed_small_share_of_each_kind(records: list[dict[str, Any]]) -> None:
    full = build_site(records, seed=0)
    kinds = Counter(s.kind for lec in full.event_lectures("502") for s in lec.subtitles)
    tracks = sum(kinds.values())
    assert {kinds[k] for k in BROKEN_KINDS} == {round(tracks * 0.015)}
    assert kinds[KIND_CLEAN] > tracks / 2


def test_each_broken_kind_is_on_the_wire_as_declared(
    server: ReplicaServer, truth: list[dict[str, Any]]
) -> None:
    body = {k: fetch_track(server, first_plain(truth, k)).body for k in BROKEN_KINDS if k != "no_url"}
    for kind in KIND_STYLES:
        assert_written_as_declared(kind, first_plain(truth, kind)["style"], body[kind])
    assert first_of(truth, "srt_as_vtt")["subtitle_url"].endswith(".vtt")
    assert body["bom"].startswith(b"\xef\xbb\xbfWEBVTT\n")
    crlf = body["crlf"]
    assert crlf.startswith(b"WEBVTT\r\n\r\n") and crlf.count(b"\r\n") == crlf.count(b"\n") > 10
    assert re.search(
        rb"\n\n1\n[0-9:.]+ --> [0-9:.]+ align:start position:10% line:85% size:80%\n", body["cue_settings"]
    )
    assert re.search(rb"\n\ncue-2\n[0-9:.]+ --> [0-9:.]+ align:start", body["cue_settings"])
    blocks = body["blocks"]
    assert b"\n\nSTYLE\n::cue {" in blocks and b"\n\nREGION\nid:speaker\n" in blocks
    assert blocks.count(b"\n\nNOTE") >= 2
    assert all(entity in body["entities"] for entity in (b"&amp;", b"&lt;", b"&gt;", b"&quot;", b"&#39;"))
    with pytest.raises(UnicodeDecodeError):
        body["cp1252"].decode("utf-8")
    assert CP1252_SENTENCE.encode("cp1252") in body["cp1252"]
    assert len(body["oversize"]) > 2 * MIB
    assert (
        sum(
            1
            for line in body["malformed_cue"].decode().split("\n")
            if "-->" in line and not TIMING.match(line)
        )
        == 1
    )
    assert SPOKEN_EMAIL.encode() in body["personal_data"] and SPOKEN_PHONE.encode() in body["personal_data"]
    assert body["offsite_redirect"].startswith(b"<html>")


def timing_lines(body: bytes) -> list[str]:
    return [line for line in body.decode("utf-8").split("\n") if "-->" in line]


def assert_written_as_declared(kind: str, style: str, body: bytes) -> None:
    """The file of a track of ``kind`` is written in ``style`` (see crawler.replica.subtitle_files)."""
    case = f"case {kind} {style}"
    if kind == "srt_as_vtt":
        assert body.startswith(b"1\n") and b"WEBVTT" not in body, case
        assert re.match(rb"1\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n", body), case
    if (kind, style) == ("srt_as_vtt", "subrip_tags"):
        assert b'<font color="#ffff00">' in body and b"</i>" in body, case
        assert f"\n<i>Keep in mind</i> {SUBRIP_LITERAL_SENTENCE[13:]}\n".encode() in body, case
        assert " p < 0.05 " in SUBRIP_LITERAL_SENTENCE, case
    if (kind, style) == ("spans", "plain"):
        assert all(tag in body for tag in (b"<v.loud Presenter>", b"<i>", b"</b>", b"<c.yellow>", b"<u>")), (
            case
        )
    if (kind, style) == ("spans", "teams"):
        times = timing_lines(body)
        teams_time = r"\d+:\d{1,2}:\d{1,2}\.\d{1,3}"
        assert all(re.fullmatch(f"{teams_time} --> {teams_time}", t) for t in times), case
        assert re.search(
            rb"\n\n[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}/1-0\n0:", body
        ), case
        assert body.count(f"<v {TEAMS_VOICE}>".encode()) == body.count(b"</v>") == len(times), case
    if (kind, style) == ("inline_timestamps", "plain"):
        assert re.search(rb"\w<\d\d:\d\d:\d\d\.\d{3}><c> \S+</c>", body), case
    if (kind, style) == ("inline_timestamps", "youtube"):
        assert body.startswith(b"WEBVTT\nKind: captions\nLanguage: en\n\n"), case
        assert all(t.endswith(" align:start position:0%") for t in timing_lines(body)), case
        # The first line rolls one word at a time: a word alone under a line of one space, then again
        # above the next word.
        first_words = rb"WEBVTT\n.+\n.+\n\n.+\n \n(\S+)\n\n.+\n\1\n \n\n.+\n\1\n\S+\n"
        assert re.match(first_words, body), case
        assert re.search(rb"\w<\d\d:\d\d:\d\d\.\d{3}><c> \S+</c>", body), case
        # One cue runs into the next timing line, its blank line missing.
        assert len(re.findall(rb"\n \n\d\d:\d\d:\d\d\.\d{3} --> ", body)) == 1, case
    if (kind, style) == ("inline_timestamps", "mm_ss"):
        mm_ss = r"\d\d:\d\d\.\d{3}"
        assert all(re.fullmatch(f"{mm_ss} --> {mm_ss}", t) for t in timing_lines(body)), case
        assert re.search(rb"\w<\d\d:\d\d\.\d{3}><c> \S+</c>", body), case


def test_every_style_is_among_the_main_events_tracks_of_a_full_site_and_written_as_declared(
    records: list[dict[str, Any]],
) -> None:
    """A crawl of the main event of a full site (as the end-to-end transcripts test crawls it) meets
    every style each kind is written in."""
    full = build_site(records, seed=0)
    styles = {t["subtitle_url"]: t["style"] for t in transcripts_truth(full)}
    seen = set()
    for lecture in full.event_lectures("502"):
        for subtitle in (s for s in lecture.subtitles if s.kind in KIND_STYLES):
            style = styles[subtitle.url(None)]
            assert_written_as_declared(subtitle.kind, style, file_bytes(plan_for(0, lecture, subtitle)))
            seen.add((subtitle.kind, style))
    assert seen == {(kind, style) for kind, kind_styles in KIND_STYLES.items() for style in kind_styles}


def test_failures_are_answered_as_declared(server: ReplicaServer, truth: list[dict[str, Any]]) -> None:
    missing = fetch_track(server, first_of(truth, "not_found"))
    assert missing.status == 404 and b"NoSuchKey" in missing.body
    moved = fetch_track(server, first_of(truth, "offsite_redirect"))
    location = urlsplit(moved.headers["location"])
    assert moved.status == 302
    assert (location.scheme, location.hostname) == ("http", "elsewhere.invalid")
    assert location.path == urlsplit(first_of(truth, "offsite_redirect")["subtitle_url"]).path
    large = fetch_track(server, first_of(truth, "oversize"))
    assert large.status == 200 and int(large.headers["content-length"]) > 2 * MIB
    unlisted = first_of(truth, "no_url")
    assert unlisted["subtitle_url"] is None and unlisted["row"] is False
    assert [t["row"] for t in truth if t["kind"] != "no_url"] == [True] * (len(truth) - 1)
    for kind in ("not_found", "oversize", "offsite_redirect", "robots_disallowed", "no_url"):
        track = first_of(truth, kind)
        assert (track["text"], track["segment_starts_ms"]) == (None, None), f"{kind=}"
    assert {
        k: first_of(truth, k)["problem"]
        for k in ("not_found", "oversize", "offsite_redirect", "robots_disallowed", "cp1252")
    } == {
        "not_found": "not_found",
        "oversize": "too_large",
        "offsite_redirect": "off_host",
        "robots_disallowed": "robots",
        "cp1252": "not_utf8",
    }


def test_gzip_when_asked_and_only_then(server: ReplicaServer, truth: list[dict[str, Any]]) -> None:
    track = first_of(truth, "gzip")
    plain = fetch_track(server, track)
    packed = fetch_track(server, track, {"Accept-Encoding": "gzip, deflate"})
    refused = fetch_track(server, track, {"Accept-Encoding": "gzip;q=0, identity"})
    assert "content-encoding" not in plain.headers and plain.body.startswith(b"WEBVTT\n")
    assert packed.headers["content-encoding"] == "gzip" and packed.body[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed.body) == plain.body
    assert "content-encoding" not in refused.headers
    assert packed.headers["vary"] == "Accept-Encoding"
    assert packed.headers["etag"] != plain.headers["etag"]
    # A clean track is never compressed.
    clean = fetch_track(server, first_of(truth, KIND_CLEAN), {"Accept-Encoding": "gzip"})
    assert "content-encoding" not in clean.headers


def test_files_revalidate_with_304(
    server: ReplicaServer, truth: list[dict[str, Any]], site: ReplicaSite
) -> None:
    for kind in (KIND_CLEAN, "gzip"):
        headers = {"Accept-Encoding": "gzip"} if kind == "gzip" else {}
        first = fetch_track(server, first_of(truth, kind), headers)
        assert first.status == 200 and re.fullmatch(r'"[0-9a-f]{32}(-gzip)?"', first.headers["etag"]), kind
        assert first.headers["last-modified"] == server.router.last_modified_header, kind
        again = fetch_track(
            server, first_of(truth, kind), {**headers, "If-None-Match": first.headers["etag"]}
        )
        assert (again.status, again.body, again.headers["etag"]) == (304, b"", first.headers["etag"]), kind
        since = {**headers, "If-Modified-Since": first.headers["last-modified"]}
        assert fetch_track(server, first_of(truth, kind), since).status == 304, kind
        other = fetch_track(server, first_of(truth, kind), {**headers, "If-None-Match": '"0000"'})
        assert (other.status, other.body) == (200, first.body), kind


def test_the_assets_origin_has_its_own_robots_txt(server: ReplicaServer, truth: list[dict[str, Any]]) -> None:
    answer = get(assets_port(server), "/robots.txt")
    assert (answer.status, answer.body.decode()) == (200, "User-agent: *\nDisallow: /private/\n")
    assert answer.body.decode() == ASSETS_ROBOTS_TXT
    assert b"/private/" not in get(server.port, "/robots.txt").body
    robots = urllib.robotparser.RobotFileParser()
    robots.parse(answer.body.decode().splitlines())
    hidden = first_of(truth, "robots_disallowed")["subtitle_url"]
    assert urlsplit(hidden).path.startswith("/private/lecture/")
    assert not robots.can_fetch("eventcrawl", hidden)
    assert all(
        robots.can_fetch("eventcrawl", t["subtitle_url"]) for t in truth if t["kind"] in (KIND_CLEAN, "gzip")
    )


def test_the_request_log_tells_the_origins_apart(site: ReplicaSite, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with ReplicaServer(site, request_log_path=log) as running:
        track = first_of(transcripts_truth(site, running.assets_url, list(site.events)), KIND_CLEAN)
        port = assets_port(running)
        for target in ("/robots.txt", urlsplit(track["subtitle_url"]).path, "/nothing"):
            get(port, target)
        get(running.port, "/robots.txt")
        seen = [(r.origin, r.kind, r.path, r.status) for r in running.requests]
    path = urlsplit(track["subtitle_url"]).path
    assert seen == [
        ("assets", "assets_robots", "/robots.txt", 200),
        ("assets", "subtitle", path, 200),
        ("assets", "assets_other", "/nothing", 404),
        ("web", "robots", "/robots.txt", 200),
    ]
    logged = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(r["origin"], r["path"]) for r in logged] == [(o, p) for o, _, p, _ in seen]


# -- the endpoint, the page and the ground truth agree ----------------------------------------------


def test_the_endpoint_and_the_page_json_name_the_same_files(server: ReplicaServer, site: ReplicaSite) -> None:
    lecture_truth = ground_truth(
        site, server.base_url, event_ids=list(site.events), assets_base=server.assets_url
    )
    listed = {r["lecture_id"]: r["subtitles"] for r in lecture_truth}
    checked = 0
    for lecture in (lec for lec in site.lectures.values() if lec.subtitles):
        query = (
            f"filter[lecture_id]={lecture.id}&filter[scope]=with_subtitles&include=language&page[size]=100"
        )
        api = json.loads(get(server.port, f"/api/v1/transcripts?{query}").body)["data"]
        page = get(server.port, lecture.path).body.decode()
        found = re.search(r'<script id="__NEXT_DATA__" type="application/json">(.*?)</script>', page)
        assert found is not None, lecture.id
        fallback = json.loads(found.group(1))["props"]["pageProps"]["fallback"].values()
        in_page = next(
            d["data"]
            for d in fallback
            if isinstance(d["data"], list) and d["data"][:1] and d["data"][0]["type"] == "transcripts"
        )
        from_api = [t["attributes"]["subtitle_url"] for t in api]
        assert from_api == [t["attributes"]["subtitleUrl"] for t in in_page], lecture.id
        assert from_api == [s.url(server.assets_url) for s in lecture.subtitles], lecture.id
        assert all(u is None or u.startswith(f"{server.assets_url}/") for u in from_api), lecture.id
        # The lecture's ``subtitles`` list the tracks with a file, at the served URLs.
        assert [s["url"] for s in listed[lecture.id]] == [u for u in from_api if u is not None], lecture.id
        # Only subtitle files moved to the assets origin: the transcript's PDF, videos and slides did not.
        pdfs = [t["attributes"]["pdf_url"] for t in api if t["attributes"]["subtitle_url"]]
        assert all(p.startswith("https://assets.underline.io/") for p in pdfs), lecture.id
        media = json.loads(get(server.port, f"/api/v1/thin_lectures/{lecture.id}").body)["data"]["attributes"]
        for name in ("playlist", "slideshow_url", "poster_document_url"):
            assert (media[name] or "https://assets.underline.io/").startswith(
                "https://assets.underline.io/"
            ), f"{lecture.id=}, {name=}"
        checked += 1
    assert checked >= 40


def test_the_truth_is_what_the_files_say(server: ReplicaServer, truth: list[dict[str, Any]]) -> None:
    readable = [t for t in truth if t["text"] is not None]
    assert {t["kind"] for t in readable} == set(KINDS) - {
        "not_found",
        "oversize",
        "offsite_redirect",
        "robots_disallowed",
        "no_url",
    }
    for track in readable:
        answer = fetch_track(server, track, {"Accept-Encoding": "gzip"})
        raw = (
            gzip.decompress(answer.body) if answer.headers.get("content-encoding") == "gzip" else answer.body
        )
        text, starts, skipped = said(
            raw.decode("utf-8", errors="replace").removeprefix("\ufeff"), track["auto_generated"]
        )
        assert text == track["text"], f"{track['kind']=}, {track['subtitle_url']=}"
        assert skipped == track["cues_skipped"], f"{track['kind']=}"
        if track["segment_starts_ms"] is not None:
            assert starts == track["segment_starts_ms"], f"{track['kind']=}"


def test_a_clean_human_track_read_with_a_regex(server: ReplicaServer, truth: list[dict[str, Any]]) -> None:
    track = next(t for t in truth if t["kind"] == KIND_CLEAN and not t["auto_generated"])
    body = fetch_track(server, track).body.decode("utf-8")
    cues = re.findall(r"\n\n(\d\d):(\d\d):(\d\d)\.(\d{3}) --> \S+\n([^\n]+)", body)
    assert " ".join(c[4] for c in cues) == track["text"]
    assert [((int(h) * 60 + int(m)) * 60 + int(s)) * 1000 + int(ms) for h, m, s, ms, _ in cues] == track[
        "segment_starts_ms"
    ]


def test_the_truth_of_the_marked_tracks(truth: list[dict[str, Any]]) -> None:
    personal = first_of(truth, "personal_data")
    assert personal["personal_data"] == {"email": SPOKEN_EMAIL, "phone": SPOKEN_PHONE}
    assert SPOKEN_EMAIL in personal["text"] and SPOKEN_PHONE in personal["text"]
    assert [t["lecture_id"] for t in truth if t["personal_data"]] == [personal["lecture_id"]]
    # The address is one the personal-data checks of a crawl's files find.
    assert EMAIL.fullmatch(SPOKEN_EMAIL.encode())
    entities = first_of(truth, "entities")["text"]
    assert 'Q&A comes last, and note that recall < 1 > 0 is "not" what we\'re after.' in entities
    cp1252 = first_of(truth, "cp1252")["text"]
    assert (
        "Our na\ufffdve caf\ufffd baseline \ufffd it\ufffds the \ufffdsimple\ufffd one \ufffd works."
        in cp1252
    )
    malformed = first_of(truth, "malformed_cue")
    assert malformed["cues_skipped"] == 1
    assert [t["cues_skipped"] for t in truth].count(1) == 1
    assert first_of(truth, "inline_timestamps")["segment_starts_ms"] is None
    assert first_of(truth, "inline_timestamps")["auto_generated"] is True
    assert all(
        first_of(truth, k)["auto_generated"] is False
        for k in ("spans", "entities", "cp1252", "malformed_cue")
    )


def test_talks_are_3_to_40_sentences_and_their_files_5_to_30_kb(
    server: ReplicaServer, truth: list[dict[str, Any]], site: ReplicaSite
) -> None:
    sizes = {"human": [], "auto": []}
    for track in (t for t in truth if t["kind"] == KIND_CLEAN):
        sizes["auto" if track["auto_generated"] else "human"].append(len(fetch_track(server, track).body))
    assert min(min(s) for s in sizes.values()) >= 5_000 and max(max(s) for s in sizes.values()) <= 30_000, (
        sizes
    )
    assert sizes["human"] and sizes["auto"]
    counts = [
        len(plan_for(site.seed, lec, s).sentences) for lec in site.lectures.values() for s in lec.subtitles
    ]
    assert min(counts) >= MIN_SENTENCES and max(counts) <= MAX_SENTENCES


# -- determinism and the command line -----------------------------------------------------------------


def digest(site: ReplicaSite) -> str:
    """SHA-256 of the site's tracks' truth and of a few of their files."""
    from crawler.replica.subtitle_files import file_bytes

    hashed = hashlib.sha256(json.dumps(transcripts_truth(site, "http://a", list(site.events))).encode())
    for lecture in list(site.lectures.values())[:30]:
        for subtitle in lecture.subtitles:
            if subtitle.kind != "oversize":
                hashed.update(file_bytes(plan_for(site.seed, lecture, subtitle)))
    return hashed.hexdigest()


def test_the_tracks_are_the_same_for_a_seed_in_every_process(records: list[dict[str, Any]]) -> None:
    here = digest(build_site(records, seed=7, lectures=60))
    assert here == digest(build_site(records, seed=7, lectures=60))
    assert here != digest(build_site(records, seed=8, lectures=60))
    code = (
        "from crawler.replica.layout import build_site, load_records\n"
        "from tests.test_replica_subtitles import digest\n"
        "print(digest(build_site(load_records(), seed=7, lectures=60)))"
    )
    for hash_seed in ("1", "2"):
        other = subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            env={"PYTHONHASHSEED": hash_seed, "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
        )
        assert other.stdout.strip() == here, f"{hash_seed=}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def printed_lines(path: Path, process: subprocess.Popen[bytes], count: int, timeout: float = 60) -> list[str]:
    """The lines ``process`` has printed to ``path`` once it printed ``count`` (or exited, or timed out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        text = path.read_text(encoding="utf-8")
        if text.count("\n") >= count:
            break
        time.sleep(0.02)
    return path.read_text(encoding="utf-8").splitlines()


def test_the_command_line_serves_the_assets_on_the_port_asked_for(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    port, tracks, out = free_port(), tmp_path / "tracks.jsonl", tmp_path / "stdout"
    cmd = [sys.executable, "-m", "crawler.replica", "--lectures", "120", "--assets-port", str(port)]
    with out.open("wb") as sink:
        process = subprocess.Popen(
            [*cmd, "--transcripts-ground-truth", str(tracks)], cwd=REPO, stdout=sink, stderr=subprocess.PIPE
        )
    try:
        lines = printed_lines(out, process, 2)
        assert len(lines) == 2, lines
        base, assets = lines
        assert assets == f"http://127.0.0.1:{port}" != base
        written = [json.loads(line) for line in tracks.read_text(encoding="utf-8").splitlines()]
        assert written == transcripts_truth(build_site(records, lectures=120), assets)
        assert get(port, "/robots.txt").body.decode() == ASSETS_ROBOTS_TXT
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=10)
    assert process.returncode == 0, stderr
    # Nothing more than the two URLs.
    assert out.read_text(encoding="utf-8") == f"{base}\n{assets}\n"


def test_without_assets_one_line_and_the_real_host(tmp_path: Path) -> None:
    with running_replica(tmp_path / "replica", "--lectures", "40", "--no-assets") as replica:
        assert replica.assets_url is None
        urls = [s["url"] for r in replica.full_ground_truth() for s in r["subtitles"]]
    assert urls and all(u.startswith("https://assets.underline.io/lecture/") for u in urls)


def test_a_running_replica_gives_its_assets_origin_and_the_tracks_truth(tmp_path: Path) -> None:
    with running_replica(tmp_path / "replica", "--lectures", "120") as replica:
        assert replica.assets_url is not None and replica.assets_url != replica.base_url
        tracks = replica.transcripts_truth()
        served = [t for t in tracks if t["kind"] == KIND_CLEAN]
        answer = get(int(urlsplit(replica.assets_url).port or 0), urlsplit(served[0]["subtitle_url"]).path)
        subtitles = [s["url"] for r in replica.full_ground_truth() for s in r["subtitles"]]
    assert answer.status == 200 and answer.body.startswith(b"WEBVTT\n")
    assert {t["kind"] for t in tracks} <= set(KINDS) and len(tracks) > 20
    assert subtitles == [t["subtitle_url"] for t in tracks if t["row"]]
    assert all(u.startswith(f"{replica.assets_url}/") for u in subtitles)


def test_a_copy_of_a_lecture_shares_its_files_and_their_truth(site: ReplicaSite) -> None:
    """A lecture served twice under two ids (the planted duplicates) lists the same files: what they say
    is the original's, whatever the copy's abstract says."""
    original = next(lec for lec in site.lectures.values() if lec.subtitles and lec.event_id == "502")
    copy = dataclasses.replace(original, id="139999", abstract="A different abstract. It has two sentences.")
    doubled = dataclasses.replace(site, lectures={**site.lectures, copy.id: copy})
    with ReplicaServer(doubled) as running:
        tracks = transcripts_truth(doubled, running.assets_url)
        mine = [t for t in tracks if t["lecture_id"] == original.id]
        theirs = [t for t in tracks if t["lecture_id"] == copy.id]
        files = [(t, fetch_track(running, t).body) for t in theirs if t["kind"] == KIND_CLEAN]
    assert mine and [t["text"] for t in theirs] == [t["text"] for t in mine]
    assert [t["subtitle_url"] for t in theirs] == [t["subtitle_url"] for t in mine]
    assert "different abstract" not in " ".join(t["text"] or "" for t in theirs)
    assert files and all(said(body.decode(), t["auto_generated"])[0] == t["text"] for t, body in files)
