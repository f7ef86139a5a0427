"""Crawl Underline events: read each event's lecture listing through the JSON:API, and fetch a lecture's
page only where the listing says it is new or changed (within UNDERLINE_PAGE_BUDGET requests, when set).
The spider holds Scrapy's callbacks and the glue; the components it owns do the rest (see their modules)."""

from __future__ import annotations

import functools
import math
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider
from scrapy.http import Response, TextResponse
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import task
from twisted.python.failure import Failure

from crawler import stats_keys as keys
from crawler.app.arguments import parse_event_ids
from crawler.cache.httpcache import BodyReader, StoredRead
from crawler.extensions.workers import JobFailed, crawler_pool
from crawler.items import LectureItem
from crawler.json_types import JsonObject
from crawler.pages import (
    LecturePage,
    ListingAnswer,
    PageParseError,
    parse_lecture_page,
    read_listing,
)
from crawler.spiders.lecture_answer import (
    AUTHORS_INCOMPLETE_META,
    COUNTED_META,
    LectureRecords,
    PageAsked,
    content_encoding,
)
from crawler.spiders.listing_reader import LISTING_SO_FAR_META, ListingReader, ListingSoFar
from crawler.spiders.presence import PresenceChecks
from crawler.spiders.refresh import (
    Decision,
    authors_incomplete,
    listing_hashes,
    listing_unchanged,
    revalidation_due,
    with_new_listing_fields,
)
from crawler.spiders.slide_documents import SlideDocuments
from crawler.spiders.spending import BudgetSpending, BudgetTerms, PageBudget
from crawler.spiders.subtitles import SubtitleFiles
from crawler.state.previous_stage import PreviousStage
from crawler.state.stage_index import staged_counts, unfinished_lecture_ids
from crawler.state.withdrawals import Withdrawals
from crawler.urls import API_ACCEPT, canonical_lecture_url, host_of, listing_url

P = ParamSpec("P")
T = TypeVar("T")

MAX_PAGE_SIZE = 100


# How long the release of budgeted page requests waits while the downloader is full.
BACKOUT_PAUSE = 0.05
# How long the crawl may have nothing to do while a listing request is still out before the page budget is
# spent on the listings read (a request that never comes back must not stall the crawl).
QUIET_WAIT = 5.0


