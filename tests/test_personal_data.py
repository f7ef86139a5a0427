"""No e-mail address anywhere on disk after a crawl and a publish: not in the export, the stage, the
reports, the logs' files or the HTTP cache; and every author is published in order.

The replica gives every author profile an e-mail address, as the real API is reported to. The crawls run
with the default WORKER_PROCESSES: what goes to disk is stripped in the worker processes, as in a user's
crawl.
"""

from __future__ import annotations

import gzip
import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from crawler import stats_keys as keys
from tests.support.replica import crawl_args, eventcrawl, loopback_crawl_args, running_replica

EMAIL = re.compile(rb"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")


def readable_bytes(path: Path) -> bytes:
    """The file's bytes, and for compressed formats what they hold once opened."""
    raw = path.read_bytes()
    if path.suffix == ".parquet":
        rows = pq.read_table(path).to_pylist()
        return raw + json.dumps(rows, default=str, ensure_ascii=False).encode("utf-8")
    if raw[:2] == b"\x1f\x8b":
        return raw + gzip.decompress(raw)
    return raw


def test_no_email_address_reaches_any_file_and_authors_are_published_in_order(tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "out"
    with running_replica(tmp_path / "replica", "--lectures", "80") as replica:
        command = [
            "run", "--web-base", replica.base_url, "--api-base", replica.base_url,
            "--state", str(state), "--out", str(out), *loopback_crawl_args(),
        ]  # fmt: skip
        first = eventcrawl(*command)
        assert first.returncode == 0, first.stderr[-3000:]
        first_stats = crawl_stats(state)
        # A second night revalidates through the cache: what it stores must be clean too.
        second = eventcrawl(*command)
        assert second.returncode == 3, second.stderr[-3000:]
        truth = {r["lecture_id"]: r for r in replica.full_ground_truth()}
        served_emails = sum(1 for r in replica.requests() if r.get("kind") == "listing")
    assert served_emails > 0
    # The pages were read and the answers stripped for the cache by a worker process.
    assert first_stats[keys.WORKERS_PROCESSES] == 1
    assert first_stats[keys.WORKERS_JOBS] >= len(truth)
    assert any((state / "httpcache").rglob("*")), "the crawl cached nothing: the check would prove nothing"
    leaks = {}
    for path in [*state.rglob("*"), *out.rglob("*")]:
        if path.is_file():
            found = EMAIL.findall(readable_bytes(path))
            if found:
                leaks[str(path.relative_to(tmp_path))] = found[:3]
    assert leaks == {}
    assert EMAIL.search(first.stdout.encode() + first.stderr.encode()) is None
    rows = {r["lecture_id"]: r for r in pq.read_table(out / "data" / "lectures").to_pylist()}
    assert sorted(rows) == sorted(truth)
    wrong = [i for i, row in rows.items() if row["authors"] != truth[i]["authors"]]
    assert wrong == []
    assert sum(1 for r in rows.values() for a in r["authors"] if a["orcid"]) > 0


def crawl_stats(state: Path) -> dict[str, Any]:
    """The statistics of the last crawl in ``state``."""
    return dict(json.loads((state / "crawl-report.json").read_text(encoding="utf-8"))["stats"])


PLANTED = "chair.person@planted-example.org"


def test_an_address_in_sessions_and_events_reaches_no_file_of_a_crawl_and_a_publish(tmp_path: Path) -> None:
    """Organizers write addresses into session names and descriptions and into the event's welcome
    text: the crawl stages sessions and the release has a sessions table, and neither may hold one."""
    state, out = tmp_path / "state", tmp_path / "out"
    with running_replica(tmp_path / "replica", "--lectures", "30", "--plant-email", PLANTED) as replica:
        listing = urllib.request.urlopen(
            f"{replica.base_url}/api/v1/thin_lectures?filter[event_id]=502&include=event_session,event"
        ).read()
        crawled = eventcrawl(*crawl_args(replica.base_url, state, *loopback_crawl_args()))
        assert crawled.returncode == 0, crawled.stderr[-3000:]
    assert crawl_stats(state)[keys.WORKERS_JOBS] > 0
    # The replica did serve it, in the sessions the listing includes.
    assert PLANTED.encode() in listing
    published = eventcrawl("publish", "--state", str(state), "--out", str(out))
    assert published.returncode == 0, published.stderr[-3000:]
    leaks = {}
    for path in [*state.rglob("*"), *out.rglob("*")]:
        if path.is_file():
            data = readable_bytes(path)
            if PLANTED.encode() in data or EMAIL.search(data):
                leaks[str(path.relative_to(tmp_path))] = EMAIL.findall(data)[:3]
    assert leaks == {}
    sessions = pq.read_table(out / "data" / "sessions").to_pylist()
    assert sessions and all(s["session_name"].endswith("(chair: [email removed])") for s in sessions)
    assert all(s["description"].endswith("Questions: [email removed].") for s in sessions)
    lectures = pq.read_table(out / "data" / "lectures").to_pylist()
    assert all(r["session_name"].endswith("(chair: [email removed])") for r in lectures)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "look like an e-mail address in this release:\n0." in card
