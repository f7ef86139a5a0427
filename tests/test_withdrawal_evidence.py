"""An absence is never evidence: a lecture leaves the dataset only when its own resource (or its event's)
says it is gone; an event whose listing cannot be read whole is kept as last published while the other
events publish; a night on a lost state keeps every row read from a page.

One healthy first night of two events is crawled once; each scenario starts from a copy of its state
and release, on the same port (lecture URLs hold it).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import socket
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crawler import stats_keys as keys
from crawler.pages.api import EVENT_TYPE, LECTURE_TYPE
from crawler.publish.previous import carry_forward, with_listing_fields
from crawler.replica.faults import SiteFaults
from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.replica.server import KIND_EVENT_API, KIND_LECTURE_API, KIND_LECTURE_PAGE, ReplicaServer
from crawler.schema import Lecture
from crawler.spiders.presence import resource_answer
from crawler.state.withdrawals import Withdrawals
from crawler.urls import listing_url
from tests.support.commands import run_command
from tests.support.replica import QUICK_GIVE_UP, run_args, run_report
from tests.support.sites import EDIT_SUFFIX, with_edit, without_lectures

EVENTS = ("502", "469")
PAGE_SIZE = 5


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def nightly(server: ReplicaServer, work: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    events = [arg for event in EVENTS for arg in ("--event-id", event)]
    command = run_args(
        server.base_url, work, "evidence", *events, "-s", f"UNDERLINE_PAGE_SIZE={PAGE_SIZE}", *QUICK_GIVE_UP
    )
    return run_command([*command, *extra], timeout=120)


def rows(work: Path) -> dict[str, dict[str, Any]]:
    return {r["lecture_id"]: r for r in pq.read_table(work / "out" / "data" / "lectures").to_pylist()}


def stats(work: Path) -> dict[str, Any]:
    return run_report(work)["crawl"]["stats"]


def asked(server: ReplicaServer, kind: str) -> list[str]:
    return [r.path.split("?", 1)[0] for r in server.requests if r.kind == kind]


def listed_ids(base: str, event: str) -> list[str]:
    out: list[str] = []
    page = 1
    while True:
        with urllib.request.urlopen(listing_url(base, event, page, PAGE_SIZE), timeout=10) as answer:
            doc = json.load(answer)
        out += [str(r["id"]) for r in doc["data"]]
        if page >= doc["meta"]["total_pages"]:
            return out
        page += 1


@dataclasses.dataclass(frozen=True)
class Base:
    site: ReplicaSite
    port: int
    work: Path
    order: dict[str, list[str]]

    def copy(self, to: Path) -> Path:
        shutil.copytree(self.work, to)
        return to

    def server(self, site: ReplicaSite | None = None, faults: SiteFaults | None = None) -> ReplicaServer:
        return ReplicaServer(site or self.site, port=self.port, site_faults=faults)

    def pages(self, event: str) -> int:
        return -(-len(self.order[event]) // PAGE_SIZE)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    site = build_site(load_records(), seed=11, lectures=64, side_event_every=4)
    work = tmp_path_factory.mktemp("first-night")
    port = free_port()
    with ReplicaServer(site, port=port) as server:
        first = nightly(server, work)
        order = {event: listed_ids(server.base_url, event) for event in EVENTS}
    assert first.returncode == 0, first.stderr[-3000:]
    assert all(len(order[event]) >= 2 * PAGE_SIZE for event in EVENTS), {e: len(o) for e, o in order.items()}
    assert sorted(rows(work), key=int) == sorted((i for o in order.values() for i in o), key=int)
    return Base(site, port, work, order)


def rows_of(work: Path, event: str) -> dict[str, dict[str, Any]]:
    return {i: r for i, r in rows(work).items() if r["event_id"] == event}


# -- a lecture leaves only on the site's word ------------------------------------------------------


def test_a_lecture_leaves_only_when_its_own_resource_says_it_is_gone(base: Base, tmp_path: Path) -> None:
    work = base.copy(tmp_path / "night")
    gone, served = base.order["502"][3], base.order["469"][4]
    before = rows(work)
    faults = SiteFaults(unlisted_lectures=frozenset({served}))
    with base.server(site=without_lectures(base.site, [gone]), faults=faults) as server:
        night = nightly(server, work)
        resources = asked(server, KIND_LECTURE_API)
    # Both left their listings; each was asked once, and only the one the site no longer serves leaves.
    assert night.returncode == 9, night.stderr[-3000:]
    assert sorted(resources) == sorted(f"/api/v1/thin_lectures/{i}" for i in (gone, served))
    after = rows(work)
    assert after[gone]["withdrawn"] is True
    assert after[served]["withdrawn"] is False
    # The event whose listing left out a lecture still served is kept back, row for row.
    assert rows_of(work, "469") == {i: r for i, r in before.items() if r["event_id"] == "469"}
    report = run_report(work)
    assert list(report["events"]["kept_back"]) == ["469"]
    assert served in report["events"]["kept_back"]["469"]
    assert "event 469 kept back" in night.stdout + night.stderr
    counts = stats(work)
    assert (counts[keys.PRESENCE_ASKED], counts[keys.PRESENCE_GONE], counts[keys.PRESENCE_LIVE]) == (2, 1, 1)
    assert report["changes"]["gone"] == [gone]


def test_an_empty_last_listing_page_withdraws_nothing(base: Base, tmp_path: Path) -> None:
    work = base.copy(tmp_path / "night")
    before = rows(work)
    last = base.pages("502")
    emptied = base.order["502"][(last - 1) * PAGE_SIZE :]
    with base.server(faults=SiteFaults(empty_listing_pages=frozenset({last}))) as server:
        night = nightly(server, work)
        resources = asked(server, KIND_LECTURE_API)
    assert night.returncode == 9, night.stderr[-3000:]
    # The empty page is the listing's fault on its own, whatever its meta counts of lectures.
    assert stats(work)[keys.LISTING_EMPTY_PAGE] == 1
    assert "502" in run_report(work)["events"]["kept_back"]
    assert resources == []
    assert rows(work) == before
    assert not any(rows(work)[i]["withdrawn"] for i in emptied)


def test_a_page_budget_pays_for_the_questions_first(base: Base, tmp_path: Path) -> None:
    work = base.copy(tmp_path / "night")
    gone = base.order["502"][1:3]
    with base.server(site=without_lectures(base.site, gone)) as server:
        night = nightly(server, work, "--page-budget", "1", "-s", "UNDERLINE_REVALIDATE_SHARE=0")
        resources = asked(server, KIND_LECTURE_API)
        pages = asked(server, KIND_LECTURE_PAGE)
    assert night.returncode == 0, night.stderr[-3000:]
    assert (len(resources), pages) == (1, [])
    counts = stats(work)
    assert (counts[keys.PRESENCE_ASKED], counts[keys.PRESENCE_UNASKED]) == (1, 1)
    withdrawn = sorted(i for i in gone if rows(work)[i]["withdrawn"])
    assert withdrawn == [resources[0].rsplit("/", 1)[1]]


# -- one event does not hold back the others ---------------------------------------------------------


def test_an_event_whose_listing_fails_keeps_its_rows_and_the_others_publish(
    base: Base, tmp_path: Path
) -> None:
    work = base.copy(tmp_path / "night")
    before = rows(work)
    edited = base.order["502"][5]
    site = with_edit(base.site, edited, abstract=base.site.lectures[edited].abstract + EDIT_SUFFIX)
    with base.server(site=site, faults=SiteFaults(failing_listing_events=frozenset({"469"}))) as server:
        night = nightly(server, work)
    assert night.returncode == 9, night.stderr[-3000:]
    after = rows(work)
    assert after[edited]["abstract"].endswith(EDIT_SUFFIX)
    assert rows_of(work, "469") == {i: r for i, r in before.items() if r["event_id"] == "469"}
    report = run_report(work)
    assert list(report["events"]["kept_back"]) == ["469"]
    assert report["status"] == "kept_back"
    assert sorted(report["changes"]["changed"]) == [edited]


def test_an_event_that_lists_nothing_leaves_only_when_the_event_is_gone(base: Base, tmp_path: Path) -> None:
    side = set(base.order["469"])
    # Still served, but its listing names nothing: kept as it was.
    work = base.copy(tmp_path / "served")
    before = rows(work)
    with base.server(faults=SiteFaults(unlisted_lectures=frozenset(side))) as server:
        night = nightly(server, work, "--force")
        events = asked(server, KIND_EVENT_API)
    assert night.returncode == 9, night.stderr[-3000:]
    assert events == ["/api/v1/thin_events/469"]
    assert rows(work) == before
    # The event itself is gone: its lectures leave (a drop the gate lets through only when forced).
    work = base.copy(tmp_path / "gone")
    site = without_lectures(base.site, side)
    site = dataclasses.replace(site, events={k: v for k, v in site.events.items() if k != "469"})
    with base.server(site=site) as server:
        refused = nightly(server, work)
        forced = nightly(server, work, "--force")
    assert refused.returncode == 4, refused.stderr[-3000:]
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert sorted(i for i, r in rows(work).items() if r["withdrawn"]) == sorted(side)


# -- a lost state ----------------------------------------------------------------------------------


def test_a_night_on_a_lost_state_keeps_every_row_read_from_a_page(base: Base, tmp_path: Path) -> None:
    work = base.copy(tmp_path / "night")
    before = rows(work)
    shutil.rmtree(work / "state")
    # The release is the base: a lecture it holds that left the site is still asked about, and leaves.
    gone = base.order["469"][2]
    with base.server(site=without_lectures(base.site, [gone])) as server:
        night = nightly(server, work, "--page-budget", "7")
        pages = asked(server, KIND_LECTURE_PAGE)
        resources = asked(server, KIND_LECTURE_API)
    assert night.returncode == 0, night.stderr[-3000:]
    assert (len(pages), resources) == (6, [f"/api/v1/thin_lectures/{gone}"])
    after = rows(work)
    assert sorted(after) == sorted(before)
    assert [i for i, r in after.items() if r["withdrawn"]] == [gone]
    fetched = {path.split("/")[2].split("-", 1)[0] for path in pages}
    for lecture_id, row in after.items():
        was = before[lecture_id]
        assert row["extraction"] == was["extraction"], f"lecture {lecture_id}"
        # A page fetched again may show other related lectures now (one of them left the site).
        same = ("text", "abstract", "authors", *(() if lecture_id in fetched else ("related_lecture_ids",)))
        for name in same:
            assert row[name] == was[name], f"lecture {lecture_id}: {name}"
    moved = sorted(i for i in after if after[i]["fetched_at"] != before[i]["fetched_at"])
    assert set(moved) <= fetched, moved


# -- the pure parts --------------------------------------------------------------------------------


def lecture_doc(lecture_id: str, event: str) -> bytes:
    data = {"type": "thin_lectures", "id": lecture_id, "attributes": {"title": "T", "event_id": event}}
    return json.dumps({"data": data}).encode()


@pytest.mark.parametrize(
    ("status", "body", "presence", "event"),
    [
        (404, b"", "gone", None),
        (410, b"<html>Gone</html>", "gone", None),
        (200, b'{"errors": [{"status": "404", "title": "Not Found"}]}', "gone", None),
        (200, b'{"data": null}', "gone", None),
        (200, lecture_doc("7", "502"), "live", "502"),
        (200, lecture_doc("7", "469"), "live", "469"),
        (200, lecture_doc("8", "502"), "unknown", None),
        (200, b"<html>a login page</html>", "unknown", None),
        (200, b'{"errors": [{"status": "500"}]}', "unknown", None),
        (503, b"", "unknown", None),
        (500, b'{"data": null}', "unknown", None),
    ],
)
def test_what_a_lecture_resource_answer_says(
    status: int, body: bytes, presence: str, event: str | None
) -> None:
    answer = resource_answer(status, body, LECTURE_TYPE, "7")
    assert answer[:2] == (presence, event)


def test_what_an_event_resource_answer_says() -> None:
    live = json.dumps({"data": {"type": "thin_events", "id": "469", "attributes": {"name": "E"}}})
    assert resource_answer(200, live, EVENT_TYPE, "469")[0] == "live"
    assert resource_answer(404, None, EVENT_TYPE, "469")[0] == "gone"
    assert resource_answer(200, live, EVENT_TYPE, "502")[0] == "unknown"


def record(lecture_id: str, extraction: str, **values: Any) -> Lecture:
    return Lecture(
        lecture_id=lecture_id, url=f"u{lecture_id}", event_id="502", extraction=extraction, **values
    )


def test_a_record_from_its_listing_alone_never_replaces_one_read_from_its_page() -> None:
    page = record("1", "next_data", title="Old", text="Old\n\nthe page", related_lecture_ids=["2"])
    listing = record("1", "api_listing+text_from_fields", title="New", text="New")
    merged = with_listing_fields(listing, page)
    assert (merged.title, merged.text, merged.related_lecture_ids, merged.extraction) == (
        "New",
        "Old\n\nthe page",
        ["2"],
        "next_data",
    )
    # A listing-only row over a listing-only row, or a page over anything, stands as staged.
    assert with_listing_fields(listing, record("1", "api_listing")) is listing
    assert with_listing_fields(page, listing) is page
    done = carry_forward([page], [listing], crawled_events=["502"], withdrawals=Withdrawals())
    assert [(r.title, r.extraction) for r in done.records] == [("New", "next_data")]


# -- a release file edited in place, or damaged ------------------------------------------------------


def event_file(work: Path, event: str) -> Path:
    manifest = json.loads((work / "out" / "manifest.json").read_text(encoding="utf-8"))
    return work / "out" / manifest["event_shards"][event]["files"][0]


def test_a_row_edited_in_place_is_repaired_not_reported_as_a_change(base: Base, tmp_path: Path) -> None:
    work = base.copy(tmp_path / "night")
    path = event_file(work, "502")
    table = pq.read_table(path)
    edited = str(table.column("lecture_id")[0])
    titles = table.column("title").to_pylist()
    original = titles[0]
    titles[0] = "A title nobody published"
    pq.write_table(table.set_column(table.schema.get_field_index("title"), "title", [titles]), path)
    with base.server() as server:
        night = nightly(server, work)
    assert night.returncode == 0, night.stderr[-3000:]
    assert "1 rows edited in place in the release are restored" in night.stdout + night.stderr
    report = run_report(work)
    assert (report["changes"]["changed"], report["changes"]["repaired"]) == ({}, [edited])
    assert rows(work)[edited]["title"] == original
    manifest = json.loads((work / "out" / "manifest.json").read_text(encoding="utf-8"))
    changes = pq.read_table(work / "out" / manifest["change_files"][-1]).column("lecture_id").to_pylist()
    assert edited not in changes
    assert manifest["change_rows"] == {"added": 0, "changed": 0, "removed": 0, "withdrawn": 0}


def test_a_damaged_release_file_is_found_before_the_crawl(base: Base, tmp_path: Path) -> None:
    work = base.copy(tmp_path / "night")
    path = event_file(work, "469")
    path.write_bytes(path.read_bytes()[:100])
    with base.server() as server:
        night = nightly(server, work)
        requests = list(server.requests)
    assert night.returncode == 8, night.stderr[-3000:]
    assert str(path.name) in night.stderr
    assert requests == []
