"""A page of the whole library's lecture listing in, the events it shows out.

``/api/v1/thin_lectures?filter[library]=true&include=event`` lists every published lecture of every
event; each lecture points at its event (``thin_events``), whose name and dates come in ``included``.
:func:`parse_library_page` reads one page into typed values; :func:`summarize_events` counts the
lectures of every event over all the pages read. Nothing here raises on bad input, and no text that
leaves this module carries an e-mail address (an event's description, where one might be, is not read).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

from crawler.pages import values
from crawler.pages.api import EVENT_TYPE, error_summary, is_lecture, list_counts
from crawler.pages.attributes import (
    EVENT_ATTRIBUTES,
    LECTURE_ATTRIBUTES,
    LECTURE_RELATIONSHIPS,
    attribute,
    relationship_name,
)
from crawler.pages.jsonapi import id_text, index_resources, related_id, resource_key
from crawler.privacy.emails import scrub_emails

# Event ids go into ``event_ids`` of a run's configuration, which takes decimal numbers (as
# ``crawler.app.arguments.parse_event_id`` does: up to 12 digits, leading zeros dropped).
_EVENT_ID = re.compile(r"^0*([0-9]{1,12})$")
# An event date as written: a calendar date, possibly the start of a timestamp (its date as written).
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ]\d{2}:\d{2}\S*)?$")
# Longest event name or location kept: a label, not a text.
MAX_LABEL = 300


@dataclass(frozen=True)
class EventInfo:
    """What the listing's ``included`` tells of an event, and (summarized) how many of the lectures read
    belong to it."""

    event_id: str
    name: str | None = None
    start_date: date | None = None
    end_date: date | None = None
    location: str | None = None
    lectures: int = 0


# An event of the library with its lecture count (see summarize_events).
EventSummary = EventInfo


@dataclass
class LibraryPage:
    """One page of the library listing.

    ``lectures`` maps each listed lecture's id to its event's id (None when the lecture names none);
    ``error`` says why the page cannot be used at all (then it holds nothing); ``problems`` are what
    was left out of a usable page.
    """

    lectures: dict[str, str | None]
    events: dict[str, EventInfo]
    total_pages: int | None = None
    total_count: int | None = None
    skipped: int = 0
    error: str | None = None
    problems: list[str] = field(default_factory=list)


def event_id_text(value: Any) -> str | None:
    """An event id as ``event_ids`` takes it (``"0502"`` -> ``"502"``); None for anything else."""
    text = id_text(value)
    match = _EVENT_ID.match(text) if text is not None else None
    return str(int(match.group(1))) if match else None


def label(value: Any) -> str | None:
    """A one-line label (name, place): whitespace collapsed, e-mail addresses scrubbed, at most
    :data:`MAX_LABEL` characters; None when it is not text or is blank."""
    text = values.opt_str(value)
    if text is None:
        return None
    text = " ".join(scrub_emails(text)[0].split())
    return text[:MAX_LABEL] or None


def event_date(value: Any, name: str, problems: list[str]) -> date | None:
    """A calendar date from ``2025-11-05`` (or the date part of ``2025-11-05T09:00:00Z``, as written);
    None, and a problem, for anything else but an absent value."""
    if value is None or value == "":
        return None
    match = _DATE.match(value.strip()) if isinstance(value, str) else None
    if match:
        try:
            return date.fromisoformat(match.group(1))
        except ValueError:
            pass
    problems.append(f"{name} is not a date: {values.shown(value)!r}")
    return None


def event_info(resource: Any, problems: list[str]) -> EventInfo | None:
    """The fields of a ``thin_events`` resource; None (and a problem) for an unusable id, None for
    anything that is not an event."""
    key = resource_key(resource)
    if key is None or key[0] != EVENT_TYPE:
        return None
    event_id = event_id_text(key[1])
    if event_id is None:
        problems.append(f"event id {values.shown(key[1])!r} is not a number; left out")
        return None
    where = f"event {event_id}"
    return EventInfo(
        event_id=event_id,
        name=label(attribute(resource, EVENT_ATTRIBUTES["name"])),
        start_date=event_date(
            attribute(resource, EVENT_ATTRIBUTES["start_date"]), f"{where} start", problems
        ),
        end_date=event_date(attribute(resource, EVENT_ATTRIBUTES["end_date"]), f"{where} end", problems),
        location=label(attribute(resource, EVENT_ATTRIBUTES["location"])),
    )


def lecture_event_id(resource: Any) -> str | None:
    """The event a lecture belongs to: its ``event_id`` attribute, else its ``event`` relationship (the
    order :func:`crawler.pages.api.lecture_fields` reads them in)."""
    given = id_text(attribute(resource, LECTURE_ATTRIBUTES["event_id"]))
    if given is None:
        given = related_id(resource, relationship_name(resource, LECTURE_RELATIONSHIPS["event"]))
    return event_id_text(given) if given is not None else None


def parse_library_page(doc: Any) -> LibraryPage:
    """A page of ``/api/v1/thin_lectures?filter[library]=true&include=event``.

    Every lecture of ``data`` with its event's id, every event of ``included`` (and ``data``) with its
    name, dates and place, and the page count ``meta`` claims. An answer that is not a JSON:API list
    (not an object, an error document, ``data`` not a list) has ``error`` set and nothing else.
    """
    if not isinstance(doc, Mapping):
        return LibraryPage({}, {}, error="the answer is not a JSON object")
    data = doc.get("data")
    if not isinstance(data, list):
        return LibraryPage({}, {}, error=error_summary(doc) or "data is not a list")
    problems: list[str] = []
    events: dict[str, EventInfo] = {}
    for key, resource in index_resources([doc]).items():
        if key[0] == EVENT_TYPE:
            info = event_info(resource, problems)
            if info is not None:
                events.setdefault(info.event_id, info)
    lectures: dict[str, str | None] = {}
    skipped = 0
    for item in data:
        lecture_key = resource_key(item) if is_lecture(item) else None
        if lecture_key is None:
            skipped += 1
            continue
        lecture_id = lecture_key[1]
        if lecture_id in lectures:
            problems.append(f"lecture {lecture_id} is listed twice on the page")
            continue
        event_id = lecture_event_id(item)
        if event_id is None:
            problems.append(f"lecture {lecture_id} names no event (or one whose id is not a number)")
        lectures[lecture_id] = event_id
    if skipped:
        problems.append(f"{skipped} entries of data are not lectures; left out")
    total_pages, total_count = list_counts(doc, problems)
    return LibraryPage(
        lectures=lectures,
        events=events,
        total_pages=total_pages,
        total_count=total_count,
        skipped=skipped,
        problems=problems,
    )


def summarize_events(lectures: Mapping[str, str | None], events: Iterable[EventInfo]) -> list[EventSummary]:
    """Every event with its lecture count, ordered by start date (undated last), then by id.

    ``lectures`` maps lecture ids (each counted once) to event ids; ``events`` are the events read, the
    first one of an id winning for each of its fields that it has. An event lectures point at but no
    page included is listed without a name; an event included but pointed at by no lecture read is
    listed with none.
    """
    known: dict[str, EventInfo] = {}
    for info in events:
        first = known.get(info.event_id)
        if first is None:
            known[info.event_id] = info
        else:
            known[info.event_id] = EventInfo(**{k: getattr(first, k) or v for k, v in vars(info).items()})
    counts: dict[str, int] = dict.fromkeys(known, 0)
    for event_id in lectures.values():
        if event_id is not None:
            counts[event_id] = counts.get(event_id, 0) + 1
    summaries = [
        replace(known.get(event_id, EventInfo(event_id)), lectures=count)
        for event_id, count in counts.items()
    ]
    return sorted(summaries, key=event_order)


def event_order(event: EventSummary) -> tuple[bool, date, int]:
    """Start date first (an event without one after all dated ones), then the id as a number."""
    return (event.start_date is None, event.start_date or date.min, int(event.event_id))
