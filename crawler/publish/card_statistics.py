"""The dataset card's statistics and the text in them.

Scraped text only ever reaches the card's body through :func:`escape_text`, as inert inline markdown (one
line, HTML and markdown syntax escaped, ``|`` safe): a title such as ``---`` or ``<b>|</b>`` renders as
text and can neither end the front matter nor break a table. Our own markdown goes into a table cell
through :func:`table_cell`.

The statistics are escaped, template-ready counts of the lectures, events and authors, and of the tables
read from files the lectures name, counted while their rows were written. Sizes are bounded (top entries
only): the card does not grow with the number of lectures.
"""

from __future__ import annotations

import html
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import pyarrow as pa
import pyarrow.compute as pc

from crawler.publish.tables import DEFAULT_CONFIG, EventConfig, page_derived
from crawler.schema import format_timestamp, has_value, lecture_order

if TYPE_CHECKING:
    # Types only: the charts, which the manifest imports, read this module, and the slides and
    # transcripts writers import the manifest (through the previous release).
    from crawler.publish.slides import SlidesStats
    from crawler.publish.transcripts import TranscriptStats

_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~$#+!{}])")


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last an ellipsis, when it is longer."""
    return text[: limit - 1].rstrip() + "…" if len(text) > limit else text


def escape_text(value: Any, *, limit: int | None = None, empty: str = "(none)") -> str:
    """Scraped text as inert inline markdown: one line, HTML and markdown syntax escaped, ``|`` safe."""
    if value is None:
        return empty
    text = " ".join(_CONTROL.sub("", str(value)).split())
    if not text:
        return empty
    if limit is not None:
        text = shorten(text, limit)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))


def table_cell(markdown: str) -> str:
    """Our own markdown (e.g. a field description) made safe for one table cell."""
    return " ".join(markdown.split()).replace("|", "\\|")


def event_name(name: str | None, event_id: str) -> str:
    """An event's name as the card shows it: escaped and cut, its id when it has none."""
    return escape_text(name or event_id, limit=100)


def number(value: float) -> str:
    """A number as the card and its charts write it: an integer when it is one, else one decimal."""
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def percent(share: float) -> str:
    """A share (0 to 1) as a percentage, one decimal."""
    return f"{100 * share:.1f}%"


# The card's lecture table carries its abstracts' lengths instead of their texts.
ABSTRACT_LENGTH = "abstract_length"
TOP = 20
EXAMPLE_ROWS = 5


class EventStatistics(TypedDict):
    """One event's statistics (``per_event`` in the template)."""

    id: str
    name: str
    config: str
    lectures: int
    sessions: int
    presentation_types: list[dict[str, Any]]
    days: list[dict[str, Any]]
    more_days: int
    without_day: int
    coverage: list[dict[str, Any]]
    anthology: dict[str, Any]
    # Lectures by where their fields came from: ``page`` and ``listing_only``.
    sources: dict[str, int]


# What the per-event statistics read of a lecture (a row of these columns of the lectures table).
STATISTICS_COLUMNS = [
    "event_id",
    "session_id",
    "presentation_type",
    "held_at",
    "anthology_id",
    "withdrawn",
    "extraction",
]


