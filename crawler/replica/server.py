"""The replica's HTTP server: routes, caching headers, redirects, faults and the request log.

``ThreadingHTTPServer`` from the standard library, HTTP/1.1 with keep-alive; every body comes from the
``Renderer`` cache, so one thread per connection easily serves a few hundred requests a second.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any, Protocol
from urllib.parse import parse_qs, urlsplit

from crawler.replica.answer import Response
from crawler.replica.assets import MAINTENANCE_PAGE, AssetsRouter, assets_request_kind
from crawler.replica.faults import (
    ENDLESS_META_ABSENT,
    ENDLESS_META_KINDS,
    PROFILE_NAMES,
    RESET,
    RESOURCE_GONE,
    RESOURCE_LOGIN,
    RESOURCE_OTHER,
    SLOW,
    TRUNCATED,
    UNANSWERED_REFUSED,
    UNANSWERED_RESET,
    Fault,
    FaultProfile,
    SiteFaults,
    broken_listing,
    broken_page,
    endless_chunk,
    endless_lecture,
    named_profile,
    redirect_location,
    with_planted_email,
)
from crawler.replica.gold import documents_truth
from crawler.replica.layout import (
    MAIN_EVENT_ID,
    SIDE_EVENT_EVERY,
    Lecture,
    ReplicaSite,
    build_catalogue,
    build_site,
    ground_truth,
    load_records,
    sessions_truth,
    write_ground_truth,
)
from crawler.replica.pages import LOGIN_PAGE, ROBOTS_TXT, JsonDoc, Renderer, api_json, error_doc
from crawler.replica.tracks import transcripts_truth

HTML = "text/html; charset=utf-8"
API = "application/vnd.api+json"
TEXT = "text/plain; charset=utf-8"
CACHE_CONTROL = "public, max-age=0, must-revalidate"
DEFAULT_PAGE_SIZE = 16
MAX_PAGE_SIZE = 500
# A body that trickles out is sent this many bytes at a time.
DRIP_BYTES = 16

_LECTURE_PAGE = re.compile(
    r"""^/(?:
        (?P<canonical>lecture)
      | events/\d+/sessions/\d+/lecture
      | events/\d+/posters/\d+/poster
    )/(?P<id>\d+)(?:-(?P<slug>[^/]*))?$""",
    re.VERBOSE,
)
_API_LECTURE = re.compile(r"^/api/v1/thin_lectures/(?P<id>\d+)(?:/(?P<part>related|next|similar))?$")
_API_SESSION = re.compile(r"^/api/v1/thin_event_sessions/(?P<id>\d+)$")
_API_EVENT = re.compile(r"^/api/v1/thin_events/(?P<id>\d+)$")
_PAPER = re.compile(r"^/downloadable_materials/lectures/(?P<id>\d+)/paper$")
_SESSION_LIST = re.compile(r"^/events/(?P<eid>\d+)/sessions$")

# What a request asked for, as the request log records it (``kind``): enough to count requests per kind.
KIND_ROBOTS = "robots"
KIND_LISTING = "listing"
KIND_LECTURE_PAGE = "lecture_page"
KIND_LECTURE_API = "lecture_api"
KIND_TRANSCRIPTS = "transcripts"
KIND_SESSION_PAGE = "session_page"
KIND_SESSION_API = "session_api"
KIND_EVENT_API = "event_api"
KIND_PAPER = "paper"
KIND_LOGIN = "login"
KIND_OTHER = "other"
# Which server answered a request: the site's pages and API, or the assets host of subtitle files.
ORIGIN_WEB = "web"
ORIGIN_ASSETS = "assets"


def request_kind(target: str) -> str:
    """What the request for ``target`` (path and query) asks for: one of the ``KIND_*`` names."""
    path = urlsplit(target).path
    if path == "/robots.txt":
        return KIND_ROBOTS
    if path == "/log-in":
        return KIND_LOGIN
    if path == "/api/v1/thin_lectures":
        return KIND_LISTING
    if path == "/api/v1/transcripts":
        return KIND_TRANSCRIPTS
    for pattern, kind in (
        (_LECTURE_PAGE, KIND_LECTURE_PAGE),
        (_API_LECTURE, KIND_LECTURE_API),
        (_SESSION_LIST, KIND_SESSION_PAGE),
        (_API_SESSION, KIND_SESSION_API),
        (_API_EVENT, KIND_EVENT_API),
        (_PAPER, KIND_PAPER),
    ):
        if pattern.match(path):
            return kind
    return KIND_OTHER


@dataclass(frozen=True)
class RequestRecord:
    """One request as the replica saw it. ``status`` is 0 when the connection was reset unanswered."""

    time: float
    method: str
    path: str
    if_none_match: str | None
    if_modified_since: str | None
    user_agent: str | None
    status: int
    fault: str | None = None
    # What was asked for (see :func:`request_kind` and :func:`crawler.replica.assets.assets_request_kind`).
    kind: str = KIND_OTHER
    # Which server answered (``ORIGIN_WEB`` or ``ORIGIN_ASSETS``).
    origin: str = ORIGIN_WEB


class OverrideAnswer(Protocol):
    """An answer given instead of the site's own (see :class:`PageOverrides`)."""

    status: int
    body: bytes
    content_type: str | None
    headers: list[tuple[str, str]]
    drip_seconds: float


