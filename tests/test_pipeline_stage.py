from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.spiders import Spider

from crawler.items import LectureItem
from crawler.pipelines.stage import StagePipeline
from tests.support.settings import project_crawler
from tests.support.staged import read_stage
from tests.test_stage import record


def make(tmp_path: Path) -> StagePipeline:
    return StagePipeline.from_crawler(project_crawler(settings_dict={"STAGE_STATE_DIR": str(tmp_path)}))


def test_items_are_staged_and_a_finished_crawl_is_marked(tmp_path: Path) -> None:
    pipeline = make(tmp_path)
    pipeline.open_spider()
    linking = LectureItem(**record("6"))
    linking.page_aliases = [["5", "http://x/lecture/5"]]
    pipeline.process_item(LectureItem(**record("5")))
    pipeline.process_item(linking)
    pipeline.spider_closed(Spider("underline"), "finished")
    staged = read_stage(tmp_path)
    assert staged.complete
    assert staged.records[0].source_urls == ["http://x/lecture/5", "http://x/lecture/5-t"]
    assert staged.records[1].source_urls == ["http://x/lecture/6-t"]
    assert "page_aliases" not in staged.records[1].values()
    assert staged.summary["lectures"] == 2
    assert pipeline.stats.get_value("stage/lectures") == 2
    assert pipeline.stats.get_value("stage/aliases") == 1


def test_an_interrupted_crawl_is_not_marked_complete(tmp_path: Path) -> None:
    pipeline = make(tmp_path)
    pipeline.open_spider()
    pipeline.process_item(LectureItem(**record("5")))
    pipeline.spider_closed(Spider("underline"), "shutdown")
    assert not read_stage(tmp_path).complete


def test_an_invalid_record_is_counted_not_staged(tmp_path: Path) -> None:
    pipeline = make(tmp_path)
    pipeline.open_spider()
    bad = record("5")
    bad["title"] = None
    with pytest.raises(DropItem, match="title is missing"):
        pipeline.process_item(LectureItem(**bad))
    pipeline.spider_closed(Spider("underline"), "finished")
    assert read_stage(tmp_path).records == []
    assert pipeline.stats.get_value("stage/invalid") == 1


def test_without_a_state_directory_the_step_is_off() -> None:
    with pytest.raises(NotConfigured):
        StagePipeline.from_crawler(project_crawler(settings_dict={"STAGE_STATE_DIR": ""}))
