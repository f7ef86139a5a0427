"""How a worker process of :mod:`crawler.extensions.workers` starts and ends: forked from the crawl's
process (no start-up: it has every module already) or a fresh interpreter with the crawl's ``sys.path``
that imports only what :mod:`crawler.extensions.worker_side` needs; waited for on a thread, never on the
crawl's loop."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

from crawler.extensions import worker_side

# A worker's first lines, run with the crawl's sys.path: then only what worker_side imports.
BOOTSTRAP = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "from crawler.extensions.worker_side import main; main(sys.argv[2:])"
)


# Seconds an idle worker told to stop has before it is killed.
STOP_SECONDS = 5.0


def _crawl_to_end_with() -> int:
    """The crawl's process id, for a worker to end with it (see ``worker_side.end_with_crawl``); 0 when
    the worker is started from another thread than the main one: the kernel's signal comes when the
    thread that started the worker ends, which for another thread may be long before the crawl does."""
    return os.getpid() if threading.current_thread() is threading.main_thread() else 0


def start_interpreter(fds: tuple[int, int]) -> subprocess.Popen[bytes]:
    """A worker in a fresh interpreter with the crawl's ``sys.path``, given the descriptors ``fds``."""
    path = json.dumps([str(entry) for entry in sys.path])
    command = [sys.executable, "-c", BOOTSTRAP, path, *map(str, fds), str(_crawl_to_end_with())]
    return subprocess.Popen(command, pass_fds=fds, stdin=subprocess.DEVNULL)


def fork(fds: tuple[int, int]) -> Forked:
    """A worker forked from this process, given the descriptors ``fds``; it closes every other one. Only
    while this process has no other thread: a fork copies only the thread that forks, so a lock another
    thread held would stay locked in the child."""
    # The collector walking the crawl's objects in the child would write to each page holding one and
    # so copy it: frozen, they are left alone. They stay frozen in the crawl too (its start-up objects
    # live to its end anyway, and its collections then skip them), and a freeze made before (a fork
    # server's, say) is not undone: the collector has no way to thaw only what one call froze.
    gc.freeze()
    crawl = _crawl_to_end_with()
    # No signal may run the crawl's handlers in the child before it has its own.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _CHILD_SIGNALS)
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        raise
    if pid:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return Forked(pid)
    code = 1
    try:
        # The crawl's signal handling is not the worker's: a signal must not wake the crawl's loop
        # through the descriptor they share, nor run the crawl's shutdown here.
        signal.set_wakeup_fd(-1)
        for number in _CHILD_SIGNALS:
            signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        # Nothing of the crawl's stays open here (its lock file, its connections, its ends of the
        # workers' sockets): an orphaned worker must not hold the next crawl's lock.
        _close_all_but(fds)
        worker_side.main([*map(str, fds), str(crawl)])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # a forked worker never returns into the crawl's code
        traceback.print_exc()
    finally:
        os._exit(code)


_CHILD_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT}


def _close_all_but(kept: tuple[int, ...]) -> None:
    """Close every descriptor but the standard three and ``kept``."""
    low = 3
    for fd in sorted(kept):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


class Forked:
    """A forked worker, with what the pool asks of a ``subprocess.Popen``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._lock = threading.Lock()  # the loop polls, a stopping thread waits

    def poll(self) -> int | None:
        with self._lock:
            if self.returncode is None:
                try:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:  # reaped elsewhere: it is gone
                    self.returncode = -1
                else:
                    if pid:
                        self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
            time.sleep(0.01)
        return code

    def send_signal(self, number: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, number)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def wait_for(process: WorkerProcess) -> None:
    """Wait for a worker to end; one told to stop that does not within a few seconds is killed."""
    try:
        process.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait()


WorkerProcess = subprocess.Popen[bytes] | Forked
