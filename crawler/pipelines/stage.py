"""Append each lecture to the crawl's state directory, so that ``eventcrawl publish`` can run later.

A crawl alone marks the stage ``COMPLETE`` when it finishes. A fleet worker (``STAGE_FLEET`` names the class
that speaks for the fleet; the frontier add-on sets it) writes to the stage of the fleet's run, counts what
it stages toward the fleet's total, and only the close that completes the fleet's crawl marks the stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.statscollectors import StatsCollector
from scrapy.utils.misc import build_from_crawler, load_object

from crawler import stats_keys as keys
from crawler.items import LectureItem, SessionItem, SlidesItem, TranscriptItem
from crawler.schema import Transcript
from crawler.schema.check import validate_record
from crawler.state.layout import COMPLETE
from crawler.state.stage import StageWriter
from crawler.state.stage_rows import SLIDES_ROWS, TRANSCRIPT_ROWS, StagedRow
from crawler.state.withdrawals import SUMMARY_KEY as WITHDRAWALS_KEY
from crawler.state.withdrawals import Withdrawals


class StageFleet(Protocol):
    """The workers of a fleet sharing one stage, as the stage pipeline sees them."""

    def join(self) -> str:
        """Join the fleet's crawl; returns the run whose stage this worker appends to."""
        ...

    def count_staged(self) -> None:
        """Count one lecture this worker staged toward the fleet's total."""
        ...

    def completion(self, reason: str, *, marked: bool) -> dict[str, Any] | None:
        """The fleet's part of the ``COMPLETE`` summary when this worker's close completes the stage (the
        stage already *marked* complete or not), else None."""
        ...


class StagePipeline:
    def __init__(
        self, state_dir: Path, worker: str, stats: StatsCollector, fleet: StageFleet | None = None
    ) -> None:
        self.writer = StageWriter(state_dir, worker)
        self.stats = stats
        self.fleet = fleet

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StagePipeline:
        settings = crawler.settings
        state_dir = settings.get("STAGE_STATE_DIR")
        if not state_dir:
            raise NotConfigured("STAGE_STATE_DIR is not set")
        assert crawler.stats is not None
        fleet_class = settings.get("STAGE_FLEET")
        fleet = build_from_crawler(load_object(fleet_class), crawler) if fleet_class else None
        pipeline = cls(Path(state_dir), settings.get("STAGE_WORKER"), crawler.stats, fleet)
        crawler.signals.connect(pipeline.spider_closed, signal=signals.spider_closed)
        return pipeline

    def open_spider(self) -> None:
        self.writer.open(self.fleet.join() if self.fleet is not None else None)
        if self.writer.previous_moved:
            self.stats.set_value(keys.STAGE_PREVIOUS_MOVED, True)
        if self.writer.resumed:
            self.stats.set_value(keys.STAGE_RESUMED, True)
        if self.writer.torn_bytes_dropped:
            self.stats.set_value(keys.STAGE_TORN_BYTES_DROPPED, self.writer.torn_bytes_dropped)

    def process_item(self, item: Any) -> Any:
        if isinstance(item, SessionItem):
            self.writer.write_session(dict(item))
            self.stats.inc_value(keys.STAGE_SESSIONS)
            return item
        if isinstance(item, StagedRow):
            if not self._stage_row(item):
                self.stats.inc_value(keys.STAGE_INVALID)
                what = (
                    f"transcript {item.record.subtitle_url!r}"
                    if isinstance(item.record, Transcript)
                    else f"slides {item.record.url!r}"
                )
                raise DropItem(f"{what} not staged: the schema refuses it")
            return item
        if not isinstance(item, LectureItem):
            return item
        carried = item.carried
        record = item.record()
        aliases = [(lecture_id, url) for lecture_id, url in item.page_aliases]
        problems = validate_record(record)
        if problems:
            self.stats.inc_value(keys.STAGE_INVALID)
            if aliases:  # what the page linked is still staged
                self.writer.write_aliases(aliases)
                self.stats.inc_value(keys.STAGE_ALIASES, len(aliases))
            raise DropItem(f"lecture {record.get('lecture_id')!r} not staged: {'; '.join(problems)}")
        self.writer.write_lecture(item, aliases=aliases)
        # Staged as the last crawl staged them: a line the schema refuses now is left out, counted.
        carried_rows: list[TranscriptItem | SlidesItem] = [*item.carried_transcripts, *item.carried_slides]
        for row in carried_rows:
            if not self._stage_row(row):
                self.stats.inc_value(keys.STAGE_INVALID)
        if aliases:
            self.stats.inc_value(keys.STAGE_ALIASES, len(aliases))
        self.stats.inc_value(keys.STAGE_LECTURES)
        if carried:
            self.stats.inc_value(keys.STAGE_CARRIED)
        if self.fleet is not None:
            self.fleet.count_staged()
        return item

    def _stage_row(self, item: TranscriptItem | SlidesItem) -> bool:
        """Stage a transcript or a document the schema takes (False, staging nothing, for one it
        refuses)."""
        transcript = isinstance(item.record, Transcript)
        rows = TRANSCRIPT_ROWS if transcript else SLIDES_ROWS
        if validate_record(item.record.to_json(), rows.fields):
            return False
        self.writer.write_row(rows, item.record, item.validators)
        self.stats.inc_value(keys.STAGE_TRANSCRIPTS if transcript else keys.STAGE_SLIDES)
        return True

    def spider_closed(self, spider: Spider, reason: str) -> None:
        staged = self.stats.get_value(keys.STAGE_LECTURES, 0)
        summary: dict[str, Any] = {
            "reason": reason,
            "worker": self.writer.worker,
            "event_ids": list(getattr(spider, "event_ids", ())),
            "web_base": getattr(spider, "web_base", None),
        }
        if self.fleet is None:
            complete = reason == "finished"
            summary["lectures"] = staged
            withdrawals = getattr(spider, "withdrawals", None)
            if isinstance(withdrawals, Withdrawals):
                # What the site said of the lectures that left the listings: all a release may withdraw.
                summary[WITHDRAWALS_KEY] = withdrawals.to_json()
        else:
            summary["worker_lectures"] = staged
            fleet = self.fleet.completion(reason, marked=(self.writer.directory / COMPLETE).exists())
            complete = fleet is not None
            summary.update(fleet or {})
        self.writer.close(complete=complete, summary=summary)