class PageOverrides(Protocol):
    """Answers that replace the site's own for some requests (test scenarios plug in here).

    Either method returns None to let the site answer as usual.
    """

    def lecture_page(self, lecture: Lecture, query: Mapping[str, list[str]]) -> OverrideAnswer | None: ...

    def listing(self, lectures: list[Lecture], size: int, number: int) -> OverrideAnswer | None: ...


# Builds the overrides of a started server from its site and base URL.
OverridesFactory = Callable[[ReplicaSite, str], PageOverrides]
# A listing's filters: ``filter[event_id]``, ``filter[event_session_id]``, ``filter[poster_lecture]``.
ListingKey = tuple[str | None, str | None, str | None]


def _from_override(answer: OverrideAnswer) -> Response:
    return Response(
        answer.status,
        answer.body,
        answer.content_type,
        list(answer.headers),
        drip_seconds=answer.drip_seconds,
    )


class Router:
    """Maps a request (method, target, headers) to a ``Response``; no sockets involved."""

    def __init__(
        self,
        site: ReplicaSite,
        base_url: str,
        faults: FaultProfile | None = None,
        overrides: PageOverrides | None = None,
        site_faults: SiteFaults | None = None,
        *,
        assets_base: str | None = None,
        documents_base: str | None = None,
        night: int = 0,
    ) -> None:
        """``assets_base``: the assets origin subtitle URLs point at (default: the real assets host);
        ``documents_base``: the one slide deck and poster URLs point at (default: the real assets host);
        ``night``: the night the site is in (see :class:`crawler.replica.pages.Renderer`)."""
        self.site_faults = site_faults or SiteFaults()
        site = with_planted_email(site, self.site_faults.planted_email)
        self.site = site
        self.base_url = base_url.rstrip("/")
        self.renderer = Renderer(
            site,
            self.base_url,
            renamed=self.site_faults.renamed_attributes,
            assets_base=assets_base,
            documents_base=documents_base,
            night=night,
        )
        self.faults = faults
        self.overrides = overrides
        self._listing_failures: dict[int, int] = {}
        self._failures_lock = threading.Lock()
        # A later night's documents are modified later: a client that revalidates with the date alone
        # still gets the attributes that change every night.
        self.last_modified = (site.last_modified() + timedelta(days=night)).replace(microsecond=0)
        self.last_modified_header = format_datetime(self.last_modified, usegmt=True)
        self._lists: dict[ListingKey, list[Lecture]] = {}
        self._list_lock = threading.Lock()
        # How the track lists answer while the API has a bad night (set between crawls): ``errors``, a
        # 200 with a JSON:API errors document; ``copies:<n>``, each list naming its first file n times
        # more (under distinct URLs), as a site handing out any number of tracks. None: as the site.
        self.track_lists: str | None = None
        # How every lecture page answers while the site has a bad night (set between crawls): ``html``, a
        # maintenance page with 200; ``unavailable``, 503. None: as the site.
        self.pages_outage: str | None = None

    def robots_txt(self) -> bytes:
        extra = self.faults.robots_extra() if self.faults is not None else ""
        return (ROBOTS_TXT + extra).encode("utf-8")

    def respond(self, target: str, headers: dict[str, str | None]) -> Response:
        parts = urlsplit(target)
        path = parts.path
        query = parse_qs(parts.query, keep_blank_values=True)
        response = self._route(path, query)
        if response.status == 200 and response.cacheable:
            etag = '"' + hashlib.sha256(response.body).hexdigest()[:32] + '"'
            response.headers += [
                ("ETag", etag),
                ("Last-Modified", self.last_modified_header),
                ("Cache-Control", CACHE_CONTROL),
            ]
            if self._not_modified(etag, headers.get("if-none-match"), headers.get("if-modified-since")):
                return Response(304, headers=response.headers)
        return response

    def _not_modified(self, etag: str, if_none_match: str | None, if_modified_since: str | None) -> bool:
        if if_none_match is not None:
            tags = [t.strip() for t in if_none_match.split(",")]
            return any(t == "*" or t.removeprefix("W/") == etag for t in tags)
        if if_modified_since:
            try:
                since = parsedate_to_datetime(if_modified_since)
            except (TypeError, ValueError, IndexError):
                return False
            if since.tzinfo is None:
                return False
            return self.last_modified <= since
        return False

    def _lecture(self, lecture_id: str) -> Lecture | None:
        """The site's lecture, or one of an endless listing's made-up lectures."""
        lecture = self.site.lectures.get(lecture_id)
        if lecture is None and self.site_faults.endless_listing is not None:
            lecture = endless_lecture(self.site.lectures, lecture_id)
        return lecture

    def _route(self, path: str, query: dict[str, list[str]]) -> Response:
        site = self.site
        if path == "/robots.txt":
            return Response(200, self.robots_txt(), TEXT)
        if path == "/log-in":
            return Response(200, LOGIN_PAGE.encode("utf-8"), HTML)
        match = _LECTURE_PAGE.match(path)
        if match:
            return self._lecture_page(match, query)
        match = _SESSION_LIST.match(path)
        if match:
            session = site.sessions.get(_first(query, "eventSessionId") or "")
            if session is None or session.event_id != match["eid"]:
                return _html_error(404, "Not Found")
            return Response(200, self.renderer.session_page(session), HTML, cacheable=True)
        if path == "/api/v1/thin_lectures":
            return self._list(query)
        if path == "/api/v1/transcripts":
            return self._transcripts(query)
        match = _API_LECTURE.match(path)
        if match:
            lecture = self._lecture(match["id"])
            if lecture is None:
                return _api_error(404, "Not Found", f"no lecture {match['id']}")
            answer = self.site_faults.resource_answers.get(lecture.id)
            if answer is not None and match["part"] is None:
                return self._resource_answer(lecture, answer, query)
            part = match["part"] or "lecture"
            builders: dict[str, Callable[[Lecture], JsonDoc]] = {
                "lecture": lambda lec: self.renderer.lecture_doc(lec, profiles=_wants_profiles(query)),
                "related": self.renderer.related_doc,
                "next": self.renderer.next_doc,
                "similar": self.renderer.similar_doc,
            }
            key = ("lecture", lecture.id, part, "profiles" if _wants_profiles(query) else "")
            body = self.renderer.api_body(key, lambda: builders[part](lecture))
            return Response(200, body, API, cacheable=True)
        match = _API_SESSION.match(path)
        if match:
            session = site.sessions.get(match["id"])
            if session is None:
                return _api_error(404, "Not Found", f"no event session {match['id']}")
            body = self.renderer.api_body(("session", session.id), lambda: self.renderer.session_doc(session))
            return Response(200, body, API, cacheable=True)
        match = _API_EVENT.match(path)
        if match:
            event = site.events.get(match["id"])
            if event is None:
                return _api_error(404, "Not Found", f"no event {match['id']}")
            body = self.renderer.api_body(("event", event.id), lambda: self.renderer.event_doc(event))
            return Response(200, body, API, cacheable=True)
        match = _PAPER.match(path)
        if match and match["id"] in site.lectures:
            return self._redirect(302, f"{self.base_url}/log-in")
        return _html_error(404, "Not Found")

    def _resource_answer(self, lecture: Lecture, answer: str, query: dict[str, list[str]]) -> Response:
        """What the lecture's own resource answers instead of itself (``SiteFaults.resource_answers``)."""
        if answer == RESOURCE_GONE:
            return _api_error(410, "Gone", f"lecture {lecture.id} is gone")
        if answer == RESOURCE_LOGIN:
            return Response(200, LOGIN_PAGE.encode("utf-8"), HTML)
        if answer == RESOURCE_OTHER:
            other = self.site.lectures[lecture.next.lecture_id]
            body = api_json(self.renderer.lecture_doc(other, profiles=_wants_profiles(query)))
            return Response(200, body, API)
        return _api_error(503, "Service Unavailable", f"lecture {lecture.id} is unavailable")

    def _lecture_page(self, match: re.Match[str], query: dict[str, list[str]]) -> Response:
        if self.pages_outage == "html":
            return Response(200, MAINTENANCE_PAGE.encode("utf-8"), HTML)
        if self.pages_outage == "unavailable":
            return Response(503, b"503 Service Unavailable\n", TEXT, [("Retry-After", "1")])
        lecture = self._lecture(str(int(match["id"])))
        if lecture is None:
            return _html_error(404, "Not Found")
        if match["id"] != lecture.id or match["slug"] != lecture.slug:
            return self._redirect(301, self.renderer.canonical_url(lecture))
        broken = self.site_faults
        if lecture.id in broken.failing_lectures:
            return Response(503, b"503 Service Unavailable\n", TEXT)
        target = broken.redirects.get(lecture.id)
        if target is not None:
            return self._redirect(302, redirect_location(target, self.base_url, lecture.path))
        if self.overrides is not None:
            answer = self.overrides.lecture_page(lecture, query)
            if answer is not None:
                return _from_override(answer)
        swapped = broken.swapped_pages.get(lecture.id)
        if swapped is not None and swapped in self.site.lectures:
            return Response(
                200, self.renderer.lecture_page(self.site.lectures[swapped]), HTML, cacheable=True
            )
        if lecture.id not in self.site.lectures:
            # A made-up lecture of an endless listing: rendered for this answer only, never kept.
            return Response(200, self.renderer.render_lecture_page(lecture), HTML, cacheable=True)
        body = self.renderer.lecture_page(lecture)
        if broken.edits_page(lecture.id):
            body = broken_page(body, lecture.id, broken)
        return Response(200, body, HTML, cacheable=True)

    def _redirect(self, status: int, location: str) -> Response:
        reason = "Moved Permanently" if status == 301 else "Found"
        body = f'<!DOCTYPE html><html><body><a href="{location}">{reason}</a></body></html>\n'
        return Response(status, body.encode("utf-8"), HTML, headers=[("Location", location)])

    def _listing_fails(self, number: int) -> bool:
        """Whether this request for listing page ``number`` answers 500 (counts it when it does)."""
        broken = self.site_faults.listing_errors
        if number not in broken:
            return False
        limit = broken[number]
        with self._failures_lock:
            done = self._listing_failures.get(number, 0)
            if limit is not None and done >= limit:
                return False
            self._listing_failures[number] = done + 1
        return True

    def _list(self, query: dict[str, list[str]]) -> Response:
        size = _positive_int(_first(query, "page[size]"), DEFAULT_PAGE_SIZE)
        number = _positive_int(_first(query, "page[number]"), 1)
        if size is None or size > MAX_PAGE_SIZE:
            return _api_error(400, "Bad Request", f"page[size] must be an integer from 1 to {MAX_PAGE_SIZE}")
        if number is None:
            return _api_error(400, "Bad Request", "page[number] must be a positive integer")
        if self._listing_fails(number):
            return _api_error(500, "Internal Server Error", f"listing page {number} failed")
        key: ListingKey = (
            _first(query, "filter[event_id]"),
            _first(query, "filter[event_session_id]"),
            _first(query, "filter[poster_lecture]"),
        )
        broken = self.site_faults
        if key[0] is not None and key[0] in broken.failing_listing_events:
            return _api_error(500, "Internal Server Error", f"the listing of event {key[0]} failed")
        library = _first(query, "filter[library]") == "true"
        lectures = self._library(key) if library else self._filtered(key)
        if broken.unlisted_lectures:
            # Not cached: the renderer's bodies are the whole site's.
            lectures = [lec for lec in lectures if lec.id not in broken.unlisted_lectures]
            doc = self.renderer.list_doc(lectures, size, number, profiles=_wants_profiles(query))
            return Response(200, api_json(doc), API)
        if self.overrides is not None:
            answer = self.overrides.listing(lectures, size, number)
            if answer is not None:
                return _from_override(answer)
        profiles = _wants_profiles(query)
        endless = self.site_faults.endless_listing
        if endless is not None:
            chunk = endless_chunk(lectures, size, number)
            pages = (len(lectures) + size - 1) // size
            doc = self.renderer.chunk_doc(chunk, pages, len(lectures), profiles=profiles)
            if endless == ENDLESS_META_ABSENT:
                del doc["meta"]
            return Response(200, api_json(doc), API)
        if self.site_faults.edits_listing:
            doc = self.renderer.list_doc(lectures, size, number, profiles=profiles)
            return Response(200, api_json(broken_listing(doc, self.site_faults, number)), API, cacheable=True)
        body = self.renderer.api_body(
            (
                "list",
                *(k or "" for k in key),
                str(size),
                str(number),
                "profiles" if profiles else "",
                *(("library",) if library else ()),
            ),
            lambda: self.renderer.list_doc(lectures, size, number, profiles=profiles),
        )
        return Response(200, body, API, cacheable=True)

    def _transcripts(self, query: dict[str, list[str]]) -> Response:
        lecture_id = _first(query, "filter[lecture_id]")
        if lecture_id is None:
            return _api_error(400, "Bad Request", "filter[lecture_id] is required")
        lecture = self.site.lectures.get(lecture_id)
        with_language = "language" in (_first(query, "include") or "").split(",")
        if self.track_lists == "errors":
            return Response(200, api_json(error_doc(500, "Internal Server Error", "try again later")), API)
        if self.track_lists is not None and self.track_lists.startswith("copies:"):
            return Response(200, api_json(self._copied_tracks(lecture, with_language)), API)
        body = self.renderer.api_body(
            ("transcripts", lecture_id, "language" if with_language else ""),
            lambda: self.renderer.transcripts_doc(lecture, with_language),
        )
        return Response(200, body, API, cacheable=True)

    def _copied_tracks(self, lecture: Lecture | None, with_language: bool) -> JsonDoc:
        """The lecture's track list with its first file named ``copies:<n>`` times more."""
        assert self.track_lists is not None
        doc = self.renderer.transcripts_doc(lecture, with_language)
        data = doc["data"]
        if not data:
            return doc
        first = data[0]
        for copy in range(int(self.track_lists.split(":", 1)[1])):
            url = f"{first['attributes']['subtitle_url']}?copy={copy}"
            data.append(
                {
                    **first,
                    "id": f"{first['id']}-{copy}",
                    "attributes": {**first["attributes"], "subtitle_url": url},
                }
            )
        return doc

    def _library(self, key: ListingKey) -> list[Lecture]:
        """``filter[library]=true``: the whole catalogue, every published lecture of every event (each
        with its event and the event's dates in ``included``), narrowed by the other filters if given.
        (Every lecture of the replica was published weeks before its event.)"""
        now = datetime.now(UTC)
        return [lec for lec in self._filtered(key) if lec.published_at <= now]

    def _filtered(self, key: ListingKey) -> list[Lecture]:
        found = self._lists.get(key)
        if found is not None:
            return found
        event_id, session_id, poster = key
        lectures = sorted(self.site.lectures.values(), key=lambda lec: (lec.held_at, int(lec.id)))
        if event_id is not None:
            lectures = [lec for lec in lectures if lec.event_id == event_id]
        if session_id is not None:
            lectures = [lec for lec in lectures if lec.session_id == session_id]
        if poster in ("true", "false"):
            lectures = [lec for lec in lectures if lec.poster_lecture == (poster == "true")]
        with self._list_lock:
            return self._lists.setdefault(key, lectures)


