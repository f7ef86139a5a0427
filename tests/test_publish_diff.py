"""One diff between two releases: the change file, the card and the run's changelog all tell it."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from crawler.app.next_release import NextRelease
from crawler.publish import diff as diffs
from crawler.publish import events as release_events
from crawler.publish.changes import read_changes
from crawler.publish.diff import LectureChange, ReleaseDiff, diff_releases
from crawler.publish.previous import read_previous_release
from crawler.publish.release import publish_release
from crawler.publish.removals import Redactions, RemovalRequests
from crawler.publish.summaries import SpilledEvents
from crawler.schedule import run
from crawler.schedule.changelog import Changelog, changelog_of
from crawler.schema import FIELDS_BY_NAME, VOLATILE_FIELDS, Lecture, content_sha256, lecture_order
from tests.test_publish_parquet import PROVENANCE, make_record

ADDED = "130150"


def first_records() -> list[dict[str, Any]]:
    # 130105 already left the site: it comes back in the next release.
    return [make_record(i, withdrawn=True) if i == 5 else make_record(i) for i in range(10)]


def next_records() -> list[dict[str, Any]]:
    changed = {
        1: {"title": "A Corrected Title"},
        2: {"withdrawn": True},
        4: {
            "anthology_id": "2025.emnlp-main.4",
            "anthology_url": "https://aclanthology.org/2025.emnlp-main.4/",
        },
        5: {"withdrawn": False, "abstract": "A new abstract for a lecture that is back on the site."},
        # Not content: a change file lists it, the changelog and the card's hash count do not.
        6: {"source_urls": ["https://underline.io/lecture/130106"]},
    }
    kept = [make_record(i, **changed.get(i, {})) for i in range(10) if i != 3]
    return [*kept, make_record(50)]


def card_counts(card: str) -> tuple[dict[str, int], dict[str, int]]:
    """The card's two accounts of the changes: by content hash, and the change file's counts."""
    text = " ".join(card.split())
    compared = re.search(
        r"(\d+) lecture\(s\) added, (\d+) changed \(another `content_sha256`\), (\d+) removed", text
    )
    listed = re.search(r"\((\d+) added, (\d+) changed, (\d+) withdrawn, (\d+) removed\)", text)
    assert compared is not None and listed is not None
    by_hash = dict(zip(("added", "changed", "removed"), map(int, compared.groups()), strict=True))
    by_file = dict(zip(("added", "changed", "withdrawn", "removed"), map(int, listed.groups()), strict=True))
    return by_hash, by_file


def release_changelog(out: Path) -> Changelog:
    """The changelog ``eventcrawl run`` reports for publishing :func:`next_records` over ``out``."""
    previous = read_previous_release(out)
    events = SpilledEvents()
    for lecture in map(Lecture.from_json, next_records()):
        events.add(str(lecture.event_id), [lecture])
    release = NextRelease(events, previous, RemovalRequests(), Redactions.parse([]), [])
    return changelog_of(run.release_diff(release), retired_events=release.retired_events)


def publish_both(tmp_path: Path) -> tuple[Path, Changelog, str]:
    out = tmp_path / "release"
    publish_release(first_records(), out, name="emnlp", provenance=PROVENANCE)
    changelog = release_changelog(out)
    result = publish_release(
        next_records(), out, name="emnlp", provenance={**PROVENANCE, "crawl_date": "2025-11-20"}
    )
    assert result.change_file is not None
    return out / result.change_file, changelog, (out / "README.md").read_text(encoding="utf-8")


def test_the_change_file_the_card_and_the_changelog_tell_one_diff(tmp_path: Path) -> None:
    change_file, changelog, card = publish_both(tmp_path)
    rows = {r["lecture_id"]: r for r in read_changes(change_file)}
    assert {i: (r["change"], r["changed_fields"]) for i, r in rows.items()} == {
        "130101": ("changed", ["title", "content_sha256"]),
        "130102": ("withdrawn", ["withdrawn"]),
        "130103": ("removed", []),
        "130104": ("changed", ["anthology_id", "anthology_url", "content_sha256"]),
        "130105": ("changed", ["abstract", "withdrawn", "content_sha256"]),
        "130106": ("changed", ["source_urls"]),
        ADDED: ("added", []),
    }
    by_hash, by_file = card_counts(card)
    assert by_file == {"added": 1, "changed": 4, "withdrawn": 1, "removed": 1}
    content = [i for i, r in rows.items() if "content_sha256" in r["changed_fields"]]
    assert (
        by_hash
        == {"added": 1, "changed": len(content), "removed": 1}
        == {"added": 1, "changed": 3, "removed": 1}
    )
    # The changelog: among lectures on the site, the same ids under its own words.
    back = [i for i, r in rows.items() if "withdrawn" in r["changed_fields"] and r["change"] == "changed"]
    assert changelog.added == sorted([ADDED, *back], key=lecture_order) == ["130105", ADDED]
    assert changelog.gone == [i for i, r in rows.items() if r["change"] in ("withdrawn", "removed")]
    # Changed as the change file says it: the same lectures, the same fields (the hash left out).
    assert changelog.changed == {
        i: [f for f in r["changed_fields"] if f != "content_sha256"]
        for i, r in rows.items()
        if r["change"] == "changed" and i not in back
    }
    assert changelog.changed == {
        "130101": ["title"],
        "130104": ["anthology_id", "anthology_url"],
        "130106": ["source_urls"],
    }


def without(diff: ReleaseDiff, lecture_id: str) -> ReleaseDiff:
    return ReleaseDiff(tuple(c for c in diff.changes if c.lecture_id != lecture_id))


def test_none_of_them_compares_the_releases_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A diff that leaves the added lecture out reaches all three: none computes its own."""
    real = diff_releases

    def doctored(previous: Any, current: Any) -> ReleaseDiff:
        return without(real(previous, current), ADDED)

    monkeypatch.setattr(release_events, "diff_releases", doctored)
    monkeypatch.setattr(run, "diff_releases", doctored)
    change_file, changelog, card = publish_both(tmp_path)
    assert ADDED not in {r["lecture_id"] for r in read_changes(change_file)}
    by_hash, by_file = card_counts(card)
    assert by_hash["added"] == by_file["added"] == 0
    assert changelog.added == ["130105"]


