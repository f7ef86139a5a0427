"""What the site says of one resource asked by id: is the lecture (or the event) still there?

A lecture that an event's listing no longer names has not left the site for that absence alone: a
listing can come back short, a page of it empty. Its own resource (``/api/v1/thin_lectures/<id>``, or
``/api/v1/thin_events/<id>`` for an event that lists nothing) is asked, and only its answer counts as
evidence. The verdict is read from the answer's status and body; nothing here raises.

- ``gone``: HTTP 404 or 410, a JSON:API error document whose error says 404 or 410, or ``data: null``
  (JSON:API answers a URL that may name a single resource, but does not now, with ``200`` and null data);
- ``live``: a JSON:API document whose primary data is the resource asked for (its event as the answer
  names it, for a lecture);
- ``unknown``: anything else (a 5xx, a timeout, HTML, another resource): no evidence either way.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crawler.pages.api import LECTURE_TYPE
from crawler.pages.jsonapi import attr, id_text, related_id, resource_key

GONE_STATUSES = frozenset({404, 410})


class Presence(enum.Enum):
    GONE = "gone"
    LIVE = "live"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ResourceAnswer:
    """The verdict on one resource, and (a live lecture) the event its answer names, when it names one."""

    presence: Presence
    event_id: str | None = None
    why: str = ""


def _document(body: bytes | str | None) -> Any:
    if body is None:
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _error_statuses(doc: Mapping[str, Any]) -> set[int]:
    errors = doc.get("errors")
    found: set[int] = set()
    for error in errors if isinstance(errors, list) else ():
        status = error.get("status") if isinstance(error, Mapping) else None
        try:
            found.add(int(str(status)))
        except ValueError:
            continue
    return found


def resource_answer(status: int, body: bytes | str | None, kind: str, resource_id: str) -> ResourceAnswer:
    """What an answer (``status``, ``body``) to ``/api/v1/<kind>/<resource_id>`` says of that resource
    (``kind``: ``thin_lectures`` or ``thin_events``)."""
    if status in GONE_STATUSES:
        return ResourceAnswer(Presence.GONE, why=f"HTTP {status}")
    doc = _document(body) if status == 200 else None
    if not isinstance(doc, Mapping):
        return ResourceAnswer(Presence.UNKNOWN, why=f"HTTP {status}" if status != 200 else "not JSON")
    if _error_statuses(doc) & GONE_STATUSES:
        return ResourceAnswer(Presence.GONE, why="an error document saying it is gone")
    if "data" in doc and doc["data"] is None and not doc.get("errors"):
        return ResourceAnswer(Presence.GONE, why="null data")
    data = doc.get("data")
    if resource_key(data) != (kind, resource_id):
        return ResourceAnswer(Presence.UNKNOWN, why=f"the answer is not {kind} {resource_id}")
    event = None
    if kind == LECTURE_TYPE:
        event = id_text(attr(data, "event_id")) or related_id(data, "event")
    return ResourceAnswer(Presence.LIVE, event_id=event, why="served")
