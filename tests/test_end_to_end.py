"""The whole job over real HTTP: replica -> `eventcrawl crawl` -> `eventcrawl publish` -> datasets."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq
import pytest

from crawler.publish.tables import LECTURES
from crawler.replica.layout import MAIN_EVENT_ID, build_site, load_records
from crawler.schema import parse_timestamp
from crawler.schema.arrow import arrow_schema
from tests.scenarios.seeds import seed_boilerplate_lines as replica_seed_lines
from tests.support.replica import TIMESTAMP_FIELDS, eventcrawl, fast_crawl_settings, running_replica

# The plain text of three real lecture pages, copied so that the tests run without the shared folder.
SEEDS = Path(__file__).resolve().parent / "fixtures" / "seeds"
REPO = Path(__file__).resolve().parents[1]
LABELS = ["Premium content", "Downloads", "Next from EMNLP 2025", "Similar lecture"]
FOOTER = [
    "Stay up to date with the latest Underline news!",
    "PRESENTATIONS",
    "CONFERENCES",
    "COMPANY",
    "RESOURCES",
]
# The seed text of the site's welcome markdown, as shown on the real pages.
WELCOME_LINES = [
    "## Welcome!",
    "## Welcome to EMNLP 2024!",
    "*Message from the General Chair, Dirk Hovy*",
    "Celebrate 30 Years of EMNLP!",
    "EMNLP 2025 will be held in Suzhou, China from November 5th to November 9th, 2025.",
    "Please register!",
    "<br>",
    "EMNLP 2024 will take place in Miami, Florida",
    "Conference Handbook",
]


def seed_boilerplate_lines() -> list[str]:
    return replica_seed_lines(SEEDS)


@pytest.fixture(scope="module")
def full_crawl(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("e2e")
    with running_replica(work / "replica") as replica:
        crawl = eventcrawl(
            "crawl",
            "--event-id",
            "502",
            "--web-base",
            replica.base_url,
            "--api-base",
            replica.base_url,
            "--state",
            str(work / "state"),
            *fast_crawl_settings(),
        )
        truth = replica.ground_truth()
        requests = replica.requests()
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    out = work / "dataset"
    publish = eventcrawl("publish", "--state", str(work / "state"), "--out", str(out), "--name", "emnlp-2025")
    assert publish.returncode == 0, publish.stderr[-3000:]
    table = pq.read_table(out / "data" / "lectures")
    report = json.loads((work / "state" / "crawl-report.json").read_text(encoding="utf-8"))
    return {
        "truth": truth,
        "rows": table.to_pylist(),
        "table": table,
        "out": out,
        "work": work,
        "requests": requests,
        "report": report,
        "crawl_stdout": crawl.stdout,
    }


def test_replica_serves_the_whole_shared_data(full_crawl: dict[str, Any]) -> None:
    # Every lecture the replica places in event 502 is a real record of the shared data, and the crawl
    # is of all of them (the replica decides which records go to which event).
    shared = {" ".join(r["title"].split()) for r in load_records()}
    titles = [t["title"] for t in full_crawl["truth"]]
    assert len(titles) == len(build_site(load_records()).event_lectures(MAIN_EVENT_ID)) > 0
    assert set(titles) <= shared


def test_each_lecture_exactly_once(full_crawl: dict[str, Any]) -> None:
    ids = [row["lecture_id"] for row in full_crawl["rows"]]
    assert len(ids) == len(set(ids))
    assert sorted(ids) == sorted(t["lecture_id"] for t in full_crawl["truth"])


def test_every_field_equals_the_ground_truth(full_crawl: dict[str, Any]) -> None:
    rows = {row["lecture_id"]: row for row in full_crawl["rows"]}
    mismatches: list[str] = []
    for expected in full_crawl["truth"]:
        row = rows[expected["lecture_id"]]
        for name, value in expected.items():
            got = row[name]
            if name in TIMESTAMP_FIELDS:
                value = parse_timestamp(value)
            if got != value:
                mismatches.append(f"{expected['lecture_id']}.{name}: {got!r} != {value!r}")
    assert mismatches == []


def test_no_boilerplate_and_no_other_lecture_in_text(full_crawl: dict[str, Any]) -> None:
    boilerplate = seed_boilerplate_lines()
    assert len(boilerplate) >= 15
    for needle in WELCOME_LINES + LABELS + FOOTER:
        assert any(needle in line for line in boilerplate), needle
    abstracts = {t["lecture_id"]: re.sub(r"\s+", " ", t["abstract"]).strip() for t in full_crawl["truth"]}
    for row in full_crawl["rows"]:
        text = row["text"]
        assert text, f"{row=}"
        leaked = [line for line in boilerplate if line in text]
        assert leaked == [], (row["lecture_id"], leaked)
        others = [i for i, a in abstracts.items() if i != row["lecture_id"] and a[:200] in text]
        assert others == [], (row["lecture_id"], others)


def test_no_email_address_anywhere(full_crawl: dict[str, Any]) -> None:
    email = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
    for row in full_crawl["rows"]:
        for name, value in row.items():
            values = value if isinstance(value, list) else [value]
            assert not any(isinstance(v, str) and email.search(v) for v in values), (row["lecture_id"], name)


def test_parquet_has_the_declared_schema(full_crawl: dict[str, Any]) -> None:
    assert full_crawl["table"].schema.remove_metadata().equals(arrow_schema().remove_metadata())
    assert full_crawl["table"].num_rows == len(full_crawl["truth"])


def test_load_dataset_returns_declared_features(full_crawl: dict[str, Any], tmp_path: Path) -> None:
    loaded = datasets.load_dataset(str(full_crawl["out"]), cache_dir=str(tmp_path / "cache"))
    assert list(loaded) == ["train"]
    assert loaded["train"].features == LECTURES.features()
    assert loaded["train"].num_rows == len(full_crawl["truth"])


def test_polite_basics_seen_by_the_replica(full_crawl: dict[str, Any]) -> None:
    requests = full_crawl["requests"]
    paths = [r["path"] for r in requests]
    assert paths[0] == "/robots.txt"
    assert all(r["user_agent"].startswith("eventcrawl/") for r in requests)
    assert not any(p.startswith(("/log-in", "/downloadable_materials/")) for p in paths)
    lecture_pages = [p for p in paths if p.startswith("/lecture/")]
    assert len(lecture_pages) == len(set(lecture_pages)) == len(full_crawl["truth"])
    listing = [p for p in paths if p.startswith("/api/v1/thin_lectures?")]
    assert all("page%5Bsize%5D=100" in p for p in listing)


def test_crawl_report_counts_what_happened(full_crawl: dict[str, Any]) -> None:
    stats = full_crawl["report"]["stats"]
    n = len(full_crawl["truth"])
    assert full_crawl["report"]["finish_reason"] == "finished"
    assert stats["stage/lectures"] == n
    assert stats["underline/listed"] == n
    assert stats["underline/extraction/next_data"] == n
    assert stats.get("underline/page_unparsable", 0) == 0
    assert stats["boilerplate/layer/structural"] == n


def test_text_was_read_off_the_page_not_rebuilt_from_the_fields(full_crawl: dict[str, Any]) -> None:
    # The replica's gold ``text`` is the lecture's fields in page order, which is also what the
    # boilerplate step falls back to when it finds nothing on the page: the fallback must not have run,
    # or the ``text`` comparisons above would prove nothing about the stripper.
    stats = full_crawl["report"]["stats"]
    assert stats.get("boilerplate/text_from_fields", 0) == 0
    assert {row["extraction"] for row in full_crawl["rows"]} == {t["extraction"] for t in full_crawl["truth"]}
    assert not any(row["extraction"].endswith("+text_from_fields") for row in full_crawl["rows"])
    # Every page held more than the lecture: the step removed blocks from each one.
    assert stats["boilerplate/blocks_removed"] > stats["boilerplate/blocks_kept"] > 0


def test_scrapy_crawl_works_from_the_repo_root(tmp_path: Path) -> None:
    with running_replica(tmp_path / "replica", "--lectures", "30") as replica:
        result = subprocess.run(
            [
                sys.executable, "-m", "scrapy", "crawl", "underline", "-a", "event_id=502",
                "-s", f"UNDERLINE_WEB_BASE={replica.base_url}",
                "-s", f"UNDERLINE_API_BASE={replica.base_url}",
                "-s", f"STAGE_STATE_DIR={tmp_path / 'state'}",
                "-s", f"HTTPCACHE_DIR={tmp_path / 'state' / 'httpcache'}",
                *fast_crawl_settings(),
            ],
            cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        expected = {t["lecture_id"] for t in replica.ground_truth()}
    assert result.returncode == 0, result.stderr[-3000:]
    from tests.support.staged import read_stage

    staged = read_stage(tmp_path / "state")
    assert staged.complete
    assert {r.lecture_id for r in staged.records} == expected
    listed = subprocess.run(
        [sys.executable, "-m", "scrapy", "list"], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert listed.stdout.split() == ["underline"]


def test_publish_refuses_an_unfinished_crawl(tmp_path: Path) -> None:
    from crawler.state.stage import StageWriter

    writer = StageWriter(tmp_path / "state")
    writer.open()
    writer.close(complete=False)
    result = eventcrawl("publish", "--state", str(tmp_path / "state"), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "did not finish" in result.stderr
    assert not (tmp_path / "out").exists()
