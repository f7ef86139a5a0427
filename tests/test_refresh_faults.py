"""Nights on which the site misbehaves, and what the refresh must not do then: publish a listing read
short, carry over what the gate refused, keep a page that lags its listing, drop authors, count a resumed
crawl twice, or fetch every page again because the crawler learned a field.

One healthy first night is crawled once; each scenario starts from a copy of its state and release, on
the same port (lecture URLs hold it).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crawler import stats_keys as keys
from crawler.replica.faults import SiteFaults
from crawler.replica.layout import ReplicaSite, build_site, ground_truth, load_records
from crawler.replica.server import ReplicaServer
from crawler.urls import listing_url
from tests.support.commands import run_command, start_command
from tests.support.replica import QUICK_GIVE_UP, run_args, run_report
from tests.support.sites import EDIT_SUFFIX, with_edit
from tests.support.staged import read_stage

EVENT = "502"
PAGE_SIZE = 5
# A failing page is given up on after one retry, without the host-wide slow-down a real crawl keeps.


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def command(base: str, work: Path, *extra: str) -> list[str]:
    return run_args(base, work, "faults", "-s", f"UNDERLINE_PAGE_SIZE={PAGE_SIZE}", *extra)


def nightly(server: ReplicaServer, work: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_command(command(server.base_url, work, *extra), timeout=300)


report = run_report


def stats(work: Path) -> dict[str, Any]:
    return report(work)["crawl"]["stats"]


def rows(work: Path) -> dict[str, dict[str, Any]]:
    return {r["lecture_id"]: r for r in pq.read_table(work / "out" / "data" / "lectures").to_pylist()}


def release_bytes(work: Path) -> dict[str, bytes]:
    out = work / "out"
    return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def page_requests(server: ReplicaServer) -> list[str]:
    return [r.path for r in server.requests if r.kind == "lecture_page"]


def listed_ids(base: str, page: int) -> list[str]:
    """The lecture ids of one listing page, as the site answers them."""
    with urllib.request.urlopen(listing_url(base, EVENT, page, PAGE_SIZE), timeout=10) as answer:
        return [str(r["id"]) for r in json.load(answer)["data"]]


class Base:
    """The first, healthy night: its site, port, listing order and work directory."""

    def __init__(self, site: ReplicaSite, port: int, work: Path, order: list[str]) -> None:
        self.site, self.port, self.work, self.order = site, port, work, order

    @property
    def pages(self) -> int:
        return -(-len(self.order) // PAGE_SIZE)

    def copy(self, to: Path) -> Path:
        shutil.copytree(self.work, to)
        return to

    def server(self, site: ReplicaSite | None = None, faults: SiteFaults | None = None) -> ReplicaServer:
        return ReplicaServer(site or self.site, port=self.port, site_faults=faults)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    site = build_site(load_records(), seed=11, lectures=64)
    work = tmp_path_factory.mktemp("first-night")
    port = free_port()
    with ReplicaServer(site, port=port) as server:
        first = nightly(server, work)
        pages = -(-sum(1 for lec in site.lectures.values() if lec.event_id == EVENT) // PAGE_SIZE)
        order = [i for page in range(1, pages + 1) for i in listed_ids(server.base_url, page)]
    assert first.returncode == 0, first.stderr[-3000:]
    assert sorted(order, key=int) == sorted(rows(work), key=int)
    return Base(site, port, work, order)


# -- a listing that does not agree with its own meta ------------------------------------------------


def test_an_empty_last_listing_page_leaves_the_listing_incomplete(base: Base, tmp_path: Path) -> None:
    # Read alone, the listing looks whole (its last page ends it): only its meta's count tells.
    work = base.copy(tmp_path / "night")
    before = release_bytes(work)
    page = base.pages
    with base.server(faults=SiteFaults(empty_listing_pages=frozenset({page}))) as server:
        night = nightly(server, work)
    with base.server() as server:
        emptied = listed_ids(server.base_url, page)
    assert night.returncode == 5, night.stderr[-3000:]
    assert "could not read the whole lecture listing" in night.stderr
    assert report(work)["crawl"]["finish_reason"] == keys.LISTING_INCOMPLETE_REASON
    assert stats(work).get(keys.LISTING_SHORT, 0) == 1
    assert release_bytes(work) == before
    assert stats(work)[keys.LISTED] == len(base.order) - len(emptied)


# -- a damaged record of the last stage, and a listing callback that fails --------------------------


def damage(work: Path, lecture_id: str) -> None:
    """Give one staged record a timestamp nobody can read (the line itself stays JSON)."""
    path = work / "state" / "stage" / "main.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for n, line in enumerate(lines):
        payload = json.loads(line)
        if payload.get("kind") == "lecture" and payload["lecture"]["lecture_id"] == lecture_id:
            payload["lecture"]["held_at"] = "the day after tomorrow"
            lines[n] = json.dumps(payload) + "\n"
    path.write_text("".join(lines), encoding="utf-8")


def test_a_damaged_record_of_the_last_stage_is_fetched_again(base: Base, tmp_path: Path) -> None:
    work = base.copy(tmp_path / "night")
    # The first lecture of the last listing page: the rest of that page would be lost with it.
    damaged = base.order[(base.pages - 1) * PAGE_SIZE]
    damage(work, damaged)
    with base.server() as server:
        night = nightly(server, work)
        fetched = page_requests(server)
    assert night.returncode == 3, night.stderr[-3000:]
    assert [p.split("/")[2].split("-")[0] for p in fetched] == [damaged]
    assert stats(work)[keys.PREVIOUS_DAMAGED] == 1
    assert stats(work)[keys.LISTED] == len(base.order)
    assert not any(r["withdrawn"] for r in rows(work).values())


# -- a page that lags its listing -------------------------------------------------------------------


def test_a_page_that_lags_its_listing_is_fetched_again_the_next_night(base: Base, tmp_path: Path) -> None:
    work = base.copy(tmp_path / "night")
    lagging = base.order[7]
    # Night 2: the listing has the edited abstract, the page not yet.
    with base.server(faults=SiteFaults(listing_appends={lagging: EDIT_SUFFIX})) as server:
        lags = nightly(server, work)
        assert len(page_requests(server)) == 1
    assert lags.returncode == 3, lags.stderr[-3000:]
    assert stats(work)["underline/api_mismatch/abstract"] == 1
    # Night 3: the page has caught up with its listing.
    edited = with_edit(base.site, lagging, abstract=base.site.lectures[lagging].abstract + EDIT_SUFFIX)
    with base.server(site=edited) as server:
        caught_up = nightly(server, work)
        assert len(page_requests(server)) == 1
        truth = {t["lecture_id"]: t for t in ground_truth(edited, server.base_url)}
    assert caught_up.returncode == 0, caught_up.stderr[-3000:]
    assert rows(work)[lagging]["abstract"] == truth[lagging]["abstract"]
    # Every compared field that differs, as the change file tells it: the page read again links anew.
    assert report(work)["changes"]["changed"] == {lagging: ["source_urls", "abstract", "text"]}


# -- what the gate refused is not carried over --------------------------------------------------------


def test_records_the_gate_refused_are_fetched_again_not_published_the_next_night(
    base: Base, tmp_path: Path
) -> None:
    work = base.copy(tmp_path / "night")
    edited_ids = base.order[10:13]
    edited = base.site
    for lecture_id in edited_ids:
        edited = with_edit(edited, lecture_id, abstract=base.site.lectures[lecture_id].abstract + EDIT_SUFFIX)
    # Night 2: the changed lectures' pages come without their JSON; the gate refuses the crawl.
    with base.server(site=edited, faults=SiteFaults(stripped_pages=frozenset(edited_ids))) as server:
        refused = nightly(server, work)
    assert refused.returncode == 4, refused.stderr[-3000:]
    assert [c["name"] for c in report(work)["gate"]["checks"] if not c["passed"]] == ["fallback_rate"]
    # Night 3, the site healthy: the refused pages are asked for again, and published as the site has them.
    with base.server(site=edited) as server:
        healthy = nightly(server, work)
        fetched = sorted(p.split("/")[2].split("-")[0] for p in page_requests(server))
        truth = {t["lecture_id"]: t for t in ground_truth(edited, server.base_url)}
    assert healthy.returncode == 0, healthy.stderr[-3000:]
    assert fetched == sorted(edited_ids)
    published = rows(work)
    for lecture_id in edited_ids:
        assert published[lecture_id]["extraction"] == "next_data", f"{lecture_id=}"
        assert published[lecture_id]["abstract"] == truth[lecture_id]["abstract"], f"{lecture_id=}"
        assert published[lecture_id]["related_lecture_ids"] == truth[lecture_id]["related_lecture_ids"], (
            f"{lecture_id=}"
        )
    assert (work / "state" / "stage.refused").is_dir()


# -- authors whose profiles the listing left out -----------------------------------------------------


def test_authors_whose_profiles_are_missing_keep_their_last_authors_and_are_counted(
    base: Base, tmp_path: Path
) -> None:
    work = base.copy(tmp_path / "night")
    before = rows(work)
    dropped = [i for i in base.order if base.site.lectures[i].profiles][20:22]
    with base.server(faults=SiteFaults(dropped_profiles=frozenset(dropped))) as server:
        night = nightly(server, work)
    assert night.returncode == 3, night.stderr[-3000:]
    counted = stats(work)
    assert (counted[keys.AUTHORS_INCOMPLETE], counted[keys.AUTHORS_KEPT]) == (2, 2)
    assert counted[keys.AUTHORS_INCOMPLETE_PREFIX + EVENT] == 2
    staged = {r.lecture_id: r.values() for r in read_stage(work / "state").records}
    for lecture_id in dropped:
        assert staged[lecture_id]["authors"] == before[lecture_id]["authors"] != [], f"{lecture_id=}"


# -- a field new to the schema -------------------------------------------------------------------------


def test_a_field_new_to_the_listing_is_filled_from_it_without_fetching_pages(
    base: Base, tmp_path: Path
) -> None:
    work = base.copy(tmp_path / "night")
    # The last crawl as a crawler that did not know `doi` yet staged it: no such field, no hash of it.
    path = work / "state" / "stage" / "main.jsonl"
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        payload = json.loads(line)
        if payload.get("kind") == "lecture":
            payload["lecture"].pop("doi")
            payload["lecture"]["listing_hashes"].pop("doi")
        lines.append(json.dumps(payload) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    with base.server() as server:
        night = nightly(server, work)
        fetched = page_requests(server)
        truth = {t["lecture_id"]: t for t in ground_truth(base.site, server.base_url)}
    assert night.returncode == 3, night.stderr[-3000:]
    assert len(fetched) <= 0.05 * len(base.order)
    staged = {r.lecture_id: r.values() for r in read_stage(work / "state").records}
    assert {i: r["doi"] for i, r in staged.items()} == {i: truth[i]["doi"] for i in staged}
    assert any(r["doi"] for r in staged.values())


# -- a crawl killed with SIGKILL and resumed is counted exactly once -----------------------------------


def staged_ids(work: Path) -> set[str]:
    path = work / "state" / "stage" / "main.jsonl"
    if not path.exists():
        return set()
    ids = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if '"kind":"lecture"' in line:
            with contextlib.suppress(ValueError):  # a line the kill left half-written
                ids.add(json.loads(line)["lecture"]["lecture_id"])
    return ids


@pytest.mark.parametrize("interval", ["3600", "0.2"])
def test_a_refused_crawl_killed_and_resumed_is_still_refused(
    base: Base, tmp_path: Path, interval: str
) -> None:
    # Two failing pages of the 63 (over the 2% the gate allows), listed first.
    failing = frozenset(base.order[:2])
    faults = SiteFaults(failing_lectures=failing)
    # As one crawl counts them: every lecture listed and staged, 2 failed (and kept from the listing), the
    # others read from their JSON.
    one_go = {
        keys.LISTED: len(base.order),
        keys.FETCH_FAILED: len(failing),
        keys.PAGE_FAILED_KEPT: len(failing),
        keys.EXTRACTION_NEXT_DATA: len(base.order) - len(failing),
        keys.STAGE_LECTURES: len(base.order),
    }
    with base.server(faults=faults) as server:
        work = tmp_path / "killed"
        slow = ("-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1", "-s", "DOWNLOAD_DELAY=0.05")
        # 3600: no snapshot of the counters before the kill; 0.2: snapshots that hold part of the listing.
        snapshots = ("-s", f"CRAWL_STATS_INTERVAL={interval}")
        process = start_command(
            command(server.base_url, work, *QUICK_GIVE_UP, *slow, *snapshots),
            cwd=tmp_path,
            stdout=tmp_path / "killed.out",
            stderr=tmp_path / "killed.err",
        )
        deadline = time.monotonic() + 120
        while (
            not (failing <= staged_ids(work) and len(staged_ids(work)) >= 12) and time.monotonic() < deadline
        ):
            time.sleep(0.01)
        if interval != "3600":
            while not (work / "state" / "stage" / "stats-main.json").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        assert failing <= staged_ids(work) and len(staged_ids(work)) < len(base.order)
        resumed = nightly(server, work, *QUICK_GIVE_UP)
    assert resumed.returncode == 4, resumed.stderr[-3000:]
    counted = stats(work)
    assert counted["crawl/resumed_parts"] == 1
    assert {key: counted.get(key) for key in one_go} == one_go
