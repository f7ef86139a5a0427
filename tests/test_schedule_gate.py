from __future__ import annotations

from typing import Any

from crawler.schedule.gate import GateInput, GateThresholds, evaluate
from crawler.schema import Lecture


def records(n: int, *, untitled: int = 0, no_abstract: int = 0) -> list[Lecture]:
    out = []
    for i in range(n):
        title, abstract = "" if i < untitled else f"T{i}", "" if i < no_abstract else "A"
        out.append(Lecture.from_json({"title": title, "abstract": abstract}))
    return out


def failed(verdict: Any) -> list[str]:
    return [c.name for c in verdict.failures()]


def test_a_healthy_crawl_passes_every_check() -> None:
    stats = {"underline/listed": 100, "underline/extraction/next_data": 100, "downloader/request_count": 110}
    verdict = evaluate(GateInput(records(100), stats, previous_rows=100))
    assert verdict.passed
    assert [c.name for c in verdict.checks] == [
        "min_items",
        "max_drop",
        "title_share",
        "abstract_share",
        "error_rate",
        "retry_exhausted_rate",
        "fallback_rate",
        "field_coverage",
    ]


def test_the_drop_limit_is_inclusive() -> None:
    assert evaluate(GateInput(records(90), {}, previous_rows=100)).passed
    verdict = evaluate(GateInput(records(89), {}, previous_rows=100))
    assert failed(verdict) == ["max_drop"]
    assert verdict.checks[1].value == 0.11
    assert "a drop of 11.0%" in verdict.explain()


def test_missing_titles_and_abstracts_are_refused() -> None:
    verdict = evaluate(GateInput(records(100, untitled=3, no_abstract=6), {}, previous_rows=None))
    assert failed(verdict) == ["title_share", "abstract_share"]


def test_errors_retries_and_fallbacks_are_rates_of_their_wholes() -> None:
    stats = {
        "underline/listed": 100,
        "underline/fetch_failed": 2,
        "underline/page_unparsable": 1,
        "downloader/request_count": 100,
        "backoff/max_reached": 3,
        "underline/extraction/next_data": 94,
        "underline/extraction/visible_text": 6,
    }
    verdict = evaluate(GateInput(records(100), stats, previous_rows=None))
    assert failed(verdict) == ["error_rate", "retry_exhausted_rate", "fallback_rate"]
    loose = GateThresholds(max_error_rate=0.03, max_retry_exhausted_rate=0.03, max_fallback_rate=0.06)
    assert evaluate(GateInput(records(100), stats, previous_rows=None), loose).passed


def test_an_empty_crawl_fails_min_items() -> None:
    verdict = evaluate(GateInput([], {}, previous_rows=None))
    assert failed(verdict) == ["min_items"]


def test_a_listing_that_is_not_json_and_invalid_staged_items_count_as_errors() -> None:
    stats = {"underline/listed": 100, "underline/listing_not_json": 1, "stage/invalid": 2}
    verdict = evaluate(GateInput(records(100), stats))
    assert failed(verdict) == ["error_rate"]
    assert next(c for c in verdict.checks if c.name == "error_rate").value == 0.03


def lecture(i: int, event: str = "502", **fields: Any) -> Lecture:
    return Lecture.from_json({"lecture_id": str(1000 + i), "event_id": event, "title": f"T{i}",
                              "abstract": "A", "keywords": ["k"], **fields})  # fmt: skip


def test_a_field_that_empties_fails_coverage_naming_field_event_figures_and_lectures() -> None:
    before = [lecture(i) for i in range(20)]
    after = [lecture(i, keywords=[]) if i < 19 else lecture(i) for i in range(20)]
    verdict = evaluate(GateInput(after, {}, previous_rows=20, previous=before))
    assert failed(verdict) == ["coverage:keywords"]
    bad = verdict.failures()[0]
    assert (bad.event, bad.field, bad.previous, bad.value) == ("502", "keywords", 1.0, 0.05)
    assert bad.examples == ("1000", "1001", "1002", "1003", "1004")
    assert "`keywords` coverage in event 502: 5.0% against 100% in the previous release" in bad.message


def test_coverage_may_fall_by_the_allowed_points_and_not_one_lecture_more() -> None:
    before = [lecture(i) for i in range(20)]
    two_lost = [lecture(i, keywords=[]) if i < 2 else lecture(i) for i in range(20)]
    three_lost = [lecture(i, keywords=[]) if i < 3 else lecture(i) for i in range(20)]
    assert evaluate(GateInput(two_lost, {}, previous_rows=20, previous=before)).passed
    assert failed(evaluate(GateInput(three_lost, {}, previous_rows=20, previous=before))) == [
        "coverage:keywords"
    ]


def test_a_per_field_floor_applies_on_a_first_release() -> None:
    records_ = [lecture(i, doi="10.48448/x" if i < 9 else None) for i in range(10)]
    assert evaluate(GateInput(records_, {})).passed
    floors = GateThresholds(min_coverage={"doi": 0.95})
    verdict = evaluate(GateInput(records_, {}), floors)
    assert failed(verdict) == ["coverage:doi"]
    assert verdict.failures()[0].message.startswith("`doi` coverage in event 502: 90.0% against at least 95%")


def test_a_drop_in_one_event_is_not_hidden_by_growth_in_another() -> None:
    before = [lecture(i, "502") for i in range(50)] + [lecture(100 + i, "469") for i in range(50)]
    after = [lecture(i, "502") for i in range(50)] + [lecture(100 + i, "469") for i in range(40)]
    after += [lecture(200 + i, "502") for i in range(10)]
    verdict = evaluate(GateInput(after, {}, previous_rows=100, previous=before))
    assert failed(verdict) == ["max_drop:469"]
    assert "40 lectures of event 469 against 50 in the previous release: a drop of 20.0%" in verdict.explain()


def test_staged_lines_that_cannot_be_read_back_count_as_errors() -> None:
    stats = {"underline/listed": 100, "stage/bad_lines": 3}
    verdict = evaluate(GateInput(records(100), stats))
    assert failed(verdict) == ["error_rate"]
    assert "3 failed pages of 100" in verdict.explain()


def test_lectures_whose_author_profiles_were_left_out_count_against_authors_coverage() -> None:
    # They keep their last authors, so the records alone look whole; the counter tells the gate.
    records_ = [lecture(i, authors=[{"name": "A", "affiliations": [], "orcid": None}]) for i in range(20)]
    floors = GateThresholds(min_coverage={"authors": 0.95})
    one = {"underline/authors_incomplete/502": 1}
    assert evaluate(GateInput(records_, one), floors).passed
    verdict = evaluate(GateInput(records_, {"underline/authors_incomplete/502": 2}), floors)
    assert failed(verdict) == ["coverage:authors"]
    assert verdict.failures()[0].value == 0.9
    # Against the previous release as well, and only in the event it names.
    three = {"underline/authors_incomplete/502": 3, "underline/authors_incomplete/469": 0}
    assert failed(evaluate(GateInput(records_, three, previous_rows=20, previous=records_))) == [
        "coverage:authors"
    ]
    assert evaluate(GateInput(records_, {"underline/authors_incomplete/469": 3}), floors).passed
