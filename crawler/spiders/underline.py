"""Crawl one Underline event: enumerate its lectures through the JSON:API, then fetch each page."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider
from scrapy.http import Response
from twisted.python.failure import Failure
from w3lib.encoding import http_content_type_encoding

from crawler import stats_keys as keys
from crawler.arguments import parse_event_ids
from crawler.items import PAGE_BLOCKS, LectureAlias, LectureItem
from crawler.pages import (
    LectureFields,
    PageParseError,
    parse_lecture_list,
    parse_lecture_page,
)
from crawler.schema import format_timestamp, parse_timestamp
from crawler.stage import unfinished_lecture_ids
from crawler.urls import API_ACCEPT, canonical_lecture_url, lecture_ref, listing_url, same_host

MAX_PAGE_SIZE = 100
# Fields where the page's JSON and the API may disagree; the page wins, the API fills gaps.
CROSS_CHECKED = (
    "title",
    "abstract",
    "keywords",
    "presentation_type",
    "event_id",
    "event_name",
    "session_id",
    "session_name",
    "held_at",
    "published_at",
    "doi",
    "is_premium",
    "authors",
    "video_url",
    "video_doi",
    "paper_url",
    "slides_url",
    "poster_url",
    "is_poster",
)


class UnderlineSpider(scrapy.Spider):
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
        self.seen_links: set[str] = set()
        self.already_staged: set[str] = set()
        self.event_name: str | None = None
        self.allowed_domains: list[str] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> UnderlineSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        spider.web_base = settings.get("UNDERLINE_WEB_BASE").rstrip("/")
        spider.api_base = settings.get("UNDERLINE_API_BASE").rstrip("/")
        spider.page_size = max(1, min(MAX_PAGE_SIZE, settings.getint("UNDERLINE_PAGE_SIZE")))
        state_dir = settings.get("STAGE_STATE_DIR")
        if state_dir and settings.getbool("UNDERLINE_RESUME"):
            spider.already_staged = unfinished_lecture_ids(Path(state_dir))
        spider.allowed_domains = sorted(
            {scrapy.utils.url.parse_url(u).hostname or "" for u in (spider.web_base, spider.api_base)}
        )
        crawler.signals.connect(spider.request_dropped, signal=signals.request_dropped)
        return spider

    def listing_url(self, page: int) -> str:
        return listing_url(self.api_base, self.event_id, page, self.page_size)

    def listing_request(self, page: int) -> scrapy.Request:
        return scrapy.Request(
            self.listing_url(page),
            headers={"Accept": API_ACCEPT},
            callback=self.parse_listing,
            errback=self.fetch_failed,
            cb_kwargs={"page": page},
            priority=10,
        )

    async def start(self) -> AsyncIterator[Any]:
        self.crawler.signals.connect(self.close_if_listing_incomplete, signal=signals.spider_idle)
        yield self.listing_request(1)

    def close_if_listing_incomplete(self) -> None:
        # A crawl that could not read its whole listing cannot tell a withdrawn lecture from an unread
        # one: it must not end as "finished" (never published, and the next crawl resumes it).
        assert self.crawler.stats is not None
        if self.crawler.stats.get_value(keys.LISTING_FAILED):
            raise CloseSpider(keys.LISTING_INCOMPLETE_REASON)

    def parse_listing(self, response: Response, page: int) -> Iterator[Any]:
        assert self.crawler.stats is not None
        stats = self.crawler.stats
        try:
            document = json.loads(response.text)
        except (ValueError, AttributeError, RecursionError):
            stats.inc_value(keys.LISTING_NOT_JSON)
            stats.inc_value(keys.LISTING_FAILED)
            self.logger.error("Listing page %d is not JSON: %s", page, response.url)
            return
        listing = parse_lecture_list(document, base_url=self.api_base)
        stats.inc_value(keys.LISTING_PAGES)
        for problem in listing.problems:
            stats.inc_value("underline/listing_problems")
            self.logger.warning("Listing page %d: %s", page, problem)
        new = 0
        for fields in listing.records:
            if fields.event_id and fields.event_id != self.event_id:
                stats.inc_value("underline/listing_other_event")
                continue
            if fields.lecture_id in self.listed:
                stats.inc_value("underline/listing_repeated")
                continue
            self.listed.add(fields.lecture_id)
            self.event_name = self.event_name or fields.event_name
            new += 1
            stats.inc_value(keys.LISTED)
            if fields.lecture_id in self.already_staged:
                stats.inc_value("underline/resume_skipped")
                continue
            url = canonical_lecture_url(self.web_base, fields.lecture_id, fields.slug)
            yield scrapy.Request(
                url,
                callback=self.parse_lecture,
                errback=self.fetch_failed,
                cb_kwargs={"lecture_id": fields.lecture_id, "listing": listing_to_json(fields)},
            )
        total = listing.total_pages
        # meta.total_pages may lie: a full page goes on even past it, and a page that brings no new
        # lecture ends the listing whatever it claims.
        full = len(listing.records) >= self.page_size
        if new and (total is None or page < total or full):
            if total is not None and page >= total:
                stats.inc_value("underline/listing_past_total_pages")
            yield self.listing_request(page + 1)

    def parse_lecture(
        self, response: Response, lecture_id: str, listing: dict[str, Any] | None = None
    ) -> Iterator[Any]:
        assert self.crawler.stats is not None
        stats = self.crawler.stats
        # The request carries the listing's fields: another process (a crawl fleet) may have read it.
        listed = listing_from_json(listing)
        try:
            page = parse_lecture_page(
                response.body, response.url, encoding=_encoding(response), base_url=self.api_base
            )
        except PageParseError as exc:
            stats.inc_value(keys.PAGE_UNPARSABLE)
            self.logger.warning("Lecture page %s could not be parsed: %s", response.url, exc)
            return
        for problem in page.problems:
            self.logger.info("Lecture page %s: %s", response.url, problem)
        stats.inc_value(keys.extraction_key(page.extraction))
        if page.extraction == "visible_text" and listed is not None:
            # Without the page's JSON the page tells only what its meta tags say (whitespace
            # collapsed, no keywords or session): the API listing's record leads, the page fills gaps.
            fields = merge_fields(listed, page.fields, stats_inc=stats.inc_value)
            if fields is not None and page.fields is not None and not fields.get("related_lecture_ids"):
                fields["related_lecture_ids"] = list(page.fields.related_lecture_ids)
        else:
            fields = merge_fields(page.fields, listed, stats_inc=stats.inc_value)
        if fields is not None:
            # A lecture page reached in this crawl belongs to the crawl's event.
            fields["event_id"] = fields.get("event_id") or self.event_id
            fields["event_name"] = fields.get("event_name") or self.event_name
        if fields is None:
            stats.inc_value(keys.PAGE_WITHOUT_LECTURE)
            self.logger.warning("Lecture page %s shows no lecture", response.url)
            return
        canonical = canonical_lecture_url(self.web_base, fields["lecture_id"], fields.pop("slug", None))
        seen_at = {canonical, response.url, *response.meta.get("redirect_urls", [])}
        item = LectureItem(
            **{k: v for k, v in fields.items() if k in LectureItem.fields},
            url=canonical,
            source_urls=sorted(u for u in seen_at if lecture_ref(u)),
            extraction=page.extraction,
            withdrawn=False,
            fetched_at=datetime.now(UTC),
        )
        item[PAGE_BLOCKS] = page.blocks
        # Aliases go first: once the lecture itself is staged, a resumed crawl skips this page.
        for link in page.lecture_links:
            ref = lecture_ref(link)
            if ref is not None and ref.lecture_id != fields["lecture_id"]:
                if not same_host(link, self.web_base):
                    stats.inc_value("underline/foreign_links")
                    continue
                # Most pages link the same lectures again: each alias is worth one item only.
                if link not in self.seen_links:
                    self.seen_links.add(link)
                    yield LectureAlias(lecture_id=ref.lecture_id, url=link)
        yield item

    def request_dropped(self, request: scrapy.Request) -> None:
        # The scheduler drops a request for a URL this crawl already requested. When a lecture page's
        # redirect leads there, that is a redirect loop (or a redirect onto another lecture), and the
        # lecture is lost unless counted.
        if "lecture_id" not in request.cb_kwargs or not request.meta.get("redirect_times"):
            return
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(keys.FETCH_FAILED)
        self.crawler.stats.inc_value("underline/redirect_loop")
        self.logger.warning("Giving up on %s: redirected to a URL already requested", request.url)

    def fetch_failed(self, failure: Failure) -> None:
        assert self.crawler.stats is not None
        request = getattr(failure, "request", None)
        if request is not None and request.callback == self.parse_listing:
            self.crawler.stats.inc_value(keys.LISTING_FAILED)
            self.logger.error("Listing page %s failed: %s", request.url, failure.getErrorMessage())
            return
        self.crawler.stats.inc_value(keys.FETCH_FAILED)
        self.logger.warning("Giving up on %s: %s", getattr(request, "url", "?"), failure.getErrorMessage())


def listing_to_json(fields: LectureFields) -> dict[str, Any]:
    """A lecture's listing fields as JSON types, to travel in a request's ``cb_kwargs``."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(fields):
        if f.name == "problems":
            continue
        value = getattr(fields, f.name)
        out[f.name] = format_timestamp(value) if isinstance(value, datetime) else value
    return out


