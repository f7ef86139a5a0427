"""`eventcrawl run` end to end against replicas that change between runs, as a nightly crawl sees."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crawler.replica.faults import SiteFaults
from crawler.replica.layout import ReplicaSite, build_site, ground_truth, load_records
from crawler.replica.pages import NEXT_DATA_MISSING, PageVariant
from crawler.replica.server import ReplicaServer
from crawler.schema import CONTENT_FIELDS
from tests.scenarios.planted import PlantedSite
from tests.support.commands import eventcrawl, run_command, start_command
from tests.support.hub import StandIn, hub  # noqa: F401 (a fixture)
from tests.support.replica import fast_crawl_settings, run_args, run_report
from tests.support.sites import with_edit, without_lectures

MAIN_EVENT = "502"
HUB_TOKEN = "hf_StandInSecretToken0123456789abcdef"


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records(), seed=3, lectures=40)


@dataclass(frozen=True)
class FirstRun:
    """The site's first run, made once for the module; a test that starts from it takes a copy."""

    work: Path
    port: int


@pytest.fixture(scope="module")
def first_run(site: ReplicaSite, tmp_path_factory: pytest.TempPathFactory) -> FirstRun:
    work = tmp_path_factory.mktemp("first-run")
    with ReplicaServer(site) as server:
        first = run(server, work)
        port = int(server.base_url.rsplit(":", 1)[1])
    assert first.returncode == 0, first.stderr[-3000:]
    return FirstRun(work, port)


def after_first_run(first_run: FirstRun, work: Path) -> int:
    """``work`` as the first run left it (state and release); the port it crawled, which the state's
    URLs name."""
    shutil.copytree(first_run.work, work, symlinks=True, dirs_exist_ok=True)
    return first_run.port


def main_event_ids(site: ReplicaSite) -> list[str]:
    return sorted((i for i, lec in site.lectures.items() if lec.event_id == MAIN_EVENT), key=int)


def command_line(server: ReplicaServer, work: Path, *extra: str) -> list[str]:
    return run_args(server.base_url, work, "emnlp-2025-test", *extra)


def run(server: ReplicaServer, work: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_command(command_line(server, work, *extra), timeout=300)


report = run_report


def published(work: Path) -> dict[str, dict[str, Any]]:
    rows = pq.read_table(work / "out" / "data" / "lectures").to_pylist()
    return {row["lecture_id"]: row for row in rows}


def release_bytes(work: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(work / "out")): p.read_bytes() for p in (work / "out").rglob("*") if p.is_file()
    }


def test_an_unchanged_site_publishes_nothing_new_and_says_so(
    site: ReplicaSite, first_run: FirstRun, tmp_path: Path
) -> None:
    port = after_first_run(first_run, tmp_path)
    with ReplicaServer(site, port=port) as server:
        assert report(tmp_path)["status"] == "published"
        before = release_bytes(tmp_path)
        second = run(server, tmp_path)
    assert second.returncode == 3, second.stderr[-3000:]
    assert "nothing changed" in second.stderr
    assert report(tmp_path)["status"] == "nothing_changed"
    assert report(tmp_path)["changes"] == {"added": [], "changed": {}, "gone": [], "retired_events": {}}
    assert release_bytes(tmp_path) == before


def test_the_changelog_lists_added_changed_and_gone_exactly(site: ReplicaSite, tmp_path: Path) -> None:
    ids = main_event_ids(site)
    added, edited, gone = ids[3], ids[10], ids[20]
    old_site = without_lectures(site, [added])
    new_site = with_edit(without_lectures(site, [gone]), edited, title="A Revised Title for Testing")
    with ReplicaServer(old_site) as server:
        assert run(server, tmp_path).returncode == 0
        old_truth = {t["lecture_id"]: t for t in ground_truth(old_site, server.base_url)}
        port = int(server.base_url.rsplit(":", 1)[1])
    # The same address, as a live site keeps between two nightly crawls. A full crawl (no refresh):
    # related lectures change on pages whose own lecture did not, which only fetching every page sees.
    with ReplicaServer(new_site, port=port) as server:
        result = run(server, tmp_path, "-s", "HTTPCACHE_ENABLED=False", "-s", "UNDERLINE_REFRESH=False")
        new_truth = {t["lecture_id"]: t for t in ground_truth(new_site, server.base_url)}
    assert result.returncode == 0, result.stderr[-3000:]
    expected_changed = {
        i: [f for f in CONTENT_FIELDS if old_truth[i].get(f) != new_truth[i].get(f)]
        for i in sorted(old_truth.keys() & new_truth.keys(), key=int)
    }
    expected_changed = {i: f for i, f in expected_changed.items() if f}
    assert edited in expected_changed and "title" in expected_changed[edited]
    changes = report(tmp_path)["changes"]
    assert changes["added"] == [added]
    assert changes["gone"] == [gone]
    assert changes["changed"] == expected_changed
    rows = published(tmp_path)
    assert rows[gone]["withdrawn"] is True
    assert rows[gone]["title"] == old_truth[gone]["title"]
    assert rows[edited]["title"] == "A Revised Title for Testing"
    assert sum(not r["withdrawn"] for r in rows.values()) == len(new_truth)


