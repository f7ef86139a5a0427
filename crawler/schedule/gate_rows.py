"""What the quality gate keeps of each lecture: a few small fields, not the lecture.

The gate looks at every lecture of the release and of the previous one, and ``publish`` holds one
event's rows at a time: a :class:`GateRow` (its id, event, withdrawal, extraction and which monitored
fields hold a value, as bits) is all the gate needs, so a catalogue's gate holds a few dozen bytes a
lecture. The coverage computed here is :func:`crawler.coverage.field_coverage`'s, from the bits.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from crawler.coverage import ALL_EVENTS, MONITORED, coverage_of
from crawler.schema import Lecture, has_value, lecture_order, listing_only_extraction

_BIT = {name: 1 << index for index, name in enumerate(MONITORED)}


@dataclass(frozen=True, slots=True)
class GateRow:
    """One lecture as the gate sees it: ``filled`` holds a bit per monitored field with a value."""

    lecture_id: str
    event_id: str
    withdrawn: bool
    extraction: str
    filled: int

    @classmethod
    def of(cls, lecture: Lecture) -> GateRow:
        filled = 0
        for name, bit in _BIT.items():
            if has_value(getattr(lecture, name)):
                filled |= bit
        # Every lecture of an event shares its id, and most share an extraction: one string each.
        return cls(
            str(lecture.lecture_id),
            sys.intern(str(lecture.event_id or "")),
            bool(lecture.withdrawn),
            sys.intern(str(lecture.extraction or "")),
            filled,
        )

    def has(self, name: str) -> bool:
        """Whether the lecture has a value in the monitored field ``name``."""
        return bool(self.filled & _BIT[name])

    def without(self, name: str) -> GateRow:
        """This row with no value in the monitored field ``name``."""
        return replace(self, filled=self.filled & ~_BIT[name])


def gate_rows(records: Iterable[Lecture | GateRow]) -> tuple[GateRow, ...]:
    """``records`` as gate rows (rows given as rows are kept)."""
    return tuple(r if isinstance(r, GateRow) else GateRow.of(r) for r in records)


def listing_only(row: GateRow | Lecture) -> bool:
    """Whether a lecture was published from its listing alone (``extraction = api_listing...``)."""
    return listing_only_extraction(row.extraction)


def row_coverage(rows: Iterable[GateRow]) -> dict[str, dict[str, float]]:
    """``{event_id: {field: share}}`` over the live rows, and ``"*"`` for all events: the figures
    :func:`crawler.coverage.field_coverage` gives for the lectures themselves."""
    return coverage_of(rows, event_of=lambda row: row.event_id, has=GateRow.has)


def rows_missing(rows: Sequence[GateRow], event: str, name: str, limit: int = 5) -> list[str]:
    """A few lecture ids of ``event`` without a value in ``name``, lowest first: examples for a report."""
    ids = [
        r.lecture_id
        for r in rows
        if not r.withdrawn and (event == ALL_EVENTS or r.event_id == event) and not r.has(name)
    ]
    return sorted(ids, key=lecture_order)[:limit]
