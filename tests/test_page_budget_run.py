"""The page budget through ``run`` (the TOML key, the flag that overrides it, the gate and the report) and
with subtitles, whose requests count against it, on the replica."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.replica.server import ReplicaServer
from tests.support.commands import run_command
from tests.support.replica import fast_crawl_settings, run_args
from tests.support.staged import read_stage

EVENT = "502"


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records(), seed=7, lectures=60)


def kinds(server: ReplicaServer) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in server.requests:
        counts[record.kind] = counts.get(record.kind, 0) + 1
    return counts


def test_run_honours_the_budget_and_its_gate_takes_the_first_night(site: ReplicaSite, tmp_path: Path) -> None:
    # The file says 100 pages; the flag, 20. The floor on related lectures (which only pages show) would
    # refuse a night that judged the lectures published from their listing on it.
    config = tmp_path / "run.toml"
    config.write_text(
        "[crawl]\npage_budget = 100\n[gate.min_coverage]\nrelated_lecture_ids = 0.9\n", encoding="utf-8"
    )
    listed = sum(1 for lec in site.lectures.values() if lec.event_id == EVENT)
    with ReplicaServer(site) as server:
        command = run_args(
            server.base_url, tmp_path, "budget", "--config", str(config), "--page-budget", "20"
        )
        done = run_command(command, timeout=300)
        asked = kinds(server)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert asked.get("lecture_page") == 20
    report = json.loads((tmp_path / "state" / "run-report.json").read_text(encoding="utf-8"))
    waiting = listed - 20
    assert report["crawl"]["page_budget"] == {
        "budget": 20,
        "fetched": 20,
        "waiting_new": waiting,
        "waiting_changed": 0,
        "waiting_stale": 0,
        "nights": math.ceil(waiting / 20),
        "waiting": waiting,
    }
    checks = {c["name"]: c for c in report["gate"]["checks"]}
    assert checks["listing_only"]["passed"] is True
    assert checks["listing_only"]["value"] == round(waiting / listed, 4)
    assert checks["field_coverage"]["passed"] is True
    assert f"page budget 20: 20 lecture pages fetched, {waiting} wait" in done.stdout
    rows = pq.read_table(tmp_path / "out" / "data" / "lectures").to_pylist()
    assert len(rows) == listed
    assert sum(1 for r in rows if r["extraction"].startswith("api_listing")) == waiting


def test_subtitle_requests_count_against_the_budget(site: ReplicaSite, tmp_path: Path) -> None:
    listed = sum(1 for lec in site.lectures.values() if lec.event_id == EVENT)
    with ReplicaServer(site) as server:
        command = [
            sys.executable, "-m", "crawler.app.cli", "crawl",
            "--web-base", server.base_url, "--api-base", server.base_url, "--state", str(tmp_path / "state"),
            *fast_crawl_settings(), "-s", "PROGRESS_ENABLED=False", "-s", "UNDERLINE_SUBTITLES=True",
            "--page-budget", "10",
        ]  # fmt: skip
        done = run_command(command, timeout=300)
        asked = kinds(server)
    assert done.returncode == 0, done.stderr[-3000:]
    # Three requests a lecture: three pages and their three track lists, and the subtitle files paid from
    # the four requests they leave.
    assert (asked.get("lecture_page"), asked.get("transcripts")) == (3, 3)
    assert asked.get("subtitle", 0) <= 4
    assert sum(n for kind, n in asked.items() if kind not in ("robots", "assets_robots", "listing")) <= 10
    waiting = listed - 3
    assert f"page budget 10: 3 lecture pages fetched, {waiting} wait ({waiting} new" in done.stdout
    assert f"{math.ceil(waiting / 3)} more night(s) at this budget" in done.stdout


def test_a_resumed_crawl_spends_what_is_left_of_its_budget(site: ReplicaSite, tmp_path: Path) -> None:
    listed = sum(1 for lec in site.lectures.values() if lec.event_id == EVENT)
    state = tmp_path / "state"
    with ReplicaServer(site) as server:
        command = [
            sys.executable, "-m", "crawler.app.cli", "crawl",
            "--web-base", server.base_url, "--api-base", server.base_url, "--state", str(state),
            *fast_crawl_settings(), "-s", "PROGRESS_ENABLED=False", "--page-budget", "20",
        ]  # fmt: skip
        # Stopped after robots.txt, the listing and a few lecture pages: unfinished, resumed next time.
        stopped = run_command(
            [*command, "-s", "CLOSESPIDER_PAGECOUNT=8", "-s", "CONCURRENT_REQUESTS=1"], timeout=300
        )
        assert stopped.returncode == 5, stopped.stdout + stopped.stderr[-3000:]
        part = read_stage(state)
        assert not part.complete
        first = {r.lecture_id for r in part.records if not r.extraction.startswith("api_listing")}
        assert 0 < len(first) < 20
        resumed = run_command(command, timeout=300)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    whole = read_stage(state)
    fetched = {r.lecture_id for r in whole.records if not r.extraction.startswith("api_listing")}
    assert len(whole.records) == listed
    assert first < fetched
    assert len(fetched) == 20
    assert f"page budget 20: 20 lecture pages fetched, {listed - 20} wait" in resumed.stdout, resumed.stderr