def test_the_gate_refuses_a_site_that_lost_half_its_lectures(
    site: ReplicaSite, first_run: FirstRun, tmp_path: Path
) -> None:
    port = after_first_run(first_run, tmp_path)
    before = release_bytes(tmp_path)
    half = without_lectures(site, main_event_ids(site)[::2])
    with ReplicaServer(half, port=port) as server:
        # Every page fetched again (a refresh would carry the unchanged lectures over).
        refused = run(server, tmp_path, "-s", "HTTPCACHE_ENABLED=False", "-s", "UNDERLINE_REFRESH=False")
    assert refused.returncode == 4, refused.stderr[-3000:]
    assert "FAIL max_drop" in refused.stderr
    gate = report(tmp_path)["gate"]
    assert not gate["passed"]
    assert [c["name"] for c in gate["checks"] if not c["passed"]] == ["max_drop"]
    assert release_bytes(tmp_path) == before
    with ReplicaServer(half, port=port) as server:
        forced = run(server, tmp_path, "-s", "HTTPCACHE_ENABLED=False", "--force")
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert report(tmp_path)["release"]["forced"] is True


def staged_lectures(work: Path) -> int:
    """The lectures whose stage lines are written whole: a line the crawl is still writing (a large one
    takes more than one write) is not staged yet, and a kill then leaves it cut short."""
    path = work / "state" / "stage" / "main.jsonl"
    if not path.exists():
        return 0
    text = path.read_text(encoding="utf-8", errors="replace")
    return text[: text.rfind("\n") + 1].count('"kind":"lecture"')


@pytest.mark.parametrize("kill_after", [3, 17])
def test_a_run_killed_with_sigkill_resumes_to_the_same_dataset(
    site: ReplicaSite, first_run: FirstRun, tmp_path: Path, kill_after: int
) -> None:
    # The first run, never killed, of the same site on the same port (the URLs published hold it) is
    # what the killed and resumed run must publish.
    with ReplicaServer(site, port=first_run.port) as server:
        work = tmp_path / "killed"
        slow = ["-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1", "-s", "DOWNLOAD_DELAY=0.05"]
        output = (tmp_path / "killed.out", tmp_path / "killed.err")
        process = start_command(
            command_line(server, work, *slow), cwd=tmp_path, stdout=output[0], stderr=output[1]
        )
        deadline = time.monotonic() + 120
        while staged_lectures(work) < kill_after and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        assert kill_after <= staged_lectures(work) < len(main_event_ids(site))
        resumed = run(server, work)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    stats = report(work)["crawl"]["stats"]
    assert stats["underline/resume_skipped"] >= kill_after
    expected = published(first_run.work)
    got = published(work)
    assert got.keys() == expected.keys()
    for lecture_id, row in expected.items():
        for name in (*CONTENT_FIELDS, "source_urls", "withdrawn"):
            assert got[lecture_id][name] == row[name], (lecture_id, name)


def test_two_runs_cannot_share_a_state_directory(site: ReplicaSite, tmp_path: Path) -> None:
    with ReplicaServer(site) as server:
        slow = ["-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1", "-s", "DOWNLOAD_DELAY=0.05"]
        err = tmp_path / "first.err"
        first = start_command(
            command_line(server, tmp_path, *slow), cwd=tmp_path, stdout=tmp_path / "first.out", stderr=err
        )
        deadline = time.monotonic() + 60
        while not (tmp_path / "state" / "run.lock").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        second = run(server, tmp_path)
        first.wait(timeout=300)
    assert second.returncode == 6
    assert "another run holds" in second.stderr
    assert first.returncode == 0, err.read_text()[-3000:]
    assert report(tmp_path)["status"] == "published"


