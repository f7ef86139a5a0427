"""The duplicate decisions taken from per-lecture summaries are those taken from whole records."""

from __future__ import annotations

import random
from pathlib import Path

from crawler.publish.summaries import StagedEvents, plan_dedup
from crawler.schema import Lecture, content_sha256
from crawler.state.stage import StageWriter
from crawler.state.stage_index import index_stage
from tests.support.dedup import merge_duplicates
from tests.support.staged import read_stage
from tests.test_dedup_records import ABSTRACT, OTHER, track
from tests.test_stage import record

LONG = (
    f"{OTHER} We show that segmenting by pauses keeps sentences whole, that translating each segment with"
    " its neighbours as context lowers the error rate on four language pairs, and that the method needs"
    " no retraining of the translation model, only a light segmenter trained on a few hours of audio."
)
WORDS = [
    "model",
    "data",
    "language",
    "task",
    "method",
    "result",
    "training",
    "evaluation",
    "benchmark",
    "system",
]


def staged_talks(state: Path) -> None:
    """A stage with one talk under three ids, near-duplicates (an abstract revised by a word or two), a
    talk staged twice and many distinct talks."""
    rng = random.Random(7)
    records = [
        record(
            "130500",
            title="Alignment",
            abstract=ABSTRACT,
            subtitles=[track("130500", "de"), track("9", "en")],
        ),
        record("130100", title=" alignment ", abstract=ABSTRACT.upper(), event_id="469", subtitles=None),
        record(
            "130900", title="Alignment", abstract=ABSTRACT, alternate_ids=["77"], subtitles=[track("9", "en")]
        ),
        record("20", title="Speech", abstract=LONG),
        record("21", title="Speech", abstract=LONG.replace("recordings", "the recordings")),
        record("22", title="Speech", abstract=LONG.replace("We show", "We find")),
        record("20", title="Speech", abstract=LONG, fetched="2026-01-02T00:00:00Z"),
    ]
    for index in range(60):
        abstract = " ".join(rng.choices(WORDS, k=40))
        records.append(record(str(300 + index), title=f"Talk {index}", abstract=abstract))
    writer = StageWriter(state)
    writer.open()
    for item in records:
        item["content_sha256"] = content_sha256(item)
        writer.write_lecture(Lecture.from_json(item))
    writer.write_aliases([("130500", "http://x/lecture/130500")])
    writer.close(complete=True)


def test_summaries_decide_what_merge_duplicates_decides(tmp_path: Path) -> None:
    staged_talks(tmp_path)
    staged = read_stage(tmp_path).records
    expected, report = merge_duplicates(staged, published={"130900"})
    index = index_stage(tmp_path)
    plan = plan_dedup(index.lecture_ids(), index.lecture, signatures={}, published={"130900"})
    events = StagedEvents(index, plan)
    found = [lec for event in events.event_ids() for lec in events.lectures_of(event)]
    by_id = {lec.lecture_id: lec for lec in found}
    assert sorted(by_id) == sorted(r.lecture_id for r in expected)
    for row in expected:
        assert by_id[row.lecture_id] == row, row.lecture_id
    assert plan.report.merges == report.merges
    assert plan.report.clusters == report.clusters
    assert plan.report.summary() == report.summary()
    # The decisions are not empty: a talk under three ids became one, the revised abstracts cluster.
    assert by_id["130900"].alternate_ids == ["77", "130100", "130500"]
    assert "http://x/lecture/130500" in by_id["130900"].source_urls
    assert by_id["130900"].subtitles == [track("9", "en"), track("130500", "de")]
    assert {by_id[i].near_duplicate_cluster for i in ("20", "21", "22")} == {"20"}
