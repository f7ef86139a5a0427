"""What a release changes against the previous one, lecture by lecture, as the run report tells it.

A view of the release's diff (:func:`crawler.publish.diff.diff_releases`): lectures added (new, or back
on the site), changed (a compared field differs, as the change file counts it: the fields named) and gone
(left the site or the dataset), among the lectures on the site.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from crawler.publish.diff import ReleaseDiff
from crawler.schema import lecture_order


@dataclass
class Changelog:
    """Added, changed (with the fields that changed) and gone lecture ids."""

    added: list[str] = field(default_factory=list)
    changed: dict[str, list[str]] = field(default_factory=dict)
    gone: list[str] = field(default_factory=list)
    # lecture id -> event id, for every id above: the changes are also told per event.
    events: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The changelog's form in the run report: added, changed (id -> fields) and gone lecture ids."""
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


def changelog_of(diff: ReleaseDiff, *, retired_events: Iterable[str] = ()) -> Changelog:
    """The changelog the diff gives among the lectures on the site: a lecture already withdrawn in the
    previous release is not gone again, and is added if it is back; the lectures of ``retired_events``
    (taken out on request, reported apart) are not gone either."""
    retired = {str(e) for e in retired_events}
    log = Changelog()
    for change in sorted(diff.changes, key=lambda c: lecture_order(c.lecture_id)):
        if change.is_live and not change.was_live:
            log.added.append(change.lecture_id)
        elif change.was_live and change.is_live:
            # Changed as the change file says it (every compared field, the track list too): one count.
            log.changed[change.lecture_id] = [n for n in change.fields if n != "content_sha256"]
        elif change.was_live and not change.is_live and change.event_id not in retired:
            log.gone.append(change.lecture_id)
        else:
            continue
        log.events[change.lecture_id] = change.event_id
    return log