def test_the_gate_refuses_a_redesign_that_dropped_the_page_json(
    site: ReplicaSite, first_run: FirstRun, tmp_path: Path
) -> None:
    port = after_first_run(first_run, tmp_path)
    before = release_bytes(tmp_path)
    redesigned = PlantedSite(
        seed=site.seed,
        events=site.events,
        tags=site.tags,
        sessions=site.sessions,
        lectures=site.lectures,
        page_variants={i: PageVariant(next_data=NEXT_DATA_MISSING) for i in site.lectures},
    )
    with ReplicaServer(redesigned, port=port) as server:
        # Every page fetched again (a refresh would carry the unchanged lectures over).
        refused = run(server, tmp_path, "-s", "HTTPCACHE_ENABLED=False", "-s", "UNDERLINE_REFRESH=False")
    assert refused.returncode == 4, refused.stderr[-3000:]
    gate = report(tmp_path)["gate"]
    # Without the page JSON the related lectures are lost too, and the coverage monitor says so.
    assert [c["name"] for c in gate["checks"] if not c["passed"]] == [
        "fallback_rate",
        "coverage:related_lecture_ids",
    ]
    fallback = next(c for c in gate["checks"] if c["name"] == "fallback_rate")
    assert fallback["value"] == 1.0
    assert release_bytes(tmp_path) == before


def test_a_resumed_crawl_is_judged_whole_not_by_its_last_part(site: ReplicaSite, tmp_path: Path) -> None:
    # The first part of the crawl meets pages without their JSON, then stops; the part after the resume
    # meets healthy pages. Judged by its last part alone, the crawl would pass the fallback check.
    broken = PlantedSite(
        seed=site.seed,
        events=site.events,
        tags=site.tags,
        sessions=site.sessions,
        lectures=site.lectures,
        page_variants={i: PageVariant(next_data=NEXT_DATA_MISSING) for i in site.lectures},
    )
    with ReplicaServer(broken) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        first = eventcrawl(
            "crawl", "--state", str(tmp_path / "state"),
            "--web-base", server.base_url, "--api-base", server.base_url, *fast_crawl_settings(),
            "-s", "PROGRESS_ENABLED=False", "-s", "CLOSESPIDER_PAGECOUNT=8", "-s", "CONCURRENT_REQUESTS=1",
            timeout=300,
        )  # fmt: skip
    assert first.returncode == 5, first.stderr[-3000:]
    with ReplicaServer(site, port=port) as server:
        resumed = run(server, tmp_path, "-s", "HTTPCACHE_ENABLED=False")
    assert resumed.returncode == 4, resumed.stderr[-3000:]
    stats = report(tmp_path)["crawl"]["stats"]
    assert stats["crawl/resumed_parts"] == 1
    fallback = next(c for c in report(tmp_path)["gate"]["checks"] if c["name"] == "fallback_rate")
    assert not fallback["passed"]
    assert stats["underline/extraction/visible_text"] >= 3
    assert stats["underline/extraction/visible_text"] + stats["underline/extraction/next_data"] == len(
        main_event_ids(site)
    )


def test_a_release_the_hub_refused_is_pushed_by_the_next_run(
    site: ReplicaSite,
    tmp_path: Path,
    hub: tuple[StandIn, str],  # noqa: F811 (the fixture)
) -> None:
    stand_in, endpoint = hub
    env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_TOKEN": HUB_TOKEN}
    env.update(HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_TELEMETRY="1")
    stand_in.fault("POST", "/commit/", status=403, body={"error": "not now"})

    def nightly(server: ReplicaServer) -> subprocess.CompletedProcess[str]:
        command = command_line(server, tmp_path, "--push-to-hub", "acl-archive/emnlp")
        return run_command(command, timeout=300, env=env)

    with ReplicaServer(site) as server:
        refused = nightly(server)
        assert refused.returncode == 7, refused.stderr[-3000:]
        local = report(tmp_path)["hub"]["local_version"]
        assert report(tmp_path)["hub"]["hub_version"] is None
        assert "the next run pushes it" in refused.stderr
        assert stand_in.files_at("acl-archive/emnlp", "main") in (None, {})
        # Nothing changed on the site: the run still owes the Hub a release, and pays it.
        retried = nightly(server)
        assert retried.returncode == 0, retried.stderr[-3000:]
        assert f"pushed release {local}, which an earlier run could not push" in retried.stdout
        assert report(tmp_path)["hub"]["hub_version"] == local
        on_hub = stand_in.files_at("acl-archive/emnlp", "main") or {}
        assert json.loads(on_hub["manifest.json"])["version"] == local
        settled = nightly(server)
    assert settled.returncode == 3, settled.stderr[-3000:]
    assert report(tmp_path)["hub"] == {
        "repo": "acl-archive/emnlp@main",
        "local_version": local,
        "hub_version": local,
    }


