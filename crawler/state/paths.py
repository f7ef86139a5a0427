"""Checks on the names and directories a user hands the command line, before anything is written.

Every check returns the value to use or raises :class:`PathError` with a message that names the
argument and says what to change. Nothing here touches the filesystem beyond reading what exists.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path, PurePosixPath

# Hugging Face repository names: letters, digits, '-', '_', '.'; no '--' or '..'; neither '-' nor '.'
# at either end; at most 96 characters.
_HUB_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$")
MAX_NAME = 96
# Characters that are legal in POSIX file names but break shells, other systems or the eye.
_UNPORTABLE = set('<>:"|?*\\')
MAX_PATH = 1024
MAX_COMPONENT = 255


class PathError(ValueError):
    """A name or path the user gave cannot be used; the message says why and what to change."""


def _refuse_odd_character(text: str, shown: str, what: str) -> None:
    """Refuse ``text`` (``shown`` in the message: the name or path it is part of) when it holds a character
    that has no place in a name or path: controls, invisible format and bidi characters, surrogates,
    unassigned code points, separators other than the plain space."""
    for char in text:
        if unicodedata.category(char)[0] in "CZ" and char != " ":
            name = unicodedata.name(char, "")
            described = f"U+{ord(char):04X}" + (f" ({name})" if name else "")
            raise PathError(f"{what} {shown!r} holds the character {described}")


def check_dataset_name(name: str, *, what: str = "--name") -> str:
    """A dataset name as the card and the Hub take it: ``name`` or ``owner/name``."""
    if not isinstance(name, str) or not name:
        raise PathError(f"{what} must not be empty")
    parts = name.split("/")
    if len(parts) > 2 or name.startswith("/"):
        raise PathError(f"{what} {name!r} must be a name or owner/name, not a path")
    for part in parts:
        _check_hub_part(part, name, what)
    return name


def check_repo_id(repo_id: str, *, what: str = "--push-to-hub") -> str:
    """A Hub repository id: exactly ``owner/name``."""
    if not isinstance(repo_id, str) or repo_id.count("/") != 1:
        raise PathError(f"{what} {repo_id!r} must be owner/name (one '/')")
    return check_dataset_name(repo_id, what=what)


def _check_hub_part(part: str, whole: str, what: str) -> None:
    if part in ("", ".", ".."):
        raise PathError(f"{what} {whole!r} has an empty, '.' or '..' part")
    _refuse_odd_character(part, whole, what)
    if len(part) > MAX_NAME:
        raise PathError(f"{what} {whole!r} is longer than {MAX_NAME} characters")
    if "--" in part or ".." in part:
        raise PathError(f"{what} {whole!r} must not contain '--' or '..'")
    if part.lower().endswith(".git"):
        raise PathError(f"{what} {whole!r} must not end with '.git'")
    if not _HUB_NAME.match(part):
        raise PathError(
            f"{what} {whole!r}: use letters, digits, '-', '_' and '.', starting and ending with a letter "
            "or digit"
        )


def check_revision(revision: str, *, what: str = "--revision") -> str:
    """A branch name the Hub accepts (git's rules for ref names, without '/' nesting surprises)."""
    if not isinstance(revision, str) or not revision:
        raise PathError(f"{what} must not be empty")
    _refuse_odd_character(revision, revision, what)
    bad = (
        revision.startswith(("-", "/", "."))
        or revision.endswith(("/", ".", ".lock"))
        or any(s in revision for s in ("..", "//", "@{", "/."))
        or any(c in revision for c in " ~^:?*[\\")
        or len(revision) > 200
    )
    if bad:
        raise PathError(
            f"{what} {revision!r} is not a valid branch name: use letters, digits, '-', '_', '.' and '/'"
        )
    return revision


def check_path_text(path: str | os.PathLike[str], *, what: str) -> Path:
    """The path as given, refused when it holds '..' or odd characters.

    ``..`` is refused outright (not resolved): a path that climbs out of where it points is never
    what a user means for an output, and refusing it keeps every write under the named directory.
    """
    text = os.fspath(path)
    if not isinstance(text, str):
        raise PathError(f"{what} must be a text path")
    if not text or not text.strip():
        raise PathError(f"{what} must not be empty")
    if len(text) > MAX_PATH:
        raise PathError(f"{what} is longer than {MAX_PATH} characters")
    _refuse_odd_character(text, text, what)
    unportable = sorted(set(text) & _UNPORTABLE)
    if unportable:
        raise PathError(f"{what} {text!r} holds {''.join(unportable)!r}; use letters, digits, '-', '_', '.'")
    pure = PurePosixPath(text)
    for part in pure.parts:
        if part == "..":
            raise PathError(f"{what} {text!r} must not contain '..'")
        if part == "/":
            continue
        if part != part.strip():
            raise PathError(f"{what} {text!r} has a part that starts or ends with a space")
        if part.startswith("-"):
            raise PathError(f"{what} {text!r} has a part that starts with '-'")
        if len(part.encode("utf-8")) > MAX_COMPONENT:
            raise PathError(f"{what} {text!r} has a part longer than {MAX_COMPONENT} bytes")
    if pure.parts and pure.parts[0].startswith("~"):
        raise PathError(f"{what} {text!r} starts with '~', which is not expanded here; give the full path")
    return Path(text)


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def check_directory(path: str | os.PathLike[str], *, what: str, cwd: Path | None = None) -> Path:
    """A directory to write into, made absolute (symlinks resolved); it may not exist yet.

    Refused: everything :func:`check_path_text` refuses, an existing file that is not a directory,
    the filesystem root, the home directory, and the current directory or one that contains it
    (publishing replaces its output directory as a whole).
    """
    given = check_path_text(path, what=what)
    here = (cwd or Path.cwd()).resolve()
    resolved = (here / given).resolve()
    if resolved.exists() and not resolved.is_dir():
        raise PathError(f"{what} {os.fspath(path)!r} exists and is not a directory")
    if resolved == Path(resolved.anchor):
        raise PathError(f"{what} {os.fspath(path)!r} is the filesystem root")
    home = Path.home().resolve()
    if resolved == home:
        raise PathError(f"{what} {os.fspath(path)!r} is the home directory; name a folder inside it")
    if _is_within(here, resolved):
        raise PathError(
            f"{what} {os.fspath(path)!r} is the current directory or contains it; name a new folder"
        )
    return resolved


def check_state_dir(path: str | os.PathLike[str], *, cwd: Path | None = None) -> Path:
    """The ``--state`` directory, absolute."""
    return check_directory(path, what="--state", cwd=cwd)


def check_output_dir(
    path: str | os.PathLike[str], *, state_dir: str | os.PathLike[str] | None = None, cwd: Path | None = None
) -> Path:
    """The ``--out`` directory, absolute; it must not overlap the state directory, because a publish
    replaces ``--out`` as a whole and a crawl moves its stage around inside ``--state``."""
    out = check_directory(path, what="--out", cwd=cwd)
    if state_dir is not None:
        state = check_state_dir(state_dir, cwd=cwd)
        if _is_within(out, state) or _is_within(state, out):
            raise PathError(
                f"--out {os.fspath(path)!r} and --state {os.fspath(state_dir)!r} overlap; "
                "keep the dataset and the crawl state in separate folders"
            )
    return out
