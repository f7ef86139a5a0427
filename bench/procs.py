"""Child processes of the benchmarks: the replica in its own process, and commands measured from outside
(wall time and peak RSS from ``os.wait4``, which reports the rusage of that one child)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def measure(cmd: Sequence[str], *, workdir: Path, name: str, timeout: float = 900) -> Measured:
    """Run ``cmd`` from the repository root; its output goes to ``workdir/name.{out,err}``."""
    workdir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = workdir / f"{name}.out", workdir / f"{name}.err"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
    with out_path.open("w") as out, err_path.open("w") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=err, cwd=REPO, env=env)
        deadline = started + timeout
        while True:
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
        # Linux reports ru_maxrss in KiB.
        max_rss_mib=usage.ru_maxrss / 1024,
        stdout=out_path.read_text(errors="replace"),
        stderr=err_path.read_text(errors="replace"),
    )


def eventcrawl_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "crawler.cli", *args]


def fast_settings() -> list[str]:
    """Politeness off: loopback and our own server (the settings of ``eventcrawl demo``)."""
    pairs = {
        "DOWNLOAD_DELAY": "0",
        "AUTOTHROTTLE_ENABLED": "False",
        "CONCURRENT_REQUESTS": "16",
        "CONCURRENT_REQUESTS_PER_DOMAIN": "16",
        "LOG_LEVEL": "WARNING",
    }
    return [arg for key, value in pairs.items() for arg in ("-s", f"{key}={value}")]


@dataclass
class Replica:
    base_url: str
    process: subprocess.Popen[str]
    request_log: Path
    ground_truth_path: Path

    def ground_truth(self) -> list[dict[str, Any]]:
        with self.ground_truth_path.open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]

    def requests(self) -> list[dict[str, Any]]:
        if not self.request_log.exists():
            return []
        with self.request_log.open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]


@contextmanager
def replica(workdir: Path, *extra: str) -> Iterator[Replica]:
    """``python -m crawler.replica`` on a free loopback port, stopped with SIGTERM on exit."""
    workdir.mkdir(parents=True, exist_ok=True)
    log, truth = workdir / "requests.jsonl", workdir / "ground-truth.jsonl"
    cmd = [sys.executable, "-m", "crawler.replica", "--port", "0", "--request-log", str(log)]
    cmd += ["--ground-truth", str(truth), *extra]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
    with (workdir / "replica.err").open("w") as err:
        process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=REPO, env=env)
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        if not first.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the replica did not start: {first!r}")
        yield Replica(first, process, log, truth)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
