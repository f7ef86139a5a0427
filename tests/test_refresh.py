"""The nightly refresh against the replica, counting every request the site answers.

The listing decides: a lecture's page is fetched only when the lecture is new or its listing changed;
the rest is carried over from the last finished crawl. Limits: a first crawl at most 1.05 requests a
lecture, an unchanged night at most 5% of the lectures, each changed, added or removed lecture at most 3
more requests.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crawler.replica.faults import SiteFaults
from crawler.replica.layout import ReplicaSite, build_site, ground_truth, load_records
from crawler.replica.server import ReplicaServer
from tests.support.commands import run_command
from tests.support.replica import QUICK_GIVE_UP, run_args, run_report
from tests.support.sites import changed_site

# Fields only a page shows: a carried page keeps the previous night's (the page budget refreshes them).
PAGE_ONLY = ("related_lecture_ids", "source_urls")
IGNORED = ("fetched_at", "extraction", *PAGE_ONLY)
# A failing page is given up on after one retry, without the host-wide slow-down a real crawl keeps.


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records(), seed=5, lectures=150)


@dataclass(frozen=True)
class FirstNight:
    """The first night of the site, run once for the module; a test that starts from it takes a copy."""

    work: Path
    port: int
    requests: int
    kinds: dict[str, int]


@pytest.fixture(scope="module")
def first_night(site: ReplicaSite, tmp_path_factory: pytest.TempPathFactory) -> FirstNight:
    work = tmp_path_factory.mktemp("first-night")
    with ReplicaServer(site) as server:
        first = nightly(server, work)
        port = int(server.base_url.rsplit(":", 1)[1])
        made = FirstNight(work, port, len(server.requests), kinds(server))
    assert first.returncode == 0, first.stderr[-3000:]
    return made


def after_first_night(first_night: FirstNight, work: Path) -> int:
    """``work`` as the first night left it (state and release); the port the night crawled, which the
    state's URLs name."""
    shutil.copytree(first_night.work, work, symlinks=True, dirs_exist_ok=True)
    return first_night.port


