"""The replica's authors, media links, transcripts, sessions and two events, against hand-written checks."""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from typing import Any

import pytest

from crawler.replica.layout import (
    MAIN_EVENT_ID,
    SIDE_EVENT_ID,
    ReplicaSite,
    build_site,
    ground_truth,
    load_records,
    sessions_truth,
)
from crawler.replica.server import ReplicaServer
from tests.test_replica_server import fetch, find_doc, next_data

BASE = "http://127.0.0.1:8765"
BARE_ORCID = re.compile(r"^\d{4}-\d{4}-\d{4}-\d{3}[\dX]$")
INCLUDE = "include=sorted_profiles,event_session,tag,event"
PROFILE_ATTRIBUTES = {
    "full_name", "first_name", "last_name", "email", "position", "affiliation", "orcid", "avatar_url",
}  # fmt: skip


def check_character(first_15_digits: str) -> str:
    """ISO 7064 MOD 11-2, as orcid.org documents it (written here apart from the replica's)."""
    total = 0
    for char in first_15_digits:
        total = (total + int(char)) * 2
    remainder = total % 11
    result = (12 - remainder) % 11
    return "X" if result == 10 else str(result)


def orcid_is_valid(orcid: str) -> bool:
    digits = orcid.replace("-", "")
    return bool(BARE_ORCID.match(orcid)) and check_character(digits[:15]) == digits[15]


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return load_records()


@pytest.fixture(scope="module")
def site(records: list[dict[str, Any]]) -> ReplicaSite:
    return build_site(records)


@pytest.fixture(scope="module")
def server(site: ReplicaSite) -> Any:
    with ReplicaServer(site) as running:
        yield running


def lecture_titled(site: ReplicaSite, start: str) -> Any:
    return next(lec for lec in site.lectures.values() if lec.title.startswith(start))


def test_check_character_of_the_documented_example() -> None:
    assert check_character("000000021825009") == "7"
    assert orcid_is_valid("0000-0002-1825-0097") and not orcid_is_valid("0000-0002-1825-0098")


def test_authors_come_from_the_data_in_order(site: ReplicaSite) -> None:
    lec = lecture_titled(site, "Towards Automated Error Discovery")
    assert [(p.first_name, p.last_name) for p in lec.profiles] == [
        ("Dominic", "Petrak"),
        ("Thy Thy", "Tran"),
        ("Iryna", "Gurevych"),
    ]
    truth = next(t for t in ground_truth(site, BASE) if t["lecture_id"] == lec.id)
    assert [a["name"] for a in truth["authors"]] == ["Dominic Petrak", "Thy Thy Tran", "Iryna Gurevych"]


def test_real_affiliations_where_the_data_has_them(site: ReplicaSite, records: list[dict[str, Any]]) -> None:
    record = next(r for r in records if r.get("authors_affiliations"))
    assert record["authors"][:2] == ["Jian Hu", "Xibin Wu"]
    lec = lecture_titled(site, record["title"])
    served = [p.affiliation for p in lec.profiles]
    assert served[:4] == [
        "National Taiwan University, NVIDIA and Northwest Polytechnical University Xi'an",
        "ByteDance Inc.",
        None,
        None,  # the data's "None" is no affiliation
    ]
    truth = next(t for t in ground_truth(site, BASE) if t["lecture_id"] == lec.id)
    assert [a["affiliations"] for a in truth["authors"][:3]] == [
        ["National Taiwan University, NVIDIA and Northwest Polytechnical University Xi'an"],
        ["ByteDance Inc."],
        [],
    ]


def test_every_profile_has_an_email_and_the_shares_vary(site: ReplicaSite) -> None:
    profiles = [p for lec in site.lectures.values() for p in lec.profiles]
    assert len(profiles) == sum(len(r["authors"]) for r in load_records())
    assert all(re.fullmatch(r"[a-z0-9.]+@[a-z.]+", p.email) for p in profiles)
    assert {p.email.rsplit("@", 1)[1] for p in profiles} == {
        "example.org",
        "mail.example.org",
        "univ.example",
    }
    assert 0.08 < sum(p.full_name is None for p in profiles) / len(profiles) < 0.25
    assert 0.1 < sum(p.affiliation is None for p in profiles) / len(profiles) < 0.4
    with_orcid = [p for p in profiles if p.orcid is not None]
    assert 0.3 < len(with_orcid) / len(profiles) < 0.5
    url_form = [p for p in with_orcid if p.orcid is not None and p.orcid.startswith("https://orcid.org/")]
    wrong = [p for p in with_orcid if not p.orcid_valid]
    assert 0.05 < len(url_form) / len(with_orcid) < 0.25
    assert 0 < len(wrong) / len(with_orcid) < 0.08


