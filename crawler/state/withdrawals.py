"""The evidence a lecture needs before it leaves the dataset, as a crawl gathers it and a release reads it.

An absence is never evidence: a lecture the last release held that an event's listing no longer names is
withdrawn only when the site says it is gone, by its own resource (``thin_lectures/<id>`` answering 404
or 410) or by its event's (``thin_events/<id>``, asked when the event lists nothing). A lecture whose
resource is still served makes its event's listing incomplete, and so does any listing that does not
agree with itself: such an event is *kept back*, its rows published as they were last published, while
the other events of the crawl publish. A crawl that asked nothing (an older stage, a fleet, a crawl whose
listing was not read whole) withdraws nothing.

The crawl writes this record into its stage's ``COMPLETE`` summary under ``withdrawals``; every command
that builds a release reads it back (:meth:`Withdrawals.from_summary`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from crawler.json_types import JsonObject, JsonValue

SUMMARY_KEY = "withdrawals"


@dataclass
class Withdrawals:
    """Per event, the lectures whose own resource said they are gone; the events whose own resource said
    so; and the events kept back, with why."""

    gone: dict[str, list[str]] = field(default_factory=dict)
    events_gone: list[str] = field(default_factory=list)
    kept_back: dict[str, str] = field(default_factory=dict)

    def lecture_gone(self, event: str, lecture_id: str) -> None:
        ids = self.gone.setdefault(event, [])
        if lecture_id not in ids:
            ids.append(lecture_id)

    def event_gone(self, event: str) -> None:
        if event not in self.events_gone:
            self.events_gone.append(event)

    def keep_back(self, event: str, why: str) -> None:
        """Keep ``event`` as last published; the first reason given is the one reported."""
        self.kept_back.setdefault(event, why)

    def withdraws(self, event: str, lecture_id: str) -> bool:
        """Whether the site said that this lecture of ``event`` is gone (an event kept back withdraws
        nothing)."""
        if event in self.kept_back:
            return False
        return event in self.events_gone or lecture_id in self.gone.get(event, ())

    def to_json(self) -> JsonObject:
        gone: JsonObject = {event: list(ids) for event, ids in sorted(self.gone.items())}
        kept: JsonObject = dict(sorted(self.kept_back.items()))
        events: list[JsonValue] = list(sorted(self.events_gone))
        return {"gone": gone, "events_gone": events, "kept_back": kept}

    @classmethod
    def from_summary(cls, summary: Mapping[str, object]) -> Withdrawals:
        """What a stage's ``COMPLETE`` summary says; nothing (withdraw nothing) when it says nothing or
        says it in a shape this version does not know."""
        raw = summary.get(SUMMARY_KEY)
        if not isinstance(raw, Mapping):
            return cls()
        out = cls()
        gone = raw.get("gone")
        for event, ids in gone.items() if isinstance(gone, Mapping) else ():
            for lecture_id in ids if isinstance(ids, list) else ():
                if isinstance(lecture_id, str):
                    out.lecture_gone(str(event), lecture_id)
        events = raw.get("events_gone")
        for event in events if isinstance(events, list) else ():
            out.event_gone(str(event))
        kept = raw.get("kept_back")
        for event, why in kept.items() if isinstance(kept, Mapping) else ():
            out.keep_back(str(event), str(why))
        return out
