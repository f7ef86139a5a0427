from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from crawler.schedule.lock import LockHeld, StateLock
from crawler.state.fsutil import exclusive_lock


def test_a_held_lock_refuses_a_second_holder_until_it_is_released(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "x.lock"
    with exclusive_lock(path):
        assert path.exists()
        # flock locks belong to an open file: a second open of the same file competes like another process.
        with pytest.raises(BlockingIOError), exclusive_lock(path, wait=False):
            pass
    with exclusive_lock(path, wait=False) as fh:
        assert not fh.closed


def test_the_state_lock_names_its_holder_to_the_run_it_refuses(tmp_path: Path) -> None:
    with StateLock(tmp_path):
        assert json.loads((tmp_path / "run.lock").read_text()) == {"pid": os.getpid()}
        with pytest.raises(LockHeld, match=f'another run holds .*run.lock \\({{"pid": {os.getpid()}}}\\)'):
            StateLock(tmp_path).acquire()
    with StateLock(tmp_path) as again:
        assert again.path == tmp_path / "run.lock"
