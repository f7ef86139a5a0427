"""Start the replica in a subprocess and run the ``eventcrawl`` command, as a user would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.process import RunningReplica, loopback_crawl_args, running_replica

__all__ = ["RunningReplica", "crawl_args", "eventcrawl", "fast_crawl_settings", "running_replica"]

fast_crawl_settings = loopback_crawl_args


def eventcrawl(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crawler.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def crawl_args(base: str, state: Path, *extra: str) -> list[str]:
    """``eventcrawl crawl`` of a replica at ``base`` (pages and API), staged in ``state``."""
    return ["crawl", "--web-base", base, "--api-base", base, "--state", str(state), *extra]
