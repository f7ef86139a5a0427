"""The documents of the lectures the crawl reads: one request per slide deck or poster a lecture names,
what its answer makes of the document (a :class:`~crawler.schema.Slides` row), and what a document that
cannot be asked keeps.

A document is asked when its lecture is fetched (new, changed, or revalidated), and for a lecture carried
unchanged only when the last stage has no row of it at its current URL, or one left for later (``waiting``:
the night's byte budget was spent; ``failed``: no answer). Every other carried lecture carries its rows
from the last stage. A document is asked as :mod:`crawler.spiders.asset_files` says (a PDF is read,
redacted and staged, never stored raw): a 304 keeps the staged row. The PDF is read in a worker process
(:mod:`crawler.slides`), under the pool's job timeout and a memory bound.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar

import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.statscollectors import StatsCollector
from twisted.python.failure import Failure

from crawler import stats_keys as keys
from crawler.extensions.workers import JobFailed, JobTimedOut
from crawler.items import SlidesItem
from crawler.json_types import JsonObject
from crawler.middlewares.byte_budget import BYTE_BUDGET_SPENT, DOCUMENT_BYTES_META
from crawler.privacy.rule import PRIVACY_RULE
from crawler.publish.tables import SLIDES
from crawler.schema import Lecture, Slides, listed_documents
from crawler.schema.sources import GONE_STATUSES
from crawler.slides.document import ReadDocument, read_document
from crawler.spiders.asset_files import FileRows, asset_file_request, failure_problem, response_validators
from crawler.state.stage_rows import PRIVACY_RULE_KEY
from crawler.urls import subtitle_host_allowed

P = ParamSpec("P")
T = TypeVar("T")

# Problems that leave a document to be asked again on the next night, its lecture unchanged or not.
ASK_AGAIN = frozenset({"waiting", "failed"})


def document_json(lecture: Lecture, document: str, url: str) -> JsonObject:
    """What a document request carries of its row (JSON, so that a fleet's queue can hold it)."""
    return {"lecture_id": lecture.lecture_id, "event_id": lecture.event_id, "document": document, "url": url}


def slides_from(document: Mapping[str, Any], **values: Any) -> Slides:
    """The document's row with ``values`` (pages, problem, ...) set."""
    return Slides(
        lecture_id=str(document["lecture_id"]),
        event_id=document.get("event_id"),
        document=str(document["document"]),
        url=str(document["url"]),
        **values,
    )


def pdf_answer(response: Response) -> bool:
    """Whether an answer may be the PDF asked for: not an HTML page (a maintenance or login page served
    with 200 says nothing of the file). The body decides: one that starts as a PDF (``%PDF-``, within its
    first KiB as readers allow) is read whatever its Content-Type."""
    head = response.body[:1024]
    if b"%PDF-" in head:
        return True
    lowered = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if lowered.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        return False
    kind = (response.headers.get(b"Content-Type") or b"").split(b";")[0].strip().lower()
    return kind not in (b"text/html", b"application/xhtml+xml")


def document_problem(failure: Failure) -> str:
    """Why a document request brought no file: ``waiting`` when the night's byte budget held it back, else
    as a subtitle file's (``too_large``, ``off_host``, ``robots``, ``failed``)."""
    if isinstance(failure.value, IgnoreRequest) and BYTE_BUDGET_SPENT in str(failure.value):
        return "waiting"
    return failure_problem(failure)


@dataclasses.dataclass(eq=False)
class SlideDocuments(FileRows[SlidesItem]):
    """The spider's requests for lectures' documents and the rows their answers make (None ``callbacks``:
    documents are not asked for). ``callbacks`` are the spider's (a request's callbacks must be the
    spider's methods): a document's answer and its failure; ``previous(lecture_id)`` gives the last stage's
    rows of a lecture with their validators; ``in_worker`` runs a pure step in the crawl's worker pool."""

    table = SLIDES
    matched = ("document", "url")
    label = "Document"
    kept_unreadable_key = "underline/slides/kept_unreadable"
    carried_key = keys.SLIDES_CARRIED

    stats: StatsCollector
    _: dataclasses.KW_ONLY
    site_hosts: tuple[str, ...]
    asset_hosts: Sequence[str]
    max_bytes: int
    memory_bytes: int | None
    callbacks: tuple[Callable[..., Any], Callable[..., Any]] | None
    previous: Callable[[str], list[SlidesItem]]
    in_worker: Callable[..., Any]
    logger: logging.LoggerAdapter[logging.Logger]

    @property
    def enabled(self) -> bool:
        return self.callbacks is not None

    def requests(self, lecture: Lecture, *, fetched: bool) -> Iterator[Any]:
        """A request for each document ``lecture`` names: all of them when its page was fetched, else only
        those the last stage has no row of at their URL, or left for later (:data:`ASK_AGAIN`)."""
        if not self.enabled:
            return
        before = {s.record.document: s for s in self.previous(lecture.lecture_id)}
        for kind, url in listed_documents(lecture):
            staged = before.get(kind)
            if staged is not None and staged.record.url != url:
                staged = None
            if not fetched and staged is not None and staged.record.problem not in ASK_AGAIN:
                continue
            document = document_json(lecture, kind, url)
            if not subtitle_host_allowed(url, self.site_hosts, self.asset_hosts):
                self.stats.inc_value(keys.SLIDES_PROBLEM_PREFIX + "off_host")
                self.logger.warning("Not fetching document %s: not on the site's or an asset host", url)
                yield self.evidence(SlidesItem(record=slides_from(document, problem="off_host")))
                continue
            yield self.request(url, document, staged.validators if staged is not None else {})

    def request(self, url: str, document: JsonObject, validators: Mapping[str, str]) -> scrapy.Request:
        assert self.callbacks is not None
        answered, failed = self.callbacks
        request = asset_file_request(
            url,
            callback=answered,
            errback=failed,
            cb_kwargs={"document": document},
            validators=validators,
            max_bytes=self.max_bytes,
            meta={DOCUMENT_BYTES_META: True},
        )
        self.stats.inc_value(keys.SLIDES_ASKED)
        return request

    def carried(self, lecture_id: str) -> list[SlidesItem]:
        """The last stage's rows of a lecture carried without a request (none when documents are off)."""
        return super().carried(lecture_id) if self.enabled else []

    async def answered(self, response: Response, document: Mapping[str, Any]) -> AsyncIterator[SlidesItem]:
        """What a document's answer makes of its row."""
        yield self.settled(await self.read(response, document))

    async def read(self, response: Response, document: Mapping[str, Any]) -> SlidesItem:
        now = datetime.now(UTC)
        if response.status == 304:
            kept = self.kept(document)
            if kept is not None:
                self.stats.inc_value("underline/slides/unchanged")
                return kept
            return self.unreadable(document, "failed", now)
        if response.status in GONE_STATUSES:
            self.stats.inc_value("underline/slides/not_found")
            return SlidesItem(record=slides_from(document, problem="not_found", fetched_at=now))
        body = response.body
        self.stats.inc_value(keys.SLIDES_BYTES, len(body))
        if not pdf_answer(response):
            # An HTML page where a PDF was asked: no evidence of the file (its validators kept, so that
            # the same answer is not downloaded again).
            return self.unreadable(document, "unreadable", now, response_validators(response))
        try:
            found: ReadDocument = await self.in_worker(read_document, body, memory_bytes=self.memory_bytes)
        except JobTimedOut:
            found = ReadDocument(None, "timed_out")
        except JobFailed:  # its worker died twice: a file that takes a reader down is not read
            found = ReadDocument(None, "unreadable")
        record = slides_from(
            document,
            bytes=len(body),
            sha256=hashlib.sha256(body).hexdigest(),
            problem=found.problem,
            fetched_at=now,
        )
        if found.pages is not None:
            record = record.with_pages(list(found.pages))
            self.stats.inc_value(keys.SLIDES_READ)
        if found.problem:
            self.stats.inc_value(keys.SLIDES_PROBLEM_PREFIX + found.problem)
        if found.redactions:
            self.stats.inc_value("underline/slides/redacted", found.redactions)
        validators = {**response_validators(response), PRIVACY_RULE_KEY: PRIVACY_RULE}
        return self.evidence(SlidesItem(record=record, validators=validators))

    def unreadable(
        self,
        document: Mapping[str, Any],
        problem: str,
        now: datetime,
        validators: Mapping[str, str] | None = None,
    ) -> SlidesItem:
        """A document whose answer was no file: its last stage's row when there is one with text, else a
        row without text naming the ``problem``."""
        self.stats.inc_value(keys.SLIDES_PROBLEM_PREFIX + problem)
        record = slides_from(document, problem=problem, fetched_at=now)
        return self.evidence(SlidesItem(record=record, validators=dict(validators or {})))

    def failure(self, failure: Failure) -> Iterator[SlidesItem]:
        """A document request that brought no file: no evidence, so the document keeps the text the last
        stage read; one read for the first time gets its row without text, saying why (``waiting``: asked
        on the next night)."""
        request = getattr(failure, "request", None)
        document = request.cb_kwargs.get("document") if request is not None else None
        if not isinstance(document, Mapping):
            return
        problem = document_problem(failure)
        if problem == "waiting":
            self.stats.inc_value("underline/slides/waiting")
        else:
            self.logger.warning("Document %s: %s (%s)", document.get("url"), problem, failure.value)
        yield self.unreadable(document, problem, datetime.now(UTC))