def test_a_diff_names_each_kind_once() -> None:
    before = [Lecture.from_json(r) for r in first_records()]
    after = [Lecture.from_json(r) for r in next_records()]
    diff = diff_releases(before, after)
    assert diff.counts() == {"added": 1, "changed": 3, "withdrawn": 1, "re-added": 1, "removed": 1}
    back: LectureChange = next(c for c in diff.changes if c.kind == "re-added")
    assert (back.lecture_id, back.was_live, back.is_live, back.content_changed) == (
        "130105",
        False,
        True,
        True,
    )
    assert diff_releases(after, after).empty
    # Compared: every field but when the page was fetched, the Anthology link's evidence and the volatile
    # fields (a view count).
    not_compared = ("fetched_at", "anthology_match", *VOLATILE_FIELDS)
    assert tuple(n for n in diffs.FIELD_NAMES if n not in not_compared) == diffs.COMPARED


# A value of each kind a volatile field may be of.
VOLATILE_VALUES: dict[str, Any] = {
    "int": 1234,
    "int32": -5,
    "float": 2.5,
    "bool": True,
    "string": "tonight's",
    "string_list": ["tonight's"],
    "timestamp": datetime(2025, 11, 7, 9, 30, tzinfo=UTC),
}


@pytest.mark.parametrize("name", VOLATILE_FIELDS)
def test_a_new_value_of_a_volatile_field_is_no_change(name: str) -> None:
    """The site changes it without the lecture changing: no diff names the lecture for it, and its hash
    stays."""
    before = Lecture.from_json(make_record(3))
    after = replace(before, **{name: VOLATILE_VALUES[FIELDS_BY_NAME[name].kind]})
    assert getattr(after, name) != getattr(before, name)
    assert diff_releases([before], [after]).empty
    assert content_sha256(after.values()) == content_sha256(before.values())
