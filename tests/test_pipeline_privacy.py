from __future__ import annotations

import copy
from typing import Any

import pytest

from crawler.items import LectureItem
from crawler.pipelines import privacy as pipeline_privacy
from crawler.pipelines.boilerplate import BoilerplatePipeline
from crawler.pipelines.normalize import NormalizePipeline
from crawler.pipelines.privacy import CLEAN_MAX_CHARS, PrivacyPipeline
from crawler.privacy import scrub as privacy_module
from crawler.privacy.emails import PLACEHOLDER, URL_PLACEHOLDER
from crawler.privacy.phones import PHONE_PLACEHOLDER
from crawler.replica.layout import build_site, ground_truth, load_records
from crawler.schema import FIELD_NAMES, content_sha256
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


def test_strings_known_clean_are_not_searched_again(
    pipeline: PrivacyPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    searched: list[str] = []

    def spy(strings: list[str]) -> set[str]:
        searched.extend(strings)
        return privacy_module.texts_to_scrub(strings)

    monkeypatch.setattr(pipeline_privacy, "texts_to_scrub", spy)
    first = lecture(abstract="The first abstract.")
    first.page_blocks = ["Downloads", "The first abstract.", "Footer text"]
    pipeline.process_item(first)
    assert "Footer text" in searched and "Downloads" in searched
    searched.clear()
    second = lecture(abstract="The second abstract.")
    second.page_blocks = ["Downloads", "The second abstract.", "Footer text"]
    pipeline.process_item(second)
    assert "The second abstract." in searched
    assert "Footer text" not in searched and "Downloads" not in searched


@pytest.mark.parametrize("repeat", ["the same block", "a new block"])
def test_an_address_is_found_whatever_was_seen_before(pipeline: PrivacyPipeline, repeat: str) -> None:
    # A block that held an address is never taken for a clean one, however often it comes back; a clean
    # block seen before does not hide an address in a new one.
    for n in range(3):
        item = lecture(abstract="An abstract.")
        address = "Mail jane@example.org" if repeat == "the same block" or n == 2 else f"Block {n}"
        item.page_blocks = ["Downloads", address, "Footer text"]
        out = pipeline.process_item(item)
        expected = f"Mail {R}" if address.startswith("Mail") else address
        assert out.page_blocks == ["Downloads", expected, "Footer text"], f"case {repeat}, page {n}"
    scrubbed = pipeline.stats.get_value("privacy/emails_scrubbed_page_blocks")
    assert scrubbed == (3 if repeat == "the same block" else 1), f"case {repeat}"


def test_a_long_string_is_searched_every_time(pipeline: PrivacyPipeline) -> None:
    # Strings longer than CLEAN_MAX_CHARS are not remembered: each page's is searched anew.
    long = "word " * (CLEAN_MAX_CHARS // 4)
    pipeline.process_item(lecture(abstract=long))
    assert long.rstrip() not in pipeline.clean and long not in pipeline.clean
    out = pipeline.process_item(lecture(abstract=long + "jane@example.org"))
    assert out.abstract == long + R


def test_the_memory_of_clean_strings_is_bounded(
    pipeline: PrivacyPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline_privacy, "CLEAN_STRINGS", 40)
    for n in range(10):
        item = lecture(abstract=f"Abstract {n}.")
        item.page_blocks = [f"Block {n}.{i}" for i in range(8)]
        pipeline.process_item(item)
        assert len(pipeline.clean) <= 40, f"case page {n}"
    item = lecture(abstract="Abstract 9.")
    item.page_blocks = ["Block 9.0 jane@example.org"]
    assert pipeline.process_item(item).page_blocks == [f"Block 9.0 {R}"]


@pytest.mark.parametrize(
    ("name", "value", "clean"),
    [
        (
            "authors",
            [{"name": "A", "affiliations": ["U", "Lab (a@example.org)"], "orcid": None}],
            [{"name": "A", "affiliations": ["U", f"Lab ({R})"], "orcid": None}],
        ),
        ("authors", [{"name": "b@example.org", "affiliations": [], "orcid": None}], None),
        ("page_aliases", [["6", "http://x/lecture/6-t"], ["7", "http://x/7-c@example.org"]], None),
    ],
)
def test_an_address_deep_in_a_list_or_a_mapping_is_found(
    pipeline: PrivacyPipeline, name: str, value: Any, clean: Any
) -> None:
    item = lecture()
    setattr(item, name, copy.deepcopy(value))
    out = pipeline.process_item(item)
    assert getattr(out, name) != value, f"case {value!r}"
    if clean is not None:
        assert getattr(out, name) == clean, f"case {value!r}"
    assert pipeline.stats.get_value("privacy/emails_scrubbed") == 1, f"case {value!r}"


def test_spoken_addresses_and_phone_numbers_leave_every_text_and_are_counted(
    pipeline: PrivacyPipeline,
) -> None:
    item = lecture(
        title="Title (carol.x at gmail.com)",
        abstract="Data: jane dot doe at gmail.\n\nQuestions? Call +49 30 1234567.",
        session_name="Orals (chair: d a v e @ example . com)",
        authors=[{"name": "A", "affiliations": ["Lab, tel. 020 7946 0958"], "orcid": "0000-0002-1825-0097"}],
        url="http://x/lecture/5-0612345678",
    )
    item.page_blocks = ["Downloads", "Data: jane dot doe at gmail.", "Footer"]
    out = pipeline.process_item(item)
    assert out.title == f"Title ({R})"
    assert out.abstract == f"Data: {R}.\n\nQuestions? Call {PHONE_PLACEHOLDER}."
    assert out.session_name == f"Orals (chair: {R})"
    assert out.authors == [
        {"name": "A", "affiliations": [f"Lab, tel. {PHONE_PLACEHOLDER}"], "orcid": "0000-0002-1825-0097"}
    ]
    assert out.url == "http://x/lecture/5-0612345678"
    assert out.page_blocks == ["Downloads", f"Data: {R}.", "Footer"]
    stats = pipeline.stats.get_stats()
    assert {k: v for k, v in stats.items() if k.startswith("privacy/")} == {
        "privacy/emails_scrubbed": 5,
        "privacy/items_scrubbed": 1,
        "privacy/fields/title": 1,
        "privacy/fields/abstract": 2,
        "privacy/fields/session_name": 1,
        "privacy/fields/authors": 1,
        "privacy/emails_scrubbed_page_blocks": 1,
    }


def replica_lectures(count: int) -> list[dict[str, Any]]:
    """Lectures of the replica (real abstracts, titles, authors, ORCID iDs, DOIs, timestamps) as the
    crawl publishes them, their content hashes included (a fetch time is none of their content)."""
    site = build_site(load_records(), seed=0, lectures=count)
    truth = ground_truth(site, "http://replica", event_ids=list(site.events))
    fetched = {"fetched_at": "2026-01-01T00:00:00Z"}
    return [{name: {**fetched, **lecture}[name] for name in FIELD_NAMES} for lecture in truth]


def test_a_lecture_with_clean_text_keeps_its_content_hash(pipeline: PrivacyPipeline) -> None:
    # The crawl hashes a lecture after this step (dedup): one this step leaves as it was hashes as it
    # did before any scrub, and so does a lecture whose only "@" or numbers are no one's.
    lectures = replica_lectures(200)
    lectures.append(
        {
            **lectures[0],
            "abstract": "We train with batch sizes 256 512 1024 (grant number 2234567).\n\n"
            "@dataclass and A @ B.T; pass@1 rises.  We looked at the dot product at arxiv.org.",
        }
    )
    lectures[-1]["content_sha256"] = content_sha256(lectures[-1])
    for published in lectures:
        item = LectureItem(**{k: copy.deepcopy(v) for k, v in published.items() if k != "content_sha256"})
        item.page_blocks = ["Downloads", *str(published["text"]).split("\n\n"), "Footer"]
        before = copy.deepcopy(item)
        out = pipeline.process_item(item)
        assert out == before, published["lecture_id"]
        assert content_sha256(out.record()) == published["content_sha256"], published["lecture_id"]
    assert not [k for k in pipeline.stats.get_stats() if k.startswith("privacy/")]


def test_a_lecture_whose_text_held_personal_data_gets_the_hash_of_its_scrubbed_content(
    pipeline: PrivacyPipeline,
) -> None:
    (published,) = replica_lectures(1)
    said = {**published, "abstract": f"{published['abstract']} Questions: carol.x at gmail.com."}
    item = LectureItem(**{k: v for k, v in said.items() if k != "content_sha256"})
    out = pipeline.process_item(item)
    assert out.abstract == f"{published['abstract']} Questions: {R}."
    scrubbed = {**published, "abstract": out.abstract}
    assert content_sha256(out.record()) == content_sha256(scrubbed) != content_sha256(said)
