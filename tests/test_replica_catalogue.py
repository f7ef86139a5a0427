"""The replica's catalogue mode (``--events N --lectures M``): N events of about equal size, each with its
own id, name, dates, sessions and lecture ids, built deterministically from copies of the real records and
served by the same server (listing per event, the whole library, pages, profiles and transcripts)."""

from __future__ import annotations

import hashlib
import http.client
import itertools
import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crawler.replica.layout import (
    EVENTS,
    ReplicaSite,
    build_catalogue,
    build_site,
    catalogue_events,
    ground_truth,
    load_records,
    sessions_truth,
)
from crawler.replica.server import ReplicaServer, build_parser, default_event_ids, site_from_args

BASE = "http://replica.test"
EVENT_COUNT = 5
LECTURES = 1003


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return load_records()


@pytest.fixture(scope="module")
def site(records: list[dict[str, Any]]) -> ReplicaSite:
    return build_catalogue(records, events=EVENT_COUNT, lectures=LECTURES, seed=2)


@pytest.fixture(scope="module")
def server(site: ReplicaSite) -> Iterator[ReplicaServer]:
    with ReplicaServer(site) as running:
        yield running


def get_json(server: ReplicaServer, target: str) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", target, headers={"Accept": "application/vnd.api+json"})
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200, (target, response.status)
        return json.loads(body)
    finally:
        conn.close()


