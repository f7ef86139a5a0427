from __future__ import annotations

from typing import Any

from crawler import stats_keys as keys
from crawler.schedule.gate import GateInput, GateThresholds, evaluate
from crawler.schema import Lecture

AUTHOR = {"name": "A", "affiliations": [], "orcid": None}


def records(n: int, *, untitled: int = 0, no_abstract: int = 0) -> list[Lecture]:
    out = []
    for i in range(n):
        title, abstract = "" if i < untitled else f"T{i}", "" if i < no_abstract else "A"
        out.append(Lecture.from_json({"title": title, "abstract": abstract, "authors": [AUTHOR]}))
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
        "lost_rate",
        "retry_exhausted_rate",
        "fallback_rate",
        "field_coverage",
        "authors_missing",
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
        "underline/pages/fetched": 100,
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


def test_a_listing_that_is_not_json_and_invalid_staged_items_count_as_lectures_lost() -> None:
    stats = {"underline/listed": 100, "underline/listing_not_json": 1, "stage/invalid": 2}
    verdict = evaluate(GateInput(records(100), stats))
    assert failed(verdict) == ["lost_rate"]
    assert next(c for c in verdict.checks if c.name == "lost_rate").value == 0.03


def lecture(i: int, event: str = "502", **fields: Any) -> Lecture:
    return Lecture.from_json({"lecture_id": str(1000 + i), "event_id": event, "title": f"T{i}",
                              "abstract": "A", "keywords": ["k"], "authors": [AUTHOR], **fields})  # fmt: skip


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


def test_staged_lines_that_cannot_be_read_back_count_as_lectures_lost() -> None:
    stats = {"underline/listed": 100, "stage/bad_lines": 3}
    verdict = evaluate(GateInput(records(100), stats))
    assert failed(verdict) == ["lost_rate"]
    assert "3 lectures lost of 100 listed" in verdict.explain()


def test_lectures_whose_author_profiles_were_left_out_count_against_authors_coverage() -> None:
    # They keep their last authors, so the records alone look whole; the counter tells the gate.
    records_ = [lecture(i, authors=[{"name": "A", "affiliations": [], "orcid": None}]) for i in range(20)]
    floors = GateThresholds(min_coverage={"authors": 0.95})
    one = {"underline/authors_incomplete/502": 1}
    assert evaluate(GateInput(records_, one), floors).passed
    verdict = evaluate(GateInput(records_, {"underline/authors_incomplete/502": 2}), floors)
    # Two of twenty is over the share of lectures that may lack their authors, too.
    assert failed(verdict) == ["coverage:authors", "authors_missing:502"]
    assert verdict.failures()[0].value == 0.9
    # Against the previous release as well, and only in the event it names.
    three = {"underline/authors_incomplete/502": 3, "underline/authors_incomplete/469": 0}
    assert failed(evaluate(GateInput(records_, three, previous_rows=20, previous=records_))) == [
        "coverage:authors",
        "authors_missing:502",
    ]
    assert evaluate(GateInput(records_, {"underline/authors_incomplete/469": 3}), floors).passed


# -- failures judged against what was asked ----------------------------------------------------------


def check(verdict: Any, name: str) -> Any:
    return next(c for c in verdict.checks if c.name == name)


def test_failed_pages_are_a_share_of_the_pages_asked_not_of_the_lectures_listed() -> None:
    # A refresh or a page budget asks 50 pages of 700 listed; 2 failing is 4% of what was asked.
    stats = {keys.LISTED: 700, keys.PAGES_FETCHED: 30, keys.PAGES_REVALIDATED: 20, keys.FETCH_FAILED: 2}
    verdict = evaluate(GateInput(records(700), stats))
    assert failed(verdict) == ["error_rate"]
    assert check(verdict, "error_rate").value == 0.04
    assert "2 failed pages of 50 asked: 4.0%" in check(verdict, "error_rate").message


def test_a_crawl_that_asked_no_page_has_no_failed_share() -> None:
    quiet = evaluate(GateInput(records(700), {keys.LISTED: 700, keys.PAGES_CARRIED: 700}))
    assert quiet.passed
    assert check(quiet, "error_rate").value == 0.0
    assert check(quiet, "error_rate").message == "no lecture page asked: 0.0% (at most 2%, or one page)"
    # Failures counted where no page was asked for are all of it, not a share of the listing.
    odd = evaluate(GateInput(records(700), {keys.LISTED: 700, keys.PAGE_UNPARSABLE: 2}))
    assert failed(odd) == ["error_rate"]
    assert check(odd, "error_rate").value == 1.0


def test_one_failure_among_a_handful_asked_is_allowed_and_two_are_not() -> None:
    # A refresh asks few: one page or request that failed is no outage; every one failing is.
    for name, stats in [
        ("error_rate", {keys.PAGES_FETCHED: 6, keys.FETCH_FAILED: 1}),
        ("retry_exhausted_rate", {keys.REQUESTS_SENT: 7, keys.BACKOFF_GAVE_UP: 1}),
    ]:
        one = evaluate(GateInput(records(100), {keys.LISTED: 100, **stats}))
        assert one.passed, f"case {name}"
        two = {k: 2 if k in (keys.FETCH_FAILED, keys.BACKOFF_GAVE_UP) else v for k, v in stats.items()}
        assert failed(evaluate(GateInput(records(100), {keys.LISTED: 100, **two}))) == [name], f"case {name}"


