"""One HTTP client for the site tools (``check-site``, ``record``, ``events``): one GET at a time, never
raising, the whole answer within a deadline, redirects followed only within the site's origins, at a
polite pace (:class:`PoliteFetcher`). The crawl itself goes through Scrapy."""

from __future__ import annotations

import http.client
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from crawler import settings as defaults

MAX_BODY = 16 * 1024 * 1024
# The whole answer (connection, headers and body) must arrive within this many seconds: a server that
# sends a byte now and then is cut off, as Scrapy's DOWNLOAD_TIMEOUT cuts it off in a crawl.
DEFAULT_TIMEOUT = float(defaults.DOWNLOAD_TIMEOUT)
MAX_REDIRECTS = defaults.REDIRECT_MAX_TIMES
_REDIRECTS = (301, 302, 303, 307, 308)
_CHUNK = 64 * 1024


@dataclass
class Answer:
    url: str
    status: int
    content_type: str
    body: bytes
    error: str | None = None
    location: str | None = None
    # Where a redirect off the site's origins pointed (its origin only); it was not followed.
    off_origin: str | None = None


Fetch = Callable[[str, Mapping[str, str]], Answer]


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url``, the port always written: what a redirect may not leave."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{scheme}://{(parts.hostname or '').lower()}:{port or (443 if scheme == 'https' else 80)}"


def fetch_url(
    url: str,
    headers: Mapping[str, str],
    timeout: float = DEFAULT_TIMEOUT,
    origins: Collection[str] | None = None,
) -> Answer:
    """One GET, never raising: the whole answer within ``timeout`` seconds, redirects followed (up to
    ``MAX_REDIRECTS``) only within ``origins`` (every origin when None); a redirect that leaves them is
    answered as it came, with ``off_origin`` set."""
    deadline = time.monotonic() + timeout
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        answer = _get_once(current, headers, deadline, timeout)
        if answer.error or answer.status not in _REDIRECTS or not answer.location:
            return answer
        target = urljoin(current, answer.location)
        if urlsplit(target).scheme not in ("http", "https"):
            answer.error = "redirected to a URL that is not http(s)"
            return answer
        if origins is not None and origin(target) not in origins:
            answer.off_origin = origin(target)
            answer.error = f"redirected off the site to {answer.off_origin}; not followed"
            return answer
        current = target
    return Answer(current, 0, "", b"", error=f"more than {MAX_REDIRECTS} redirects")


def _get_once(url: str, headers: Mapping[str, str], deadline: float, timeout: float) -> Answer:
    late = Answer(url, 0, "", b"", error=f"no whole answer within {timeout:g} s")
    parts = urlsplit(url)
    if deadline <= time.monotonic():
        return late
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sent = {"User-Agent": defaults.USER_AGENT, "Connection": "close", **headers}
    try:
        connection = kind(parts.hostname or "", parts.port, timeout=deadline - time.monotonic())
    except ValueError as exc:
        return Answer(url, 0, "", b"", error=str(exc))
    try:
        # Every blocking step waits at most until the deadline, not a fresh timeout per read.
        connection.connect()
        sock = connection.sock
        connection.request("GET", target, headers=sent)
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        reply = connection.getresponse()
        body = bytearray()
        while len(body) < MAX_BODY:
            left = deadline - time.monotonic()
            if left <= 0:
                return late
            sock.settimeout(left)
            chunk = reply.read1(min(_CHUNK, MAX_BODY - len(body)))
            if not chunk:
                break
            body += chunk
        error = None
        if len(body) >= MAX_BODY:
            error = f"the answer is larger than {MAX_BODY // (1024 * 1024)} MiB"
        elif reply.length:
            error = "the answer ended before its Content-Length"
        return Answer(
            url,
            reply.status,
            reply.getheader("Content-Type", "") or "",
            bytes(body),
            error=error,
            location=reply.getheader("Location"),
        )
    except TimeoutError:
        return late
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return Answer(url, 0, "", b"", error=str(exc) or type(exc).__name__)
    finally:
        connection.close()


class PoliteFetcher:
    """Fetches one URL at a time, at least ``delay`` seconds apart (the larger of it and Crawl-delay)."""

    def __init__(self, delay: float, fetch: Fetch = fetch_url) -> None:
        self.delay = delay
        self.fetch = fetch
        self.last = 0.0
        self.log: list[Answer] = []

    def get(self, url: str, headers: Mapping[str, str] | None = None) -> Answer:
        wait = self.last + self.delay - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        answer = self.fetch(url, headers or {})
        self.last = time.monotonic()
        self.log.append(answer)
        return answer
