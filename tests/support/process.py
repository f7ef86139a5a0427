"""The replica in a process of its own on a free loopback port, as a user runs it; for tests and benchmarks.

It runs ``python -m tests.support.serve``: the replica's own command line plus the test scenarios
(``--planted``, ``--hostile``, ``--hostile-only``, ``--hostile-plan``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawler.app.crawling import LOOPBACK_CRAWL_SETTINGS
from crawler.schema import FIELD_NAMES
from tests.support.commands import Started, start_command


def loopback_crawl_args() -> list[str]:
    """:data:`LOOPBACK_CRAWL_SETTINGS` as ``-s KEY=VALUE`` arguments of ``eventcrawl crawl``."""
    return [arg for key, value in LOOPBACK_CRAWL_SETTINGS.items() for arg in ("-s", f"{key}={value}")]


@dataclass
class RunningReplica:
    base_url: str
    process: Started | subprocess.Popen[str]
    ground_truth_path: Path
    request_log_path: Path
    # The assets origin that serves the subtitle files (None when started with --no-assets).
    assets_url: str | None = None
    transcripts_truth_path: Path | None = None

    def ground_truth(self, *, subtitles: bool = False) -> list[dict[str, Any]]:
        """The expected records, each with the fields the dataset's schema publishes; ``subtitles`` are
        null unless the crawl fetches them (``UNDERLINE_SUBTITLES``)."""
        records = [{k: v for k, v in r.items() if k in FIELD_NAMES} for r in self.full_ground_truth()]
        if not subtitles:
            for record in records:
                record["subtitles"] = None
        return records

    def full_ground_truth(self) -> list[dict[str, Any]]:
        """The expected records with every field the replica knows (authors, media links, subtitles)."""
        return _json_lines(self.ground_truth_path)

    def requests(self) -> list[dict[str, Any]]:
        return _json_lines(self.request_log_path)

    def transcripts_truth(self) -> list[dict[str, Any]]:
        """What each subtitle track of the events' lectures says (``crawler.replica.tracks``)."""
        return _json_lines(self.transcripts_truth_path) if self.transcripts_truth_path is not None else []


def _json_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@contextmanager
def running_replica(workdir: Path, *extra: str) -> Iterator[RunningReplica]:
    """``python -m tests.support.serve``, ground truths and request log in ``workdir``; SIGTERM on exit."""
    workdir.mkdir(parents=True, exist_ok=True)
    truth, log = workdir / "ground-truth.jsonl", workdir / "requests.jsonl"
    tracks = workdir / "transcripts-truth.jsonl"
    cmd = [sys.executable, "-m", "tests.support.serve", "--port", "0", "--ground-truth", str(truth)]
    cmd += ["--transcripts-ground-truth", str(tracks), "--request-log", str(log), *extra]
    out, err = workdir / "replica.out", workdir / "replica.err"
    process = start_command(cmd, cwd=workdir, stdout=out, stderr=err)
    try:
        # The base URL, then the assets origin's (unless it is turned off).
        lines = _first_lines(out, process, 1 if "--no-assets" in extra else 2)
        if not all(line.startswith("http://127.0.0.1:") for line in lines):
            raise RuntimeError(f"the replica did not start: {lines!r}; see {err}")
        yield RunningReplica(lines[0], process, truth, log, lines[1] if len(lines) > 1 else None, tracks)
    finally:
        stop(process)


def stop(process: Started | subprocess.Popen[str], timeout: float = 15) -> None:
    """SIGTERM, then SIGKILL when ``process`` has not ended within ``timeout`` seconds; waits for it."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _first_lines(
    path: Path, process: Started | subprocess.Popen[str], count: int, timeout: float = 120
) -> list[str]:
    """The first ``count`` lines ``process`` writes to ``path`` (the replica prints its URLs once it
    serves), or what it wrote before it exited or ``timeout`` passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        text = path.read_text(encoding="utf-8")
        if text.count("\n") >= count:
            return [line.strip() for line in text.split("\n")[:count]]
        time.sleep(0.02)
    return [path.read_text(encoding="utf-8").strip()]
