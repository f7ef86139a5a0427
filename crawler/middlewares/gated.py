"""Gated downloads: a redirect to a log-in page is not followed.

A download that needs an account answers with a redirect (3xx) to a log-in page. Following it would fetch the
log-in page (which robots.txt may even forbid) and hand the spider a page that is not what it asked for. This
middleware stops there, marks the request ``meta["gated"] = True`` (``response.meta`` is the same dict) and
counts ``gated/count``. Then, by ``GATED_ACTION``:

- ``"ignore"``: raise ``IgnoreRequest``; the request's errback gets it and can read
  ``failure.request.meta["gated"]``.
- ``"flag"``: return the 3xx response itself to the spider's callback (``dont_redirect`` and
  ``handle_httpstatus_list`` are set on the request so that neither the redirect middleware nor the HTTP error
  middleware drops it); the response also gets the ``"gated"`` flag.

``GATED_LOGIN_PATHS`` are the log-in paths; a target matches a path when it is that path or below it
(case-insensitive, query ignored). ``GATED_ENABLED`` turns the middleware on. Their defaults are in
``crawler/settings.py``.

It must see responses before ``RedirectMiddleware`` (600) does: downloader middlewares with a higher order see
responses first, so register it between 600 and ``HttpCacheMiddleware`` (900), e.g. at 650.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from scrapy.exceptions import IgnoreRequest, NotConfigured
from w3lib.url import safe_url_string

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ACTIONS = ("ignore", "flag")


def _normalize_path(path: str) -> str:
    return path.rstrip("/").lower() or "/"


def is_login_url(url: str, login_paths: Iterable[str]) -> bool:
    """Whether *url* is one of *login_paths* or below one of them."""
    path = _normalize_path(urlsplit(url).path)
    for login in login_paths:
        login = _normalize_path(login)
        if path == login or path.startswith(login.rstrip("/") + "/"):
            return True
    return False


def redirect_target(request_url: str, response: Response) -> str | None:
    """The absolute URL a redirect response points to, or None when it is not a redirect."""
    location = response.headers.get(b"Location")
    if response.status not in REDIRECT_STATUSES or not location:
        return None
    return urljoin(request_url, safe_url_string(location))


class GatedDownloadMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("GATED_ENABLED"):
            raise NotConfigured
        self.login_paths = tuple(settings.getlist("GATED_LOGIN_PATHS"))
        self.action = settings.get("GATED_ACTION")
        if self.action not in ACTIONS:
            raise ValueError(f"GATED_ACTION must be one of {ACTIONS}, not {self.action!r}")
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        target = redirect_target(request.url, response)
        if target is None or not is_login_url(target, self.login_paths):
            return response
        request.meta["gated"] = True
        self.stats.inc_value("gated/count")
        if self.action == "ignore":
            raise IgnoreRequest(f"Gated download: {request.url} redirects to {target}")
        request.meta["dont_redirect"] = True
        request.meta["handle_httpstatus_list"] = [
            *request.meta.get("handle_httpstatus_list", ()),
            response.status,
        ]
        response.flags.append("gated")
        return response