def test_orcid_ids_pass_an_independent_check(site: ReplicaSite) -> None:
    for lec in site.lectures.values():
        for p in lec.profiles:
            if p.orcid is None:
                assert p.orcid_id is None, f"{lec=}, {p=}"
                continue
            bare = p.orcid.removeprefix("https://orcid.org/")
            assert orcid_is_valid(bare) is p.orcid_valid, p.orcid
            assert bare[:-1] == (p.orcid_id or "")[:-1], f"{lec=}, {p=}"


def test_truth_authors_are_normalized_and_keep_only_valid_orcids(site: ReplicaSite) -> None:
    truth = {t["lecture_id"]: t for t in ground_truth(site, BASE, event_ids=(MAIN_EVENT_ID, SIDE_EVENT_ID))}
    assert len(truth) == len(site.lectures)
    messy = decomposed = names_only = dropped = 0
    for lecture_id, record in truth.items():
        lec = site.lectures[lecture_id]
        assert len(record["authors"]) == len(lec.profiles), f"{lecture_id=}, {record=}"
        for author, p in zip(record["authors"], lec.profiles, strict=True):
            assert author["name"] == " ".join(author["name"].split()), (
                f"{lecture_id=}, {record=}, {author=}, {p=}"
            )
            assert unicodedata.is_normalized("NFC", author["name"]), (
                f"{lecture_id=}, {record=}, {author=}, {p=}"
            )
            if p.full_name is None:
                names_only += 1
                assert author["name"] == f"{p.first_name} {p.last_name}".strip(), (
                    f"{lecture_id=}, {record=}, {author=}, {p=}"
                )
            else:
                messy += p.full_name != p.full_name.strip()
                decomposed += not unicodedata.is_normalized("NFC", p.full_name)
            if p.orcid is not None and not p.orcid_valid:
                dropped += 1
                assert author["orcid"] is None, f"{lecture_id=}, {record=}, {author=}, {p=}"
            elif p.orcid is not None:
                assert author["orcid"] is not None and orcid_is_valid(author["orcid"]), (
                    f"{lecture_id=}, {record=}, {author=}, {p=}"
                )
            assert "email" not in author, f"{lecture_id=}, {record=}, {author=}, {p=}"
    assert messy > 100 and decomposed > 10 and names_only > 300 and dropped > 20


def test_listing_includes_profiles_shuffled_only_when_asked(server: ReplicaServer, site: ReplicaSite) -> None:
    plain = fetch(server, "/api/v1/thin_lectures?filter[event_id]=502&page[size]=20").json()
    assert all("sorted_profiles" not in lec["relationships"] for lec in plain["data"])
    assert all(r["type"] != "profiles" for r in plain["included"])
    doc = fetch(server, f"/api/v1/thin_lectures?filter[event_id]=502&{INCLUDE}&page[size]=20").json()
    profiles = {r["id"]: r for r in doc["included"] if r["type"] == "profiles"}
    differs = 0
    for resource in doc["data"]:
        lec = site.lectures[resource["id"]]
        wanted = [ref["id"] for ref in resource["relationships"]["sorted_profiles"]["data"]]
        assert wanted == [p.id for p in lec.profiles], f"{resource=}"
        order_in_included = [
            r["id"] for r in doc["included"] if r["type"] == "profiles" and r["id"] in wanted
        ]
        assert sorted(order_in_included) == sorted(wanted), f"{resource=}"
        if len(wanted) > 1:
            assert order_in_included != wanted, f"{resource=}"
            differs += 1
        for position, profile_id in enumerate(wanted):
            attrs = profiles[profile_id]["attributes"]
            assert set(attrs) == PROFILE_ATTRIBUTES, f"{resource=}, {position=}, {profile_id=}"
            assert attrs["position"] == position and "@" in attrs["email"], (
                f"{resource=}, {position=}, {profile_id=}"
            )
    assert differs >= 15