def _wants_profiles(query: dict[str, list[str]]) -> bool:
    return "sorted_profiles" in (_first(query, "include") or "").split(",")


def _first(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


def _positive_int(text: str | None, default: int) -> int | None:
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value >= 1 else None


def _html_error(status: int, reason: str) -> Response:
    body = f"<!DOCTYPE html><html><body><h1>{status} {reason}</h1></body></html>\n"
    return Response(status, body.encode("utf-8"), HTML)


def _api_error(status: int, title: str, detail: str) -> Response:
    return Response(status, api_json(error_doc(status, title, detail)), API)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], app: ReplicaServer, origin: str = ORIGIN_WEB) -> None:
        self.app = app
        self.origin = origin
        self.open_connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-answer (a crawler stopping a download past its size cap) is no error
        # of the replica's: say nothing. Anything else is printed as the standard library does.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "UnderlineReplica/1.0"
    timeout = 60
    # Headers and body leave in separate writes; without this, delayed ACKs cost 40 ms a response.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.open_connections.add(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        with self.server.connections_lock:
            self.server.open_connections.discard(self.connection)

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: requests go to the request log instead."""

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def _not_allowed(self) -> None:
        self.close_connection = True
        self._record(405, None)
        body = b"Method Not Allowed\n"
        self.send_response(405)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Type", TEXT)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed

    def _record(self, status: int, fault: str | None) -> None:
        self.server.app.record(
            RequestRecord(
                time=self._started,
                method=self.command,
                path=self.path,
                if_none_match=self.headers.get("If-None-Match"),
                if_modified_since=self.headers.get("If-Modified-Since"),
                user_agent=self.headers.get("User-Agent"),
                status=status,
                fault=fault,
                kind=self._kind(),
                origin=self.server.origin,
            )
        )

    def _kind(self) -> str:
        """What the request asks for, in the terms of the origin that answers it."""
        if self.server.origin == ORIGIN_ASSETS:
            return assets_request_kind(self.path)
        return request_kind(self.path)

    def parse_request(self) -> bool:
        self._started = time.time()
        return super().parse_request()

    def _serve(self, head: bool) -> None:
        app = self.server.app
        unanswered = app.site_faults.unanswered.get(urlsplit(self.path).path) if app.site_faults else None
        if unanswered is not None:
            self._record(0, unanswered)
            self._leave_unanswered(unanswered)
            return
        if self.server.origin == ORIGIN_ASSETS:
            # The assets origin: no fault profile, answers from its own router.
            response = app.assets_router.respond(self.path, self._conditions())
            self._record(response.status, None)
            self._send(response, head=head, truncated=False)
            return
        router = app.router
        fault: Fault | None = None
        if router.faults is not None and urlsplit(self.path).path != "/robots.txt":
            fault = router.faults.decide(self.path, self.headers.get("User-Agent") or "", self._started)
        if fault is not None and fault.kind == RESET:
            self._record(0, fault.kind)
            self._reset()
            return
        if fault is not None and fault.status is not None:
            headers = [("Retry-After", fault.retry_after)] if fault.retry_after else []
            reason = {429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}
            body = f"{fault.status} {reason[fault.status]}\n".encode()
            response = Response(fault.status, body, TEXT, headers)
        else:
            if fault is not None and fault.kind == SLOW:
                time.sleep(fault.delay)
            response = router.respond(self.path, self._conditions())
        truncated = fault is not None and fault.kind == TRUNCATED
        self._record(response.status, fault.kind if fault is not None else None)
        self._send(response, head=head, truncated=truncated)

    def _conditions(self) -> dict[str, str | None]:
        """The request headers an answer depends on."""
        return {
            "if-none-match": self.headers.get("If-None-Match"),
            "if-modified-since": self.headers.get("If-Modified-Since"),
            "accept-encoding": self.headers.get("Accept-Encoding"),
        }

    def _send(self, response: Response, *, head: bool, truncated: bool) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        if response.status != 304:
            if response.content_type:
                self.send_header("Content-Type", response.content_type)
            length = len(response.body)
            if truncated:
                # Promise more than will come, then hang up: the client sees a short body.
                length += max(64, length // 2)
            self.send_header("Content-Length", str(length))
        if truncated:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if head or response.status == 304:
            return
        body = response.body[: len(response.body) // 2] if truncated else response.body
        try:
            if response.drip_seconds:
                self._drip(body, response.drip_seconds)
            else:
                self.wfile.write(body)
            if truncated:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_WR)
        except OSError:
            # The client hung up mid-body (it refused a body too large for it): nothing left to say.
            self.close_connection = True

    def _drip(self, body: bytes, seconds: float) -> None:
        for start in range(0, len(body), DRIP_BYTES):
            self.wfile.write(body[start : start + DRIP_BYTES])
            self.wfile.flush()
            if self.server.app.stopping.wait(seconds):
                raise ConnectionAbortedError("the replica is stopping")

    def _leave_unanswered(self, how: str) -> None:
        """No answer to this request (``SiteFaults.unanswered``)."""
        if how == UNANSWERED_RESET:
            self._reset()
        elif how == UNANSWERED_REFUSED:
            self.server.app.go_down(self.server.origin)
        else:
            self.close_connection = True
            self.server.app.stopping.wait()

    def _reset(self) -> None:
        """Drop the connection with a TCP reset and no answer."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass


