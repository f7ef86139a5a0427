"""Rendering of the replica's answers: lecture and session pages (HTML + ``__NEXT_DATA__``) and JSON:API.

The API speaks snake_case; inside a page's ``__NEXT_DATA__`` the same documents carry camelCase
attribute names, as the Next.js front end of the real site does. Bodies are rendered once per site, base
URL and night and then served from a cache.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import Any

from crawler.replica.attributes import served_attributes
from crawler.replica.gold import lecture_url
from crawler.replica.layout import (
    Event,
    Lecture,
    Profile,
    ReplicaSite,
    Session,
    Subtitle,
    Tag,
    asset_url,
    paper_path,
)

JsonDoc = dict[str, Any]

FOOTER = (
    "<footer><p>Stay up to date with the latest Underline news!</p><div>PRESENTATIONS</div>"
    "<div>CONFERENCES</div>\n<div>COMPANY</div><div>RESOURCES</div></footer>"
)

ROBOTS_TXT = "User-agent: *\nDisallow: /log-in\nDisallow: /downloadable_materials/\n"

LOGIN_PAGE = (
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Log in | Underline</title></head>\n'
    '<body><div id="__next"><main><h1>Log in</h1><p>Log in to download the materials of this lecture.</p>'
    f"</main>\n{FOOTER}</div></body></html>\n"
)


# How a page's ``__NEXT_DATA__`` script is served (see :class:`PageVariant`).
NEXT_DATA_OK = "ok"
NEXT_DATA_MISSING = "missing"
NEXT_DATA_TRUNCATED = "truncated"
NEXT_DATA_NOT_JSON = "not_json"
NEXT_DATA_KINDS = (NEXT_DATA_OK, NEXT_DATA_MISSING, NEXT_DATA_TRUNCATED, NEXT_DATA_NOT_JSON)
# Where an extra banner block sits: before the lecture's section, or between the welcome text and
# the related lectures.
BANNER_TOP = "top"
BANNER_MIDDLE = "middle"
# What a Next.js page holds when its data could not be serialized: a JavaScript literal, not JSON.
NOT_JSON_NEXT_DATA = '{"props":{"pageProps":undefined},"page":"/lecture/[lectureSlug]","err":NaN}'


@dataclass(frozen=True)
class PageVariant:
    """A lecture page that differs from the site's usual page (planted cases of the replica).

    A site object may carry ``page_variants``, a mapping from lecture id to its variant; pages of
    lectures without one are rendered as usual.
    """

    next_data: str = NEXT_DATA_OK
    banner: str | None = None
    banner_position: str = BANNER_TOP

    def __post_init__(self) -> None:
        if self.next_data not in NEXT_DATA_KINDS:
            raise ValueError(f"unknown __NEXT_DATA__ variant {self.next_data!r}")
        if self.banner_position not in (BANNER_TOP, BANNER_MIDDLE):
            raise ValueError(f"unknown banner position {self.banner_position!r}")


def page_variant(site: Any, lecture_id: str) -> PageVariant | None:
    variants = getattr(site, "page_variants", None)
    if not isinstance(variants, Mapping):
        return None
    variant = variants.get(lecture_id)
    return variant if isinstance(variant, PageVariant) else None


def next_data_script(next_data: Any, kind: str = NEXT_DATA_OK) -> str:
    """The ``__NEXT_DATA__`` script element as served for ``kind`` (empty when it is missing)."""
    if kind == NEXT_DATA_MISSING:
        return ""
    body = script_json(next_data)
    if kind == NEXT_DATA_TRUNCATED:
        body = body[: len(body) // 2]
    elif kind == NEXT_DATA_NOT_JSON:
        body = NOT_JSON_NEXT_DATA
    return f'<script id="__NEXT_DATA__" type="application/json">{body}</script>'


def _banner(text: str) -> str:
    return f' <div role="banner"><p>{escape(text)}</p></div>\n'


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_resource(resource: JsonDoc) -> JsonDoc:
    """A resource with camelCase attribute and relationship names (values untouched)."""
    out = dict(resource)
    for key in ("attributes", "relationships"):
        if key in resource:
            out[key] = {_camel(k): v for k, v in resource[key].items()}
    return out


def camel_doc(doc: JsonDoc) -> JsonDoc:
    """A JSON:API document as it sits in ``__NEXT_DATA__``."""
    out = dict(doc)
    data = doc.get("data")
    if isinstance(data, list):
        out["data"] = [camel_resource(r) for r in data]
    elif isinstance(data, dict):
        out["data"] = camel_resource(data)
    if "included" in doc:
        out["included"] = [camel_resource(r) for r in doc["included"]]
    return out


def script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element (the escaping Next.js applies)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, code in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(char, code)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def api_json(doc: JsonDoc) -> bytes:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def error_doc(status: int, title: str, detail: str) -> JsonDoc:
    return {"errors": [{"status": str(status), "title": title, "detail": detail}]}


def _markdown_paragraphs(markdown: str) -> str:
    return "".join(f"<p>{escape(line)}</p>" for line in markdown.split("\n") if line.strip())


class Renderer:
    """Every body of one site under one web base and API base, each rendered at most once."""

    def __init__(
        self,
        site: ReplicaSite,
        web_base: str,
        api_base: str | None = None,
        renamed: Mapping[str, str] | None = None,
        *,
        assets_base: str | None = None,
        documents_base: str | None = None,
        night: int = 0,
    ) -> None:
        """``renamed``: lecture attributes served under another name (a site that changed);
        ``assets_base``: where subtitle files are served (default: the real assets host);
        ``documents_base``: where slide decks and posters are (default: the real assets host);
        ``night``: which night the site is in (0 the first), what the values of the attributes
        :mod:`crawler.replica.attributes` registers may change with."""
        self.site = site
        self.night = night
        self.web_base = web_base.rstrip("/")
        self.api_base = (api_base or web_base).rstrip("/")
        self.assets_base = assets_base.rstrip("/") if assets_base else None
        self.documents_base = documents_base.rstrip("/") if documents_base else None
        self.renamed = dict(renamed or {})
        self._cache: dict[tuple[str, ...], bytes] = {}
        self._lock = threading.Lock()

    def _cached(self, key: tuple[str, ...], build: Callable[[], bytes]) -> bytes:
        body = self._cache.get(key)
        if body is None:
            body = build()
            with self._lock:
                body = self._cache.setdefault(key, body)
        return body

    # JSON:API resources (snake_case) ----------------------------------------------------------------

    def canonical_url(self, lecture: Lecture) -> str:
        return lecture_url(self.web_base, lecture.id, lecture.slug)

    def lecture_resource(self, lecture: Lecture, profiles: bool = False) -> JsonDoc:
        """The lecture; ``profiles`` adds its ``sorted_profiles`` relationship (the authors in order)."""
        paper = paper_path(lecture)
        attributes = {
            "title": lecture.title,
            "abstract": lecture.abstract,
            "slug": lecture.slug,
            "held_at": _iso(lecture.held_at),
            "published_at": _iso(lecture.published_at),
            "playlist": lecture.playlist,
            "paper_url": self.api_base + paper if paper else None,
            "underline_doi": lecture.underline_doi,
            "video_doi": lecture.video_doi,
            "event_id": int(lecture.event_id),
            "package": lecture.package,
            "poster_lecture": lecture.poster_lecture,
            # On the assets origin when it serves them (their URLs then hold its port, as subtitle URLs do).
            "slideshow_url": asset_url(lecture.slideshow_url, self.documents_base),
            "poster_document_url": asset_url(lecture.poster_document_url, self.documents_base),
            "keywords": list(lecture.keywords),
            **served_attributes(lecture, self.night),
        }
        if self.renamed:
            attributes = {self.renamed.get(k, k): v for k, v in attributes.items()}
        relationships: JsonDoc = {
            "event": {"data": {"type": "thin_events", "id": lecture.event_id}},
            "tag": {"data": {"type": "tags", "id": lecture.tag_id}},
            "event_session": {"data": {"type": "thin_event_sessions", "id": lecture.session_id}},
        }
        if profiles:
            relationships["sorted_profiles"] = {
                "data": [{"type": "profiles", "id": p.id} for p in lecture.profiles]
            }
        return {
            "type": "thin_lectures",
            "id": lecture.id,
            "attributes": attributes,
            "relationships": relationships,
        }

    @staticmethod
    def profile_resource(profile: Profile, position: int) -> JsonDoc:
        attributes: JsonDoc = {
            "full_name": profile.full_name,
            "first_name": profile.first_name,
            "last_name": profile.last_name,
            "email": profile.email,
            "position": position,
            "affiliation": profile.affiliation,
            "orcid": profile.orcid,
            "avatar_url": profile.avatar_url,
        }
        return {"type": "profiles", "id": profile.id, "attributes": attributes}

    def profiles_included(self, lectures: Iterable[Lecture]) -> list[JsonDoc]:
        """The lectures' profiles in ``included`` order: each lecture's shuffled, never the authors' order."""
        out = []
        for lec in lectures:
            for index in lec.included_order:
                out.append(self.profile_resource(lec.profiles[index], index))
        return out

    def transcript_resource(self, lecture_id: str, subtitle: Subtitle) -> JsonDoc:
        """A transcript; one still processing has no subtitle URL and no PDF yet."""
        return {
            "type": "transcripts",
            "id": subtitle.id,
            "attributes": {
                "lecture_id": int(lecture_id),
                "subtitle_url": subtitle.url(self.assets_base),
                "pdf_url": subtitle.pdf_url,
                "auto_generated": subtitle.auto_generated,
            },
            "relationships": {"language": {"data": {"type": "transcript_languages", "id": subtitle.locale}}},
        }

    def transcripts_doc(self, lecture: Lecture | None, with_language: bool) -> JsonDoc:
        """``/api/v1/transcripts?filter[lecture_id]=..``: the lecture's transcripts (none for an unknown
        lecture), and their languages in ``included`` when asked for."""
        subtitles = lecture.subtitles if lecture is not None else ()
        doc: JsonDoc = {
            "data": [self.transcript_resource(lecture.id, s) for s in subtitles] if lecture else [],
            "meta": {"total_pages": 1 if subtitles else 0, "total_count": len(subtitles)},
        }
        if with_language:
            doc["included"] = [
                {
                    "type": "transcript_languages",
                    "id": s.locale,
                    "attributes": {"name": s.name, "locale": s.locale},
                }
                for s in subtitles
            ]
        return doc

    @staticmethod
    def event_resource(event: Event) -> JsonDoc:
        return {
            "type": "thin_events",
            "id": event.id,
            "attributes": {
                "name": event.name,
                "description": event.description,
                "location": event.location,
                "start_date": event.start_date.isoformat(),
                "end_date": event.end_date.isoformat(),
            },
        }

    @staticmethod
    def tag_resource(tag: Tag) -> JsonDoc:
        return {"type": "tags", "id": tag.id, "attributes": {"name": tag.name}}

    @staticmethod
    def session_resource(session: Session) -> JsonDoc:
        return {
            "type": "thin_event_sessions",
            "id": session.id,
            "attributes": {
                "name": session.name,
                "description": session.description,
                "event_id": int(session.event_id),
                "start_at": _iso(session.starts_at),
                "end_at": _iso(session.ends_at) if session.ends_at is not None else None,
            },
            "relationships": {"event": {"data": {"type": "thin_events", "id": session.event_id}}},
        }

    def included_for(self, lectures: Iterable[Lecture]) -> list[JsonDoc]:
        """The events, tags and sessions of ``lectures``, each once, in order of first use."""
        out: list[JsonDoc] = []
        seen: set[tuple[str, str]] = set()
        for lec in lectures:
            session = self.site.sessions[lec.session_id]
            for resource in (
                (("thin_events", lec.event_id), self.site.events[lec.event_id]),
                (("tags", lec.tag_id), self.site.tags[lec.tag_id]),
                (("thin_event_sessions", session.id), session),
            ):
                key, obj = resource
                if key in seen:
                    continue
                seen.add(key)
                if isinstance(obj, Event):
                    out.append(self.event_resource(obj))
                elif isinstance(obj, Tag):
                    out.append(self.tag_resource(obj))
                else:
                    out.append(self.session_resource(obj))
        return out

    def lecture_doc(self, lecture: Lecture, profiles: bool = False) -> JsonDoc:
        included = self.included_for([lecture])
        if profiles:
            included += self.profiles_included([lecture])
        return {"data": self.lecture_resource(lecture, profiles), "included": included}

    def related_doc(self, lecture: Lecture) -> JsonDoc:
        related = [self.site.lectures[link.lecture_id] for link in lecture.related]
        return {"data": [self.lecture_resource(r) for r in related], "included": self.included_for(related)}

    def next_doc(self, lecture: Lecture) -> JsonDoc:
        return {"data": self.lecture_resource(self.site.lectures[lecture.next.lecture_id])}

    def similar_doc(self, lecture: Lecture) -> JsonDoc:
        similar = lecture.similar
        return {"data": self.lecture_resource(self.site.lectures[similar.lecture_id]) if similar else None}

    def session_doc(self, session: Session) -> JsonDoc:
        return {
            "data": self.session_resource(session),
            "included": [self.event_resource(self.site.events[session.event_id])],
        }

    def event_doc(self, event: Event) -> JsonDoc:
        return {"data": self.event_resource(event)}

    def list_doc(self, lectures: list[Lecture], size: int, number: int, profiles: bool = False) -> JsonDoc:
        """One page of a lecture list (``lectures`` already filtered and in order)."""
        pages = (len(lectures) + size - 1) // size
        chunk = lectures[(number - 1) * size : number * size]
        return self.chunk_doc(chunk, pages, len(lectures), profiles)

    def chunk_doc(self, chunk: list[Lecture], pages: int, count: int, profiles: bool = False) -> JsonDoc:
        """A listing page of ``chunk`` whose ``meta`` claims ``pages`` pages and ``count`` lectures;
        ``profiles`` (``include=...sorted_profiles``) adds the authors."""
        included = self.included_for(chunk)
        if profiles:
            included += self.profiles_included(chunk)
        return {
            "data": [self.lecture_resource(lec, profiles) for lec in chunk],
            "included": included,
            "meta": {"total_pages": pages, "total_count": count},
        }

    # Cached bodies ------------------------------------------------------------------------------------

    def api_body(self, key: tuple[str, ...], build: Callable[[], JsonDoc]) -> bytes:
        return self._cached(("api", *key), lambda: api_json(build()))

    def lecture_page(self, lecture: Lecture) -> bytes:
        return self._cached(("page", lecture.id), lambda: self.render_lecture_page(lecture))

    def render_lecture_page(self, lecture: Lecture) -> bytes:
        """The lecture's page, rendered now and not kept."""
        return self._lecture_page(lecture).encode("utf-8")

    def session_page(self, session: Session) -> bytes:
        return self._cached(("session", session.id), lambda: self._session_page(session).encode("utf-8"))

    # HTML ---------------------------------------------------------------------------------------------

    def _lecture_page(self, lecture: Lecture) -> str:
        site = self.site
        variant = page_variant(site, lecture.id) or PageVariant()
        banner_top = banner_middle = ""
        if variant.banner:
            if variant.banner_position == BANNER_TOP:
                banner_top = _banner(variant.banner)
            else:
                banner_middle = _banner(variant.banner)
        event = site.events[lecture.event_id]
        tag = site.tags[lecture.tag_id]
        title = escape(lecture.title)
        abstract = escape(lecture.abstract)
        keywords = "".join(f"<li>{escape(k)}</li>" for k in lecture.keywords)
        welcome = [event]
        for link in lecture.related:
            other = site.events[site.lectures[link.lecture_id].event_id]
            if other not in welcome:
                welcome.append(other)
        welcome_html = "".join(f"<div>{_markdown_paragraphs(ev.description)}</div>" for ev in welcome)
        related_html = "".join(
            f'<a href="{escape(link.href)}"><p>{escape(site.lectures[link.lecture_id].abstract)}</p>'
            f"<h3>{escape(site.lectures[link.lecture_id].title)}</h3></a>"
            for link in lecture.related
        )
        premium = "" if lecture.package == "free" else " <div>Premium content</div>\n"
        nxt = site.lectures[lecture.next.lecture_id]
        similar_html = ""
        if lecture.similar is not None:
            similar = site.lectures[lecture.similar.lecture_id]
            href = escape(lecture.similar.href)
            similar_html = f' <div>Similar lecture</div><a href="{href}">{escape(similar.title)}</a>\n'
        prefix = f"/api/v1/thin_lectures/{lecture.id}"
        next_data = {
            "props": {
                "pageProps": {
                    "fallback": {
                        f"{prefix}?include=tag,event,event_session,sorted_profiles": camel_doc(
                            self.lecture_doc(lecture, profiles=True)
                        ),
                        f"{prefix}/related": camel_doc(self.related_doc(lecture)),
                        f"{prefix}/next": camel_doc(self.next_doc(lecture)),
                        f"{prefix}/similar": camel_doc(self.similar_doc(lecture)),
                        f"/api/v1/transcripts?filter[lecture_id]={lecture.id}&filter[scope]=with_subtitles"
                        "&include=language": camel_doc(self.transcripts_doc(lecture, with_language=True)),
                    }
                },
                "__N_SSG": True,
            },
            "page": "/lecture/[lectureSlug]",
            "query": {"lectureSlug": f"{lecture.id}-{lecture.slug}"},
            "buildId": "replica",
            "isFallback": False,
        }
        return (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{title} | Underline</title>\n"
            f'<meta name="description" content="{abstract}"><meta property="og:title" content="{title}">\n'
            f'<link rel="canonical" href="{escape(self.canonical_url(lecture))}"></head>\n'
            '<body><div id="__next">\n'
            f"<header><div>{escape(event.country)}</div></header>\n"
            "<main>\n"
            f"{banner_top}"
            f" <section><p>{abstract}</p><div>{escape(event.name)}</div><h1>{title}</h1>\n"
            f"   <ul>{keywords}</ul><span>{escape(tag.name)}</span></section>\n"
            f" <section>{welcome_html}</section>\n"
            f"{banner_middle}"
            f" <section>{related_html}</section>\n"
            f"{premium}"
            " <div>Downloads</div>\n"
            f" <div>Next from {escape(event.name)}</div>"
            f'<a href="{escape(lecture.next.href)}">{escape(nxt.title)}</a>\n'
            f"{similar_html}"
            "</main>\n"
            f"{FOOTER}</div>\n"
            f"{next_data_script(next_data, variant.next_data)}"
            "</body></html>\n"
        )

    def _session_page(self, session: Session) -> str:
        event = self.site.events[session.event_id]
        next_data = {
            "props": {
                "pageProps": {
                    "fallback": {
                        f"/api/v1/thin_event_sessions/{session.id}": camel_doc(self.session_doc(session)),
                    }
                },
                "__N_SSG": True,
            },
            "page": "/events/[eventId]/sessions",
            "query": {"eventId": event.id, "eventSessionId": session.id},
            "buildId": "replica",
            "isFallback": False,
        }
        canonical = f"{self.web_base}/events/{event.id}/sessions?eventSessionId={session.id}"
        return (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(session.name)} | Underline</title>\n"
            f'<link rel="canonical" href="{escape(canonical)}"></head>\n'
            '<body><div id="__next">\n'
            f"<header><div>{escape(event.country)}</div></header>\n"
            "<main>\n"
            f" <section><div>{escape(event.name)}</div><h1>{escape(session.name)}</h1>"
            f"<p>{escape(session.description)}</p></section>\n"
            "</main>\n"
            f"{FOOTER}</div>\n"
            f'<script id="__NEXT_DATA__" type="application/json">{script_json(next_data)}</script>'
            "</body></html>\n"
        )


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
