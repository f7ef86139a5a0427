"""Child processes of the benchmarks: the replica in its own process, and commands measured from outside
(wall and CPU time from ``os.wait4``, which reports the rusage of that one child; peak RSS from the
child's own ``VmHWM``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.support.process import loopback_crawl_args, running_replica

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Measured:
    """A finished child process: exit status, wall and CPU seconds, peak resident memory in MiB."""

    returncode: int
    wall_s: float
    cpu_s: float
    max_rss_mib: float
    stdout: str
    stderr: str
    user_s: float = 0.0
    system_s: float = 0.0


def peak_rss_mib(pid: int) -> float | None:
    """The process's own peak RSS so far (``VmHWM``: the high-water mark of the memory it exec'd into),
    None once it has exited or where /proc has no such line."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def measure(cmd: Sequence[str], *, workdir: Path, name: str, timeout: float = 900) -> Measured:
    """Run ``cmd`` from the repository root; its output goes to ``workdir/name.{out,err}``.

    The peak RSS is the child's own ``VmHWM``, read every 20 ms until it exits (a peak in its last 20 ms
    could be missed), not the kernel's ``ru_maxrss``: that one starts from the parent's peak at the fork,
    so under ``bench/run`` it would include the suite's own memory."""
    workdir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = workdir / f"{name}.out", workdir / f"{name}.err"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
    peak = 0.0
    with out_path.open("w") as out, err_path.open("w") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=err, cwd=REPO, env=env)
        deadline = started + timeout
        while True:
            peak = max(peak, peak_rss_mib(proc.pid) or 0.0)
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Measured(
        returncode=proc.returncode,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        # Linux reports ru_maxrss in KiB; it stands in only where /proc could not be read.
        max_rss_mib=peak or usage.ru_maxrss / 1024,
        stdout=out_path.read_text(errors="replace"),
        stderr=err_path.read_text(errors="replace"),
        user_s=usage.ru_utime,
        system_s=usage.ru_stime,
    )


def eventcrawl_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "crawler.app.cli", *args]


fast_settings = loopback_crawl_args
replica = running_replica
