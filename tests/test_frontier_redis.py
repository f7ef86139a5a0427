"""Crawl workers on one Redis frontier: a real ``redis-server``, the replica over HTTP, subprocess workers."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import scrapy
from scrapy.exceptions import CloseSpider, DontCloseSpider

from crawler.frontier import default_worker_name, frontier_settings
from crawler.frontier.core import DONE, JOIN, SEED, Drain, Frontier
from crawler.frontier.extension import FrontierExtension, IdleClock
from crawler.schedule.lock import StateLock
from crawler.state.stage import StageError
from tests.support.commands import Started, start_command
from tests.support.redis_server import RunningRedis, redis_server_available, running_redis
from tests.support.replica import RunningReplica, eventcrawl, fast_crawl_settings, running_replica
from tests.support.settings import project_crawler
from tests.support.staged import read_stage

# CI installs Redis, so there a missing server is a failure, not a reason to skip.
pytestmark = pytest.mark.skipif(
    not redis_server_available() and not os.environ.get("CI"),
    reason="redis-server is not on PATH (apt-get install redis-server)",
)

REPO = Path(__file__).resolve().parents[1]
LECTURES = "40"
# Quick to notice a killed worker, quick to poll: the tests wait for both.
FAST_FLEET = [
    "-s", "FRONTIER_HEARTBEAT_TTL=2",
    "-s", "FRONTIER_POLL_INTERVAL=0.2",
]  # fmt: skip


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRedis]:
    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server


# ---------------------------------------------------------------------------------------------------------
# Workers as a user starts them


def start_worker(
    site: RunningReplica | str, frontier: str, state: Path, name: str, logs: Path, *settings: str
) -> Started | subprocess.Popen[str]:
    """``eventcrawl crawl --frontier`` of the replica *site* (or of the site at that base URL)."""
    base = site if isinstance(site, str) else site.base_url
    logs.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "crawler.app.cli", "crawl",
        "--web-base", base, "--api-base", base,
        "--state", str(state), "--frontier", frontier, "--worker", name,
        *settings,
    ]  # fmt: skip
    return start_command(cmd, cwd=REPO, stdout=logs / f"{name}.out", stderr=logs / f"{name}.err")


def wait_all(procs: Sequence[Started | subprocess.Popen[str]], timeout: float = 120) -> list[int]:
    deadline = time.monotonic() + timeout
    codes = []
    for proc in procs:
        try:
            codes.append(proc.wait(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            raise
    return codes


def run_fleet(
    replica: RunningReplica, frontier: str, state: Path, logs: Path, *settings: str, n: int = 3
) -> list[int]:
    procs = [start_worker(replica, frontier, state, f"w{i}", logs, *settings) for i in range(n)]
    return wait_all(procs)


def staged_lines(state: Path, worker: str) -> int:
    path = state / "stage" / f"{worker}.jsonl"
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if '"kind":"lecture"' in line)


def published_rows(state: Path, out: Path) -> list[dict[str, Any]]:
    result = eventcrawl("publish", "--state", str(state), "--out", str(out), "--name", "emnlp-2025")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = pq.read_table(out / "data" / "lectures").to_pylist()
    for row in rows:
        row.pop("fetched_at")
    return sorted(rows, key=lambda r: r["lecture_id"])


def lecture_paths(requests: list[dict[str, Any]]) -> list[str]:
    return [r["path"] for r in requests if r["path"].startswith("/lecture/")]


def logs_text(logs: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted(logs.glob("*.err")))


# ---------------------------------------------------------------------------------------------------------
# Fleet crawls


def test_three_workers_publish_the_single_process_dataset(tmp_path: Path, redis: RunningRedis) -> None:
    # A small delay keeps the crawl going while the three processes start, so that all of them take part.
    fleet_settings = [*fast_crawl_settings(), "-s", "DOWNLOAD_DELAY=0.05", *FAST_FLEET]
    with running_replica(tmp_path / "replica", "--lectures", LECTURES) as replica:
        single = eventcrawl(
            "crawl", "--web-base", replica.base_url, "--api-base", replica.base_url,
            "--state", str(tmp_path / "single"), *fast_crawl_settings(),
        )  # fmt: skip
        assert single.returncode == 0, single.stderr[-3000:]
        before = len(replica.requests())
        codes = run_fleet(replica, redis.url(1), tmp_path / "fleet", tmp_path / "logs", *fleet_settings)
        fleet_requests = replica.requests()[before:]
        truth = replica.ground_truth()
    assert codes == [0, 0, 0], logs_text(tmp_path / "logs")[-3000:]
    pages = lecture_paths(fleet_requests)
    assert len(pages) == len(set(pages)) == len(truth)

    staged = read_stage(tmp_path / "fleet")
    assert staged.complete
    assert staged.workers == ["w0", "w1", "w2"]
    # On a loaded machine one process may start after the others took all the work; two must share it.
    assert sum(staged_lines(tmp_path / "fleet", w) > 0 for w in staged.workers) >= 2
    assert staged.duplicate_lectures == 0
    assert staged.summary["lectures"] == len(truth)
    assert staged.summary["frontier"]["workers_joined"] == 3
    assert staged.summary["frontier"]["namespace"] == "eventcrawl:underline:502"

    single_rows = published_rows(tmp_path / "single", tmp_path / "single-out")
    fleet_rows = published_rows(tmp_path / "fleet", tmp_path / "fleet-out")
    assert len(fleet_rows) == len(truth)
    assert fleet_rows == single_rows


def test_the_fleet_keeps_the_single_process_pace_per_host(tmp_path: Path, redis: RunningRedis) -> None:
    settings = [
        "-s", "DOWNLOAD_DELAY=0.2", "-s", "AUTOTHROTTLE_ENABLED=False",
        "-s", "CONCURRENT_REQUESTS=8", "-s", "LOG_LEVEL=WARNING", *FAST_FLEET,
    ]  # fmt: skip
    with running_replica(tmp_path / "replica", "--lectures", "20") as replica:
        codes = run_fleet(replica, redis.url(2), tmp_path / "state", tmp_path / "logs", *settings)
        requests = replica.requests()
        truth = replica.ground_truth()
    assert codes == [0, 0, 0], logs_text(tmp_path / "logs")[-3000:]
    times = sorted(r["time"] for r in requests)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # One host, three workers: still one request per DOWNLOAD_DELAY, never three.
    assert min(gaps) >= 0.19, sorted(gaps)[:5]
    assert len(requests) >= len(truth) + 2
    pages = lecture_paths(requests)
    assert len(pages) == len(set(pages)) == len(truth)
    staged = read_stage(tmp_path / "state")
    assert staged.complete
    assert sorted(r.lecture_id for r in staged.records) == sorted(t["lecture_id"] for t in truth)
    # The work was shared, not done by the first worker while the others waited.
    assert sum(staged_lines(tmp_path / "state", w) > 0 for w in staged.workers) >= 2


def test_pacing_fails_closed_when_redis_goes_away(tmp_path: Path) -> None:
    """Redis stops mid-crawl: the worker sends nothing more without a token, retries, then stops with a
    clear reason once FRONTIER_PACE_FAIL_TIMEOUT has passed."""
    settings = [
        "-s", "DOWNLOAD_DELAY=0.1", "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "CONCURRENT_REQUESTS=8",
        "-s", "FRONTIER_PACE_FAIL_TIMEOUT=3", "-s", "FRONTIER_SOCKET_TIMEOUT=0.5", *FAST_FLEET,
    ]  # fmt: skip
    state, logs = tmp_path / "state", tmp_path / "logs"
    with (
        running_redis(tmp_path / "redis") as server,
        running_replica(tmp_path / "replica", "--lectures", LECTURES) as replica,
    ):
        worker = start_worker(replica, server.url(4), state, "w0", logs, *settings)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(lecture_paths(replica.requests())) < 5:
            time.sleep(0.02)
        assert len(lecture_paths(replica.requests())) >= 5, logs_text(logs)[-3000:]
        server.process.kill()
        server.process.wait()
        gone_at = time.time()
        started = time.monotonic()
        code = worker.wait(timeout=60)
        stopped_after = time.monotonic() - started
        requests = replica.requests()
        truth = replica.ground_truth()
    log = logs_text(logs)
    after = [r for r in requests if r["time"] > gone_at]
    # One request per host in flight: at most the one that held its token when Redis went away.
    assert len(after) <= 1, after
    assert len(lecture_paths(requests)) < len(truth)
    assert code != 0
    assert 3 <= stopped_after < 30
    assert "Stopping this worker: the frontier could not be asked for the pacing token" in log
    report = json.loads((state / "crawl-report.json").read_text(encoding="utf-8"))
    assert report["finish_reason"] == "frontier_pace_unavailable"
    assert report["stats"]["frontier/pace/gave_up"] >= 1
    assert report["stats"]["frontier/pace/retry_seconds"] >= 2.5


def test_a_killed_and_restarted_worker_loses_nothing(tmp_path: Path, redis: RunningRedis) -> None:
    """SIGKILL one of three workers mid-crawl and start another in its place, under a new name as a worker
    with the default name gets. The idle timeout is shorter than the heartbeat TTL: the workers must still
    wait for the killed worker's requests to come back (one may be the listing page that queues the rest)
    rather than stop as idle and leave them stranded."""
    settings = [
        *fast_crawl_settings(), "-s", "DOWNLOAD_DELAY=0.05", "-s", "FRONTIER_HEARTBEAT_TTL=3",
        "-s", "FRONTIER_POLL_INTERVAL=0.2", "-s", "FRONTIER_IDLE_TIMEOUT=1",
    ]  # fmt: skip
    state, logs = tmp_path / "state", tmp_path / "logs"
    names = ["w0", "w1", "w2"]
    with running_replica(tmp_path / "replica", "--lectures", LECTURES) as replica:
        procs = {n: start_worker(replica, redis.url(3), state, n, logs, *settings) for n in names}
        try:
            deadline = time.monotonic() + 60
            victim = None
            while victim is None and time.monotonic() < deadline:
                victim = next(
                    (n for n in names if staged_lines(state, n) >= 3 and procs[n].poll() is None), None
                )
                time.sleep(0.02)
            assert victim is not None, "no worker could be killed mid-crawl"
            procs[victim].send_signal(signal.SIGKILL)
            procs[victim].wait()
            procs["restarted"] = start_worker(replica, redis.url(3), state, "w3", logs / "again", *settings)
            survivors = [n for n in names if n != victim]
            codes = wait_all([*(procs[n] for n in survivors), procs["restarted"]], timeout=120)
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        truth = replica.ground_truth()
    log = logs_text(logs) + logs_text(logs / "again")
    # A worker that joins a drained frontier has nothing to do and finishes too.
    assert codes == [0, 0, 0], log[-3000:]
    assert "frontier_idle_timeout" not in log
    assert "Re-queued" in log
    staged = read_stage(state)
    assert staged.complete
    assert sorted(r.lecture_id for r in staged.records) == sorted(t["lecture_id"] for t in truth)
    rows = published_rows(state, tmp_path / "out")
    assert sorted(r["lecture_id"] for r in rows) == sorted(t["lecture_id"] for t in truth)


def test_a_lone_worker_killed_and_restarted_finishes_the_crawl(tmp_path: Path, redis: RunningRedis) -> None:
    settings = [*fast_crawl_settings(), "-s", "DOWNLOAD_DELAY=0.05", *FAST_FLEET]
    state, logs = tmp_path / "state", tmp_path / "logs"
    with running_replica(tmp_path / "replica", "--lectures", "40") as replica:
        first = start_worker(replica, redis.url(4), state, "solo", logs, *settings)
        deadline = time.monotonic() + 60
        while staged_lines(state, "solo") < 5 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert first.poll() is None, "the worker finished before it could be killed"
        first.send_signal(signal.SIGKILL)
        first.wait()
        killed_at = staged_lines(state, "solo")
        again = start_worker(replica, redis.url(4), state, "solo", logs / "again", *settings)
        codes = wait_all([again])
        requests = replica.requests()
        truth = replica.ground_truth()
    assert codes == [0], logs_text(logs / "again")[-3000:]
    # Under its name again, the worker took back at once what its killed run held.
    assert "Took back" in logs_text(logs / "again")
    assert killed_at < len(truth)
    staged = read_stage(state)
    assert staged.complete
    assert sorted(r.lecture_id for r in staged.records) == sorted(t["lecture_id"] for t in truth)
    # Only what the killed worker held in flight is fetched twice, not the crawl.
    pages = lecture_paths(requests)
    assert len(set(pages)) == len(truth)
    assert len(pages) - len(truth) <= 17  # CONCURRENT_REQUESTS=16 in flight, plus a listing page


# ---------------------------------------------------------------------------------------------------------
# The frontier's parts, in this process


class _Spider(scrapy.Spider):
    name = "underline"
    event_id = "502"

    def parse_lecture(self, response: Any, lecture_id: str, listing: Any = None) -> None:
        """A named callback, as the queue needs."""


def frontier_for(url: str, worker: str, **settings: Any) -> Frontier:
    crawler = project_crawler(_Spider, {**frontier_settings(url, worker), **settings})
    return Frontier(crawler)


def fleet_worker(url: str, worker: str, **settings: Any) -> tuple[Frontier, FrontierExtension]:
    """A worker's frontier and the extension that decides, when its engine is idle, whether it stays; with
    no engine, every lease counts as finished at each check."""
    crawler = project_crawler(_Spider, {**frontier_settings(url, worker), **settings})
    frontier = Frontier.of(crawler)
    return frontier, FrontierExtension(crawler, frontier)


def test_one_worker_seeds_and_a_finished_crawl_stays_finished(redis: RunningRedis) -> None:
    url = redis.url(5)
    spider = _Spider()
    first, second = frontier_for(url, "a"), frontier_for(url, "b")
    assert first.open(spider) == SEED
    assert second.open(spider) == JOIN
    assert first.run == second.run
    assert second.drain().status == "seeding"
    first.mark_seeded()
    assert second.drain().status == DONE
    assert second.drained
    late = frontier_for(url, "c", FRONTIER_RESET_AFTER=3600)
    assert late.open(spider) == DONE
    time.sleep(0.3)
    next_night = frontier_for(url, "d", FRONTIER_RESET_AFTER=0.2)
    assert next_night.open(spider) == SEED
    assert next_night.run != first.run
    assert frontier_for(url, "e", FRONTIER_RESET=True).open(spider) == JOIN
    next_night.mark_seeded()
    assert next_night.drain().flipped
    again = frontier_for(url, "f", FRONTIER_RESET=True)
    assert again.open(spider) == SEED
    assert again.run not in (first.run, next_night.run)


def test_leases_of_a_dead_worker_go_back_to_the_queue(redis: RunningRedis) -> None:
    url = redis.url(6)
    spider = _Spider()
    alive = frontier_for(url, "alive")
    doomed = frontier_for(url, "doomed", FRONTIER_HEARTBEAT_TTL=0.3)
    alive.open(spider)
    doomed.open(spider)
    alive.mark_seeded()
    assert alive.keys is not None
    alive.client.zadd(alive.keys.queue, {b"page-1": 0, b"page-2": -10})
    assert doomed.lease() == (1, b"page-2")
    assert alive.drain().status == "queued"
    assert alive.lease() == (2, b"page-1")
    assert alive.heartbeat([2]) == 0
    assert alive.drain().status == "busy"
    time.sleep(0.4)
    assert alive.drain().status == "requeued"
    assert alive.client.zcard(alive.keys.queue) == 1
    found = alive.lease()
    assert found is not None and found[1] == b"page-2"
    alive.heartbeat([found[0]])
    assert alive.drain().flipped
    assert alive.client.exists(alive.keys.queue, alive.keys.seen) == 0


def test_one_request_per_host_and_an_interval_after_each_response(redis: RunningRedis) -> None:
    url = redis.url(7)
    spider = _Spider()
    a, b, c = (frontier_for(url, name) for name in "abc")
    for frontier in (a, b, c):
        frontier.open(spider)
    assert a.acquire("example.org", hold=10, poll=0.05) == 0.0
    assert b.acquire("example.org", hold=10, poll=0.05) == pytest.approx(0.05)
    assert b.acquire("other.example.org", hold=10, poll=0.05) == 0.0
    a.release("example.org", 0.1)
    assert b.acquire("example.org", hold=10, poll=0.05) == pytest.approx(0.1, abs=0.01)
    time.sleep(0.1)
    assert b.acquire("example.org", hold=10, poll=0.05) == 0.0
    # b dies holding the token: it is taken over once b's heartbeat is gone.
    assert c.acquire("example.org", hold=10, poll=0.05) == pytest.approx(0.05)
    assert b.keys is not None
    b.client.delete(b.keys.alive_prefix + b.session)
    assert c.acquire("example.org", hold=10, poll=0.05) == 0.0


def test_listing_fields_travel_through_the_queue(redis: RunningRedis) -> None:
    from scrapy_redis import picklecompat
    from scrapy_redis.queue import PriorityQueue

    from crawler.pages import LectureItem
    from crawler.schema import parse_timestamp

    fields = LectureItem(
        lecture_id="130123",
        slug="a-title",
        title="A title",
        keywords=["nlp"],
        held_at=parse_timestamp("2025-11-05T09:00:00Z"),
        is_premium=True,
        related_lecture_ids=["1", "2"],
        problems=["not carried"],
    )
    listing = fields.to_json()
    assert json.loads(json.dumps(listing)) == listing
    assert LectureItem.read_json(listing) == fields
    assert LectureItem.read_json({"lecture_id": 5}) is None
    spider = _Spider()
    request = scrapy.Request(
        "http://127.0.0.1/lecture/130123-a-title",
        callback=spider.parse_lecture,
        cb_kwargs={"lecture_id": "130123", "listing": listing},
    )
    import redis as redis_client

    queue = PriorityQueue(redis_client.Redis.from_url(redis.url(8)), spider, "q", picklecompat)
    queue.push(request)
    back = queue.pop()
    assert back.callback == spider.parse_lecture
    assert back.cb_kwargs == {"lecture_id": "130123", "listing": listing}


def test_frontier_settings() -> None:
    settings = frontier_settings("redis://127.0.0.1:6379/0", "w-1")
    assert settings == {
        "FRONTIER_URL": "redis://127.0.0.1:6379/0",
        "STAGE_WORKER": "w-1",
        "ADDONS": {"crawler.frontier.addon.FrontierAddon": 0},
    }
    assert frontier_settings("redis://h:1/2", None)["STAGE_WORKER"] == default_worker_name()
    assert default_worker_name().endswith(f"-{os.getpid()}")
    with pytest.raises(ValueError, match="redis://"):
        frontier_settings("http://127.0.0.1:6379/0", None)
    with pytest.raises(StageError):
        frontier_settings("redis://127.0.0.1:6379/0", "../x")


def test_a_single_machine_crawl_needs_no_redis() -> None:
    code = (
        "import sys, crawler.app.cli, crawler.frontier, crawler.frontier.addon; "
        "crawler.frontier.addon.FrontierAddon().update_settings({}); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('redis', 'scrapy_redis')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"


def test_a_bad_frontier_url_is_a_usage_error(tmp_path: Path) -> None:
    result = eventcrawl("crawl", "--state", str(tmp_path / "state"), "--frontier", "localhost:6379")
    assert result.returncode == 2
    assert "redis://" in result.stderr


def idle_check(extension: FrontierExtension, spider: scrapy.Spider) -> str:
    """What the worker does when its engine is idle: stay (``DontCloseSpider``), close with a reason, or
    let the engine finish (``finished``)."""
    try:
        extension.spider_idle(spider)
    except DontCloseSpider:
        return "stay"
    except CloseSpider as exc:
        return exc.reason
    return "finished"


def test_a_dead_workers_listing_lease_keeps_the_fleet_waiting_until_it_is_served(redis: RunningRedis) -> None:
    """The fleet's last request, the listing page that would queue the rest, is leased by a worker that dies.
    Until its heartbeat runs out the lease looks held; the idle timeout must not close the survivor meanwhile
    (nothing would be left to put the page back), however short it is."""
    url = redis.url(9)
    spider = _Spider()
    doomed = frontier_for(url, "doomed")
    survivor, extension = fleet_worker(url, "survivor", FRONTIER_IDLE_TIMEOUT=0.2)
    assert doomed.open(spider) == SEED
    assert survivor.open(spider) == JOIN
    keys = doomed.keys
    assert keys is not None
    # Seeding: the first listing page; serving it queues a lecture and the next listing page (lower priority).
    doomed.client.zadd(keys.queue, {b"listing-1": 10})
    doomed.mark_seeded()
    first = doomed.lease()
    assert first == (1, b"listing-1")
    doomed.client.zadd(keys.queue, {b"lecture-1": 0, b"listing-2": 10})
    doomed.heartbeat([first[0]])
    lecture = survivor.lease()
    assert lecture == (2, b"lecture-1")
    assert doomed.lease() == (3, b"listing-2")
    survivor.heartbeat([lecture[0]])
    # The doomed worker dies now (SIGKILL): it never acknowledges listing-2 and never beats again.
    assert idle_check(extension, spider) == "stay"
    time.sleep(0.3)
    assert idle_check(extension, spider) == "stay"
    assert survivor.drain() == Drain("busy", 1)
    # Time passes: what is left of the dead worker's heartbeat runs out.
    survivor.client.pexpire(keys.alive_prefix + doomed.session, 50)
    time.sleep(0.3)
    assert idle_check(extension, spider) == "stay"
    assert extension.stats.get_value("frontier/requeued") == 1
    assert survivor.client.zrange(keys.queue, 0, -1, withscores=True) == [(b"listing-2", 10.0)]
    # The survivor serves the page, and the lectures it lists.
    again = survivor.lease()
    assert again is not None and again[1] == b"listing-2"
    survivor.client.zadd(keys.queue, {b"lecture-2": 0})
    survivor.heartbeat([again[0]])
    assert idle_check(extension, spider) == "stay"
    last = survivor.lease()
    assert last is not None and last[1] == b"lecture-2"
    survivor.heartbeat([last[0]])
    assert idle_check(extension, spider) == "finished"
    assert survivor.drained
    assert survivor.summary()["done_by"] == survivor.session


def test_an_ack_that_does_not_reach_redis_goes_with_the_next_heartbeat(tmp_path: Path) -> None:
    """A lost ack would leave a lease in Redis that no engine holds: the worker would wait for itself."""
    import redis as redis_client

    spider = _Spider()
    with running_redis(tmp_path / "redis") as server:
        worker = frontier_for(server.url(0), "w")
        assert worker.open(spider) == SEED
        assert worker.keys is not None
        worker.client.zadd(worker.keys.queue, {b"page": 0})
        worker.mark_seeded()
        assert worker.lease() == (1, b"page")
        worker.client.acl_setuser("admin", enabled=True, passwords=["+pw"], keys=["~*"], commands=["+@all"])
        admin = redis_client.Redis(port=server.port, username="admin", password="pw")
        # Redis refuses the worker's commands for a while.
        admin.acl_setuser("default", enabled=True, nopass=True, keys=["~*"], commands=["-@all"])
        with pytest.raises(redis_client.RedisError):
            worker.heartbeat([1])
        admin.acl_setuser("default", enabled=True, nopass=True, keys=["~*"], commands=["+@all"])
        assert worker.unacked == [1]
        assert worker.heartbeat() == 0
        assert worker.unacked == []
        assert worker.drain().flipped


def test_the_idle_clock_runs_only_while_no_work_is_outstanding() -> None:
    clock = IdleClock(timeout=5)
    assert not clock.expired(None, now=100)
    assert not clock.expired(None, now=104.9)
    assert clock.expired(None, now=105)
    for status in ("busy", "queued", "seeding", "requeued", SEED):
        assert not clock.expired(Drain(status, 1), now=1000), f"{status=}"
        assert clock.since is None, f"{status=}"
    assert not clock.expired(None, now=2000)
    clock.reset()
    assert not clock.expired(None, now=3000)
    assert not clock.expired(None, now=3004)
    assert clock.expired(None, now=3006)
    never = IdleClock(timeout=0)
    assert not never.expired(None, now=0)
    assert not never.expired(None, now=10**9)


def test_fleet_workers_share_the_state_and_keep_run_crawl_and_publish_out(
    tmp_path: Path, redis: RunningRedis
) -> None:
    """Workers wait on a frontier whose seeding this test holds open: while they run, the commands that take
    the state directory for themselves are refused with status 6; a second worker joins the first."""
    url = redis.url(10)
    spider = _Spider()
    seeder = frontier_for(url, "test-seeder")
    assert seeder.open(spider) == SEED
    keys = seeder.keys
    assert keys is not None
    state, logs = tmp_path / "state", tmp_path / "logs"
    base = "http://127.0.0.1:9"  # never asked: only the seeder would fetch anything
    site = ["--web-base", base, "--api-base", base]

    def joined() -> int:
        seeder.heartbeat()
        return int(seeder.client.scard(keys.workers)) - 1

    def wait_joined(n: int) -> None:
        deadline = time.monotonic() + 60
        while joined() < n and time.monotonic() < deadline:
            time.sleep(0.05)
        assert joined() == n, logs_text(logs)[-3000:]

    workers: list[Started | subprocess.Popen[str]] = []
    try:
        for name in ("w0", "w1"):
            workers.append(start_worker(base, url, state, name, logs, *FAST_FLEET))
            # A worker joins the frontier after it took the lock.
            wait_joined(len(workers))
        out = str(tmp_path / "out")
        commands = [
            ["crawl", *site, "--state", str(state)],
            ["publish", "--state", str(state), "--out", out],
            ["run", *site, "--state", str(state), "--out", out, "--name", "x"],
        ]
        for cmd in commands:
            refused = eventcrawl(*cmd, cwd=REPO, timeout=60)
            assert refused.returncode == 6, (cmd[0], refused.stderr[-2000:])
            assert f"crawl workers of a fleet hold {state / 'run.lock'}" in refused.stderr, cmd[0]
        assert all(w.poll() is None for w in workers)
        seeder.mark_seeded()
        codes = wait_all(workers, timeout=60)
    finally:
        for proc in workers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert codes == [0, 0], logs_text(logs)[-3000:]
    assert not (tmp_path / "out").exists()
    # Gone with the workers: the exclusive commands may run again.
    StateLock(state).acquire().release()


def test_a_restarted_worker_takes_back_at_once_what_its_killed_run_held(redis: RunningRedis) -> None:
    url = redis.url(11)
    spider = _Spider()
    killed = frontier_for(url, "w")
    # Another worker whose name starts with the same letters and a dot keeps what it holds.
    other = frontier_for(url, "w.2")
    assert killed.open(spider) == SEED
    assert other.open(spider) == JOIN
    keys = killed.keys
    assert keys is not None
    killed.client.zadd(keys.queue, {b"listing-2": 10, b"lecture-1": 0, b"lecture-2": 0})
    killed.mark_seeded()
    assert killed.lease() == (1, b"lecture-1")
    assert other.lease() == (2, b"lecture-2")
    assert killed.lease() == (3, b"listing-2")
    # "w" is killed (its heartbeat would run for 30 s more) and started again under its name.
    again = frontier_for(url, "w")
    assert again.open(spider) == JOIN
    assert again.reclaimed == 2
    assert killed.client.zrange(keys.queue, 0, -1, withscores=True) == [
        (b"lecture-1", 0.0),
        (b"listing-2", 10.0),
    ]
    assert killed.client.smembers(keys.workers) == {other.session.encode(), again.session.encode()}
    assert killed.client.exists(keys.alive_prefix + killed.session, keys.leases_prefix + killed.session) == 0
    assert killed.client.hvals(keys.leases_prefix + other.session) == [b"0:lecture-2"]
    assert frontier_for(url, "w.2").open(spider) == JOIN
    assert killed.client.hlen(keys.leases_prefix + other.session) == 0