def _serving(httpd: _HTTPServer, name: str) -> threading.Thread:
    """A daemon thread serving ``httpd``, started."""
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, name=name, daemon=True
    )
    thread.start()
    return thread


def _shut(httpd: _HTTPServer, thread: threading.Thread | None) -> None:
    """Stop serving, drop every open connection, close the socket and wait for the thread."""
    httpd.shutdown()
    with httpd.connections_lock:
        connections = list(httpd.open_connections)
    for conn in connections:
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)
    httpd.server_close()
    if thread is not None:
        thread.join(timeout=5)


class ReplicaServer:
    """The replica on ``host:port`` (port 0: a free one), and its assets origin (subtitle files) on
    ``host:assets_port``, each served from a daemon thread."""

    def __init__(
        self,
        site: ReplicaSite,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: FaultProfile | None = None,
        request_log_path: str | Path | None = None,
        overrides: OverridesFactory | None = None,
        site_faults: SiteFaults | None = None,
        *,
        assets_port: int = 0,
        assets: bool = True,
        assets_host: str | None = None,
        documents: bool = False,
        night: int = 0,
    ) -> None:
        """``faults``: random misbehaviour; ``site_faults``: answers broken every time (see
        :class:`crawler.replica.faults.SiteFaults`); ``overrides``: builds, once the base URL is known,
        answers that replace the site's own (test scenarios). ``assets``: also serve the subtitle files
        on an assets origin of their own, on ``assets_port`` of the same host (0: a free one); without
        it, subtitle URLs point at the real assets host, which nothing here serves. ``assets_host``: the
        address the assets origin listens on (default ``host``): another loopback address is a host that
        is not the site's. ``documents``: the lectures' slide decks and posters point at the assets origin
        too (their URLs, and so the lectures' content hashes, then hold its port); without it they keep
        the real assets host's URLs. ``night``: which night of the site it serves (0 the first), what the
        values of the attributes :mod:`crawler.replica.attributes` registers may change with; a server per
        night, on the same port, is the site from one night to the next."""
        self.site = site
        self.night = night
        self.host = host
        self.port = port
        self.assets_host = assets_host or host
        self.assets_port = assets_port
        self.serves_assets = assets
        self.serves_documents = documents and assets
        self.faults = faults
        self.site_faults = site_faults
        self.overrides = overrides
        self.request_log_path = Path(request_log_path) if request_log_path is not None else None
        self._records: list[RequestRecord] = []
        self._records_lock = threading.Lock()
        self._log: IO[str] | None = None
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._router: Router | None = None
        self._assets_httpd: _HTTPServer | None = None
        self._assets_thread: threading.Thread | None = None
        self._assets_router: AssetsRouter | None = None
        self.stopping = threading.Event()

    def _url(self, port: int, host: str | None = None) -> str:
        host = host or self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}"

    @property
    def documents_url(self) -> str | None:
        """Where the lectures' slide decks and posters point (None: the real assets host)."""
        return self.assets_url if self.serves_documents else None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the replica server is not started")
        return self._url(self.port)

    @property
    def assets_url(self) -> str | None:
        """The base URL of the assets origin (subtitle files); None when it is not served."""
        if self._httpd is None:
            raise RuntimeError("the replica server is not started")
        return self._url(self.assets_port, self.assets_host) if self._assets_httpd is not None else None

    @property
    def assets_router(self) -> AssetsRouter:
        if self._assets_router is None:
            raise RuntimeError("the replica's assets origin is not started")
        return self._assets_router

    @property
    def router(self) -> Router:
        if self._router is None:
            raise RuntimeError("the replica server is not started")
        return self._router

    @property
    def requests(self) -> list[RequestRecord]:
        """A snapshot of every request answered (or dropped) so far, in arrival order."""
        with self._records_lock:
            return list(self._records)

    def clear_requests(self) -> None:
        with self._records_lock:
            self._records.clear()

    def record(self, entry: RequestRecord) -> None:
        with self._records_lock:
            self._records.append(entry)
            if self._log is not None:
                self._log.write(json.dumps(asdict(entry), ensure_ascii=False) + "\n")
                self._log.flush()

    def start(self) -> ReplicaServer:
        if self._httpd is not None:
            return self
        self.stopping.clear()
        httpd = _HTTPServer((self.host, self.port), self)
        self.port = int(httpd.server_address[1])
        self._httpd = httpd
        if self.serves_assets:
            assets_httpd = _HTTPServer((self.assets_host, self.assets_port), self, ORIGIN_ASSETS)
            self.assets_port = int(assets_httpd.server_address[1])
            self._assets_httpd = assets_httpd
        overrides = self.overrides(self.site, self.base_url) if self.overrides is not None else None
        self._router = Router(
            self.site,
            self.base_url,
            self.faults,
            overrides,
            self.site_faults,
            assets_base=self.assets_url,
            documents_base=self.documents_url,
            night=self.night,
        )
        if self.assets_url is not None:
            self._assets_router = AssetsRouter(self._router.site, self.assets_url)
        if self.request_log_path is not None:
            self.request_log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = self.request_log_path.open("a", encoding="utf-8")
        self._thread = _serving(httpd, "replica-server")
        if self._assets_httpd is not None:
            self._assets_thread = _serving(self._assets_httpd, "replica-assets")
        return self

    def go_down(self, origin: str) -> None:
        """One origin stops as a host that went down: every open connection of it dropped, its socket
        closed (a new connection is refused); ``stop`` still stops the rest."""
        if origin == ORIGIN_ASSETS:
            httpd, thread = self._assets_httpd, self._assets_thread
        else:
            httpd, thread = self._httpd, self._thread
        if httpd is not None:
            _shut(httpd, thread)

    def stop(self) -> None:
        httpd = self._httpd
        if httpd is None:
            return
        self.stopping.set()
        for server, thread in ((httpd, self._thread), (self._assets_httpd, self._assets_thread)):
            if server is not None:
                _shut(server, thread)
        with self._records_lock:
            if self._log is not None:
                self._log.close()
                self._log = None
        self._httpd = self._assets_httpd = None
        self._thread = self._assets_thread = None

    def __enter__(self) -> ReplicaServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def build_parser(prog: str = "python -m crawler.replica") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Serve a local replica of the Underline site; prints the base URL first.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default 0: a free port)")
    parser.add_argument(
        "--assets-port",
        type=int,
        default=0,
        help="port of the assets origin that serves the subtitle files (default 0: a free port)",
    )
    parser.add_argument(
        "--no-assets",
        action="store_true",
        help="serve no subtitle files: subtitle URLs point at the real assets host",
    )
    parser.add_argument(
        "--documents",
        action="store_true",
        help="serve the lectures' slide decks and posters (PDF) from the assets origin too: their URLs then"
        " point at it (by default they keep the real assets host's URLs, which nothing here serves)",
    )
    parser.add_argument("--lectures", type=int, default=None, help="how many lectures (default: all 740)")
    parser.add_argument(
        "--events",
        type=int,
        default=None,
        metavar="N",
        help="serve a catalogue of N events of about equal size sharing the --lectures, each with its own "
        "id, name, dates, sessions and lecture ids (default: the two EMNLP events)",
    )
    parser.add_argument("--seed", type=int, default=0, help="layout seed (default 0)")
    parser.add_argument(
        "--night",
        type=int,
        default=0,
        help="which night of the site to serve (default 0): the values of attributes that change every"
        " night (crawler/replica/attributes.py) are that night's",
    )
    parser.add_argument(
        "--side-event-every",
        type=int,
        default=SIDE_EVENT_EVERY,
        metavar="N",
        help=f"one record in N belongs to EMNLP 2024 (default {SIDE_EVENT_EVERY})",
    )
    parser.add_argument("--faults", choices=PROFILE_NAMES, default="none", help="fault profile")
    parser.add_argument("--fault-seed", type=int, default=0, help="seed of the fault profile (default 0)")
    parser.add_argument("--request-log", type=Path, default=None, help="append every request as JSON Lines")
    parser.add_argument(
        "--ground-truth", type=Path, default=None, help="write the expected records of the events named"
    )
    parser.add_argument(
        "--sessions-ground-truth", type=Path, default=None, help="write the expected sessions of the events"
    )
    parser.add_argument(
        "--transcripts-ground-truth",
        type=Path,
        default=None,
        help="write what each subtitle track of the events' lectures says (one line a track)",
    )
    parser.add_argument(
        "--slides-ground-truth",
        type=Path,
        default=None,
        help="write the pages of each slide deck and poster of the events' lectures, the problem of each"
        " broken one and the personal data planted on them (one line a document; with --documents)",
    )
    parser.add_argument(
        "--event-id",
        action="append",
        default=None,
        help=f"an event the ground truth covers (repeatable; default {MAIN_EVENT_ID}, or every event of a "
        "catalogue)",
    )
    broken = parser.add_argument_group("answers broken every time")
    broken.add_argument(
        "--fail-listing-page",
        action="append",
        default=[],
        metavar="N[:COUNT]",
        help="listing page N answers 500 (the first COUNT requests only, when given)",
    )
    broken.add_argument(
        "--fail-lecture", action="append", default=[], metavar="ID", help="this lecture's page answers 503"
    )
    broken.add_argument(
        "--endless-listing",
        choices=ENDLESS_META_KINDS,
        default=None,
        help="every listing page past the end brings new lectures; meta is the real count or absent",
    )
    broken.add_argument(
        "--redirect-lecture",
        action="append",
        default=[],
        metavar="ID=TARGET",
        help="this lecture's page redirects off origin: localhost, https, metadata, port:N or a URL",
    )
    broken.add_argument(
        "--swap-page",
        action="append",
        default=[],
        metavar="ID=OTHER",
        help="serve lecture OTHER's page at lecture ID's URLs",
    )
    broken.add_argument(
        "--rename-attribute",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="serve a lecture attribute under another name (API and page JSON)",
    )
    broken.add_argument(
        "--plant-email",
        default=None,
        metavar="ADDRESS",
        help="write this e-mail address into every session's name and description and every event's"
        " description",
    )
    broken.add_argument(
        "--listing-append",
        action="append",
        default=[],
        metavar="ID=TEXT",
        help="append TEXT to this lecture's abstract in the API listing only (its page lags)",
    )
    broken.add_argument(
        "--strip-page-json",
        action="append",
        default=[],
        metavar="ID",
        help="serve this lecture's page without its __NEXT_DATA__",
    )
    broken.add_argument(
        "--empty-listing-page",
        action="append",
        default=[],
        metavar="N",
        help="listing page N answers 200 with no lectures (its meta unchanged)",
    )
    broken.add_argument(
        "--drop-profiles",
        action="append",
        default=[],
        metavar="ID",
        help="leave this lecture's author profiles out of the listing's and the page's included",
    )
    broken.add_argument(
        "--fail-listing-event",
        action="append",
        default=[],
        metavar="ID",
        help="every listing page of this event answers 500",
    )
    broken.add_argument(
        "--unlist-lecture",
        action="append",
        default=[],
        metavar="ID",
        help="leave this lecture out of the listings (its resource and page are still served)",
    )
    return parser


