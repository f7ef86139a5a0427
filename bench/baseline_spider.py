"""The throughput baseline: fetches a given list of URLs and does nothing with the answers.

Run with the crawler's own Scrapy settings (see ``bench/crawl_child.py``), it is what the crawl would
cost if parsing, cleaning and staging were free: the same robots.txt, middlewares, HTTP cache and
concurrency, no callbacks' work and no items.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy.http import Response


class BaselineSpider(scrapy.Spider):
    name = "baseline"

    def __init__(self, urls_file: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.urls = Path(urls_file).read_text(encoding="utf-8").split()

    async def start(self) -> AsyncIterator[Any]:
        for url in self.urls:
            yield scrapy.Request(url, callback=self.callback_for(url))

    def callback_for(self, url: str) -> Any:
        """What reads the answer of ``url``: nothing, for the baseline."""
        return self.fetched

    def fetched(self, response: Response) -> None:
        return None
