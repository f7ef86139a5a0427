"""A page budget against the replica, counting every lecture page the site answers.

With ``--page-budget B`` a crawl reads every listing whole and asks at most B lecture pages: new lectures
first, then changed ones, then stale ones; every other listed lecture is staged from its listing (never
fetched) or as the last crawl staged it, so the crawl finishes and is published. The next crawl goes on
where it stopped. The nights share one state directory and one replica port (lecture URLs hold it).
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crawler.replica.layout import ReplicaSite, build_site, ground_truth, load_records
from crawler.replica.server import ReplicaServer
from crawler.schema import format_timestamp
from tests.support.commands import eventcrawl, run_command
from tests.support.replica import LISTING_FIELDS, fast_crawl_settings
from tests.support.sites import changed_site
from tests.support.staged import read_stage

EVENT = "502"
BUDGET = 40
LECTURE_PAGE = re.compile(r"^/lecture/(\d+)(?:-|$)")


def crawl(server: ReplicaServer, state: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "crawler.app.cli", "crawl",
        "--web-base", server.base_url, "--api-base", server.base_url, "--state", str(state),
        *fast_crawl_settings(), "-s", "PROGRESS_ENABLED=False", "-s", "UNDERLINE_PAGE_SIZE=25", *extra,
    ]  # fmt: skip
    return run_command(command, timeout=300)


def pages_asked(server: ReplicaServer) -> list[str]:
    """The lecture ids whose pages the replica answered, one per request (a page asked twice twice)."""
    ids = []
    for record in server.requests:
        match = LECTURE_PAGE.match(record.path.split("?", 1)[0])
        if record.kind == "lecture_page" and match:
            ids.append(match.group(1))
    return ids


def staged(state: Path) -> dict[str, dict[str, Any]]:
    return {r.lecture_id: r.values() for r in read_stage(state).records}


@dataclass
class Nights:
    """Every night's crawl output and the lecture pages it asked for, in order."""

    site: ReplicaSite
    state: Path
    truth: dict[str, dict[str, Any]]
    runs: list[subprocess.CompletedProcess[str]] = field(default_factory=list)
    asked: list[list[str]] = field(default_factory=list)
    stages: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    duplicates: list[int] = field(default_factory=list)
    published: subprocess.CompletedProcess[str] | None = None
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    row_count: int = 0
    changed: tuple[str, ...] = ()


def night(server: ReplicaServer, nights: Nights, *extra: str) -> None:
    server.clear_requests()
    nights.runs.append(crawl(server, nights.state, *extra))
    nights.asked.append(pages_asked(server))
    nights.stages.append(staged(nights.state))
    nights.duplicates.append(read_stage(nights.state).duplicate_lectures)


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records(), seed=5, lectures=120)


@pytest.fixture(scope="module")
def nights(site: ReplicaSite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nights]:
    """Nights 1-4 at a budget of 40 on an unchanged site; night 1 is published. Then abstracts of five
    lectures are edited and every page is due for revalidation: nights 5 and 6 at a budget of 3."""
    work = tmp_path_factory.mktemp("budget")
    with ReplicaServer(site) as server:
        truth = {t["lecture_id"]: t for t in ground_truth(site, server.base_url)}
        nights = Nights(site, work / "state", truth)
        night(server, nights, "--page-budget", str(BUDGET))
        nights.published = eventcrawl(
            "publish",
            "--state",
            str(nights.state),
            "--out",
            str(work / "out"),
            "--name",
            "budget",
            timeout=300,
        )
        if nights.published.returncode == 0:
            table = pq.read_table(work / "out" / "data" / "lectures").to_pylist()
            nights.rows = {r["lecture_id"]: r for r in table}
            nights.row_count = len(table)
        for _ in range(3):
            night(server, nights, "--page-budget", str(BUDGET))
        port = int(server.base_url.rsplit(":", 1)[1])
    edited = changed_site(site, edits=5, removals=0, seed=3)
    nights.changed = edited.edited
    due = ("-s", "UNDERLINE_REVALIDATE_AFTER_DAYS=0", "-s", "UNDERLINE_REVALIDATE_SHARE=1.0")
    with ReplicaServer(edited.site, port=port) as server:
        night(server, nights, "--page-budget", "3", *due)
        night(server, nights, "--page-budget", "3", *due)
    yield nights


def lectures(site: ReplicaSite) -> set[str]:
    return {i for i, lec in site.lectures.items() if lec.event_id == EVENT}


def test_night_one_asks_exactly_the_budget_and_stages_every_listed_lecture_once(nights: Nights) -> None:
    everyone = lectures(nights.site)
    assert len(everyone) > BUDGET
    first = nights.runs[0]
    assert first.returncode == 0, first.stderr[-3000:]
    assert len(nights.asked[0]) == BUDGET
    assert len(set(nights.asked[0])) == BUDGET
    assert set(nights.stages[0]) == everyone
    assert nights.duplicates[0] == 0
    waiting = len(everyone) - BUDGET
    nights_left = math.ceil(waiting / BUDGET)
    assert (
        f"page budget {BUDGET}: {BUDGET} lecture pages fetched, {waiting} wait ({waiting} new, 0 changed, "
        f"0 stale): {nights_left} more night(s) at this budget"
    ) in first.stdout