def _pairs(values: Sequence[str], flag: str) -> dict[str, str]:
    out = {}
    for value in values:
        key, sep, target = value.partition("=")
        if not sep or not key or not target:
            raise ValueError(f"{flag} takes KEY=VALUE, not {value!r}")
        out[key] = target
    return out


def _ids(values: Sequence[str]) -> frozenset[str]:
    return frozenset(i.strip() for v in values for i in v.split(",") if i.strip())


def _page_numbers(values: Sequence[str], flag: str) -> list[int]:
    out = []
    for value in values:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"{flag} takes a page number, not {value!r}")
        out.append(int(value))
    return out


def site_faults_from_args(args: argparse.Namespace) -> SiteFaults | None:
    """The :class:`SiteFaults` the command line asks for (None when it asks for none)."""
    listing: dict[int, int | None] = {}
    for value in args.fail_listing_page:
        page, _, count = value.partition(":")
        if not page.isdigit() or (count and not count.isdigit()):
            raise ValueError(f"--fail-listing-page takes N or N:COUNT, not {value!r}")
        listing[int(page)] = int(count) if count else None
    failing = frozenset(i.strip() for v in args.fail_lecture for i in v.split(",") if i.strip())
    faults = SiteFaults(
        listing_errors=listing,
        failing_lectures=failing,
        endless_listing=args.endless_listing,
        redirects=_pairs(args.redirect_lecture, "--redirect-lecture"),
        swapped_pages=_pairs(args.swap_page, "--swap-page"),
        renamed_attributes=_pairs(args.rename_attribute, "--rename-attribute"),
        planted_email=args.plant_email,
        listing_appends=_pairs(args.listing_append, "--listing-append"),
        stripped_pages=_ids(args.strip_page_json),
        empty_listing_pages=frozenset(_page_numbers(args.empty_listing_page, "--empty-listing-page")),
        dropped_profiles=_ids(args.drop_profiles),
        failing_listing_events=_ids(args.fail_listing_event),
        unlisted_lectures=_ids(args.unlist_lecture),
    )
    return None if faults == SiteFaults() else faults


