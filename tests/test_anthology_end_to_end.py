"""Replica -> crawl -> publish with ``--anthology``: exact links in the Parquet, ``anthology-links.csv``,
the card's linked share per event, and a change of the Anthology's files seen in the change files.

The replica gives a quarter of its EMNLP 2025 papers' talks to EMNLP 2024 (held November 2024): those
talks cannot present a paper published a year later, so they get none, and each is a near miss."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crawler.replica.layout import load_records
from tests.support.replica import crawl_args, eventcrawl, fast_crawl_settings, running_replica

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "anthology"
DROPPED = "2025.emnlp-main.5"


def collapse(text: str) -> str:
    return " ".join(text.split())


def expected_ids() -> dict[str, str]:
    """Title -> Anthology id of the replica's records that are Anthology papers (the replica's own data,
    read independently of the linker)."""
    papers = [r for r in load_records() if r.get("anthology_id")]
    return {collapse(str(r["title"])): str(r["anthology_id"]) for r in papers}


def without_paper(source: Path, target: Path, paper_id: str) -> None:
    """A copy of the fixture collection with one main-volume paper taken out."""
    number = paper_id.rsplit(".", 1)[1]
    text = source.read_text(encoding="utf-8")
    pattern = re.compile(rf'\n    <paper id="{number}">.*?</paper>', re.DOTALL)
    head = text.index('<volume id="main"')
    cut = pattern.sub("", text[head:], count=1)
    assert cut != text[head:]
    target.mkdir(parents=True)
    (target / source.name).write_text(text[:head] + cut, encoding="utf-8")


# The event whose talks are of the Anthology files' time (EMNLP 2025), and the one a year before it.
OF_THE_TIME, YEAR_BEFORE = "502", "469"


def expected_links(rows: list[dict[str, Any]]) -> dict[str, str | None]:
    """Lecture id -> the Anthology id it must get: its paper's for the talks of EMNLP 2025, none for
    those of EMNLP 2024."""
    wanted = expected_ids()
    return {
        r["lecture_id"]: wanted.get(collapse(r["title"])) if r["event_id"] == OF_THE_TIME else None
        for r in rows
    }


def refused_talks(rows: list[dict[str, Any]]) -> list[str]:
    """The EMNLP 2024 talks built from EMNLP 2025 papers."""
    wanted = expected_ids()
    return [r["lecture_id"] for r in rows if r["event_id"] == YEAR_BEFORE and collapse(r["title"]) in wanted]


def lectures(out: Path) -> list[dict[str, Any]]:
    return pq.read_table(out / "data" / "lectures").to_pylist()


def changes(out: Path, version: str) -> list[dict[str, Any]]:
    return pq.read_table(out / "changes" / f"{version}.parquet").to_pylist()


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("anthology")
    state, out = work / "state", work / "dataset"
    events = ["--event-id", "502", "--event-id", "469"]
    with running_replica(work / "replica", "--side-event-every", "4", *events) as replica:
        crawl = eventcrawl(*crawl_args(replica.base_url, state, *events, *fast_crawl_settings()))
        truth = replica.ground_truth()
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    publish = ["publish", "--state", str(state), "--out", str(out), "--name", "emnlp"]
    plain = eventcrawl(*publish)
    assert plain.returncode == 0, plain.stderr[-3000:]
    before = lectures(out)
    linked = eventcrawl(*publish, "--anthology", str(FIXTURES))
    assert linked.returncode == 0, linked.stderr[-3000:]
    after = lectures(out)
    card = (out / "README.md").read_text(encoding="utf-8")
    links = (out / "anthology-links.csv").read_text(encoding="utf-8")
    fewer = work / "anthology-fewer"
    without_paper(FIXTURES / "2025.emnlp.xml", fewer, DROPPED)
    relinked = eventcrawl(*publish, "--anthology", str(fewer))
    assert relinked.returncode == 0, relinked.stderr[-3000:]
    return {
        "truth": truth,
        "out": out,
        "before": before,
        "after": after,
        "card": card,
        "links": links,
        "stdout": linked.stdout,
        "last": lectures(out),
    }


def test_lectures_built_from_anthology_papers_get_exactly_their_ids(published: dict[str, Any]) -> None:
    rows = published["after"]
    assert len(rows) == len(published["truth"]) == 740
    expected = expected_links(rows)
    assert sum(1 for v in expected.values() if v) == 132
    assert len(refused_talks(rows)) == 47
    assert {r["lecture_id"]: r["anthology_id"] for r in rows} == expected
    for row in rows:
        if row["anthology_id"]:
            assert row["anthology_url"] == f"https://aclanthology.org/{row['anthology_id']}/", f"{row=}"
            assert row["anthology_match"]["method"].startswith("exact_title"), f"{row=}"
            assert row["anthology_match"]["score"] >= 0.9, f"{row=}"
        else:
            assert row["anthology_url"] is None and row["anthology_match"] is None, f"{row=}"
    assert (
        "anthology: 132 of 740 lectures linked to 179 papers, 0 ambiguous, 0 in conflict; "
        "47 lectures with a paper refused for its date\n"
    ) in published["stdout"]


def test_a_talk_of_the_year_before_gets_no_later_paper(published: dict[str, Any]) -> None:
    """An EMNLP 2024 talk built from an EMNLP 2025 paper matches it in title, authors and abstract: the
    paper is refused all the same, and the talk's links stay null."""
    rows = {r["lecture_id"]: r for r in published["after"]}
    for lecture_id in refused_talks(published["after"]):
        row = rows[lecture_id]
        assert (row["event_name"], row["held_at"].year) == ("EMNLP 2024", 2024), f"{row=}"
        assert (row["anthology_id"], row["anthology_url"], row["anthology_match"]) == (None, None, None), (
            f"{row=}"
        )


