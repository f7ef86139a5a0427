"""A release is written one event at a time: the rows held at once are one event's, not the catalogue's."""

from __future__ import annotations

import gc
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path

import datasets  # noqa: F401  (imported before measuring: its import is not what is measured)
import pyarrow.parquet as pq
import pytest

from crawler import schema
from crawler.publish import events as release_events
from crawler.publish.events import PublishOptions
from crawler.publish.release import publish_events
from crawler.schema import Lecture
from tests.test_publish_parquet import PROVENANCE, make_record

LECTURES_PER_EVENT = 60
# Each lecture carries this much text (not a column the release summarizes), so that rows held at once
# show in the traced memory.
TEXT_CHARS = 20_000


@dataclass
class MadeEvents:
    """Events of equal size whose lectures are made when asked for, counting how many were made."""

    events: int
    asked: list[str] = field(default_factory=list)

    def event_ids(self) -> list[str]:
        return [str(600 + e) for e in range(self.events)]

    def event_of(self) -> dict[str, str]:
        return {self._id(e, i): str(600 + e) for e in range(self.events) for i in range(LECTURES_PER_EVENT)}

    def _id(self, event: int, index: int) -> str:
        return str(140_000 + event * LECTURES_PER_EVENT + index)

    def lectures_of(self, event_id: str) -> list[Lecture]:
        self.asked.append(event_id)
        event = int(event_id) - 600
        out = []
        for index in range(LECTURES_PER_EVENT):
            lecture_id = self._id(event, index)
            record = make_record(index, lecture_id=lecture_id, event_id=event_id, event_name=f"Event {event}")
            record["text"] = f"{lecture_id} " + "x" * TEXT_CHARS
            record["content_sha256"] = schema.content_sha256(record)
            out.append(Lecture.from_json(record))
        return out


def traced_peak(events: int, out: Path) -> tuple[int, MadeEvents]:
    """The peak of Python memory while publishing ``events`` events, above what was held before."""
    source = MadeEvents(events)
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        publish_events(source, out, PublishOptions(name="emnlp", provenance=PROVENANCE))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before, source


def test_publishing_four_events_holds_about_what_publishing_one_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The change rows are merged a few at a time; these events are small, so the few are fewer.
    monkeypatch.setattr(release_events, "CHANGE_CHUNK_ROWS", 8)
    monkeypatch.setattr(release_events, "CHANGE_PART_ROWS", 4)
    # A first publish fills the caches (templates, datasets' modules) that the next ones find full.
    publish_events(MadeEvents(1), tmp_path / "warm", PublishOptions(name="emnlp", provenance=PROVENANCE))
    # One against four: three events held too many already stand well above the bound (measured: rows
    # kept across events add 4.2 MB, the publish as it is 45 kB). More events cost the suite time: the
    # release check loads each event's config and each load reads the whole card, under tracing.
    small, _ = traced_peak(1, tmp_path / "one")
    large, source = traced_peak(4, tmp_path / "four")
    # Every event was asked for once, in order, and written whole.
    assert source.asked == [str(600 + e) for e in range(4)]
    rows = pq.read_table(tmp_path / "four" / "data" / "lectures").num_rows
    assert rows == 4 * LECTURES_PER_EVENT
    one_event = LECTURES_PER_EVENT * TEXT_CHARS
    # Holding every event's rows at once would add three events' text (about 3.6 MB) to the peak.
    assert large - small < 2 * one_event, (small, large)
