"""The replica's HTTP server: routes, caching headers, redirects, faults, hostile pages and the request log.

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
from dataclasses import asdict, dataclass, field
from email.utils import format_datetime, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any
from urllib.parse import parse_qs, urlsplit

from crawler.replica.faults import PROFILE_NAMES, RESET, SLOW, TRUNCATED, Fault, FaultProfile, named_profile
from crawler.replica.hostile import (
    DRIP_BYTES,
    KNOWN_VARIANTS,
    VARIANTS,
    HostileSite,
    claimed_total_pages,
    plan,
)
from crawler.replica.layout import (
    MAIN_EVENT_ID,
    Lecture,
    ReplicaSite,
    build_site,
    ground_truth,
    load_records,
    write_ground_truth,
)
from crawler.replica.pages import LOGIN_PAGE, ROBOTS_TXT, JsonDoc, Renderer, api_json, error_doc

HTML = "text/html; charset=utf-8"
API = "application/vnd.api+json"
TEXT = "text/plain; charset=utf-8"
CACHE_CONTROL = "public, max-age=0, must-revalidate"
DEFAULT_PAGE_SIZE = 16
MAX_PAGE_SIZE = 500

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


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    # Pages and API documents carry validators and may be answered with 304.
    cacheable: bool = False
    # Seconds between small pieces of the body (a hostile page that trickles out).
    drip_seconds: float = 0.0


class Router:
    """Maps a request (method, target, headers) to a ``Response``; no sockets involved."""

    def __init__(
        self,
        site: ReplicaSite,
        base_url: str,
        faults: FaultProfile | None = None,
        hostile: HostileSite | None = None,
    ) -> None:
        self.site = site
        self.base_url = base_url.rstrip("/")
        self.renderer = Renderer(site, self.base_url)
        self.faults = faults
        self.hostile = hostile
        self.last_modified = site.last_modified().replace(microsecond=0)
        self.last_modified_header = format_datetime(self.last_modified, usegmt=True)
        self._lists: dict[tuple[str | None, str | None, str | None], list[Lecture]] = {}
        self._list_lock = threading.Lock()

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

    def _route(self, path: str, query: dict[str, list[str]]) -> Response:
        site = self.site
        if path == "/robots.txt":
            return Response(200, self.robots_txt(), TEXT)
        if path == "/log-in":
            return Response(200, LOGIN_PAGE.encode("utf-8"), HTML)
        match = _LECTURE_PAGE.match(path)
        if match:
            lecture = site.lectures.get(str(int(match["id"])))
            if lecture is None:
                return _html_error(404, "Not Found")
            if match["id"] != lecture.id or match["slug"] != lecture.slug:
                return self._redirect(301, self.renderer.canonical_url(lecture))
            if self.hostile is not None:
                answer = self.hostile.lecture_page(lecture, query)
                if answer is not None:
                    return Response(
                        answer.status,
                        answer.body,
                        answer.content_type,
                        list(answer.headers),
                        drip_seconds=answer.drip_seconds,
                    )
            return Response(200, self.renderer.lecture_page(lecture), HTML, cacheable=True)
        match = _SESSION_LIST.match(path)
        if match:
            session = site.sessions.get(_first(query, "eventSessionId") or "")
            if session is None or session.event_id != match["eid"]:
                return _html_error(404, "Not Found")
            return Response(200, self.renderer.session_page(session), HTML, cacheable=True)
        if path == "/api/v1/thin_lectures":
            return self._list(query)
        match = _API_LECTURE.match(path)
        if match:
            lecture = site.lectures.get(match["id"])
            if lecture is None:
                return _api_error(404, "Not Found", f"no lecture {match['id']}")
            part = match["part"] or "lecture"
            builders: dict[str, Callable[[Lecture], JsonDoc]] = {
                "lecture": self.renderer.lecture_doc,
                "related": self.renderer.related_doc,
                "next": self.renderer.next_doc,
                "similar": self.renderer.similar_doc,
            }
            body = self.renderer.api_body(("lecture", lecture.id, part), lambda: builders[part](lecture))
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

    def _redirect(self, status: int, location: str) -> Response:
        reason = "Moved Permanently" if status == 301 else "Found"
        body = f'<!DOCTYPE html><html><body><a href="{location}">{reason}</a></body></html>\n'
        return Response(status, body.encode("utf-8"), HTML, headers=[("Location", location)])

    def _list(self, query: dict[str, list[str]]) -> Response:
        size = _positive_int(_first(query, "page[size]"), DEFAULT_PAGE_SIZE)
        number = _positive_int(_first(query, "page[number]"), 1)
        if size is None or size > MAX_PAGE_SIZE:
            return _api_error(400, "Bad Request", f"page[size] must be an integer from 1 to {MAX_PAGE_SIZE}")
        if number is None:
            return _api_error(400, "Bad Request", "page[number] must be a positive integer")
        key = (
            _first(query, "filter[event_id]"),
            _first(query, "filter[event_session_id]"),
            _first(query, "filter[poster_lecture]"),
        )
        lectures = self._filtered(key)
        if self.hostile is not None:
            return self._hostile_list(lectures, size, number)
        body = self.renderer.api_body(
            ("list", *(k or "" for k in key), str(size), str(number)),
            lambda: self.renderer.list_doc(lectures, size, number),
        )
        return Response(200, body, API, cacheable=True)

    def _hostile_list(self, lectures: list[Lecture], size: int, number: int) -> Response:
        """A list page whose ``meta.total_pages`` lies, and that never runs out: a page past the end
        repeats the last one."""
        last = max(1, (len(lectures) + size - 1) // size)
        doc = self.renderer.list_doc(lectures, size, min(number, last))
        doc["meta"]["total_pages"] = claimed_total_pages(number)
        return Response(200, api_json(doc), API)

    def _filtered(self, key: tuple[str | None, str | None, str | None]) -> list[Lecture]:
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

    def __init__(self, address: tuple[str, int], app: ReplicaServer) -> None:
        self.app = app
        self.open_connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)


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
            )
        )

    def parse_request(self) -> bool:
        self._started = time.time()
        return super().parse_request()

    def _serve(self, head: bool) -> None:
        app = self.server.app
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
            response = router.respond(
                self.path,
                {
                    "if-none-match": self.headers.get("If-None-Match"),
                    "if-modified-since": self.headers.get("If-Modified-Since"),
                },
            )
        truncated = fault is not None and fault.kind == TRUNCATED
        self._record(response.status, fault.kind if fault is not None else None)
        self._send(response, head=head, truncated=truncated)

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

    def _reset(self) -> None:
        """Drop the connection with a TCP reset and no answer."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass


