"""Operator mistakes get exit status 2 and one clear line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.replica import eventcrawl


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["crawl", "--event-id", "abc"], "event 'abc' is neither an event id"),
        (["crawl", "--web-base", "underline.io"], "--web-base 'underline.io' must be an http"),
        (["crawl", "-s", "DOWNLOAD_DELAY=fast"], "setting DOWNLOAD_DELAY takes a number, not 'fast'"),
        (["crawl", "-s", "DOWNLOAD_DELAYS=1"], "unknown setting 'DOWNLOAD_DELAYS'"),
        (["run", "--event-id", "12x"], "event '12x' is neither an event id"),
        (["run", "--api-base", "app.underline.io/api/v1"], "--api-base 'app.underline.io/api/v1' must be"),
    ],
)
def test_a_mistake_gets_one_line_and_status_2(tmp_path: Path, args: list[str], says: str) -> None:
    result = eventcrawl(*args, "--state", str(tmp_path / "state"), cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "state" / "stage").exists()


def test_an_output_folder_that_cannot_be_written_is_refused_before_crawling(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = eventcrawl(
        "run", "--state", str(tmp_path / "state"), "--out", str(blocker / "out"), cwd=tmp_path, timeout=60
    )
    assert result.returncode == 2, result.stderr
    assert "is not writable" in result.stderr or "exists and is not a directory" in result.stderr
    assert not (tmp_path / "state" / "stage").exists()


def test_a_configuration_with_an_unknown_setting_or_a_gate_out_of_range_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "eventcrawl.toml"
    config.write_text(
        '[crawl]\nevent_ids = ["502"]\n[crawl.settings]\nDOWNLOAD_DELAI = 1\n', encoding="utf-8"
    )
    result = eventcrawl("run", "--config", str(config), cwd=tmp_path, timeout=60)
    assert result.returncode == 2
    assert "unknown setting 'DOWNLOAD_DELAI'" in result.stderr
    config.write_text("[gate]\nmax_drop = 10\n", encoding="utf-8")
    result = eventcrawl("run", "--config", str(config), cwd=tmp_path, timeout=60)
    assert result.returncode == 2
    assert "[gate] max_drop is a share between 0 and 1, got 10" in result.stderr


def test_a_site_that_cannot_be_reached_is_a_failed_crawl_not_a_usage_error(tmp_path: Path) -> None:
    # Port 9 on loopback: nothing listens there.
    result = eventcrawl(
        "crawl", "--state", str(tmp_path / "state"),
        "--web-base", "http://127.0.0.1:9", "--api-base", "http://127.0.0.1:9",
        "-s", "BACKOFF_MAX_RETRIES=1", "-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=ERROR",
        cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert result.returncode == 5, result.stderr[-2000:]
    assert (
        "could not be reached" in result.stderr or "could not read the whole lecture listing" in result.stderr
    )
