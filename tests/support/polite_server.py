"""A tiny scripted HTTP server on 127.0.0.1 for the politeness tests, and a crawl runner for a subprocess.

The server answers each path with a script of replies (the last one repeats): plain replies, ``Retry-After``
(seconds or an HTTP date computed when sent), pages with ``ETag`` / ``Last-Modified`` that answer conditional
requests with 304, redirects, connection resets and truncated bodies. It logs every request (arrival times,
headers), what it answered and when the answer had left.

``run_crawl`` runs a real Scrapy crawl of given URLs in a subprocess (this file run as a script) and returns
the crawl's stats, items and errback failures, read back from JSON.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from crawler import settings as project_settings
from tests.support.commands import run_command
from tests.support.settings import project_defaults

REPO_ROOT = Path(__file__).resolve().parents[2]
LAST_MODIFIED = "Wed, 05 Nov 2025 08:00:00 GMT"
PAGE_CACHE_CONTROL = "public, max-age=0, must-revalidate"

# The project's own downloader middlewares, as a crawl runs them.
COMPONENT_MIDDLEWARES: dict[str, int | None] = dict(project_settings.DOWNLOADER_MIDDLEWARES)

# The components under test read their settings without fallbacks: the project's defaults come first.
BASE_SETTINGS: dict[str, Any] = {
    **project_defaults(),
    "LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
    "DOWNLOAD_DELAY": 0,
    "DOWNLOAD_DELAY_JITTER": 0,
    "DOWNLOAD_TIMEOUT": 10,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    "DOWNLOADER_MIDDLEWARES": COMPONENT_MIDDLEWARES,
    "HTTPCACHE_POLICY": "crawler.cache.httpcache.RevalidatingPolicy",
    "HTTPCACHE_STORAGE": "crawler.cache.httpcache.BoundedFilesystemCacheStorage",
    "BACKOFF_MIN_DELAY": 0.1,
    "BACKOFF_MAX_DELAY": 5.0,
    "BACKOFF_WINDOW": 0.2,
}


@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    retry_after_date_in: float | None = None  # Retry-After as the HTTP date this many seconds from sending
    validators: bool = False  # ETag + Last-Modified, and 304 to a matching conditional request
    reset: bool = False  # abort the connection (TCP RST) instead of answering
    truncate: bool = False  # announce the full body, send half of it, close

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'


def page(body: str) -> Reply:
    return Reply(
        body=body.encode(),
        headers={"Content-Type": "text/html; charset=utf-8", "Cache-Control": PAGE_CACHE_CONTROL},
        validators=True,
    )


def redirect(location: str, status: int = 302) -> Reply:
    return Reply(status=status, headers={"Location": location})


Routes = Mapping[str, Reply | Sequence[Reply]]


@dataclass(frozen=True)
class Logged:
    """One request as the server saw it."""

    path: str
    mono: float  # time.monotonic() at arrival (this process)
    wall: float  # time.time() at arrival
    headers: Mapping[str, str]
    status: int  # 0 for a reset connection
    retry_after_until: float | None  # wall time from which Retry-After allows the next request
    sent: float | None = None  # time.monotonic() once the whole answer was written (None: reset)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: PoliteServer._HTTPServer

    def do_GET(self) -> None:
        mono, wall = time.monotonic(), time.time()
        # The first request on a connection was sent when the connection was made: its handler thread
        # starts later, the later the busier the machine.
        accepted = self.server.accepted.pop(self.client_address, None)
        if accepted is not None:
            wall -= mono - min(mono, accepted)
            mono = min(mono, accepted)
        owner = self.server.owner
        reply = owner.next_reply(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        if reply.reset:
            owner.record(Logged(self.path, mono, wall, headers, 0, None))
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        status, body, out = reply.status, reply.body, dict(reply.headers)
        retry_after_until = None
        if "Retry-After" in out:
            retry_after_until = wall + float(out["Retry-After"])
        if reply.retry_after_date_in is not None:
            out["Retry-After"] = formatdate(wall + reply.retry_after_date_in, usegmt=True)
            retry_after_until = float(int(wall + reply.retry_after_date_in))
        if reply.validators:
            out.update({"ETag": reply.etag, "Last-Modified": LAST_MODIFIED})
            if headers.get("if-none-match") == reply.etag or (
                "if-none-match" not in headers and headers.get("if-modified-since") == LAST_MODIFIED
            ):
                status, body = 304, b""
        entry = Logged(self.path, mono, wall, headers, status, retry_after_until)
        owner.record(entry)
        self.send_response(status)
        for name, value in out.items():
            self.send_header(name, value)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if reply.truncate:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            owner.mark_sent(entry)
            return
        if status != 304:
            self.wfile.write(body)
        owner.mark_sent(entry)

    def finish(self) -> None:
        with suppress(OSError, ValueError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class PoliteServer:
    """Scripted replies by path (query included); an unknown path gets 404."""

    class _HTTPServer(ThreadingHTTPServer):
        daemon_threads = True
        owner: PoliteServer
        # When each connection not yet answered was accepted, by client address (see _Handler.do_GET).
        accepted: dict[Any, float]

        def process_request(self, request: Any, client_address: Any) -> None:
            self.accepted[client_address] = time.monotonic()
            super().process_request(request, client_address)

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass

    def __init__(self, routes: Routes) -> None:
        self._scripts = {path: [r] if isinstance(r, Reply) else list(r) for path, r in routes.items()}
        self._served: dict[str, int] = {}
        self._lock = threading.Lock()
        self.log: list[Logged] = []
        self._httpd = self._HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._httpd.accepted = {}
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def next_reply(self, path: str) -> Reply:
        with self._lock:
            script = self._scripts.get(path)
            if not script:
                return Reply(status=404, body=b"not found")
            index = self._served.get(path, 0)
            self._served[path] = index + 1
            return script[min(index, len(script) - 1)]

    def record(self, entry: Logged) -> None:
        with self._lock:
            self.log.append(entry)

    def mark_sent(self, entry: Logged) -> None:
        """Note that the answer to *entry* has been written; the log keeps arrival order."""
        sent = time.monotonic()
        with self._lock:
            for index in range(len(self.log) - 1, -1, -1):
                if self.log[index] is entry:
                    self.log[index] = replace(entry, sent=sent)
                    return

    def requests_to(self, path: str) -> list[Logged]:
        return [entry for entry in self.log if entry.path == path]

    def paths(self) -> list[str]:
        return [entry.path for entry in self.log]

    def __enter__(self) -> PoliteServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def gaps(entries: Sequence[Logged]) -> list[float]:
    """Seconds between the arrivals of consecutive logged requests."""
    return [b.mono - a.mono for a, b in itertools.pairwise(entries)]


@contextmanager
def serve(routes: Routes) -> Iterator[PoliteServer]:
    with PoliteServer(routes) as server:
        yield server


@dataclass(frozen=True)
class CrawlResult:
    stats: dict[str, Any]
    items: list[dict[str, Any]]
    errors: list[dict[str, Any]]
    log: str


def run_crawl(
    requests: Sequence[str | Mapping[str, Any]],
    settings: Mapping[str, Any],
    workdir: Path,
    timeout: float = 60,
) -> CrawlResult:
    """Crawl *requests* (URLs, or dicts with "url" and "meta") in a subprocess, BASE_SETTINGS + *settings*."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / f"crawl-{time.monotonic_ns()}.json"
    output = config.with_suffix(".out.json")
    config.write_text(
        json.dumps(
            {
                "requests": [{"url": r} if isinstance(r, str) else dict(r) for r in requests],
                "settings": {**BASE_SETTINGS, **settings},
                "output": str(output),
            }
        )
    )
    # Forked from the test worker's fork server, whose sys.path holds the checkout (``tests`` is a package
    # there); the crawl's relative paths (its HTTP cache) fall under ``workdir``.
    proc = run_command([sys.executable, "-m", __name__, str(config)], cwd=workdir, timeout=timeout)
    if proc.returncode != 0 or not output.exists():
        raise RuntimeError(f"crawl failed ({proc.returncode}):\n{proc.stderr[-6000:]}")
    result = json.loads(output.read_text())
    return CrawlResult(result["stats"], result["items"], result["errors"], proc.stderr)


