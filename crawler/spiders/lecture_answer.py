"""What a lecture page's answer becomes: its fields merged with, and checked against, the listing's fields
its request carried; the lecture item; and the record a listed lecture keeps when its page fails."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from scrapy.http import Response
from scrapy.statscollectors import StatsCollector
from w3lib.encoding import http_content_type_encoding

from crawler import stats_keys as keys
from crawler.items import LectureItem, SlidesItem, TranscriptItem
from crawler.pages import LecturePage, PageParseError
from crawler.pages.fields import ITEM_FIELD_NAMES
from crawler.schema import LISTING_ONLY_EXTRACTION, Lecture
from crawler.spiders.refresh import (
    DISAGREED,
    LISTING_NAMES,
    complete_authors,
    listing_hashes,
    merge_fields,
    with_listing_volatiles,
)
from crawler.state.previous_stage import PreviousStage
from crawler.urls import canonical_lecture_url, lecture_ref, same_host

# Where a request for a lecture page carries the counters its decision added (fetched or revalidated).
COUNTED_META = "underline_counted"
# Set on that request when the listing left some of the lecture's authors' profiles out.
AUTHORS_INCOMPLETE_META = "underline_authors_incomplete"


@dataclasses.dataclass
class PageAsked:
    """What a lecture page's request carried: the lecture it was asked for, its listing's fields (None:
    not carried, or unreadable), the event whose listing named it, and the counters its outcome added
    (they travel with its item into the stage)."""

    lecture_id: str
    listed: LectureItem | None
    event_id: str | None
    counted: list[str]

    @classmethod
    def of(cls, carried: Mapping[str, Any], counted: Iterable[str]) -> PageAsked:
        """What the request's ``cb_kwargs`` (``carried``) say, with the counters added so far."""
        listed = LectureItem.read_json(carried.get("listing"))
        return cls(carried["lecture_id"], listed, carried.get("event_id"), list(counted))

    def count(self, stats: StatsCollector, key: str) -> None:
        stats.inc_value(key)
        self.counted.append(key)


def content_encoding(response: Response) -> str | None:
    """The charset the Content-Type header declares, None for none or an unknown one.

    Not Scrapy's ``response.encoding``: for a page that declares nothing it guesses from the bytes, and
    one invalid UTF-8 byte turns the guess into a single-byte code page for the whole page. The parser
    falls back to a BOM, the page's meta charset, then UTF-8.
    """
    content_type = response.headers.get("Content-Type")
    if not content_type:
        return None
    return http_content_type_encoding(content_type.decode("latin-1"))


