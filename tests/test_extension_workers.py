"""Worker processes: the same crawl output with and without them, a job that never returns or a worker
that dies does not stop the crawl, and shutdown does not wait for the workers."""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scrapy.statscollectors import MemoryStatsCollector

from crawler import stats_keys as keys
from crawler.cache.entry import decode_entry
from crawler.dedup import near
from crawler.extensions import worker_process
from crawler.extensions.workers import JobTimedOut, RemoteTraceback, WorkerDied, WorkerPool
from crawler.pipelines.dedup import SIGNATURE_BATCH
from tests.support.commands import start_command
from tests.support.polite_server import REPO_ROOT
from tests.support.replica import RunningReplica, crawl_args, eventcrawl, fast_crawl_settings, running_replica
from tests.support.settings import project_crawler
from tests.support.staged import read_stage

# -- jobs the tests send (module level: a worker imports them by name) -----------------------------------


def pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def kill_myself() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def stuck_deaf_to_sigterm() -> None:
    """Like a job stuck in C code: Python's handler of SIGTERM never runs, only SIGKILL ends it."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    time.sleep(3600)


def raise_timeout() -> None:
    raise TimeoutError("the job's own")


def mark_then_sleep(path: str, seconds: float) -> int:
    """Write this worker's pid to ``path`` when the job starts, then sleep."""
    Path(path).write_text(str(os.getpid()), encoding="utf-8")
    time.sleep(seconds)
    return os.getpid()


def stop_iteration() -> None:
    next(iter([]))


def system_exit() -> None:
    sys.exit(3)


def raise_unpicklable() -> None:
    raise UnpicklableError("no way back")


class UnpicklableError(Exception):
    def __reduce__(self) -> Any:
        raise TypeError("this exception stays where it was raised")


class BreaksWhenUnpickled:
    """An argument that pickles but cannot be unpickled (in the worker)."""

    def __reduce__(self) -> Any:
        return (_refuse, ())


def _refuse() -> None:
    raise ValueError("not in a worker")


STALL_ENV = "EVENTCRAWL_TEST_STALL_LECTURES"
# Seconds the crawl with stalled jobs may take: about 15 on a busy machine, two of them the job timeouts.
STALLED_CRAWL = 60


def stall_on_chosen_pages(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """WORKER_JOB_WRAPPER for the stall test: the job storing (and reading) the page of a lecture named in
    $EVENTCRAWL_TEST_STALL_LECTURES never returns; every other job runs as usual."""
    chosen = {i for i in os.environ.get(STALL_ENV, "").split(",") if i}
    lecture = re.search(r"/lecture/(\d+)", args[1]["url"]) if fn.__name__ == "store_entry" else None
    if lecture is not None and lecture.group(1) in chosen:
        time.sleep(3600)
    return fn(*args, **kwargs)


# -- the pool alone -----------------------------------------------------------------------------------


def _pool_run(
    scenario: Callable[[WorkerPool], Any], timeout: float = 30.0, stopped_within: float = 15.0, **options: Any
) -> tuple[Any, dict]:
    stats = MemoryStatsCollector(project_crawler(settings_dict={"STAGE_STATE_DIR": ""}))
    pool = WorkerPool(1, timeout, stats=stats, **options)

    async def main() -> Any:
        pool.start()
        try:
            return await scenario(pool)
        finally:
            pool.close()

    try:
        return asyncio.run(main()), stats.get_stats()
    finally:
        # A busy worker is killed at once; an idle one ends when its socket closes.
        assert pool.wait_stopped(stopped_within)


MAIN_SCRIPT = """
import asyncio, functools, os, sys
from crawler.extensions.workers import WorkerPool
LOADED = os.environ["MARKS"]
with open(LOADED, "a") as marks:
    marks.write(__name__ + "\\n")


def defined_here():
    return "ran"


async def run(fork_first):
    pool = WorkerPool(1, 30.0, fork_first=fork_first)
    try:
        print(await pool.run(len, "four"))
        for job in (defined_here, functools.partial(defined_here)):
            try:
                await pool.run(job)
            except ValueError as exc:
                print("refused" if "defined in the main module" in str(exc) else exc)
    finally:
        pool.close()
        pool.wait_stopped(15)


if __name__ == "__main__":
    asyncio.run(run(fork_first=True))
    asyncio.run(run(fork_first=False))
"""


def test_a_worker_does_not_run_the_main_module_of_the_crawl_again(tmp_path: Path) -> None:
    """A worker's jobs need nothing of the crawl's main module, the command line (Scrapy and every
    command), and a worker never runs it again, forked or started afresh (as a process spawned by
    multiprocessing would). A job defined in the main module is refused with a clear error, plain or
    partially applied."""
    script, marks = tmp_path / "crawl_main.py", tmp_path / "marks.txt"
    script.write_text(MAIN_SCRIPT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "MARKS": str(marks)}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["4", "refused", "refused"] * 2
    assert marks.read_text(encoding="utf-8").split() == ["__main__"]


FORK_SCRIPT = """
import asyncio, gc, os, sys
from crawler.extensions.workers import WorkerPool
from crawler.extensions.worker_side import JOB_MODULES

missing = [m for m in JOB_MODULES if m not in sys.modules]
held = open(sys.argv[1], "w")  # like the crawl's lock file, open before the workers start
gc.freeze()  # as a fork server does before it forks the crawl
frozen = gc.get_freeze_count()


async def run():
    pool = WorkerPool(1, 30.0)
    worker = await pool.run(os.getpid)
    here = os.readlink(f"/proc/{os.getpid()}/fd/{held.fileno()}")
    theirs = [os.readlink(f"/proc/{worker}/fd/{fd}") for fd in os.listdir(f"/proc/{worker}/fd")]
    same = open(f"/proc/{worker}/cmdline", "rb").read() == open("/proc/self/cmdline", "rb").read()
    pool.close()
    pool.wait_stopped(15)
    print("forked" if same else "started afresh", "holds" if here in theirs else "holds not")
    print("kept" if gc.get_freeze_count() >= frozen else "thawed")
    # Imported here before the fork: the worker has them without importing them again.
    print("imported" if missing and all(m in sys.modules for m in JOB_MODULES) else "not-imported")


asyncio.run(run())
"""


def test_a_forked_worker_holds_none_of_the_crawls_descriptors(tmp_path: Path) -> None:
    """The first worker of a crawl with one thread is forked (it imports nothing: the crawl imports its
    jobs' modules first), and closes what the crawl had open: an orphaned worker must not keep the
    crawl's lock file or connections. The objects a fork server froze before forking the crawl stay
    frozen in it."""
    script = tmp_path / "fork_main.py"
    script.write_text(FORK_SCRIPT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "run.lock")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split() == ["forked", "holds", "not", "kept", "imported"]


KILLED_CRAWL_SCRIPT = """
import asyncio, os, sys, threading, time
from crawler.extensions.workers import WorkerPool

if sys.argv[1] == "started-afresh":  # a second thread: the worker is not forked
    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()


async def run():
    pool = WorkerPool(1, 600.0)
    worker = await pool.run(os.getpid)
    pool.submit(time.sleep, 600)  # a job that outlives the crawl
    await asyncio.sleep(0.5)
    print(worker, flush=True)
    await asyncio.sleep(600)


asyncio.run(run())
"""


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie nobody reaps has ended too)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the kernel's parent-death signal is Linux's"
)
@pytest.mark.parametrize("start", ["forked", "started-afresh"])
def test_a_worker_busy_in_a_job_ends_with_a_crawl_killed_outright(tmp_path: Path, start: str) -> None:
    """A crawl killed with SIGKILL cannot stop its workers, and a worker busy in a job does not read its
    socket: the kernel ends it with the crawl, however it was started."""
    script = tmp_path / "killed_crawl.py"
    script.write_text(KILLED_CRAWL_SCRIPT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    crawl = subprocess.Popen([sys.executable, str(script), start], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert crawl.stdout is not None
        worker = int(crawl.stdout.readline())
        assert not _gone(worker), start
        crawl.kill()
        crawl.wait(30)
        deadline = time.monotonic() + 15
        while not _gone(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(worker), f"{start}: worker {worker} outlived its crawl"
    finally:
        crawl.kill()
        crawl.wait(30)


def test_a_job_that_never_returns_times_out_and_its_worker_is_replaced() -> None:
    async def scenario(pool: WorkerPool) -> tuple[int, float, int, int]:
        first = await pool.run(os.getpid)
        started = time.monotonic()
        stuck = pool.submit(time.sleep, 3600)
        behind = pool.submit(pid_after, 0)  # queued behind the stuck job
        # Bounded here too: a pool that lost its timeout fails this test in seconds, not in an hour.
        with pytest.raises(JobTimedOut, match="ran longer than 1 s"):
            await asyncio.wait_for(stuck, 10)
        waited = time.monotonic() - started
        return first, waited, await behind, await pool.run(os.getpid)

    (first, waited, behind, after), stats = _pool_run(scenario, timeout=1.0)
    assert 1.0 <= waited < 10
    assert behind == after != first
    assert stats["workers/timed_out"] == 1
    assert stats["workers/failed"] == 1
    assert stats["workers/jobs"] == 4
    assert "workers/retried" not in stats


def test_a_killed_busy_worker_is_replaced_and_its_job_tried_again(tmp_path: Path) -> None:
    started = tmp_path / "started"

    async def scenario(pool: WorkerPool) -> tuple[int, int, int]:
        first = await pool.run(pid_after, 0)
        running = pool.submit(mark_then_sleep, str(started), 1.0)
        # Killed once the job runs, however slow the machine.
        while not started.exists():
            await asyncio.sleep(0.01)
        os.kill(first, signal.SIGKILL)
        return first, await running, await pool.run(os.getpid)

    (first, retried, after), stats = _pool_run(scenario)
    assert retried == after != first
    assert stats["workers/died"] == stats["workers/retried"] == stats["workers/replaced"] == 1
    assert "workers/failed" not in stats


@pytest.mark.parametrize("wait", [0.5, 0.0])
def test_a_worker_killed_while_idle_is_replaced(wait: float) -> None:
    """A worker that dies while no job runs is replaced, and the next job goes to the new one, whether it is
    sent after the death was seen (``wait``) or before (no wait: it is sent again, not counted a try)."""

    async def scenario(pool: WorkerPool) -> tuple[int, int]:
        first = await pool.run(os.getpid)
        os.kill(first, signal.SIGKILL)
        await asyncio.sleep(wait)
        return first, await pool.run(os.getpid)

    (first, after), stats = _pool_run(scenario)
    assert after != first
    assert stats["workers/replaced"] == 1
    assert "workers/failed" not in stats
    assert "workers/retried" not in stats  # the job sent to the dead worker had not started


def test_a_job_that_kills_its_worker_each_time_fails_cleanly() -> None:
    async def scenario(pool: WorkerPool) -> int:
        with pytest.raises(WorkerDied, match="second try"):
            await pool.run(kill_myself)
        return await pool.run(pid_after, 0)

    after, stats = _pool_run(scenario)
    assert after != os.getpid()
    assert stats["workers/died"] == stats["workers/replaced"] == 2
    assert stats["workers/retried"] == stats["workers/failed"] == 1


def test_a_pool_that_stops_answering_is_replaced() -> None:
    """A worker stopped (SIGSTOP) while idle takes no job and so never times out: the watch sees that no
    job ends and starts new processes."""

    async def scenario(pool: WorkerPool) -> tuple[int, int]:
        first = await pool.run(os.getpid)
        os.kill(first, signal.SIGSTOP)
        return first, await pool.run(os.getpid)

    # A replacement is a fresh interpreter: the stall clock must leave it time to start on a busy machine.
    (first, after), stats = _pool_run(scenario, stall_after=5.0)
    assert after != first
    assert stats["workers/replaced"] == 1
    assert "workers/retried" not in stats  # the job had not started: it was sent again as it was


def test_an_exception_in_a_worker_reaches_the_caller() -> None:
    async def scenario(pool: WorkerPool) -> None:
        with pytest.raises(ValueError, match="ten"):
            await pool.run(int, "ten")
        with pytest.raises(TimeoutError, match="the job's own"):  # not taken for the pool's timeout
            await pool.run(raise_timeout)

    _, stats = _pool_run(scenario, timeout=5.0)
    assert "workers/timed_out" not in stats
    assert "workers/failed" not in stats


def test_a_job_that_cannot_be_sent_or_answered_fails_alone() -> None:
    """An argument that cannot be pickled, one the worker cannot unpickle and an exception that cannot
    be sent back each fail their own job with a clear error; the worker answers the next job."""

    async def scenario(pool: WorkerPool) -> tuple[int, int]:
        first = await pool.run(os.getpid)
        with pytest.raises((TypeError, AttributeError, pickle.PicklingError)):
            await pool.run(len, threading.Lock())
        with pytest.raises(ValueError, match="not in a worker") as unpickled:
            await pool.run(len, BreaksWhenUnpickled())
        # The worker's traceback comes with the error.
        assert isinstance(unpickled.value.__cause__, RemoteTraceback)
        assert "_refuse" in str(unpickled.value.__cause__)
        with pytest.raises(
            RuntimeError, match="exception UnpicklableError: no way back could not be sent back"
        ):
            await pool.run(raise_unpicklable)
        # A future refuses StopIteration: the job's caller gets a RuntimeError that names it.
        with pytest.raises(RuntimeError, match="the job raised StopIteration"):
            await asyncio.wait_for(pool.run(stop_iteration), 10)
        # Nor may a job's SystemExit stop the crawl's loop.
        with pytest.raises(RuntimeError, match="the job raised SystemExit: 3"):
            await asyncio.wait_for(pool.run(system_exit), 10)
        return first, await pool.run(os.getpid)

    (first, after), stats = _pool_run(scenario)
    assert after == first
    assert not {k for k in stats if k.startswith("workers/")} - {"workers/jobs"}


def test_workers_that_cannot_start_are_given_up_not_replaced_forever(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that dies before taking any job (a broken interpreter, say) is replaced, but not a
    third time in a row: the pool gives up, and every job fails at once instead of the crawl hanging."""
    monkeypatch.setattr(worker_process, "BOOTSTRAP", "import os; os._exit(3)")

    async def scenario(pool: WorkerPool) -> None:
        waiting = [pool.submit(os.getpid) for _ in range(3)]
        for job in waiting:
            with pytest.raises(WorkerDied, match="3 worker processes in a row died before starting a job"):
                await asyncio.wait_for(job, 30)
        # Later jobs fail at once, as the waiting ones did, rather than raise where they are sent.
        with pytest.raises(WorkerDied, match="given up"):
            await pool.submit(os.getpid)

    _, stats = _pool_run(scenario, fork_first=False)
    assert stats["workers/died"] == stats["workers/replaced"] == 3


def test_closing_does_not_wait_for_a_stuck_worker() -> None:
    async def scenario(pool: WorkerPool) -> tuple[float, int]:
        worker = await pool.run(os.getpid)
        stuck = pool.submit(stuck_deaf_to_sigterm)
        await asyncio.sleep(0.3)
        started = time.monotonic()
        pool.close()
        took = time.monotonic() - started
        with pytest.raises(WorkerDied, match="closed"):
            await stuck
        return took, worker

    (took, worker), _ = _pool_run(scenario, timeout=600.0, stopped_within=2.0)
    assert took < 0.2
    # _pool_run waited for the stopping thread: the worker is gone.
    assert (
        not Path(f"/proc/{worker}").exists() or "zombie" in Path(f"/proc/{worker}/status").read_text().lower()
    )


# -- crawls -------------------------------------------------------------------------------------------


@dataclass
class Crawl:
    state: Path
    report: dict[str, Any]

    @property
    def stats(self) -> dict[str, Any]:
        return dict(self.report["stats"])


def _settings(processes: int, *extra: str) -> list[str]:
    return [*fast_crawl_settings(), "-s", f"WORKER_PROCESSES={processes}", *extra]


def _report(state: Path) -> dict[str, Any]:
    return dict(json.loads((state / "crawl-report.json").read_text(encoding="utf-8")))


def _crawl(replica: RunningReplica, state: Path, processes: int, *extra: str, timeout: float = 600) -> Crawl:
    result = eventcrawl(
        *crawl_args(replica.base_url, state, "--event-id", "502", *_settings(processes, *extra)),
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return Crawl(state, _report(state))


def _records(state: Path) -> dict[str, dict[str, Any]]:
    return {
        r.lecture_id: {k: v for k, v in r.values().items() if k != "fetched_at"}
        for r in read_stage(state).records
    }


def _cache(state: Path) -> dict[str, tuple[dict[str, Any], bytes]]:
    entries = {}
    for path in (state / "httpcache").rglob("*.entry"):
        header, body = decode_entry(path.read_bytes())
        # When it was fetched differs from one crawl to the other; everything else is the answer's.
        header.pop("timestamp")
        header["headers"] = [h for h in header["headers"] if h[0] != "Date"]
        entries[path.name] = (header, body)
    return entries


@pytest.fixture(scope="module")
def replica(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningReplica]:
    with running_replica(tmp_path_factory.mktemp("replica"), "--lectures", "120") as running:
        yield running


@pytest.fixture(scope="module")
def without_workers(replica: RunningReplica, tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    return _crawl(replica, tmp_path_factory.mktemp("without"), 0)


def test_a_crawl_with_workers_stages_and_caches_what_a_crawl_without_them_does(
    replica: RunningReplica, without_workers: Crawl, tmp_path: Path
) -> None:
    with_workers = _crawl(replica, tmp_path / "with", 1)
    truth = replica.ground_truth()
    stats, reference = with_workers.stats, without_workers.stats
    assert stats["workers/processes"] == 1
    assert "workers/processes" not in reference
    # One job for each stored answer (a lecture page is read in the job that stores it: its body is sent
    # once), one for each listing page read and one for each SIGNATURE_BATCH signatures.
    responses = stats["response_received_count"]
    signed = stats["dedup/unique"] + stats.get("dedup/changed_on_refetch", 0)
    batches = -(-signed // SIGNATURE_BATCH)
    assert signed > SIGNATURE_BATCH
    assert stats["workers/jobs"] == responses + stats[keys.LISTING_PAGES] + batches
    assert not {k for k in stats if k.startswith("workers/")} - {"workers/processes", "workers/jobs"}
    records = _records(with_workers.state)
    assert len(records) == len(truth) > 100
    assert records == _records(without_workers.state)
    # The near-duplicate signatures, computed in the worker, are the ones computed here.
    signatures = near.load_signatures(with_workers.state)
    reference_signatures = near.load_signatures(without_workers.state)
    assert len(signatures) == stats["dedup/signatures"] > 100
    assert signatures.keys() == reference_signatures.keys()
    assert all((v == reference_signatures[k]).all() for k, v in signatures.items())
    # (Which alias is dropped as known depends on the order the pages came back in: not compared.)
    signing = ("dedup/signatures", "dedup/unique", "dedup/near_duplicate_groups_count")
    assert [stats.get(k) for k in signing] == [reference.get(k) for k in signing]
    cache = _cache(with_workers.state)
    assert len(cache) == responses
    assert cache == _cache(without_workers.state)


def test_pages_whose_job_never_returns_fail_and_the_crawl_goes_on(
    replica: RunningReplica, without_workers: Crawl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    truth = sorted(r["lecture_id"] for r in replica.ground_truth())
    chosen = [truth[10], truth[50]]
    monkeypatch.setenv(STALL_ENV, ",".join(chosen))
    wrapper = f"WORKER_JOB_WRAPPER={__name__}.stall_on_chosen_pages"
    started = time.monotonic()
    # The stalled jobs never return: without the job timeout the crawl would never end, and the command's
    # timeout fails the test within a minute.
    stalled = _crawl(
        replica, tmp_path / "stalled", 1, "-s", "WORKER_JOB_TIMEOUT=1", "-s", wrapper, timeout=STALLED_CRAWL
    )
    took = time.monotonic() - started
    stats = stalled.stats
    assert stats["finish_reason"] == "finished"
    assert stats["workers/timed_out"] == stats["workers/failed"] == 2
    assert stats[keys.PAGE_UNPARSABLE] == 2
    assert stats[keys.PAGE_FAILED_KEPT] == 2
    assert took < STALLED_CRAWL
    records, reference = _records(stalled.state), _records(without_workers.state)
    # Every lecture is staged; the two whose page never came back are kept from their listing.
    assert records.keys() == reference.keys() == set(truth)
    assert {i for i, r in records.items() if r["extraction"].startswith("api_listing")} == set(chosen)
    assert {i: r for i, r in records.items() if i not in chosen} == {
        i: r for i, r in reference.items() if i not in chosen
    }
    # Their answers were never stored: the next crawl fetches them in full.
    assert len(_cache(stalled.state)) == stats["response_received_count"] - 2


def _spawned_children(pid: int) -> set[int]:
    """The crawl's worker processes: its living children (it starts no other)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _staged_lines(state: Path) -> int:
    path = state / "stage" / "main.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_a_worker_killed_mid_crawl_is_replaced_and_nothing_is_lost(
    replica: RunningReplica, without_workers: Crawl, tmp_path: Path
) -> None:
    state = tmp_path / "killed"
    args = crawl_args(
        replica.base_url, state, "--event-id", "502", *_settings(1, "-s", "WORKER_JOB_TIMEOUT=5")
    )
    err = tmp_path / "crawl.err"
    crawl = start_command(
        [sys.executable, "-m", "crawler.app.cli", *args],
        cwd=tmp_path,
        stdout=tmp_path / "crawl.out",
        stderr=err,
    )
    try:
        deadline = time.monotonic() + 60
        while _staged_lines(state) < 20 and crawl.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        victims = _spawned_children(crawl.pid)
        assert crawl.poll() is None and len(victims) == 1, "no worker to kill mid-crawl"
        (victim,) = victims
        victim_cmdline = _cmdline(victim)
        os.kill(victim, signal.SIGKILL)
        killed_at = _staged_lines(state)
        replacements: set[int] = set()
        while crawl.poll() is None and not replacements:
            replacements = _spawned_children(crawl.pid) - victims
            time.sleep(0.01)
        # What a replacement runs, once it has left the crawl's code for its own (between fork and exec it
        # still shows the crawl's command line).
        replacement_cmdlines = [_cmdline(pid) for pid in replacements]
        while crawl.poll() is None and not all(b"worker_side" in c for c in replacement_cmdlines):
            time.sleep(0.01)
            replacement_cmdlines = [_cmdline(pid) for pid in replacements]
        crawl.wait(timeout=120)
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.wait()
    stderr = err.read_text()
    assert crawl.returncode == 0, stderr[-3000:]
    stats = _report(state)["stats"]
    assert killed_at < len(replica.ground_truth())
    # A new worker took over and ran the rest of the crawl's jobs; none was given up or lost.
    assert replacements
    # The first worker was forked from the crawl (no start-up), its replacement started afresh (the crawl
    # had threads by then).
    assert b"crawler.extensions.worker_side" not in victim_cmdline
    assert all(b"crawler.extensions.worker_side" in c for c in replacement_cmdlines)
    assert stats["workers/replaced"] >= 1
    assert "workers/failed" not in stats
    assert "Replacing a worker process" in stderr
    assert _records(state) == _records(without_workers.state)
    assert _cache(state) == _cache(without_workers.state)


def test_a_crawl_stopped_by_a_second_ctrl_c_leaves_no_worker_behind(
    replica: RunningReplica, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second Ctrl-C stops the reactor at once, without the engine's shutdown: the worker, stuck in a
    job that would run for an hour, is stopped with it rather than outliving the crawl."""
    truth = sorted(r["lecture_id"] for r in replica.ground_truth())
    monkeypatch.setenv(STALL_ENV, ",".join(truth))  # every page's job stalls
    wrapper = f"WORKER_JOB_WRAPPER={__name__}.stall_on_chosen_pages"
    state = tmp_path / "interrupted"
    args = crawl_args(
        replica.base_url,
        state,
        "--event-id",
        "502",
        *_settings(1, "-s", "WORKER_JOB_TIMEOUT=600", "-s", wrapper),
    )
    crawl = start_command(
        [sys.executable, "-m", "crawler.app.cli", *args],
        cwd=tmp_path,
        stdout=tmp_path / "crawl.out",
        stderr=tmp_path / "crawl.err",
    )
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while not workers and crawl.poll() is None and time.monotonic() < deadline:
            workers = _spawned_children(crawl.pid)
            time.sleep(0.05)
        assert len(workers) == 1, "no worker"
        time.sleep(2)  # the listing is read and a page's job has stalled the worker
        crawl.send_signal(signal.SIGINT)
        time.sleep(0.5)
        crawl.send_signal(signal.SIGINT)
        crawl.wait(timeout=60)
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.wait()
    (worker,) = workers
    # Ended with the crawl: the kernel's parent-death signal may land a moment after it, on a busy machine.
    deadline = time.monotonic() + 10
    while not _gone(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(worker), (tmp_path / "crawl.err").read_text()[-3000:]