class UnderlineSpider(scrapy.Spider):
    """Crawls events' lectures: each event's listing is read through the API, and a lecture's page is
    fetched only when the lecture is new, its listing changed since the last crawl, or its stored page
    is old; every other lecture is carried over from the last finished crawl without a request."""

    name = "underline"

    def __init__(
        self, event_id: str | int | None = None, *args: Any, event_ids: str = "", **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        # ``-a event_ids=502,469`` or ``-a event_id=502``; ids or event page URLs.
        given = [e for e in str(event_ids).split(",") if e.strip()] or [str(event_id or "502")]
        self.event_ids = parse_event_ids(given)
        self.event_id = self.event_ids[0]
        # The base URLs come from the settings (UNDERLINE_WEB_BASE, UNDERLINE_API_BASE) in from_crawler.
        self.web_base = ""
        self.api_base = ""
        self.page_size = MAX_PAGE_SIZE
        # Ids only: each lecture request carries its listing fields, so the crawl keeps no copy of them.
        self.listed: set[str] = set()
        self.already_staged: set[str] = set()
        self.allowed_domains: list[str] = []
        self.state_dir: Path | None = None
        self.refresh = True
        self.revalidate_after = timedelta(days=30)
        self.revalidate_share = 0.0
        self.max_listing_pages = 1
        self.subtitles = False
        self.slides = False
        # UNDERLINE_PAGE_BUDGET: at most this many lecture-page requests (0: no limit).
        self.page_budget = 0
        self.budget = PageBudget()
        # Listing requests sent and not yet answered; the budget is spent once none is left.
        self.listings_pending = 0
        # UNDERLINE_LISTINGS_AT_ONCE: the most events whose listings are read at once (0: no limit).
        self.listings_at_once = 0
        self.spent_before = 0
        self._previous: PreviousStage | None = None
        # What the site said of the lectures the listings no longer name, and the events kept back.
        self.withdrawals = Withdrawals()
        self.fleet = False

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> UnderlineSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        spider.web_base = settings.get("UNDERLINE_WEB_BASE").rstrip("/")
        spider.api_base = settings.get("UNDERLINE_API_BASE").rstrip("/")
        spider.page_size = max(1, min(MAX_PAGE_SIZE, settings.getint("UNDERLINE_PAGE_SIZE")))
        state_dir = settings.get("STAGE_STATE_DIR")
        spider.state_dir = Path(state_dir) if state_dir else None
        if spider.state_dir and settings.getbool("UNDERLINE_RESUME"):
            spider.already_staged = unfinished_lecture_ids(spider.state_dir)
        if spider.state_dir and spider.already_staged and settings.getint("UNDERLINE_PAGE_BUDGET"):
            # What the unfinished crawl this one resumes spent of its page budget: its stage counts it (this
            # crawl's statistics take it in only when the crawl closes).
            spent = staged_counts(
                spider.state_dir,
                settings.get("STAGE_WORKER"),
                (keys.PAGES_FETCHED, keys.PAGES_REVALIDATED),
            )
            spider.spent_before = spent[keys.PAGES_FETCHED] + spent[keys.PAGES_REVALIDATED]
        spider.refresh = settings.getbool("UNDERLINE_REFRESH")
        spider.revalidate_after = timedelta(days=settings.getfloat("UNDERLINE_REVALIDATE_AFTER_DAYS"))
        share = settings.getfloat("UNDERLINE_REVALIDATE_SHARE")
        # A share is of a listing page's lectures: more than all of them (even inf) is all of them.
        spider.revalidate_share = 0.0 if math.isnan(share) else min(1.0, max(0.0, share))
        spider.max_listing_pages = max(1, settings.getint("UNDERLINE_MAX_LISTING_PAGES"))
        spider.subtitles = settings.getbool("UNDERLINE_SUBTITLES")
        spider.slides = settings.getbool("UNDERLINE_SLIDES")
        spider.page_budget = max(0, settings.getint("UNDERLINE_PAGE_BUDGET"))
        # A fleet's listing pages are answered by any of its workers, so no worker can count them.
        spider.fleet = bool(settings.get("STAGE_FLEET"))
        if not spider.fleet:
            spider.listings_at_once = max(0, settings.getint("UNDERLINE_LISTINGS_AT_ONCE"))
        if spider.page_budget > 0:
            # Holds no more lectures than the budget buys (see PageBudget).
            spider.budget = PageBudget(room=spider.budget_terms().pages_left())
        spider.allowed_domains = sorted(
            {scrapy.utils.url.parse_url(u).hostname or "" for u in (spider.web_base, spider.api_base)}
        )
        crawler.signals.connect(spider.request_dropped, signal=signals.request_dropped)
        crawler.signals.connect(spider.budget.close, signal=signals.spider_closed)
        return spider

    @property
    def stats(self) -> Any:
        assert self.crawler.stats is not None
        return self.crawler.stats

    # The components: built when first needed, since the crawl's stats exist only once it runs.

    @functools.cached_property
    def lectures(self) -> LectureRecords:
        """Makes the lecture pages' items."""
        return LectureRecords(
            self.stats,
            self.web_base,
            lambda: self.previous,
            default_event=self.event_id,
            with_subtitles=self.with_subtitles,
            transcripts=self.subtitle_files.carried if self.subtitles else None,
            slides=self.slide_documents.carried,
            logger=self.logger,
        )

    @functools.cached_property
    def listings(self) -> ListingReader:
        """Reads the events' listing pages."""
        return ListingReader(
            self.stats,
            self.withdrawals,
            listed=self.listed,
            already_staged=self.already_staged,
            page_size=self.page_size,
            max_pages=self.max_listing_pages,
            logger=self.logger,
        )

    @functools.cached_property
    def presence(self) -> PresenceChecks:
        """Asks whether a lecture or an event is still on the site (counted in the budget)."""
        return PresenceChecks(
            self.stats,
            self.withdrawals,
            self.api_base,
            answered=self.presence_answered,
            failed=self.presence_failed,
            logger=self.logger,
        )

    @functools.cached_property
    def spending(self) -> BudgetSpending:
        """Spends the page budget on the lectures that need their page."""
        return BudgetSpending(
            self.stats,
            self.budget_terms(),
            self.budget,
            lectures=self.lectures,
            page_request=self.page_request,
            logger=self.logger,
        )

    @functools.cached_property
    def subtitle_files(self) -> SubtitleFiles:
        """Asks for the subtitle files of the lectures fetched, and reads them into transcripts."""
        settings = self.crawler.settings
        return SubtitleFiles(
            self.stats,
            self.api_base if self.subtitles else None,
            site_hosts=(host_of(self.web_base), host_of(self.api_base)),
            asset_hosts=settings.getlist("UNDERLINE_ASSET_HOSTS"),
            max_bytes=settings.getint("UNDERLINE_SUBTITLE_MAX_BYTES"),
            max_tracks=settings.getint("UNDERLINE_MAX_TRACKS_PER_LECTURE"),
            callbacks=(
                self.parse_transcripts,
                self.transcripts_failed,
                self.parse_subtitle_file,
                self.subtitle_file_failed,
            ),
            previous=lambda lecture_id: self.previous.transcripts.rows_of(lecture_id),
            logger=self.logger,
        )

    @functools.cached_property
    def slide_documents(self) -> SlideDocuments:
        """Asks for the slide decks and posters of the lectures read, and reads them into pages. In the
        crawl's own process (no worker pool) the reader gets no memory bound: it would be the crawl's."""
        settings = self.crawler.settings
        in_pool = crawler_pool(self.crawler) is not None
        return SlideDocuments(
            self.stats,
            site_hosts=(host_of(self.web_base), host_of(self.api_base)),
            asset_hosts=settings.getlist("UNDERLINE_ASSET_HOSTS"),
            max_bytes=settings.getint("UNDERLINE_SLIDES_MAX_BYTES"),
            memory_bytes=settings.getint("UNDERLINE_SLIDES_READER_MEMORY") if in_pool else None,
            callbacks=(self.parse_slides_file, self.slides_file_failed) if self.slides else None,
            previous=lambda lecture_id: self.previous.slides.rows_of(lecture_id),
            in_worker=self.in_worker,
            logger=self.logger,
        )

    def budget_terms(self) -> BudgetTerms:
        return BudgetTerms(self.page_budget, self.subtitles, self.spent_before)

    @property
    def previous(self) -> PreviousStage:
        # Read when first needed: by then the stage pipeline has moved a finished stage aside.
        if self._previous is None:
            self._previous = PreviousStage(self.state_dir)
        return self._previous

    def listing_url(self, page: int, event_id: str | None = None) -> str:
        return listing_url(self.api_base, event_id or self.event_id, page, self.page_size)

    def listing_request(
        self, page: int, event_id: str | None = None, so_far: ListingSoFar | None = None
    ) -> scrapy.Request:
        event = event_id or self.event_id
        self.listings_pending += 1
        return scrapy.Request(
            self.listing_url(page, event),
            headers={"Accept": API_ACCEPT},
            callback=self.parse_listing,
            errback=self.fetch_failed,
            cb_kwargs={"page": page, "event_id": event},
            # What the pages before this one held and counted: it travels with the request, since in a
            # fleet another process may read the next page.
            meta={LISTING_SO_FAR_META: so_far or (0, None, None)},
            # Below the lecture pages: the scheduler holds about one listing page of lectures at a
            # time instead of the whole event.
            priority=-10,
        )

    async def start(self) -> AsyncIterator[Any]:
        self.crawler.signals.connect(self.close_if_incomplete, signal=signals.spider_idle)
        for event_id in self.event_ids:
            if self.listings_at_once:
                # An event's listing is read page after page, one request out at a time: the events whose
                # listings are still read are the listing requests out.
                await self.listings_read(below=self.listings_at_once)
            yield self.listing_request(1, event_id)
        if self.fleet:
            # No worker of a fleet reads a whole listing: it asks about no lecture, withdraws nothing.
            return
        # Every listing first: what left them is asked about, and the budget goes to the lectures that
        # need a page most, in every event.
        await self.listings_read()
        base = self.previous.lectures_by_event()
        for request in self.presence.requests(
            base, self.event_ids, self.listed, self.budget_terms().allows_presence
        ):
            yield request
        if self.page_budget <= 0:
            return
        for out in self.spending.spend(self.presence.asked):
            if isinstance(out, scrapy.Request):
                # The subtitle files are paid from what the pages bought leave.
                self.subtitle_files.allowance = self.spending.subtitle_allowance
                await self.room_to_send()
            yield out

    def listing_answered(self) -> None:
        """A listing request was answered (or failed, or was dropped)."""
        self.listings_pending = max(0, self.listings_pending - 1)

    async def listings_read(self, below: int = 1) -> None:
        """Wait until fewer than ``below`` listing requests sent are unanswered (by default: every one is
        answered). Should one never be (a middleware that swallows it), the wait ends once the crawl has
        had nothing else to do for a while."""
        quiet = 0
        while self.listings_pending >= below:
            quiet = quiet + 1 if self.engine_quiet() else 0
            if quiet * BACKOUT_PAUSE >= QUIET_WAIT:
                self.logger.warning(
                    "%d listing requests never came back; the crawl goes on with what was read",
                    self.listings_pending,
                )
                return
            await self.pause()

    def engine_quiet(self) -> bool:
        """Whether nothing is queued, downloading or being handled."""
        engine = self.crawler.engine
        if engine is None:
            return False
        try:
            slot = engine._slot  # the engine names its scheduler nowhere else
            scraper = engine.scraper.slot
            return bool(
                not engine.downloader.active
                and slot is not None
                and not slot.scheduler.has_pending_requests()
                and (scraper is None or scraper.is_idle())
            )
        except AttributeError:
            return False

    async def pause(self) -> None:
        from twisted.internet import reactor

        await maybe_deferred_to_future(task.deferLater(reactor, BACKOUT_PAUSE, lambda: None))

    async def room_to_send(self) -> None:
        """Wait while the downloader is full: the budgeted requests stay on disk, not in the queue."""
        engine = self.crawler.engine
        while engine is not None and engine.spider is not None and engine.needs_backout():
            await self.pause()

    def close_if_incomplete(self) -> None:
        # A crawl that could not read its whole listing cannot tell a withdrawn lecture from an unread
        # one: it must not end as "finished" (never published, and the next crawl resumes it). An
        # event kept back while others were read whole does not hold them back: it is published as it
        # was (see Withdrawals). A fleet worker cannot tell which events another worker read.
        if self.stats.get_value(keys.LISTING_UNBOUNDED):
            raise CloseSpider(keys.LISTING_UNBOUNDED_REASON)
        kept = self.withdrawals.kept_back
        if (self.fleet and self.stats.get_value(keys.LISTING_FAILED)) or (
            kept and all(event in kept for event in self.event_ids)
        ):
            raise CloseSpider(keys.LISTING_INCOMPLETE_REASON)

    async def in_worker(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)``, a pure step, run in a worker process when the crawl has them (see
        WORKER_PROCESSES), else here. Raises ``JobFailed`` when the worker pool gives up on it."""
        workers = crawler_pool(self.crawler)
        if workers is None:
            return fn(*args, **kwargs)
        return await workers.run(fn, *args, **kwargs)

    async def parse_listing(
        self, response: Response, page: int, event_id: str | None = None
    ) -> AsyncIterator[Any]:
        text = response.text if isinstance(response, TextResponse) else None
        try:
            answer = None
            if text is not None:
                answer = await self.in_worker(read_listing, text, base_url=self.api_base)
        except JobFailed as exc:  # logged by the pool; the listing counts as unreadable
            self.logger.error("Listing page %s could not be read in a worker: %s", response.url, exc)
            answer = None
        try:
            for out in self.listing_output(response, answer, page, event_id):
                yield out
        finally:
            self.listing_answered()

    def listing_output(
        self, response: Response, answer: ListingAnswer | None, page: int, event_id: str | None = None
    ) -> Iterator[Any]:
        """What a listing page yields: its sessions, a request or a carried record for each of its
        lectures, and the request for the next listing page. Whatever goes wrong here leaves the
        listing incomplete: the crawl does not end "finished", and nothing is published as withdrawn."""
        event = event_id or self.event_id
        try:
            reader = self.listings
            if page == 1:
                self.stats.set_value(keys.LISTING_STATUS_PREFIX + event, response.status)
            if answer is None:
                reader.not_json(response, page, event)
                return
            listing, sessions, unmapped = answer
            reader.count_page(listing, unmapped, page, event)
            yield from reader.sessions(listing, sessions, event)
            so_far = reader.so_far(response, listing, event)
            new = [fields for fields in listing.records if reader.newly_listed(fields, event)]
            decisions = [self.decide(f) for f in new if not reader.resumed(f)]
            yield from self.fetch_or_carry(decisions, event)
            if reader.goes_on(listing, page, event, so_far, bool(new)):
                yield self.listing_request(page + 1, event, so_far)
        except Exception as exc:  # any failure leaves the rest of the listing unread
            self.stats.inc_value(keys.LISTING_CALLBACK_ERROR)
            self.listings.failed(event, f"listing page {page} could not be handled")
            self.logger.error(
                "Listing page %d of event %s could not be handled (%s: %s); the listing is incomplete",
                page,
                event,
                type(exc).__name__,
                exc,
                exc_info=True,
            )

    def decide(self, fields: LectureItem) -> Decision:
        """Compare a listed lecture with what the last crawl staged of it."""
        hashes = listing_hashes(fields)
        fetched_at = self.previous.fetched_at(fields.lecture_id)
        staged = None
        if fetched_at is not None and self.refresh:
            staged = self.previous.staged(fields.lecture_id)
            if staged is None:
                self.stats.inc_value(keys.PREVIOUS_DAMAGED)
                fetched_at = None  # its page is fetched as a new lecture's
        unchanged = staged is not None and listing_unchanged(staged, fields, hashes)
        return Decision(fields, hashes, fetched_at, staged, unchanged)

    def fetch_or_carry(self, decisions: list[Decision], event: str) -> Iterator[Any]:
        """A request for each lecture that is new, changed or due for revalidation (the oldest first, at
        most UNDERLINE_REVALIDATE_SHARE of a listing page); the previous record for every other one,
        with the fields new to its listing filled from the listing."""
        due = revalidation_due(decisions, self.revalidate_share, self.revalidate_after, datetime.now(UTC))
        for d in decisions:
            lecture_id = d.fields.lecture_id
            # UNDERLINE_REFRESH off: every page is fetched (the previous crawl still stands in for a
            # page that fails).
            if d.unchanged and d.staged is not None and lecture_id not in due:
                record = with_new_listing_fields(d.staged, d.fields, d.hashes)
                self.stats.inc_value(keys.PAGES_CARRIED)
                yield self.lectures.carried(record, d.hashes, [keys.PAGES_CARRIED])
                # A document the last stage has no row of at its URL, or one left for later, is asked.
                yield from self.slide_documents.requests(record, fetched=False)
                continue
            d.fields.listed_in = event
            if self.page_budget > 0:
                yield from self.spending.hold(d)
                continue
            yield self.page_request(d.fields, revalidated=d.unchanged)

    def page_request(self, fields: LectureItem, *, revalidated: bool) -> scrapy.Request:
        """The request for a lecture's page, counted as fetched (new or changed) or revalidated. It
        carries the listing's fields as JSON (another process may read the page: a crawl fleet) and
        whether the listing left some authors' profiles out."""
        decision = keys.PAGES_REVALIDATED if revalidated else keys.PAGES_FETCHED
        self.stats.inc_value(decision)
        return scrapy.Request(
            canonical_lecture_url(self.web_base, fields.lecture_id, fields.slug),
            callback=self.parse_lecture,
            errback=self.fetch_failed,
            cb_kwargs={
                "lecture_id": fields.lecture_id,
                "listing": fields.to_json(),
                "event_id": fields.listed_in,
            },
            meta={COUNTED_META: [decision], AUTHORS_INCOMPLETE_META: authors_incomplete(fields)},
        )

    def presence_answered(self, response: Response, kind: str, resource_id: str, event: str) -> Iterator[Any]:
        self.presence.on_answer(response, kind, resource_id, event)
        yield from ()

    def presence_failed(self, failure: Failure) -> Iterator[Any]:
        self.presence.on_failure(failure)
        yield from ()

    def stored_body_reader(self, request: scrapy.Request, response: Response) -> BodyReader | None:
        """How to read a lecture page in the worker job that stores it in the HTTP cache (see
        ``BoundedFilesystemCacheStorage``): its body is then sent to a worker once. None for any other
        answer, which the spider does not read or reads otherwise."""
        if response.status != 200 or request.callback != self.parse_lecture:
            return None
        return functools.partial(
            parse_lecture_page, url=response.url, encoding=content_encoding(response), base_url=self.api_base
        )

    async def read_page(self, response: Response) -> LecturePage:
        """The lecture page read in a worker process when the crawl has them (see WORKER_PROCESSES): by
        the job that stored it in the HTTP cache when there was one, else by a job of its own. A job the
        worker pool gave up on (it ran too long, or its worker died twice) makes the page unparsable."""
        workers = crawler_pool(self.crawler)
        kept = workers.kept_for(response.request) if workers is not None else None
        try:
            if kept is not None:
                stored: StoredRead = await kept
                # The body read there is the one seen here (no middleware between changed it).
                if stored.stored and stored.body_length == len(response.body):
                    if stored.error is not None:
                        raise stored.error
                    return cast(LecturePage, stored.value)
            body, url, encoding = response.body, response.url, content_encoding(response)
            return await self.in_worker(
                parse_lecture_page, body, url, encoding=encoding, base_url=self.api_base
            )
        except JobFailed as exc:
            raise PageParseError(f"its worker job failed: {exc}") from exc

    async def parse_lecture(self, response: Response, **carried: Any) -> AsyncIterator[Any]:
        """A lecture page's answer. The request carries the ``lecture_id``, the ``event_id`` whose listing
        named it and the ``listing``'s fields as JSON, since another process (a crawl fleet) may have read
        the listing; ``listing_sha`` (requests queued by older crawls) is not used: the listing's hashes
        are computed from ``listing``."""
        page: LecturePage | PageParseError
        try:
            page = await self.read_page(response)
        except PageParseError as exc:
            page = exc
        asked = PageAsked.of(carried, response.meta.get(COUNTED_META) or [])
        for out in self.lectures.output(response, page, asked):
            yield out

    # The callbacks of the subtitle (track list, then file) and document requests of a lecture read.
    def with_subtitles(self, item: LectureItem) -> Iterator[Any]:
        yield from self.subtitle_files.with_tracks(item)
        yield from self.slide_documents.requests(item, fetched=True)

    def parse_transcripts(self, response: Response, item: LectureItem) -> Iterator[Any]:
        return self.subtitle_files.tracks(response, item)

    def transcripts_failed(self, failure: Failure) -> Iterator[Any]:
        return self.subtitle_files.tracks_failed(failure)

    def parse_subtitle_file(self, response: Response, track: JsonObject) -> Iterator[Any]:
        return self.subtitle_files.transcript(response, track)

    def subtitle_file_failed(self, failure: Failure) -> Iterator[Any]:
        return self.subtitle_files.failure(failure)

    def parse_slides_file(self, response: Response, document: JsonObject) -> AsyncIterator[Any]:
        return self.slide_documents.answered(response, document)

    def slides_file_failed(self, failure: Failure) -> Iterator[Any]:
        return self.slide_documents.failure(failure)

    def request_dropped(self, request: scrapy.Request) -> None:
        # The scheduler drops a request for a URL this crawl already requested. When a lecture page's
        # redirect leads there, that is a redirect loop (or a redirect onto another lecture), and the
        # lecture is lost unless counted.
        if request.callback == self.parse_listing:
            self.listing_answered()
            return
        if "lecture_id" not in request.cb_kwargs or not request.meta.get("redirect_times"):
            return
        self.stats.inc_value(keys.FETCH_FAILED)
        self.stats.inc_value("underline/redirect_loop")
        self.logger.warning("Giving up on %s: redirected to a URL already requested", request.url)

    def fetch_failed(self, failure: Failure) -> Iterator[Any]:
        request = getattr(failure, "request", None)
        if request is not None and request.callback == self.parse_listing:
            self.listing_answered()
            self.stats.inc_value(keys.LISTING_GAVE_UP)
            response = getattr(failure.value, "response", None)
            why = f"HTTP {response.status}" if response is not None else failure.getErrorMessage()
            page, event = request.cb_kwargs.get("page"), str(request.cb_kwargs.get("event_id"))
            self.listings.failed(event, f"listing page {page} failed ({why})")
            if page == 1 and response is not None:
                self.stats.set_value(keys.LISTING_STATUS_PREFIX + event, response.status)
            self.logger.error("Listing page %s failed: %s", request.url, failure.getErrorMessage())
            return
        self.stats.inc_value(keys.FETCH_FAILED)
        self.logger.warning("Giving up on %s: %s", getattr(request, "url", "?"), failure.getErrorMessage())
        if request is not None and "lecture_id" in request.cb_kwargs:
            counted = [*(request.meta.get(COUNTED_META) or []), keys.FETCH_FAILED]
            yield from self.lectures.keep_listed(PageAsked.of(request.cb_kwargs, counted))
