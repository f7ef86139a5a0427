"""Files in the state and output directories are replaced whole, never left half-written."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


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


class DamagedFile(RuntimeError):
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
