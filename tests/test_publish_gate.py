"""Every command that writes a release passes the same gate: `run` and `publish` (a fleet's publish too)
refuse a release that hides an outage behind a page budget, loses the previous release's Anthology links,
authors or page rows, or is published without its authors, and write nothing (exit status 4)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crawler import stats_keys as keys
from crawler.publish.removals import Redactions
from crawler.replica.faults import SiteFaults
from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.replica.server import ReplicaServer
from crawler.schedule.config import load_config
from crawler.schedule.judge import row_as_asked, staged_statistics
from crawler.schema import Lecture
from tests.support.commands import eventcrawl, run_command
from tests.support.replica import QUICK_GIVE_UP, crawl_args, fast_crawl_settings, run_args, run_report

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "anthology"
MAIN = "502"
# A collection file of the Anthology that holds none of the replica's papers.
OTHER_COLLECTION = """<?xml version='1.0' encoding='UTF-8'?>
<collection id="2099.other">
  <volume id="main" type="proceedings">
    <meta><booktitle>Proceedings of Another Workshop</booktitle><year>2099</year></meta>
    <paper id="1">
      <title>Counting Sheep with Recurrent Shepherds</title>
      <author><first>Nobody</first><last>Atall</last></author>
    </paper>
  </volume>
</collection>
"""


def release_files(out: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} if out.exists() else {}


def rows(out: Path) -> list[dict[str, Any]]:
    return pq.read_table(out / "data" / "lectures").to_pylist()


def failed_names(stderr: str) -> list[str]:
    """The names of the failed checks `publish` printed, one line each (``authors_missing:502``)."""
    prefix = "eventcrawl: FAIL "
    return [line[len(prefix) :].partition(": ")[0] for line in stderr.splitlines() if line.startswith(prefix)]


def publish(state: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return eventcrawl("publish", "--state", str(state), "--out", str(out), "--name", "emnlp-test", *extra)


def crawl(server: ReplicaServer, state: Path, *extra: str) -> None:
    done = eventcrawl(*crawl_args(server.base_url, state, *fast_crawl_settings(), *extra))
    assert done.returncode == 0, done.stderr[-3000:]


# -- failures judged against what was asked ----------------------------------------------------------


def test_a_page_budget_does_not_hide_every_page_failing(tmp_path: Path) -> None:
    # 392 lectures listed, 6 pages asked, all 6 failing: 6 of 392 listed would pass, 6 of 6 asked may not.
    site = build_site(load_records(), seed=5, lectures=400)
    listed = sum(1 for lec in site.lectures.values() if lec.event_id == MAIN)
    faults = SiteFaults(failing_lectures=frozenset(site.lectures))
    with ReplicaServer(site, site_faults=faults) as server:
        # Every page asked fails, each after its one retry: the host is not deferred, so that each gives up.
        no_bound = ("-s", "BACKOFF_HOST_MAX_FAILURES=0")
        command = run_args(
            server.base_url, tmp_path, "emnlp-test", "--page-budget", "6", *QUICK_GIVE_UP, *no_bound
        )
        refused = run_command(command, timeout=300)
    assert refused.returncode == 4, refused.stderr[-3000:]
    assert not (tmp_path / "out").exists()
    report = run_report(tmp_path)
    stats = report["crawl"]["stats"]
    assert (stats[keys.LISTED], stats[keys.PAGES_FETCHED], stats[keys.FETCH_FAILED]) == (listed, 6, 6)
    checks = {c["name"]: c for c in report["gate"]["checks"]}
    assert (checks["error_rate"]["passed"], checks["error_rate"]["value"]) == (False, 1.0)
    assert "6 failed pages of 6 asked" in checks["error_rate"]["message"]
    # The requests that gave up, of the requests sent (robots.txt, the listing, the pages and their
    # retries), not of the lectures listed.
    sent = stats[keys.REQUESTS_SENT]
    gave_up = stats.get(keys.BACKOFF_GAVE_UP, 0) + stats.get(keys.RETRY_GAVE_UP, 0)
    assert gave_up == 6 and sent < listed
    retries = checks["retry_exhausted_rate"]
    assert (retries["passed"], retries["value"]) == (False, round(gave_up / sent, 4))
    # `publish` of the same stage reads the crawl's counters from the state directory: refused too.
    again = publish(tmp_path / "state", tmp_path / "out")
    assert again.returncode == 4, again.stderr[-3000:]
    assert {"error_rate", "retry_exhausted_rate"} <= set(failed_names(again.stderr))
    assert not (tmp_path / "out").exists()


def test_the_crawl_statistics_of_a_fleet_are_its_workers_added_up(tmp_path: Path) -> None:
    stage = tmp_path / "state" / "stage"
    stage.mkdir(parents=True)
    (stage / "stats-a.json").write_text(json.dumps({keys.PAGES_FETCHED: 4, keys.FETCH_FAILED: 1}), "utf-8")
    (stage / "stats-b.json").write_text(json.dumps({keys.PAGES_FETCHED: 6, keys.LISTED: 300}), "utf-8")
    # The last worker's crawl report holds only its own counters: the stage's files win.
    report = {"stats": {keys.PAGES_FETCHED: 6, keys.LISTED: 300}}
    (tmp_path / "state" / "crawl-report.json").write_text(json.dumps(report), "utf-8")
    assert staged_statistics(tmp_path / "state") == {
        keys.PAGES_FETCHED: 10,
        keys.FETCH_FAILED: 1,
        keys.LISTED: 300,
    }


# -- one gate for `publish`: links, authors and page rows kept ----------------------------------------


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records(), seed=5, lectures=120)


@pytest.fixture(scope="module")
def crawled(site: ReplicaSite, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The state directory of a finished crawl of ``site``'s main event, made once for the module; a test
    publishes from a copy of it (a publish writes to the state directory)."""
    state = tmp_path_factory.mktemp("crawled") / "state"
    with ReplicaServer(site) as server:
        crawl(server, state, "--event-id", MAIN)
    return state


