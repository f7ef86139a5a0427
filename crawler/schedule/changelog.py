"""What a release changes against the previous one, lecture by lecture."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from crawler.schema import CONTENT_FIELDS, lecture_order


@dataclass
class Changelog:
    """Added, changed (with the fields that changed) and gone lecture ids."""

    added: list[str] = field(default_factory=list)
    changed: dict[str, list[str]] = field(default_factory=dict)
    gone: list[str] = field(default_factory=list)
    # lecture id -> event id, for every id above: the changes are also told per event.
    events: dict[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.gone)

    def as_dict(self) -> dict[str, Any]:
        return {"added": self.added, "changed": self.changed, "gone": self.gone}

    def by_event(self) -> dict[str, dict[str, Any]]:
        """The same changes, one changelog per event."""
        out: dict[str, dict[str, Any]] = {}

        def entry(lecture_id: str) -> dict[str, Any]:
            event = self.events.get(lecture_id, "")
            return out.setdefault(event, {"added": [], "changed": {}, "gone": []})

        for lecture_id in self.added:
            entry(lecture_id)["added"].append(lecture_id)
        for lecture_id, fields in self.changed.items():
            entry(lecture_id)["changed"][lecture_id] = fields
        for lecture_id in self.gone:
            entry(lecture_id)["gone"].append(lecture_id)
        return dict(sorted(out.items()))

    def summary(self) -> str:
        return f"{len(self.added)} added, {len(self.changed)} changed, {len(self.gone)} gone"


def compute_changelog(
    previous: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]]
) -> Changelog:
    """Added, changed (with the names of the fields that changed) and gone lecture ids.

    A lecture already marked withdrawn in ``previous`` is not gone again; if it is back, it is added.
    """
    before = {r["lecture_id"]: r for r in previous if not r.get("withdrawn")}
    after = {r["lecture_id"]: r for r in current}
    log = Changelog(added=sorted(after.keys() - before.keys(), key=lecture_order))
    for lecture_id in sorted(after.keys() & before.keys(), key=lecture_order):
        old, new = before[lecture_id], after[lecture_id]
        if old.get("content_sha256") == new.get("content_sha256"):
            continue
        fields = [name for name in CONTENT_FIELDS if _comparable(old.get(name)) != _comparable(new.get(name))]
        log.changed[lecture_id] = fields
    log.gone = sorted(before.keys() - after.keys(), key=lecture_order)
    for lecture_id in (*log.added, *log.changed, *log.gone):
        record = after.get(lecture_id) or before[lecture_id]
        log.events[lecture_id] = str(record.get("event_id") or "")
    return log


def _comparable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    if isinstance(value, tuple):
        return list(value)
    return value