class ReplicaServer:
    """The replica on ``host:port`` (port 0: a free one), served from a daemon thread."""

    def __init__(
        self,
        site: ReplicaSite,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: FaultProfile | None = None,
        request_log_path: str | Path | None = None,
        hostile: bool | Mapping[str, str] = False,
    ) -> None:
        """``hostile``: True for the broken variants of :func:`crawler.replica.hostile.plan`, or an
        explicit ``{lecture id: variant}``."""
        self.site = site
        self.host = host
        self.port = port
        self.faults = faults
        self.hostile = hostile
        self.request_log_path = Path(request_log_path) if request_log_path is not None else None
        self._records: list[RequestRecord] = []
        self._records_lock = threading.Lock()
        self._log: IO[str] | None = None
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._router: Router | None = None
        self.stopping = threading.Event()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the replica server is not started")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

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
        hostile = None
        if self.hostile is not False:
            variants = None if self.hostile is True else self.hostile
            hostile = HostileSite(self.site, self.base_url, variants)
        self._router = Router(self.site, self.base_url, self.faults, hostile)
        if self.request_log_path is not None:
            self.request_log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = self.request_log_path.open("a", encoding="utf-8")
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="replica-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd = self._httpd
        if httpd is None:
            return
        self.stopping.set()
        httpd.shutdown()
        with httpd.connections_lock:
            connections = list(httpd.open_connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._records_lock:
            if self._log is not None:
                self._log.close()
                self._log = None
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ReplicaServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m crawler.replica",
        description="Serve a local replica of the Underline site; prints the base URL first.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default 0: a free port)")
    parser.add_argument("--lectures", type=int, default=None, help="how many lectures (default: all 740)")
    parser.add_argument("--seed", type=int, default=0, help="layout seed (default 0)")
    parser.add_argument("--faults", choices=PROFILE_NAMES, default="none", help="fault profile")
    parser.add_argument("--fault-seed", type=int, default=0, help="seed of the fault profile (default 0)")
    parser.add_argument("--request-log", type=Path, default=None, help="append every request as JSON Lines")
    parser.add_argument(
        "--ground-truth", type=Path, default=None, help=f"write event {MAIN_EVENT_ID}'s expected records"
    )
    parser.add_argument(
        "--hostile",
        action="store_true",
        help="serve broken variants of a few lecture pages and a lecture list that lies about its size",
    )
    parser.add_argument(
        "--hostile-only",
        default=None,
        metavar="VARIANT,...",
        help=f"serve only these hostile variants (known: {', '.join(KNOWN_VARIANTS)})",
    )
    parser.add_argument(
        "--hostile-plan", type=Path, default=None, help="write the hostile lectures' variants as JSON"
    )
    parser.add_argument(
        "--planted",
        action="store_true",
        help="plant duplicate talks, near-duplicate abstracts, pages without JSON and extra template blocks",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM or SIGINT; the first line on stdout is the base URL."""
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    if args.lectures is not None and args.lectures < 0:
        print("--lectures must not be negative", file=sys.stderr)
        return 2
    site = build_site(load_records(), seed=args.seed, lectures=args.lectures)
    planted = None
    if args.planted:
        from crawler.replica.planted import plant_cases

        site, planted = plant_cases(site, args.seed)
    hostile: bool | dict[str, str] = bool(args.hostile)
    if args.hostile_only is not None:
        chosen = tuple(v.strip() for v in args.hostile_only.split(",") if v.strip())
        try:
            hostile = plan(site, variants=chosen or VARIANTS)
        except ValueError as exc:
            print(str(exc), file=sys.stderr)
            return 2
    server = ReplicaServer(
        site,
        host=args.host,
        port=args.port,
        faults=named_profile(args.faults, args.fault_seed),
        request_log_path=args.request_log,
        hostile=hostile,
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
        if args.ground_truth is not None:
            truth = ground_truth(site, server.base_url)
            if planted is not None:
                truth = planted.expected_records(truth)
            write_ground_truth(truth, args.ground_truth)
        if args.hostile_plan is not None:
            variants = server.router.hostile.variants if server.router.hostile is not None else {}
            args.hostile_plan.parent.mkdir(parents=True, exist_ok=True)
            args.hostile_plan.write_text(
                json.dumps(variants, indent=1, sort_keys=True) + "\n", encoding="utf-8"
            )
        print(server.base_url, flush=True)
        print(
            f"serving {len(site.lectures)} lectures (seed {args.seed}, faults {args.faults}"
            + (", hostile" if hostile is not False else "")
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
