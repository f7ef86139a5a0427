"""Lecture records linked to Anthology papers: fields, content hash, change files, changelog, the CSV."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest

from crawler import schema
from crawler.anthology.links import (
    LINK_COLUMNS,
    LinkRow,
    LinksFile,
    LinkSummary,
    is_doi,
    link_records,
    link_rows,
    links_csv,
    links_file,
    read_links_csv,
    safe_cell,
)
from crawler.anthology.reader import MAX_TEXT, ReadSummary, read_papers
from crawler.app import cli
from crawler.publish.changes import compute_changes
from crawler.publish.diff import diff_releases
from crawler.publish.release import publish_release
from crawler.replica.gold import content_hash
from crawler.schedule.changelog import Changelog, changelog_of
from crawler.schedule.config import ConfigError, load_config
from crawler.schema import check as schema_check
from tests.test_publish_parquet import PROVENANCE, make_record

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "anthology"
PAPERS, _ = read_papers(FIXTURES)
BY_ID = {p.anthology_id: p for p in PAPERS}


def talk_of(index: int, anthology_id: str, **changes: Any) -> schema.Lecture:
    """A staged record for the talk of a fixture paper, as the site lists it."""
    paper = BY_ID[anthology_id]
    fields: dict[str, Any] = {
        "title": paper.title,
        "abstract": paper.abstract,
        "authors": [{"name": a.name, "affiliations": [], "orcid": None} for a in paper.authors],
    }
    record = make_record(index, **{**fields, **changes})
    record["content_sha256"] = schema.content_sha256(record)
    return schema.Lecture.from_json(record)


def unlinked(index: int) -> schema.Lecture:
    record = make_record(index, title=f"A Talk Without Paper Number {index}")
    record["content_sha256"] = schema.content_sha256(record)
    return schema.Lecture.from_json(record)


def test_a_record_without_a_paper_keeps_its_hash_and_gets_nulls() -> None:
    records = [unlinked(i) for i in range(3)]
    linked, summary = link_records(records, PAPERS)
    for before, after in zip(records, linked, strict=True):
        assert after.anthology_id is None and after.anthology_url is None, f"{before=}, {after=}"
        assert after.anthology_match is None, f"{before=}, {after=}"
        # Published before these fields existed, or with no paper found: one hash (the replica's own
        # implementation of the hash knows nothing of the Anthology fields).
        assert after.content_sha256 == before.content_sha256, f"{before=}, {after=}"
        assert after.content_sha256 == content_hash(before.to_json()), f"{before=}, {after=}"
    assert summary.linked == 0 and summary.lectures == 3 and summary.papers == 179


def test_a_linked_record_has_its_id_url_evidence_and_a_new_valid_hash() -> None:
    record = talk_of(1, "2025.emnlp-main.26")
    (linked,), summary = link_records([record], PAPERS)
    assert linked.anthology_id == "2025.emnlp-main.26"
    assert linked.anthology_url == "https://aclanthology.org/2025.emnlp-main.26/"
    assert linked.anthology_match == {
        "method": "exact_title+authors+abstract",
        "score": 1.0,
        "title_score": 1.0,
        "author_score": 1.0,
        "abstract_score": 1.0,
        "margin": linked.anthology_match["margin"],
        "refused_for_date": 0,
    }
    assert 0 < linked.anthology_match["margin"] <= 1
    assert schema_check.validate_record(linked.values()) == []
    assert linked.content_sha256 == schema.content_sha256(linked.values()) != record.content_sha256
    assert summary.linked == 1 and summary.by_event == {"502": {"lectures": 1, "linked": 1}}


def test_a_link_change_is_a_change_and_new_scores_alone_are_not() -> None:
    previous, _ = link_records([talk_of(1, "2025.emnlp-main.1"), talk_of(2, "2025.emnlp-main.2")], PAPERS)
    assert [r.anthology_id for r in previous] == ["2025.emnlp-main.1", "2025.emnlp-main.2"]
    # The Anthology drops paper 1 (no link any more) and paper 2's scores move (another abstract).
    others = [p for p in PAPERS if p.anthology_id != "2025.emnlp-main.1"]
    edited = talk_of(2, "2025.emnlp-main.2", abstract=BY_ID["2025.emnlp-main.2"].abstract[:400])
    current, _ = link_records([talk_of(1, "2025.emnlp-main.1"), edited], others)
    assert current[0].anthology_id is None
    assert current[1].anthology_id == "2025.emnlp-main.2"
    assert current[1].anthology_match != previous[1].anthology_match
    # Paper 2's abstract edit is a change of the lecture; for paper 1, only the link changed.
    rows = {r["lecture_id"]: r for r in compute_changes(previous, current)}
    first, second = current[0].lecture_id, current[1].lecture_id
    assert rows[first]["change"] == "changed"
    assert rows[first]["changed_fields"] == ["anthology_id", "anthology_url", "content_sha256"]
    assert rows[first]["lecture"].anthology_id is None
    assert rows[second]["changed_fields"] == ["abstract", "content_sha256"]
    log = changelog_of(diff_releases(previous, current))
    assert log.changed == {first: ["anthology_id", "anthology_url"], second: ["abstract"]}
    # The same link with other scores: nothing to report.
    rescored = [
        dataclasses.replace(previous[0], anthology_match={**previous[0].anthology_match, "score": 0.7})
    ]
    assert compute_changes(previous[:1], rescored) == []
    assert changelog_of(diff_releases(previous[:1], rescored)) == Changelog()


def test_the_csv_lists_linked_lectures_on_the_site_in_id_order() -> None:
    records = [
        {"anthology_id": "2025.emnlp-main.10", "url": "https://u/lecture/3", "video_url": None},
        {"anthology_id": "2025.emnlp-main.2", "url": "https://u/lecture/2", "video_url": "https://v/2.m3u8"},
        {"anthology_id": None, "url": "https://u/lecture/4"},
        {"anthology_id": "2025.emnlp-main.7", "url": "https://u/lecture/5", "withdrawn": True},
        {"anthology_id": "P18-1007", "url": "https://u/lecture/6", "video_doi": "10.48448/ab,cd"},
    ]
    rows = link_rows([schema.Lecture.from_json(r) for r in records])
    assert [r.anthology_id for r in rows] == ["2025.emnlp-main.2", "2025.emnlp-main.10", "P18-1007"]
    text = links_csv(rows)
    assert text.splitlines() == [
        ",".join(LINK_COLUMNS),
        "2025.emnlp-main.2,https://u/lecture/2,https://v/2.m3u8,",
        "2025.emnlp-main.10,https://u/lecture/3,,",
        'P18-1007,https://u/lecture/6,,"10.48448/ab,cd"',
    ]
    assert read_links_csv(text) == rows
    assert rows[2] == LinkRow("P18-1007", "https://u/lecture/6", None, "10.48448/ab,cd")
    with pytest.raises(ValueError, match="header"):
        read_links_csv("id,url\n")
    with pytest.raises(ValueError, match="line 2"):
        read_links_csv(",".join(LINK_COLUMNS) + "\nx\n")


def test_the_configuration_and_the_command_line_take_the_anthology(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(f'[publish]\nanthology = "{FIXTURES}"\n', encoding="utf-8")
    assert load_config(config).anthology == FIXTURES
    config.write_text("[publish]\nanthology = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="anthology has the wrong type"):
        load_config(config)
    state = tmp_path / "state"
    state.mkdir()
    code = cli.main(
        ["publish", "--state", str(state), "--out", str(tmp_path / "out"), "--anthology", str(tmp_path / "x")]
    )
    assert code == 2


# What starts a formula in a spreadsheet: OWASP's characters, their full-width forms, line feed and NUL.
FORMULA_STARTS = ["=", "+", "-", "@", "\t", "\r", "\n", "\0", "\uff1d", "\uff0b", "\uff0d", "\uff20"]


def test_a_cell_that_starts_a_formula_is_written_after_a_quote() -> None:
    for start in FORMULA_STARTS:
        cell = f'{start}HYPERLINK("https://x/")'
        assert safe_cell(cell) == f"'{cell}", f"case {start!r}"
        # Once is enough: a neutralised cell is left as it is.
        assert safe_cell(safe_cell(cell)) == f"'{cell}", f"case {start!r}"
    for cell in ("", "'=1", "https://u/lecture/1", " =1", "10.48448/=1", "2025.emnlp-main.1"):
        assert safe_cell(cell) == cell, f"case {cell!r}"
    # Every cell of the file, whatever built the row.
    hostile = LinkRow("=1+1", "@SUM(A1)", "-2+3", "+cmd|' /C calc'!A0")
    text = links_csv([hostile])
    assert text.splitlines()[1] == "'=1+1,'@SUM(A1),'-2+3,'+cmd|' /C calc'!A0"
    assert read_links_csv(text) == [LinkRow("'=1+1", "'@SUM(A1)", "'-2+3", "'+cmd|' /C calc'!A0")]


@pytest.mark.parametrize(
    ("doi", "valid"),
    [
        ("10.48448/ab12-cd34", True),
        ("10.18653/v1/2025.emnlp-main.1", True),
        ('10.1000/a,b"c;(d)', True),
        ('=HYPERLINK("https://x/")', False),
        ("-10.48448/ab12", False),
        ("@10.48448/ab12", False),
        ("10.48448/ab 12", False),
        ("10.48448/ab\t12", False),
        ("10.48448/ab12\r\n=1+1", False),
        ("10.48448/", False),
        ("10.484/ab12", False),
        ("doi:10.48448/ab12", False),
        ("https://doi.org/10.48448/ab12", False),
        ("11.48448/ab12", False),
        ("", False),
    ],
)
def test_is_doi(doi: str, valid: bool) -> None:
    assert is_doi(doi) is valid


def test_the_links_file_leaves_out_bad_ids_and_dois_and_counts_them() -> None:
    records = [
        {"anthology_id": "2025.emnlp-main.1", "url": "https://u/lecture/1", "video_doi": "=1+1"},
        {"anthology_id": "2025.emnlp-main.2", "url": "https://u/lecture/2", "video_doi": " 10.48448/ab-cd "},
        {"anthology_id": "=cmd|' /C calc'!A0", "url": "https://u/lecture/3", "video_doi": "10.48448/x"},
        {"anthology_id": "2025.emnlp-Main.3", "url": "https://u/lecture/4"},
        {"anthology_id": "P19-10001", "url": "https://u/lecture/5"},
        {"anthology_id": "P19-1001", "url": "https://u/lecture/6", "video_doi": "10.48448/a b"},
        {"anthology_id": "P19-1002", "url": "https://u/lecture/7", "video_url": "@SUM(A1)"},
        {"anthology_id": "2025.emnlp-main.9", "url": "https://u/lecture/8", "withdrawn": True},
    ]
    made = links_file([schema.Lecture.from_json(r) for r in records])
    assert made == LinksFile(
        rows=[
            LinkRow("2025.emnlp-main.1", "https://u/lecture/1", None, None),
            LinkRow("2025.emnlp-main.2", "https://u/lecture/2", None, "10.48448/ab-cd"),
            LinkRow("P19-1001", "https://u/lecture/6", None, None),
            LinkRow("P19-1002", "https://u/lecture/7", "'@SUM(A1)", None),
        ],
        invalid_ids=3,
        invalid_dois=2,
        neutralised=1,
    )
    assert made.entry() == {"rows": 4, "invalid_ids": 3, "invalid_dois": 2, "neutralised_cells": 1}
    assert links_csv(made.rows).splitlines()[1:] == [
        "2025.emnlp-main.1,https://u/lecture/1,,",
        "2025.emnlp-main.2,https://u/lecture/2,,10.48448/ab-cd",
        "P19-1001,https://u/lecture/6,,",
        "P19-1002,https://u/lecture/7,'@SUM(A1),",
    ]


def test_a_release_writes_a_safe_links_file_counts_what_it_left_out_and_checks_it(tmp_path: Path) -> None:
    records = [make_record(i) for i in range(4)]
    records[0] |= {"anthology_id": "2025.emnlp-main.1", "video_doi": '=HYPERLINK("https://x/")'}
    records[1] |= {"anthology_id": "2025.emnlp-main.2", "video_doi": "10.48448/ab-cd"}
    records[1]["video_url"] = "https://v/2.m3u8"
    records[2] |= {"anthology_id": "=1+1", "video_doi": "10.48448/ef-gh"}
    for record in records:
        record["anthology_url"] = (
            f"https://aclanthology.org/{record['anthology_id']}/" if record.get("anthology_id") else None
        )
        record["content_sha256"] = schema.content_sha256(record)
    out = tmp_path / "release"
    publish_release(records, out, name="emnlp-2025", provenance=PROVENANCE)
    rows = list(csv.reader(io.StringIO((out / "anthology-links.csv").read_text(encoding="utf-8"))))
    assert rows == [
        list(LINK_COLUMNS),
        ["2025.emnlp-main.1", records[0]["url"], "", ""],
        ["2025.emnlp-main.2", records[1]["url"], "https://v/2.m3u8", "10.48448/ab-cd"],
    ]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["anthology_links"] == {
        "path": "anthology-links.csv",
        "rows": 2,
        "invalid_ids": 1,
        "invalid_dois": 1,
        "neutralised_cells": 0,
    }


def test_the_link_summary_tells_what_reading_left_out() -> None:
    read = ReadSummary(files=2, skipped=(), papers=7, capped=2, invalid_ids=1, notes=["a", "b", "c"])
    summary = LinkSummary.of([], papers=7, by_event={}, read=read)
    assert summary.line() == (
        "anthology: 0 of 0 lectures linked to 7 papers, 0 ambiguous, 0 in conflict; left out of the "
        f"Anthology's files: 2 texts past {MAX_TEXT} characters, 1 papers whose id is not the Anthology's"
    )
    report = summary.as_dict()
    assert (report["capped"], report["invalid_ids"], report["read_notes"]) == (2, 1, ["a", "b", "c"])
    plain = LinkSummary.of([], papers=7, by_event={}, read=dataclasses.replace(read, capped=0, invalid_ids=0))
    assert plain.line() == "anthology: 0 of 0 lectures linked to 7 papers, 0 ambiguous, 0 in conflict"