def _crawl_main(config_path: str) -> None:
    """Run one crawl from a JSON config (this file run as a script)."""
    import scrapy
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    config = json.loads(Path(config_path).read_text())
    items: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []

    class ProbeSpider(scrapy.Spider):
        name = "probe"

        async def start(self) -> Any:
            for spec in config["requests"]:
                yield scrapy.Request(
                    spec["url"],
                    meta=spec.get("meta", {}),
                    callback=self.parse,
                    errback=self.failed,
                    dont_filter=True,
                )

        def parse(self, response: Any) -> Any:
            slot = self.crawler.engine.downloader.slots.get(response.meta.get("download_slot", ""))
            yield {
                "url": response.url,
                "request_url": response.request.url,
                "status": response.status,
                "body": response.text,
                "flags": [f for f in response.flags if f != "cached"],
                "cached": "cached" in response.flags,
                "gated": bool(response.meta.get("gated")),
                "retry_times": response.meta.get("retry_times", 0),
                "slot_delay": None if slot is None else slot.delay,
            }

        def failed(self, failure: Any) -> None:
            request = failure.request
            errors.append(
                {
                    "url": request.url,
                    "error": type(failure.value).__name__,
                    "message": str(failure.value),
                    "gated": bool(request.meta.get("gated")),
                    "retry_times": request.meta.get("retry_times", 0),
                    "status": getattr(getattr(failure.value, "response", None), "status", None),
                }
            )

    process = CrawlerProcess(settings=config["settings"])
    crawler = process.create_crawler(ProbeSpider)
    crawler.signals.connect(lambda item: items.append(dict(item)), signal=signals.item_scraped, weak=False)
    process.crawl(crawler)
    process.start()
    stats = {
        k: (v if isinstance(v, (int, float, str, bool)) else str(v))
        for k, v in crawler.stats.get_stats().items()
    }
    Path(config["output"]).write_text(json.dumps({"stats": stats, "items": items, "errors": errors}))


if __name__ == "__main__":
    _crawl_main(sys.argv[1])
