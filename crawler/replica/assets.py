"""The assets origin of the replica: the lectures' subtitle files, slide decks and posters, on a host of
their own.

The real site keeps subtitle files, slides and posters on ``assets.underline.io``, apart from its pages
and API; the replica serves them from a second server (another port of the same address) with a
robots.txt of its own. Every file is answered with an ETag and a Last-Modified (and 304 to a request that
has it already), a gzip track in gzip when the client accepts it, and the broken kinds as they are
broken: a 404, a redirect to a host that is not the site's, a PDF cut short, encrypted or no PDF at all
(see :mod:`crawler.replica.documents`). A document's bytes are written when it is first asked for and
kept. Videos are never fetched and are not served.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import threading
from collections.abc import Mapping
from email.utils import format_datetime, parsedate_to_datetime
from urllib.parse import urlsplit

from crawler.replica.answer import Response
from crawler.replica.documents import SiteDocument, document_bytes, plan_of, site_documents
from crawler.replica.layout import Lecture, ReplicaSite, Subtitle
from crawler.replica.subtitle_files import file_bytes
from crawler.replica.subtitles import (
    KIND_GZIP,
    KIND_NOT_FOUND,
    KIND_OFFSITE_REDIRECT,
    OFFSITE_HOST,
    PRIVATE_PREFIX,
)
from crawler.replica.tracks import file_owner, plan_for

ASSETS_ROBOTS_TXT = f"User-agent: *\nDisallow: {PRIVATE_PREFIX}/\n"
VTT = "text/vtt"
PDF = "application/pdf"
XML = "application/xml"
TEXT = "text/plain; charset=utf-8"
CACHE_CONTROL = "public, max-age=0, must-revalidate"
# What S3 answers for a key it does not hold.
NOT_FOUND_XML = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    "<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>\n"
)
# An assets host having a bad night, as :attr:`AssetsRouter.outage` puts it on (None: a good night):
# every file answered with a maintenance page (200, HTML), 503, an empty file (a WebVTT header alone for a
# subtitle file, no bytes for a PDF), or 404; or a robots.txt that disallows everything.
OUTAGES = ("html", "unavailable", "empty", "gone", "disallow")
MAINTENANCE_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>Down for maintenance</title></head>"
    "<body><h1>We'll be back soon</h1></body></html>\n"
)
# What the request log calls an assets request (``kind``): apart from the main origin's kinds, so
# counts of those stay what they were.
KIND_ASSETS_ROBOTS = "assets_robots"
KIND_SUBTITLE = "subtitle"
KIND_DOCUMENT = "document"
KIND_ASSETS_OTHER = "assets_other"
_SUBTITLE_PATH = re.compile(rf"^(?:{PRIVATE_PREFIX})?/lecture/\d+/transcripts/[^/]+\.vtt$")
_DOCUMENT_PATH = re.compile(r"^/lecture/\d+/(?:slideshow|poster_document)/[^/]+\.pdf$")


def assets_request_kind(target: str) -> str:
    """What an assets request for ``target`` asks for: robots.txt, a subtitle file, a slide deck or
    poster (``document``), or something else."""
    path = urlsplit(target).path
    if path == "/robots.txt":
        return KIND_ASSETS_ROBOTS
    if _SUBTITLE_PATH.match(path):
        return KIND_SUBTITLE
    return KIND_DOCUMENT if _DOCUMENT_PATH.match(path) else KIND_ASSETS_OTHER


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Whether an ``Accept-Encoding`` header takes gzip (a ``q=0`` refuses it)."""
    for part in (accept_encoding or "").split(","):
        name, _, params = part.strip().partition(";")
        if name.strip().lower() in ("gzip", "x-gzip", "*"):
            q = params.strip().removeprefix("q=")
            return not (params.strip().startswith("q=") and _is_zero(q))
    return False


def _is_zero(text: str) -> bool:
    try:
        return float(text) == 0
    except ValueError:
        return False


def not_modified(etag: str, last_modified: str, headers: Mapping[str, str | None]) -> bool:
    """Whether a request with ``headers`` already has the representation of ``etag`` (If-None-Match wins
    over If-Modified-Since, as HTTP says)."""
    if_none_match = headers.get("if-none-match")
    if if_none_match is not None:
        tags = [t.strip() for t in if_none_match.split(",")]
        return any(t == "*" or t.removeprefix("W/") == etag for t in tags)
    since_text = headers.get("if-modified-since")
    if not since_text:
        return False
    try:
        since = parsedate_to_datetime(since_text)
        modified = parsedate_to_datetime(last_modified)
    except (TypeError, ValueError, IndexError):
        return False
    return since.tzinfo is not None and modified <= since