def nightly(server: ReplicaServer, work: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = run_args(server.base_url, work, "refresh", *extra)
    return run_command(command, timeout=300)


report = run_report


def rows(work: Path) -> dict[str, dict[str, Any]]:
    return {r["lecture_id"]: r for r in pq.read_table(work / "out" / "data" / "lectures").to_pylist()}


def kinds(server: ReplicaServer) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in server.requests:
        counts[record.kind] = counts.get(record.kind, 0) + 1
    return counts


def test_a_refresh_asks_the_site_for_what_changed_only(
    site: ReplicaSite, first_night: FirstNight, tmp_path: Path
) -> None:
    lectures = sum(1 for lec in site.lectures.values() if lec.event_id == "502")
    assert first_night.requests <= 1.05 * lectures, first_night.kinds
    port = after_first_night(first_night, tmp_path)
    with ReplicaServer(site, port=port) as server:
        unchanged = nightly(server, tmp_path)
        assert unchanged.returncode == 3, unchanged.stderr[-3000:]
        # robots.txt and the listing pages, nothing else.
        assert len(server.requests) <= 0.05 * lectures, kinds(server)
        assert set(kinds(server)) == {"robots", "listing"}
        assert "0 pages fetched, 0 revalidated" in unchanged.stderr
    changed = changed_site(site, edits=8, removals=2, seed=1)
    with ReplicaServer(changed.site, port=port) as server:
        night = nightly(server, tmp_path)
        assert night.returncode == 0, night.stderr[-3000:]
        extra = len(server.requests) - len(unchanged_requests(lectures))
        assert kinds(server).get("lecture_page", 0) == 8
        assert extra <= 3 * 10
        truth = {t["lecture_id"]: t for t in ground_truth(changed.site, server.base_url)}
    changes = report(tmp_path)["changes"]
    assert changes["added"] == []
    assert sorted(changes["changed"]) == sorted(changed.edited)
    # The edited abstract (and so the text); an edited page may also show other related lectures now, and
    # other pages linking to it (every compared field is told, as the change file tells it).
    for fields in changes["changed"].values():
        assert (
            {"abstract", "text"} <= set(fields) <= {"abstract", "text", "related_lecture_ids", "source_urls"}
        ), fields
    assert changes["gone"] == sorted(changed.removed, key=int)
    published = rows(tmp_path)
    for lecture_id in changed.edited:
        assert published[lecture_id]["abstract"] == truth[lecture_id]["abstract"], f"{lecture_id=}"
    for lecture_id in changed.removed:
        assert published[lecture_id]["withdrawn"] is True, f"{lecture_id=}"


def unchanged_requests(lectures: int) -> range:
    # robots.txt and one listing page per 100 lectures: what any night asks for.
    return range(1 + -(-lectures // 100))


def test_a_refresh_publishes_what_a_full_crawl_publishes(
    site: ReplicaSite, first_night: FirstNight, tmp_path: Path
) -> None:
    port = after_first_night(first_night, tmp_path / "refresh")
    changed = changed_site(site, edits=8, removals=2, seed=2)
    with ReplicaServer(changed.site, port=port) as server:
        refreshed = nightly(server, tmp_path / "refresh")
        full = nightly(server, tmp_path / "full", "-s", "UNDERLINE_REFRESH=False")
    assert (refreshed.returncode, full.returncode) == (0, 0), refreshed.stderr[-2000:] + full.stderr[-2000:]
    refresh_rows, full_rows = rows(tmp_path / "refresh"), rows(tmp_path / "full")
    live = {i: r for i, r in refresh_rows.items() if not r["withdrawn"]}
    assert sorted(live) == sorted(full_rows)
    differ = {
        (i, name)
        for i, row in live.items()
        for name in row
        if name not in (*IGNORED, "content_sha256") and row[name] != full_rows[i][name]
    }
    assert differ == set()


def test_five_lectures_whose_pages_fail_keep_their_content(
    site: ReplicaSite, first_night: FirstNight, tmp_path: Path
) -> None:
    failing = sorted((i for i, lec in site.lectures.items() if lec.event_id == "502"), key=int)[5:10]
    port = after_first_night(first_night, tmp_path)
    before = rows(tmp_path)
    broken = SiteFaults(failing_lectures=frozenset(failing))
    # Every page asked for again, so that the failing ones are asked for too.
    with ReplicaServer(site, port=port, site_faults=broken) as server:
        night = nightly(server, tmp_path, "-s", "UNDERLINE_REFRESH=False", *QUICK_GIVE_UP)
    assert night.returncode in (3, 4), night.stderr[-3000:]
    stats = report(tmp_path)["crawl"]["stats"]
    assert stats["underline/page_failed_kept"] == 5
    after = rows(tmp_path)
    assert {i: after[i] for i in failing} == {i: before[i] for i in failing}
    assert not any(after[i]["withdrawn"] for i in failing)
    with ReplicaServer(site, port=port) as server:
        healthy = nightly(server, tmp_path)
    assert healthy.returncode == 3, healthy.stderr[-3000:]


@pytest.mark.parametrize("previous", [False, True])
def test_a_failing_listing_page_publishes_nothing(
    site: ReplicaSite, first_night: FirstNight, tmp_path: Path, previous: bool
) -> None:
    port = after_first_night(first_night, tmp_path) if previous else None
    before = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    # The last listing page of the event fails every time.
    pages = -(-sum(1 for lec in site.lectures.values() if lec.event_id == "502") // 100)
    faults = SiteFaults(listing_errors={pages: None})
    with ReplicaServer(site, port=port or 0, site_faults=faults) as server:
        night = nightly(server, tmp_path, *QUICK_GIVE_UP)
    assert night.returncode == 5, night.stderr[-3000:]
    assert "could not read the whole lecture listing" in night.stderr
    after = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert after == before
    if previous:
        # The next, healthy night resumes the stopped crawl and finds nothing changed.
        with ReplicaServer(site, port=port or 0) as server:
            healthy = nightly(server, tmp_path)
        assert healthy.returncode == 3, healthy.stderr[-3000:]


def test_a_page_that_shows_another_lecture_never_lends_it_its_url(site: ReplicaSite, tmp_path: Path) -> None:
    ids = sorted((i for i, lec in site.lectures.items() if lec.event_id == "502"), key=int)
    asked, shown = ids[3], ids[4]
    with ReplicaServer(site, site_faults=SiteFaults(swapped_pages={asked: shown})) as server:
        night = nightly(server, tmp_path)
        truth = {t["lecture_id"]: t for t in ground_truth(site, server.base_url)}
    assert night.returncode in (0, 4), night.stderr[-3000:]
    published = rows(tmp_path)
    assert report(tmp_path)["crawl"]["stats"]["underline/page_lecture_mismatch"] == 1
    assert published[asked]["title"] == truth[asked]["title"]
    assert published[asked]["extraction"].startswith("api_listing")
    assert not any(f"/lecture/{asked}" in url for url in published[shown]["source_urls"])


def test_an_endless_listing_stops_with_a_clear_error(site: ReplicaSite, tmp_path: Path) -> None:
    with ReplicaServer(site, site_faults=SiteFaults(endless_listing="small")) as server:
        night = nightly(server, tmp_path)
        listing_requests = kinds(server).get("listing", 0)
    assert night.returncode == 5, night.stderr[-3000:]
    assert "did not end" in night.stderr
    assert report(tmp_path)["crawl"]["finish_reason"] == "listing_unbounded"
    pages = -(-sum(1 for lec in site.lectures.values() if lec.event_id == "502") // 100)
    assert listing_requests == pages + 1
    assert not (tmp_path / "out").exists()
