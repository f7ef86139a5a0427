"""Links of a lecture page: the lecture pages it points at, and the lecture a URL names."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin, urlsplit

from crawler.urls import LectureRef, lecture_ref

# Lecture links kept per page, and the longest link kept: more is a hostile page, not a lecture page.
MAX_LECTURE_LINKS = 1_000
MAX_LINK_LENGTH = 2_048

# A site-relative path (and query) that ``urljoin`` would append to the base's origin unchanged: no dot
# segments to remove, no empty one (a leading "//" names a host), no parameters, no fragment, no empty
# query, nothing to strip. Nearly every link of a lecture page is one ("/lecture/130412-router-tuning").
_PLAIN_PATH = re.compile(r"(?:/[A-Za-z0-9_~%-]+)+/?(?:\?[A-Za-z0-9_~%=&+.-]+)?")


def absolute(base: str, href: str | None) -> str | None:
    """``href`` resolved against ``base``; None for a missing, blank or unparsable one."""
    if href is None or not href.strip():
        return None
    try:
        return urljoin(base, href.strip())
    except ValueError:
        return None


def safe_lecture_ref(url: str) -> LectureRef | None:
    """``lecture_ref`` for a URL from a page: too long a URL is none, and nothing raises (an id of
    thousands of digits is more than ``int`` converts)."""
    if len(url) > MAX_LINK_LENGTH:
        return None
    try:
        return lecture_ref(url)
    except ValueError:
        return None


def url_lecture_id(url: str | None) -> str | None:
    """The lecture id a URL names; None for a URL that names none."""
    if url is None:
        return None
    ref = safe_lecture_ref(url)
    return ref[0] if ref else None


def link_lecture_id(root: Any, page_url: str, *rels: str) -> str | None:
    """The lecture id of the first ``<link rel=...>`` (one of ``rels``) that names a lecture."""
    for link in root.iter("link"):
        if (link.get("rel") or "").strip().lower() in rels:
            lecture_id = url_lecture_id(absolute(page_url, link.get("href")))
            if lecture_id is not None:
                return lecture_id
    return None


def origin(base: str) -> str | None:
    """``scheme://host`` of an http(s) URL with a host, in the form ``urljoin`` gives it (scheme in
    lower case); None for any other URL, or one that does not parse."""
    try:
        parts = urlsplit(base)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def resolve(base: str, base_origin: str | None, href: str | None) -> str | None:
    """``absolute(base, href)``, given ``origin(base)``: a plain site-relative path is appended to the
    origin without ``urljoin`` (which gives the same URL for it)."""
    if base_origin is not None and href is not None and _PLAIN_PATH.fullmatch(href) is not None:
        return base_origin + href
    return absolute(base, href)


def _scheme(url: str) -> str:
    head, sep, _ = url.partition(":")
    return head.strip().lower() if sep else ""


def lecture_links(root: Any, page_url: str, problems: list[str]) -> list[str]:
    """Absolute http(s) URLs of the lecture pages the page links to (``javascript:``, ``data:``,
    ``mailto:`` and the like never are); at most :data:`MAX_LECTURE_LINKS`, none longer than
    :data:`MAX_LINK_LENGTH`. Which host a link may point at is the crawler's decision."""
    base = page_url
    base_tag = next((b for b in root.iter("base") if b.get("href")), None)
    if base_tag is not None:
        base = absolute(page_url, base_tag.get("href")) or page_url
    base_origin = origin(base)
    links: list[str] = []
    too_long = dropped = 0
    for anchor in root.iter("a"):
        href = anchor.get("href")
        if href is not None and len(href) > MAX_LINK_LENGTH:
            too_long += 1
            continue
        url = resolve(base, base_origin, href)
        if url is None or safe_lecture_ref(url) is None:
            continue
        if _scheme(url) not in ("http", "https"):
            continue
        if len(links) >= MAX_LECTURE_LINKS:
            dropped += 1
            continue
        links.append(url)
    if too_long:
        problems.append(f"{too_long} link(s) longer than {MAX_LINK_LENGTH} characters ignored")
    if dropped:
        problems.append(f"{dropped} lecture link(s) beyond the first {MAX_LECTURE_LINKS} ignored")
    return links
