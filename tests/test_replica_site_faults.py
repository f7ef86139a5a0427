"""Answers the replica breaks the same way every time (``SiteFaults``), the request log's kinds, and
the changed site of a refresh."""

from __future__ import annotations

import json
from typing import Any

import pytest

from crawler.replica.faults import ENDLESS_ID_STEP, SiteFaults
from crawler.replica.layout import ReplicaSite, build_site, ground_truth, load_records
from crawler.replica.server import ReplicaServer, build_parser, request_kind, site_faults_from_args
from tests.support.sites import EDIT_SUFFIX, changed_site
from tests.test_replica_server import fetch, find_doc, next_data

LISTING = "/api/v1/thin_lectures?filter[event_id]=502&page[size]=10&page[number]={n}"


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records(), seed=1, lectures=60)


def ids_of(doc: dict[str, Any]) -> list[str]:
    return [r["id"] for r in doc["data"]]


def test_a_listing_page_fails_always_or_for_its_first_requests(site: ReplicaSite) -> None:
    faults = SiteFaults(listing_errors={3: None, 2: 2})
    with ReplicaServer(site, site_faults=faults) as replica:
        assert [fetch(replica, LISTING.format(n=3)).status for _ in range(4)] == [500, 500, 500, 500]
        assert [fetch(replica, LISTING.format(n=2)).status for _ in range(4)] == [500, 500, 200, 200]
        assert fetch(replica, LISTING.format(n=1)).status == 200
        answer = fetch(replica, LISTING.format(n=3))
        assert answer.json()["errors"][0]["status"] == "500"


def test_failing_lecture_pages_answer_503_every_time(site: ReplicaSite) -> None:
    lec = site.event_lectures("502")[4]
    with ReplicaServer(site, site_faults=SiteFaults(failing_lectures=frozenset({lec.id}))) as replica:
        assert [fetch(replica, lec.path).status for _ in range(3)] == [503, 503, 503]
        session_path = lec.related[0].href  # another lecture: unaffected
        assert fetch(replica, session_path).status == 200
        # The API still knows the lecture: only its page fails.
        assert fetch(replica, f"/api/v1/thin_lectures/{lec.id}").status == 200


@pytest.mark.parametrize("meta", ["small", "absent"])
def test_endless_listing_brings_new_ids_on_every_page(site: ReplicaSite, meta: str) -> None:
    real = [lec.id for lec in site.event_lectures("502")]
    with ReplicaServer(site, site_faults=SiteFaults(endless_listing=meta)) as replica:
        pages = [fetch(replica, LISTING.format(n=n)).json() for n in range(1, 16)]
        seen = [i for page in pages for i in ids_of(page)]
        assert len(seen) == len(set(seen)) == 150
        assert seen[: len(real)] == real
        assert all(int(i) > ENDLESS_ID_STEP for i in seen[len(real) :])
        if meta == "small":
            assert pages[-1]["meta"] == {"total_pages": 6, "total_count": len(real)}
        else:
            assert "meta" not in pages[-1]
        made_up = seen[-1]
        page = fetch(replica, f"/lecture/{made_up}")
        assert page.status == 301
        answer = fetch(replica, page.headers["location"].removeprefix(replica.base_url))
        assert answer.status == 200
        assert find_doc(next_data(answer.text), "thin_lectures", made_up)["data"]["id"] == made_up


def test_off_origin_redirects(site: ReplicaSite) -> None:
    lectures = site.event_lectures("502")[:5]
    targets = ["localhost", "https", "metadata", "port:9", "http://other.example/x"]
    faults = SiteFaults(redirects={lec.id: t for lec, t in zip(lectures, targets, strict=True)})
    with ReplicaServer(site, site_faults=faults) as replica:
        port = replica.port
        locations = []
        for lec in lectures:
            answer = fetch(replica, lec.path)
            assert answer.status == 302, f"{lec=}"
            locations.append(answer.headers["location"])
    assert locations == [
        f"http://localhost:{port}{lectures[0].path}",
        f"https://127.0.0.1:{port}{lectures[1].path}",
        "http://169.254.169.254/latest/meta-data/",
        f"http://127.0.0.1:9{lectures[3].path}",
        "http://other.example/x",
    ]
    with pytest.raises(ValueError, match="unknown redirect target"):
        SiteFaults(redirects={"1": "ftp"})


