"""Field coverage: the share of lectures with a value in each field, per event.

A renamed or moved attribute on the site shows up here first: the field's coverage falls from near 100%
to 0% while everything else looks healthy. The quality gate compares it with the previous release, the
run report and the dataset card show it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from crawler.schema import BOOKKEEPING_FIELDS, FIELDS, Lecture, has_value, lecture_order

MONITORED: tuple[str, ...] = tuple(f.name for f in FIELDS if f.name not in BOOKKEEPING_FIELDS)
ALL_EVENTS = "*"


def field_coverage(records: Iterable[Lecture]) -> dict[str, dict[str, float]]:
    """``{event_id: {field: share}}`` over the live (not withdrawn) lectures, and ``"*"`` for all events."""
    totals: dict[str, int] = defaultdict(int)
    filled: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for record in records:
        if record.withdrawn:
            continue
        for event in (str(record.event_id or ""), ALL_EVENTS):
            totals[event] += 1
            for name in MONITORED:
                if has_value(getattr(record, name)):
                    filled[event][name] += 1
    return {
        event: {name: round(filled[event][name] / n, 4) for name in MONITORED}
        for event, n in sorted(totals.items())
    }


def lectures_missing(records: Iterable[Lecture], event: str, name: str, limit: int = 5) -> list[str]:
    """A few lecture ids of ``event`` without a value in ``name``, lowest first: examples for a report."""
    ids = [
        r.lecture_id
        for r in records
        if not r.withdrawn
        and (event == ALL_EVENTS or str(r.event_id or "") == event)
        and not has_value(getattr(r, name))
    ]
    return sorted(ids, key=lecture_order)[:limit]
