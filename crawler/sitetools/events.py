"""The events of Underline's whole library, for a run's ``event_ids``: read politely, kept in a file.

:func:`read_catalogue` walks the library listing (``filter[library]=true``, events included) one
request at a time at the crawl's pace, after asking robots.txt of the API's origin; :func:`events`
answers from ``<state>/events.json`` while it is younger than ``max_age_hours`` and reads the site
again otherwise. A listing that fails, is not JSON or does not end raises :class:`CatalogueError`
and leaves the kept file as it was. Only event ids, names, dates, places and lecture counts are
kept: the listing asks for no profiles, and every text kept or shown passes
:mod:`crawler.sitetools.safe_text` (no personal data; no control or bidirectional character kept, none
printed but as a visible escape).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

from protego import Protego

from crawler import settings as defaults
from crawler.pages.catalogue import (
    EventInfo,
    EventSummary,
    LibraryPage,
    event_order,
    label,
    parse_library_page,
    summarize_events,
)
from crawler.sitetools.fetcher import Fetch, PoliteFetcher, fetch_url
from crawler.sitetools.safe_text import kept_text, terminal_text
from crawler.state.fsutil import write_json_atomic
from crawler.state.layout import StateDir
from crawler.urls import API_ACCEPT, library_listing_url, without_credentials

FORMAT = 1
DEFAULT_MAX_AGE_HOURS = 24.0
# The whole library is large (a hundred lectures a page); a listing longer than this is not believed.
DEFAULT_MAX_PAGES = 2_000
MAX_PAGE_SIZE = 100
# Waits before asking again for a listing page that answered 429 or 5xx, or not at all.
RETRY_WAITS: tuple[float, ...] = (10.0, 60.0)
_RETRY_STATUSES = frozenset({0, 408, 429, 500, 502, 503, 504})
# How often a long walk says how far it is, in pages.
PROGRESS_EVERY = 100
# What a read says of the pages' problems, at most (the first ones, then how many more).
MAX_NOTES = 20


# Told after each page read: its number, the pages the listing claims (None: unknown), the pace.
Progress = Callable[[int, int | None, float], None]


class CatalogueError(RuntimeError):
    """The site could not give the whole listing (unreachable, not JSON, incomplete, disallowed)."""


@dataclass
class Catalogue:
    """The events of the library as read at ``read_at`` from ``api_base``."""

    read_at: datetime
    api_base: str
    events: list[EventSummary]
    pages: int
    lectures: int
    total_count: int | None = None
    notes: list[str] = field(default_factory=list)


def _iso(day: date | None) -> str | None:
    return day.isoformat() if day is not None else None


def _kept_label(text: str | None) -> str | None:
    return (kept_text(text) or None) if text is not None else None


def event_row(event: EventSummary) -> dict[str, object]:
    """An event as the kept file (and ``--json``) holds it: its name and place as :func:`kept_text`
    keeps them."""
    return {
        "id": event.event_id,
        "name": _kept_label(event.name),
        "start_date": _iso(event.start_date),
        "end_date": _iso(event.end_date),
        "location": _kept_label(event.location),
        "lectures": event.lectures,
    }


def catalogue_json(catalogue: Catalogue) -> dict[str, object]:
    """The kept file's content (also ``--json``'s, with ``from_cache`` added)."""
    return {
        "format": FORMAT,
        "read_at": catalogue.read_at.isoformat(timespec="seconds"),
        "api_base": without_credentials(catalogue.api_base),
        "pages": catalogue.pages,
        "lectures": catalogue.lectures,
        "total_count": catalogue.total_count,
        "notes": [kept_text(n) for n in catalogue.notes],
        "events": [event_row(e) for e in catalogue.events],
    }


def _date(value: object, what: str) -> date | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{what} is not a date")
    return date.fromisoformat(value)


def _count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} is not a count")
    return value


def catalogue_from_json(obj: object) -> Catalogue:
    """The catalogue a kept file holds; ValueError when it is not one this version wrote."""
    if not isinstance(obj, Mapping) or obj.get("format") != FORMAT:
        raise ValueError("not an events file of this version")
    read_at = datetime.fromisoformat(str(obj.get("read_at")))
    if read_at.tzinfo is None:
        raise ValueError("read_at has no time zone")
    api_base = obj.get("api_base")
    rows = obj.get("events")
    if not isinstance(api_base, str) or not isinstance(rows, list):
        raise ValueError("api_base or events missing")
    events = []
    for row in rows:
        if not isinstance(row, Mapping) or not isinstance(row.get("id"), str) or not row["id"].isdecimal():
            raise ValueError("an event without an id")
        events.append(
            EventSummary(
                event_id=row["id"],
                name=label(row.get("name")),
                start_date=_date(row.get("start_date"), "start_date"),
                end_date=_date(row.get("end_date"), "end_date"),
                location=label(row.get("location")),
                lectures=_count(row.get("lectures"), "lectures"),
            )
        )
    total = obj.get("total_count")
    notes = obj.get("notes", [])
    return Catalogue(
        read_at=read_at,
        api_base=api_base,
        events=sorted(events, key=event_order),
        pages=_count(obj.get("pages"), "pages"),
        lectures=_count(obj.get("lectures"), "lectures"),
        total_count=None if total is None else _count(total, "total_count"),
        notes=[str(n) for n in notes] if isinstance(notes, list) else [],
    )


def load_catalogue(path: Path) -> Catalogue | None:
    """The catalogue kept in ``path``; None when there is none or it cannot be read (it is only a copy
    of what the site says: reading the site again mends it)."""
    try:
        return catalogue_from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError, TypeError):
        return None


def is_fresh(catalogue: Catalogue, api_base: str, max_age_hours: float, now: datetime) -> bool:
    """Read from the same API within ``max_age_hours`` (a file from the future is not fresh)."""
    age = now - catalogue.read_at
    same_site = catalogue.api_base == without_credentials(api_base)
    return same_site and timedelta(0) <= age < timedelta(hours=max_age_hours)


# -- reading the site -----------------------------------------------------------------------------


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def read_catalogue(
    api_base: str,
    *,
    delay: float = defaults.DOWNLOAD_DELAY,
    page_size: int = MAX_PAGE_SIZE,
    max_pages: int = DEFAULT_MAX_PAGES,
    fetch: Fetch = fetch_url,
    retry_waits: Sequence[float] = RETRY_WAITS,
    now: datetime | None = None,
    progress: Progress | None = None,
) -> Catalogue:
    """Read the whole library listing of ``api_base`` and count its lectures per event: one request at a
    time, at ``delay`` or robots.txt's larger Crawl-delay, until ``meta.total_pages`` or an empty last
    page. :class:`CatalogueError` for an answer it cannot read, a page with nothing new, a page empty
    before the last, or more pages than claimed plus one or ``max_pages``; ``progress`` hears each page."""
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValueError(f"page size must be from 1 to {MAX_PAGE_SIZE}")
    fetcher, notes = _polite_fetcher(api_base, page_size, delay, fetch)
    pages, lectures, events, total_count = _walk_listing(
        fetcher, api_base, page_size, notes, max_pages=max_pages, retry_waits=retry_waits, progress=progress
    )
    if not lectures:
        raise CatalogueError("the library listing lists no lecture; nothing to show")
    if total_count is not None and total_count != len(lectures):
        notes.append(f"the listing said {total_count} lectures; {len(lectures)} were read")
    if len(notes) > MAX_NOTES:
        notes = [*notes[: MAX_NOTES - 1], f"and {len(notes) - MAX_NOTES + 1} more problems like these"]
    return Catalogue(
        read_at=(now or datetime.now(UTC)).replace(microsecond=0),
        api_base=without_credentials(api_base),
        events=summarize_events(lectures, events),
        pages=pages,
        lectures=len(lectures),
        total_count=total_count,
        notes=notes,
    )


def _walk_listing(
    fetcher: PoliteFetcher,
    api_base: str,
    page_size: int,
    notes: list[str],
    *,
    max_pages: int,
    retry_waits: Sequence[float],
    progress: Progress | None,
) -> tuple[int, dict[str, str | None], list[EventInfo], int | None]:
    """The listing read page after page (each page's problems added to ``notes``): the pages read, each
    lecture's event, the events listed, and the lectures page 1 claimed (None: it did not say)."""
    lectures: dict[str, str | None] = {}
    events: list[EventInfo] = []
    # What page 1 claimed: the number of pages and of lectures.
    claimed: int | None = None
    total_count: int | None = None
    number = 0
    while True:
        number += 1
        if number > max_pages:
            raise CatalogueError(f"the listing has more than {max_pages} pages (--max-pages); not believed")
        if claimed is not None and number > claimed + 1:
            raise CatalogueError(f"the listing does not end: page 1 claimed {claimed} pages")
        page = _read_page(fetcher, api_base, number, page_size, retry_waits)
        notes.extend(f"page {number}: {p}" for p in page.problems)
        if number == 1:
            claimed, total_count = page.total_pages, page.total_count
        # The last page as the latest page's meta counts it, else as page 1 claimed.
        last = page.total_pages if page.total_pages is not None else claimed
        if not page.lectures:
            # An empty page ends the listing only where its own meta says the listing ends there: a page
            # that comes back empty before the last it counts is a listing cut short, not a whole one.
            if last is not None and number < last:
                raise CatalogueError(
                    f"listing page {number} of {last} lists no lecture; the listing is cut short"
                )
            return number, lectures, events, total_count
        new = {k: v for k, v in page.lectures.items() if k not in lectures}
        if not new:
            raise CatalogueError(f"listing page {number} brings no lecture not seen before; it does not end")
        lectures.update(new)
        events.extend(page.events.values())
        if progress is not None:
            progress(number, claimed, fetcher.delay)
        if last is not None and number >= last:
            return number, lectures, events, total_count


def _polite_fetcher(
    api_base: str, page_size: int, delay: float, fetch: Fetch
) -> tuple[PoliteFetcher, list[str]]:
    """A fetcher at the larger of ``delay`` and robots.txt's Crawl-delay, once robots.txt of the API's
    origin allows the listing; and a note when robots.txt slowed it down. robots.txt is read as RFC 9309
    says: a 4xx answer (or one from another origin) means there is none, all allowed; an answer that
    could not be had (no connection, a 5xx) stops the reading."""
    fetcher = PoliteFetcher(delay, fetch)
    url = f"{_origin(api_base)}/robots.txt"
    answer = fetcher.get(url)
    if answer.error or answer.status == 0:
        raise CatalogueError(f"the site cannot be reached: {url}: {answer.error or 'no answer'}")
    if answer.status >= 500:
        raise CatalogueError(f"robots.txt could not be read ({url}: HTTP {answer.status}); nothing was asked")
    readable = 200 <= answer.status < 300 and _origin(answer.url) == _origin(api_base)
    rules = Protego.parse(answer.body.decode("utf-8", "replace") if readable else "")
    if not rules.can_fetch(library_listing_url(api_base, 1, page_size), defaults.USER_AGENT):
        raise CatalogueError(
            f"robots.txt ({url}) disallows the library listing for {defaults.USER_AGENT}; nothing was asked"
        )
    crawl_delay = rules.crawl_delay(defaults.USER_AGENT)
    if crawl_delay is not None and float(crawl_delay) > delay:
        fetcher.delay = float(crawl_delay)
        return fetcher, [f"robots.txt asks for {float(crawl_delay):g} s between requests"]
    return fetcher, []


def _read_page(
    fetcher: PoliteFetcher, api_base: str, number: int, page_size: int, retry_waits: Sequence[float]
) -> LibraryPage:
    """Listing page ``number``, read (asked again after each of ``retry_waits`` while the server is
    throttled or failing, or the answer did not arrive whole); :class:`CatalogueError` when it failed or
    cannot be read."""
    url = library_listing_url(api_base, number, page_size)
    answer = fetcher.get(url, {"Accept": API_ACCEPT})
    for wait in retry_waits:
        if not (answer.status in _RETRY_STATUSES or (answer.status == 200 and answer.error is not None)):
            break
        time.sleep(wait)
        answer = fetcher.get(url, {"Accept": API_ACCEPT})
    # The fetcher keeps every answer it got; a walk of the whole library must not hold them all.
    fetcher.log.clear()
    if not answer.error and _origin(answer.url) != _origin(api_base):
        answer.error = f"redirected off the site to {_origin(answer.url)}"
    if answer.error or answer.status != 200:
        failure = answer.error or f"HTTP {answer.status}"
        raise CatalogueError(f"listing page {number} failed ({failure}): {without_credentials(url)}")
    try:
        document = json.loads(answer.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise CatalogueError(
            f"listing page {number} is not JSON ({answer.content_type or 'no content type'})"
        ) from None
    page = parse_library_page(document)
    if page.error is not None:
        raise CatalogueError(f"listing page {number} cannot be read: {page.error}")
    return page


@dataclass
class EventsAnswer:
    catalogue: Catalogue
    from_cache: bool
    path: Path


def events(
    state_dir: Path,
    api_base: str,
    *,
    max_age_hours: float = DEFAULT_MAX_AGE_HOURS,
    refresh: bool = False,
    delay: float = defaults.DOWNLOAD_DELAY,
    page_size: int = MAX_PAGE_SIZE,
    max_pages: int = DEFAULT_MAX_PAGES,
    fetch: Fetch = fetch_url,
    retry_waits: Sequence[float] = RETRY_WAITS,
    progress: Progress | None = None,
) -> EventsAnswer:
    """The library's events: the kept copy when it is fresh (and ``refresh`` is not asked), otherwise
    read from the site and kept (atomically; a failed read keeps the old copy)."""
    path = StateDir(Path(state_dir)).events
    now = datetime.now(UTC)
    if not refresh:
        kept = load_catalogue(path)
        if kept is not None and is_fresh(kept, api_base, max_age_hours, now):
            return EventsAnswer(kept, True, path)
    catalogue = read_catalogue(
        api_base,
        delay=delay,
        page_size=page_size,
        max_pages=max_pages,
        fetch=fetch,
        retry_waits=retry_waits,
        now=now,
        progress=progress,
    )
    write_json_atomic(path, catalogue_json(catalogue))
    return EventsAnswer(catalogue, False, path)


# -- showing them ---------------------------------------------------------------------------------


def matching(found: Iterable[EventSummary], texts: Sequence[str]) -> list[EventSummary]:
    """The events whose name (as the kept file holds it) holds one of ``texts`` (case-insensitive) or
    whose id is one of them; every event when ``texts`` is empty."""
    wanted = [t.strip().casefold() for t in texts if t.strip()]
    if not wanted:
        return list(found)
    out = []
    for event in found:
        name = (_kept_label(event.name) or "").casefold()
        if any(w == event.event_id or w in name for w in wanted):
            out.append(event)
    return out


def render_table(found: Sequence[EventSummary]) -> list[str]:
    """``id  name  start  end  lectures``, one line an event, columns aligned; names as
    :func:`terminal_text` shows them."""
    rows = [("id", "name", "start", "end", "lectures")]
    rows += [
        (
            e.event_id,
            terminal_text(e.name) if e.name else "(no name)",
            _iso(e.start_date) or "-",
            _iso(e.end_date) or "-",
            str(e.lectures),
        )
        for e in found
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = []
    for r in rows:
        cells = [f"{r[i]:<{widths[i]}}" for i in range(4)]
        lines.append("  ".join([*cells, f"{r[4]:>8}"]))
    return lines


def progress_line(number: int, claimed: int | None, delay: float) -> str | None:
    """What to tell an operator after page ``number``: the length of the walk after the first page,
    then every :data:`PROGRESS_EVERY` pages; None between."""
    if number == 1 and claimed is not None and claimed > 1:
        minutes = (claimed - 1) * delay / 60
        return f"reading {claimed} listing pages, one every {delay:g} s (about {minutes:.0f} min)"
    if number % PROGRESS_EVERY == 0:
        return f"listing page {number}" + (f" of {claimed}" if claimed is not None else "")
    return None


def toml_line(found: Sequence[EventSummary]) -> str:
    """The ``[crawl]`` line of a run's configuration that crawls ``found``."""
    return "event_ids = [" + ", ".join(json.dumps(e.event_id) for e in found) + "]"
