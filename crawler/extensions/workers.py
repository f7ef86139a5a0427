"""Worker processes for the crawl's CPU-bound pure steps: reading a lecture page and storing its answer in
the HTTP cache (one job, so a page's body is sent once), reading a listing page, and near-duplicate
signatures.

Scrapy runs every callback and middleware on one thread, so a page's parsing and stripping (a few
milliseconds of Python each) hold up the downloads of every other page. ``WORKER_PROCESSES`` processes of
a Pebble process pool take that work; ``0`` runs it in the crawl's process (``NotConfigured``), as does a
crawl without the asyncio reactor. A job is a module-level function of picklable arguments, so its result
is the same wherever it runs.

:class:`WorkerPool` watches over the Pebble pool:

- a job running longer than ``WORKER_JOB_TIMEOUT`` seconds is abandoned: its worker is stopped and
  replaced, and the job fails with :class:`JobTimedOut` (``workers/timed_out``), never retried. The
  spider counts its page as unparsable and keeps the lecture from its listing.
- a worker that dies (killed, out of memory) may have held the lock of the pool's task pipe or read part
  of a task from it, and Pebble gives a pool up when a worker dies while none runs a job: so a death
  replaces the whole Pebble pool (``workers/died``, ``workers/pools_replaced``). The job the dead worker
  was running is tried once more (``workers/retried``) and fails with :class:`WorkerDied` if that try
  dies too; the pool's other unfinished jobs are sent to the new one as they were.
- a pool that finishes no job for the job timeout plus a grace period while jobs wait has stopped
  answering: it is replaced too, and the jobs it had started count a try.
- shutdown does not wait: the pool is told to stop and a thread of its own waits for its processes.

Every later job still goes to a worker. The pool is built by the :class:`WorkerProcesses` extension,
before the engine and so before every middleware and pipeline, and set once on the crawler; its users
take it with :func:`crawler_pool` (None: run the step in the crawl's process).

Why Pebble: it times out a job and replaces the worker that ran it (``concurrent.futures`` and loky can
only break the whole pool and lose every queued job), and it tells which job a dead worker held.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import multiprocessing
import multiprocessing.spawn
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar, cast

from pebble import ProcessExpired, ProcessPool
from pebble.pool.process import WORKERS_NAME
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.statscollectors import StatsCollector
from scrapy.utils.misc import load_object
from scrapy.utils.reactor import is_asyncio_reactor_installed

from crawler import stats_keys as keys
from crawler.extensions import worker_side

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

STAT_PROCESSES = keys.WORKERS_PROCESSES
STAT_JOBS = keys.WORKERS_JOBS
STAT_TIMED_OUT = keys.WORKERS_TIMED_OUT
STAT_DIED = keys.WORKERS_DIED
STAT_RETRIED = keys.WORKERS_RETRIED
STAT_FAILED = keys.WORKERS_FAILED
STAT_POOLS_REPLACED = keys.WORKERS_POOLS_REPLACED

# How often the pool is looked at (a pool that Pebble gave up on, or one that stopped answering).
_WATCH_SECONDS = 1.0
# A pool with jobs waiting that finishes none for the job timeout plus this long has stopped answering:
# every running job ends within the timeout, and a replaced worker starts well within this.
_STALL_GRACE_SECONDS = 30.0
_CRAWLER_ATTRIBUTE = "worker_pool"


# What a spawned process is told to import before it starts: the parent's main module among the rest.
_MAIN_KEYS = ("init_main_from_name", "init_main_from_path")


def _without_main(preparation_data: Callable[[str], dict[str, Any]]) -> Callable[[str], dict[str, Any]]:
    """``multiprocessing.spawn.get_preparation_data`` that tells Pebble's worker processes not to import
    the parent's main module (every other process is told as before).

    A spawned process runs the parent's main module again before anything else, so that the functions
    defined there can be unpickled. A worker's jobs and its initializer are functions of modules of their
    own (see the module's description), and the crawl's main module is ``eventcrawl``'s command line:
    running it again imported Scrapy and every command (about 800 modules, 0.4 s of CPU) into each worker,
    which needs neither.
    """

    @functools.wraps(preparation_data)
    def worker_preparation_data(name: str) -> dict[str, Any]:
        data = preparation_data(name)
        if name == WORKERS_NAME:
            for key in _MAIN_KEYS:
                data.pop(key, None)
        return data

    worker_preparation_data.skips_main_for_workers = True  # type: ignore[attr-defined]
    return worker_preparation_data


def _in_main_module(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` (or the function a ``functools.partial`` wraps) is defined in the main module."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__module__", None) == "__main__"


def _spawn_workers_without_main() -> None:
    """Install :func:`_without_main` once, before the first worker process is spawned."""
    current = multiprocessing.spawn.get_preparation_data
    if not getattr(current, "skips_main_for_workers", False):
        wrapped = _without_main(current)
        multiprocessing.spawn.get_preparation_data = wrapped  # type: ignore[assignment]  # same signature


class JobFailed(Exception):
    """A job the pool gave up on."""


class JobTimedOut(JobFailed):
    """The job ran longer than the job timeout; its worker was stopped."""


class WorkerDied(JobFailed):
    """The job's worker died twice while running it (or its pool was gone twice)."""


@dataclass(eq=False)
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: Mapping[str, object]
    result: asyncio.Future[Any]
    tries: int = 1
    running: Future[Any] | None = field(default=None, repr=False)

    def name(self) -> str:
        return getattr(self.fn, "__qualname__", repr(self.fn))


class WorkerPool:
    """``processes`` Pebble worker processes, watched over (see the module's description)."""

    def __init__(
        self,
        processes: int,
        job_timeout: float,
        stats: StatsCollector | None = None,
        job_wrapper: Callable[..., Any] | None = None,
        stall_after: float | None = None,
    ) -> None:
        if processes <= 0:
            raise ValueError("a worker pool needs at least one process")
        if job_timeout <= 0:
            raise ValueError("the job timeout must be positive")
        self.processes = processes
        self.job_timeout = job_timeout
        self.stats = stats
        self.job_wrapper = job_wrapper
        self.stall_after = job_timeout + _STALL_GRACE_SECONDS if stall_after is None else stall_after
        self.jobs = 0
        self._context = multiprocessing.get_context("spawn")
        _spawn_workers_without_main()
        self._pool: ProcessPool | None = None
        self._jobs: set[_Job] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watch: asyncio.TimerHandle | None = None
        self._progress = time.monotonic()
        self._closed = False
        self._stopping: list[threading.Thread] = []
        # Futures that a later component wants, by the request they belong to (see keep_for): held no
        # longer than the request is.
        self._kept: weakref.WeakKeyDictionary[Any, asyncio.Future[Any]] = weakref.WeakKeyDictionary()

    # -- life ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the processes now: their imports overlap the crawl's own start."""
        if self._pool is None:
            self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPool:
        pool = ProcessPool(
            max_workers=self.processes,
            initializer=worker_side.warm_up,
            initargs=[self.job_wrapper],
            context=self._context,
        )
        pool.active  # noqa: B018  # the property starts the pool's processes
        return pool

    def close(self) -> None:
        """Stop the workers without waiting for them: a thread of its own waits. Jobs not yet answered
        fail with :class:`WorkerDied`."""
        self._closed = True
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if self._pool is not None:
            self._stop(self._pool)
            self._pool = None
        for job in self._jobs:
            if not job.result.done():
                job.result.set_exception(WorkerDied("the worker pool was closed"))
        self._jobs.clear()
        self._kept.clear()

    def _stop(self, pool: ProcessPool) -> None:
        pool.stop()
        # join() waits for Pebble's threads and stops its processes (up to a few seconds for a worker
        # stuck in C code): never on the reactor's thread.
        stopping = threading.Thread(target=pool.join, name="worker-pool-stop", daemon=True)
        stopping.start()
        self._stopping.append(stopping)

    def wait_stopped(self, timeout: float | None = None) -> bool:
        """Wait for the stopped pools' processes to end (for tests and benchmarks); True when they have."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._stopping:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._stopping)

    def pids(self) -> list[int]:
        """The process ids of the workers running now (a benchmark counts their CPU time)."""
        return [
            p.pid for p in multiprocessing.active_children() if p.pid is not None and p.name == WORKERS_NAME
        ]

    # -- jobs ---------------------------------------------------------------------------------------------

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` run in a worker without blocking the crawl. Raises what the job raised,
        or :class:`JobFailed`."""
        return await self.submit(fn, *args, **kwargs)

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[T]:
        """Send the job now; the future settles on the crawl's event loop. Raises ValueError for a function
        of the main module, which a worker does not run (see :func:`_without_main`)."""
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        if _in_main_module(fn):
            raise ValueError(
                f"{getattr(fn, '__qualname__', fn)!r} is defined in the main module: a worker job must be a "
                "function of a module a worker can import"
            )
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        job = _Job(fn, args, kwargs, loop.create_future())
        if not self._jobs:
            self._progress = time.monotonic()
        self._jobs.add(job)
        self.jobs += 1
        self._count(STAT_JOBS)
        self._send(job)
        self._watch_soon()
        return cast("asyncio.Future[T]", job.result)

    def _send(self, job: _Job) -> None:
        job.running = None
        self.start()
        assert self._pool is not None
        call = (job.fn, job.args, job.kwargs)
        try:
            running = self._pool.schedule(worker_side.call, args=call, timeout=self.job_timeout)
        except RuntimeError as exc:  # Pebble gave up on this pool
            self._replace(f"Pebble gave the pool up ({exc})")
            self.start()
            assert self._pool is not None
            running = self._pool.schedule(worker_side.call, args=call, timeout=self.job_timeout)
        job.running = running
        running.add_done_callback(lambda done: self._answered(job, done))

    def _answered(self, job: _Job, done: Future[Any]) -> None:
        """On one of Pebble's threads: the rest happens on the crawl's event loop."""
        if self._loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: the crawl is over
            self._loop.call_soon_threadsafe(self._settle, job, done)

    def _settle(self, job: _Job, done: Future[Any]) -> None:
        if done is not job.running or job.result.done():
            return  # an answer from a pool that was replaced, or a job already given up
        self._progress = time.monotonic()
        error = done.exception()
        if error is None:
            self._finish(job)
            job.result.set_result(done.result())
        elif isinstance(error, TimeoutError) and error.__cause__ is None:
            # Pebble's own (a job's exception comes with the worker's traceback as its cause). Pebble
            # stopped the worker holding the pool's lock, so the pool stays sound; it starts another.
            self._count(STAT_TIMED_OUT)
            self._fail(job, JobTimedOut(f"{job.name()} ran longer than {self.job_timeout:g} s"))
        elif isinstance(error, ProcessExpired):
            # A worker that died may have held the lock of the pool's task pipe, or read part of the next
            # task from it: the whole pool is replaced, and this job tried once more.
            self._count(STAT_DIED)
            self._replace(f"a worker (pid {error.pid}) died with exit code {error.exitcode}", charged={job})
        elif isinstance(error, BrokenProcessPool):
            # Pebble gave the pool up and failed every job it held (the first answer replaces it; the
            # others come from the old pool and are ignored).
            self._replace(f"Pebble gave the pool up ({error})", charged={job})
        else:  # raised by the job: the caller gets it as if the job had run here
            self._finish(job)
            job.result.set_exception(error)

    def _again(self, job: _Job, why: str) -> None:
        """Send a job whose run failed once more, or give it up after its second."""
        if job.tries >= 2:
            self._fail(job, WorkerDied(f"{job.name()}: {why}, on its second try too"))
            return
        job.tries += 1
        logger.warning("A worker job (%s) is tried again: %s", job.name(), why)
        self._count(STAT_RETRIED)
        self._send(job)

    def _fail(self, job: _Job, error: JobFailed) -> None:
        logger.warning("A worker job was given up: %s", error)
        self._count(STAT_FAILED)
        self._finish(job)
        job.result.set_exception(error)

    def _finish(self, job: _Job) -> None:
        self._jobs.discard(job)
        job.running = None

    def _replace(self, why: str, charged: set[_Job] | frozenset[_Job] = frozenset()) -> None:
        """A new Pebble pool for the old one. The old one's unfinished jobs go to the new one: a try is
        counted for the ``charged`` ones (see :meth:`_again`), the others are sent as they were."""
        unfinished = [j for j in self._jobs if j.running is not None and not j.result.done()]
        logger.warning(
            "Replacing the worker processes: %s; %d unfinished jobs go to the new ones", why, len(unfinished)
        )
        self._count(STAT_POOLS_REPLACED)
        old, self._pool = self._pool, None
        if old is not None:
            self._stop(old)
        self._progress = time.monotonic()
        for job in unfinished:
            job.running = None
        for job in unfinished:
            if job in charged:
                self._again(job, why)
            elif not job.result.done():
                self._send(job)

    def _watch_soon(self) -> None:
        if self._watch is None and self._loop is not None and not self._closed:
            self._watch = self._loop.call_later(_WATCH_SECONDS, self._look)

    def _look(self) -> None:
        self._watch = None
        if self._closed or not self._jobs:
            return
        if self._pool is not None and not self._pool.active:
            self._replace("Pebble gave the pool up (a worker died while no job ran)")
        elif time.monotonic() - self._progress > self.stall_after:
            # A job a worker had started may be what blocks the pool: those count a try.
            started = {j for j in self._jobs if j.running is not None and j.running.running()}
            self._replace(f"no job ended for {self.stall_after:g} s", charged=started)
        self._watch_soon()

    def _count(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)

    # -- a job's future kept for a later component ----------------------------------------------------------

    def keep_for(self, request: Any, future: asyncio.Future[Any]) -> None:
        """Keep ``future`` for the component that will get ``request``'s response (:meth:`kept_for`): the
        HTTP cache reads a lecture page in the job that stores it, for the spider."""
        self._kept[request] = future

    def kept_for(self, request: Any) -> asyncio.Future[Any] | None:
        """The future kept for ``request`` (once), or None."""
        return self._kept.pop(request, None)


class WorkerProcesses:
    """The extension that builds the crawl's :class:`WorkerPool` and stops it when the engine stops
    (after the HTTP cache has written its last entry)."""

    def __init__(self, crawler: Crawler, pool: WorkerPool) -> None:
        self.crawler = crawler
        self.pool = pool

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WorkerProcesses:
        _set_pool(crawler, None)
        settings = crawler.settings
        processes = settings.getint("WORKER_PROCESSES")
        if processes <= 0:
            raise NotConfigured("WORKER_PROCESSES is 0: every step runs in the crawl's process")
        if not is_asyncio_reactor_installed():
            raise NotConfigured("worker processes need the asyncio reactor")
        wrapper = settings.get("WORKER_JOB_WRAPPER")
        assert crawler.stats is not None
        pool = WorkerPool(
            processes,
            settings.getfloat("WORKER_JOB_TIMEOUT"),
            stats=crawler.stats,
            job_wrapper=load_object(wrapper) if wrapper else None,
        )
        pool.start()
        crawler.stats.set_value(STAT_PROCESSES, processes)
        _set_pool(crawler, pool)
        extension = cls(crawler, pool)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def engine_stopped(self) -> None:
        self.pool.close()


def _set_pool(crawler: Crawler, pool: WorkerPool | None) -> None:
    if getattr(crawler, _CRAWLER_ATTRIBUTE, None) is not None:
        raise RuntimeError("this crawler has its worker pool already")
    setattr(crawler, _CRAWLER_ATTRIBUTE, pool)


def crawler_pool(crawler: Crawler | None) -> WorkerPool | None:
    """The worker pool the :class:`WorkerProcesses` extension set on ``crawler`` when the crawler was
    built (before its engine, middlewares and pipelines); None: run every step in the crawl's process."""
    return cast("WorkerPool | None", getattr(crawler, _CRAWLER_ATTRIBUTE, None))


__all__ = [
    "JobFailed",
    "JobTimedOut",
    "WorkerDied",
    "WorkerPool",
    "WorkerProcesses",
    "crawler_pool",
]