def test_a_removal_in_the_configuration_is_gone_from_the_next_release_and_its_changes(
    site: ReplicaSite, first_run: FirstRun, tmp_path: Path
) -> None:
    port = after_first_run(first_run, tmp_path)
    with ReplicaServer(site, port=port) as server:
        first = published(tmp_path)
        lecture_id = main_event_ids(site)[0]
        victim_of = next(r for r in first.values() if r["authors"] and r["lecture_id"] != lecture_id)
        author = victim_of["authors"][0]["name"]
        config = tmp_path / "eventcrawl.toml"
        config.write_text(
            f'[publish]\nremove_lectures = ["{lecture_id}"]\nredact_authors = ["{author}"]\n',
            encoding="utf-8",
        )
        second = run(server, tmp_path, "--config", str(config))
        assert second.returncode == 0, second.stderr[-3000:]
        third = run(server, tmp_path, "--config", str(config))
    assert third.returncode == 3, third.stderr[-3000:]
    rows = published(tmp_path)
    assert lecture_id not in rows
    assert all(author not in {a["name"] for a in r["authors"]} for r in rows.values())
    assert len(rows) == len(first) - 1
    # Nowhere in the release: not in a Parquet file, not in the changes, not in the card.
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert author.encode() not in path.read_bytes(), path
            if path.suffix == ".parquet" and "changes" in path.parts:
                # A change file may say that the lecture was removed; never what it held.
                about = [c for c in pq.read_table(path).to_pylist() if c["lecture_id"] == lecture_id]
                assert all((c["change"], c["lecture"]) == ("removed", None) for c in about), about


@pytest.mark.parametrize(
    "damaged",
    [
        "state/published-index.json",
        "out/manifest.json",
        "out/data/lectures/event-502/train-00000-of-00001.parquet",
    ],
)
def test_a_damaged_state_or_release_file_is_named_with_a_way_out(
    site: ReplicaSite, first_run: FirstRun, tmp_path: Path, damaged: str
) -> None:
    port = after_first_run(first_run, tmp_path)
    with ReplicaServer(site, port=port) as server:
        path = tmp_path / damaged
        assert path.is_file()
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        before = release_bytes(tmp_path)
        broken = run(server, tmp_path)
    assert broken.returncode == 8, broken.stderr[-3000:]
    assert "Traceback" not in broken.stderr
    (line,) = [x for x in broken.stderr.splitlines() if x.startswith("eventcrawl:")]
    assert line.startswith(f"eventcrawl: {path} is damaged (")
    assert "move it aside" in line
    assert release_bytes(tmp_path) == before


def test_a_damaged_crawl_report_stops_publish_with_a_way_out(first_run: FirstRun, tmp_path: Path) -> None:
    after_first_run(first_run, tmp_path)
    report_path = tmp_path / "state" / "crawl-report.json"
    report_path.write_text('{"stats": {', encoding="utf-8")
    result = eventcrawl(
        "publish", "--state", str(tmp_path / "state"), "--out", str(tmp_path / "again"), timeout=120
    )
    assert result.returncode == 8, result.stderr[-3000:]
    assert f"{report_path} is damaged (not valid JSON" in result.stderr
    assert "crawl again" in result.stderr


def test_a_renamed_attribute_is_refused_and_named_and_the_release_stays(
    site: ReplicaSite, first_run: FirstRun, tmp_path: Path
) -> None:
    port = after_first_run(first_run, tmp_path)
    before = release_bytes(tmp_path)
    first = published(tmp_path).values()
    with_keywords = round(sum(1 for r in first if r["keywords"]) / len(first), 4)
    renamed = SiteFaults(renamed_attributes={"keywords": "topics"})
    with ReplicaServer(site, port=port, site_faults=renamed) as server:
        night = run(server, tmp_path)
    assert night.returncode == 4, night.stderr[-3000:]
    assert release_bytes(tmp_path) == before
    gate = report(tmp_path)["gate"]
    (failure,) = [c for c in gate["checks"] if not c["passed"]]
    assert (failure["name"], failure["event"], failure["field"]) == (
        "coverage:keywords",
        MAIN_EVENT,
        "keywords",
    )
    assert (failure["previous"], failure["value"]) == (with_keywords, 0.0)
    unmapped = report(tmp_path)["unmapped_attributes"]
    assert unmapped["topics"]["lectures"] == len(main_event_ids(site))
    assert f"`keywords` coverage in event 502: 0.0% against {with_keywords:.0%}" in night.stderr
