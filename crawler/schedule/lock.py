"""One run per state directory: an exclusive ``flock`` that the kernel releases when the holder dies."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from types import TracebackType
from typing import IO

LOCK_NAME = "run.lock"


class LockHeld(RuntimeError):
    """Another run holds the state directory."""


class StateLock:
    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / LOCK_NAME
        self._fh: IO[str] | None = None

    def acquire(self) -> StateLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            fh.close()
            raise LockHeld(f"another run holds {self.path} ({holder}); wait for it to end") from None
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"pid": os.getpid()}) + "\n")
        fh.flush()
        self._fh = fh
        return self

    def release(self) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

    def __enter__(self) -> StateLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