def test_lectures_not_fetched_are_published_from_their_listing(nights: Nights) -> None:
    stage = nights.stages[0]
    fetched = set(nights.asked[0])
    for lecture_id, record in stage.items():
        expected = "next_data" if lecture_id in fetched else "api_listing"
        assert record["extraction"].split("+")[0] == expected, lecture_id
        truth = nights.truth[lecture_id]
        if lecture_id not in fetched:
            # The stage reads timestamps back as datetimes; the truth writes them as text.
            got = {f: format_timestamp(v) if isinstance(v, datetime) else v for f, v in record.items()}
            assert {f: got[f] for f in LISTING_FIELDS} == {f: truth[f] for f in LISTING_FIELDS}, (
                f"{lecture_id=}, {record=}"
            )
            assert record["related_lecture_ids"] == [], f"{lecture_id=}, {record=}"


def test_publish_takes_a_crawl_that_stopped_at_its_budget(nights: Nights) -> None:
    assert nights.published is not None
    assert nights.published.returncode == 0, nights.published.stderr[-3000:]
    assert set(nights.rows) == lectures(nights.site)
    assert nights.row_count == len(lectures(nights.site))  # each lecture once
    listing_only = {i for i, r in nights.rows.items() if r["extraction"].startswith("api_listing")}
    assert listing_only == lectures(nights.site) - set(nights.asked[0])
    for lecture_id in listing_only:
        assert nights.rows[lecture_id]["title"] == nights.truth[lecture_id]["title"], f"{lecture_id=}"
        assert nights.rows[lecture_id]["abstract"] == nights.truth[lecture_id]["abstract"], f"{lecture_id=}"


def test_each_night_goes_on_where_the_last_stopped(nights: Nights) -> None:
    everyone = lectures(nights.site)
    needed = math.ceil(len(everyone) / BUDGET)
    assert needed == 3
    for run in nights.runs[:4]:
        assert run.returncode == 0, run.stderr[-3000:]
    one, two, three = (set(a) for a in nights.asked[:3])
    assert [len(a) for a in nights.asked[:4]] == [BUDGET, BUDGET, len(everyone) - 2 * BUDGET, 0]
    assert not one & two and not (one | two) & three
    assert one | two | three == everyone
    # Night 2's waiting lectures are those never fetched, not the ones fetched on night 1.
    left = len(everyone) - 2 * BUDGET
    assert (
        f"{BUDGET} lecture pages fetched, {left} wait ({left} new, 0 changed, 0 stale)"
        in nights.runs[1].stdout
    )
    for stage, duplicates in zip(nights.stages[:4], nights.duplicates[:4], strict=True):
        assert set(stage) == everyone, f"{stage=}, {duplicates=}"
        assert duplicates == 0, f"{stage=}, {duplicates=}"
    # After night 3 every lecture holds its page, and night 4 carries them all.
    assert all(r["extraction"].split("+")[0] == "next_data" for r in nights.stages[3].values())
    assert (
        "0 lecture pages fetched, 0 wait (0 new, 0 changed, 0 stale): 0 more night(s)"
        in nights.runs[3].stdout
    )
    for lecture_id, record in nights.stages[3].items():
        assert record["related_lecture_ids"] == nights.truth[lecture_id]["related_lecture_ids"], (
            f"{lecture_id=}, {record=}"
        )


def test_changed_lectures_come_before_stale_ones_and_stay_changed_until_fetched(nights: Nights) -> None:
    changed = set(nights.changed)
    five, six = nights.asked[4], nights.asked[5]
    assert (nights.runs[4].returncode, nights.runs[5].returncode) == (0, 0), nights.runs[5].stderr[-3000:]
    assert len(five) == 3 and len(six) == 3
    # Night 5: three of the five changed lectures, no stale one.
    assert set(five) < changed
    # Night 6: the two changed lectures left, then the stalest page: one fetched on night 1.
    assert changed - set(five) < set(six)
    (stale,) = set(six) - changed
    assert stale in set(nights.asked[0])
    before = nights.stages[4]
    oldest = min(
        (r for i, r in before.items() if i not in changed), key=lambda r: (r["fetched_at"], r["lecture_id"])
    )
    assert stale == oldest["lecture_id"]
    # The two changed lectures waiting on night 5 kept their last record (the old abstract).
    # (the truth is the unedited site's), and took the edited one when fetched on night 6.
    for lecture_id in changed - set(five):
        assert before[lecture_id]["abstract"] == nights.truth[lecture_id]["abstract"], f"{lecture_id=}"
        assert nights.stages[5][lecture_id]["abstract"] != nights.truth[lecture_id]["abstract"], (
            f"{lecture_id=}"
        )
    for lecture_id in five:
        assert before[lecture_id]["abstract"] != nights.truth[lecture_id]["abstract"], f"{lecture_id=}"
    everyone = len(lectures(nights.site))
    assert (
        f"3 lecture pages fetched, {everyone - 3} wait (0 new, 2 changed, {everyone - 5} stale)"
        in nights.runs[4].stdout
    )
    assert (
        f"3 lecture pages fetched, {everyone - 3} wait (0 new, 0 changed, {everyone - 3} stale)"
        in nights.runs[5].stdout
    )
