"""What changed between two releases, lecture by lecture: computed once, read by every report of it.

:func:`diff_releases` compares the previous release's lectures with the next one's. The change files
(:mod:`crawler.publish.changes`), the run's changelog (:mod:`crawler.schedule.changelog`) and the card's
counts (:class:`crawler.publish.card.Changes`) are views of its :class:`ReleaseDiff`; none compares
lectures itself, so they cannot disagree on what changed.

A row of the previous release that no longer matches its own ``content_sha256`` was edited in place (a
release writes every row with the hash of its content): when the next release holds the lecture with that
same hash, the site did not change it; the release repaired the file. Such a lecture is *repaired*, not
changed, and stays out of every view of the diff but its count.

``fetched_at`` is refreshed by every crawl and ``anthology_match`` holds the evidence behind an Anthology
link, whose scores may move while the link stays: neither alone makes a lecture changed (a changed link
does, through ``anthology_id``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from crawler.schema import FIELD_NAMES, VOLATILE_FIELDS, Lecture, content_sha256

ChangeKind = Literal["added", "changed", "withdrawn", "re-added", "removed"]
CHANGE_KINDS: tuple[ChangeKind, ...] = ("added", "changed", "withdrawn", "re-added", "removed")
# When a lecture was read, how its link was decided, and what the listing refreshes every night (a view
# count) are no change of the lecture.
NOT_A_CHANGE = frozenset({"fetched_at", "anthology_match", *VOLATILE_FIELDS})
COMPARED: tuple[str, ...] = tuple(name for name in FIELD_NAMES if name not in NOT_A_CHANGE)


@dataclass(frozen=True)
class LectureChange:
    """One lecture that differs between the two releases.

    ``kind``: ``added`` (not in the previous release), ``removed`` (not in the next), ``withdrawn`` (left
    the site since), ``re-added`` (back on the site after it was withdrawn) or ``changed``. ``fields``:
    the compared fields that differ, in schema order (empty for added and removed lectures).
    """

    lecture_id: str
    kind: ChangeKind
    fields: tuple[str, ...]
    before: Lecture | None
    after: Lecture | None

    @property
    def event_id(self) -> str:
        """The lecture's event, as the next release has it (the previous one's for a removed lecture)."""
        lecture = self.after if self.after is not None else self.before
        return str(lecture.event_id or "") if lecture is not None else ""

    @property
    def was_live(self) -> bool:
        """In the previous release and on the site then."""
        return self.before is not None and not self.before.withdrawn

    @property
    def is_live(self) -> bool:
        """In the next release and on the site now."""
        return self.after is not None and not self.after.withdrawn

    @property
    def content_changed(self) -> bool:
        """In both releases, with another ``content_sha256``."""
        return (
            self.before is not None
            and self.after is not None
            and self.before.content_sha256 != self.after.content_sha256
        )


@dataclass(frozen=True)
class ReleaseDiff:
    """Every lecture that differs between two releases, in lecture id order (as text)."""

    changes: tuple[LectureChange, ...]
    # Lectures whose previous row was edited in place and that the next release restores as published.
    repaired: tuple[str, ...] = ()

    def counts(self) -> dict[ChangeKind, int]:
        found = Counter(c.kind for c in self.changes)
        return {kind: found[kind] for kind in CHANGE_KINDS}

    @property
    def empty(self) -> bool:
        return not self.changes

    def summary(self) -> DiffSummary:
        return DiffSummary(
            counts=self.counts(),
            content_changed=sum(1 for c in self.changes if c.content_changed),
            repaired=len(self.repaired),
        )


@dataclass(frozen=True)
class DiffSummary:
    """A diff's counts, which add up: a release published one event at a time sums its events' diffs
    without holding them. ``content_changed`` counts lectures in both releases with another hash."""

    counts: dict[ChangeKind, int]
    content_changed: int = 0
    repaired: int = 0

    @classmethod
    def none(cls) -> DiffSummary:
        return cls(counts=dict.fromkeys(CHANGE_KINDS, 0))

    def __add__(self, other: DiffSummary) -> DiffSummary:
        return DiffSummary(
            counts={kind: self.counts[kind] + other.counts[kind] for kind in CHANGE_KINDS},
            content_changed=self.content_changed + other.content_changed,
            repaired=self.repaired + other.repaired,
        )


def restored(before: Lecture, after: Lecture) -> bool:
    """Whether ``after`` is ``before`` as it was published, before its row was edited in place: the
    published row no longer matches its own content hash (its file was edited by hand)."""
    return (
        after.content_sha256 == before.content_sha256
        and after.withdrawn == before.withdrawn
        and bool(before.content_sha256)
        and content_sha256(before.values()) != before.content_sha256
    )


def _kind(before: Lecture, after: Lecture) -> ChangeKind:
    if after.withdrawn and not before.withdrawn:
        return "withdrawn"
    if before.withdrawn and not after.withdrawn:
        return "re-added"
    return "changed"


def diff_releases(previous: Iterable[Lecture], current: Iterable[Lecture]) -> ReleaseDiff:
    """The lectures that differ between ``previous`` and ``current``, matched by lecture id.

    ``previous`` is read as it comes (one release file at a time may feed it); ``current`` is held.
    """
    after = {lecture.lecture_id: lecture for lecture in current}
    seen: set[str] = set()
    changes = []
    repaired = []
    for before in previous:
        lecture_id = before.lecture_id
        seen.add(lecture_id)
        new = after.get(lecture_id)
        if new is None:
            changes.append(LectureChange(lecture_id, "removed", (), before, None))
            continue
        # The compared fields that differ, as JSON holds their values (timestamps as instants, tuples as
        # lists, struct members all present).
        old, now = before.to_json(), new.to_json()
        fields = tuple(name for name in COMPARED if old[name] != now[name])
        if fields and restored(before, new):
            repaired.append(lecture_id)
        elif fields:
            changes.append(LectureChange(lecture_id, _kind(before, new), fields, before, new))
    for lecture_id, new in after.items():
        if lecture_id not in seen:
            changes.append(LectureChange(lecture_id, "added", (), None, new))
    changes.sort(key=lambda c: c.lecture_id)
    return ReleaseDiff(tuple(changes), tuple(sorted(repaired)))
