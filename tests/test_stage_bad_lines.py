"""A stage line that is JSON but not a record of the schema (a held_at that is a number, authors that are
a string, a required field missing, a bool that is "yes"), in a real crawl's stage: counted, named in the
log with its file and line, never published, and its lecture fetched again by the next crawl, whether
that crawl refreshes from the stage or resumes it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.replica.server import ReplicaServer
from tests.support import commands
from tests.support.replica import crawl_args, fast_crawl_settings
from tests.support.staged import read_stage

NAME = "emnlp-test"
# How each damaged line is wrong: every one still parses as JSON.
DAMAGE: dict[str, Callable[[dict[str, Any]], object]] = {
    "held_at a number": lambda r: r.update(held_at=20251120),
    "authors a string": lambda r: r.update(authors="Ada Lovelace"),
    "title missing": lambda r: r.pop("title"),
    "is_premium 'yes'": lambda r: r.update(is_premium="yes"),
}


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records(), seed=3, lectures=24)


def crawl(server: ReplicaServer, work: Path) -> subprocess.CompletedProcess[str]:
    return commands.eventcrawl(
        *crawl_args(server.base_url, work / "state"), *fast_crawl_settings(), "-s", "PROGRESS_ENABLED=False",
        timeout=300,
    )  # fmt: skip


def publish(work: Path) -> subprocess.CompletedProcess[str]:
    # A bad line is a lecture lost, which the gate counts (lost_rate) and refuses past 2%: forced, to see
    # what the release takes of the stage.
    return commands.eventcrawl(
        "publish", "--state", str(work / "state"), "--out", str(work / "out"), "--name", NAME, "--force",
        timeout=300,
    )  # fmt: skip


def rows(work: Path) -> dict[str, dict[str, Any]]:
    return {r["lecture_id"]: r for r in pq.read_table(work / "out" / "data" / "lectures").to_pylist()}


def page_requests(server: ReplicaServer) -> list[str]:
    """The lecture ids whose pages the site was asked for, sorted."""
    paths = [r.path for r in server.requests if r.kind == "lecture_page"]
    return sorted((p.split("/")[2].split("-")[0] for p in paths), key=int)


def damage(stage: Path) -> dict[str, tuple[str, int, dict[str, Any]]]:
    """One lecture line per way of being wrong, rewritten in place: case -> (lecture id, line number,
    the record as the crawl staged it)."""
    lines = stage.read_text(encoding="utf-8").splitlines(keepends=True)
    numbers = [n for n, line in enumerate(lines) if json.loads(line).get("kind") == "lecture"]
    damaged = {}
    for case, number in zip(DAMAGE, numbers[1::3], strict=False):
        payload = json.loads(lines[number])
        original = json.loads(json.dumps(payload["lecture"]))
        DAMAGE[case](payload["lecture"])
        lines[number] = json.dumps(payload) + "\n"
        damaged[case] = (original["lecture_id"], number + 1, original)
    stage.write_text("".join(lines), encoding="utf-8")
    assert len(damaged) == len(DAMAGE)
    return damaged


def test_a_bad_typed_line_is_counted_not_published_and_fetched_by_the_next_crawl(
    site: ReplicaSite, tmp_path: Path
) -> None:
    with ReplicaServer(site) as server:
        first = crawl(server, tmp_path)
        port = int(server.base_url.rsplit(":", 1)[1])
    assert first.returncode == 0, first.stderr[-3000:]
    stage = tmp_path / "state" / "stage" / "main.jsonl"
    staged = {r.lecture_id for r in read_stage(tmp_path / "state").records}
    damaged = damage(stage)
    published = publish(tmp_path)
    assert published.returncode == 0, published.stderr[-3000:]
    first_rows = rows(tmp_path)
    for case, (lecture_id, line, _) in damaged.items():
        assert lecture_id not in first_rows, f"case {case}"
        assert f"Stage line {stage}:{line} is bad (" in published.stderr, f"case {case}"
    assert set(first_rows) == staged - {i for i, _, _ in damaged.values()}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["provenance"]["bad_lines"] == len(DAMAGE)

    # The next night refreshes from that stage: the damaged lectures are fetched again, and only they.
    with ReplicaServer(site, port=port) as server:
        second = crawl(server, tmp_path)
        fetched = page_requests(server)
    assert second.returncode == 0, second.stderr[-3000:]
    assert fetched == sorted((i for i, _, _ in damaged.values()), key=int)
    again = publish(tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert set(rows(tmp_path)) == staged
    for case, (lecture_id, _, original) in damaged.items():
        row = rows(tmp_path)[lecture_id]
        assert (row["title"], row["is_premium"], row["authors"]) == (
            original["title"],
            original["is_premium"],
            original["authors"],
        ), f"case {case}"


def test_a_resumed_crawl_fetches_again_what_its_stage_cannot_read_back(
    site: ReplicaSite, tmp_path: Path
) -> None:
    with ReplicaServer(site) as server:
        first = crawl(server, tmp_path)
        port = int(server.base_url.rsplit(":", 1)[1])
    assert first.returncode == 0, first.stderr[-3000:]
    # The crawl did not get to mark its stage finished: the next one resumes it.
    (tmp_path / "state" / "stage" / "COMPLETE").unlink()
    staged = {r.lecture_id for r in read_stage(tmp_path / "state").records}
    damaged = damage(tmp_path / "state" / "stage" / "main.jsonl")
    with ReplicaServer(site, port=port) as server:
        resumed = crawl(server, tmp_path)
        fetched = page_requests(server)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert fetched == sorted((i for i, _, _ in damaged.values()), key=int)
    after = read_stage(tmp_path / "state")
    assert ({r.lecture_id for r in after.records}, after.bad_lines) == (staged, len(DAMAGE))
    done = publish(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(rows(tmp_path)) == staged
