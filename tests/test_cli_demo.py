"""``eventcrawl demo``: the replica served, crawled and published, as a first-time user runs it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import datasets

from crawler.app.demo import DEMO_SIDE_EVENT_EVERY
from crawler.replica import documents_truth
from crawler.replica.layout import build_site, load_records
from tests.support.commands import eventcrawl


def _demo(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The demo's temporary state directory goes under TMPDIR: the test can see that it is removed. A
    # fresh interpreter: the fork server's modules found the temporary directory when they were imported.
    env = {**os.environ, "TMPDIR": str(cwd / "tmp")}
    (cwd / "tmp").mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "crawler.app.cli", "demo", "--lectures", "16", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
        check=False,
    )


def test_the_demo_publishes_both_events_and_removes_its_temporary_state(tmp_path: Path) -> None:
    result = _demo(tmp_path, "--out", "out")
    assert result.returncode == 0, result.stderr
    out = (tmp_path / "out").resolve()
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"replica of Underline serving on http://127\.0\.0\.1:\d+", lines[0])
    # Every track of the replica's lectures that has a subtitle file is a row.
    site = build_site(load_records(), lectures=16, side_event_every=DEMO_SIDE_EVENT_EVERY)
    tracks = sum(1 for lecture in site.lectures.values() for s in lecture.subtitles if s.path is not None)
    assert tracks > 0
    # Every slide deck and poster the lectures name is a row (one the replica answers 404 for too).
    documents = len(documents_truth(site))
    assert documents > 0
    published = (
        rf"published 16 lectures, {tracks} subtitle tracks and {documents} slide decks and posters to"
        rf" {re.escape(str(out))} in \d+\.\d s"
    )
    assert re.fullmatch(published, lines[1])
    assert lines[2:] == [
        "load it with:",
        f"  python -c \"import datasets; print(datasets.load_dataset({str(out)!r})['train'])\"",
        f'  python -c "import datasets;'
        f" print(datasets.load_dataset({str(out)!r}, 'transcripts', split='train'))\"",
        f'  python -c "import datasets;'
        f" print(datasets.load_dataset({str(out)!r}, 'slides', split='train'))\"",
    ]
    transcripts = datasets.load_dataset(str(out), "transcripts", split="train")
    assert transcripts.num_rows == tracks
    assert datasets.load_dataset(str(out), "slides", split="train").num_rows == documents
    assert list((tmp_path / "tmp").iterdir()) == []
    train = datasets.load_dataset(str(out))["train"]
    assert train.num_rows == 16
    assert sorted(set(train["event_id"])) == ["469", "502"]


def _demo_with_state(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The demo given its state directory: no temporary one to see, so forked as the suite's commands are."""
    return eventcrawl("demo", "--lectures", "16", *args, cwd=cwd, timeout=600)


def test_the_demo_keeps_a_state_directory_it_is_given(tmp_path: Path) -> None:
    result = _demo_with_state(tmp_path, "--out", "out", "--state", "state")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "state" / "stage" / "COMPLETE").is_file()
    assert (tmp_path / "state" / "crawl-report.json").is_file()


def test_the_demo_refuses_an_output_folder_inside_its_state_directory(tmp_path: Path) -> None:
    result = _demo_with_state(tmp_path, "--out", "state/out", "--state", "state")
    assert result.returncode == 2
    assert result.stderr == (
        "eventcrawl: --out 'state/out' and --state 'state' overlap; "
        "keep the dataset and the crawl state in separate folders\n"
    )
    assert not (tmp_path / "state").exists()