def listing_from_json(data: Any) -> LectureFields | None:
    """The fields :func:`listing_to_json` wrote; None for anything else."""
    if not isinstance(data, dict) or not isinstance(data.get("lecture_id"), str):
        return None
    names = {f.name for f in dataclasses.fields(LectureFields)} - {"problems"}
    values = {k: v for k, v in data.items() if k in names}
    try:
        for name in ("held_at", "published_at"):
            values[name] = parse_timestamp(values.get(name))
        return LectureFields(**values)
    except (TypeError, ValueError):
        return None


def _encoding(response: Response) -> str | None:
    """The charset the Content-Type header declares, None for none or an unknown one.

    Not Scrapy's ``response.encoding``: for a page that declares nothing it guesses from the bytes, and
    one invalid UTF-8 byte turns the guess into a single-byte code page for the whole page. The parser
    falls back to a BOM, the page's meta charset, then UTF-8.
    """
    content_type = response.headers.get("Content-Type")
    if not content_type:
        return None
    return http_content_type_encoding(content_type.decode("latin-1"))


def merge_fields(
    page: LectureFields | None,
    listed: LectureFields | None,
    stats_inc: Any = None,
) -> dict[str, Any] | None:
    """The lecture's fields from its page, cross-checked with (and gaps filled from) the API listing."""
    if page is None and listed is None:
        return None
    source = page if page is not None else listed
    assert source is not None
    primary = {**source.to_item_fields(), "slug": source.slug}
    if page is not None and listed is not None:
        secondary = {**listed.to_item_fields(), "slug": listed.slug}
        for name in CROSS_CHECKED:
            mine, theirs = primary.get(name), secondary.get(name)
            if mine in (None, "", []) and theirs not in (None, "", []):
                primary[name] = theirs
                if stats_inc:
                    stats_inc(f"underline/filled_from_api/{name}")
            elif theirs not in (None, "", []) and mine != theirs and stats_inc:
                stats_inc(f"underline/api_mismatch/{name}")
        if not primary.get("slug"):
            primary["slug"] = secondary.get("slug")
    # A page that does not say (no package, no label) and no listing to ask: not premium.
    primary["is_premium"] = bool(primary.get("is_premium"))
    return primary
