from __future__ import annotations

from typing import Any

from crawler.publish.diff import diff_releases
from crawler.schedule.changelog import changelog_of
from crawler.schema import Lecture


def row(lecture_id: str, event: str, sha: str, **fields: Any) -> Lecture:
    record = {"lecture_id": lecture_id, "event_id": event, "content_sha256": sha, "title": sha, **fields}
    return Lecture.from_json(record)


def test_changes_are_told_in_lecture_order_and_per_event() -> None:
    before = [row("90", "502", "a"), row("100", "502", "b"), row("7", "469", "c"), row("8", "469", "d")]
    after = [row("100", "502", "B"), row("90", "502", "a"), row("7", "469", "c"), row("11", "469", "e")]
    log = changelog_of(diff_releases(before, after))
    assert log.as_dict() == {"added": ["11"], "changed": {"100": ["title"]}, "gone": ["8"]}
    assert log.by_event() == {
        "469": {"added": ["11"], "changed": {}, "gone": ["8"]},
        "502": {"added": [], "changed": {"100": ["title"]}, "gone": []},
    }


def test_a_withdrawn_lecture_is_not_gone_twice_and_comes_back_as_added() -> None:
    before = [row("1", "502", "a", withdrawn=True), row("2", "502", "b")]
    after = [row("1", "502", "a"), row("2", "502", "b")]
    assert changelog_of(diff_releases(before, after)).as_dict() == {"added": ["1"], "changed": {}, "gone": []}


def test_a_lecture_changed_in_its_track_list_alone_is_changed_as_the_change_file_says() -> None:
    """One count: a field outside the content hash (the track list) that differs makes the lecture
    changed in the run's message and report exactly as in the change file."""
    from crawler.publish.changes import compute_changes, counts
    from crawler.schema import content_sha256

    def hashed(lecture: Lecture) -> Lecture:
        return Lecture.from_json({**lecture.to_json(), "content_sha256": content_sha256(lecture.values())})

    tracks = [{"locale": "en", "name": "English", "auto_generated": False, "url": "https://a/1.vtt"}]
    before = [hashed(row("5", "502", "a")), hashed(row("6", "502", "b"))]
    after = [hashed(row("5", "502", "a", subtitles=tracks)), hashed(row("6", "502", "b"))]
    log = changelog_of(diff_releases(before, after))
    assert log.as_dict() == {"added": [], "changed": {"5": ["subtitles"]}, "gone": []}
    assert counts(compute_changes(before, after))["changed"] == len(log.changed) == 1
    assert log.summary() == "0 added, 1 changed, 0 gone"
