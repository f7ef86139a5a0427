"""Every recording under tests/recordings/ (made by `eventcrawl record`) is parsed and crawled.

A user who finds the crawler misreading the real site can attach a recording to a report; dropped into
tests/recordings/, it becomes these tests.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from crawler.pages import parse_lecture_list, parse_lecture_page
from tests.support.recordings import Recording, recordings, serve_recording
from tests.support.replica import eventcrawl, fast_crawl_settings
from tests.support.staged import read_stage

EMAIL = re.compile(rb"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
RECORDINGS = recordings()


def test_there_is_at_least_one_recording() -> None:
    assert [r.name for r in RECORDINGS], "tests/recordings/ holds no recording"


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.name)
def test_a_recording_holds_no_email_address(recording: Recording) -> None:
    leaks = {
        p.name: EMAIL.findall(p.read_bytes())[:3] for p in recording.files() if EMAIL.search(p.read_bytes())
    }
    assert leaks == {}


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.name)
def test_the_parser_reads_every_recorded_lecture_as_its_listing_says(recording: Recording) -> None:
    (listing,) = recording.body("listing")
    listed = {r.lecture_id: r for r in parse_lecture_list(json.loads(listing)).records}
    assert sorted(listed) == sorted(recording.index["lecture_ids"])
    pages = recording.body("lecture")
    assert len(pages) == len(listed)
    for body in pages:
        page = parse_lecture_page(body, recording.index["web_base"] + "/lecture/0")
        assert page.fields is not None, f"{body=}"
        expected = listed[page.fields.lecture_id]
        assert page.extraction == "next_data", f"{body=}"
        assert (page.fields.title, page.fields.abstract) == (expected.title, expected.abstract), f"{body=}"
        assert page.fields.authors == expected.authors, f"{body=}"


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.name)
def test_the_spider_crawls_a_recording_into_exactly_its_lectures(
    recording: Recording, tmp_path: Path
) -> None:
    (listing,) = recording.body("listing")
    listed = {r.lecture_id: r for r in parse_lecture_list(json.loads(listing)).records}
    with serve_recording(recording) as base:
        result = eventcrawl(
            "crawl", "--event-id", recording.index["event_id"], "--web-base", base, "--api-base", base,
            "--state", str(tmp_path / "state"), *fast_crawl_settings(), "-s", "PROGRESS_ENABLED=False",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    staged = {r.lecture_id: r.values() for r in read_stage(tmp_path / "state").records}
    assert sorted(staged) == sorted(listed)
    for lecture_id, record in staged.items():
        assert (record["title"], record["abstract"]) == (
            listed[lecture_id].title,
            listed[lecture_id].abstract,
        ), f"{lecture_id=}, {record=}"
        assert record["authors"] == listed[lecture_id].authors, f"{lecture_id=}, {record=}"
        assert record["extraction"] == "next_data", f"{lecture_id=}, {record=}"
