"""What runs inside a worker process of :mod:`crawler.extensions.workers`: its start-up, and a loop that
reads a job from the crawl, runs it and writes its answer back. No Scrapy here: a worker imports only the
pure modules its jobs live in, so it is ready for the crawl's first listing page sooner.

The crawl and its worker talk over one socket (a ``socketpair``), in frames: an 8-byte big-endian length,
then the payload. The first frame is the pickled job wrapper; each later one a job: its 8-byte number
``seq``, then the pickled ``(fn, args, kwargs)``, answered by the pickled ``(seq, ok, value, traceback)``
in the order the jobs came. The worker's marker, 16 bytes of memory shared with the crawl, holds the number
of the last job it took (written before the job is unpickled) and when that job started to run (after:
importing a job's module is not the job's time): from it the crawl tells a job that ran too long (or killed
its worker) from one that a stopped worker never took, without a message per job. A job the worker cannot
even unpickle is answered with that error, so the crawl never sends it again and again.
"""

from __future__ import annotations

import ctypes
import importlib
import mmap
import os
import pickle
import signal
import socket
import struct
import sys
import time
import traceback
from collections.abc import Callable, Sequence

# Imported by each worker when it starts, before its first job arrives: the modules of the crawl's jobs.
JOB_MODULES = ("crawler.cache.entry", "crawler.pages.lecture", "crawler.pages.api", "crawler.dedup.near")

FRAME_HEADER = struct.Struct("!Q")
JOB_SEQ = struct.Struct("!q")
# The marker: the last job taken, at 0, and when it started to run (``time.monotonic``; 0.0: not yet), at 8.
TAKEN = struct.Struct("q")
STARTED = struct.Struct("d")
MARKER_SIZE = TAKEN.size + STARTED.size


def import_job_modules() -> None:
    """Import the modules the jobs run: in a worker, or in the crawl before it forks one, which then
    has them (the crawl imports them anyway, most after its workers start)."""
    for module in JOB_MODULES:
        importlib.import_module(module)


def frame(payload: bytes) -> bytes:
    """``payload`` as one frame of the worker protocol."""
    return FRAME_HEADER.pack(len(payload)) + payload


def job_frame(seq: int, payload: bytes) -> bytes:
    """Job ``seq`` (``payload``: its pickled function and arguments) as one frame."""
    return FRAME_HEADER.pack(JOB_SEQ.size + len(payload)) + JOB_SEQ.pack(seq) + payload


def marker_state(marker: mmap.mmap) -> tuple[int, float]:
    """The last job a worker took, and when it started to run (0.0: not yet)."""
    return TAKEN.unpack_from(marker, 0)[0], STARTED.unpack_from(marker, TAKEN.size)[0]


def answer(
    seq: int,
    job: memoryview,
    marker: mmap.mmap,
    unusable: BaseException | None = None,
    wrapper: Callable[..., object] | None = None,
) -> bytes:
    """The pickled answer to job ``seq`` (``job``: its pickled function and arguments): its value, or the
    exception it raised (or ``unusable``, why this worker can run no job) with the worker's traceback.
    ``wrapper`` (``WORKER_JOB_WRAPPER``) runs the job as ``wrapper(fn, *args, **kwargs)``. What cannot be
    pickled is answered by a ``RuntimeError`` that says so."""
    # Taken, not yet started: the start time first, so that the crawl never pairs this job with the last's.
    STARTED.pack_into(marker, TAKEN.size, 0.0)
    TAKEN.pack_into(marker, 0, seq)
    try:
        if unusable is not None:
            raise unusable
        fn, args, kwargs = pickle.loads(job)
        STARTED.pack_into(marker, TAKEN.size, time.monotonic())
        value = fn(*args, **kwargs) if wrapper is None else wrapper(fn, *args, **kwargs)
        result: tuple[object, ...] = (seq, True, value, None)
    except BaseException as exc:  # the crawl decides what a job's failure means
        result = (seq, False, sendable_error(exc), traceback.format_exc())
    # Sending the answer is not the job's time: a large one must not make a finished job time out.
    STARTED.pack_into(marker, TAKEN.size, 0.0)
    try:
        return pickle.dumps(result, pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # an unpicklable value or exception
        what = "value" if result[1] else f"exception {type(result[2]).__name__}: {result[2]}"
        error = RuntimeError(f"the job's {what} could not be sent back: {exc!r}")
        return pickle.dumps((seq, False, error, result[3]), pickle.HIGHEST_PROTOCOL)


def sendable_error(exc: BaseException) -> BaseException:
    """``exc`` as the crawl can take it: an ``Exception`` that a future may hold. ``StopIteration`` (a
    future refuses it) and what is not an ``Exception`` (``SystemExit``, ``KeyboardInterrupt``: it would stop
    the crawl's loop) become a ``RuntimeError`` naming them."""
    if isinstance(exc, Exception) and not isinstance(exc, StopIteration | StopAsyncIteration):
        return exc
    return RuntimeError(f"the job raised {type(exc).__name__}: {exc}")


def _read_exactly(sock: socket.socket, size: int) -> bytearray | None:
    """``size`` bytes from ``sock``; None when the crawl closed it first."""
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        n = sock.recv_into(view[got:])
        if n == 0:
            return None
        got += n
    return buffer


def _read_frame(sock: socket.socket) -> bytearray | None:
    header = _read_exactly(sock, FRAME_HEADER.size)
    if header is None:
        return None
    (size,) = FRAME_HEADER.unpack(header)
    return _read_exactly(sock, size)


def serve(sock: socket.socket, marker: mmap.mmap) -> None:
    """Answer jobs until the crawl closes the socket."""
    init = _read_frame(sock)
    if init is None:
        return
    unusable: BaseException | None = None
    wrapper = None
    try:
        wrapper = pickle.loads(init)
        import_job_modules()
    except Exception as exc:  # every job is answered with it
        unusable = exc.with_traceback(None)
    while (job := _read_frame(sock)) is not None:
        (seq,) = JOB_SEQ.unpack_from(job)
        with memoryview(job) as view:
            sock.sendall(frame(answer(seq, view[JOB_SEQ.size :], marker, unusable, wrapper)))


# prctl(2)'s option that names the signal a process gets when the thread that started it ends.
_PR_SET_PDEATHSIG = 1


def end_with_crawl(crawl_pid: int) -> None:
    """Have the kernel kill this worker when the crawl's process ends (Linux): a crawl killed outright
    cannot stop a worker busy in a job, which would run on to the job's end. Elsewhere, or if the call
    fails, an idle worker still ends when its socket closes. A crawl already gone ends the worker now."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != crawl_pid:  # the crawl ended before the kernel was told
        os._exit(0)


def main(argv: Sequence[str]) -> None:
    """A worker's entry point: ``argv`` is the socket's and the marker's file descriptors, then the
    crawl's process id when the worker is to end with it (0: not)."""
    # Ctrl-C and a service manager's SIGTERM reach the whole process group: the crawl decides when its
    # workers stop (it closes their sockets, or kills them).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if len(argv) > 2 and int(argv[2]):
        end_with_crawl(int(argv[2]))
    sock = socket.socket(fileno=int(argv[0]))
    marker = mmap.mmap(int(argv[1]), MARKER_SIZE)
    try:
        serve(sock, marker)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the crawl is gone
    finally:
        sock.close()
    sys.exit(0)
