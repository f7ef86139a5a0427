"""A crawl stopped by one SIGTERM (a service manager stopping it, the end of a CI job's time) ends at once,
even while its requests wait out a backoff, and leaves its state as an interrupted crawl that the next one
resumes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawler import stats_keys as keys
from crawler.schedule.run import RunStatus
from crawler.state.layout import COMPLETE, StateDir
from tests.support.commands import start_command
from tests.support.replica import RunningReplica, crawl_args, fast_crawl_settings, running_replica

# The most a stopped crawl may take to end: no backoff wait may hold it (they last up to 300 s).
STOP_SECONDS = 30


@pytest.fixture(scope="module")
def replica(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningReplica]:
    # Listing page 2 of the event answers 500 every time: the host is held after it.
    with running_replica(
        tmp_path_factory.mktemp("replica"), "--lectures", "30", "--fail-listing-page", "2"
    ) as running:
        yield running


def test_the_first_sigterm_ends_a_crawl_waiting_on_a_failing_host(
    replica: RunningReplica, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    settings = [
        *fast_crawl_settings(),
        # One request at a time, and a failure holds the host for 100 s: the requests after it wait.
        "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1",
        "-s", "BACKOFF_MIN_DELAY=100",
        "-s", "BACKOFF_MAX_DELAY=100",
        "-s", "UNDERLINE_PAGE_SIZE=5",
        "-s", "PROGRESS_ENABLED=False",
    ]  # fmt: skip
    args = crawl_args(replica.base_url, state, "--event-id", "502", *settings)
    out, err = tmp_path / "crawl.out", tmp_path / "crawl.err"
    crawl = start_command(
        [sys.executable, "-m", "crawler.app.cli", *args], cwd=tmp_path, stdout=out, stderr=err
    )
    try:
        deadline = time.monotonic() + 60
        while crawl.poll() is None and time.monotonic() < deadline:
            if any(r["status"] == 500 for r in replica.requests()):
                break
            time.sleep(0.05)
        time.sleep(1)  # the retry and the pages after it are waiting now
        assert crawl.poll() is None, err.read_text()[-3000:]
        asked = len(replica.requests())
        stopped = time.monotonic()
        crawl.send_signal(signal.SIGTERM)
        try:
            code = crawl.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail(f"one SIGTERM did not end the crawl within {STOP_SECONDS} s")
        took = time.monotonic() - stopped
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.wait()
    stderr = err.read_text()
    assert code == RunStatus.CRAWL_FAILED, stderr[-3000:]
    assert took < STOP_SECONDS
    # Nothing more was asked of the host once the crawl was told to stop.
    assert len(replica.requests()) == asked
    report = json.loads(StateDir(state).crawl_report.read_text(encoding="utf-8"))
    assert report["finish_reason"] == "shutdown"
    assert report["stats"][keys.BACKOFF_HANDED_BACK_AT_CLOSE] >= 1
    assert "the crawl was stopped" in stderr
    # An interrupted crawl: the stage is kept, unmarked, for the next crawl to resume.
    stage = StateDir(state).stage
    assert stage.is_dir() and not (stage / COMPLETE).exists()
