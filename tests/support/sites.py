"""Replica sites changed the way a live site changes between two crawls."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from crawler.replica.layout import Lecture, ReplicaSite


def without_lectures(site: ReplicaSite, gone: Iterable[str]) -> ReplicaSite:
    """``site`` with lectures removed and every link to them dropped (or pointed elsewhere)."""
    gone = set(gone)
    kept = {i: lec for i, lec in site.lectures.items() if i not in gone}
    fallback = next(iter(kept.values()))
    lectures: dict[str, Lecture] = {}
    for lecture_id, lecture in kept.items():
        related = tuple(link for link in lecture.related if link.lecture_id not in gone)
        nxt = lecture.next if lecture.next.lecture_id not in gone else fallback.next
        similar = lecture.similar if lecture.similar and lecture.similar.lecture_id not in gone else None
        lectures[lecture_id] = dataclasses.replace(lecture, related=related, next=nxt, similar=similar)
    return dataclasses.replace(site, lectures=lectures)


def with_edit(site: ReplicaSite, lecture_id: str, **changes: object) -> ReplicaSite:
    lectures = dict(site.lectures)
    lectures[lecture_id] = dataclasses.replace(lectures[lecture_id], **changes)  # type: ignore[arg-type]
    return dataclasses.replace(site, lectures=lectures)
