"""The dataset card's statistics: escaped, template-ready counts of the lectures table (presentation
types, sessions, keywords, abstract lengths, examples), of each event (days, coverage rows, the
Anthology share, where the fields came from) and of the authors. Sizes are bounded (top entries only):
the card does not grow with the number of lectures.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

import pyarrow as pa
import pyarrow.compute as pc

from crawler.publish.card_escape import escape_text
from crawler.publish.tables import DEFAULT_CONFIG, EventConfig, page_derived
from crawler.schema import format_timestamp, has_value

# A lecture table may carry its abstracts' lengths instead of their texts (see :func:`abstract_lengths`).
ABSTRACT_LENGTH = "abstract_length"
TOP = 20
EXAMPLE_ROWS = 5


class Share(TypedDict):
    label: str
    count: int
    share: str


class LabelCount(TypedDict):
    label: str
    count: int


class SessionCount(TypedDict):
    name: str
    id: str
    count: int


class KeywordCount(TypedDict):
    keyword: str
    count: int


class AbstractLength(TypedDict):
    min: int | str
    median: str
    max: int | str


class Example(TypedDict):
    lecture_id: str
    title: str
    presentation_type: str
    session_name: str


class LectureStatistics(TypedDict):
    """Escaped, template-ready statistics of the lectures table (``stats`` in the template)."""

    presentation_types: list[Share]
    sessions: list[SessionCount]
    without_session: int
    keywords: list[KeywordCount]
    abstract_length: AbstractLength
    premium: int
    with_doi: int
    first_held_at: str
    last_held_at: str
    examples: list[Example]


class DayCount(TypedDict):
    day: str
    count: int


class CoverageRow(TypedDict):
    field: str
    share: str


class AnthologyShare(TypedDict):
    linked: int
    lectures: int
    share: str


class ExtractionCounts(TypedDict):
    page: int
    listing_only: int


class EventStatistics(TypedDict):
    """One event's statistics (``per_event`` in the template)."""

    id: str
    name: str
    config: str
    lectures: int
    sessions: int
    presentation_types: list[LabelCount]
    days: list[DayCount]
    more_days: int
    without_day: int
    coverage: list[CoverageRow]
    anthology: AnthologyShare
    sources: ExtractionCounts


@dataclass(frozen=True)
class StatisticsRow:
    """What the per-event statistics read of a lecture: a few columns of the lectures table."""

    event_id: str | None
    session_id: str | None
    presentation_type: str | None
    held_at: datetime | None
    anthology_id: str | None
    withdrawn: bool
    extraction: str | None

    @classmethod
    def rows_of(cls, lectures: pa.Table) -> list[StatisticsRow]:
        names = [f.name for f in dataclasses.fields(cls)]
        return [cls(**row) for row in lectures.select(names).to_pylist()]


def _counted(values: Iterable[Any], *, limit: int | None = None) -> list[tuple[Any, int]]:
    counts = Counter(values)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], "" if item[0] is None else str(item[0])))
    return ranked[:limit] if limit is not None else ranked


def _share(count: int, total: int) -> str:
    return f"{100 * count / total:.1f}%" if total else "n/a"


def abstract_lengths(lectures: pa.Table) -> pa.ChunkedArray:
    """Each lecture's abstract length in characters: the ``abstract_length`` column when the table has
    one (a release's card reads the lengths, not the texts, of all its lectures), else counted."""
    if ABSTRACT_LENGTH in lectures.column_names:
        return lectures.column(ABSTRACT_LENGTH)
    return pc.utf8_length(lectures.column("abstract"))


def lecture_statistics(lectures: pa.Table) -> LectureStatistics:
    """Escaped, template-ready statistics of the lectures table."""
    rows = lectures.select(
        ["keywords", "presentation_type", "session_id", "session_name", "is_premium", "doi", "held_at"]
    ).to_pylist()
    total = len(rows)
    lengths = abstract_lengths(lectures)
    held = [r["held_at"] for r in rows if r["held_at"] is not None]
    session_names = {r["session_id"]: r["session_name"] for r in rows if r["session_id"] is not None}
    return {
        "presentation_types": [
            {"label": escape_text(k), "count": n, "share": _share(n, total)}
            for k, n in _counted(r["presentation_type"] for r in rows)
        ],
        "sessions": [
            {
                "name": escape_text(session_names.get(k), limit=100),
                "id": escape_text(k, limit=40),
                "count": n,
            }
            for k, n in _counted((r["session_id"] for r in rows if r["session_id"] is not None), limit=TOP)
        ],
        "without_session": sum(1 for r in rows if r["session_id"] is None),
        "keywords": [
            {"keyword": escape_text(k, limit=80), "count": n}
            for k, n in _counted((k for r in rows for k in dict.fromkeys(r["keywords"])), limit=TOP)
        ],
        "abstract_length": {
            "min": pc.min(lengths).as_py() if total else "n/a",
            "median": _number(statistics.median(lengths.to_pylist())) if total else "n/a",
            "max": pc.max(lengths).as_py() if total else "n/a",
        },
        "premium": sum(1 for r in rows if r["is_premium"]),
        "with_doi": sum(1 for r in rows if has_value(r["doi"])),
        "first_held_at": (format_timestamp(min(held)) or "n/a") if held else "n/a",
        "last_held_at": (format_timestamp(max(held)) or "n/a") if held else "n/a",
        "examples": _examples(lectures),
    }


