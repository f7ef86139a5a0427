"""Field coverage: the share of lectures with a value in each field, per event.

A renamed or moved attribute on the site shows up here first: the field's coverage falls from near 100%
to 0% while everything else looks healthy. The quality gate compares it with the previous release, the
run report and the dataset card show it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from crawler.schema import BOOKKEEPING_FIELDS, FIELDS, lecture_order

MONITORED: tuple[str, ...] = tuple(f.name for f in FIELDS if f.name not in BOOKKEEPING_FIELDS)
ALL_EVENTS = "*"


def has_value(value: Any) -> bool:
    """Non-null and non-empty (a False boolean is a value; an empty string or list is not)."""
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list | tuple | dict):
        return bool(value)
    return True


def field_coverage(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """``{event_id: {field: share}}`` over the live (not withdrawn) lectures, and ``"*"`` for all events."""
    totals: dict[str, int] = defaultdict(int)
    filled: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for record in records:
        if record.get("withdrawn"):
            continue
        for event in (str(record.get("event_id") or ""), ALL_EVENTS):
            totals[event] += 1
            for name in MONITORED:
                if has_value(record.get(name)):
                    filled[event][name] += 1
    return {
        event: {name: round(filled[event][name] / n, 4) for name in MONITORED}
        for event, n in sorted(totals.items())
    }


def lectures_missing(
    records: Iterable[Mapping[str, Any]], event: str, name: str, limit: int = 5
) -> list[str]:
    """A few lecture ids of ``event`` without a value in ``name``, lowest first: examples for a report."""
    ids = [
        str(r["lecture_id"])
        for r in records
        if not r.get("withdrawn")
        and (event == ALL_EVENTS or str(r.get("event_id") or "") == event)
        and not has_value(r.get(name))
    ]
    return sorted(ids, key=lecture_order)[:limit]
