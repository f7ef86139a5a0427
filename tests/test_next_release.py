"""Every command that writes a release builds it from the previous one the same way: removals asked
for once stay applied, withdrawn lectures and events the crawl did not cover are carried, an event is
only taken out when retired, and an event id that lists nothing is named and refused."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crawler.publish.removals import name_digest
from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.replica.server import ReplicaServer
from tests.support import commands
from tests.support.replica import fast_crawl_settings, run_report
from tests.support.sites import without_lectures

MAIN, SIDE = "502", "469"


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records(), seed=5, lectures=24)


def eventcrawl(*args: str) -> subprocess.CompletedProcess[str]:
    return commands.eventcrawl(*args, timeout=300)


def run(server: ReplicaServer, work: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return eventcrawl(
        "run", "--web-base", server.base_url, "--api-base", server.base_url,
        "--state", str(work / "state"), "--out", str(work / "out"), "--name", "emnlp-test",
        *fast_crawl_settings(), "-s", "PROGRESS_ENABLED=False", *extra,
    )  # fmt: skip


def publish(work: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return eventcrawl("publish", "--state", str(work / "state"), "--out", str(work / "out"), *extra)


def rows(work: Path) -> dict[str, dict[str, Any]]:
    return {r["lecture_id"]: r for r in pq.read_table(work / "out" / "data" / "lectures").to_pylist()}


report = run_report


def ids_of(site: ReplicaSite, event: str) -> list[str]:
    return sorted((i for i, lec in site.lectures.items() if lec.event_id == event), key=int)


def test_a_plain_publish_keeps_the_removals_and_the_withdrawn_rows_a_run_published(
    site: ReplicaSite, tmp_path: Path
) -> None:
    removed, gone = ids_of(site, MAIN)[0], ids_of(site, MAIN)[1]
    config = tmp_path / "eventcrawl.toml"
    with ReplicaServer(site) as server:
        first = run(server, tmp_path)
        assert first.returncode == 0, first.stderr[-3000:]
        port = int(server.base_url.rsplit(":", 1)[1])
    author = next(
        r["authors"][0]["name"] for i, r in sorted(rows(tmp_path).items()) if r["authors"] and i != removed
    )
    config.write_text(
        f'[publish]\nremove_lectures = ["{removed}"]\nredact_authors = ["{author}"]\n', encoding="utf-8"
    )
    with ReplicaServer(without_lectures(site, [gone]), port=port) as server:
        second = run(server, tmp_path, "--config", str(config))
    assert second.returncode == 0, second.stderr[-3000:]
    by_run = rows(tmp_path)
    assert by_run[gone]["withdrawn"] is True and removed not in by_run
    # The removals are kept in the state, once applied.
    ledger = json.loads((tmp_path / "state" / "removals.json").read_text(encoding="utf-8"))
    assert ledger == {"lectures": [removed], "authors": [author]}

    # The fleet's path: `publish` without the configuration, onto the release `run` made.
    again = publish(tmp_path, "--name", "emnlp-test")
    assert again.returncode == 0, again.stderr[-3000:]
    by_publish = rows(tmp_path)
    assert removed not in by_publish
    assert by_publish[gone]["withdrawn"] is True
    assert all(author not in {a["name"] for a in r["authors"]} for r in by_publish.values())
    strip = ("fetched_at",)
    assert {i: {k: v for k, v in r.items() if k not in strip} for i, r in by_publish.items()} == {
        i: {k: v for k, v in r.items() if k not in strip} for i, r in by_run.items()
    }
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert author.encode() not in path.read_bytes(), path
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    latest = pq.read_table(tmp_path / "out" / manifest["change_files"][-1]).to_pylist()
    # Nothing changed between the run's release and the plain publish's: no row dropped or withdrawn.
    assert latest == []

    # `publish --config` reads the output folder and the name from the configuration.
    state, out = tmp_path / "state", tmp_path / "out"
    config.write_text(
        f'[crawl]\nstate = "{state}"\n[publish]\nout = "{out}"\nname = "emnlp-test"\n', encoding="utf-8"
    )
    configured = eventcrawl("publish", "--config", str(config))
    assert configured.returncode == 0, configured.stderr[-3000:]
    assert rows(tmp_path).keys() == by_run.keys()

    # Another state directory (a fleet's, or this one lost) publishing onto the release without the
    # configuration: the release's own ledger, in its manifest, keeps the removed lecture ids and a
    # digest of the redacted name, never who, and applies them.
    kept = json.loads((out / "removals.json").read_text(encoding="utf-8"))
    assert kept == {"format": 1, "lectures": [removed], "redactions": [name_digest(author.casefold())]}
    assert "removals.json" in json.loads((out / "manifest.json").read_text(encoding="utf-8"))["files"]
    state_ledger = (state / "removals.json").read_bytes()
    (state / "removals.json").unlink()
    elsewhere = publish(tmp_path, "--name", "emnlp-test")
    assert elsewhere.returncode == 0, elsewhere.stderr[-3000:]
    assert removed not in rows(tmp_path)
    assert all(author not in {a["name"] for a in r["authors"]} for r in rows(tmp_path).values())
    # Known nowhere (the state's ledger and the release's both gone): refused, nothing written.
    (state / "removals.json").unlink()
    (out / "removals.json").unlink()
    release_before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    refused = publish(tmp_path, "--name", "emnlp-test")
    assert refused.returncode == 8, refused.stderr[-3000:]
    assert f"{out / 'removals.json'} is damaged (the release's manifest lists it but it is missing" in (
        refused.stderr
    )
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == release_before
    (state / "removals.json").write_bytes(state_ledger)
    relisted = publish(tmp_path, "--name", "emnlp-test")
    assert relisted.returncode == 0, relisted.stderr[-3000:]
    assert removed not in rows(tmp_path)
    assert all(author not in {a["name"] for a in r["authors"]} for r in rows(tmp_path).values())

    # A manifest that reads as JSON but lost its history is named, and nothing is written.
    manifest_path = tmp_path / "out" / "manifest.json"
    before = manifest_path.read_bytes()
    manifest_path.write_text(json.dumps({**json.loads(before), "versions": []}), encoding="utf-8")
    damaged = publish(tmp_path)
    assert damaged.returncode == 8, damaged.stderr[-3000:]
    assert f"eventcrawl: {manifest_path} is damaged (`versions` does not hold the release's own version" in (
        damaged.stderr
    )
    assert "Traceback" not in damaged.stderr


def test_an_event_left_out_is_kept_until_it_is_retired(site: ReplicaSite, tmp_path: Path) -> None:
    side = ids_of(site, SIDE)
    assert side
    with ReplicaServer(site) as server:
        both = run(server, tmp_path, "--event-id", MAIN, "--event-id", SIDE)
        assert both.returncode == 0, both.stderr[-3000:]
        before = rows(tmp_path)
        only_main = run(server, tmp_path, "--event-id", MAIN)
        # Nothing changed on the site: the event not crawled is neither gone nor withdrawn.
        assert only_main.returncode == 3, only_main.stderr[-3000:]
        assert rows(tmp_path) == before
        notes = report(tmp_path)["events"]
        assert notes["not_crawled_kept"] == {SIDE: len(side)}
        assert f"event {SIDE} is in the release but was not crawled: its {len(side)} lectures are kept" in (
            only_main.stderr
        )
        assert report(tmp_path)["changes"]["gone"] == []
        retired = run(server, tmp_path, "--event-id", MAIN, "--retire-event", SIDE)
    assert retired.returncode == 0, retired.stderr[-3000:]
    after = rows(tmp_path)
    assert sorted(after, key=int) == ids_of(site, MAIN)
    assert report(tmp_path)["changes"]["retired_events"] == {SIDE: len(side)}
    assert report(tmp_path)["changes"]["gone"] == []
    assert f"event {SIDE} retired: its {len(side)} lectures leave the release" in retired.stdout
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    changes = pq.read_table(tmp_path / "out" / manifest["change_files"][-1]).to_pylist()
    assert sorted(c["lecture_id"] for c in changes) == side
    assert {c["change"] for c in changes} == {"removed"}


def test_an_event_that_lists_nothing_is_named_and_refused(site: ReplicaSite, tmp_path: Path) -> None:
    with ReplicaServer(site) as server:
        refused = run(server, tmp_path, "--event-id", MAIN, "--event-id", "999")
        assert refused.returncode == 4, refused.stderr[-3000:]
        assert "event 999 lists no lectures (the API answered HTTP 200)" in refused.stderr
        assert not (tmp_path / "out").exists()
        forced = run(server, tmp_path, "--event-id", MAIN, "--event-id", "999", "--force")
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert sorted(rows(tmp_path), key=int) == ids_of(site, MAIN)