@dataclasses.dataclass(eq=False)
class LectureRecords:
    """Turns the spider's lecture pages into items. ``previous`` gives the last crawl's stage (read when
    first needed), ``default_event`` the event of a lecture no listing or page places, ``with_subtitles``
    the spider's step that yields an item (with its subtitles' request first when asked for),
    ``transcripts`` and ``slides`` the last stage's rows a carried lecture carries (no transcripts: None),
    ``logger`` the spider's."""

    stats: StatsCollector
    web_base: str
    previous: Callable[[], PreviousStage]
    _: dataclasses.KW_ONLY
    default_event: str
    with_subtitles: Callable[[LectureItem], Iterator[Any]]
    transcripts: Callable[[str], list[TranscriptItem]] | None
    slides: Callable[[str], list[SlidesItem]]
    logger: logging.LoggerAdapter[logging.Logger]
    seen_links: set[str] = dataclasses.field(default_factory=set)

    def output(
        self, response: Response, page: LecturePage | PageParseError, asked: PageAsked
    ) -> Iterator[Any]:
        """What a fetched lecture page yields: the lecture item (or the listed record when the page
        fails), and its subtitles request when asked for."""
        if isinstance(page, PageParseError):
            asked.count(self.stats, keys.PAGE_UNPARSABLE)
            self.logger.warning("Lecture page %s could not be parsed: %s", response.url, page)
            yield from self.keep_listed(asked)
            return
        for problem in page.problems:
            self.logger.info("Lecture page %s: %s", response.url, problem)
        if page.fields is not None and page.fields.lecture_id != asked.lecture_id:
            # The page describes another lecture: neither its fields nor this URL belong to that one.
            asked.count(self.stats, keys.PAGE_LECTURE_MISMATCH)
            asked.count(self.stats, keys.FETCH_FAILED)
            self.logger.warning(
                "Lecture page %s shows lecture %s, not %s",
                response.url,
                page.fields.lecture_id,
                asked.lecture_id,
            )
            yield from self.keep_listed(asked)
            return
        asked.count(self.stats, keys.EXTRACTION_PREFIX + page.extraction)
        disagreed: set[str] = set()
        fields = self.page_fields(response, page, asked, disagreed)
        if fields is None:
            asked.count(self.stats, keys.PAGE_WITHOUT_LECTURE)
            self.logger.warning("Lecture page %s shows no lecture", response.url)
            yield from self.keep_listed(asked)
            return
        hashes = listing_hashes(asked.listed) if asked.listed is not None else None
        if hashes is not None:
            # A page that disagrees with its listing may lag it: fetched again next time.
            for name in disagreed:
                hashes[LISTING_NAMES.get(name, name)] = DISAGREED
        seen_at = {response.url, *response.meta.get("redirect_urls", [])}
        item = self.lecture_item(fields, page.extraction, hashes, seen_at, asked.counted)
        item.page_blocks = list(page.blocks)
        # The linked lectures ride with the item (one item a page, not one per link); the stage writes
        # them before the lecture, so a resumed crawl that skips this page has them already.
        item.page_aliases = self.new_aliases(page.lecture_links, fields.lecture_id)
        yield from self.with_subtitles(item)

    def page_fields(
        self, response: Response, page: LecturePage, asked: PageAsked, disagreed: set[str]
    ) -> LectureItem | None:
        """The lecture's fields from its page and its listing (the fields where both say and differ are
        added to ``disagreed``); None when neither shows a lecture."""
        listed = asked.listed
        count = functools.partial(asked.count, self.stats)
        if page.extraction == "visible_text" and listed is not None:
            # Without the page's JSON the page tells only what its meta tags say (whitespace
            # collapsed, no keywords or session): the API listing's record leads, the page fills gaps.
            fields = merge_fields(listed, page.fields, stats_inc=count)
            if fields is not None and page.fields is not None and not fields.related_lecture_ids:
                fields.related_lecture_ids = list(page.fields.related_lecture_ids)
        else:
            fields = merge_fields(page.fields, listed, stats_inc=count, mismatched=disagreed)
        if fields is None:
            return None
        fields = with_listing_volatiles(fields, listed)
        if response.meta.get(AUTHORS_INCOMPLETE_META) and not complete_authors(page.fields):
            # The site left some authors' profiles out: the lecture keeps its last authors.
            last = self.previous().staged(asked.lecture_id)
            kept = last.authors if last is not None else None
            if kept:
                fields.authors = list(kept)
                count(keys.AUTHORS_KEPT)
        # A lecture page reached through an event's listing belongs to that event unless it says.
        fields.event_id = fields.event_id or asked.event_id or self.default_event
        return fields

    def new_aliases(self, links: Iterable[str], lecture_id: str) -> list[list[str]]:
        """The page's links to other lectures of this site that no page of this crawl showed before, as
        (lecture id, URL) pairs: most pages link the same lectures again, and each alias is staged once."""
        aliases = []
        for link in links:
            if link in self.seen_links:  # most links: one lookup instead of reading the URL twice
                continue
            ref = lecture_ref(link)
            if ref is None or ref[0] == lecture_id:
                continue
            if not same_host(link, self.web_base):
                self.stats.inc_value("underline/foreign_links")
                continue
            self.seen_links.add(link)
            aliases.append([ref[0], link])
        return aliases

    def lecture_item(
        self,
        fields: LectureItem,
        extraction: str,
        hashes: dict[str, str] | None,
        seen_at: set[str],
        counted: list[str] | None = None,
    ) -> LectureItem:
        canonical = canonical_lecture_url(self.web_base, fields.lecture_id, fields.slug)
        record = fields.parsed_record()
        # A source that does not say (no package, no label) and no other to ask: not premium.
        record.is_premium = bool(record.is_premium)
        return LectureItem(
            **{name: getattr(record, name) for name in ITEM_FIELD_NAMES},
            url=canonical,
            source_urls=sorted(u for u in {canonical, *seen_at} if lecture_ref(u)),
            extraction=extraction,
            withdrawn=False,
            fetched_at=datetime.now(UTC),
            listing_hashes=hashes or None,
            counted=list(counted or []),
        )

    def carried(
        self, record: Lecture, listing_hashes: Mapping[str, str] | None, counted: list[str]
    ) -> LectureItem:
        """A lecture staged again as the last crawl staged it, with the transcripts and documents it staged
        of it."""
        kept = self.transcripts(record.lecture_id) if self.transcripts is not None else []
        return LectureItem.carried_over(
            record,
            listing_hashes=dict(listing_hashes) if listing_hashes is not None else None,
            counted=counted,
            transcripts=kept,
            slides=self.slides(record.lecture_id),
        )

    def keep_listed(self, asked: PageAsked) -> Iterator[Any]:
        """A listed lecture whose page failed keeps its last record, or takes the listing's fields: it
        is still on the site, and is never published as withdrawn for a page that did not answer."""
        record = self.previous().staged(asked.lecture_id)
        counted = [*asked.counted, keys.PAGE_FAILED_KEPT]
        if record is not None:
            self.stats.inc_value(keys.PAGE_FAILED_KEPT)
            # No listing hashes: the next crawl fetches the page again.
            yield self.carried(record, None, counted)
            return
        fields = merge_fields(asked.listed, None)
        if fields is None:
            return
        self.stats.inc_value(keys.PAGE_FAILED_KEPT)
        fields.event_id = fields.event_id or asked.event_id or self.default_event
        yield self.lecture_item(fields, LISTING_ONLY_EXTRACTION, None, set(), counted)
