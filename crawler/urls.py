"""Canonical lecture URLs: every alias of a lecture page maps to ``<web base>/lecture/<id>-<slug>``.

Underline serves one lecture under several paths (bare, from a session, from a poster session, with
``?tab=``); the crawler schedules and deduplicates on the canonical form only.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from urllib.parse import urlencode, urlsplit

# The id is the leading digits of the last path segment; the slug is what follows the first hyphen.
_LECTURE_PATH = re.compile(
    r"""^/(?:
        lecture
      | events/\d+/sessions/\d+/lecture
      | events/\d+/posters/\d+/poster
    )/(?P<id>\d{1,18})(?:-(?P<slug>[^/?#]+))?/?$""",
    re.VERBOSE,
)


# A lecture's id and slug (None when the URL has none), as a lecture URL names them.
LectureRef = tuple[str, str | None]


# Pages link the same lectures again and again (related lectures, a session's other talks).
@functools.lru_cache(maxsize=8192)
def lecture_ref(url: str) -> LectureRef | None:
    """The lecture id and slug in any lecture URL form (absolute or a path); None for other URLs."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme not in ("", "http", "https"):
        return None
    match = _LECTURE_PATH.match(parts.path)
    if match is None:
        return None
    return str(int(match["id"])), match["slug"] or None


def canonical_lecture_url(web_base: str, lecture_id: str, slug: str | None) -> str:
    """``<web base>/lecture/<id>-<slug>`` (``/lecture/<id>`` when the slug is unknown)."""
    base = web_base.rstrip("/")
    return f"{base}/lecture/{lecture_id}-{slug}" if slug else f"{base}/lecture/{lecture_id}"


def same_host(url: str, base: str) -> bool:
    """True when ``url`` is on the host (and port) of ``base``."""
    return urlsplit(url).netloc.lower() == urlsplit(base).netloc.lower()


def without_credentials(url: str) -> str:
    """``url`` without a ``user:password@`` part, so that it can be shown or published."""
    try:
        parts = urlsplit(url)
        if parts.username is None and parts.password is None:
            return url
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        # Not a URL urllib can take apart: drop everything up to the last "@" of its authority.
        scheme, sep, rest = url.partition("://")
        authority, slash, path = rest.partition("/")
        return f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{path}"
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return parts._replace(netloc=netloc).geturl()


# What public clients ask the lecture listing to include: the tag (presentation type), the event, the
# session and the authors' profiles (in the ``sorted_profiles`` relationship's order).
LISTING_INCLUDE = "sorted_profiles,event_session,tag,event"
API_ACCEPT = "application/vnd.api+json"


def listing_url(api_base: str, event_id: str, page: int, page_size: int) -> str:
    """One page of an event's lecture listing, oldest first (``sort=held_at,id``)."""
    query = {
        "filter[event_id]": event_id,
        "filter[published]": "all",
        "filter[scope]": "all",
        "sort": "held_at,id",
        "include": LISTING_INCLUDE,
        "page[size]": str(page_size),
        "page[number]": str(page),
    }
    return f"{api_base.rstrip('/')}/api/v1/thin_lectures?{urlencode(query)}"


# The whole catalogue (every published lecture of every event) with each lecture's event, nothing else:
# no profiles, so no personal data comes with it.
LIBRARY_INCLUDE = "event"


def library_listing_url(api_base: str, page: int, page_size: int) -> str:
    """One page of the whole library's lecture listing (``filter[library]=true``), events included."""
    query = {
        "filter[library]": "true",
        "filter[scope]": "published",
        "include": LIBRARY_INCLUDE,
        "page[size]": str(page_size),
        "page[number]": str(page),
    }
    return f"{api_base.rstrip('/')}/api/v1/thin_lectures?{urlencode(query)}"


def transcripts_url(api_base: str, lecture_id: str) -> str:
    """A lecture's transcripts with their languages (one request per lecture)."""
    query = {
        "filter[lecture_id]": lecture_id,
        "filter[scope]": "with_subtitles",
        "include": "language",
        "page[size]": "100",
    }
    return f"{api_base.rstrip('/')}/api/v1/transcripts?{urlencode(query)}"


def lecture_resource_url(api_base: str, lecture_id: str) -> str:
    """One lecture's own resource, with its event: what says whether it is still on the site."""
    return f"{api_base.rstrip('/')}/api/v1/thin_lectures/{lecture_id}?include=event"


def event_resource_url(api_base: str, event_id: str) -> str:
    """One event's own resource: what says whether an event that lists nothing is still on the site."""
    return f"{api_base.rstrip('/')}/api/v1/thin_events/{event_id}"


# The meta key of a request for a file a lecture names (a subtitle file, a slide deck, a poster): it may
# follow a redirect to another of the allowed hosts, and to nothing else (crawler.middlewares.origin).
ASSET_FILE_META = "asset_file"


def subtitle_host_allowed(url: str, site_hosts: Iterable[str], asset_hosts: Iterable[str]) -> bool:
    """Whether a subtitle file at ``url`` may be fetched: http(s), on one of the site's own hosts (any port)
    or one of the asset hosts. Host names compare case-insensitively, without a trailing dot."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        return False
    host = (parts.hostname or "").lower().rstrip(".")
    allowed = {h.lower().rstrip(".") for h in (*site_hosts, *asset_hosts) if h}
    return bool(host) and host in allowed


def host_of(url: str) -> str:
    """The host name of a base URL or a bare host (``assets.underline.io``)."""
    if "//" not in url:
        url = "//" + url
    return (urlsplit(url).hostname or "").lower()
