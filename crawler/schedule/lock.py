"""One run per state directory: an exclusive ``flock`` that the kernel releases when the holder dies."""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType

from crawler.fsutil import DamagedFile, exclusive_lock

LOCK_NAME = "run.lock"


class LockHeld(RuntimeError):
    """Another run holds the state directory."""


class StateLock:
    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / LOCK_NAME
        self._held: ExitStack | None = None

    def acquire(self) -> StateLock:
        if self.path.exists() and not self.path.is_file():
            raise DamagedFile(
                self.path,
                "not a lock file",
                f"no command can hold it; move it aside (mv {self.path} {self.path}.damaged) and run again",
            )
        held = ExitStack()
        try:
            fh = held.enter_context(exclusive_lock(self.path, wait=False))
        except BlockingIOError:
            holder = self.path.read_text(encoding="utf-8").strip() or "unknown"
            raise LockHeld(f"another run holds {self.path} ({holder}); wait for it to end") from None
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"pid": os.getpid()}) + "\n")
        fh.flush()
        self._held = held
        return self

    def release(self) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None

    def __enter__(self) -> StateLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
