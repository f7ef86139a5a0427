from __future__ import annotations

from typing import Any

from crawler.schedule.gate import GateInput, GateThresholds, evaluate


def records(n: int, *, untitled: int = 0, no_abstract: int = 0) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        out.append({"title": "" if i < untitled else f"T{i}", "abstract": "" if i < no_abstract else "A"})
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
    assert verdict.checks[-3].value == 0.03
