from __future__ import annotations

import copy
from typing import Any

import pytest

from crawler.items import LectureItem
from crawler.pipelines.boilerplate import BoilerplatePipeline
from crawler.pipelines.normalize import NormalizePipeline
from crawler.pipelines.privacy import PrivacyPipeline
from crawler.text.privacy import PLACEHOLDER, URL_PLACEHOLDER
from tests.support.settings import project_crawler
from tests.test_stage import record

R = PLACEHOLDER


def lecture(**extra: Any) -> Any:
    fields = record("5", **extra)
    del fields["content_sha256"]
    return LectureItem(**fields)


@pytest.fixture
def pipeline() -> PrivacyPipeline:
    return PrivacyPipeline.from_crawler(project_crawler(settings_dict={"STAGE_STATE_DIR": ""}))


def test_every_string_field_is_scrubbed_and_counted(pipeline: PrivacyPipeline) -> None:
    item = lecture(
        title="Title (jane@example.org)",
        abstract="Mail a@example.org or b [at] example [dot] org.",
        keywords=["k", "kw@example.org"],
        session_name="Session (chair@example.org)",
        doi="10.48448/x@example.org",
        url="http://x/lecture/5-me@example.org",
        source_urls=["http://x/lecture/5-t", "http://x/lecture/5-me@example.org"],
    )
    item.page_blocks = ["China", "Mail a@example.org or b [at] example [dot] org.", "EMNLP 2025"]
    out = pipeline.process_item(item)
    assert out.title == f"Title ({R})"
    assert out.abstract == f"Mail {R} or {R}."
    assert out.keywords == ["k", R]
    assert out.session_name == f"Session ({R})"
    assert out.doi == f"10.48448/{R}"
    assert out.url == f"http://x/lecture/5-{URL_PLACEHOLDER}"
    assert out.source_urls == ["http://x/lecture/5-t", f"http://x/lecture/5-{URL_PLACEHOLDER}"]
    assert out.page_blocks == ["China", f"Mail {R} or {R}.", "EMNLP 2025"]
    assert out.is_premium is False
    stats = pipeline.stats.get_stats()
    assert {k: v for k, v in stats.items() if k.startswith("privacy/")} == {
        "privacy/emails_scrubbed": 8,
        "privacy/items_scrubbed": 1,
        "privacy/fields/title": 1,
        "privacy/fields/abstract": 2,
        "privacy/fields/keywords": 1,
        "privacy/fields/session_name": 1,
        "privacy/fields/doi": 1,
        "privacy/fields/url": 1,
        "privacy/fields/source_urls": 1,
        "privacy/emails_scrubbed_page_blocks": 2,
    }


def test_a_clean_item_passes_unchanged_and_uncounted(pipeline: PrivacyPipeline) -> None:
    item = lecture()
    before = copy.deepcopy(item)
    assert pipeline.process_item(item) == before
    assert not [k for k in pipeline.stats.get_stats() if k.startswith("privacy/")]


def test_aliases_are_scrubbed_and_other_items_pass(pipeline: PrivacyPipeline) -> None:
    item = lecture()
    item.page_aliases = [["6", "http://x/lecture/6-a%40example.org"], ["7", "http://x/lecture/7-t"]]
    out = pipeline.process_item(item)
    assert out.page_aliases == [
        ["6", f"http://x/lecture/6-{URL_PLACEHOLDER}"],
        ["7", "http://x/lecture/7-t"],
    ]
    other = {"note": "x@example.org"}
    assert pipeline.process_item(other) is other
    assert pipeline.stats.get_value("privacy/emails_scrubbed") == 1


def test_between_normalize_and_boilerplate_the_text_comes_out_clean() -> None:
    crawler = project_crawler(settings_dict={"STAGE_STATE_DIR": ""})
    steps = [
        NormalizePipeline.from_crawler(crawler),
        PrivacyPipeline.from_crawler(crawler),
        BoilerplatePipeline.from_crawler(crawler),
    ]
    abstract = "Write to ja\u200bne@example.org."
    item = lecture(abstract=abstract, title="A title", keywords=["kw"], presentation_type="poster", text=None)
    item.page_blocks = ["China", abstract, "EMNLP 2025", "A title", "kw", "poster", "Downloads"]
    for step in steps:
        item = step.process_item(item)
    assert item.abstract == f"Write to {R}."
    assert item.text == f"Write to {R}.\n\nEMNLP 2025\n\nA title\n\nkw\n\nposter"
    assert item.page_blocks == []
