"""Files in the state and output directories: replaced whole, never left half-written; shared under a lock."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def write_json_atomic(path: Path, payload: Any, *, indent: int | None = 2, sort_keys: bool = False) -> Path:
    """Write ``payload`` as JSON through a temporary file beside ``path``, fsync, then one rename.

    A reader sees the old file or the new one, whatever happens to the writer in between.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    separators = None if indent is not None else (",", ":")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=indent, sort_keys=sort_keys, separators=separators, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def flock(fh: IO[str], *, shared: bool = False, wait: bool = True) -> bool:
    """Take a ``flock`` on the open file ``fh``, shared or exclusive: the one lock of the project (the
    kernel releases it when the holder dies, so a killed process never leaves it held). Without ``wait``,
    False at once when another open file holds a conflicting lock."""
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        fcntl.flock(fh.fileno(), mode if wait else mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def unlock(fh: IO[str]) -> None:
    """Release the ``flock`` taken on ``fh``."""
    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@contextmanager
def exclusive_lock(path: Path, *, wait: bool = True) -> Iterator[IO[str]]:
    """Hold an exclusive :func:`flock` on *path* (created if missing) for the processes sharing this file
    system. With ``wait=False`` a lock held elsewhere raises ``BlockingIOError`` at once. Yields the open
    lock file, in which the holder may note who it is."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as fh:
        if not flock(fh, wait=wait):
            raise BlockingIOError(f"{path} is locked by another process")
        try:
            yield fh
        finally:
            unlock(fh)


class DamagedFile(ValueError):
    """A state or release file cannot be read; the message names it and says how to recover."""

    def __init__(self, path: Path, problem: str, recovery: str) -> None:
        super().__init__(f"{path} is damaged ({problem}); {recovery}")
        self.path = path


def read_json_file(path: Path, *, recovery: str) -> Any:
    """The JSON document in ``path``; :class:`DamagedFile` (naming it and ``recovery``) when unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise DamagedFile(path, f"not valid JSON: {exc}", recovery) from None


class UnreadableText(ValueError):
    """A text file that is missing, not UTF-8 or cannot be read; the message says which, naming it."""


def read_text(path: Path, label: str) -> str:
    """The UTF-8 text of ``path``; :class:`UnreadableText` naming it as ``label`` when it cannot be had."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UnreadableText(f"{label} does not exist") from None
    except UnicodeDecodeError as exc:
        raise UnreadableText(f"{label} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise UnreadableText(f"{label} cannot be read: {exc.strerror or exc}") from None