def test_retries_given_up_are_a_share_of_the_requests_sent_not_of_the_lectures_listed() -> None:
    stats = {keys.LISTED: 700, keys.REQUESTS_SENT: 50, keys.RETRY_GAVE_UP: 2, keys.BACKOFF_GAVE_UP: 1}
    verdict = evaluate(GateInput(records(700), stats))
    assert failed(verdict) == ["retry_exhausted_rate"]
    assert check(verdict, "retry_exhausted_rate").value == 0.06
    assert evaluate(GateInput(records(700), {keys.LISTED: 700, keys.REQUESTS_SENT: 0})).passed


# -- links, authors and page rows of the previous release are not lost ---------------------------------


def linked(i: int, event: str = "502", **fields: Any) -> Lecture:
    return lecture(i, event, anthology_id=f"2025.emnlp-main.{i}", extraction="next_data", **fields)


def test_losing_the_previous_releases_links_is_refused_where_coverage_would_not_see_it() -> None:
    # 5 of 100 lectures linked: losing them all is 5 points of coverage (allowed), 100% of the links.
    before = [linked(i) if i < 5 else lecture(i, extraction="next_data") for i in range(100)]
    after = [lecture(i, extraction="next_data") for i in range(100)]
    verdict = evaluate(GateInput(after, {}, previous_rows=100, previous=before))
    assert failed(verdict) == ["lost:anthology_links"]
    lost = check(verdict, "lost:anthology_links")
    assert (lost.value, lost.examples) == (1.0, ("1000", "1001", "1002", "1003", "1004"))
    assert "5 of the previous release's 5 Anthology links lost: 100.0% (at most 10%)" in lost.message
    # Links gained on other lectures do not hide the loss: each lecture is compared with itself.
    grown = [linked(i) if i >= 90 else lecture(i, extraction="next_data") for i in range(100)]
    assert failed(evaluate(GateInput(grown, {}, previous_rows=100, previous=before))) == [
        "lost:anthology_links"
    ]
    # A lecture no longer in the release (withdrawn, removed, retired) is the drop checks' business.
    gone = after[5:]
    assert "lost:anthology_links" not in failed(
        evaluate(GateInput(gone, {}, previous_rows=100, previous=before))
    )


def test_the_lost_share_is_inclusive_and_configurable() -> None:
    before = [linked(i) for i in range(20)]
    two = [lecture(i, extraction="next_data") if i < 2 else linked(i) for i in range(20)]
    three = [lecture(i, extraction="next_data") if i < 3 else linked(i) for i in range(20)]
    assert "lost:anthology_links" not in failed(
        evaluate(GateInput(two, {}, previous_rows=20, previous=before))
    )
    assert "lost:anthology_links" in failed(evaluate(GateInput(three, {}, previous_rows=20, previous=before)))
    loose = GateThresholds(max_lost_share=0.15, max_coverage_drop=0.2)
    assert evaluate(GateInput(three, {}, previous_rows=20, previous=before), loose).passed


def test_authors_emptied_and_page_rows_back_to_their_listing_are_losses_too() -> None:
    before = [lecture(i, extraction="next_data") for i in range(40)]
    emptied = [lecture(i, extraction="next_data", authors=[]) if i < 5 else before[i] for i in range(40)]
    verdict = evaluate(
        GateInput(emptied, {}, previous_rows=40, previous=before),
        GateThresholds(max_authors_missing=1.0, max_coverage_drop=0.2),
    )
    assert failed(verdict) == ["lost:authors"]
    assert check(verdict, "lost:authors").value == 0.125
    listing = [
        lecture(i, extraction="api_listing+text_from_fields") if i < 5 else before[i] for i in range(40)
    ]
    verdict = evaluate(GateInput(listing, {}, previous_rows=40, previous=before))
    assert failed(verdict) == ["lost:page_rows"]
    assert "5 of the previous release's 40 rows read from their page lost: 12.5%" in verdict.explain()


# -- authors on every release, a first one too ----------------------------------------------------------


def test_a_first_release_whose_lectures_lack_their_authors_is_refused() -> None:
    one = [lecture(i, authors=[]) if i == 0 else lecture(i) for i in range(20)]
    assert evaluate(GateInput(one, {})).passed
    two = [lecture(i, authors=[]) if i < 2 else lecture(i) for i in range(20)]
    verdict = evaluate(GateInput(two, {}))
    assert failed(verdict) == ["authors_missing:502"]
    missing = check(verdict, "authors_missing:502")
    assert (missing.value, missing.event, missing.examples) == (0.1, "502", ("1000", "1001"))
    # Profiles the listing left out count as well, in the event the counter names.
    incomplete = {keys.AUTHORS_INCOMPLETE_PREFIX + "502": 2, keys.AUTHORS_INCOMPLETE_PREFIX + "469": 20}
    verdict = evaluate(GateInput(one, incomplete))
    assert failed(verdict) == ["authors_missing:502"]
    assert check(verdict, "authors_missing:502").value == 0.1
    # Each event on its own: a small event without authors is not hidden by a large one with them.
    both = [lecture(i) for i in range(100)] + [lecture(200 + i, "469", authors=[]) for i in range(3)]
    assert failed(evaluate(GateInput(both, {}))) == ["authors_missing:469"]
