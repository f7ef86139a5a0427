from __future__ import annotations

import os
from pathlib import Path

import pytest

from crawler.state.paths import (
    PathError,
    check_dataset_name,
    check_output_dir,
    check_path_text,
    check_repo_id,
    check_revision,
    check_state_dir,
)


@pytest.mark.parametrize("name", ["emnlp-2025", "EMNLP_2025.v2", "a", "acl-archive/emnlp-2025", "x" * 96])
def test_good_dataset_names(name: str) -> None:
    assert check_dataset_name(name) == name


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "--name must not be empty"),
        ("../emnlp", "--name '../emnlp' has an empty, '.' or '..' part"),
        ("a/../b", "--name 'a/../b' must be a name or owner/name, not a path"),
        ("/etc/passwd", "--name '/etc/passwd' must be a name or owner/name, not a path"),
        ("a/b/c", "--name 'a/b/c' must be a name or owner/name, not a path"),
        ("emnlp..2025", "--name 'emnlp..2025' must not contain '--' or '..'"),
        ("emnlp--2025", "--name 'emnlp--2025' must not contain '--' or '..'"),
        (
            "-emnlp",
            "--name '-emnlp': use letters, digits, '-', '_' and '.', starting and ending with a letter or",
        ),
        (
            "emnlp.",
            "--name 'emnlp.': use letters, digits, '-', '_' and '.', starting and ending with a letter or",
        ),
        ("emnlp 2025", "--name 'emnlp 2025': use letters, digits"),
        ("emnlp\n2025", "--name 'emnlp\\n2025' holds the character U+000A"),
        ("emnlp\u202e5202", "--name 'emnlp\\u202e5202' holds the character U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("emnlp\u200b", "--name 'emnlp\\u200b' holds the character U+200B (ZERO WIDTH SPACE)"),
        ("x" * 97, "is longer than 96 characters"),
        ("dataset.git", "--name 'dataset.git' must not end with '.git'"),
        ("caf\u00e9", "--name 'café': use letters, digits"),
    ],
)
def test_bad_dataset_names_are_refused_clearly(name: str, message: str) -> None:
    with pytest.raises(PathError) as caught:
        check_dataset_name(name)
    assert message in str(caught.value)


def test_repo_ids_and_revisions() -> None:
    assert check_repo_id("acl-archive/emnlp-2025") == "acl-archive/emnlp-2025"
    with pytest.raises(PathError, match=r"--push-to-hub 'emnlp' must be owner/name \(one '/'\)"):
        check_repo_id("emnlp")
    assert check_revision("release/2025-11") == "release/2025-11"
    for bad in ("-x", "a..b", "a b", "x.lock", "a//b", "a@{1}", "/main", "a~1", "new\nline"):
        with pytest.raises(PathError, match="--revision"):
            check_revision(bad)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "--out must not be empty"),
        ("   ", "--out must not be empty"),
        ("../elsewhere", "--out '../elsewhere' must not contain '..'"),
        ("exports/../../etc", "--out 'exports/../../etc' must not contain '..'"),
        ("exports/\x00x", "--out 'exports/\\x00x' holds the character U+0000"),
        ("exports/new\nline", "--out 'exports/new\\nline' holds the character U+000A"),
        ("exports/\u202etxt.exe", "holds the character U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("exports/a\u00a0b", "holds the character U+00A0 (NO-BREAK SPACE)"),
        ("exports/a|b", "--out 'exports/a|b' holds '|'"),
        ("exports\\win", "holds '\\\\'"),
        ("exports/ padded", "has a part that starts or ends with a space"),
        ("exports/-rf", "--out 'exports/-rf' has a part that starts with '-'"),
        ("~/exports", "--out '~/exports' starts with '~', which is not expanded here; give the full path"),
        ("exports/" + "x" * 256, "has a part longer than 255 bytes"),
        ("x/" * 600, "--out is longer than 1024 characters"),
    ],
)
def test_bad_paths_are_refused_clearly(path: str, message: str) -> None:
    with pytest.raises(PathError) as caught:
        check_path_text(path, what="--out")
    assert message in str(caught.value)


def test_an_absolute_path_is_taken(tmp_path: Path) -> None:
    assert check_path_text(str(tmp_path), what="--out") == tmp_path


def test_directories_resolve_and_refuse_dangerous_targets(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    assert check_output_dir("exports/ds", cwd=work) == work / "exports" / "ds"
    assert check_output_dir(tmp_path / "abs", cwd=work) == tmp_path / "abs"
    (work / "file").write_text("x", encoding="utf-8")
    with pytest.raises(PathError, match="exists and is not a directory"):
        check_output_dir("file", cwd=work)
    with pytest.raises(PathError, match="is the filesystem root"):
        check_output_dir("/", cwd=work)
    with pytest.raises(PathError, match="is the home directory"):
        check_output_dir(Path.home(), cwd=work)
    with pytest.raises(PathError, match="is the current directory or contains it"):
        check_output_dir(".", cwd=work)
    with pytest.raises(PathError, match="is the current directory or contains it"):
        check_state_dir(tmp_path, cwd=work)


def test_output_and_state_must_not_overlap(tmp_path: Path) -> None:
    assert check_output_dir("out", state_dir="state", cwd=tmp_path) == tmp_path / "out"
    for out, state in [("ds", "ds"), ("ds", "ds/state"), ("state/ds", "state")]:
        with pytest.raises(
            PathError, match="overlap; keep the dataset and the crawl state in separate folders"
        ):
            check_output_dir(out, state_dir=state, cwd=tmp_path)


def test_a_symlink_cannot_smuggle_the_output_into_the_state(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    os.symlink(tmp_path / "state", tmp_path / "link")
    with pytest.raises(PathError, match="overlap"):
        check_output_dir("link/ds", state_dir="state", cwd=tmp_path)