def _ranked(counts: Mapping[Any, int], *, limit: int | None = None) -> list[tuple[Any, int]]:
    """The most frequent first, then by value (None as the empty text); the first ``limit`` only."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], "" if item[0] is None else str(item[0])))
    return ranked[:limit] if limit is not None else ranked


def _counted(values: Iterable[Any], *, limit: int | None = None) -> list[tuple[Any, int]]:
    return _ranked(Counter(values), limit=limit)


def _share(count: int, total: int) -> str:
    return f"{100 * count / total:.1f}%" if total else "n/a"


def _shares(counts: Mapping[Any, int], total: int, *, chars: int | None = None) -> list[dict[str, Any]]:
    """Each value (escaped, cut to ``chars``), its count and its share of ``total``, most frequent first."""
    return [
        {"label": escape_text(k, limit=chars), "count": n, "share": _share(n, total)}
        for k, n in _ranked(counts)
    ]


def lecture_statistics(lectures: pa.Table) -> dict[str, Any]:
    """Escaped, template-ready statistics of the lectures table (``stats`` in the template)."""
    rows = lectures.select(
        ["keywords", "presentation_type", "session_id", "session_name", "is_premium", "doi", "held_at"]
    ).to_pylist()
    total = len(rows)
    lengths = lectures.column(ABSTRACT_LENGTH)
    examples = lectures.slice(0, EXAMPLE_ROWS).select(
        ["lecture_id", "title", "presentation_type", "session_name"]
    )
    held = [r["held_at"] for r in rows if r["held_at"] is not None]
    session_names = {r["session_id"]: r["session_name"] for r in rows if r["session_id"] is not None}
    return {
        "presentation_types": _shares(Counter(r["presentation_type"] for r in rows), total),
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
            "median": number(statistics.median(lengths.to_pylist())) if total else "n/a",
            "max": pc.max(lengths).as_py() if total else "n/a",
        },
        "premium": sum(1 for r in rows if r["is_premium"]),
        "with_doi": sum(1 for r in rows if has_value(r["doi"])),
        "first_held_at": (format_timestamp(min(held)) or "n/a") if held else "n/a",
        "last_held_at": (format_timestamp(max(held)) or "n/a") if held else "n/a",
        "examples": [
            {
                "lecture_id": escape_text(r["lecture_id"], limit=40),
                "title": escape_text(r["title"], limit=100),
                "presentation_type": escape_text(r["presentation_type"]),
                "session_name": escape_text(r["session_name"], limit=60),
            }
            for r in examples.to_pylist()
        ],
    }


def event_statistics(
    rows: Iterable[Mapping[str, Any]], events: Sequence[EventConfig], coverage: object = None
) -> list[EventStatistics]:
    """Per event: its config, lecture and session counts, presentation types, lectures per day and, when
    the caller measured it, each field's coverage. Sizes are bounded (top entries only): the card does
    not grow with the number of lectures."""
    by_event: dict[str | None, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_event.setdefault(row["event_id"], []).append(row)
    measured = coverage if isinstance(coverage, Mapping) else {}
    return [_event_statistics(e, by_event.get(e.event_id, []), measured.get(e.event_id)) for e in events]


def _event_statistics(
    event: EventConfig, group: Sequence[Mapping[str, Any]], measured: object
) -> EventStatistics:
    days = _counted(r["held_at"].date().isoformat() for r in group if r["held_at"] is not None)
    days.sort(key=lambda item: item[0])
    # Lectures carrying fields read from their own page (text, related lectures...); the others have
    # only what the event's listing said (``extraction`` ``api_listing``).
    page = sum(1 for r in group if page_derived(r["extraction"]))
    return {
        "id": escape_text(event.event_id, limit=40),
        "name": event_name(event.event_name, event.event_id),
        "config": event.config_name,
        "lectures": len(group),
        "sessions": len({r["session_id"] for r in group if r["session_id"] is not None}),
        "presentation_types": [
            {"label": escape_text(k, limit=60), "count": n}
            for k, n in _counted((r["presentation_type"] for r in group), limit=TOP)
        ],
        "days": [{"day": d, "count": n} for d, n in days[:TOP]],
        "more_days": max(0, len(days) - TOP),
        "without_day": sum(1 for r in group if r["held_at"] is None),
        "coverage": _coverage_rows(measured),
        "anthology": anthology_share(group),
        "sources": {"page": page, "listing_only": len(group) - page},
    }


def anthology_share(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """How many of the lectures still on the site are linked to an Anthology paper, and their share."""
    live = [r for r in rows if not r["withdrawn"]]
    linked = sum(1 for r in live if has_value(r["anthology_id"]))
    return {"linked": linked, "lectures": len(live), "share": _share(linked, len(live))}


def _coverage_rows(measured: object) -> list[dict[str, Any]]:
    if not isinstance(measured, Mapping):
        return []
    out: list[dict[str, Any]] = []
    for field_name, share in sorted(measured.items(), key=lambda item: str(item[0])):
        if isinstance(share, int | float) and not isinstance(share, bool) and 0 <= share <= 1:
            shown = percent(share)
        else:
            shown = escape_text(share, limit=40)
        out.append({"field": escape_text(field_name, limit=60), "share": shown})
    return out


def author_statistics(tables: Mapping[str, pa.Table], *, config: bool) -> dict[str, Any]:
    authors, lectures = tables["authors"], tables[DEFAULT_CONFIG]
    return {
        "rows": authors.num_rows,
        "config": config,
        "with_orcid": sum(1 for o in authors.column("orcid").to_pylist() if has_value(o)),
        "lectures_with_authors": sum(1 for a in lectures.column("authors").to_pylist() if has_value(a)),
        "with_affiliation": sum(1 for a in authors.column("affiliations").to_pylist() if has_value(a)),
    }


def transcript_statistics(stats: TranscriptStats, event_names: Mapping[str, str | None]) -> dict[str, Any]:
    """The card's transcripts section from the counts made while writing; ``event_names`` by event id.
    Its ``config`` is False when the release has no track."""
    languages = _shares(stats.languages, stats.rows, chars=60)
    return {
        "config": stats.rows > 0,
        "tracks": stats.rows,
        "events": [
            {
                "id": escape_text(event_id, limit=40),
                "name": event_name(event_names.get(event_id), event_id),
                "tracks": count,
            }
            for event_id, count in sorted(stats.by_event.items(), key=lambda item: lecture_order(item[0]))
        ],
        "languages": languages[:TOP],
        "more_languages": max(0, len(languages) - TOP),
        "auto_generated": stats.auto_generated,
        "auto_share": _share(stats.auto_generated, stats.rows),
        "hours": f"{stats.speech_ms / 3_600_000:.1f}",
        "without_text": sum(stats.without_text.values()),
        "problems": _shares(stats.without_text, stats.rows, chars=60),
    }


def slides_statistics(stats: SlidesStats) -> dict[str, Any]:
    """The card's slides section from the counts made while writing; its ``config`` is False when the
    release has no document."""
    return {
        "config": stats.rows > 0,
        "documents": stats.rows,
        "lectures_with_slides": stats.slides_by_event.total(),
        "lectures_with_poster": stats.posters_by_event.total(),
        "pages": stats.pages,
        "without_text": sum(stats.without_text.values()),
        "problems": _shares(stats.without_text, stats.rows, chars=60),
    }
