"""Redirects that leave the site's origin are never followed.

Scrapy's ``allowed_domains`` compares host names only: a redirect to ``127.0.0.1:<another port>``, to
``localhost`` or to a cloud metadata address would be followed and its page published as a lecture.
Here a redirect is followed only when its target has the same origin (scheme, host and port) as the
request, or the origin of one of the configured site bases (``UNDERLINE_WEB_BASE``,
``UNDERLINE_API_BASE``). Anything else raises ``IgnoreRequest`` (the request's errback counts the lecture
as failed), is logged at WARNING and counted as ``offorigin/redirects``; ``request.meta["off_origin"]``
holds the target. A request for a file a lecture names (a subtitle file, a slide deck, a poster:
``request.meta["asset_file"]``) may also follow a redirect to another of the hosts such files come from
(the site's own, any port, and ``UNDERLINE_ASSET_HOSTS``), and to nothing else.

It must see responses before ``RedirectMiddleware`` (600): register it between 600 and the gated-download
middleware (650), which handles redirects to a log-in page first.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.exceptions import IgnoreRequest, NotConfigured

from crawler.middlewares.gated import redirect_target
from crawler.urls import ASSET_FILE_META, host_of, subtitle_host_allowed

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port filled in; host lower-cased."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1  # an unreadable port matches no origin
    return scheme, (parts.hostname or "").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme)


class OffOriginRedirectMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("OFFORIGIN_ENABLED"):
            raise NotConfigured
        bases = [settings[name] for name in ("UNDERLINE_WEB_BASE", "UNDERLINE_API_BASE") if settings[name]]
        self.site_origins = {origin(base) for base in bases}
        self.site_hosts = tuple(host_of(base) for base in bases)
        self.asset_hosts = tuple(settings.getlist("UNDERLINE_ASSET_HOSTS"))
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        target = redirect_target(request.url, response)
        if target is None:
            return response
        allowed = {origin(request.url), *self.site_origins}
        if origin(target) in allowed:
            return response
        if request.meta.get(ASSET_FILE_META) and subtitle_host_allowed(
            target, self.site_hosts, self.asset_hosts
        ):
            return response
        request.meta["off_origin"] = target
        self.stats.inc_value("offorigin/redirects")
        logger.warning("Not following a redirect off the site: %s -> %s", request.url, target)
        raise IgnoreRequest(f"{request.url} redirects off the site's origin, to {target}")
