"""Subtitles, when asked for: one request to the transcripts endpoint per fetched lecture, none for a
lecture carried over."""

from __future__ import annotations

from pathlib import Path

from tests.support.replica import eventcrawl, fast_crawl_settings, running_replica
from tests.support.staged import read_stage


def test_subtitles_are_fetched_for_fetched_lectures_only(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with running_replica(tmp_path / "replica", "--lectures", "40") as replica:
        base = replica.base_url
        command = ["crawl", "--web-base", base, "--api-base", base, "--state", str(state)]
        first = eventcrawl(*command, *fast_crawl_settings(), "-s", "UNDERLINE_SUBTITLES=True")
        assert first.returncode == 0, first.stderr[-3000:]
        truth = {t["lecture_id"]: t["subtitles"] for t in replica.full_ground_truth()}
        asked = sum(1 for r in replica.requests() if r["kind"] == "transcripts")
        second = eventcrawl(*command, *fast_crawl_settings(), "-s", "UNDERLINE_SUBTITLES=True")
        assert second.returncode == 0, second.stderr[-3000:]
        asked_again = sum(1 for r in replica.requests() if r["kind"] == "transcripts") - asked
    staged = {r.lecture_id: r.subtitles for r in read_stage(state).records}
    assert asked == len(truth)
    assert asked_again == 0
    assert staged == truth
    assert any(staged.values())
