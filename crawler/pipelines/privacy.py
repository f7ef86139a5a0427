"""No e-mail address (written, spoken or spelled) and no phone number is ever stored: every string field of
a lecture (its aliases included), of a session and of a transcript is scrubbed
(:func:`crawler.privacy.scrub.scrub_text`, URLs with :func:`crawler.privacy.emails.scrub_url`).

Runs after normalize (so addresses hidden with invisible characters in normalized fields are already
plain) and before boilerplate, whose ``text`` is built from the page blocks scrubbed here. Sessions (their
name and description, as the listing tells them) go to the stage too, so they go through the same scrub.
The counts (``privacy/emails_scrubbed``, per field, per session field) count the phone numbers replaced
with the addresses.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scrapy.crawler import Crawler
from scrapy.statscollectors import StatsCollector

from crawler import stats_keys as keys
from crawler.items import LectureItem, SessionItem, TranscriptItem, to_clean
from crawler.privacy.scrub import (
    RECORD_URL_FIELDS,
    scrub_fields,
    scrub_value,
    strings_in,
    texts_to_scrub,
    values_may_hold_address,
)
from crawler.schema import FIELD_NAMES, Transcript
from crawler.state.stage_rows import StagedRow

# What of a lecture item is scrubbed: its record, and the page's blocks and links that travel beside it.
SCRUBBED = (*FIELD_NAMES, "page_blocks", "page_aliases")
URL_FIELDS = RECORD_URL_FIELDS | {"page_aliases"}
# Most strings of a lecture came with an earlier one too: the site's navigation, labels and footer among
# the page's blocks, related lectures' teasers, event, session and author names. Strings up to
# CLEAN_MAX_CHARS found free of any personal data are remembered (up to CLEAN_STRINGS of them, then forgotten
# all at once), so that each is searched once per crawl rather than once per page.
CLEAN_MAX_CHARS = 2000
CLEAN_STRINGS = 16384


class PrivacyPipeline:
    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats
        self.clean: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PrivacyPipeline:
        assert crawler.stats is not None
        return cls(crawler.stats)

    def process_item(self, item: Any) -> Any:
        if isinstance(item, SessionItem):
            return self._session(item)
        if isinstance(item, StagedRow) and isinstance(item.record, Transcript):
            return self.transcript(item)
        if not to_clean(item):
            return item
        return self.lecture(item)

    def lecture(self, item: LectureItem) -> LectureItem:
        if not self._may_hold_address(getattr(item, name) for name in SCRUBBED):
            return item  # nearly every lecture: one search of its new strings, not one per field
        scrubbed, counts = scrub_fields({name: getattr(item, name) for name in SCRUBBED}, URL_FIELDS)
        for name in counts:
            setattr(item, name, scrubbed[name])
        # Blocks are not stored, they only feed ``text``: counted apart, so the total counts each stored
        # address once.
        blocks = counts.pop("page_blocks", 0)
        if blocks:
            self.stats.inc_value(keys.PRIVACY_EMAILS_SCRUBBED_PAGE_BLOCKS, blocks)
        self._count(counts, keys.PRIVACY_FIELDS_PREFIX, keys.PRIVACY_ITEMS_SCRUBBED)
        return item

    def _count(self, counts: dict[str, int], prefix: str, scrubbed_key: str) -> None:
        """Each stored field's count under ``prefix``, their total, and one more record scrubbed."""
        for name, count in counts.items():
            self.stats.inc_value(prefix + name, count)
        if counts:
            self.stats.inc_value(keys.PRIVACY_EMAILS_SCRUBBED, sum(counts.values()))
            self.stats.inc_value(scrubbed_key)

    def _may_hold_address(self, values: Iterable[object]) -> bool:
        """:func:`values_may_hold_address` of ``values``, searching only strings not known to be clean.

        Exact: whether a string holds personal data depends on that string alone (see
        :func:`texts_to_scrub`)."""
        strings: list[str] = []
        for value in values:
            strings_in(value, strings)
        clean = self.clean
        new = list(set(strings).difference(clean))
        found = texts_to_scrub(new)
        if len(clean) + len(new) > CLEAN_STRINGS:
            clean.clear()
        clean.update(s for s in new if len(s) <= CLEAN_MAX_CHARS and s not in found)
        return bool(found)

    def transcript(self, item: TranscriptItem) -> TranscriptItem:
        """A transcript's text and its segments' (the parser redacted addresses and numbers said across
        cues already; this is the scrub every stored string passes)."""
        transcript = item.record
        if not values_may_hold_address([transcript.text, *(s["text"] for s in transcript.segments)]):
            return item  # nearly every track: one search of all its text
        stored = 0
        if transcript.text is not None:
            transcript.text, count = scrub_value(transcript.text)
            stored += count
        for segment in transcript.segments:
            segment["text"], count = scrub_value(segment["text"])
            stored += count
        if stored:
            self.stats.inc_value(keys.PRIVACY_FIELDS_PREFIX + "transcripts", stored)
            self.stats.inc_value(keys.PRIVACY_EMAILS_SCRUBBED, stored)
        return item

    def _session(self, item: Any) -> Any:
        scrubbed, counts = scrub_fields(item)
        for name in counts:
            item[name] = scrubbed[name]
        self._count(counts, keys.PRIVACY_SESSION_FIELDS_PREFIX, keys.PRIVACY_SESSIONS_SCRUBBED)
        return item
