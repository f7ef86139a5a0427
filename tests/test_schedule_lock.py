"""The state directory's lock: a run.lock that is no file is damage the message names, not a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler.schedule.lock import StateLock
from crawler.state.fsutil import DamagedFile


def test_a_lock_that_is_a_folder_is_damage_with_a_way_out(tmp_path: Path) -> None:
    (tmp_path / "run.lock").mkdir()
    with pytest.raises(DamagedFile) as raised:
        StateLock(tmp_path).acquire()
    assert str(raised.value) == (
        f"{tmp_path / 'run.lock'} is damaged (not a lock file); no command can hold it; move it aside "
        f"(mv {tmp_path / 'run.lock'} {tmp_path / 'run.lock'}.damaged) and run again"
    )
    (tmp_path / "run.lock").rmdir()
    with StateLock(tmp_path):
        assert (tmp_path / "run.lock").is_file()