def copy_of(crawled: Path, state: Path) -> Path:
    shutil.copytree(crawled, state, symlinks=True)
    return state


def test_publish_refuses_anthology_files_that_drop_every_link(crawled: Path, tmp_path: Path) -> None:
    state, out = copy_of(crawled, tmp_path / "state"), tmp_path / "out"
    linked = publish(state, out, "--anthology", str(FIXTURES))
    assert linked.returncode == 0, linked.stderr[-3000:]
    links = sum(1 for r in rows(out) if r["anthology_id"])
    assert links >= 20
    other = tmp_path / "other"
    other.mkdir()
    (other / "2099.other.xml").write_text(OTHER_COLLECTION, encoding="utf-8")
    before = release_files(out)
    refused = publish(state, out, "--anthology", str(other))
    assert refused.returncode == 4, refused.stderr[-3000:]
    assert "lost:anthology_links" in failed_names(refused.stderr)
    assert f"{links} of the previous release's {links} Anthology links lost: 100.0%" in refused.stderr
    assert "--force publishes anyway" in refused.stderr
    assert release_files(out) == before
    refusal = json.loads((state / "stage" / "REFUSED").read_text(encoding="utf-8"))
    assert refusal["command"] == "publish" and "lost:anthology_links" in refusal["failed_checks"]
    # The coverage check allowed a larger fall: the links check alone refuses.
    config = tmp_path / "eventcrawl.toml"
    config.write_text("[gate]\nmax_coverage_drop = 1.0\n", encoding="utf-8")
    alone = publish(state, out, "--anthology", str(other), "--config", str(config))
    assert alone.returncode == 4, alone.stderr[-3000:]
    assert failed_names(alone.stderr) == ["lost:anthology_links"]
    assert release_files(out) == before
    forced = publish(state, out, "--anthology", str(other), "--force")
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert "published anyway (--force)" in forced.stderr
    assert sum(1 for r in rows(out) if r["anthology_id"]) == 0
    # Published, the stage is accepted again.
    assert not (state / "stage" / "REFUSED").exists()


