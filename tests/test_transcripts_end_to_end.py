"""What was said, end to end: ``run --subtitles`` over the replica's two origins (pages and API on one,
subtitle files on the other, every broken kind among them), two nights, checked against the replica's
ground truth of each track. The truth is the replica's plan of what each talk says, not the crawler's
parse of the files."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import datasets
import pyarrow.parquet as pq
import pytest

from crawler.replica import SPOKEN_EMAIL, SPOKEN_PHONE
from crawler.replica.layout import build_site, load_records
from crawler.replica.server import ReplicaServer
from crawler.replica.tracks import transcripts_truth
from tests.support.replica import eventcrawl, loopback_crawl_args

# A site of 100 lectures: event 502's 46 tracks hold every kind of track (broken and clean, a spoken
# address among them) and 44 to check word for word; the whole bundled site adds only more of the same.
LECTURES = 100
# What never belongs in said text: markup, an entity, a timing, a byte-order mark, a carriage return.
SYNTAX = re.compile(r"<[/a-zA-Z0-9.:]|&(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);|-->|\d\d:\d\d[.,:]\d\d\d|\ufeff|\r")


def run(server: ReplicaServer, work: Path, *extra: str) -> tuple[int, str, dict[str, Any]]:
    result = eventcrawl(
        "run", "--event-id", "502", "--web-base", server.base_url, "--api-base", server.base_url,
        "--state", str(work / "state"), "--out", str(work / "out"), "--name", "talks", "--subtitles",
        *loopback_crawl_args(), *extra,
    )  # fmt: skip
    report = json.loads((work / "state" / "crawl-report.json").read_text(encoding="utf-8"))
    return result.returncode, result.stderr[-3000:], report["stats"]


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("transcripts")
    site = build_site(load_records(), lectures=LECTURES)
    with ReplicaServer(site) as server:
        assert server.assets_url is not None
        first = run(server, work)
        first_requests = list(server.requests)
        rows = pq.read_table(work / "out" / "data" / "transcripts").to_pylist()
        files = {p.name: p.read_bytes() for p in (work / "out" / "data" / "transcripts").glob("*.parquet")}
        second = run(server, work)
        second_requests = list(server.requests)[len(first_requests) :]
        # Every page read again: each subtitle file is asked again, with the validators the stage kept.
        third = run(server, work, "-s", "UNDERLINE_REFRESH=False")
        third_requests = list(server.requests)[len(first_requests) + len(second_requests) :]
        truth = transcripts_truth(site, server.assets_url)
    lectures = sum(1 for lec in site.lectures.values() if lec.event_id == "502")
    return {
        "work": work,
        "first": first,
        "second": second,
        "third": third,
        "first_requests": first_requests,
        "second_requests": second_requests,
        "third_requests": third_requests,
        "rows": rows,
        "files": files,
        "truth": truth,
        "lectures": lectures,
    }


def _key(record: dict[str, Any]) -> tuple[str, str]:
    return str(record["lecture_id"]), str(record["subtitle_url"])


def test_both_nights_finish(nights: dict[str, Any]) -> None:
    assert nights["first"][0] == 0, nights["first"][1]
    # Nothing changed: the release stands as it is (exit 3).
    assert nights["second"][0] == 3, nights["second"][1]


def test_every_listed_track_with_a_subtitle_url_is_one_row(nights: dict[str, Any]) -> None:
    expected = sorted(_key(t) for t in nights["truth"] if t["row"])
    found = [_key(r) for r in nights["rows"]]
    assert sorted(found) == expected
    assert len(found) == len(set(found))
    # Every broken kind the replica serves is among them.
    kinds = {t["kind"] for t in nights["truth"]}
    assert kinds >= {
        "clean", "srt_as_vtt", "bom", "crlf", "cue_settings", "blocks", "spans", "inline_timestamps",
        "entities", "gzip", "cp1252", "oversize", "malformed_cue", "not_found", "no_url",
        "offsite_redirect", "robots_disallowed", "personal_data",
    }  # fmt: skip


def test_text_and_segments_are_what_was_said(nights: dict[str, Any]) -> None:
    rows = {_key(r): r for r in nights["rows"]}
    wrong_text, wrong_starts, checked = [], [], 0
    for truth in nights["truth"]:
        if not truth["row"] or truth["personal_data"]:
            continue
        row = rows[_key(truth)]
        checked += 1
        if row["text"] != truth["text"]:
            wrong_text.append((truth["kind"], truth["subtitle_url"]))
        if truth["segment_starts_ms"] is not None:
            starts = [s["start_ms"] for s in row["segments"]]
            if starts != truth["segment_starts_ms"]:
                wrong_starts.append((truth["kind"], truth["subtitle_url"]))
        assert row["problem"] == truth["problem"], f"case {truth['kind']} {truth['subtitle_url']}"
        assert row["cues_skipped"] == truth["cues_skipped"], f"case {truth['kind']} {truth['subtitle_url']}"
        assert (row["locale"], row["language"], row["auto_generated"], row["event_id"]) == (
            truth["locale"],
            truth["language"],
            truth["auto_generated"],
            truth["event_id"],
        ), f"case {truth['subtitle_url']}"
    assert checked > 30
    assert wrong_text == []
    assert wrong_starts == []


def test_a_file_that_cannot_be_had_leaves_its_row_without_text(nights: dict[str, Any]) -> None:
    rows = {_key(r): r for r in nights["rows"]}
    without = [t for t in nights["truth"] if t["row"] and t["text"] is None]
    assert {t["kind"] for t in without} >= {"not_found", "oversize", "offsite_redirect", "robots_disallowed"}
    for truth in without:
        row = rows[_key(truth)]
        assert (row["text"], row["segments"], row["problem"]) == (None, [], truth["problem"]), (
            f"case {truth['kind']}"
        )


def test_no_syntax_markup_entity_bom_or_cr_in_any_text(nights: dict[str, Any]) -> None:
    for row in nights["rows"]:
        texts = [row["text"] or "", *(s["text"] for s in row["segments"])]
        for text in texts:
            assert not SYNTAX.search(text), f"case {row['subtitle_url']}: {SYNTAX.search(text)}"
            assert text == text.strip() and "  " not in text, f"case {row['subtitle_url']}"


def test_each_subtitle_file_is_asked_once_and_none_it_must_not(nights: dict[str, Any]) -> None:
    asked = Counter(
        urlsplit(r.path).path
        for r in nights["first_requests"]
        if r.origin == "assets" and r.kind == "subtitle"
    )
    assert asked, "no subtitle file was asked"
    assert max(asked.values()) == 1, [p for p, n in asked.items() if n > 1]
    served = {urlsplit(t["subtitle_url"]).path for t in nights["truth"] if t["row"]}
    forbidden = {
        urlsplit(t["subtitle_url"]).path for t in nights["truth"] if t["kind"] == "robots_disallowed"
    }
    assert set(asked) <= served
    assert not set(asked) & forbidden
    # Every file the crawl may fetch was fetched.
    assert served - forbidden <= set(asked)


def test_no_spoken_address_or_number_in_any_file_written(nights: dict[str, Any]) -> None:
    digits = re.sub(r"\D", "", SPOKEN_PHONE)
    spoken = [t for t in nights["truth"] if t["personal_data"]]
    assert spoken and all(SPOKEN_EMAIL in t["text"] for t in spoken)
    found = []
    for path in nights["work"].rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if SPOKEN_EMAIL.encode() in data or SPOKEN_PHONE.encode() in data:
            found.append(str(path))
        if path.suffix in (".jsonl", ".json", ".md") and digits in re.sub(rb"\D", b"", data).decode():
            # A phone number written with other separators is still the number.
            found.append(f"{path} (digits)")
    assert found == []
    rows = {_key(r): r for r in nights["rows"]}
    for truth in spoken:
        text = rows[_key(truth)]["text"]
        assert text and SPOKEN_EMAIL not in text and "[email removed]" in text, (
            f"case {truth['subtitle_url']}"
        )


def test_load_dataset_reads_every_row(nights: dict[str, Any]) -> None:
    out = nights["work"] / "out"
    loaded = datasets.load_dataset(str(out), "transcripts", split="train")
    assert loaded.num_rows == len(nights["rows"])
    assert sorted(map(_key, loaded.to_list())) == sorted(map(_key, nights["rows"]))
    assert loaded.features["segments"].feature["start_ms"].dtype == "int32"


def test_an_unchanged_night_asks_little_and_publishes_the_same_transcripts(nights: dict[str, Any]) -> None:
    out = nights["work"] / "out" / "data" / "transcripts"
    asked = [r for r in nights["second_requests"] if r.kind != "robots" and r.kind != "assets_robots"]
    assert len(asked) <= max(10, nights["lectures"] // 20), Counter(r.kind for r in asked)
    assert not [r for r in asked if r.origin == "assets"]
    after = {p.name: p.read_bytes() for p in out.glob("*.parquet")}
    assert after == nights["files"]


def test_a_file_past_the_cap_is_cut_short_not_read_whole(nights: dict[str, Any]) -> None:
    oversize = [t for t in nights["truth"] if t["kind"] == "oversize"]
    assert oversize
    stats = nights["first"][2]
    assert stats.get("underline/subtitles/cut_short") == len(oversize)


def test_a_file_read_again_is_revalidated_and_kept(nights: dict[str, Any]) -> None:
    # The third night read every page again: each subtitle file the crawl had was asked with its
    # validators, the replica said 304, and the transcripts stand unchanged.
    assert nights["third"][0] == 3, nights["third"][1]
    files = [r for r in nights["third_requests"] if r.origin == "assets" and r.kind == "subtitle"]
    had = {urlsplit(t["subtitle_url"]).path for t in nights["truth"] if t["row"] and t["text"] is not None}
    revalidated = {urlsplit(r.path).path for r in files if r.status == 304}
    assert revalidated == had
    assert all(r.if_none_match for r in files if urlsplit(r.path).path in had)
    assert nights["third"][2].get("underline/subtitles/unchanged") == len(had)
    out = nights["work"] / "out" / "data" / "transcripts"
    assert {p.name: p.read_bytes() for p in out.glob("*.parquet")} == nights["files"]


def test_subtitle_requests_are_paid_from_the_page_budget(tmp_path: Path) -> None:
    # A first night at a budget of 45 requests: every page, track list and subtitle file counts; a
    # lecture is bought at three, and the files are paid from what the pages leave.
    site = build_site(load_records(), lectures=LECTURES)
    with ReplicaServer(site) as server:
        status, err, stats = run(server, tmp_path, "--page-budget", "45")
        sent = [r for r in server.requests if r.kind not in ("robots", "assets_robots", "listing")]
    assert status == 0, err
    kinds = Counter(r.kind for r in sent)
    assert len(sent) <= 45, kinds
    assert kinds["lecture_page"] == 15 and kinds["transcripts"] == 15, kinds
    assert kinds["subtitle"] == stats.get("underline/subtitles/asked", 0) > 0, kinds
    rows = pq.read_table(tmp_path / "out" / "data" / "transcripts").to_pylist()
    assert {row["lecture_id"] for row in rows} <= {
        r.path.split("filter%5Blecture_id%5D=")[1].split("&")[0] for r in sent if r.kind == "transcripts"
    }
