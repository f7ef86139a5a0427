"""One record per lecture: fingerprint each lecture's content and drop what was already seen.

A lecture reached again (a retry that succeeded twice, a resumed crawl, an alias URL) is passed on
only when it brings something new: changed content or a URL not seen before.

Record-level duplicates are prepared here item by item and decided at publish time, where the whole
crawl is visible (:func:`crawler.publish.summaries.plan_dedup`): each lecture's MinHash signature
is computed once and cached in the state directory, and the same talk under a second id is counted as
it shows up. Candidate near-duplicates are found once, when the spider closes, from the signatures kept
as one compact array (512 bytes a lecture; an LSH index of MinHash objects took about 4 KiB): one
summary line in the log, and the groups in the crawl's statistics (``dedup/near_duplicate_groups``, the
first ``MAX_REPORTED_GROUPS`` of them), which the crawl report keeps.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import numpy as np
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem
from scrapy.statscollectors import StatsCollector

from crawler import stats_keys as keys
from crawler.dedup import near
from crawler.dedup.records import talk_key
from crawler.extensions.workers import WorkerPool, crawler_pool
from crawler.items import LectureItem, to_clean
from crawler.schema import content_sha256

logger = logging.getLogger(__name__)

# The crawl report lists this many candidate groups, each cut to this many ids; the counts cover all.
MAX_REPORTED_GROUPS = 200
MAX_REPORTED_MEMBERS = 20
_INITIAL_ROWS = 1024
# Lectures whose signatures one worker job computes: a job's own cost (sending it, its answer coming back
# to the crawl's loop) is paid once for all of them rather than once a lecture.
SIGNATURE_BATCH = 64


class DedupPipeline:
    def __init__(
        self,
        stats: StatsCollector,
        state_dir: Path | None = None,
        worker: str = "main",
        workers: WorkerPool | None = None,
    ) -> None:
        self.stats = stats
        # Per lecture only what the decisions compare, as small numbers: its row (the lecture's place in
        # the arrays below), and a 64-bit key of each URL it was seen at. Its content hash, its talk key
        # and its signature sit in its row.
        self.rows: dict[str, int] = {}
        self.seen_urls: set[int] = set()
        self.content = np.zeros(_INITIAL_ROWS, dtype=np.uint64)
        # The talk key of each row (0: too short an abstract to tell), and the first lecture of each talk.
        self.talk_keys = np.zeros(_INITIAL_ROWS, dtype=np.uint64)
        self.talks: dict[int, str] = {}
        self.signatures = near.SignatureCache(state_dir, worker)
        # One row per lecture: its latest signature, for the near-duplicate summary at close.
        self.matrix = np.zeros((_INITIAL_ROWS, near.NUM_PERM), dtype=np.uint32)
        # Signatures computed by worker processes (None: here), SIGNATURE_BATCH lectures a job: the texts
        # not yet sent, the jobs under way, and for each row the job that carries its latest text.
        self.workers = workers
        self._batch: list[tuple[int, str | None, str | None]] = []
        self._signing: set[asyncio.Future[list[tuple[str, near.Signature]]]] = set()
        self._latest: dict[int, asyncio.Future[list[tuple[str, near.Signature]]]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DedupPipeline:
        assert crawler.stats is not None
        state_dir = crawler.settings.get("STAGE_STATE_DIR")
        worker = crawler.settings.get("STAGE_WORKER")
        return cls(
            crawler.stats, Path(state_dir) if state_dir else None, str(worker), workers=crawler_pool(crawler)
        )

    def close_spider(self) -> Coroutine[Any, Any, None] | None:
        """Write the signatures and summarize; a coroutine (Scrapy awaits it) while worker processes
        still compute some."""
        self._send_batch()
        if self._signing:
            return self._close_when_signed()
        self._close()
        return None

    async def _close_when_signed(self) -> None:
        await asyncio.gather(*self._signing, return_exceptions=True)
        await asyncio.sleep(0)  # the futures' callbacks run on the loop's next turn
        self._close()

    def _close(self) -> None:
        self.signatures.close()
        self.summarize_near_duplicates()

    def summarize_near_duplicates(self) -> list[list[str]]:
        """Count and report the candidate near-duplicate groups among the lectures seen (one log line)."""
        ids = list(self.rows)
        talks = [int(key) or None for key in self.talk_keys[: len(ids)]]
        groups = near.candidate_groups(ids, self.matrix[: len(ids)], talks)
        lectures = sum(len(g) for g in groups)
        self.stats.set_value(keys.DEDUP_NEAR_DUPLICATE_CANDIDATES, lectures - len(groups))
        self.stats.set_value(keys.DEDUP_NEAR_DUPLICATE_GROUPS_COUNT, len(groups))
        if groups:
            self.stats.set_value(
                keys.DEDUP_NEAR_DUPLICATE_GROUPS,
                [g[:MAX_REPORTED_MEMBERS] for g in groups[:MAX_REPORTED_GROUPS]],
            )
            logger.info(
                "%d lectures in %d groups may be near-duplicates (publishing checks them); the groups are in "
                "the crawl report under dedup/near_duplicate_groups",
                lectures,
                len(groups),
            )
        same = self.stats.get_value(keys.DEDUP_SAME_TALK_SEEN, 0)
        if same:
            logger.info("%d lectures repeat another lecture's title and abstract: merged at publish", same)
        return groups

    def process_item(self, item: Any) -> Any:
        if not to_clean(item):
            return item
        return self.lecture(item)

    def lecture(self, item: LectureItem) -> LectureItem:
        if item.page_aliases:
            item.page_aliases = self._new_aliases(item.page_aliases)
        lecture_id = item.lecture_id
        item.content_sha256 = content_sha256(item.record())
        content = _key64(item.content_sha256)
        new_urls = [u for u in dict.fromkeys(item.source_urls) if self._see_url(lecture_id, u)]
        row = self.rows.get(lecture_id)
        if row is None or self.content[row] != content:
            self.stats.inc_value(keys.DEDUP_UNIQUE if row is None else keys.DEDUP_CHANGED_ON_REFETCH)
            row = self._new_row(lecture_id) if row is None else row
            self.content[row] = content
            self._prepare_record_dedup(item, row)
            return item
        if new_urls or item.page_aliases:
            # The lecture is staged again only for what is new about it: its URLs, or what it links.
            self.stats.inc_value(keys.DEDUP_MERGED_URLS)
            return item
        self.stats.inc_value(keys.DEDUP_DROPPED)
        raise DropItem(f"lecture {lecture_id} already staged with the same content", log_level="DEBUG")

    def _see_url(self, lecture_id: str, url: str) -> bool:
        """Remember that ``url`` belongs to the lecture; False when it was known already."""
        key = hash((lecture_id, url))
        if key in self.seen_urls:
            return False
        self.seen_urls.add(key)
        return True

    def _new_row(self, lecture_id: str) -> int:
        row = self.rows[lecture_id] = len(self.rows)
        if row >= len(self.matrix):
            grown = 2 * len(self.matrix)
            self.matrix = _grown(self.matrix, grown)
            self.content = _grown(self.content, grown)
            self.talk_keys = _grown(self.talk_keys, grown)
        return row

    def _prepare_record_dedup(self, item: LectureItem, row: int) -> None:
        lecture_id = item.lecture_id
        title, abstract = item.title, item.abstract
        key = talk_key(title, abstract)
        talk = _key64(key) if key is not None else 0
        self.talk_keys[row] = talk
        if talk:
            first = self.talks.setdefault(talk, lecture_id)
            if first != lecture_id:
                self.stats.inc_value(keys.DEDUP_SAME_TALK_SEEN)
                logger.debug("lecture %s repeats lecture %s (same title and abstract)", lecture_id, first)
        # Hashing every shingle is the step's main cost: a worker process does it, and the rest of the
        # crawl does not wait for it. Without workers the batch is signed here, in one go: run between
        # the crawl's other steps, one signature at a time cost about twice as much CPU.
        self._batch.append((row, title, abstract))
        if len(self._batch) >= SIGNATURE_BATCH:
            self._send_batch()

    def _send_batch(self) -> None:
        if not self._batch:
            return
        batch, self._batch = self._batch, []
        texts = [(title, abstract) for _, title, abstract in batch]
        if self.workers is None:
            # Every text signed in order, a row's later text last, as one at a time would.
            for (row, _, _), (key, values) in zip(batch, near.keyed_signatures(texts), strict=True):
                self._signed(row, key, values)
            return
        future = self.workers.submit(near.keyed_signatures, texts)
        self._signing.add(future)
        # A row twice in one batch takes its second text's signature.
        rows = {row: at for at, (row, _, _) in enumerate(batch)}
        for row in rows:
            self._latest[row] = future
        future.add_done_callback(functools.partial(self._signed_in_worker, rows))

    def _signed_in_worker(
        self, rows: dict[int, int], future: asyncio.Future[list[tuple[str, near.Signature]]]
    ) -> None:
        self._signing.discard(future)
        # A row whose later text went in a later job takes that job's signature.
        mine = [(row, at) for row, at in rows.items() if self._latest.get(row) is future]
        for row, _ in mine:
            del self._latest[row]
        if future.cancelled():
            return
        error = future.exception()
        if error is not None:
            logger.error("%d near-duplicate signatures could not be computed: %r", len(rows), error)
            return
        signed = future.result()
        for row, at in mine:
            self._signed(row, *signed[at])

    def _signed(self, row: int, text: str, values: near.Signature) -> None:
        if self.signatures.add(text, values):
            self.stats.inc_value(keys.DEDUP_SIGNATURES)
        self.matrix[row] = values

    def _new_aliases(self, aliases: list[list[str]]) -> list[list[str]]:
        """The ``[lecture_id, url]`` pairs whose URL is not yet known for that lecture (as one of its
        URLs or an alias already staged)."""
        kept = []
        for lecture_id, url in aliases:
            if not self._see_url(lecture_id, url):
                self.stats.inc_value(keys.DEDUP_ALIAS_DROPPED)
                continue
            kept.append([lecture_id, url])
        if kept:
            self.stats.inc_value(keys.DEDUP_ALIAS, len(kept))
        return kept


def _key64(hex_digest: str) -> int:
    """The first 64 bits of a hex digest: what the crawl keeps of a content hash or a talk key to tell
    equal from different (two different ones share them with a chance of one in 2**64)."""
    return int(hex_digest[:16], 16)


def _grown(array: np.ndarray, rows: int) -> np.ndarray:
    grown = np.zeros((rows, *array.shape[1:]), dtype=array.dtype)
    grown[: len(array)] = array
    return grown
