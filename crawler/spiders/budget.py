"""The page budget (UNDERLINE_PAGE_BUDGET): which lectures that need their page are fetched tonight, across
every event's listing, and where the others' listing fields wait meanwhile. What it holds does not grow with
the catalogue (see :class:`PageBudget`)."""

from __future__ import annotations

import dataclasses
import heapq
import json
import tempfile
from typing import IO

from crawler import stats_keys as keys
from crawler.items import LectureItem
from crawler.spiders.refresh import CHANGED, NEW, STALE

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
