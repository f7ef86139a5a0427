"""A misbehaving copy of the site on 127.0.0.1, in front of a real one (the replica), for the site check.

Some requests get a canned answer, chosen by a function of the path (query included): a robots.txt
that names an e-mail address or disallows everything, a redirect to another origin, an HTML page where
the listing belongs, an answer that trickles in a byte at a time. Every other request is forwarded to
the upstream site and answered as it answered (redirects passed on, not followed). Every path asked
for is logged, in order.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Canned:
    """One answer. ``trickle``: seconds between two bytes of the body, whose full length is announced
    up front; the answer then takes ``len(body) * trickle`` seconds to arrive whole."""

    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain"
    location: str | None = None
    trickle: float | None = None


Rule = Callable[[str], Canned | None]


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class BadSite:
    """``rule(path)`` answers a request, or None forwards it to ``upstream``."""

    class _HTTPServer(ThreadingHTTPServer):
        daemon_threads = True
        owner: BadSite

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass

    def __init__(self, upstream: str, rule: Rule) -> None:
        self.upstream = upstream.rstrip("/")
        self.rule = rule
        self.paths: list[str] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._opener = urllib.request.build_opener(_NoRedirects)
        self._httpd = self._HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def log(self, path: str) -> None:
        with self._lock:
            self.paths.append(path)

    def forward(self, path: str, accept: str) -> Canned:
        request = urllib.request.Request(self.upstream + path, headers={"Accept": accept})
        try:
            with self._opener.open(request, timeout=30) as reply:
                return Canned(reply.status, reply.read(), reply.headers.get("Content-Type", "text/html"))
        except urllib.error.HTTPError as exc:
            location = exc.headers.get("Location") if exc.headers else None
            return Canned(exc.code, exc.read(), exc.headers.get("Content-Type", "text/plain"), location)

    def __enter__(self) -> BadSite:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: BadSite._HTTPServer

    def do_GET(self) -> None:
        site = self.server.owner
        site.log(self.path)
        answer = site.rule(self.path) or site.forward(self.path, self.headers.get("Accept", "*/*"))
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        if answer.location is not None:
            self.send_header("Location", answer.location)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        if answer.trickle is None:
            self.wfile.write(answer.body)
            return
        with suppress(OSError):
            for byte in answer.body:
                if site.stopping.wait(answer.trickle):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass
