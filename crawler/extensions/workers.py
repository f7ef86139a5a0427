"""Worker processes for the crawl's CPU-bound pure steps: reading a lecture page and storing its answer in
the HTTP cache (one job, so a page's body is sent once), reading a listing page, and near-duplicate
signatures.

Scrapy runs every callback and middleware on one thread, so a page's parsing and stripping (a few
milliseconds of Python each) hold up the downloads of every other page. ``WORKER_PROCESSES`` processes
take that work; ``0`` runs it in the crawl's process (``NotConfigured``), as does a crawl without the
asyncio reactor. A job is a module-level function of picklable arguments, so its result is the same
wherever it runs.

:class:`WorkerPool` runs the processes from the crawl's event loop, without a thread: each worker is
joined to the crawl by a socket the loop watches. The first ones are forked from the crawl's process before
it has threads; a replacement is a fresh interpreter that imports only its jobs' modules
(:mod:`crawler.extensions.worker_process`). A worker holds at most two jobs, so the next is there when it
finishes one; jobs wait in the pool's queue beyond that.

- a job running longer than ``WORKER_JOB_TIMEOUT`` seconds is abandoned: its worker is killed and
  replaced, and the job fails with :class:`JobTimedOut` (``workers/timed_out``), never retried. The
  spider counts its page as unparsable and keeps the lecture from its listing.
- a worker that dies (killed, out of memory) is replaced (``workers/died``, ``workers/replaced``). The job
  it was running is tried once more (``workers/retried``) and fails with :class:`WorkerDied` if that try
  dies too; the jobs it had not started go to the new worker as they were.
- a worker that takes no job for the job timeout plus a grace period (stopped, say) has stopped answering:
  it is replaced too, and its jobs are sent again as they were.
- shutdown does not wait: idle workers are told to stop, busy ones are killed, and a thread waits for them.

The pool is built by the :class:`WorkerProcesses` extension, before the engine and so before every
middleware and pipeline, and set once on the crawler; its users take it with :func:`crawler_pool` (None:
run the step in the crawl's process).

Why not a library pool: Pebble times jobs out and replaces workers, but runs three threads of its own
that took about 0.4 s of CPU per thousand pages, a tenth of a crawl's; ``concurrent.futures`` and loky can
only break the whole pool and lose every queued job.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import mmap
import os
import pickle
import signal
import socket
import tempfile
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar, cast

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.statscollectors import StatsCollector
from scrapy.utils.misc import load_object
from scrapy.utils.reactor import is_asyncio_reactor_installed

from crawler import stats_keys as keys
from crawler.extensions import worker_side
from crawler.extensions.worker_process import WorkerProcess, fork, start_interpreter, wait_for

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

# Jobs a worker holds at once: the one it runs and the next, so it never waits on the crawl's loop.
_JOBS_PER_WORKER = 2
# How often the workers are looked at (a job running too long, a worker that takes none), at most.
_WATCH_SECONDS = 1.0
# A worker that takes no job for the job timeout plus this long has stopped answering: every running job
# ends within the timeout, and a worker starts well within this.
_STALL_GRACE_SECONDS = 30.0
_READ_SIZE = 1 << 18
# Workers in a row that die before starting any job: then they cannot start, and the pool gives up.
_DEATHS_BEFORE_GIVING_UP = 3
_DIED, _TIMED_OUT, _STALLED = "died", "timed out", "stalled"
_CRAWLER_ATTRIBUTE = "worker_pool"


def _in_main_module(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` (or the function a ``functools.partial`` wraps) is defined in the main module."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__module__", None) == "__main__"


class JobFailed(Exception):
    """A job the pool gave up on."""


class JobTimedOut(JobFailed):
    """The job ran longer than the job timeout; its worker was stopped."""


class WorkerDied(JobFailed):
    """The job's worker died twice while running it (or the pool was closed)."""


