"""Worker processes for the crawl's CPU-bound pure steps: reading a lecture page, and stripping and
storing a response in the HTTP cache.

Scrapy runs every callback and middleware on one thread, so a page's parsing and stripping (a few
milliseconds of Python each) hold up the downloads of every other page. ``WORKER_PROCESSES`` worker
processes take that work and leave the crawl's process with Scrapy's own; ``0`` runs it in the crawl's
process (``NotConfigured``), as does a crawl without the asyncio reactor. A job is a module-level function
of picklable arguments, so its result is the same wherever it runs.

The workers talk to the crawl over their standard input and output (length-prefixed pickles), read and
written by the crawl's event loop: no thread in the crawl's process competes with it for the interpreter.
A worker that dies (killed, out of memory) fails its jobs over to the crawl's process, and every later
job runs there too; ``workers/broken`` says so. The processes start with the crawl (their imports overlap
the crawl's own start) and stop when the engine stops, after the HTTP cache has written its last entry.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import pickle
import struct
import subprocess
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, ParamSpec, TypeVar

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.reactor import is_asyncio_reactor_installed

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

STAT_PROCESSES = "workers/processes"
STAT_JOBS = "workers/jobs"
STAT_BROKEN = "workers/broken"
STAT_INLINE = "workers/inline_jobs"

_HEADER = struct.Struct("!I")
# Linux's default limit for an unprivileged process (/proc/sys/fs/pipe-max-size).
_PIPE_BYTES = 1 << 20


class WorkerDied(Exception):
    """The worker process running a job exited before it answered."""


# -- the worker's side ----------------------------------------------------------------------------------


def _read_frame(stream: BinaryIO) -> bytes | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    return data if len(data) == size else None


def serve(requests: BinaryIO, answers: BinaryIO) -> None:
    """Answer jobs ``(job_id, fn, args, kwargs)`` with ``(job_id, ok, result or exception)`` until the
    requests end."""
    while (frame := _read_frame(requests)) is not None:
        job_id, fn, args, kwargs = pickle.loads(frame)
        try:
            answer = (job_id, True, fn(*args, **kwargs))
        except Exception as exc:  # the crawl re-raises it, as if the job had run there
            answer = (job_id, False, exc)
        try:
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an exception that does not pickle
            data = pickle.dumps((job_id, False, RuntimeError(f"{type(exc).__name__}: {exc}")))
        answers.write(_HEADER.pack(len(data)) + data)
        answers.flush()


def main() -> None:
    # The answers get standard output to themselves: anything a job prints goes to standard error.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    # Imported before the first job arrives, not while it waits.
    for module in ("crawler.httpcache", "crawler.pages.lecture"):
        importlib.import_module(module)

    serve(sys.stdin.buffer, answers)


# -- the crawl's side -----------------------------------------------------------------------------------


def _widen(fd: int) -> None:
    """A pipe that holds a few whole pages, so a job is written in one call rather than in 64 KiB pieces
    with the event loop waiting for the worker in between (Linux; elsewhere the pipe stays as it is)."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass


class _Answers(asyncio.Protocol):
    """Reads one worker's answers and settles the futures of its jobs."""

    def __init__(self, worker: _Worker) -> None:
        self.worker = worker
        self.buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self.buffer)
            if len(self.buffer) < _HEADER.size + size:
                return
            frame = bytes(self.buffer[_HEADER.size : _HEADER.size + size])
            del self.buffer[: _HEADER.size + size]
            job_id, ok, value = pickle.loads(frame)
            future = self.worker.pending.pop(job_id, None)
            if future is None or future.done():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def connection_lost(self, exc: Exception | None) -> None:
        self.worker.died(exc)


class _Worker:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.requests: asyncio.WriteTransport | None = None
        self.alive = True

    def died(self, exc: Exception | None) -> None:
        if not self.alive:
            return
        self.alive = False
        pending, self.pending = self.pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(
                    WorkerDied(f"worker {self.process.pid} exited: {exc or 'end of output'}")
                )


