"""Start the replica in a subprocess on a free loopback port, as a user would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class RunningReplica:
    base_url: str
    process: subprocess.Popen[str]
    ground_truth_path: Path
    request_log_path: Path

    def ground_truth(self) -> list[dict[str, Any]]:
        with self.ground_truth_path.open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]

    def requests(self) -> list[dict[str, Any]]:
        if not self.request_log_path.exists():
            return []
        with self.request_log_path.open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]


@contextmanager
def running_replica(workdir: Path, *extra: str) -> Iterator[RunningReplica]:
    workdir.mkdir(parents=True, exist_ok=True)
    truth = workdir / "ground-truth.jsonl"
    log = workdir / "requests.jsonl"
    cmd = [sys.executable, "-m", "crawler.replica", "--port", "0", "--ground-truth", str(truth)]
    cmd += ["--request-log", str(log), *extra]
    process = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        if not first.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the replica did not start: {first!r}")
        yield RunningReplica(first, process, truth, log)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def fast_crawl_settings() -> list[str]:
    """Loopback and our own server: politeness delays would only slow the tests down."""
    return [
        "-s", "DOWNLOAD_DELAY=0",
        "-s", "AUTOTHROTTLE_ENABLED=False",
        "-s", "CONCURRENT_REQUESTS=16",
        "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=16",
        "-s", "LOG_LEVEL=WARNING",
    ]  # fmt: skip


def eventcrawl(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crawler.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