class RemoteTraceback(Exception):
    """The worker's traceback of a job's exception, set as that exception's cause."""

    def __str__(self) -> str:
        return f'\n"""\n{self.args[0]}"""'


@dataclass(eq=False)
class _Job:
    seq: int
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: Mapping[str, object]
    result: asyncio.Future[Any]
    tries: int = 1

    def name(self) -> str:
        return getattr(self.fn, "__qualname__", repr(self.fn))


@dataclass(eq=False)
class _Worker:
    process: WorkerProcess
    sock: socket.socket
    marker: mmap.mmap
    jobs: deque[_Job] = field(default_factory=deque)  # sent and not answered, in the order sent
    since: float = 0.0  # when the first of ``jobs`` could start: sent to an idle worker, or the last answer
    inbox: bytearray = field(default_factory=bytearray)
    outbox: bytearray = field(default_factory=bytearray)
    watched: bool = False  # its socket is watched by the loop


class WorkerPool:
    """``processes`` worker processes run from the crawl's event loop (see the module's description)."""

    def __init__(
        self,
        processes: int,
        job_timeout: float,
        *,
        stats: StatsCollector | None = None,
        job_wrapper: Callable[..., Any] | None = None,
        stall_after: float | None = None,
        fork_first: bool = True,
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
        self._seq = 0
        self._workers: list[_Worker] = []
        self._queue: deque[_Job] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watch: asyncio.TimerHandle | None = None
        self._closed = False
        # Workers started by start() before the crawl's loop runs may be forked (see _may_fork).
        self._fork_first = fork_first
        self._broken: str | None = None
        self._died_unstarted = 0
        self._stopping: list[threading.Thread] = []
        # Futures that a later component wants, by the request they belong to (see keep_for): held no
        # longer than the request is.
        self._kept: weakref.WeakKeyDictionary[Any, asyncio.Future[Any]] = weakref.WeakKeyDictionary()

    # -- life ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the processes now: their imports overlap the crawl's own start."""
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        while len(self._workers) < self.processes:
            self._workers.append(self._spawn())
        self._fork_first = False  # a replacement starts afresh: the crawl has threads by then

    def _spawn(self) -> _Worker:
        ours, theirs = socket.socketpair()
        with tempfile.TemporaryFile() as backing:
            backing.truncate(worker_side.MARKER_SIZE)
            marker = mmap.mmap(backing.fileno(), worker_side.MARKER_SIZE)
            fds = (theirs.fileno(), backing.fileno())
            process: WorkerProcess
            try:
                if self._may_fork():
                    worker_side.import_job_modules()
                    process = fork(fds)
                else:
                    process = start_interpreter(fds)
            finally:
                theirs.close()
        ours.setblocking(False)
        worker = _Worker(process, ours, marker)
        self._write(worker, worker_side.frame(pickle.dumps(self.job_wrapper, pickle.HIGHEST_PROTOCOL)))
        self._watch_socket(worker)
        return worker

    def _may_fork(self) -> bool:
        """Whether the next worker is forked from the crawl's process rather than started afresh: only the
        first ones, when this process has no other thread yet (a fork copies only the thread that forks,
        so a lock another thread held would stay locked in the child) and no worker was replaced. A
        forked worker has every module already and costs no start-up; a fresh one imports its jobs'
        modules (about 0.3 s of CPU)."""
        return self._fork_first and hasattr(os, "fork") and threading.active_count() == 1

    def close(self) -> None:
        """Stop the workers without waiting for them: a thread of its own waits. Jobs not yet answered
        fail with :class:`WorkerDied`."""
        self._closed = True
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        workers, self._workers = self._workers, []
        for worker in workers:
            self._retire(worker, kill=bool(worker.jobs))
        unanswered = [job for worker in workers for job in worker.jobs] + list(self._queue)
        self._queue.clear()
        for job in unanswered:
            if not job.result.done():
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                    job.result.set_exception(WorkerDied(self._broken or "the worker pool was closed"))
        self._kept.clear()

    def _retire(self, worker: _Worker, *, kill: bool) -> None:
        """Forget ``worker``: kill it, or close its socket (an idle worker then ends), and wait for it on a
        thread of its own, never on the loop. The thread is not a daemon: the crawl's process reaps its
        workers before it exits (its CPU time then counts theirs), at most ``STOP_SECONDS`` later."""
        if worker.watched and self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(worker.sock.fileno())
            self._loop.remove_writer(worker.sock.fileno())
        worker.watched = False
        if kill:
            with contextlib.suppress(ProcessLookupError):
                worker.process.send_signal(signal.SIGKILL)
        worker.sock.close()
        worker.marker.close()
        stopping = threading.Thread(target=wait_for, args=(worker.process,), name="worker-stop")
        stopping.start()
        self._stopping.append(stopping)

    def wait_stopped(self, timeout: float | None = None) -> bool:
        """Wait for the stopped workers to end (for tests and benchmarks); True when they have."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._stopping:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._stopping)

    def pids(self) -> list[int]:
        """The process ids of the workers running now (a benchmark counts their CPU time)."""
        return [w.process.pid for w in self._workers if w.process.poll() is None]

    # -- jobs ---------------------------------------------------------------------------------------------

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` run in a worker without blocking the crawl. Raises what the job raised,
        or :class:`JobFailed`."""
        return await self.submit(fn, *args, **kwargs)

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[T]:
        """Queue the job; the future settles on the crawl's event loop. Raises ValueError for a function of
        the main module, which a worker does not run (it never imports the crawl's main module)."""
        loop = asyncio.get_running_loop()
        if self._broken is not None:  # as every job it held: the caller's failure path takes it
            failed: asyncio.Future[T] = loop.create_future()
            failed.set_exception(WorkerDied(self._broken))
            return failed
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        if _in_main_module(fn):
            raise ValueError(
                f"{getattr(fn, '__qualname__', fn)!r} is defined in the main module: a worker job must be a "
                "function of a module a worker can import"
            )
        if self._loop is None:
            self._loop = loop
            self.start()
            for worker in self._workers:
                self._watch_socket(worker)
        self._seq += 1
        job = _Job(self._seq, fn, args, kwargs, loop.create_future())
        self._count(keys.WORKERS_JOBS)
        self._queue.append(job)
        self._dispatch()
        self._watch_soon()
        return cast("asyncio.Future[T]", job.result)

    def _dispatch(self) -> None:
        """Send queued jobs to the workers with room for them, the least busy first."""
        while self._queue and self._workers:
            worker = min(self._workers, key=lambda w: len(w.jobs))
            if len(worker.jobs) >= _JOBS_PER_WORKER:
                return
            job = self._queue.popleft()
            if job.result.done():  # cancelled by its caller
                continue
            try:
                payload = pickle.dumps((job.fn, job.args, job.kwargs), pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # an argument that cannot be sent: the caller's error
                self._settle(job, error=exc)
                continue
            if not worker.jobs:
                worker.since = time.monotonic()
            worker.jobs.append(job)
            self._write(worker, worker_side.job_frame(job.seq, payload))

    def _write(self, worker: _Worker, frame: bytes) -> None:
        """Send a frame now as far as the socket takes it; the loop sends the rest when it can."""
        idle = not worker.outbox
        worker.outbox += frame
        if idle:
            self._flush(worker)

    def _flush(self, worker: _Worker) -> None:
        try:
            while worker.outbox:
                sent = worker.sock.send(worker.outbox)
                del worker.outbox[:sent]
        except BlockingIOError:
            pass
        except (BrokenPipeError, ConnectionResetError):
            # The worker is gone. Its socket reads as closed once the answers it sent before are read:
            # the reader replaces it then, so that a job it finished is not charged a try.
            worker.outbox.clear()
        except OSError as exc:
            worker.outbox.clear()
            self._lost(worker, f"its socket failed ({exc})", _DIED)
            return
        if worker.watched and self._loop is not None:
            if worker.outbox:
                self._loop.add_writer(worker.sock.fileno(), self._flush, worker)
            else:
                self._loop.remove_writer(worker.sock.fileno())

    def _watch_socket(self, worker: _Worker) -> None:
        if self._loop is None or worker.watched:
            return
        worker.watched = True
        self._loop.add_reader(worker.sock.fileno(), self._readable, worker)
        if worker.outbox:
            self._loop.add_writer(worker.sock.fileno(), self._flush, worker)

    def _readable(self, worker: _Worker) -> None:
        try:
            data = worker.sock.recv(_READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._lost(worker, f"it died (exit code {worker.process.poll()})", _DIED)
            return
        worker.inbox += data
        header = worker_side.FRAME_HEADER
        while len(worker.inbox) >= header.size:
            (size,) = header.unpack_from(worker.inbox)
            end = header.size + size
            if len(worker.inbox) < end:
                return
            job = worker.jobs[0] if worker.jobs else None
            try:
                with memoryview(worker.inbox) as view:
                    seq, ok, value, trace = pickle.loads(view[header.size : end])
            except Exception as exc:  # an answer of a type this process cannot import
                seq, ok, value, trace = (
                    job.seq if job else -1,
                    False,
                    RuntimeError(f"unreadable answer: {exc!r}"),
                    None,
                )
            del worker.inbox[:end]
            if job is None or job.seq != seq:
                self._lost(worker, f"it answered job {seq} out of turn", _DIED)
                return
            worker.jobs.popleft()
            worker.since = time.monotonic()
            if ok:
                self._settle(job, value=value)
            else:
                if trace is not None:
                    value.__cause__ = RemoteTraceback(trace)
                self._settle(job, error=value)
        self._dispatch()

    @staticmethod
    def _settle(job: _Job, *, value: Any = None, error: BaseException | None = None) -> None:
        if job.result.done():  # cancelled by its caller
            return
        if error is None:
            job.result.set_result(value)
            return
        try:
            job.result.set_exception(error)
        except TypeError:  # StopIteration, which a future refuses
            job.result.set_exception(RuntimeError(f"the job raised {type(error).__name__}: {error}"))

    def _lost(self, worker: _Worker, why: str, cause: str, taken: int | None = None) -> None:
        """Replace ``worker``, lost for ``cause`` (``_DIED``, ``_TIMED_OUT`` or ``_STALLED``; ``taken``: the
        job its marker named when that was judged). The job it was running fails (it timed out) or is
        tried again (it died); the jobs it had not started are sent again as they were."""
        if worker not in self._workers:
            return
        self._workers.remove(worker)
        jobs = list(worker.jobs)
        if taken is None:
            taken, _ = worker_side.marker_state(worker.marker)
        running = jobs[0] if jobs and taken == jobs[0].seq else None
        self._retire(worker, kill=True)
        logger.warning("Replacing a worker process (pid %d): %s", worker.process.pid, why)
        self._count("workers/replaced")
        self._queue.extendleft(reversed([job for job in jobs if job is not running]))
        if running is not None and cause == _TIMED_OUT:
            self._count("workers/timed_out")
            self._fail(running, JobTimedOut(f"{running.name()} ran longer than {self.job_timeout:g} s"))
        elif running is not None:
            self._again(running, why)
        if cause == _DIED:
            self._count("workers/died")
            self._died_unstarted = self._died_unstarted + 1 if taken == 0 else 0
        if self._died_unstarted >= _DEATHS_BEFORE_GIVING_UP:
            # Workers that die before starting any job cannot start at all: replacing them would loop.
            self._give_up(
                f"{self._died_unstarted} worker processes in a row died before starting a job: {why}"
            )
            return
        try:
            self._workers.append(self._spawn())
        except OSError as exc:  # no process, no descriptor left: every job waiting would wait forever
            self._give_up(f"no worker could be started in its place ({exc})")
            return
        self._dispatch()

    def _give_up(self, why: str) -> None:
        logger.error("The worker processes are given up: %s", why)
        self._broken = f"the worker processes were given up: {why}"
        self.close()

    def _again(self, job: _Job, why: str) -> None:
        """Queue a job whose worker died once more, or give it up after its second try."""
        if job.tries >= 2:
            self._fail(job, WorkerDied(f"{job.name()}: {why}, on its second try too"))
            return
        job.tries += 1
        logger.warning("A worker job (%s) is tried again: %s", job.name(), why)
        self._count("workers/retried")
        self._queue.appendleft(job)

    def _fail(self, job: _Job, error: JobFailed) -> None:
        logger.warning("A worker job was given up: %s", error)
        self._count("workers/failed")
        self._settle(job, error=error)

    def _watch_soon(self) -> None:
        if self._watch is None and self._loop is not None and not self._closed:
            every = min(_WATCH_SECONDS, self.job_timeout / 2, self.stall_after / 2)
            self._watch = self._loop.call_later(every, self._look)

    def _look(self) -> None:
        self._watch = None
        if self._closed:
            return
        now = time.monotonic()
        for worker in list(self._workers):
            if not worker.jobs:
                continue
            taken, started = worker_side.marker_state(worker.marker)
            if taken == worker.jobs[0].seq and started:
                if now - started > self.job_timeout:
                    self._lost(worker, f"a job ran longer than {self.job_timeout:g} s", _TIMED_OUT, taken)
            elif now - worker.since > self.stall_after:
                self._lost(worker, f"it took no job for {self.stall_after:g} s", _STALLED, taken)
        if self._queue or any(w.jobs for w in self._workers):
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
        self.trigger: Any = None  # the reactor's shutdown trigger that stops the pool

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WorkerProcesses:
        _set_pool(crawler, None)
        settings = crawler.settings
        processes = settings.getint("WORKER_PROCESSES")
        if processes <= 0:
            raise NotConfigured("WORKER_PROCESSES is 0: every step runs in the crawl's process")
        if not is_asyncio_reactor_installed():
            raise NotConfigured("worker processes need the asyncio reactor")
        if os.name != "posix":
            raise NotConfigured("worker processes need a POSIX system")
        wrapper = settings.get("WORKER_JOB_WRAPPER")
        pool = WorkerPool(
            processes,
            settings.getfloat("WORKER_JOB_TIMEOUT"),
            stats=crawler.stats,
            job_wrapper=load_object(wrapper) if wrapper else None,
        )
        pool.start()
        crawler.stats.set_value(keys.WORKERS_PROCESSES, processes)
        _set_pool(crawler, pool)
        extension = cls(crawler, pool)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        # A second Ctrl-C stops the reactor without stopping the engine: the workers are stopped then too
        # (a busy one would outlive the crawl).
        extension.trigger = _reactor().addSystemEventTrigger("before", "shutdown", pool.close)
        return extension

    def engine_stopped(self) -> None:
        self.pool.close()
        if self.trigger is not None:
            _reactor().removeSystemEventTrigger(self.trigger)
            self.trigger = None


def _reactor() -> Any:
    """The installed reactor (its interface's stubs declare ``self`` and so misplace every argument)."""
    from twisted.internet import reactor

    return reactor


def _set_pool(crawler: Crawler, pool: WorkerPool | None) -> None:
    if getattr(crawler, _CRAWLER_ATTRIBUTE, None) is not None:
        raise RuntimeError("this crawler has its worker pool already")
    setattr(crawler, _CRAWLER_ATTRIBUTE, pool)


def crawler_pool(crawler: Crawler | None) -> WorkerPool | None:
    """The worker pool the :class:`WorkerProcesses` extension set on ``crawler`` when the crawler was
    built (before its engine, middlewares and pipelines); None: run every step in the crawl's process."""
    return cast("WorkerPool | None", getattr(crawler, _CRAWLER_ATTRIBUTE, None))