def site_from_args(args: argparse.Namespace) -> ReplicaSite:
    if args.lectures is not None and args.lectures < 0:
        raise ValueError("--lectures must not be negative")
    if args.side_event_every < 1:
        raise ValueError("--side-event-every must be at least 1")
    if args.events is not None:
        if args.events < 1:
            raise ValueError("--events must be at least 1")
        return build_catalogue(
            load_records(), events=args.events, lectures=args.lectures or 740, seed=args.seed
        )
    return build_site(
        load_records(), seed=args.seed, lectures=args.lectures, side_event_every=args.side_event_every
    )


def default_event_ids(site: ReplicaSite) -> tuple[str, ...]:
    """The events the ground truth covers when none is named: EMNLP 2025 on the default site, every event
    of a catalogue (in the site's order)."""
    return (MAIN_EVENT_ID,) if MAIN_EVENT_ID in site.events else tuple(site.events)


TruthTransform = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def serve(
    args: argparse.Namespace,
    site: ReplicaSite,
    *,
    overrides: OverridesFactory | None = None,
    truth_transform: TruthTransform | None = None,
    on_started: Callable[[ReplicaServer], None] | None = None,
    label: str = "",
) -> int:
    """Serve ``site`` as ``args`` say until SIGTERM or SIGINT; the first line on stdout is the base URL,
    the second the assets origin's (unless ``--no-assets``)."""
    try:
        site_faults = site_faults_from_args(args)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if args.night < 0:
        print("--night must not be negative", file=sys.stderr)
        return 2
    server = ReplicaServer(
        site,
        host=args.host,
        port=args.port,
        faults=named_profile(args.faults, args.fault_seed),
        request_log_path=args.request_log,
        overrides=overrides,
        site_faults=site_faults,
        assets_port=args.assets_port,
        assets=not args.no_assets,
        documents=args.documents,
        night=args.night,
    )
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    previous: dict[signal.Signals, Any] = {}
    try:
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, on_signal)
    except ValueError:
        pass  # not the main thread: the caller decides when to stop
    server.start()
    try:
        event_ids = tuple(args.event_id or default_event_ids(site))
        _write_truths(args, server, event_ids, truth_transform)
        if on_started is not None:
            on_started(server)
        # The base URL first, then the assets origin's (when it is served), each a line of its own.
        print(server.base_url, flush=True)
        if server.assets_url is not None:
            print(server.assets_url, flush=True)
        print(
            f"serving {len(site.lectures)} lectures (seed {args.seed}, faults {args.faults}"
            + (", broken answers" if site_faults is not None else "")
            + label
            + ")",
            file=sys.stderr,
            flush=True,
        )
        while not stopping.wait(0.2):
            pass
    finally:
        server.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


def _write_truths(
    args: argparse.Namespace,
    server: ReplicaServer,
    event_ids: Sequence[str],
    truth_transform: TruthTransform | None,
) -> None:
    """The ground truths the command line asks for: lectures, sessions, subtitle tracks."""
    site = server.site
    if args.ground_truth is not None:
        truth = ground_truth(
            site,
            server.base_url,
            event_ids=event_ids,
            assets_base=server.assets_url,
            documents_base=server.documents_url,
            night=server.night,
        )
        if truth_transform is not None:
            truth = truth_transform(truth)
        write_ground_truth(truth, args.ground_truth)
    if args.sessions_ground_truth is not None:
        write_ground_truth(sessions_truth(site, event_ids), args.sessions_ground_truth)
    if args.transcripts_ground_truth is not None:
        tracks = transcripts_truth(site, server.assets_url, event_ids)
        write_ground_truth(tracks, args.transcripts_ground_truth)
    if args.slides_ground_truth is not None:
        documents = documents_truth(site, server.documents_url, event_ids)
        write_ground_truth(documents, args.slides_ground_truth)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM or SIGINT; the first line on stdout is the base URL, the second the assets
    origin's."""
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    try:
        site = site_from_args(args)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    return serve(args, site)