def test_links_do_not_change_the_hash_of_lectures_without_a_paper(published: dict[str, Any]) -> None:
    before = {r["lecture_id"]: r for r in published["before"]}
    for row in published["after"]:
        old = before[row["lecture_id"]]
        assert old["anthology_id"] is None, f"{row=}"
        assert (row["content_sha256"] == old["content_sha256"]) == (row["anthology_id"] is None), f"{row=}"


def test_the_release_holds_the_links_csv(published: dict[str, Any]) -> None:
    rows = list(csv.reader(io.StringIO(published["links"])))
    assert rows[0] == ["anthology_id", "lecture_url", "video_url", "video_doi"]
    by_url = {r["url"]: r for r in published["after"]}
    wanted = expected_ids()
    linked = [v for v in expected_links(published["after"]).values() if v]
    assert len(rows) == 1 + 132
    assert sorted(r[0] for r in rows[1:]) == sorted(linked)
    for anthology_id, url, video_url, video_doi in rows[1:]:
        lecture = by_url[url]
        assert wanted[collapse(lecture["title"])] == anthology_id, (
            f"{anthology_id=}, {url=}, {video_url=}, {video_doi=}"
        )
        assert (video_url or None, video_doi or None) == (lecture["video_url"], lecture["video_doi"]), (
            f"{anthology_id=}, {url=}, {video_url=}, {video_doi=}"
        )
    numbers = [int(r[0].rsplit(".", 1)[1]) for r in rows[1:] if "-main." in r[0]]
    assert numbers == sorted(numbers)


def test_the_card_shows_the_linked_share_per_event(published: dict[str, Any]) -> None:
    expected = expected_links(published["after"])
    for event_id, linked_wanted in ((OF_THE_TIME, 132), (YEAR_BEFORE, 0)):
        group = [r for r in published["after"] if r["event_id"] == event_id]
        linked = sum(1 for r in group if expected[r["lecture_id"]])
        assert linked == linked_wanted, f"{event_id=}"
        share = f"{100 * linked / len(group):.1f}%"
        line = f"| Linked to the ACL Anthology | {linked} of {len(group)} lectures ({share}) |"
        assert line in published["card"], event_id
    assert "`anthology_match`" in published["card"] and "anthology-links.csv" in published["card"]


def test_linking_and_relinking_show_in_the_change_files(published: dict[str, Any]) -> None:
    out = published["out"]
    versions = sorted(p.stem for p in (out / "changes").glob("*.parquet"))
    assert len(versions) == 3
    first_links = changes(out, versions[1])
    assert len(first_links) == 132
    assert {c["change"] for c in first_links} == {"changed"}
    assert {tuple(c["changed_fields"]) for c in first_links} == {
        ("anthology_id", "anthology_url", "content_sha256")
    }
    # The Anthology's files lost one paper: its lecture lost its link, and nothing else changed.
    dropped = [r for r in published["after"] if r["anthology_id"] == DROPPED]
    (relinked,) = changes(out, versions[2])
    assert relinked["lecture_id"] == dropped[0]["lecture_id"]
    assert relinked["changed_fields"] == ["anthology_id", "anthology_url", "content_sha256"]
    assert relinked["lecture"]["anthology_id"] is None
    last = {r["lecture_id"]: r["anthology_id"] for r in published["last"]}
    assert sum(1 for v in last.values() if v) == 131


def test_a_broken_anthology_file_leaves_the_release_as_it_was(
    published: dict[str, Any], tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(FIXTURES, broken)
    (broken / "2025.emnlp.xml").write_text('<collection id="2025.emnlp"><volume id="main">', "utf-8")
    out = published["out"]
    before = (out / "manifest.json").read_bytes()
    state = out.parent / "state"
    result = eventcrawl("publish", "--state", str(state), "--out", str(out), "--anthology", str(broken))
    assert result.returncode == 2
    assert "2025.emnlp.xml: not well-formed XML" in result.stderr
    assert (out / "manifest.json").read_bytes() == before


def test_a_collection_given_twice_stops_the_publish_with_one_line(
    published: dict[str, Any], tmp_path: Path
) -> None:
    out = published["out"]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    # The release as the last publish left it: one paper fewer, every DOI of the replica a DOI.
    assert manifest["anthology_links"] == {
        "path": "anthology-links.csv",
        "rows": 131,
        "invalid_ids": 0,
        "invalid_dois": 0,
        "neutralised_cells": 0,
    }
    twice = tmp_path / "twice"
    shutil.copytree(FIXTURES, twice)
    (twice / "old").mkdir()
    shutil.copy(FIXTURES / "2025.emnlp.xml", twice / "old" / "2025.emnlp.xml")
    before = (out / "manifest.json").read_bytes()
    state = out.parent / "state"
    result = eventcrawl("publish", "--state", str(state), "--out", str(out), "--anthology", str(twice))
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.splitlines() == [
        f"eventcrawl: {twice / 'old' / '2025.emnlp.xml'}: collection 2025.emnlp is also in "
        f"{twice / '2025.emnlp.xml'}; give each collection once (remove the copy)"
    ]
    assert (out / "manifest.json").read_bytes() == before
