"""The bytes a night spends on documents (slide decks, posters), bounded by a budget of their own beside
the page budget: ``UNDERLINE_SLIDES_BYTE_BUDGET`` (0: no bound; ``NotConfigured`` when documents are not
asked for).

A document request (``request.meta["document_bytes"]``) is refused with ``IgnoreRequest`` once the bytes its
kind downloaded this night reach the budget (:func:`budget_spent`, checked as the request enters the
downloader, so requests queued early wait for the answers before them). Its errback stages the document
as ``waiting``, and the next night asks it whatever its lecture (``crawler.spiders.slide_documents``). The
answers count as they arrive, so the night may pass the budget by the documents already under way, at most
``CONCURRENT_REQUESTS`` of them. In a fleet each worker keeps its own count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest, NotConfigured

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

DOCUMENT_BYTES_META = "document_bytes"
# What the refusal says (the errback names the row ``waiting``).
BYTE_BUDGET_SPENT = "the night's document byte budget is spent"


def budget_spent(spent: int, budget: int) -> bool:
    """Whether a night that downloaded ``spent`` bytes of documents may ask no more (``budget`` 0: never)."""
    return budget > 0 and spent >= budget


class DocumentByteBudget:
    """Refuses document requests once the night's document bytes reach ``UNDERLINE_SLIDES_BYTE_BUDGET``."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.budget = settings.getint("UNDERLINE_SLIDES_BYTE_BUDGET")
        if not settings.getbool("UNDERLINE_SLIDES") or self.budget <= 0:
            raise NotConfigured
        self.stats = crawler.stats
        self.spent = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        if request.meta.get(DOCUMENT_BYTES_META) and budget_spent(self.spent, self.budget):
            raise IgnoreRequest(BYTE_BUDGET_SPENT)

    def process_response(self, request: Request, response: Response) -> Response:
        if request.meta.get(DOCUMENT_BYTES_META):
            # Every answer of a document request counts: 304s and errors too.
            self.spent += len(response.body)
            self.stats.set_value("underline/slides/budget_spent", self.spent)
        return response
