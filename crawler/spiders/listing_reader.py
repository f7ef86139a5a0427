"""An event's listing read page by page in the crawl: what each page counts, which of its lectures are
listed for the first time, and whether the listing goes on, ends whole, or is incomplete (then the event is
kept back: nothing of it is withdrawn or replaced)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from typing import Any

from scrapy.http import Response
from scrapy.statscollectors import StatsCollector

from crawler import stats_keys as keys
from crawler.items import SessionItem
from crawler.pages import INVALID_ORCID, LectureItem, LectureListPage, SessionFields, UnknownAttribute
from crawler.schema import format_timestamp
from crawler.spiders.presence import keep_back
from crawler.spiders.refresh import authors_incomplete
from crawler.state.withdrawals import Withdrawals

# Where a listing page's request carries what the pages before it held and counted (a fleet's next page may
# be read by another process): the entries they held (each lecture once, and entries that are no lecture),
# and the most pages and lectures any of their ``meta`` counted (None: none did). The listing is whole when
# it agrees with them.
LISTING_SO_FAR_META = "underline_listing_so_far"
ListingSoFar = tuple[int, int | None, int | None]


def _count_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _most_of(held: int | None, value: int | None) -> int | None:
    return value if held is None else held if value is None else max(held, value)


@dataclasses.dataclass(eq=False)
class ListingReader:
    """Reads the spider's listing pages: ``listed`` holds the ids of the lectures listed so far (the
    spider's), ``already_staged`` those the unfinished crawl this one resumes staged, ``page_size`` and
    ``max_pages`` how the listing is asked for (UNDERLINE_PAGE_SIZE, UNDERLINE_MAX_LISTING_PAGES),
    ``logger`` is the spider's."""

    stats: StatsCollector
    withdrawals: Withdrawals
    _: dataclasses.KW_ONLY
    listed: set[str]
    already_staged: set[str]
    page_size: int
    max_pages: int
    logger: logging.LoggerAdapter[logging.Logger]
    # Per event, the ids its listing pages named (of any event) in this process: a page repeated is not
    # counted twice toward what the listing's meta counts.
    listing_ids: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    seen_sessions: set[str] = dataclasses.field(default_factory=set)

    def failed(self, event: str, why: str) -> None:
        """The listing of ``event`` could not be read whole: nothing of it is withdrawn or replaced."""
        self.stats.inc_value(keys.LISTING_FAILED)
        keep_back(self.stats, self.withdrawals, event, why)

    def not_json(self, response: Response, page: int, event: str) -> None:
        self.stats.inc_value(keys.LISTING_NOT_JSON)
        self.failed(event, f"listing page {page} is not JSON")
        self.logger.error("Listing page %d of event %s is not JSON: %s", page, event, response.url)

    def count_page(
        self, listing: LectureListPage, unmapped: dict[str, UnknownAttribute], page: int, event: str
    ) -> None:
        """Count a listing page read, its problems and the lecture attributes it holds that the crawler
        does not map, with one example each: a renamed attribute shows up as a new one beside the field
        that emptied."""
        self.stats.inc_value(keys.LISTING_PAGES)
        for problem in listing.problems:
            self.stats.inc_value("underline/listing_problems")
            self.logger.warning("Listing page %d of event %s: %s", page, event, problem)
        for name, unknown in unmapped.items():
            self.stats.inc_value(keys.UNMAPPED_ATTRIBUTE + name, unknown.count)
            if self.stats.get_value(keys.UNMAPPED_EXAMPLE + name) is None:
                self.stats.set_value(keys.UNMAPPED_EXAMPLE + name, unknown.example)

    def so_far(self, response: Response, listing: LectureListPage, event: str) -> ListingSoFar:
        """What the event's listing held and counted up to this page: what its request carried (nothing for
        a response without one), with this page."""
        named = self.listing_ids.setdefault(event, set())
        fresh = {f.lecture_id for f in listing.records} - named
        named |= fresh
        carried = response.meta.get(LISTING_SO_FAR_META) if response.request is not None else None
        try:
            entries, pages, lectures = carried or (0, None, None)
            entries, pages, lectures = int(entries), _count_or_none(pages), _count_or_none(lectures)
        except (TypeError, ValueError):
            entries, pages, lectures = 0, None, None
        return (
            entries + len(fresh) + listing.skipped,
            _most_of(pages, listing.total_pages),
            _most_of(lectures, listing.total_count),
        )

    def newly_listed(self, fields: LectureItem, event: str) -> bool:
        """Whether the listing of ``event`` names a lecture of its own not listed before in this crawl
        (counted, with what its listing fields lack)."""
        stats = self.stats
        if fields.event_id and fields.event_id != event:
            stats.inc_value(keys.LISTING_OTHER_EVENT)
            return False
        if fields.lecture_id in self.listed:
            stats.inc_value("underline/listing_repeated")
            return False
        self.listed.add(fields.lecture_id)
        stats.inc_value(keys.LISTED)
        stats.inc_value(keys.LISTED_PREFIX + event)
        for problem in fields.problems:
            if problem.startswith(INVALID_ORCID):
                stats.inc_value(keys.ORCID_INVALID)
        if authors_incomplete(fields):
            stats.inc_value(keys.AUTHORS_INCOMPLETE)
            stats.inc_value(keys.AUTHORS_INCOMPLETE_PREFIX + event)
        return True

    def resumed(self, fields: LectureItem) -> bool:
        """Whether the unfinished crawl this one resumes staged the lecture already."""
        if fields.lecture_id not in self.already_staged:
            return False
        self.stats.inc_value("underline/resume_skipped")
        return True

    def goes_on(
        self, listing: LectureListPage, page: int, event: str, so_far: ListingSoFar, listed_new: bool
    ) -> bool:
        """Whether to ask for the event's next listing page; else the listing is judged whole or
        incomplete. ``listed_new``: this page named a lecture not listed before."""
        stats = self.stats
        total, size = listing.total_pages, len(listing.records)
        # The last page counted too: an empty answer where meta promises lectures is no end of the listing.
        if size == 0 and total is not None and page <= total:
            stats.inc_value(keys.LISTING_EMPTY_PAGE)
            self.failed(event, f"listing page {page} of {total} came back empty")
            self.logger.error(
                "Listing page %d of event %s holds no lectures although its meta counts %d pages; the "
                "listing is incomplete",
                page,
                event,
                total,
            )
        # An empty or repeated page ends the listing, unless its meta says more pages follow.
        more = listed_new or (total is not None and page < total)
        if (
            more
            and not stats.get_value(keys.LISTING_UNBOUNDED)
            and self.next_page_wanted(total, size, page, event)
        ):
            return True
        if not stats.get_value(keys.LISTING_UNBOUNDED):
            self.ended(page, event, so_far)
        return False

    def ended(self, page: int, event: str, so_far: ListingSoFar) -> None:
        """The event's listing read to its end: it is whole when it agrees with its own ``meta`` (as many
        pages, and at least as many lectures, as any of its pages counted); else it is incomplete."""
        seen, pages, lectures = so_far
        if (pages is None or page >= pages) and (lectures is None or seen >= lectures):
            return
        self.stats.inc_value(keys.LISTING_SHORT)
        self.failed(event, f"the listing ended after {page} pages and {seen} lectures")
        self.logger.error(
            "The listing of event %s ended after %d pages and %d lectures, but its meta counts %s pages "
            "and %s lectures; the listing is incomplete",
            event,
            page,
            seen,
            "no" if pages is None else pages,
            "no" if lectures is None else lectures,
        )

    def next_page_wanted(self, total: int | None, size: int, page: int, event: str) -> bool:
        """Whether to ask for the next listing page. ``meta.total_pages`` may lie: a full page goes on
        even past it, but not more than one page past it, nor past UNDERLINE_MAX_LISTING_PAGES."""
        if not (total is None or page < total or size >= self.page_size):
            return False
        if total is not None and page >= total:
            self.stats.inc_value("underline/listing_past_total_pages")
        cap = self.max_pages if total is None else min(self.max_pages, total + 1)
        if page < cap:
            return True
        self.stats.inc_value(keys.LISTING_UNBOUNDED)
        self.logger.error(
            "The listing of event %s did not end after %d pages (its meta says %s); nothing will be "
            "published from this crawl. If the event really has more lectures, raise "
            "UNDERLINE_MAX_LISTING_PAGES (now %d).",
            event,
            page,
            total if total is not None else "nothing",
            self.max_pages,
        )
        return False

    def sessions(
        self, listing: LectureListPage, sessions: list[SessionFields], event: str
    ) -> Iterator[SessionItem]:
        """The event's sessions the page names, each once in the crawl. A session is the event's when a
        lecture of the event names it: one of another event's lecture that strayed into this listing is
        not."""
        own = {f.session_id for f in listing.records if f.event_id in (None, event)}
        for session in (s for s in sessions if s.session_id in own):
            if session.session_id in self.seen_sessions:
                continue
            self.seen_sessions.add(session.session_id)
            yield SessionItem(
                session_id=session.session_id,
                event_id=event,
                name=session.name,
                description=session.description,
                start=format_timestamp(session.starts_at),
                end=format_timestamp(session.ends_at),
            )
