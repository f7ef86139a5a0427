"""Swapping a built release into place atomically, and finishing what an interrupted swap left.

The build sits in ``.<name>.build-*`` beside ``out_dir`` (same filesystem) and is swapped in with one
``renameat2(RENAME_EXCHANGE)`` where the kernel has it, else by renaming the old release to
``.<name>.old`` and the new one in. Whatever step a crash interrupts, ``out_dir`` holds the old or the
new release once :func:`recover` has run, and every publish runs it first.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path

# Progress callback: called with the step's name and the directory it concerns.
ReleaseStep = Callable[[str, Path], None]


def _aside(out_dir: Path) -> Path:
    return out_dir.parent / f".{out_dir.name}.old"


def recover(out_dir: Path) -> None:
    """Finish what an interrupted publish left: restore the old release if it was moved aside, drop builds."""
    aside = _aside(out_dir)
    if aside.exists():
        if out_dir.exists():
            shutil.rmtree(aside)
        else:
            os.rename(aside, out_dir)
            _fsync_dir(out_dir.parent)
    for build in out_dir.parent.glob(f".{out_dir.name}.build-*"):
        shutil.rmtree(build, ignore_errors=True)


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _rename_exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def swap_in(build: Path, out_dir: Path, step: ReleaseStep) -> None:
    if not out_dir.exists():
        os.rename(build, out_dir)
    elif not _rename_exchange(build, out_dir):
        aside = _aside(out_dir)
        os.rename(out_dir, aside)
        _fsync_dir(out_dir.parent)
        step("aside", aside)
        os.rename(build, out_dir)
        _fsync_dir(out_dir.parent)
        shutil.rmtree(aside)
    # After an exchange ``build`` holds the old release; the caller removes it.
    _fsync_dir(out_dir.parent)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    for path in sorted(root.rglob("*"), reverse=True):
        if path.is_file():
            with path.open("rb") as fh:
                os.fsync(fh.fileno())
        else:
            _fsync_dir(path)
    _fsync_dir(root)
