"""Worker processes: the same crawl output with and without them, and a dead worker loses nothing."""

from __future__ import annotations

import asyncio
import io
import json
import pickle
import struct
from pathlib import Path
from typing import Any

import pytest

from crawler.dedup import near
from crawler.extensions.workers import WorkerProcesses, serve
from crawler.httpcache import decode_entry
from crawler.stage import read_stage
from tests.support.replica import crawl_args, eventcrawl, fast_crawl_settings, running_replica
from tests.support.settings import project_crawler

FRAME = struct.Struct("!I")


def frames(*jobs: tuple[Any, ...]) -> io.BytesIO:
    out = io.BytesIO()
    for job in jobs:
        data = pickle.dumps(job)
        out.write(FRAME.pack(len(data)) + data)
    out.seek(0)
    return out


def answers(stream: io.BytesIO) -> list[tuple[Any, ...]]:
    stream.seek(0)
    out = []
    while header := stream.read(FRAME.size):
        (size,) = FRAME.unpack(header)
        out.append(pickle.loads(stream.read(size)))
    return out


def test_a_worker_answers_each_job_in_order_with_its_result_or_exception() -> None:
    requests = frames((1, pow, (2, 10), {}), (2, int, ("ten",), {}), (3, int, ("10",), {"base": 2}))
    out = io.BytesIO()
    serve(requests, out)
    (first, second, third) = answers(out)
    assert first == (1, True, 1024)
    assert second[:2] == (2, False)
    assert isinstance(second[2], ValueError)
    assert third == (3, True, 2)


def test_a_dead_worker_hands_its_jobs_to_the_crawl_process() -> None:
    crawler = project_crawler(settings_dict={"STAGE_STATE_DIR": ""})

    async def scenario() -> tuple[int, int, bool, int]:
        workers = WorkerProcesses(crawler, 1)
        workers.spawn()
        try:
            in_worker = await workers.run(pow, 3, 4)
            workers._workers[0].process.kill()
            workers._workers[0].process.wait()
            after = await workers.run(pow, 2, 5)
            return in_worker, after, workers.broken, workers.inline_jobs
        finally:
            workers.close()

    assert asyncio.run(scenario()) == (81, 32, True, 1)


def test_an_exception_in_a_worker_reaches_the_caller() -> None:
    crawler = project_crawler(settings_dict={"STAGE_STATE_DIR": ""})

    async def scenario() -> None:
        workers = WorkerProcesses(crawler, 1)
        workers.spawn()
        try:
            with pytest.raises(ValueError, match="ten"):
                await workers.run(int, "ten")
            assert not workers.broken
        finally:
            workers.close()

    asyncio.run(scenario())


def _crawl(base: str, state: Path, processes: int) -> dict[str, Any]:
    settings = [*fast_crawl_settings(), "-s", f"WORKER_PROCESSES={processes}"]
    result = eventcrawl(*crawl_args(base, state, "--event-id", "502", *settings))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((state / "crawl-report.json").read_text(encoding="utf-8"))


def _records(state: Path) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "fetched_at"} for r in read_stage(state).records]


def _cache(state: Path) -> dict[str, tuple[dict[str, Any], bytes]]:
    entries = {}
    for path in (state / "httpcache").rglob("*.entry"):
        header, body = decode_entry(path.read_bytes())
        # When it was fetched differs from one crawl to the other; everything else is the answer's.
        header.pop("timestamp")
        header["headers"] = [h for h in header["headers"] if h[0] != "Date"]
        entries[path.name] = (header, body)
    return entries


def test_a_crawl_with_workers_stages_and_caches_what_a_crawl_without_them_does(tmp_path: Path) -> None:
    with running_replica(tmp_path / "replica", "--lectures", "120") as replica:
        with_workers = _crawl(replica.base_url, tmp_path / "with", 1)
        without = _crawl(replica.base_url, tmp_path / "without", 0)
        truth = replica.ground_truth()
    assert with_workers["stats"]["workers/processes"] == 1
    # Every lecture page and every stored response went through the worker.
    pages = with_workers["stats"]["response_received_count"]
    assert with_workers["stats"]["workers/jobs"] > pages
    assert "workers/inline_jobs" not in with_workers["stats"]
    assert "workers/processes" not in without["stats"]
    records = _records(tmp_path / "with")
    assert len(records) == len(truth) > 100
    assert records == _records(tmp_path / "without")
    # The near-duplicate signatures, computed in the worker, are the ones computed here.
    signed = near.load_signatures(tmp_path / "with")
    assert len(signed) == with_workers["stats"]["dedupe/signatures"] > 100
    assert signed.keys() == near.load_signatures(tmp_path / "without").keys()
    assert all((v == near.load_signatures(tmp_path / "without")[k]).all() for k, v in signed.items())
    # (Which alias is dropped as known depends on the order the pages came back in: not compared.)
    signing = ("dedupe/signatures", "dedupe/unique", "dedupe/near_duplicate_groups_count")
    assert [with_workers["stats"].get(k) for k in signing] == [without["stats"].get(k) for k in signing]
    cache = _cache(tmp_path / "with")
    assert len(cache) == pages
    assert cache == _cache(tmp_path / "without")