def get_text(server: ReplicaServer, target: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", target)
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200, (target, response.status)
        return body.decode("utf-8")
    finally:
        conn.close()


def listed_ids(server: ReplicaServer, query: str) -> list[str]:
    ids: list[str] = []
    number = 1
    while True:
        doc = get_json(
            server,
            f"/api/v1/thin_lectures?{query}&include=sorted_profiles&page[size]=100&page[number]={number}",
        )
        if not doc["data"]:
            return ids
        ids += [r["id"] for r in doc["data"]]
        number += 1


def test_events_share_the_lectures_about_equally(site: ReplicaSite) -> None:
    assert len(site.events) == EVENT_COUNT
    assert len(site.lectures) == LECTURES
    sizes = Counter(lec.event_id for lec in site.lectures.values())
    assert sorted(sizes.values()) == [200, 200, 201, 201, 201]
    assert set(sizes) == set(site.events)
    # None of the default site's events, names or id ranges.
    assert not set(site.events) & set(EVENTS)
    names = [e.name for e in site.events.values()]
    assert len(set(names)) == EVENT_COUNT
    assert not {"EMNLP 2025", "EMNLP 2024"} & set(names)


def test_each_event_has_its_own_ids_dates_and_sessions(site: ReplicaSite) -> None:
    ranges = sorted(e.lecture_id_range for e in site.events.values())
    for (_, high), (low, _) in itertools.pairwise(ranges):
        assert high < low, f"{high=}, {low=}"
    for event in site.events.values():
        low, high = event.lecture_id_range
        lectures = site.event_lectures(event.id)
        assert all(low <= int(lec.id) <= high for lec in lectures), f"{event=}"
        assert event.start_date < event.end_date, f"{event=}"
        sessions = {lec.session_id for lec in lectures}
        assert all(site.sessions[s].event_id == event.id for s in sessions), f"{event=}"
        assert all(event.start_date <= lec.held_at.date() <= event.end_date for lec in lectures), f"{event=}"
        # A lecture's related lectures are of its own event.
        assert all(
            site.lectures[link.lecture_id].event_id == event.id for lec in lectures for link in lec.related
        ), f"{event=}"
    assert len(site.sessions) == len({s.id for s in site.sessions.values()})


def test_the_catalogue_is_the_same_for_a_seed_and_copies_the_real_records(
    site: ReplicaSite, records: list[dict[str, Any]]
) -> None:
    again = build_catalogue(records, events=EVENT_COUNT, lectures=LECTURES, seed=2)
    assert again == site
    assert ground_truth(again, BASE, event_ids=list(again.events)) == ground_truth(
        site, BASE, event_ids=list(site.events)
    )
    other = build_catalogue(records, events=EVENT_COUNT, lectures=LECTURES, seed=3)
    assert [lec.title for lec in other.lectures.values()] != [lec.title for lec in site.lectures.values()]
    titles = Counter(lec.title for lec in site.lectures.values())
    assert max(titles.values()) == 1
    real = {str(r["title"]) for r in records}
    assert sum(lec.title in real for lec in site.lectures.values()) == len(records)
    assert sum(" (replica copy 2)" in lec.title for lec in site.lectures.values()) == LECTURES - len(records)


def test_the_catalogue_is_the_same_in_every_process(records: list[dict[str, Any]]) -> None:
    truth = ground_truth(
        build_catalogue(records, events=3, lectures=30, seed=0), BASE, event_ids=["611", "628", "645"]
    )
    digest = hashlib.sha256(json.dumps(truth, sort_keys=True).encode("utf-8")).hexdigest()
    code = (
        "import hashlib, json\n"
        "from crawler.replica.layout import build_catalogue, ground_truth, load_records\n"
        "site = build_catalogue(load_records(), events=3, lectures=30, seed=0)\n"
        f"truth = ground_truth(site, {BASE!r}, event_ids=['611', '628', '645'])\n"
        "print(hashlib.sha256(json.dumps(truth, sort_keys=True).encode('utf-8')).hexdigest())\n"
    )
    # Another hash seed: no hash() may leak into the layout.
    env = {**os.environ, "PYTHONHASHSEED": "7"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == digest
    assert len(truth) == 30


def test_catalogue_event_ids_do_not_depend_on_size() -> None:
    small, large = catalogue_events(4, 10), catalogue_events(4, 10_000)
    assert list(small) == list(large) == ["611", "628", "645", "662"]
    assert [e.name for e in small.values()] == ["ACL 2025", "NAACL 2025", "EACL 2025", "COLING 2025"]
    assert large["628"].lecture_id_range[0] > large["611"].lecture_id_range[1]


def test_the_command_line_builds_a_catalogue_and_keeps_the_default_site(
    records: list[dict[str, Any]],
) -> None:
    parser = build_parser()
    catalogue = site_from_args(parser.parse_args(["--events", "3", "--lectures", "90", "--seed", "1"]))
    assert catalogue == build_catalogue(records, events=3, lectures=90, seed=1)
    assert default_event_ids(catalogue) == tuple(catalogue.events)
    default = site_from_args(parser.parse_args(["--lectures", "90"]))
    assert default == build_site(records, lectures=90)
    assert default_event_ids(default) == ("502",)
    with pytest.raises(ValueError, match="--events"):
        site_from_args(parser.parse_args(["--events", "0"]))


def test_each_event_lists_its_lectures_and_the_library_lists_them_all(
    server: ReplicaServer, site: ReplicaSite
) -> None:
    for event_id in site.events:
        expected = [lec.id for lec in site.event_lectures(event_id)]
        assert listed_ids(server, f"filter[event_id]={event_id}&filter[published]=all") == expected, (
            f"{event_id=}"
        )
    library = listed_ids(server, "filter[library]=true&filter[scope]=published")
    assert sorted(library, key=int) == sorted(site.lectures, key=int)
    assert len(library) == len(set(library))


def test_pages_profiles_sessions_and_transcripts_are_served(server: ReplicaServer, site: ReplicaSite) -> None:
    truth = {t["lecture_id"]: t for t in ground_truth(site, server.base_url, event_ids=list(site.events))}
    with_subtitles = next(lec for lec in site.lectures.values() if lec.subtitles)
    for lecture in (next(iter(site.lectures.values())), with_subtitles):
        page = get_text(server, lecture.path)
        event = site.events[lecture.event_id]
        assert event.name in page, f"{lecture=}"
        assert re.search(r'<script id="__NEXT_DATA__"', page), f"{lecture=}"
        doc = get_json(server, f"/api/v1/thin_lectures/{lecture.id}?include=tag,event,sorted_profiles")
        profiles = [r for r in doc["included"] if r["type"] == "profiles"]
        assert len(profiles) == len(truth[lecture.id]["authors"]), f"{lecture=}"
        event_doc = get_json(server, f"/api/v1/thin_events/{event.id}")
        assert event_doc["data"]["attributes"]["name"] == event.name, f"{lecture=}"
        session = get_json(server, f"/api/v1/thin_event_sessions/{lecture.session_id}")
        assert session["data"]["attributes"]["name"] == site.sessions[lecture.session_id].name, f"{lecture=}"
    transcripts = get_json(
        server,
        f"/api/v1/transcripts?filter[lecture_id]={with_subtitles.id}&filter[scope]=with_subtitles"
        "&include=language&page[size]=100",
    )
    assert len(transcripts["data"]) == len(with_subtitles.subtitles)
    sessions = sessions_truth(site, list(site.events))
    assert {s["event_id"] for s in sessions} == set(site.events)


def test_serve_writes_the_ground_truth_of_every_event(tmp_path: Path) -> None:
    truth = tmp_path / "truth.jsonl"
    command = [sys.executable, "-m", "crawler.replica", "--events", "3", "--lectures", "60"]
    command += ["--ground-truth", str(truth)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("http://127.0.0.1:")
    finally:
        process.terminate()
        process.wait(timeout=15)
    records = [json.loads(line) for line in truth.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 60
    assert Counter(r["event_id"] for r in records) == {"611": 20, "628": 20, "645": 20}