class AssetsRouter:
    """Maps a request on the assets origin to an answer; every file is written at most once."""

    def __init__(self, site: ReplicaSite, base_url: str) -> None:
        self.site = site
        self.base_url = base_url.rstrip("/")
        self.faults = None  # the random fault profiles apply to the main origin only
        self.last_modified_header = format_datetime(site.last_modified().replace(microsecond=0), usegmt=True)
        self._tracks: dict[str, tuple[Lecture, Subtitle]] = {
            s.path: (file_owner(site, lec, s), s)
            for lec in site.lectures.values()
            for s in lec.subtitles
            if s.path is not None
        }
        self._files: dict[tuple[str, bool], bytes] = {}
        self._documents: dict[str, SiteDocument] = {d.path: d for d in site_documents(site)}
        self._document_files: dict[str, bytes | None] = {}
        self._lock = threading.Lock()
        # One of OUTAGES while the host has a bad night (set between crawls by a test or a scenario).
        self.outage: str | None = None

    def robots_txt(self) -> bytes:
        if self.outage == "disallow":
            return b"User-agent: *\nDisallow: /\n"
        return ASSETS_ROBOTS_TXT.encode("utf-8")

    def outage_answer(self, path: str = "") -> Response | None:
        """What every file (the one at ``path``) gets while the host has a bad night (None: its own
        answer)."""
        if self.outage == "html":
            return Response(200, MAINTENANCE_PAGE.encode("utf-8"), "text/html; charset=utf-8")
        if self.outage == "unavailable":
            return Response(503, b"503 Service Unavailable\n", TEXT, [("Retry-After", "1")])
        if self.outage == "empty":
            return Response(200, b"", PDF) if path in self._documents else Response(200, b"WEBVTT\n\n", VTT)
        if self.outage == "gone":
            return Response(404, NOT_FOUND_XML.encode("utf-8"), XML)
        return None

    def track(self, path: str) -> tuple[Lecture, Subtitle] | None:
        """The lecture and track whose file sits at ``path`` (None for any other path)."""
        return self._tracks.get(path)

    def file(self, lecture: Lecture, subtitle: Subtitle, compressed: bool = False) -> bytes:
        """The track's file as stored, or gzip-compressed (the same bytes every time)."""
        assert subtitle.path is not None
        key = (subtitle.path, compressed)
        body = self._files.get(key)
        if body is None:
            raw = file_bytes(plan_for(self.site.seed, lecture, subtitle))
            body = gzip.compress(raw, mtime=0) if compressed else raw
            with self._lock:
                body = self._files.setdefault(key, body)
        return body

    def document(self, path: str) -> SiteDocument | None:
        """The slide deck or poster served at ``path`` (None for any other path)."""
        return self._documents.get(path)

    def document_file(self, found: SiteDocument) -> bytes | None:
        """The document's bytes as served (the same every time; None: it is not found)."""
        if found.path not in self._document_files:
            body = document_bytes(plan_of(self.site, found))
            with self._lock:
                self._document_files.setdefault(found.path, body)
        return self._document_files[found.path]

    def respond(self, target: str, headers: Mapping[str, str | None]) -> Response:
        path = urlsplit(target).path
        if path == "/robots.txt":
            return Response(200, self.robots_txt(), TEXT)
        outage = self.outage_answer(path)
        if outage is not None:
            return outage
        document = self.document(path)
        if document is not None:
            body = self.document_file(document)
            if body is None:
                return Response(404, NOT_FOUND_XML.encode("utf-8"), XML)
            return self._cacheable(body, False, headers, PDF)
        found = self.track(path)
        if found is None or found[1].kind == KIND_NOT_FOUND:
            return Response(404, NOT_FOUND_XML.encode("utf-8"), XML)
        lecture, subtitle = found
        if subtitle.kind == KIND_OFFSITE_REDIRECT:
            location = OFFSITE_HOST + path
            body = f'<html><body><a href="{location}">Found</a></body></html>\n'.encode()
            return Response(302, body, "text/html; charset=utf-8", [("Location", location)])
        compressed = subtitle.kind == KIND_GZIP and accepts_gzip(headers.get("accept-encoding"))
        return self._cacheable(self.file(lecture, subtitle, compressed), compressed, headers)

    def _cacheable(
        self, body: bytes, compressed: bool, headers: Mapping[str, str | None], content_type: str = VTT
    ) -> Response:
        digest = hashlib.sha256(body).hexdigest()[:32]
        etag = f'"{digest}-gzip"' if compressed else f'"{digest}"'
        validators = [
            ("ETag", etag),
            ("Last-Modified", self.last_modified_header),
            ("Cache-Control", CACHE_CONTROL),
        ]
        if content_type == VTT:
            # Subtitle files are served in gzip to a client that accepts it.
            validators.append(("Vary", "Accept-Encoding"))
        if not_modified(etag, self.last_modified_header, headers):
            return Response(304, headers=validators)
        if compressed:
            validators.append(("Content-Encoding", "gzip"))
        return Response(200, body, content_type, validators)
