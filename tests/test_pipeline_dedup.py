from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scrapy.exceptions import DropItem

from crawler.dedup import near
from crawler.items import LectureItem
from crawler.pipelines.dedup import MAX_REPORTED_MEMBERS, DedupPipeline
from crawler.schema import content_sha256
from tests.support.settings import project_crawler
from tests.test_stage import record


def item(lecture_id: str, **extra: Any) -> Any:
    fields = record(lecture_id, **extra)
    del fields["content_sha256"]
    return LectureItem(**fields)


@pytest.fixture
def pipeline() -> DedupPipeline:
    return DedupPipeline.from_crawler(project_crawler(settings_dict={"STAGE_STATE_DIR": ""}))


def test_first_sighting_passes_with_its_content_hash(pipeline: DedupPipeline) -> None:
    out = pipeline.process_item(item("1"))
    assert out.content_sha256 == content_sha256(record("1"))
    assert pipeline.stats.get_value("dedup/unique") == 1


def test_same_content_again_is_dropped(pipeline: DedupPipeline) -> None:
    pipeline.process_item(item("1"))
    with pytest.raises(DropItem, match="already staged"):
        pipeline.process_item(item("1", fetched="2026-02-02T00:00:00Z"))
    assert pipeline.stats.get_value("dedup/dropped") == 1


def test_a_new_url_or_new_content_passes(pipeline: DedupPipeline) -> None:
    pipeline.process_item(item("1"))
    assert pipeline.process_item(item("1", source_urls=["http://x/lecture/1"])).lecture_id == "1"
    assert pipeline.process_item(item("1", title="Changed")).title == "Changed"
    assert pipeline.stats.get_value("dedup/merged_urls") == 1
    assert pipeline.stats.get_value("dedup/changed_on_refetch") == 1


def test_each_alias_passes_once(pipeline: DedupPipeline) -> None:
    url = "http://x/events/1/posters/2/poster/1-t"
    first = item("3")
    first.page_aliases = [["1", url], ["1", url]]
    assert pipeline.process_item(first).page_aliases == [["1", url]]
    # A URL the lecture itself was fetched at is not staged again as an alias.
    pipeline.process_item(item("2"))
    second = item("4")
    second.page_aliases = [["1", url], ["2", "http://x/lecture/2-t"], ["2", "http://x/lecture/2"]]
    assert pipeline.process_item(second).page_aliases == [["2", "http://x/lecture/2"]]
    assert pipeline.stats.get_value("dedup/alias") == 2
    assert pipeline.stats.get_value("dedup/alias_dropped") == 3


def test_a_repeated_page_passes_again_only_for_new_aliases(pipeline: DedupPipeline) -> None:
    pipeline.process_item(item("1"))
    again = item("1")
    again.page_aliases = [["2", "http://x/lecture/2"]]
    assert pipeline.process_item(again).page_aliases == [["2", "http://x/lecture/2"]]
    once_more = item("1")
    once_more.page_aliases = [["2", "http://x/lecture/2"]]
    with pytest.raises(DropItem, match="already staged"):
        pipeline.process_item(once_more)


ABSTRACT = (
    "We present a simple method for aligning large language models with human preferences using a small"
    " set of annotated comparisons and show that it improves helpfulness on three benchmarks."
)


def test_signatures_are_cached_in_the_state_directory(tmp_path: Path) -> None:
    crawler = project_crawler(settings_dict={"STAGE_STATE_DIR": str(tmp_path), "STAGE_WORKER": "w2"})
    step = DedupPipeline.from_crawler(crawler)
    step.process_item(item("1", abstract=ABSTRACT))
    step.process_item(item("1", abstract=ABSTRACT, title="Changed"))
    step.process_item(item("2", abstract=ABSTRACT))
    step.close_spider()
    cached = near.load_signatures(tmp_path)
    assert sorted(cached) == sorted({near.text_key("Title 1", ABSTRACT), near.text_key("Changed", ABSTRACT),
                                     near.text_key("Title 2", ABSTRACT)})  # fmt: skip
    assert [p.name for p in (tmp_path / "minhash").iterdir()] == ["w2.jsonl"]
    assert step.stats.get_value("dedup/signatures") == 3


def test_the_same_talk_and_near_duplicates_are_counted(pipeline: DedupPipeline) -> None:
    pipeline.process_item(item("1", abstract=ABSTRACT, title="Alignment"))
    pipeline.process_item(item("2", abstract=ABSTRACT, title="Alignment"))
    pipeline.process_item(item("3", abstract=ABSTRACT.replace("simple", "robust"), title="Alignment"))
    pipeline.process_item(item("4", abstract="Something else entirely, about speech and long audio files."))
    assert pipeline.stats.get_value("dedup/same_talk_seen") == 1
    pipeline.close_spider()
    assert pipeline.stats.get_value("dedup/signatures") == 3
    # 1 and 2 are one talk; 3 differs by a word: one group of three, two candidates beyond its first.
    assert pipeline.stats.get_value("dedup/near_duplicate_groups") == [["1", "2", "3"]]
    assert pipeline.stats.get_value("dedup/near_duplicate_groups_count") == 1
    assert pipeline.stats.get_value("dedup/near_duplicate_candidates") == 2


def test_one_talk_under_two_ids_alone_is_no_near_duplicate_group(pipeline: DedupPipeline) -> None:
    pipeline.process_item(item("1", abstract=ABSTRACT, title="Alignment"))
    pipeline.process_item(item("2", abstract=ABSTRACT, title="Alignment"))
    pipeline.close_spider()
    assert pipeline.stats.get_value("dedup/near_duplicate_groups") is None
    assert pipeline.stats.get_value("dedup/near_duplicate_candidates") == 0


