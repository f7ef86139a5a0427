"""Replica sites changed the way a live site changes between two crawls."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

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


EDIT_SUFFIX = " We also release our code."


@dataclasses.dataclass(frozen=True)
class ChangedSite:
    """A site after a night of changes, and which lectures changed."""

    site: ReplicaSite
    edited: tuple[str, ...]
    removed: tuple[str, ...]


def changed_site(
    site: ReplicaSite, edits: int = 8, removals: int = 2, seed: int = 0, event_id: str = "502"
) -> ChangedSite:
    """``site`` with ``edits`` abstracts of the event edited (a sentence added) and ``removals`` of its
    lectures removed, drawn from ``seed``; the ground truth of the result is the site's new truth."""
    ids = sorted((i for i, lec in site.lectures.items() if lec.event_id == event_id), key=int)
    picked = random.Random(f"changed-{seed}").sample(ids, edits + removals)
    edited, removed = tuple(sorted(picked[:edits], key=int)), tuple(sorted(picked[edits:], key=int))
    changed = site
    for lecture_id in edited:
        changed = with_edit(changed, lecture_id, abstract=site.lectures[lecture_id].abstract + EDIT_SUFFIX)
    return ChangedSite(without_lectures(changed, removed), edited, removed)


@dataclass
class Override:
    """An answer a test gives in place of the replica's own (the replica's ``OverrideAnswer``)."""

    status: int
    body: bytes
    content_type: str | None
    headers: list[tuple[str, str]] = field(default_factory=list)
    drip_seconds: float = 0.0
