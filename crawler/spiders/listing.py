"""An event's listing read page after page: what its pages held and counted so far, and whether it is
whole (it agrees with its own ``meta``). Pure: the spider carries a :class:`ListingSoFar` from one listing
request to the next (a fleet's next page may be read by another process)."""

from __future__ import annotations

import dataclasses
from typing import Any

from scrapy.http import Response

from crawler.pages import LectureListPage

# Where a listing page's request carries what the pages before it held and counted (see ListingSoFar).
LISTING_SO_FAR_META = "underline_listing_so_far"


@dataclasses.dataclass(frozen=True)
class ListingSoFar:
    """An event's listing up to a page: the entries its pages held (each lecture once, and entries that
    are no lecture), and the most pages and lectures any of their ``meta`` counted. The listing is whole
    when it agrees with them."""

    entries: int = 0
    pages: int | None = None
    lectures: int | None = None

    @classmethod
    def of(cls, response: Response) -> ListingSoFar:
        """What the request of ``response`` carried (nothing for a response without one)."""
        carried = response.meta.get(LISTING_SO_FAR_META) if response.request is not None else None
        try:
            entries, pages, lectures = carried or (0, None, None)
            return cls(int(entries), count_or_none(pages), count_or_none(lectures))
        except (TypeError, ValueError):
            return cls()

    def add(self, page: LectureListPage, fresh: int) -> ListingSoFar:
        """With one more page, of which ``fresh`` lectures were not named by an earlier page."""
        return ListingSoFar(
            self.entries + fresh + page.skipped,
            most_of(self.pages, page.total_pages),
            most_of(self.lectures, page.total_count),
        )


def count_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def most_of(held: int | None, value: int | None) -> int | None:
    return value if held is None else held if value is None else max(held, value)


def listing_whole(last_page: int, so_far: ListingSoFar) -> bool:
    """Whether a listing that ended at ``last_page`` agrees with its own ``meta``: as many pages, and at
    least as many lectures, as any of its pages counted."""
    pages, lectures = so_far.pages, so_far.lectures
    return (pages is None or last_page >= pages) and (lectures is None or so_far.entries >= lectures)