def _examples(lectures: pa.Table) -> list[Example]:
    examples = lectures.slice(0, EXAMPLE_ROWS).select(
        ["lecture_id", "title", "presentation_type", "session_name"]
    )
    return [
        {
            "lecture_id": escape_text(r["lecture_id"], limit=40),
            "title": escape_text(r["title"], limit=100),
            "presentation_type": escape_text(r["presentation_type"]),
            "session_name": escape_text(r["session_name"], limit=60),
        }
        for r in examples.to_pylist()
    ]


def event_statistics(
    lectures: pa.Table, events: Sequence[EventConfig], coverage: object = None
) -> list[EventStatistics]:
    """Per event: its config, lecture and session counts, presentation types, lectures per day and, when
    the caller measured it, each field's coverage. Sizes are bounded (top entries only): the card does
    not grow with the number of lectures."""
    by_event: dict[str | None, list[StatisticsRow]] = {}
    for row in StatisticsRow.rows_of(lectures):
        by_event.setdefault(row.event_id, []).append(row)
    measured = coverage if isinstance(coverage, Mapping) else {}
    return [_event_statistics(e, by_event.get(e.event_id, []), measured.get(e.event_id)) for e in events]


def _event_statistics(
    event: EventConfig, group: Sequence[StatisticsRow], measured: object
) -> EventStatistics:
    days = _counted(r.held_at.date().isoformat() for r in group if r.held_at is not None)
    days.sort(key=lambda item: item[0])
    return {
        "id": escape_text(event.event_id, limit=40),
        "name": escape_text(event.event_name or event.event_id, limit=100),
        "config": event.config_name,
        "lectures": len(group),
        "sessions": len({r.session_id for r in group if r.session_id is not None}),
        "presentation_types": [
            {"label": escape_text(k, limit=60), "count": n}
            for k, n in _counted((r.presentation_type for r in group), limit=TOP)
        ],
        "days": [{"day": d, "count": n} for d, n in days[:TOP]],
        "more_days": max(0, len(days) - TOP),
        "without_day": sum(1 for r in group if r.held_at is None),
        "coverage": _coverage_rows(measured),
        "anthology": anthology_share(group),
        "sources": extraction_counts(group),
    }


def extraction_counts(rows: Iterable[StatisticsRow]) -> ExtractionCounts:
    """How many lectures carry fields read from their own page (text, related lectures...) and how many
    only what the event's listing said (``extraction`` ``api_listing``)."""
    page = listing = 0
    for row in rows:
        if page_derived(row.extraction):
            page += 1
        else:
            listing += 1
    return {"page": page, "listing_only": listing}


def anthology_share(rows: Iterable[StatisticsRow]) -> AnthologyShare:
    """How many of the lectures still on the site are linked to an Anthology paper, and their share."""
    live = [r for r in rows if not r.withdrawn]
    linked = sum(1 for r in live if has_value(r.anthology_id))
    return {"linked": linked, "lectures": len(live), "share": _share(linked, len(live))}


def _coverage_rows(measured: object) -> list[CoverageRow]:
    if not isinstance(measured, Mapping):
        return []
    out: list[CoverageRow] = []
    for field_name, share in sorted(measured.items(), key=lambda item: str(item[0])):
        if isinstance(share, int | float) and not isinstance(share, bool) and 0 <= share <= 1:
            shown = f"{100 * share:.1f}%"
        else:
            shown = escape_text(share, limit=40)
        out.append({"field": escape_text(field_name, limit=60), "share": shown})
    return out


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


class AuthorStatistics(TypedDict):
    rows: int
    config: bool
    with_orcid: int
    lectures_with_authors: int
    with_affiliation: int


def author_statistics(tables: Mapping[str, pa.Table], *, config: bool) -> AuthorStatistics:
    authors, lectures = tables["authors"], tables[DEFAULT_CONFIG]
    return {
        "rows": authors.num_rows,
        "config": config,
        "with_orcid": sum(1 for o in authors.column("orcid").to_pylist() if has_value(o)),
        "lectures_with_authors": sum(1 for a in lectures.column("authors").to_pylist() if has_value(a)),
        "with_affiliation": sum(1 for a in authors.column("affiliations").to_pylist() if has_value(a)),
    }