def test_a_page_that_describes_another_lecture(site: ReplicaSite) -> None:
    asked, other = site.event_lectures("502")[:2]
    with ReplicaServer(site, site_faults=SiteFaults(swapped_pages={asked.id: other.id})) as replica:
        answer = fetch(replica, asked.path)
    assert answer.status == 200
    data = next_data(answer.text)
    assert data["query"] == {"lectureSlug": f"{other.id}-{other.slug}"}
    lectures = [
        d["data"]["id"]
        for d in data["props"]["pageProps"]["fallback"].values()
        if isinstance(d["data"], dict) and d["data"]["type"] == "thin_lectures"
    ]
    assert asked.id not in lectures and other.id in lectures


def test_a_renamed_attribute_in_the_api_and_the_page_json(site: ReplicaSite) -> None:
    lec = next(lec for lec in site.event_lectures("502") if lec.keywords)
    faults = SiteFaults(renamed_attributes={"keywords": "topics", "poster_document_url": "poster_pdf"})
    with ReplicaServer(site, site_faults=faults) as replica:
        api = fetch(replica, f"/api/v1/thin_lectures/{lec.id}").json()["data"]["attributes"]
        listing = fetch(replica, LISTING.format(n=1)).json()["data"][0]["attributes"]
        page = find_doc(next_data(fetch(replica, lec.path).text), "thin_lectures", lec.id)["data"][
            "attributes"
        ]
    assert "keywords" not in api and api["topics"] == list(lec.keywords)
    assert "keywords" not in listing and "topics" in listing and "poster_pdf" in listing
    assert "keywords" not in page and page["topics"] == list(lec.keywords) and "posterPdf" in page


def test_request_kinds() -> None:
    assert [
        request_kind(path)
        for path in (
            "/robots.txt",
            "/api/v1/thin_lectures?filter[event_id]=502&page[number]=2",
            "/lecture/130001-a-title",
            "/lecture/130001",
            "/events/502/sessions/7001/lecture/130001-a",
            "/events/502/posters/7002/poster/130001-a?tab=abstract",
            "/api/v1/thin_lectures/130001?include=tag,event",
            "/api/v1/transcripts?filter[lecture_id]=130001&include=language",
            "/events/502/sessions?eventSessionId=7001",
            "/api/v1/thin_event_sessions/7001",
            "/api/v1/thin_events/502",
            "/downloadable_materials/lectures/130001/paper",
            "/log-in",
            "/favicon.ico",
        )
    ] == [
        "robots", "listing", "lecture_page", "lecture_page", "lecture_page", "lecture_page", "lecture_api",
        "transcripts", "session_page", "session_api", "event_api", "paper", "login", "other",
    ]  # fmt: skip


def test_the_request_log_counts_requests_by_kind(site: ReplicaSite) -> None:
    lec = site.event_lectures("502")[0]
    with ReplicaServer(site) as replica:
        for path in (
            "/robots.txt",
            LISTING.format(n=1),
            lec.path,
            lec.path,
            f"/api/v1/transcripts?filter[lecture_id]={lec.id}",
        ):
            fetch(replica, path)
        kinds = [r.kind for r in replica.requests]
    assert kinds == ["robots", "listing", "lecture_page", "lecture_page", "transcripts"]


def test_a_changed_site_for_a_refresh(site: ReplicaSite) -> None:
    change = changed_site(site, edits=3, removals=2, seed=5)
    assert len(set(change.edited) | set(change.removed)) == 5
    assert changed_site(site, edits=3, removals=2, seed=5) == change
    before = {t["lecture_id"]: t for t in ground_truth(site, "http://h")}
    after = {t["lecture_id"]: t for t in ground_truth(change.site, "http://h")}
    assert set(before) - set(after) == set(change.removed)
    differ = {i for i in after if after[i]["content_sha256"] != before[i]["content_sha256"]}
    # Removing a lecture also drops it from other pages' related lectures.
    assert set(change.edited) <= differ
    for lecture_id in change.edited:
        assert after[lecture_id]["abstract"] == before[lecture_id]["abstract"] + EDIT_SUFFIX, f"{lecture_id=}"
    for record in after.values():
        assert not set(record["related_lecture_ids"]) & set(change.removed), f"{record=}"


