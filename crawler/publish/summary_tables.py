"""The summary tables of a release (``events``, ``sessions``, ``authors``), gathered from its lectures a
few at a time: one row per event, per session (completed by the caller's session details) and per
author, each table sorted by its key.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import pyarrow as pa

from crawler import schema
from crawler.publish.records import SessionDetail
from crawler.publish.tables import AUTHORS, EVENTS, LECTURES, SESSIONS, lecture_table, page_derived, table_of
from crawler.schema import Lecture, has_value


def _most_common(counts: Counter[str]) -> str | None:
    """The most frequent value, the smallest of the most frequent on a tie (so that the order the
    lectures come in does not matter); None when there is none."""
    if not counts:
        return None
    return min(counts.items(), key=lambda item: (-item[1], item[0]))[0]


@dataclass
class _EventSeen:
    """A row of the ``events`` table, gathered lecture by lecture."""

    names: Counter[str] = field(default_factory=Counter)
    lectures: int = 0
    page: int = 0
    first_held_at: datetime | None = None
    last_held_at: datetime | None = None

    def add(self, row: Lecture) -> None:
        self.lectures += 1
        self.page += page_derived(row.extraction)
        if row.event_name is not None:
            self.names[row.event_name] += 1
        held = row.held_at
        if held is not None:
            self.first_held_at = held if self.first_held_at is None else min(self.first_held_at, held)
            self.last_held_at = held if self.last_held_at is None else max(self.last_held_at, held)

    def row(self, event_id: str) -> dict[str, object]:
        return {
            "event_id": event_id,
            "event_name": _most_common(self.names),
            "lecture_count": self.lectures,
            "page_lectures": self.page,
            "listing_only_lectures": self.lectures - self.page,
            "first_held_at": self.first_held_at,
            "last_held_at": self.last_held_at,
        }


@dataclass
class _SessionSeen:
    """A row of the ``sessions`` table, gathered lecture by lecture."""

    names: Counter[str] = field(default_factory=Counter)
    event_ids: Counter[str] = field(default_factory=Counter)
    lectures: int = 0
    presentation_types: set[str] = field(default_factory=set)

    def add(self, row: Lecture) -> None:
        self.lectures += 1
        if row.session_name is not None:
            self.names[row.session_name] += 1
        if row.event_id is not None:
            self.event_ids[row.event_id] += 1
        if row.presentation_type is not None:
            self.presentation_types.add(row.presentation_type)

    def row(self, session_id: str, known: SessionDetail | None) -> dict[str, object]:
        """The session's row, completed by what the caller knows of it: the lectures' own session name
        wins, the caller's fills in."""
        return {
            "session_id": session_id,
            "session_name": _most_common(self.names) or (known["name"] if known else None),
            "event_id": _most_common(self.event_ids),
            "lecture_count": self.lectures,
            "presentation_types": sorted(self.presentation_types),
            "description": known["description"] if known else None,
            "starts_at": known["start"] if known else None,
            "ends_at": known["end"] if known else None,
        }


def author_key(author: schema.Author) -> str:
    """``orcid:<iD>`` when the author has an ORCID iD, else ``name:<name>``."""
    orcid = author.get("orcid")
    return f"orcid:{orcid}" if has_value(orcid) else f"name:{author['name']}"


@dataclass
class _AuthorSeen:
    """A row of the ``authors`` table, gathered lecture by lecture."""

    names: Counter[str] = field(default_factory=Counter)
    affiliations: set[str] = field(default_factory=set)
    lecture_ids: set[str] = field(default_factory=set)
    event_ids: set[str] = field(default_factory=set)
    orcid: str | None = None

    def add(self, author: schema.Author, row: Lecture) -> None:
        self.names[author["name"]] += 1
        self.affiliations.update(a for a in author.get("affiliations") or () if a)
        self.lecture_ids.add(row.lecture_id)
        self.event_ids.add(str(row.event_id))
        self.orcid = author.get("orcid") or None

    def row(self, key: str) -> dict[str, object]:
        return {
            "author_key": key,
            "name": _most_common(self.names),
            "orcid": self.orcid,
            "affiliations": sorted(self.affiliations),
            "lecture_ids": sorted(self.lecture_ids),
            "event_ids": sorted(self.event_ids),
            "lecture_count": len(self.lecture_ids),
        }


class SummaryTables:
    """The ``events``, ``sessions`` and ``authors`` tables, gathered a few lectures at a time: what they
    keep is per event, per session and per author (with the ids of the author's lectures, which the
    ``authors`` table lists), never a lecture's record, so that a release can add its lectures one
    event at a time and drop each event's records before the next."""

    def __init__(self) -> None:
        self._events: dict[str, _EventSeen] = defaultdict(_EventSeen)
        self._sessions: dict[str, _SessionSeen] = defaultdict(_SessionSeen)
        self._authors: dict[str, _AuthorSeen] = defaultdict(_AuthorSeen)

    def add(self, lectures: Iterable[Lecture]) -> None:
        for row in lectures:
            self._events[str(row.event_id)].add(row)
            if row.session_id is not None:
                self._sessions[row.session_id].add(row)
            for author in row.authors or ():
                if author.get("name"):
                    self._authors[author_key(author)].add(author, row)

    def tables(self, sessions: Mapping[str, SessionDetail] | None = None) -> dict[str, pa.Table]:
        """The three tables, each sorted by its key; ``sessions`` (see :func:`session_details`) completes
        the sessions the lectures name."""
        details = sessions or {}
        return {
            EVENTS.name: table_of([e.row(k) for k, e in sorted(self._events.items())], EVENTS),
            SESSIONS.name: table_of(
                [s.row(k, details.get(k)) for k, s in sorted(self._sessions.items())], SESSIONS
            ),
            AUTHORS.name: table_of([a.row(k) for k, a in sorted(self._authors.items())], AUTHORS),
        }


def build_tables(
    lectures: Sequence[Lecture], sessions: Mapping[str, SessionDetail] | None = None
) -> dict[str, pa.Table]:
    """The tables of a release, by config name, from lectures made by :func:`lecture_rows` and the
    session details made by :func:`session_details` (a release gathers the summary tables event by
    event: :class:`SummaryTables`)."""
    gathered = SummaryTables()
    gathered.add(lectures)
    return {LECTURES.name: lecture_table(lectures), **gathered.tables(sessions)}