def test_page_json_carries_the_profiles_in_camel_case(server: ReplicaServer, site: ReplicaSite) -> None:
    lec = lecture_titled(site, "Towards Automated Error Discovery")
    data = next_data(fetch(server, lec.path).text)
    doc = find_doc(data, "thin_lectures", lec.id)
    refs = doc["data"]["relationships"]["sortedProfiles"]["data"]
    assert [r["id"] for r in refs] == [p.id for p in lec.profiles]
    included = [r for r in doc["included"] if r["type"] == "profiles"]
    assert [r["id"] for r in included] == [lec.profiles[i].id for i in (1, 0, 2)]
    assert included[1]["attributes"] == {
        "fullName": "Dominic Petrak",
        "firstName": "Dominic",
        "lastName": "Petrak",
        "email": "dominic.petrak@example.org",
        "position": 0,
        "affiliation": "Technische Universität Darmstadt",
        "orcid": None,
        "avatarUrl": lec.profiles[0].avatar_url,
    }


def test_unicode_names_are_kept(site: ReplicaSite) -> None:
    names = {a["name"] for t in ground_truth(site, BASE) for a in t["authors"]}
    assert {"Vilém Zouhar", "Pierre-Luc Déziel", "François Yvon"} <= names


def test_media_fields_and_their_truth(server: ReplicaServer, site: ReplicaSite) -> None:
    truth = {t["lecture_id"]: t for t in ground_truth(site, server.base_url)}
    counts: Counter[str] = Counter()
    listing = []
    for number in (1, 2, 3, 4, 5, 6, 7, 8):
        page = fetch(
            server, f"/api/v1/thin_lectures?filter[event_id]=502&page[size]=100&page[number]={number}"
        )
        listing += page.json()["data"]
    assert len(listing) == len(truth) == 726
    for resource in listing:
        attrs, record = resource["attributes"], truth[resource["id"]]
        assert record["video_url"] == attrs["playlist"], f"{resource=}"
        assert record["video_doi"] == attrs["video_doi"], f"{resource=}"
        assert record["slides_url"] == attrs["slideshow_url"], f"{resource=}"
        assert record["poster_url"] == attrs["poster_document_url"], f"{resource=}"
        assert record["is_poster"] is attrs["poster_lecture"], f"{resource=}"
        if attrs["paper_url"] is None:
            assert record["paper_url"] is None, f"{resource=}"
        else:
            assert (
                record["paper_url"]
                == f"{server.base_url}/downloadable_materials/lectures/{resource['id']}/paper"
            ), f"{resource=}"
        if attrs["poster_document_url"] is not None:
            assert attrs["poster_lecture"] is True, f"{resource=}"
        for name in ("playlist", "video_doi", "slideshow_url", "poster_document_url", "paper_url"):
            counts[name] += attrs[name] is not None
        counts["poster"] += attrs["poster_lecture"]
    # Some lectures have each link and some have none.
    assert all(0 < counts[name] < 726 for name in ("playlist", "video_doi", "slideshow_url", "paper_url"))
    assert 0 < counts["poster_document_url"] < counts["poster"]
    playlist = next(r["attributes"]["playlist"] for r in listing if r["attributes"]["playlist"])
    assert re.fullmatch(r"https://assets\.underline\.io/lecture/\d+/playlist/\d+\.m3u8", playlist)


