"""The page budget spent in the crawl (UNDERLINE_PAGE_BUDGET): the lectures that need their page held
while the listings are read, the page requests the budget buys once they are, and the records of the
lectures whose page waits for a later crawl. Which lectures it buys is :class:`PageBudget`'s decision: what it
holds does not grow with the catalogue."""

from __future__ import annotations

import dataclasses
import heapq
import json
import logging
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, Any

import scrapy
from scrapy.statscollectors import StatsCollector

from crawler import stats_keys as keys
from crawler.pages import LectureItem
from crawler.schema import LISTING_ONLY_EXTRACTION, is_listing_only
from crawler.spiders.lecture_answer import LectureRecords
from crawler.spiders.refresh import (
    CHANGED,
    NEW,
    STALE,
    Decision,
    listing_hashes,
    need_rank,
    with_new_listing_fields,
)

WAITING_KEYS = dict(zip((NEW, CHANGED, STALE), keys.PAGES_WAITING, strict=True))


@dataclasses.dataclass(frozen=True, order=True, slots=True)
class Candidate:
    """A lecture that needs its page, held until every listing is read: why (``rank``), its place among
    those of the same rank (a stale lecture's page age, else ``listed``: the order it was listed in) and
    where its listing fields wait on disk (``offset``, -1: not written)."""

    rank: int
    order: float
    listed: int
    lecture_id: str = dataclasses.field(compare=False)
    offset: int = dataclasses.field(default=-1, compare=False)


class PageBudget:
    """The lectures the page budget may buy, across every event's listing: at most ``room`` of them (the
    best so far by rank, then age or listing order), kept as small tuples while their listing fields
    wait in a temporary file. A lecture that cannot be among the ``room`` best, or is pushed out of them
    by a better one, waits for a later crawl at once: what is held does not grow with the catalogue.

    The ``room`` held when the listings are read are the lectures a sort of every candidate would have
    put first, so the pages asked are the same as when all were held."""

    def __init__(self, room: int | None = None) -> None:
        # None: no bound (every candidate held).
        self.room = room
        # A max-heap by rank (negated keys): its top is the held candidate the budget would buy last.
        self._heap: list[tuple[int, float, int, Candidate]] = []
        self._listed = 0
        self._spill: IO[bytes] | None = None

    @property
    def candidates(self) -> list[Candidate]:
        return [entry[3] for entry in self._heap]

    def hold(
        self, rank: int, order: float, lecture_id: str, held: LectureItem
    ) -> tuple[Candidate, LectureItem] | None:
        """Keep a lecture for the budget. Returns the lecture that waits because of it (itself, or the
        held one it pushed out), with the listing fields it was held with; None when none has to wait
        yet."""
        candidate = Candidate(rank, order, self._listed, lecture_id)
        self._listed += 1
        if self.room is not None and len(self._heap) >= self.room:
            if self.room == 0 or not candidate < self._heap[0][3]:
                return candidate, held
            _, _, _, out = heapq.heapreplace(self._heap, self._entry(self._write(candidate, held)))
            return out, self.listing(out)
        heapq.heappush(self._heap, self._entry(self._write(candidate, held)))
        return None

    @staticmethod
    def _entry(candidate: Candidate) -> tuple[int, float, int, Candidate]:
        return (-candidate.rank, -candidate.order, -candidate.listed, candidate)

    def _write(self, candidate: Candidate, held: LectureItem) -> Candidate:
        if self._spill is None:
            # Closed in close() (at the latest when the spider closes), not at the end of a block.
            self._spill = tempfile.TemporaryFile(prefix="eventcrawl-budget-")  # noqa: SIM115
        offset = self._spill.seek(0, 2)
        self._spill.write(json.dumps(held.to_json(), ensure_ascii=False).encode("utf-8") + b"\n")
        return dataclasses.replace(candidate, offset=offset)

    def listing(self, candidate: Candidate) -> LectureItem:
        """The listing fields ``candidate`` was held with, read back from disk."""
        assert self._spill is not None and candidate.offset >= 0
        self._spill.seek(candidate.offset)
        return LectureItem.from_json(json.loads(self._spill.readline()))

    def ranked(self) -> list[Candidate]:
        return sorted(self.candidates)

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None
        self._heap = []