class WorkerProcesses:
    """``WORKER_PROCESSES`` Python processes running :func:`serve`, each job sent to the least busy."""

    def __init__(self, crawler: Crawler, processes: int) -> None:
        self.crawler = crawler
        self.processes = processes
        self.broken = False
        self.jobs = 0
        self.inline_jobs = 0
        self._next_id = 0
        self._workers: list[_Worker] = []
        self._started: asyncio.Task[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WorkerProcesses:
        processes = crawler.settings.getint("WORKER_PROCESSES")
        if processes <= 0:
            raise NotConfigured("WORKER_PROCESSES is 0: every step runs in the crawl's process")
        if not is_asyncio_reactor_installed():
            raise NotConfigured("worker processes need the asyncio reactor")
        extension = cls(crawler, processes)
        extension.spawn()
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def spawn(self) -> None:
        """Start the processes now; their pipes join the event loop once it runs."""
        for _ in range(self.processes):
            process = subprocess.Popen(
                [sys.executable, "-m", "crawler.extensions.workers"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
            )
            assert process.stdin is not None and process.stdout is not None
            for pipe in (process.stdin, process.stdout):
                _widen(pipe.fileno())
            self._workers.append(_Worker(process))

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        for worker in self._workers:
            assert worker.process.stdin is not None and worker.process.stdout is not None
            worker.requests, _ = await loop.connect_write_pipe(asyncio.Protocol, worker.process.stdin)
            await loop.connect_read_pipe(lambda w=worker: _Answers(w), worker.process.stdout)  # type: ignore[misc]

    async def _ready(self) -> None:
        if self._started is None:
            self._started = asyncio.ensure_future(self._connect())
        await self._started

    def _least_busy(self) -> _Worker | None:
        alive = [w for w in self._workers if w.alive and w.requests is not None]
        return min(alive, key=lambda w: len(w.pending)) if alive else None

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)``, run in a worker without blocking the crawl; in the crawl's process
        when no worker is left."""
        if not self.broken:
            await self._ready()
            worker = self._least_busy()
            if worker is not None:
                future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
                self._next_id += 1
                worker.pending[self._next_id] = future
                data = pickle.dumps((self._next_id, fn, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
                assert worker.requests is not None
                worker.requests.write(_HEADER.pack(len(data)) + data)
                self.jobs += 1
                try:
                    return await future
                except WorkerDied as exc:
                    self._break(exc)
            else:
                self._break(WorkerDied("no worker process is running"))
        self.inline_jobs += 1
        return fn(*args, **kwargs)

    def pids(self) -> list[int]:
        """The process ids of the workers still running (for a benchmark that counts their CPU time)."""
        return [w.process.pid for w in self._workers if w.alive]

    def _break(self, exc: BaseException) -> None:
        if not self.broken:
            self.broken = True
            logger.warning("A worker process died (%s): the rest of the crawl runs in its own process", exc)

    def close(self) -> None:
        for worker in self._workers:
            if worker.requests is not None and not worker.requests.is_closing():
                worker.requests.abort()  # every job has been answered: nothing is left to send
            if worker.process.stdin is not None:
                # The end of its input stops the worker; the transport would only close it on the loop's
                # next turn, and this waits for the worker now.
                worker.process.stdin.close()
        for worker in self._workers:
            try:
                worker.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
            worker.alive = False
        self._workers = []

    def engine_stopped(self) -> None:
        self.close()
        stats = self.crawler.stats
        assert stats is not None
        stats.set_value(STAT_PROCESSES, self.processes)
        stats.set_value(STAT_JOBS, self.jobs)
        if self.broken:
            stats.set_value(STAT_BROKEN, True)
        if self.inline_jobs:
            stats.set_value(STAT_INLINE, self.inline_jobs)


def worker_processes(crawler: Crawler | None) -> WorkerProcesses | None:
    """The crawl's worker processes, or None when it runs every step in its own process."""
    if crawler is None:
        return None
    try:
        return crawler.get_extension(WorkerProcesses)
    except RuntimeError:  # the extensions are not built yet
        return None


if __name__ == "__main__":
    main()
