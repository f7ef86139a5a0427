"""Asking the site whether a lecture (or an event) that left its listing is still there: the requests that
ask, and what each answer means for the release (see Withdrawals). Only these answers withdraw anything.

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

import dataclasses
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import scrapy
from scrapy.http import Response
from scrapy.statscollectors import StatsCollector
from twisted.python.failure import Failure

from crawler import stats_keys as keys
from crawler.pages.api import EVENT_TYPE, LECTURE_TYPE
from crawler.pages.jsonapi import attr, id_text, related_id, resource_key
from crawler.schema import lecture_order
from crawler.state.withdrawals import Withdrawals
from crawler.urls import API_ACCEPT, event_resource_url, lecture_resource_url

GONE_STATUSES = frozenset({404, 410})


# The verdict on one resource ("gone", "live" or "unknown"), the event its answer names (a live lecture's,
# when it names one) and why.
ResourceAnswer = tuple[str, str | None, str]


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
        return ("gone", None, f"HTTP {status}")
    doc = _document(body) if status == 200 else None
    if not isinstance(doc, Mapping):
        return ("unknown", None, f"HTTP {status}" if status != 200 else "not JSON")
    if _error_statuses(doc) & GONE_STATUSES:
        return ("gone", None, "an error document saying it is gone")
    if "data" in doc and doc["data"] is None and not doc.get("errors"):
        return ("gone", None, "null data")
    data = doc.get("data")
    if resource_key(data) != (kind, resource_id):
        return ("unknown", None, f"the answer is not {kind} {resource_id}")
    event = None
    if kind == LECTURE_TYPE:
        event = id_text(attr(data, "event_id")) or related_id(data, "event")
    return "live", event, "served"


def keep_back(stats: StatsCollector, withdrawals: Withdrawals, event: str, why: str) -> None:
    """Keep ``event`` as last published: its listing is incomplete (``why``, logged)."""
    if event not in withdrawals.kept_back:
        stats.set_value(keys.EVENT_KEPT_BACK_PREFIX + event, 1)
    withdrawals.keep_back(event, why)


@dataclasses.dataclass(eq=False)
class PresenceChecks:
    """The spider's requests asking whether what left the listings is still on the site, and what their
    answers withdraw or keep back. ``answered`` and ``failed`` are the spider's callbacks for them (a
    request's callbacks must be the spider's methods), ``logger`` the spider's; ``asked`` counts the
    requests sent (a page budget pays for them first)."""

    stats: StatsCollector
    withdrawals: Withdrawals
    api_base: str
    _: dataclasses.KW_ONLY
    answered: Callable[..., Any]
    failed: Callable[..., Any]
    logger: logging.LoggerAdapter[logging.Logger]
    asked: int = 0

    def requests(
        self,
        base: dict[str, list[str]],
        event_ids: Iterable[str],
        listed: set[str],
        allowed: Callable[[int], bool],
    ) -> Iterator[scrapy.Request]:
        """Once every listing is read: a request for the own resource of each lecture the base (the last
        stage, and the release where the stage lacks it) holds of an event read whole that no listing of
        this crawl names, and for the resource of each such event that lists nothing. ``allowed`` says
        whether the budget buys one more, given how many were asked."""
        for event in event_ids:
            known = base.get(event)
            if not known or event in self.withdrawals.kept_back:
                continue
            if not self.stats.get_value(keys.LISTED_PREFIX + event):
                asked = [("event", event)]
            else:
                gone = sorted(set(known) - listed, key=lecture_order)
                asked = [("lecture", lecture_id) for lecture_id in gone]
            for kind, resource_id in asked:
                if not allowed(self.asked):
                    self.stats.inc_value(keys.PRESENCE_UNASKED)
                    continue
                yield self.request(kind, resource_id, event)

    def request(self, kind: str, resource_id: str, event: str) -> scrapy.Request:
        self.asked += 1
        self.stats.inc_value(keys.PRESENCE_ASKED)
        url = (
            lecture_resource_url(self.api_base, resource_id)
            if kind == "lecture"
            else event_resource_url(self.api_base, resource_id)
        )
        return scrapy.Request(
            url,
            headers={"Accept": API_ACCEPT},
            callback=self.answered,
            errback=self.failed,
            cb_kwargs={"kind": kind, "resource_id": resource_id, "event": event},
            # The answer is the evidence: never one stored from an earlier crawl.
            meta={"dont_cache": True, "handle_httpstatus_list": sorted(GONE_STATUSES)},
            dont_filter=True,
            priority=10,
        )

    def on_answer(self, response: Response, kind: str, resource_id: str, event: str) -> None:
        resource_type = LECTURE_TYPE if kind == "lecture" else EVENT_TYPE
        answer = resource_answer(response.status, response.body, resource_type, resource_id)
        self.record(kind, resource_id, event, answer)

    def on_failure(self, failure: Failure) -> None:
        """A request that got no answer leaves what it asked about unknown; an error status is an answer."""
        kwargs = failure.request.cb_kwargs  # type: ignore[attr-defined]
        kind, resource_id, event = kwargs["kind"], kwargs["resource_id"], kwargs["event"]
        response = getattr(failure.value, "response", None)
        if response is not None:
            self.on_answer(response, kind, resource_id, event)
        else:
            self.record(kind, resource_id, event, ("unknown", None, failure.getErrorMessage()))

    def record(self, kind: str, resource_id: str, event: str, answer: ResourceAnswer) -> None:
        """What an answer about a lecture (or event) that left its listing means for the release."""
        what = f"lecture {resource_id} of event {event}" if kind == "lecture" else f"event {event}"
        presence, event_named, reason = answer
        if presence == "gone":
            self.stats.inc_value(keys.PRESENCE_GONE)
            if kind == "lecture":
                self.withdrawals.lecture_gone(event, resource_id)
            else:
                self.withdrawals.event_gone(event)
                self.stats.set_value(keys.EVENT_GONE_PREFIX + event, 1)
            self.logger.info("The site says %s is gone (%s): it is withdrawn", what, reason)
        elif presence == "live" and kind == "lecture" and event_named not in (None, event):
            self.stats.inc_value("underline/presence/moved")
            self.logger.warning(
                "%s is served under event %s now: it stays as last published", what, event_named
            )
        elif presence == "live":
            self.stats.inc_value(keys.PRESENCE_LIVE)
            why = (
                f"its listing left out lecture {resource_id}, which the site still serves"
                if kind == "lecture"
                else "it lists no lectures, but the site still serves the event"
            )
            keep_back(self.stats, self.withdrawals, event, why)
            self.logger.error("Event %s: %s; the event is kept as last published", event, why)
        else:
            self.stats.inc_value(keys.PRESENCE_UNKNOWN)
            self.logger.warning(
                "Whether %s is still on the site is unknown (%s): it stays as last published",
                what,
                reason,
            )