@dataclasses.dataclass(frozen=True, slots=True)
class BudgetTerms:
    """What the page budget is: ``page_budget`` requests (0: no limit), three a lecture when its
    ``subtitles`` are asked for too (its page, its track list, and one subtitle file reserved), of which a
    resumed crawl spent ``spent_before`` lectures' already."""

    page_budget: int
    subtitles: bool
    spent_before: int

    def page_cost(self) -> int:
        return 3 if self.subtitles else 1

    def subtitle_allowance(self, presence_asked: int, pages: int) -> int | None:
        """How many subtitle files the budget pays once ``pages`` lecture pages (and their track lists)
        are bought and ``presence_asked`` questions asked: what they leave (None: no budget)."""
        if self.page_budget <= 0 or not self.subtitles:
            return None
        return max(0, self.page_budget - presence_asked - 2 * (self.spent_before + pages))

    def pages_left(self, presence_asked: int = 0) -> int:
        """How many lecture pages the budget still buys once ``presence_asked`` questions are asked: a
        lecture costs its page, and its subtitles' request when they are asked for; a resumed crawl has
        spent what its stage counts already."""
        return max(0, (self.page_budget - presence_asked) // self.page_cost() - self.spent_before)

    def allows_presence(self, asked: int) -> bool:
        """Whether the budget buys one more question about presence, ``asked`` asked already."""
        if self.page_budget <= 0:
            return True
        return self.spent_before * self.page_cost() + asked < self.page_budget


@dataclasses.dataclass(eq=False)
class BudgetSpending:
    """Spends the spider's page budget (``terms``) on the lectures ``budget`` holds. ``page_request`` is
    the spider's (a request's callbacks must be the spider's methods), ``lectures`` makes the records of
    those that wait, ``logger`` is the spider's. ``spent``: the budget was spent (every listing read)."""

    stats: StatsCollector
    terms: BudgetTerms
    budget: PageBudget
    _: dataclasses.KW_ONLY
    lectures: LectureRecords
    page_request: Callable[..., scrapy.Request]
    logger: logging.LoggerAdapter[logging.Logger]
    spent: bool = False
    # How many subtitle files the budget pays, once spent (None: no limit).
    subtitle_allowance: int | None = None

    def hold(self, decision: Decision) -> Iterator[Any]:
        """Hold a lecture that needs its page for the budget; what waits because of it (itself, or a held
        lecture it ranks before) is staged now, so no more than the budget can buy is held."""
        rank = need_rank(decision)
        fetched = decision.fetched_at
        order = fetched.timestamp() if rank == STALE and fetched is not None else 0.0
        lecture_id = decision.fields.lecture_id
        if self.spent:
            # A listing page read after the budget was spent (see listings_read): it waits.
            yield from self.waiting(Candidate(rank, order, -1, lecture_id), decision.fields)
            return
        out = self.budget.hold(rank, order, lecture_id, decision.fields)
        if out is not None:
            yield from self.waiting(*out)

    def spend(self, presence_asked: int) -> Iterator[Any]:
        """Once every listing is read: a page request for each held lecture (the budget buys them all:
        new ones first, then changed, then stale, the oldest page first)."""
        per_crawl = self.terms.page_budget // self.terms.page_cost()
        self.stats.set_value(keys.PAGE_BUDGET, self.terms.page_budget)
        self.stats.set_value(keys.PAGE_BUDGET_LECTURES, per_crawl)
        if per_crawl == 0:
            self.logger.error(
                "A page budget of %d buys no lecture page at %d requests a lecture: nothing is fetched",
                self.terms.page_budget,
                self.terms.page_cost(),
            )
        ranked = self.budget.ranked()
        self.spent = True
        # What asking about the lectures that left the listings spent is no longer the pages'.
        affordable = self.terms.pages_left(presence_asked)
        self.subtitle_allowance = self.terms.subtitle_allowance(presence_asked, min(affordable, len(ranked)))
        for place, candidate in enumerate(ranked):
            held = self.budget.listing(candidate)
            if place < affordable:
                yield self.page_request(held, revalidated=candidate.rank == STALE)
            else:
                yield from self.waiting(candidate, held)
        self.budget.close()
        waiting = sum(int(self.stats.get_value(key) or 0) for key in keys.PAGES_WAITING)
        if waiting:
            self.logger.info(
                "Page budget %d spent: %d lecture pages wait for a later crawl",
                self.terms.page_budget,
                waiting,
            )

    def waiting(self, candidate: Candidate, fields: LectureItem) -> Iterator[Any]:
        """A lecture whose page waits for a later crawl: the record the last crawl staged of its page
        (with the fields new to its listing filled), or, for a page never fetched, the listing's fields
        (``extraction = api_listing``, no listing hashes: a later crawl ranks it new)."""
        key = WAITING_KEYS[candidate.rank]
        self.stats.inc_value(key)
        staged = self.lectures.previous().staged(candidate.lecture_id) if candidate.rank != NEW else None
        if staged is not None:
            hashes = listing_hashes(fields)
            record = with_new_listing_fields(staged, fields, hashes)
            # A changed lecture keeps the hashes of the listing its page was fetched with: it is still
            # changed next time. A stale one's listing is as staged.
            kept = staged.listing_hashes if candidate.rank == CHANGED else hashes
            yield self.lectures.carried(record, kept, [key])
            return
        last = self.lectures.previous().staged(candidate.lecture_id)
        if last is not None and not is_listing_only(last):
            # Ranked new only because the refresh is off: its last page's record stands in.
            yield self.lectures.carried(last, None, [key])
            return
        listing_only_fields = dataclasses.replace(fields, event_id=fields.event_id or fields.listed_in)
        yield self.lectures.lecture_item(listing_only_fields, LISTING_ONLY_EXTRACTION, None, set(), [key])