def test_transcripts_endpoint(server: ReplicaServer, site: ReplicaSite) -> None:
    by_count = Counter(len(lec.subtitles) for lec in site.lectures.values())
    assert set(by_count) == {0, 1, 2} and by_count[1] > by_count[2] > 0
    two = next(lec for lec in site.lectures.values() if len(lec.subtitles) == 2)
    query = f"filter[lecture_id]={two.id}&filter[scope]=with_subtitles&include=language&page[size]=100"
    answer = fetch(server, f"/api/v1/transcripts?{query}")
    assert answer.status == 200 and answer.headers["content-type"] == "application/vnd.api+json"
    doc = answer.json()
    assert [t["type"] for t in doc["data"]] == ["transcripts", "transcripts"]
    languages = {r["id"]: r["attributes"] for r in doc["included"]}
    assert languages["en"] == {"name": "English", "locale": "en"}
    everything = ground_truth(site, BASE, event_ids=("502", "469"), assets_base=server.assets_url)
    truth = next(t for t in everything if t["lecture_id"] == two.id)
    assert truth["subtitles"] == [
        {
            "locale": languages[t["relationships"]["language"]["data"]["id"]]["locale"],
            "name": languages[t["relationships"]["language"]["data"]["id"]]["name"],
            "auto_generated": t["attributes"]["auto_generated"],
            "url": t["attributes"]["subtitle_url"],
        }
        for t in doc["data"]
    ]
    assert all(t["attributes"]["subtitle_url"].endswith(".vtt") for t in doc["data"])
    none = next(lec for lec in site.lectures.values() if not lec.subtitles)
    empty = fetch(server, f"/api/v1/transcripts?filter[lecture_id]={none.id}&include=language").json()
    assert empty["data"] == [] and empty["included"] == []
    page = next_data(fetch(server, two.path).text)
    docs = [
        d
        for d in page["props"]["pageProps"]["fallback"].values()
        if isinstance(d["data"], list) and d["data"] and d["data"][0]["type"] == "transcripts"
    ]
    assert [t["attributes"]["subtitleUrl"] for t in docs[0]["data"]] == [s["url"] for s in truth["subtitles"]]


def test_sessions_carry_start_end_and_description(server: ReplicaServer, site: ReplicaSite) -> None:
    truth = sessions_truth(site, ("502", "469"))
    assert {s["event_id"] for s in truth} == {"502", "469"}
    first = truth[0]
    doc = fetch(server, f"/api/v1/thin_event_sessions/{first['session_id']}").json()["data"]["attributes"]
    assert (doc["start_at"], doc["end_at"], doc["description"]) == (
        first["start_at"],
        first["end_at"],
        first["description"],
    )
    for session in truth:
        held = sorted(
            lec.held_at for lec in site.lectures.values() if lec.session_id == session["session_id"]
        )
        assert session["start_at"] == held[0].strftime("%Y-%m-%dT%H:%M:%SZ"), f"{session=}"
        # The last lecture of a session takes its 15 minutes before the session ends.
        assert session["end_at"] > held[-1].strftime("%Y-%m-%dT%H:%M:%SZ"), f"{session=}"


def test_two_full_events(server: ReplicaServer, site: ReplicaSite) -> None:
    for event_id, name, start in (("502", "EMNLP 2025", "2025-11-05"), ("469", "EMNLP 2024", "2024-11-12")):
        event = fetch(server, f"/api/v1/thin_events/{event_id}").json()["data"]["attributes"]
        assert (event["name"], event["start_date"]) == (name, start), f"{event_id=}, {name=}, {start=}"
        assert event["description"].startswith("## Welcome"), f"{event_id=}, {name=}, {start=}"
        listing = fetch(server, f"/api/v1/thin_lectures?filter[event_id]={event_id}&page[size]=100").json()
        assert {r["attributes"]["event_id"] for r in listing["data"]} == {int(event_id)}, (
            f"{event_id=}, {name=}, {start=}"
        )
        sessions = {s.id for s in site.sessions.values() if s.event_id == event_id}
        assert len(sessions) >= 2, f"{event_id=}, {name=}, {start=}"
        assert {r["relationships"]["event_session"]["data"]["id"] for r in listing["data"]} <= sessions, (
            f"{event_id=}, {name=}, {start=}"
        )
    side = [lec for lec in site.lectures.values() if lec.event_id == SIDE_EVENT_ID]
    assert len(side) == 740 // 50
    crossing = [lec for lec in site.lectures.values() if lec.event_id == MAIN_EVENT_ID and any(
        site.lectures[link.lecture_id].event_id == SIDE_EVENT_ID for link in lec.related)]  # fmt: skip
    assert crossing


def test_a_bigger_second_event_on_request(records: list[dict[str, Any]]) -> None:
    site = build_site(records, side_event_every=4)
    side = [lec for lec in site.lectures.values() if lec.event_id == SIDE_EVENT_ID]
    assert len(side) == 740 // 4
    both = ground_truth(site, BASE, event_ids=("502", "469"))
    assert len(both) == 740 and len({r["lecture_id"] for r in both}) == 740
    assert Counter(r["event_id"] for r in both) == {"502": 740 - 185, "469": 185}
    assert json.dumps(both) == json.dumps(
        ground_truth(build_site(records, side_event_every=4), BASE, event_ids=("502", "469"))
    )
