"""Papers of a talk's own time: which papers a talk may be linked to, judged by their dates and venues.

A talk is given at an event (``EMNLP 2025``, held in November 2025); its paper cannot be published after
it. The Anthology dates a paper by its volume (``<year>``, and ``<month>`` where the volume gives one: a
TACL volume gives its year only) and places the volume at events: ``<venue>-<year>`` for each of its
venues (``2025.emnlp-main`` is at ``emnlp-2025``), the event a Findings volume is named after
(``2025.findings-emnlp``), and the events whose ``<colocated>`` list names it (the workshops held at
EMNLP 2025). :func:`paper_in_time` is the rule:

- a paper of the event's own volumes is of its time;
- a paper published after the event (a later year, or a later month of its year) never is;
- a journal paper (TACL, CL, or any ``type="journal"`` volume) is only when published within the
  :data:`JOURNAL_MONTHS` months before the event;
- any other paper published before the event is, after the event's own ones.

A month that neither the event nor the paper gives is read the way that keeps the paper: a date refuses
a paper only when it proves the paper out of time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from crawler.anthology.comparable import fold

# A journal paper is of a talk's time when published within this many months before the event.
JOURNAL_MONTHS = 12
# Venues whose volumes are journals even when the volume does not say ``type="journal"``.
JOURNAL_VENUES = frozenset({"tacl", "cl"})
MONTH_NAMES = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_YEAR = re.compile(r"^(19|20)\d\d$")
_NAME_PARTS = re.compile(r"[a-z]+|\d+")

Kind = Literal["own_event", "before", "journal", "later", "journal_too_old", "undated"]


@dataclass(frozen=True, slots=True)
class TimeAndPlace:
    """When and where a talk is given or a paper was published: the year and month (None when unknown),
    the ids the Anthology gives the talk's event or the events the paper's volume is at
    (``emnlp-2025``), and whether that volume is a journal's."""

    year: int | None
    month: int | None = None
    events: frozenset[str] = frozenset()
    journal: bool = False

    def describe(self) -> str:
        if self.year is None:
            return "undated"
        return f"{MONTH_NAMES[self.month - 1].title()} {self.year}" if self.month else str(self.year)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a paper is of a talk's time (``taken``), whether it is of the talk's own event (looked at
    first), and why: ``kind`` and a sentence for a refusal."""

    kind: Kind
    reason: str = ""

    @property
    def taken(self) -> bool:
        return self.kind not in ("later", "journal_too_old")

    @property
    def own_event(self) -> bool:
        return self.kind == "own_event"


UNDATED = Verdict("undated")
UNKNOWN_TIME = TimeAndPlace(None)


def month_number(text: str) -> int | None:
    """The month a volume's ``<month>`` names (the first one of a range: ``June-July`` -> 6), or None."""
    for word in _NAME_PARTS.findall(fold(text)):
        if word.isdigit():
            return int(word) if 1 <= int(word) <= 12 else None
        for number, name in enumerate(MONTH_NAMES, start=1):
            if len(word) >= 3 and name.startswith(word):
                return number
    return None


def event_ids(venues: Iterable[str], year: int) -> frozenset[str]:
    """The Anthology's ids of the events of ``venues`` in ``year``: ``emnlp`` 2025 -> ``emnlp-2025``."""
    return frozenset(f"{venue}-{year}" for venue in venues if venue)


def event_time(event_name: str, held_at: datetime | None) -> TimeAndPlace | None:
    """The time of a talk from its event's name and when it is held: the year the name gives
    (``EMNLP 2025``; ``held_at``'s when it gives none), the month of ``held_at`` when it is in that year,
    and the event ids of the name's words with that year (``emnlp-2025``). None when neither gives a
    year."""
    words = _NAME_PARTS.findall(fold(event_name or ""))
    years = [int(w) for w in words if _YEAR.match(w)]
    year = years[0] if years else held_at.year if held_at is not None else None
    if year is None:
        return None
    # A lecture listed in another year than its event's name (a recording put up later) still is the
    # event's: its date tells the month only when it is of the event's year.
    month = held_at.month if held_at is not None and held_at.year == year else None
    venues = [w for w in words if not w.isdigit() and len(w) > 1]
    return TimeAndPlace(year=year, month=month, events=event_ids(venues, year))


def _months(year: int, month: int | None) -> tuple[int, int]:
    """The first and last month (counted from year 0) a date may be: its month, or its whole year."""
    if month is not None:
        return year * 12 + month - 1, year * 12 + month - 1
    return year * 12, year * 12 + 11


def paper_in_time(event: TimeAndPlace | None, paper: TimeAndPlace) -> Verdict:
    """Whether ``paper`` may be the paper of a talk given at ``event`` (see the module's docstring)."""
    if event is None or event.year is None or paper.year is None:
        return UNDATED
    if paper.events & event.events:
        return Verdict("own_event")
    paper_first, paper_last = _months(paper.year, paper.month)
    event_first, event_last = _months(event.year, event.month)
    if paper_first > event_last:
        return Verdict("later", f"published {paper.describe()}, after the event ({event.describe()})")
    if paper.journal:
        if event_first - paper_last > JOURNAL_MONTHS:
            return Verdict(
                "journal_too_old",
                f"a journal paper of {paper.describe()}, more than {JOURNAL_MONTHS} months before the "
                f"event ({event.describe()})",
            )
        return Verdict("journal")
    return Verdict("before")
