"""The state directory's lock: exclusive for run, publish and a single-process crawl, shared by fleet workers.

``flock`` locks belong to an open file, so two ``StateLock`` objects in this process compete as two
processes would.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from crawler.schedule.lock import LockHeld, StateLock
from tests.support.replica import eventcrawl

FLEET_HOLDS = "crawl workers of a fleet hold .*run.lock; wait for the last one to exit"


def test_fleet_workers_share_the_lock_and_keep_exclusive_commands_out(tmp_path: Path) -> None:
    first = StateLock(tmp_path, shared=True).acquire()
    second = StateLock(tmp_path, shared=True).acquire()
    with pytest.raises(LockHeld, match=FLEET_HOLDS):
        StateLock(tmp_path).acquire()
    first.release()
    with pytest.raises(LockHeld, match=FLEET_HOLDS):
        StateLock(tmp_path).acquire()
    second.release()
    with StateLock(tmp_path):
        assert json.loads((tmp_path / "run.lock").read_text()) == {"pid": os.getpid()}


def test_an_exclusive_holder_keeps_fleet_workers_out_and_is_named(tmp_path: Path) -> None:
    with StateLock(tmp_path):
        with pytest.raises(LockHeld, match=f'another run holds .*run.lock \\({{"pid": {os.getpid()}}}\\)'):
            StateLock(tmp_path, shared=True).acquire()
        with pytest.raises(LockHeld, match="another run holds"):
            StateLock(tmp_path).acquire()
    # Released: fleet workers come in, and do not overwrite the note of the last exclusive holder.
    with StateLock(tmp_path, shared=True), StateLock(tmp_path, shared=True):
        assert json.loads((tmp_path / "run.lock").read_text()) == {"pid": os.getpid()}


def test_a_refused_command_leaves_no_lock_behind(tmp_path: Path) -> None:
    held = StateLock(tmp_path, shared=True).acquire()
    for _ in range(3):
        with pytest.raises(LockHeld):
            StateLock(tmp_path).acquire()
    held.release()
    # Neither the refused exclusive attempts nor their shared probes are still held.
    with StateLock(tmp_path):
        pass


def test_a_fleet_worker_is_refused_while_a_run_holds_the_state(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with StateLock(state):
        # Refused before it reaches Redis: nothing listens on this port.
        result = eventcrawl(
            "crawl", "--state", str(state), "--frontier", "redis://127.0.0.1:9/0", "--worker", "w0"
        )
    assert result.returncode == 6, result.stderr[-2000:]
    assert f"another run holds {state / 'run.lock'}" in result.stderr
    assert "Traceback" not in result.stderr
