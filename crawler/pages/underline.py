"""Underline's answers in, lecture fields out: API documents and lecture pages.

Pure functions: no network, no Scrapy. A lecture page is read from its ``__NEXT_DATA__`` JSON first
(the documents the page was rendered from); only when that is missing or unusable are the fields
taken from the visible page (meta tags, ``<title>``, ``<h1>``), and the page says so in
``extraction``. The visible text is kept as blocks either way, for the lecture's ``text`` and as a
cross-check of the JSON.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from urllib.parse import urljoin

from crawler.pages.jsonapi import (
    Resource,
    ResourceKey,
    attr,
    find_documents,
    id_text,
    index_resources,
    member,
    related,
    related_id,
    resource_key,
)
from crawler.schema import parse_timestamp
from crawler.text.blocks import parse_page, visible_blocks
from crawler.text.normalize import collapse_whitespace, nfc_collapsed, normalize_line, without_surrogates
from crawler.text.privacy import scrub_emails
from crawler.urls import LectureRef, lecture_ref

LECTURE_TYPE = "thin_lectures"
EVENT_TYPE = "thin_events"
MAX_JSON_BYTES = 5_000_000
PREMIUM_LABEL = "Premium content"
# A list that claims more pages than this is not believed (the crawler then reads until a page brings
# nothing new).
MAX_TOTAL_PAGES = 1_000_000
# Lecture links kept per page, and the longest link kept: more is a hostile page, not a lecture page.
MAX_LECTURE_LINKS = 1_000
MAX_LINK_LENGTH = 2_048

Extraction = Literal["next_data", "visible_text"]

_LEADING_ID = re.compile(r"^\s*0*(\d{1,18})(?!\d)")
# Lecture ids are decimal numbers on Underline; anything else would end up in a request URL.
_LECTURE_ID = re.compile(r"^[0-9]{1,18}$")
# A slug goes into the canonical URL's path: one path segment, nothing a URL would read otherwise.
_SLUG = re.compile(r"^[\w.~%-]{1,300}$")
_TITLE_SUFFIX = re.compile(r"\s*\|\s*Underline\s*$")
_RAW_NEXT_DATA = re.compile(
    r"""<script\b[^>]*\bid\s*=\s*["']?__NEXT_DATA__["']?[^>]*>(.*?)</script\s*>""", re.IGNORECASE | re.DOTALL
)


class PageParseError(ValueError):
    """A page from which not even a lecture id or a title can be read."""


class DocumentError(ValueError):
    """An API answer that holds no lecture."""


@dataclass
class LectureFields:
    """A lecture's fields as the site gives them (strings untouched, timestamps aware UTC)."""

    lecture_id: str
    slug: str | None = None
    title: str | None = None
    abstract: str | None = None
    keywords: list[str] = field(default_factory=list)
    presentation_type: str | None = None
    event_id: str | None = None
    event_name: str | None = None
    session_id: str | None = None
    session_name: str | None = None
    held_at: datetime | None = None
    published_at: datetime | None = None
    doi: str | None = None
    package: str | None = None
    is_premium: bool = False
    # False when nothing said whether the lecture is premium (no usable ``package`` and no label on the
    # page, which a damaged page may simply have lost): ``is_premium`` is then a gap, not a "free".
    premium_known: bool = field(default=True, compare=False)
    paper_url: str | None = None
    related_lecture_ids: list[str] = field(default_factory=list)
    # Values the source gave in a form that could not be used (they read as missing above).
    problems: list[str] = field(default_factory=list, compare=False)

    def to_item_fields(self) -> dict[str, Any]:
        """The fields under the record schema's names (``crawler.schema.FIELDS``).

        Only ``title`` changes form (NFC, whitespace collapsed, as the schema asks); ``url``,
        ``source_urls``, ``text``, ``extraction``, ``fetched_at`` and ``content_sha256`` are the
        crawler's to add.
        """
        return {
            "lecture_id": self.lecture_id,
            "title": nfc_collapsed(self.title) if self.title is not None else None,
            "abstract": self.abstract,
            "keywords": list(self.keywords),
            "presentation_type": self.presentation_type,
            "event_id": self.event_id,
            "event_name": self.event_name,
            "session_id": self.session_id,
            "session_name": self.session_name,
            "held_at": self.held_at,
            "published_at": self.published_at,
            "doi": self.doi,
            "is_premium": self.is_premium if self.premium_known else None,
            "related_lecture_ids": list(self.related_lecture_ids),
        }


@dataclass
class LectureListPage:
    """One page of the API's lecture list."""

    records: list[LectureFields]
    total_pages: int | None
    total_count: int | None = None
    skipped: int = 0  # entries of ``data`` that are not lecture resources
    problems: list[str] = field(default_factory=list)


@dataclass
class LecturePage:
    """What a lecture page holds.

    ``problems`` explains a fallback to the visible text and lists disagreements between the JSON
    and the visible page; it is diagnostic, the fields are usable whenever ``fields`` is set.
    """

    fields: LectureFields | None
    blocks: list[str]
    lecture_links: list[str]
    extraction: Extraction
    problems: list[str] = field(default_factory=list)


# -- values of uncertain type ------------------------------------------------------------------


def _opt_str(value: Any) -> str | None:
    """A string as given (lone surrogates, which no UTF-8 file can hold, dropped); None otherwise."""
    return without_surrogates(value) if isinstance(value, str) else None


def _has_surrogates(value: Any) -> bool:
    return isinstance(value, str) and without_surrogates(value) != value


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and 0 <= value < 2**53:
        return int(value)
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdecimal() and len(value) < 20:
        return int(value.strip())
    return None


def _shown(value: Any) -> str:
    """A short, safe rendering of a value for a problem message (never recurses into it; no e-mail
    address or unprintable surrogate reaches a log)."""
    if isinstance(value, str):
        return scrub_emails(without_surrogates(value[:80]))[0]
    if isinstance(value, float) or (isinstance(value, int) and value.bit_length() < 256):
        return str(value)[:80]
    return f"<{type(value).__name__}>"


def _timestamp(value: Any, name: str, problems: list[str]) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            return parse_timestamp(value)
        except (ValueError, OverflowError):
            pass
    problems.append(f"{name} is not an ISO 8601 timestamp: {_shown(value)!r}")
    return None


def _keywords(value: Any, problems: list[str]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append("keywords is not a list")
        return []
    kept = [k for k in value if isinstance(k, str)]
    if len(kept) != len(value):
        problems.append(f"{len(value) - len(kept)} keyword(s) not strings")
    if any(_has_surrogates(k) for k in kept):
        problems.append("keywords hold lone surrogates (dropped)")
    return [without_surrogates(k) for k in kept]


def _is_premium(package: str | None) -> bool:
    return package is not None and package.strip().lower() not in ("", "free")


# -- API documents -----------------------------------------------------------------------------


def _is_lecture(resource: Any) -> bool:
    key = resource_key(resource)
    return key is not None and key[0] == LECTURE_TYPE and _LECTURE_ID.match(key[1]) is not None


def _slug(value: Any, problems: list[str]) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str) and _SLUG.match(value):
        return value
    if isinstance(value, str):
        problems.append(f"slug is not one URL path segment: {_shown(value)!r}")
    return None


def lecture_fields(resource: Resource, index: Mapping[ResourceKey, Resource]) -> LectureFields:
    """Fields of one lecture resource; ``index`` resolves its event, tag and session."""
    key = resource_key(resource)
    if key is None:
        raise DocumentError("not a JSON:API resource (no type and id)")
    problems: list[str] = []
    for name in ("title", "abstract", "slug", "package", "underline_doi", "paper_url"):
        value = attr(resource, name)
        if value is not None and not isinstance(value, str):
            problems.append(f"{name} is not a string")
        elif _has_surrogates(value):
            problems.append(f"{name} holds lone surrogates (dropped)")
    event_id = id_text(attr(resource, "event_id")) or related_id(resource, "event")
    event = related(resource, "event", index)
    if event is None and event_id is not None:
        event = index.get((EVENT_TYPE, event_id))
    session = related(resource, "event_session", index)
    package = _opt_str(attr(resource, "package"))
    return LectureFields(
        lecture_id=key[1],
        slug=_slug(attr(resource, "slug"), problems),
        title=_opt_str(attr(resource, "title")),
        abstract=_opt_str(attr(resource, "abstract")),
        keywords=_keywords(attr(resource, "keywords"), problems),
        presentation_type=_opt_str(attr(related(resource, "tag", index), "name")),
        event_id=event_id,
        event_name=_opt_str(attr(event, "name")),
        session_id=related_id(resource, "event_session"),
        session_name=_opt_str(attr(session, "name")),
        held_at=_timestamp(attr(resource, "held_at"), "held_at", problems),
        published_at=_timestamp(attr(resource, "published_at"), "published_at", problems),
        doi=_opt_str(attr(resource, "underline_doi")),
        package=package,
        is_premium=_is_premium(package),
        paper_url=_opt_str(attr(resource, "paper_url")),
        problems=problems,
    )


def _error_summary(doc: Mapping[str, Any]) -> str | None:
    errors = doc.get("errors")
    if not isinstance(errors, list) or not errors:
        return None
    first = errors[0]
    parts = [_shown(member(first, k)) for k in ("status", "title", "detail") if member(first, k)]
    return "API error: " + (" ".join(parts) if parts else "unspecified")[:200]


def parse_lecture_list(doc: Any) -> LectureListPage:
    """A page of ``/api/v1/thin_lectures``: every lecture resource of ``data``, in order.

    Entries that are not lecture resources are counted in ``skipped``; nothing raises.
    """
    if not isinstance(doc, Mapping):
        return LectureListPage([], None, problems=["answer is not a JSON object"])
    problems: list[str] = []
    error = _error_summary(doc)
    if error:
        problems.append(error)
    data = doc.get("data")
    if not isinstance(data, list):
        if "data" in doc or not error:
            problems.append("data is not a list")
        data = []
    index = index_resources([doc])
    records: list[LectureFields] = []
    skipped = 0
    for item in data:
        if _is_lecture(item):
            records.append(lecture_fields(item, index))
        else:
            skipped += 1
    meta = doc.get("meta")
    claimed = member(meta, "total_pages")
    total_pages = _count(claimed)
    if claimed is not None and total_pages is None:
        problems.append(f"meta.total_pages is not a page count: {_shown(claimed)!r}")
    elif total_pages is not None and total_pages > MAX_TOTAL_PAGES:
        problems.append(f"meta.total_pages {total_pages} is not believable (more than {MAX_TOTAL_PAGES})")
        total_pages = None
    return LectureListPage(
        records=records,
        total_pages=total_pages,
        total_count=_count(member(meta, "total_count")),
        skipped=skipped,
        problems=problems,
    )


def parse_lecture_document(doc: Any) -> LectureFields:
    """The lecture of ``/api/v1/thin_lectures/<id>``; raises :class:`DocumentError` when the
    answer holds none (an error document, a list, another resource type)."""
    if not isinstance(doc, Mapping):
        raise DocumentError("answer is not a JSON object")
    data = doc.get("data")
    if not isinstance(data, Mapping) or not _is_lecture(data):
        raise DocumentError(_error_summary(doc) or f"data is not a {LECTURE_TYPE} resource")
    return lecture_fields(data, index_resources([doc]))


# -- lecture pages -----------------------------------------------------------------------------


def _next_data(root: Any, page_text: str, max_json_bytes: int) -> tuple[Any, str | None]:
    """The ``__NEXT_DATA__`` JSON, or None and why not.

    The script is looked up in the parsed tree, and in the page's text when the tree lost it (markup
    nested deeper than the parser follows drops the rest of the page).
    """
    script = next((s for s in root.iter("script") if s.get("id") == "__NEXT_DATA__"), None)
    if script is not None:
        text = script.text or ""
    elif "__NEXT_DATA__" in page_text and (found := _RAW_NEXT_DATA.search(page_text)) is not None:
        text = found[1]
    else:
        return None, "no __NEXT_DATA__ script"
    if len(text) > max_json_bytes or len(text.encode("utf-8", "surrogatepass")) > max_json_bytes:
        return None, f"__NEXT_DATA__ larger than {max_json_bytes} bytes"
    candidates = [text]
    if "&quot;" in text:
        candidates.append(html_lib.unescape(text))
    reason = "__NEXT_DATA__ is empty"
    for candidate in candidates:
        if not candidate.strip():
            continue
        try:
            return json.loads(candidate), None
        except RecursionError:
            return None, "__NEXT_DATA__ nested too deeply"
        except ValueError as exc:
            reason = f"__NEXT_DATA__ is not JSON: {exc}"[:200]
    return None, reason


def _leading_id(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    match = _LEADING_ID.match(value)
    return match[1] if match else None


def _slug_lecture_id(tree: Any) -> str | None:
    return _leading_id(member(member(tree, "query"), "lectureSlug"))


def _find_lecture(docs: list[Mapping[str, Any]], wanted: Iterable[str | None]) -> Resource | None:
    for lecture_id in dict.fromkeys(w for w in wanted if w):
        for doc in docs:
            data = doc.get("data")
            key = resource_key(data)
            if key == (LECTURE_TYPE, lecture_id) and isinstance(data, Mapping):
                return data
    return None


def _related_ids(docs: list[Mapping[str, Any]], own_id: str | None) -> list[str]:
    for doc in docs:
        data = doc.get("data")
        if not isinstance(data, list):
            continue
        keys = [resource_key(item) for item in data]
        ids = [key[1] for key in keys if key is not None and key[0] == LECTURE_TYPE]
        if ids:
            return [i for i in dict.fromkeys(ids) if i != own_id]
    return []


def _fields_from_next_data(tree: Any, url_id: str | None) -> tuple[LectureFields | None, str | None]:
    try:
        docs = list(find_documents(tree))
    except RecursionError:
        return None, "__NEXT_DATA__ nested too deeply"
    lecture = _find_lecture(docs, (url_id, _slug_lecture_id(tree)))
    if lecture is None:
        return None, "__NEXT_DATA__ holds no document of this lecture"
    # The lecture's own document first: its included resources are the ones meant for it.
    own_doc = next(d for d in docs if d.get("data") is lecture)
    fields = lecture_fields(lecture, index_resources([own_doc, *docs]))
    fields.related_lecture_ids = _related_ids(docs, fields.lecture_id)
    return fields, None


_HTML_START = re.compile(r"<html[\s>]", re.IGNORECASE)
_HTML_END = re.compile(r"</html\s*>", re.IGNORECASE)


def _cut_short(text: str) -> bool:
    """A document that opens ``<html>`` and never closes it (what may follow ``</html>`` does not count)."""
    return _HTML_START.search(text[:4096]) is not None and _HTML_END.search(text) is None


def _premium_from_page(fields: LectureFields, blocks: list[str]) -> None:
    """Without a usable ``package`` the page's own label tells whether the lecture is premium."""
    if fields.package is None or not fields.package.strip():
        fields.is_premium = fields.premium_known = PREMIUM_LABEL in blocks


def _meta(root: Any, *names: str) -> str | None:
    for meta in root.iter("meta"):
        key = meta.get("property") or meta.get("name") or ""
        if key.strip().lower() in names:
            content = collapse_whitespace(meta.get("content") or "")
            if content:
                return content
    return None


def _strip_suffix(title: str) -> str:
    return _TITLE_SUFFIX.sub("", title)


def _first_text(root: Any, tag: str) -> str | None:
    for element in root.iter(tag):
        text = collapse_whitespace(element.text_content() or "")
        if text:
            return text
    return None


def _visible_title(root: Any) -> str | None:
    for title in (_meta(root, "og:title"), _first_text(root, "title"), _first_text(root, "h1")):
        if title:
            title = _strip_suffix(title)
            if title:
                return title
    return None


def _link_lecture_id(root: Any, page_url: str, *names: str) -> str | None:
    for link in root.iter("link"):
        if (link.get("rel") or "").strip().lower() in names:
            ref = _lecture_ref(_absolute(page_url, link.get("href")))
            if ref is not None:
                return ref
    return None


def _absolute(base: str, href: str | None) -> str | None:
    if href is None or not href.strip():
        return None
    try:
        return urljoin(base, href.strip())
    except ValueError:
        return None


def _safe_ref(url: str) -> LectureRef | None:
    """``lecture_ref`` for a URL from the page: too long a URL is none, and nothing raises (an id of
    thousands of digits is more than ``int`` converts)."""
    if len(url) > MAX_LINK_LENGTH:
        return None
    try:
        return lecture_ref(url)
    except ValueError:
        return None


def _lecture_ref(url: str | None) -> str | None:
    if url is None:
        return None
    ref = _safe_ref(url)
    return ref.lecture_id if ref else None


def _lecture_links(root: Any, page_url: str, problems: list[str]) -> list[str]:
    """Absolute http(s) URLs of the lecture pages the page links to (``javascript:``, ``data:``,
    ``mailto:`` and the like never are); at most :data:`MAX_LECTURE_LINKS`, none longer than
    :data:`MAX_LINK_LENGTH`. Which host a link may point at is the crawler's decision."""
    base = page_url
    base_tag = next((b for b in root.iter("base") if b.get("href")), None)
    if base_tag is not None:
        base = _absolute(page_url, base_tag.get("href")) or page_url
    links: list[str] = []
    too_long = dropped = 0
    for anchor in root.iter("a"):
        href = anchor.get("href")
        if href is not None and len(href) > MAX_LINK_LENGTH:
            too_long += 1
            continue
        url = _absolute(base, href)
        if url is None or _safe_ref(url) is None:
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


def _scheme(url: str) -> str:
    head, sep, _ = url.partition(":")
    return head.strip().lower() if sep else ""


def _fields_from_visible(
    root: Any, page_url: str, url_id: str | None, tree: Any, blocks: list[str]
) -> tuple[LectureFields | None, str | None]:
    """Fields from what a reader sees; None when no lecture id can be read (and why)."""
    lecture_id = (
        url_id
        or _link_lecture_id(root, page_url, "canonical")
        or _lecture_ref(_absolute(page_url, _meta(root, "og:url")))
        or _slug_lecture_id(tree)
    )
    title = _visible_title(root)
    if lecture_id is None and title is None:
        raise PageParseError(f"no lecture id and no title in the page at {page_url[:200]!r}")
    if lecture_id is None:
        return None, f"no lecture id for the page titled {_shown(title)!r}"
    related_ids: list[str] = []
    if tree is not None:
        try:
            related_ids = _related_ids(list(find_documents(tree)), lecture_id)
        except RecursionError:
            related_ids = []
    return LectureFields(
        lecture_id=lecture_id,
        slug=_slug(ref.slug, []) if (ref := _safe_ref(page_url)) else None,
        title=title,
        abstract=_meta(root, "description", "og:description"),
        is_premium=PREMIUM_LABEL in blocks,
        premium_known=PREMIUM_LABEL in blocks,
        related_lecture_ids=related_ids,
    ), None


def _cross_check(fields: LectureFields, blocks: list[str]) -> list[str]:
    if not blocks:
        return ["the page shows no text"]
    shown = {normalize_line(b) for b in blocks}
    problems = []
    for name in ("title", "abstract"):
        value = getattr(fields, name)
        if isinstance(value, str) and normalize_line(value) and normalize_line(value) not in shown:
            problems.append(f"{name} of __NEXT_DATA__ not visible on the page")
    if fields.is_premium != (PREMIUM_LABEL in shown):
        problems.append(
            f"package {fields.package!r} but the {PREMIUM_LABEL!r} label is "
            + ("missing" if fields.is_premium else "shown")
        )
    return problems


def parse_lecture_page(
    html: str | bytes,
    url: str,
    *,
    encoding: str | None = None,
    max_json_bytes: int = MAX_JSON_BYTES,
) -> LecturePage:
    """Read a lecture page fetched from ``url`` (its final URL, after redirects).

    The lecture is the ``thin_lectures`` resource of ``__NEXT_DATA__`` whose id is the one in
    ``url`` (or else in the page's ``lectureSlug``); its related lectures are the first list of
    lectures there. Without usable JSON the fields come from the visible page (``extraction`` is
    ``"visible_text"`` and ``problems`` says why). Raises :class:`PageParseError`, and nothing
    else, when the page has neither a lecture id nor a title.
    """
    parsed = parse_page(html, encoding)
    root = parsed.root
    url_id = _lecture_ref(url)
    if root is None:
        if url_id is None:
            raise PageParseError(f"empty page and no lecture id in {_shown(url)!r}")
        return LecturePage(
            LectureFields(url_id), [], [], "visible_text", ["the page is empty", *parsed.problems]
        )
    page_problems = list(parsed.problems)
    blocks = visible_blocks(root)
    if _cut_short(parsed.text) and blocks:
        # The last block of a page that stops mid-document is a fragment, not text the page shows.
        page_problems.append("the page ends before </html>: cut short, its last block dropped")
        blocks = blocks[:-1]
    links = _lecture_links(root, url, page_problems)
    tree, why = _next_data(root, parsed.text, max_json_bytes)
    fields: LectureFields | None = None
    if tree is not None:
        fields, why = _fields_from_next_data(tree, url_id)
    if fields is not None:
        _premium_from_page(fields, blocks)
        problems = [*fields.problems, *_cross_check(fields, blocks), *page_problems]
        return LecturePage(fields, blocks, links, "next_data", problems)
    problems = [why or "__NEXT_DATA__ holds no document of this lecture"]
    fields, missing = _fields_from_visible(root, url, url_id, tree, blocks)
    if missing:
        problems.append(missing)
    return LecturePage(fields, blocks, links, "visible_text", [*problems, *page_problems])
