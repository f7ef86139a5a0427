"""The page budget's pure parts: how a lecture is ranked, the order the budget is spent in, its account,
its bound and configuration, and how the gate judges a night published mostly from the listing."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from crawler import stats_keys as keys
from crawler.app.arguments import ArgumentError, check_setting
from crawler.extensions.progress import budget_summary, format_budget
from crawler.items import LectureItem
from crawler.pages.profiles import AUTHOR_PROFILES_MISSING
from crawler.schedule.config import ConfigError, load_config
from crawler.schedule.gate import GateInput, GateThresholds, evaluate
from crawler.schema import Lecture
from crawler.spiders.refresh import CHANGED, NEW, STALE, Decision, authors_incomplete, need_rank
from crawler.spiders.spending import PageBudget
from tests.support.replica import eventcrawl

NOW = datetime(2026, 1, 1, tzinfo=UTC)
NEGATIVE = "setting UNDERLINE_PAGE_BUDGET must not be negative"


def decision(extraction: str | None, *, unchanged: bool = False) -> Decision:
    staged = None
    fetched_at = None
    if extraction is not None:
        staged = LectureItem.carried_over(
            Lecture(lecture_id="1", extraction=extraction), listing_hashes={"title": "x"}
        )
        fetched_at = NOW
    return Decision(LectureItem(lecture_id="1"), {}, fetched_at, staged, unchanged)


@pytest.mark.parametrize(
    ("extraction", "unchanged", "rank"),
    [
        (None, False, NEW),  # never staged
        ("api_listing", False, NEW),  # staged from its listing only: never fetched
        ("api_listing+text_from_fields", True, NEW),
        ("next_data", False, CHANGED),
        ("visible_text+text_from_fields", False, CHANGED),
        ("next_data", True, STALE),
    ],
)
def test_a_lecture_is_ranked_by_why_it_needs_its_page(
    extraction: str | None, unchanged: bool, rank: int
) -> None:
    assert need_rank(decision(extraction, unchanged=unchanged)) == rank


HELD = [
    (STALE, 300.0, "s-new"),
    (CHANGED, 0.0, "c1"),
    (NEW, 0.0, "n1"),
    (STALE, 100.0, "s-old"),
    (CHANGED, 0.0, "c2"),
    (NEW, 0.0, "n2"),
]


def held_listing(lecture_id: str, rank: int) -> LectureItem:
    # A new lecture's listing left an author's profile out: what the page request will say.
    problems = [f"authors: {AUTHOR_PROFILES_MISSING}"] if rank == NEW else []
    return LectureItem(lecture_id=lecture_id, title=f"T {lecture_id}", listed_in="502", problems=problems)


def test_the_budget_is_spent_new_then_changed_then_stale_oldest_first() -> None:
    budget = PageBudget()
    for rank, order, lecture_id in HELD:
        assert budget.hold(rank, order, lecture_id, held_listing(lecture_id, rank)) is None, (
            f"{rank=}, {order=}, {lecture_id=}"
        )
    ranked = budget.ranked()
    assert [c.lecture_id for c in ranked] == ["n1", "n2", "c1", "c2", "s-old", "s-new"]
    # The listing fields come back from disk as held.
    back = budget.listing(ranked[3])
    assert back == LectureItem(lecture_id="c2", title="T c2")
    assert (back.listed_in, back.problems) == ("502", [])
    first = budget.listing(ranked[0])
    assert (first.listed_in, first.problems) == ("502", [f"authors: {AUTHOR_PROFILES_MISSING}"])
    assert authors_incomplete(first) is True
    budget.close()
    assert budget.candidates == []


@pytest.mark.parametrize("room", [0, 1, 2, 3, 5, 6, 10])
def test_a_bounded_budget_holds_what_an_unbounded_one_would_buy_first(room: int) -> None:
    """A budget with room for N holds no more than N lectures, and the N it holds are the first N of
    the whole ranking; every other one is handed back to wait, each once, with what it was held with."""
    budget = PageBudget(room=room)
    waiting: list[str] = []
    for rank, order, lecture_id in HELD:
        out = budget.hold(rank, order, lecture_id, held_listing(lecture_id, rank))
        assert len(budget.candidates) <= room, f"{rank=}, {order=}, {lecture_id=}"
        if out is not None:
            candidate, held = out
            assert held == held_listing(candidate.lecture_id, candidate.rank), (
                f"{rank=}, {order=}, {lecture_id=}"
            )
            waiting.append(candidate.lecture_id)
    order = ["n1", "n2", "c1", "c2", "s-old", "s-new"]
    assert [c.lecture_id for c in budget.ranked()] == order[:room]
    assert sorted(waiting) == sorted(order[room:])
    budget.close()


def test_the_account_says_what_waits_and_for_how_many_nights() -> None:
    stats = {
        keys.PAGE_BUDGET: 40,
        keys.PAGE_BUDGET_LECTURES: 20,
        keys.PAGES_FETCHED: 15,
        keys.PAGES_REVALIDATED: 5,
        keys.PAGES_WAITING_NEW: 30,
        keys.PAGES_WAITING_CHANGED: 9,
        keys.PAGES_WAITING_STALE: 2,
    }
    summary = budget_summary(stats)
    assert summary is not None
    assert (summary["fetched"], summary["waiting"], summary["nights"]) == (20, 41, 3)
    assert format_budget(stats) == (
        "page budget 40: 20 lecture pages fetched, 41 wait (30 new, 9 changed, 2 stale): "
        "3 more night(s) at this budget"
    )
    assert budget_summary({}) is None
    assert format_budget({keys.PAGE_BUDGET: 0}) == ""
    # A budget of one request buys no lecture with subtitles.
    assert "never at it" in format_budget({keys.PAGE_BUDGET: 1, keys.PAGES_WAITING_NEW: 3})


def test_the_setting_takes_a_whole_number_of_zero_or_more() -> None:
    assert check_setting("UNDERLINE_PAGE_BUDGET", "0") == "0"
    assert check_setting("UNDERLINE_PAGE_BUDGET", 500) == 500
    for bad in ("-1", "2.5", "many", -3):
        with pytest.raises(ArgumentError):
            check_setting("UNDERLINE_PAGE_BUDGET", bad)


def test_the_run_file_key_is_the_setting(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text("[crawl]\npage_budget = 300\n[crawl.settings]\nDOWNLOAD_DELAY = 1.0\n", encoding="utf-8")
    assert load_config(path).settings == {"DOWNLOAD_DELAY": 1.0, "UNDERLINE_PAGE_BUDGET": 300}
    overridden = load_config(path).with_overrides(settings={"UNDERLINE_PAGE_BUDGET": 40})
    assert overridden.settings["UNDERLINE_PAGE_BUDGET"] == 40
    for text, says in (("page_budget = -1", "must not be negative"), ('page_budget = "9"', "wrong type")):
        path.write_text(f"[crawl]\n{text}\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=says):
            load_config(path)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["crawl", "--page-budget", "-1"],
            "--page-budget: setting UNDERLINE_PAGE_BUDGET must not be negative",
        ),
        (["run", "--page-budget", "-5"], "--page-budget: setting UNDERLINE_PAGE_BUDGET must not be negative"),
        (["crawl", "--frontier", "redis://127.0.0.1:1/0", "--page-budget", "5"], "not for a fleet worker"),
    ],
)
def test_a_bad_budget_gets_one_line_and_status_2(tmp_path: Path, args: list[str], says: str) -> None:
    result = eventcrawl(*args, "--state", str(tmp_path / "state"), cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert says in result.stderr


def lectures(fetched: int, listing_only: int) -> list[Lecture]:
    out: list[Lecture] = []
    for i in range(fetched + listing_only):
        page = i < fetched
        out.append(
            Lecture.from_json(
                {
                    "lecture_id": str(i),
                    "event_id": "502",
                    "title": f"T{i}",
                    "abstract": "A",
                    "authors": [{"name": "A", "affiliations": [], "orcid": None}],
                    "related_lecture_ids": ["9"] if page else [],
                    "extraction": "next_data" if page else "api_listing+text_from_fields",
                }
            )
        )
    return out


def test_the_gate_judges_page_only_fields_on_the_pages_fetched_when_pages_wait() -> None:
    floors = GateThresholds(min_coverage={"related_lecture_ids": 0.9, "title": 0.9})
    waiting = {keys.PAGE_BUDGET: 25, keys.PAGES_WAITING_NEW: 75, keys.LISTED: 100}
    verdict = evaluate(GateInput(lectures(25, 75), waiting), floors)
    assert verdict.passed, verdict.explain()
    only = next(c for c in verdict.checks if c.name == "listing_only")
    assert (only.passed, only.value) == (True, 0.75)
    assert "75 of 100 lectures (75.0%) published from their listing; 75 lecture pages wait" in only.message
    # Without pages waiting, the same records are what a broken site gives: refused as before.
    refused = evaluate(GateInput(lectures(25, 75), {keys.LISTED: 100}), floors)
    assert [c.name for c in refused.failures()] == ["coverage:related_lecture_ids"]
    assert "listing_only" not in [c.name for c in refused.checks]
    # Pages that were fetched and lack the field are still caught.
    broken = lectures(25, 75)
    for record in broken[:10]:
        record.related_lecture_ids = []
    failed = evaluate(GateInput(broken, waiting), floors).failures()
    assert [(c.name, c.value) for c in failed] == [("coverage:related_lecture_ids", 0.6)]
    assert failed[0].examples == ("0", "1", "2", "3", "4")
