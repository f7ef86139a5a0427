"""Who may work on a state directory: a ``flock`` on ``<state>/run.lock`` that the kernel releases when the
holder dies.

``run``, ``publish``, ``cache purge`` and a single-process ``crawl`` take it exclusive: one of them at a
time, and none while fleet workers hold it. Every worker of a fleet (``crawl --frontier``) takes it shared:
the workers stage side by side under their own names, Redis coordinates them, and they keep the exclusive
commands out (a publish of a half-crawled stage, a single-process crawl writing the same stage) until the
last one has exited. Both are taken without waiting: a refused command fails at once with :class:`LockHeld`.

An exclusive holder writes its pid in the file, for the message of the command it refuses; shared holders
write nothing (there may be many), and a refused exclusive command tells them apart by trying a shared lock.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO

from crawler.state.fsutil import DamagedFile, flock, unlock
from crawler.state.layout import StateDir


class LockHeld(RuntimeError):
    """Another command holds the state directory."""


class StateLock:
    def __init__(self, state_dir: Path, *, shared: bool = False) -> None:
        self.path = StateDir.of(state_dir).lock
        self.shared = shared
        self._fh: IO[str] | None = None

    def acquire(self) -> StateLock:
        if self.path.exists() and not self.path.is_file():
            raise DamagedFile(
                self.path,
                "not a lock file",
                f"no command can hold it; move it aside (mv {self.path} {self.path}.damaged) and run again",
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = self.path.open("a+", encoding="utf-8")
        try:
            held_by_fleet = False
            if self.shared:
                taken = flock(fh, shared=True, wait=False)
            else:
                taken = flock(fh, wait=False)
                # Refused: by fleet workers when a shared lock can be had. They may have all left meanwhile.
                if not taken and flock(fh, shared=True, wait=False):
                    taken = flock(fh, wait=False)
                    held_by_fleet = not taken
                    if not taken:
                        unlock(fh)
            if not taken:
                raise LockHeld(self._refusal(fh, held_by_fleet))
            if not self.shared:
                fh.seek(0)
                fh.truncate()
                fh.write(json.dumps({"pid": os.getpid()}) + "\n")
                fh.flush()
        except BaseException:
            fh.close()
            raise
        self._fh = fh
        return self

    def _refusal(self, fh: IO[str], held_by_fleet: bool) -> str:
        if held_by_fleet:
            return f"crawl workers of a fleet hold {self.path}; wait for the last one to exit"
        fh.seek(0)
        holder = fh.read().strip() or "unknown"
        return f"another run holds {self.path} ({holder}); wait for it to end"

    def release(self) -> None:
        if self._fh is not None:
            unlock(self._fh)
            self._fh.close()
            self._fh = None

    def __enter__(self) -> StateLock:
        return self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self.release()
