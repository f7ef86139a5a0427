"""Underline's JSON:API answers in, fields out: the lecture list, one lecture, its transcripts, a session.

The same lecture resource is read here whether it came from the API (snake_case) or from a page's
``__NEXT_DATA__`` (camelCase): :func:`lecture_fields` is the one reader of a lecture resource, and the
names it tries are those of :mod:`crawler.pages.attributes`. Nothing here raises on bad input except
where a function says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from crawler.pages import values
from crawler.pages.attributes import (
    EVENT_ATTRIBUTES,
    LANGUAGE_ATTRIBUTES,
    LECTURE_ATTRIBUTES,
    LECTURE_RELATIONSHIPS,
    LIST_META,
    SESSION_ATTRIBUTES,
    TAG_ATTRIBUTES,
    TRANSCRIPT_ATTRIBUTES,
    TRANSCRIPT_RELATIONSHIPS,
    UnknownAttribute,
    attribute,
    lookup,
    present_spelling,
    relationship_name,
    unknown_attributes,
)
from crawler.pages.fields import AttributeValue, DocumentError, LectureItem, LectureListPage
from crawler.pages.jsonapi import (
    Resource,
    ResourceKey,
    id_text,
    index_resources,
    member,
    primary_data,
    related,
    resource_key,
)
from crawler.pages.profiles import lecture_authors
from crawler.schema import ATTRIBUTE_FIELDS, Subtitle

LECTURE_TYPE = "thin_lectures"
EVENT_TYPE = "thin_events"
SESSION_TYPE = "thin_event_sessions"
TRANSCRIPT_TYPE = "transcripts"
# A list that claims more pages than this is not believed (the crawler then reads until a page brings
# nothing new).
MAX_TOTAL_PAGES = 1_000_000
# Lecture ids are decimal numbers on Underline; anything else would end up in a request URL.
_LECTURE_ID = re.compile(r"^[0-9]{1,18}$")

# Attributes read as text that are not schema fields of their own; a value of another type is a problem.
_OTHER_TEXT_ATTRIBUTES = ("slug", "package")


def is_lecture(resource: Any) -> bool:
    """True for a ``thin_lectures`` resource whose id is a decimal number."""
    key = resource_key(resource)
    return key is not None and key[0] == LECTURE_TYPE and _LECTURE_ID.match(key[1]) is not None


def is_premium_package(package: str | None) -> bool:
    """A package other than ``free`` is premium content."""
    return package is not None and package.strip().lower() not in ("", "free")


def lecture_fields(
    resource: Resource, index: Mapping[ResourceKey, Resource], base_url: str | None = None
) -> LectureItem:
    """Fields of one lecture resource; ``index`` resolves its event, tag, session and profiles.

    The schema's plain attribute fields are read as their kind says (:func:`attribute_values`); relative
    media and paper URLs are resolved against ``base_url`` (without one they are dropped and reported in
    ``problems``).
    """
    key = resource_key(resource)
    if key is None:
        raise DocumentError("not a JSON:API resource (no type and id)")
    # The resource's attributes and relationships are looked up once, for every field read from them.
    attributes = member(resource, "attributes")
    relationships = member(resource, "relationships")
    problems: list[str] = []
    # Links are checked last, so that a report lists a resource's type problems before its link problems.
    link_problems: list[str] = []
    read = attribute_values(attributes, base_url, problems, link_problems)
    for name in _OTHER_TEXT_ATTRIBUTES:
        _check_text(lookup(attributes, LECTURE_ATTRIBUTES[name]), LECTURE_ATTRIBUTES[name][0], problems)
    event_key = _to_one(relationships, "event")
    event_id = id_text(lookup(attributes, LECTURE_ATTRIBUTES["event_id"])) or (
        event_key[1] if event_key else None
    )
    event = index.get(event_key) if event_key else None
    if event is None and event_id is not None:
        event = index.get((EVENT_TYPE, event_id))
    session_key = _to_one(relationships, "session")
    session = index.get(session_key) if session_key else None
    tag_key = _to_one(relationships, "presentation_type")
    tag = index.get(tag_key) if tag_key else None
    package = values.opt_str(lookup(attributes, LECTURE_ATTRIBUTES["package"]))
    fields = LectureItem(
        lecture_id=key[1],
        slug=values.slug(lookup(attributes, LECTURE_ATTRIBUTES["slug"]), problems),
        presentation_type=values.opt_str(attribute(tag, TAG_ATTRIBUTES["name"])),
        event_id=event_id,
        event_name=values.opt_str(attribute(event, EVENT_ATTRIBUTES["name"])),
        session_id=session_key[1] if session_key else None,
        session_name=values.opt_str(attribute(session, SESSION_ATTRIBUTES["name"])),
        package=package,
        is_premium=is_premium_package(package),
        authors=lecture_authors(resource, index, problems),
        problems=problems,
    )
    for name, value in read.items():
        setattr(fields, name, value)
    problems.extend(link_problems)
    return fields


def _to_one(relationships: Any, name: str) -> ResourceKey | None:
    """``(type, id)`` a lecture's to-one relationship (``LECTURE_RELATIONSHIPS[name]``, under the first
    of its spellings the relationships carry) points at; None when it points at none."""
    spellings = LECTURE_RELATIONSHIPS[name]
    relationship = member(relationships, present_spelling(relationships, spellings) or spellings[0])
    data = member(relationship, "data")
    return resource_key(data) if not isinstance(data, list) else None


def attribute_values(
    attributes: Any, base_url: str | None, problems: list[str], link_problems: list[str]
) -> dict[str, AttributeValue]:
    """Every field with ``attribute`` spellings in the schema, read from a resource's ``attributes`` by its
    kind: text (links made absolute), a list of strings, a timestamp, a bool, an integer or a number. What
    cannot be used is a gap and a problem (a link's in ``link_problems``); nothing raises."""
    raw = {f.name: lookup(attributes, f.attribute) for f in ATTRIBUTE_FIELDS}
    for f in ATTRIBUTE_FIELDS:
        if f.kind == "string":
            _check_text(raw[f.name], f.attribute[0], problems)
    read: dict[str, AttributeValue] = {}
    for f in ATTRIBUTE_FIELDS:
        value, spelling = raw[f.name], f.attribute[0]
        if f.link:
            read[f.name] = values.absolute_http_url(value, spelling, base_url, link_problems)
        elif f.kind == "string":
            read[f.name] = values.opt_str(value)
        elif f.kind == "string_list":
            read[f.name] = values.string_list(value, f.name, f.name.removesuffix("s"), problems)
        elif f.kind == "timestamp":
            read[f.name] = values.timestamp(value, f.name, problems)
        elif f.kind == "bool":
            read[f.name] = values.optional_bool(value, spelling, problems)
        elif f.kind in ("int", "int32"):
            read[f.name] = values.optional_int(value, spelling, f.kind, problems)
        elif f.kind == "float":
            read[f.name] = values.optional_float(value, spelling, problems)
        else:  # Field refuses an attribute of any other kind
            raise TypeError(f"{f.name}: a {f.kind} field cannot be a plain attribute")
    return read


def _check_text(value: Any, spelling: str, problems: list[str]) -> None:
    if type(value) is str and value.isascii():  # the usual text: nothing to report
        return
    if value is not None and not isinstance(value, str):
        problems.append(f"{spelling} is not a string")
    elif values.has_surrogates(value):
        problems.append(f"{spelling} holds lone surrogates (dropped)")


def lecture_resources(docs: Iterable[Any]) -> list[Resource]:
    """Every lecture resource in the documents' ``data`` and ``included``, once each (the first
    occurrence of an id), for a report of the attributes they carry."""
    return _lectures_of(index_resources(docs))


def _lectures_of(index: Mapping[ResourceKey, Resource]) -> list[Resource]:
    return [r for key, r in index.items() if key[0] == LECTURE_TYPE]


def error_summary(doc: Mapping[str, Any]) -> str | None:
    """``API error: <status> <title> <detail>`` of an error document's first error; None for none."""
    errors = doc.get("errors")
    if not isinstance(errors, list) or not errors:
        return None
    first = errors[0]
    parts = [values.shown(member(first, k)) for k in ("status", "title", "detail") if member(first, k)]
    return "API error: " + (" ".join(parts) if parts else "unspecified")[:200]


def list_counts(doc: Mapping[str, Any], problems: list[str]) -> tuple[int | None, int | None]:
    """The pages and the lectures a list's ``meta`` counts (a page count that is no count: None, and a
    problem)."""
    meta = doc.get("meta")
    claimed = lookup(meta, LIST_META["total_pages"])
    total_pages = values.count(claimed)
    if claimed is not None and total_pages is None:
        problems.append(f"meta.total_pages is not a page count: {values.shown(claimed)!r}")
    return total_pages, values.count(lookup(meta, LIST_META["total_count"]))


def parse_lecture_list(doc: Any, base_url: str | None = None) -> LectureListPage:
    """A page of ``/api/v1/thin_lectures``: every lecture resource of ``data``, in order.

    Entries that are not lecture resources are counted in ``skipped``; nothing raises. ``base_url``
    (the API's) resolves relative paper and media URLs.
    """
    return _lecture_list(doc, base_url, index_resources([doc]))


def _lecture_list(doc: Any, base_url: str | None, index: Mapping[ResourceKey, Resource]) -> LectureListPage:
    """:func:`parse_lecture_list`, given the resources of ``doc`` (:func:`index_resources`)."""
    if not isinstance(doc, Mapping):
        return LectureListPage([], None, problems=["answer is not a JSON object"])
    problems: list[str] = []
    error = error_summary(doc)
    if error:
        problems.append(error)
    data = doc.get("data")
    if not isinstance(data, list):
        if "data" in doc or not error:
            problems.append("data is not a list")
        data = []
    records: list[LectureItem] = []
    skipped = 0
    for item in data:
        if is_lecture(item):
            records.append(lecture_fields(item, index, base_url))
        else:
            skipped += 1
    total_pages, total_count = list_counts(doc, problems)
    if total_pages is not None and total_pages > MAX_TOTAL_PAGES:
        problems.append(f"meta.total_pages {total_pages} is not believable (more than {MAX_TOTAL_PAGES})")
        total_pages = None
    return LectureListPage(
        records=records,
        total_pages=total_pages,
        total_count=total_count,
        skipped=skipped,
        problems=problems,
    )


def parse_lecture_document(doc: Any, base_url: str | None = None) -> LectureItem:
    """The lecture of ``/api/v1/thin_lectures/<id>``; raises :class:`DocumentError` when the
    answer holds none (an error document, a list, another resource type)."""
    if not isinstance(doc, Mapping):
        raise DocumentError("answer is not a JSON object")
    data = doc.get("data")
    if not isinstance(data, Mapping) or not is_lecture(data):
        raise DocumentError(error_summary(doc) or f"data is not a {LECTURE_TYPE} resource")
    return lecture_fields(data, index_resources([doc]), base_url)


# -- transcripts ---------------------------------------------------------------------------------


def is_track_list(doc: Any) -> bool:
    """Whether an answer to the track list request is one: a JSON:API document whose ``data`` is a list
    and that names no error. Anything else (an ``errors`` document, an HTML page, a JSON of another
    shape) says nothing of the lecture's tracks."""
    return isinstance(doc, Mapping) and not doc.get("errors") and isinstance(doc.get("data"), list)


def parse_transcripts(doc: Any, base_url: str | None = None) -> list[Subtitle]:
    """The subtitle tracks of ``/api/v1/transcripts?filter[lecture_id]=<id>&include=language``, in the
    answer's order; a transcript without a usable subtitle URL is left out. Nothing raises."""
    if not isinstance(doc, Mapping):
        return []
    index = index_resources([doc])
    tracks: list[Subtitle] = []
    for resource in primary_data(doc):
        key = resource_key(resource)
        if key is None or key[0] != TRANSCRIPT_TYPE:
            continue
        ignored: list[str] = []
        url = values.absolute_http_url(
            attribute(resource, TRANSCRIPT_ATTRIBUTES["url"]), "subtitle_url", base_url, ignored
        )
        if url is None:
            continue
        language = related(resource, relationship_name(resource, TRANSCRIPT_RELATIONSHIPS["language"]), index)
        auto = attribute(resource, TRANSCRIPT_ATTRIBUTES["auto_generated"])
        tracks.append(
            Subtitle(
                locale=values.opt_str(attribute(language, LANGUAGE_ATTRIBUTES["locale"])),
                name=values.opt_str(attribute(language, LANGUAGE_ATTRIBUTES["name"])),
                auto_generated=auto if isinstance(auto, bool) else None,
                url=url,
            )
        )
    return tracks


# -- sessions ------------------------------------------------------------------------------------


@dataclass
class SessionFields:
    """What the API tells of an event session."""

    session_id: str
    name: str | None = None
    description: str | None = None
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    problems: list[str] = field(default_factory=list, compare=False)


def session_fields(resource: Any) -> SessionFields | None:
    """The fields of a ``thin_event_sessions`` resource; None for anything else."""
    key = resource_key(resource)
    if key is None or key[0] != SESSION_TYPE:
        return None
    problems: list[str] = []
    return SessionFields(
        session_id=key[1],
        name=values.opt_str(attribute(resource, SESSION_ATTRIBUTES["name"])),
        description=values.opt_str(attribute(resource, SESSION_ATTRIBUTES["description"])),
        starts_at=values.timestamp(attribute(resource, SESSION_ATTRIBUTES["starts_at"]), "start", problems),
        ends_at=values.timestamp(attribute(resource, SESSION_ATTRIBUTES["ends_at"]), "end", problems),
        problems=problems,
    )


def _sessions_of(index: Mapping[ResourceKey, Resource]) -> list[SessionFields]:
    # An index is keyed by each resource's (type, id): only the sessions' keys are read further.
    found = (session_fields(resource) for key, resource in index.items() if key[0] == SESSION_TYPE)
    return [session for session in found if session is not None]


# One page of an event's listing, read whole: its lectures, the sessions it includes and the lecture
# attributes the crawler does not map (see :func:`~crawler.pages.attributes.unknown_attributes`).
ListingAnswer = tuple[LectureListPage, list[SessionFields], dict[str, UnknownAttribute]]


def read_listing(text: str, base_url: str | None = None) -> ListingAnswer | None:
    """A listing page's answer from its text; None when it is not JSON."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return None
    # Its lectures, its sessions and the attribute report all read the one index of its resources.
    index = index_resources([document])
    return (
        _lecture_list(document, base_url, index),
        _sessions_of(index),
        unknown_attributes(_lectures_of(index)),
    )
