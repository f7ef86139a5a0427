"""The yardstick a user would write: a plain Scrapy spider doing the crawl's job on each lecture page.

It fetches the listing and lecture pages it is given and, for each lecture page, reads the page's
``__NEXT_DATA__`` JSON (the lecture's id and title), joins the page's visible text and yields one item,
which Scrapy's feed exporter writes as a JSON line (``-O lectures.jsonl``, here ``FEEDS``). No privacy,
cleaning, near-duplicate signatures or staging: what the crawl does beyond this is what it costs beyond
a hand-written spider. The URLs come from a file, as the fetch-only baseline's do, so that both fetch
exactly the crawler's pages (the listing answers are fetched and left unread, like the baseline's).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from scrapy.http import Response

from bench.baseline_spider import BaselineSpider

# Text nodes of the body a reader sees: scripts, styles and noscript fallbacks are not shown.
VISIBLE_TEXT = "//body//text()[not(ancestor::script or ancestor::style or ancestor::noscript)]"


class SameJobSpider(BaselineSpider):
    """The baseline's URLs, read as a user's spider reads them: each lecture page parsed, the listing
    answers left unread."""

    name = "same-job"

    def callback_for(self, url: str) -> Any:
        return self.parse_lecture if "/lecture/" in url else self.fetched

    def parse_lecture(self, response: Response) -> Iterator[dict[str, Any]]:
        next_data = json.loads(response.css("script#__NEXT_DATA__::text").get() or "{}")
        lecture_id, title = lecture_of(next_data)
        text = (t.strip() for t in response.xpath(VISIBLE_TEXT).getall())
        yield {"url": response.url, "id": lecture_id, "title": title, "text": "\n".join(t for t in text if t)}


def lecture_of(next_data: dict[str, Any]) -> tuple[str | None, str | None]:
    """The lecture's id (from the page's slug, ``<id>-<slug>``) and its title (from the document of that
    id among the page's embedded API answers), None where the page does not say."""
    slug = next_data.get("query", {}).get("lectureSlug", "")
    lecture_id = slug.split("-", 1)[0] or None
    fallback = next_data.get("props", {}).get("pageProps", {}).get("fallback", {})
    for document in fallback.values():
        data = document.get("data") if isinstance(document, dict) else None
        if isinstance(data, dict) and data.get("id") == lecture_id:
            return lecture_id, data.get("attributes", {}).get("title")
    return lecture_id, None
