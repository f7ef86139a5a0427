"""Field coverage: the share of lectures with a value in each field, per event.

A renamed or moved attribute on the site shows up here first: the field's coverage falls from near 100%
to 0% while everything else looks healthy. The quality gate compares it with the previous release, the
run report and the dataset card show it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import TypeVar

from crawler.schema import BOOKKEEPING_FIELDS, FIELDS, Lecture, has_value

MONITORED: tuple[str, ...] = tuple(f.name for f in FIELDS if f.name not in BOOKKEEPING_FIELDS)
ALL_EVENTS = "*"
T = TypeVar("T")


def coverage_of(
    items: Iterable[T], *, event_of: Callable[[T], str], has: Callable[[T, str], bool]
) -> dict[str, dict[str, float]]:
    """``{event_id: {field: share}}`` of the monitored fields over ``items`` (the live ones: each item has
    a ``withdrawn``), and ``"*"`` for all events; ``has(item, name)`` says whether a field has a value."""
    totals: dict[str, int] = defaultdict(int)
    filled: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for item in items:
        if getattr(item, "withdrawn", False):
            continue
        for event in (event_of(item), ALL_EVENTS):
            totals[event] += 1
            counts = filled[event]
            for name in MONITORED:
                if has(item, name):
                    counts[name] += 1
    return {
        event: {name: round(filled[event][name] / n, 4) for name in MONITORED}
        for event, n in sorted(totals.items())
    }


def field_coverage(records: Iterable[Lecture]) -> dict[str, dict[str, float]]:
    """``{event_id: {field: share}}`` over the live (not withdrawn) lectures, and ``"*"`` for all events."""
    return coverage_of(
        records, event_of=lambda r: str(r.event_id or ""), has=lambda r, name: has_value(getattr(r, name))
    )
