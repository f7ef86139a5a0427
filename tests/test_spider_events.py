"""One crawl of two events: every lecture of both exactly once, a config per event, sessions described."""

from __future__ import annotations

import json
from typing import Any

import datasets
import pyarrow.parquet as pq
import pytest

from crawler.replica.layout import build_site, ground_truth, load_records, sessions_truth
from crawler.replica.server import ReplicaServer
from tests.support.replica import eventcrawl, fast_crawl_settings

EVENTS = ("502", "469")


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("events")
    site = build_site(load_records(), seed=7, lectures=240, side_event_every=4)
    with ReplicaServer(site) as server:
        base = server.base_url
        crawl = eventcrawl(
            "crawl", "--event-id", "502", "--event-id", "https://underline.io/events/469/sessions",
            "--web-base", base, "--api-base", base, "--state", str(work / "state"), *fast_crawl_settings(),
        )  # fmt: skip
        truth = ground_truth(site, base, event_ids=list(EVENTS))
        sessions = sessions_truth(site, list(EVENTS))
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    out = work / "out"
    publish = eventcrawl("publish", "--state", str(work / "state"), "--out", str(out), "--name", "emnlp")
    assert publish.returncode == 0, publish.stderr[-3000:]
    return {"out": out, "truth": truth, "sessions": sessions, "crawl": crawl}


def test_every_lecture_of_both_events_is_published_once_with_its_event(published: dict[str, Any]) -> None:
    rows = pq.read_table(published["out"] / "data" / "lectures").to_pylist()
    ids = [r["lecture_id"] for r in rows]
    assert len(ids) == len(set(ids))
    truth = {t["lecture_id"]: t for t in published["truth"]}
    assert sorted(ids, key=int) == sorted(truth, key=int)
    assert {t["event_id"] for t in truth.values()} == set(EVENTS)
    wrong = [r["lecture_id"] for r in rows if (r["event_id"], r["event_name"]) != (
        truth[r["lecture_id"]]["event_id"], truth[r["lecture_id"]]["event_name"])]  # fmt: skip
    assert wrong == []
    assert "0 revalidated" in published["crawl"].stdout


def test_each_event_has_a_config_holding_exactly_its_lectures(published: dict[str, Any]) -> None:
    out = published["out"]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    by_event: dict[str, set[str]] = {}
    for t in published["truth"]:
        by_event.setdefault(t["event_id"], set()).add(t["lecture_id"])
    configs = {c["event_id"]: name for name, c in manifest["configs"].items() if c.get("event_id")}
    assert set(configs) == set(EVENTS)
    for event, name in configs.items():
        rows = datasets.load_dataset(str(out), name)["train"]
        assert set(rows["lecture_id"]) == by_event[event], f"{event=}, {name=}"
        assert set(rows["event_id"]) == {event}, f"{event=}, {name=}"
    everything = datasets.load_dataset(str(out))["train"]
    assert len(everything) == len(published["truth"])


def test_sessions_carry_what_the_listing_says_of_them(published: dict[str, Any]) -> None:
    rows = {r["session_id"]: r for r in pq.read_table(published["out"] / "data" / "sessions").to_pylist()}
    truth = {s["session_id"]: s for s in published["sessions"]}
    assert set(rows) <= set(truth)
    assert len(rows) >= 5
    assert any(row["description"] for row in rows.values())
    for session_id, row in rows.items():
        assert row["description"] == truth[session_id]["description"], f"{session_id=}, {row=}"
        assert row["starts_at"].isoformat().replace("+00:00", "Z") == truth[session_id]["start_at"], (
            f"{session_id=}, {row=}"
        )
