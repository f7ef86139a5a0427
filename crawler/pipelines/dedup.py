"""One record per lecture: fingerprint each lecture's content and drop what was already seen.

A lecture reached again (a retry that succeeded twice, a resumed crawl, an alias URL) is passed on
only when it brings something new: changed content or a URL not seen before.

Record-level duplicates are prepared here item by item and decided at publish time, where the whole
crawl is visible (:func:`crawler.dedup.records.merge_duplicates`): each lecture's MinHash signature
is computed once and cached in the state directory, and the same talk under a second id or a
candidate near-duplicate (from an LSH index of the signatures) is counted and logged as it shows up.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from datasketch import MinHashLSH
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem
from scrapy.statscollectors import StatsCollector

from crawler.dedup import near
from crawler.dedup.records import talk_key
from crawler.items import LectureAlias, LectureItem
from crawler.schema import content_sha256, lecture_order

logger = logging.getLogger(__name__)


class DedupPipeline:
    def __init__(self, stats: StatsCollector, state_dir: Path | None = None, worker: str = "main") -> None:
        self.stats = stats
        self.hashes: dict[str, str] = {}
        self.urls: dict[str, set[str]] = {}
        self.talks: dict[str, str] = {}
        self.talk_of: dict[str, str | None] = {}
        self.signatures = near.SignatureCache(state_dir, worker)
        self.lsh = MinHashLSH(threshold=near.LSH_THRESHOLD, num_perm=near.NUM_PERM)
        self.in_lsh: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DedupPipeline:
        assert crawler.stats is not None
        state_dir = crawler.settings.get("STAGE_STATE_DIR")
        worker = crawler.settings.get("STAGE_WORKER")
        return cls(crawler.stats, Path(state_dir) if state_dir else None, str(worker))

    def close_spider(self) -> None:
        self.signatures.close()

    def process_item(self, item: Any) -> Any:
        if isinstance(item, LectureAlias):
            return self._alias(item)
        if not isinstance(item, LectureItem):
            return item
        lecture_id = item["lecture_id"]
        item["content_sha256"] = content_sha256(item)
        known_urls = self.urls.setdefault(lecture_id, set())
        new_urls = set(item.get("source_urls") or []) - known_urls
        previous = self.hashes.get(lecture_id)
        self.hashes[lecture_id] = item["content_sha256"]
        known_urls.update(new_urls)
        if previous is None:
            self.stats.inc_value("dedupe/unique")
            self._prepare_record_dedup(item)
            return item
        if previous != item["content_sha256"]:
            self.stats.inc_value("dedupe/changed_on_refetch")
            self._prepare_record_dedup(item)
            return item
        if new_urls:
            self.stats.inc_value("dedupe/merged_urls")
            return item
        self.stats.inc_value("dedupe/dropped")
        raise DropItem(f"lecture {lecture_id} already staged with the same content", log_level="DEBUG")

    def _prepare_record_dedup(self, item: Any) -> None:
        lecture_id = str(item["lecture_id"])
        title, abstract = item.get("title"), item.get("abstract")
        key = talk_key(item)
        self.talk_of[lecture_id] = key
        if key is not None:
            first = self.talks.setdefault(key, lecture_id)
            if first != lecture_id:
                self.stats.inc_value("dedupe/same_talk_seen")
                logger.info(
                    "lecture %s repeats lecture %s (same title and abstract): merged at publish",
                    lecture_id,
                    first,
                )
        values = near.signature(title, abstract)
        if self.signatures.add(near.text_key(title, abstract), values):
            self.stats.inc_value("dedupe/signatures")
        if lecture_id in self.in_lsh:
            return
        minhash = near.as_minhash(values)
        mates = sorted(
            (m for m in self.lsh.query(minhash) if key is None or self.talk_of.get(m) != key),
            key=lecture_order,
        )
        if mates:
            # Proposed by the signatures alone; publishing checks the exact similarity and decides.
            self.stats.inc_value("dedupe/near_duplicate_candidates")
            logger.info("lecture %s may be a near-duplicate of %s", lecture_id, ", ".join(mates))
        self.lsh.insert(lecture_id, minhash, check_duplication=False)
        self.in_lsh.add(lecture_id)

    def _alias(self, item: Any) -> Any:
        urls = self.urls.setdefault(item["lecture_id"], set())
        if item["url"] in urls:
            self.stats.inc_value("dedupe/alias_dropped")
            raise DropItem(f"alias {item['url']} already staged", log_level="DEBUG")
        urls.add(item["url"])
        self.stats.inc_value("dedupe/alias")
        return item