def test_many_near_duplicates_make_one_log_line(
    pipeline: DedupPipeline, caplog: pytest.LogCaptureFixture
) -> None:
    words = ABSTRACT.split()
    count = 400
    with caplog.at_level(logging.DEBUG, logger="crawler.pipelines.dedup"):
        for n in range(count):
            # Each copy changes one word: every one is a candidate of every other.
            edited = [*words[:-3], f"variant{n}", *words[-2:]]
            pipeline.process_item(item(str(1000 + n), abstract=" ".join(edited), title="Alignment"))
        pipeline.close_spider()
    info = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert info == [
        f"{count} lectures in 1 groups may be near-duplicates (publishing checks them); the groups are in "
        "the crawl report under dedup/near_duplicate_groups"
    ]
    assert pipeline.stats.get_value("dedup/near_duplicate_candidates") == count - 1
    assert pipeline.stats.get_value("dedup/near_duplicate_groups") == [
        [str(1000 + n) for n in range(MAX_REPORTED_MEMBERS)]
    ]


def test_signatures_are_kept_in_a_compact_array_that_grows(pipeline: DedupPipeline) -> None:
    for n in range(1500):
        pipeline.process_item(item(str(n), abstract=f"{ABSTRACT} {n}"))
    pipeline.close_spider()  # signs the last lectures, fewer than a batch
    assert pipeline.matrix.shape == (2048, near.NUM_PERM)
    assert pipeline.matrix.nbytes == 2048 * 512
    assert (pipeline.matrix[1499] == near.signature("Title 1499", f"{ABSTRACT} 1499")).all()


def test_crawling_imports_neither_datasketch_nor_scipy() -> None:
    # A fresh interpreter: this one has imported them for other tests.
    probe = (
        "import json, sys\n"
        "import crawler.pipelines.dedup, crawler.spiders.underline\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('datasketch', 'scipy'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert json.loads(result.stdout) == []


def test_signatures_from_a_worker_come_in_batches_and_each_row_takes_its_latest() -> None:
    import asyncio

    from scrapy.statscollectors import MemoryStatsCollector

    from crawler.extensions.workers import WorkerPool
    from crawler.pipelines.dedup import SIGNATURE_BATCH

    crawler = project_crawler(settings_dict={"STAGE_STATE_DIR": ""})
    stats = MemoryStatsCollector(crawler)
    pool = WorkerPool(1, 60.0, stats=stats)
    step = DedupPipeline(stats, workers=pool)
    count = SIGNATURE_BATCH + 10

    async def crawl() -> None:
        pool.start()
        try:
            for n in range(count):
                step.process_item(item(str(n), abstract=f"{ABSTRACT} {n}"))
            # Lecture 0 changes twice after its first text went out with the first batch: both changes go in
            # the second batch, and only the last of the three texts is signed.
            step.process_item(item("0", abstract=f"{ABSTRACT} first change"))
            step.process_item(item("0", abstract=f"{ABSTRACT} second change"))
            closing = step.close_spider()
            assert closing is not None
            await closing
        finally:
            pool.close()

    try:
        asyncio.run(crawl())
    finally:
        assert pool.wait_stopped(15)
    signed = count + 2
    assert stats.get_value("workers/jobs") == -(-signed // SIGNATURE_BATCH) == 2
    assert stats.get_value("dedup/signatures") == count
    assert (step.matrix[0] == near.signature("Title 0", f"{ABSTRACT} second change")).all()
    for n in range(1, count):
        assert (step.matrix[n] == near.signature(f"Title {n}", f"{ABSTRACT} {n}")).all(), f"{n=}"


def test_without_workers_signatures_are_signed_a_batch_at_a_time(tmp_path: Path) -> None:
    from crawler.pipelines.dedup import SIGNATURE_BATCH

    crawler = project_crawler(settings_dict={"STAGE_STATE_DIR": str(tmp_path)})
    step = DedupPipeline.from_crawler(crawler)
    assert step.workers is None
    texts = [(f"Title {n}", f"{ABSTRACT} {n}") for n in range(SIGNATURE_BATCH + 3)]
    for n, (_, abstract) in enumerate(texts[: SIGNATURE_BATCH - 1]):
        step.process_item(item(str(n), abstract=abstract))
    assert step.stats.get_value("dedup/signatures") is None
    assert not step.matrix.any()
    # Lecture 0 changes before its batch is signed: both its texts are signed, in the order they came, and
    # its row keeps the later one.
    step.process_item(item("0", abstract=f"{ABSTRACT} changed"))
    assert step.stats.get_value("dedup/signatures") == SIGNATURE_BATCH
    for n, (_, abstract) in enumerate(texts[SIGNATURE_BATCH - 1 :], start=SIGNATURE_BATCH - 1):
        step.process_item(item(str(n), abstract=abstract))
    assert step.stats.get_value("dedup/signatures") == SIGNATURE_BATCH
    step.close_spider()
    assert step.stats.get_value("dedup/signatures") == len(texts) + 1
    assert (step.matrix[0] == near.signature("Title 0", f"{ABSTRACT} changed")).all()
    for n, (title, abstract) in enumerate(texts[1:], start=1):
        assert (step.matrix[n] == near.signature(title, abstract)).all(), f"case {n}"
    lines = [json.loads(line) for line in (tmp_path / "minhash" / "main.jsonl").read_text().splitlines()]
    signed = [
        *texts[: SIGNATURE_BATCH - 1],
        ("Title 0", f"{ABSTRACT} changed"),
        *texts[SIGNATURE_BATCH - 1 :],
    ]
    assert [line["key"] for line in lines] == [near.text_key(t, a) for t, a in signed]
    assert lines[0]["sig"] == near.encode_signature(near.signature(*texts[0]))