def test_publish_refuses_a_stage_that_lost_the_pages_and_authors_of_the_release(
    site: ReplicaSite, crawled: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first = publish(copy_of(crawled, tmp_path / "full"), out)
    assert first.returncode == 0, first.stderr[-3000:]
    before = release_files(out)
    live = len(rows(out))
    # Another state directory (a fleet's, say) whose crawl fetched one page and left the rest to their
    # listing: no row goes back from its page to its listing (the release keeps what the pages gave), so
    # nothing is lost and nothing refused.
    extraction = {r["lecture_id"]: r["extraction"] for r in rows(out)}
    with ReplicaServer(site) as server:
        crawl(server, tmp_path / "budget", "--event-id", MAIN, "--page-budget", "1")
    listing = publish(tmp_path / "budget", out)
    assert listing.returncode == 0, listing.stderr[-3000:]
    assert {r["lecture_id"]: r["extraction"] for r in rows(out)} == extraction
    assert len(rows(out)) == live
    before = release_files(out)
    # Another whose listing left out the authors' profiles of a third of the lectures.
    dropped = sorted(site.lectures, key=int)[::3]
    with ReplicaServer(site, site_faults=SiteFaults(dropped_profiles=frozenset(dropped))) as server:
        crawl(server, tmp_path / "profiles", "--event-id", MAIN)
    authorless = publish(tmp_path / "profiles", out)
    assert authorless.returncode == 4, authorless.stderr[-3000:]
    assert "lost:authors" in failed_names(authorless.stderr)
    assert release_files(out) == before


# -- a first release without its authors --------------------------------------------------------------


def test_a_first_release_without_the_authors_profiles_is_refused(site: ReplicaSite, tmp_path: Path) -> None:
    main = sorted((i for i, lec in site.lectures.items() if lec.event_id == MAIN), key=int)
    dropped = frozenset(main[::10])
    with ReplicaServer(site, site_faults=SiteFaults(dropped_profiles=dropped)) as server:
        refused = run_command(run_args(server.base_url, tmp_path, "emnlp-test"), timeout=300)
    assert refused.returncode == 4, refused.stderr[-3000:]
    assert not (tmp_path / "out").exists()
    report = run_report(tmp_path)
    assert report["crawl"]["stats"][keys.AUTHORS_INCOMPLETE_PREFIX + MAIN] == len(dropped)
    (failure,) = [c for c in report["gate"]["checks"] if not c["passed"]]
    assert (failure["name"], failure["event"], failure["value"]) == (
        f"authors_missing:{MAIN}",
        MAIN,
        round(len(dropped) / len(main), 4),
    )
    assert failure["examples"] == sorted(dropped, key=int)[:5]
    # The stage is marked refused with the gate's report, by the command that refused it.
    refusal = json.loads((tmp_path / "state" / "stage" / "REFUSED").read_text(encoding="utf-8"))
    assert (refusal["command"], refusal["failed_checks"]) == ("run", [f"authors_missing:{MAIN}"])
    assert refusal["gate"] == report["gate"]
    # `publish` of the same stage judges it alike.
    again = publish(tmp_path / "state", tmp_path / "out")
    assert again.returncode == 4, again.stderr[-3000:]
    assert failed_names(again.stderr) == [f"authors_missing:{MAIN}"]
    assert not (tmp_path / "out").exists()


def test_the_new_thresholds_are_read_from_the_gate_table(tmp_path: Path) -> None:
    config = tmp_path / "eventcrawl.toml"
    config.write_text("[gate]\nmax_lost_share = 0.25\nmax_authors_missing = 0.5\n", encoding="utf-8")
    gate = load_config(config).gate
    assert (gate.max_lost_share, gate.max_authors_missing) == (0.25, 0.5)


def test_authors_redacted_on_request_are_no_loss_of_the_previous_release() -> None:
    ada = {"name": "Ada Lovelace", "affiliations": [], "orcid": "0000-0002-1825-0097"}
    alan = {"name": "Alan Turing", "affiliations": [], "orcid": None}
    for authors, redacted, kept in [
        ([ada], ["Ada Lovelace"], False),
        ([ada], ["0000-0002-1825-0097"], False),
        ([ada, alan], ["Ada Lovelace"], True),
        ([ada], [], True),
        ([], ["Ada Lovelace"], False),
    ]:
        lecture = Lecture.from_json({"lecture_id": "1", "event_id": MAIN, "authors": authors})
        row = row_as_asked(lecture, Redactions.parse(redacted))
        assert row.has("authors") is kept, f"case {authors} {redacted}"