WITH_PROFILES = LISTING + "&include=sorted_profiles"


def profile_ids(node: Any) -> set[str]:
    """Ids of every profile resource anywhere in ``node``'s ``included`` lists."""
    found: set[str] = set()
    if isinstance(node, dict):
        included = node.get("included")
        if isinstance(included, list):
            found |= {str(i["id"]) for i in included if isinstance(i, dict) and i.get("type") == "profiles"}
        for value in node.values():
            found |= profile_ids(value)
    elif isinstance(node, list):
        for value in node:
            found |= profile_ids(value)
    return found


def test_listing_and_page_edits_of_a_lagging_or_faulty_site(site: ReplicaSite) -> None:
    first, second, third = site.event_lectures("502")[:3]
    faults = SiteFaults(
        listing_appends={first.id: " Revised."},
        stripped_pages=frozenset({second.id}),
        empty_listing_pages=frozenset({2}),
        dropped_profiles=frozenset({third.id}),
    )
    with ReplicaServer(site) as healthy:
        plain = json.loads(fetch(healthy, WITH_PROFILES.format(n=1)).body)
    with ReplicaServer(site, site_faults=faults) as replica:
        page_one = json.loads(fetch(replica, WITH_PROFILES.format(n=1)).body)
        page_two = json.loads(fetch(replica, WITH_PROFILES.format(n=2)).body)
        first_page = fetch(replica, first.path).text
        stripped = fetch(replica, second.path)
        dropped = fetch(replica, third.path).text
    listed = {r["id"]: r for r in page_one["data"]}
    assert listed[first.id]["attributes"]["abstract"] == first.abstract + " Revised."
    # Only the listing: the page still shows the abstract as it was.
    assert find_doc(next_data(first_page), "thin_lectures", first.id)["data"]["attributes"]["abstract"] == (
        first.abstract
    )
    assert stripped.status == 200 and "__NEXT_DATA__" not in stripped.text and second.title in stripped.text
    assert page_two["data"] == [] and page_two["meta"] == plain["meta"]
    gone = {p.id for p in third.profiles}
    assert gone and gone <= profile_ids(plain) and not gone & profile_ids(page_one)
    named = listed[third.id]["relationships"]["sorted_profiles"]["data"]
    assert {r["id"] for r in named} == gone
    assert profile_ids(next_data(dropped)) == set()


def test_the_command_line_takes_the_fault_flags() -> None:
    flags = ["--fail-listing-page", "3", "--fail-listing-page", "2:1", "--fail-lecture", "5,6",
             "--endless-listing", "absent", "--redirect-lecture", "7=localhost", "--swap-page", "8=9",
             "--rename-attribute", "keywords=topics", "--listing-append", "4= More.",
             "--strip-page-json", "3", "--empty-listing-page", "2", "--drop-profiles", "1,2"]  # fmt: skip
    assert site_faults_from_args(build_parser().parse_args(flags)) == SiteFaults(
        listing_errors={3: None, 2: 1},
        failing_lectures=frozenset({"5", "6"}),
        endless_listing="absent",
        redirects={"7": "localhost"},
        swapped_pages={"8": "9"},
        renamed_attributes={"keywords": "topics"},
        listing_appends={"4": " More."},
        stripped_pages=frozenset({"3"}),
        empty_listing_pages=frozenset({2}),
        dropped_profiles=frozenset({"1", "2"}),
    )
    assert site_faults_from_args(build_parser().parse_args([])) is None
    with pytest.raises(ValueError, match="page number"):
        site_faults_from_args(build_parser().parse_args(["--empty-listing-page", "0"]))
    with pytest.raises(ValueError, match="N:COUNT"):
        site_faults_from_args(build_parser().parse_args(["--fail-listing-page", "x"]))
