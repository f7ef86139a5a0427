"""The quality gate: checks on a finished crawl before it may replace the published release.

Each check is a small function of the crawl (its records, its statistics, the previous release) and the
thresholds, returning its result, in the spirit of spidermon's close-time monitors and datatrove's
filters. A failing check refuses the release and says why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from crawler import stats_keys as keys
from crawler.coverage import ALL_EVENTS, field_coverage, lectures_missing
from crawler.schema import Lecture, has_value


@dataclass(frozen=True)
class GateThresholds:
    min_items: int = 1
    max_drop: float = 0.10
    min_title_share: float = 0.98
    min_abstract_share: float = 0.95
    max_error_rate: float = 0.02
    max_retry_exhausted_rate: float = 0.02
    max_fallback_rate: float = 0.05
    # A field's coverage (share of lectures with a value) may fall this much against the previous release.
    max_coverage_drop: float = 0.10
    # Per-field floors of coverage, e.g. {"authors": 0.95}; fields not named have none.
    min_coverage: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class GateInput:
    """What the gate judges: the crawl's records and statistics, and the previous release's live rows."""

    records: Sequence[Lecture]
    stats: Mapping[str, object]
    previous_rows: int | None = None
    previous: Sequence[Lecture] = ()

    def count(self, key: str) -> float:
        value = self.stats.get(key, 0)
        return float(value) if isinstance(value, int | float) else 0.0

    def events(self) -> list[str]:
        ids = {_event(r) for r in (*self.records, *self.previous)}
        return sorted(ids)


def _event(record: Lecture) -> str:
    return str(record.event_id or "")


def _coverage(records: Iterable[Lecture]) -> dict[str, dict[str, float]]:
    return field_coverage(records)


def _missing(records: Iterable[Lecture], event: str, name: str, limit: int = 5) -> list[str]:
    return lectures_missing(records, event, name, limit)


class CheckReport(TypedDict):
    """A :class:`CheckResult` as the run report holds it."""

    name: str
    passed: bool
    value: float
    threshold: float
    message: str
    event: str | None
    field: str | None
    previous: float | None
    examples: tuple[str, ...]


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    value: float
    threshold: float
    message: str
    event: str | None = None
    field: str | None = None
    previous: float | None = None
    examples: tuple[str, ...] = ()

    def report(self) -> CheckReport:
        return {
            "name": self.name,
            "passed": self.passed,
            "value": self.value,
            "threshold": self.threshold,
            "message": self.message,
            "event": self.event,
            "field": self.field,
            "previous": self.previous,
            "examples": self.examples,
        }


class GateReport(TypedDict):
    passed: bool
    checks: list[CheckReport]


@dataclass(frozen=True)
class GateVerdict:
    passed: bool
    checks: tuple[CheckResult, ...]

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    def as_dict(self) -> GateReport:
        return {"passed": self.passed, "checks": [c.report() for c in self.checks]}

    def explain(self) -> str:
        lines = [f"{'ok  ' if c.passed else 'FAIL'} {c.name}: {c.message}" for c in self.checks]
        return "\n".join(lines)


# A check yields a result per thing it judges; none when it does not apply (a drop check on a first
# release).
Check = Callable[[GateInput, GateThresholds], Iterator[CheckResult]]


def _rate(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def min_items(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    n = len(crawl.records)
    yield CheckResult(
        "min_items", n >= t.min_items, n, t.min_items, f"{n} lectures (at least {t.min_items} required)"
    )


def max_drop(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    if not crawl.previous_rows:
        return
    n, before = len(crawl.records), crawl.previous_rows
    yield _drop_result("max_drop", n, before, t, None)
    events = crawl.events()
    if len(events) < 2:
        return
    # Growth in one event must not hide a drop in another.
    now = Counter(_event(r) for r in crawl.records)
    then = Counter(_event(r) for r in crawl.previous if not r.withdrawn)
    for event in events:
        if then[event]:
            yield _drop_result(f"max_drop:{event}", now[event], then[event], t, event)


def _drop_result(name: str, n: int, before: int, t: GateThresholds, event: str | None) -> CheckResult:
    drop = max(0.0, 1 - n / before)
    where = f" of event {event}" if event else ""
    return CheckResult(
        name,
        drop <= t.max_drop,
        round(drop, 4),
        t.max_drop,
        f"{n} lectures{where} against {before} in the previous release: a drop of {drop:.1%}"
        f" (at most {t.max_drop:.0%} allowed)",
        event=event,
    )


def _share_check(name: str, field: str, what: str, minimum: Callable[[GateThresholds], float]) -> Check:
    def check(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
        n = len(crawl.records)
        share = _rate(sum(1 for r in crawl.records if has_value(getattr(r, field))), n)
        least = minimum(t)
        yield CheckResult(
            name,
            n == 0 or share >= least,
            round(share, 4),
            least,
            f"{share:.1%} of lectures have {what} (at least {least:.0%} required)",
        )

    check.__name__ = name
    return check


title_share = _share_check("title_share", "title", "a title", lambda t: t.min_title_share)
abstract_share = _share_check("abstract_share", "abstract", "an abstract", lambda t: t.min_abstract_share)


def error_rate(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    pages = crawl.count(keys.LISTED) or float(len(crawl.records))
    errors = sum(crawl.count(key) for key in keys.ERRORS)
    rate = _rate(errors, pages)
    yield CheckResult(
        "error_rate",
        rate <= t.max_error_rate,
        round(rate, 4),
        t.max_error_rate,
        f"{int(errors)} failed pages of {int(pages)}: {rate:.1%} (at most {t.max_error_rate:.0%})",
    )


def retry_exhausted_rate(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    # Of the requests, or of the lectures listed when more: a refresh that carries most lectures over
    # sends few requests, and one give-up among them says little of the crawl's health.
    requests = max(crawl.count(keys.REQUESTS_SENT), crawl.count(keys.LISTED))
    # A listing request given up on keeps its event back as last published (its own verdict), not a page.
    gave_up = crawl.count(keys.BACKOFF_GAVE_UP) + crawl.count(keys.RETRY_GAVE_UP)
    exhausted = max(0.0, gave_up - crawl.count(keys.LISTING_GAVE_UP))
    rate = _rate(exhausted, requests)
    yield CheckResult(
        "retry_exhausted_rate",
        rate <= t.max_retry_exhausted_rate,
        round(rate, 4),
        t.max_retry_exhausted_rate,
        f"{int(exhausted)} requests gave up after retries of {int(requests)}: {rate:.1%}"
        f" (at most {t.max_retry_exhausted_rate:.0%})",
    )


def fallback_rate(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    fallback = crawl.count(keys.EXTRACTION_VISIBLE_TEXT)
    extracted = fallback + crawl.count(keys.EXTRACTION_NEXT_DATA)
    rate = _rate(fallback, extracted)
    yield CheckResult(
        "fallback_rate",
        rate <= t.max_fallback_rate,
        round(rate, 4),
        t.max_fallback_rate,
        f"{int(fallback)} of {int(extracted)} pages had no usable page JSON: {rate:.1%}"
        f" (at most {t.max_fallback_rate:.0%})",
    )


def with_incomplete_authors(
    coverage: dict[str, dict[str, float]], crawl: GateInput
) -> dict[str, dict[str, float]]:
    """Coverage where ``authors`` counts the lectures whose authors' profiles the listing left out as
    without authors (they keep their last authors, which would hide the site's fault from the gate)."""
    events = Counter(_event(r) for r in crawl.records)
    out = {event: dict(shares) for event, shares in coverage.items()}
    for event, shares in out.items():
        if event == ALL_EVENTS or "authors" not in shares or not events[event]:
            continue
        incomplete = crawl.count(keys.AUTHORS_INCOMPLETE_PREFIX + event)
        if incomplete:
            shares["authors"] = round(min(shares["authors"], 1 - incomplete / events[event]), 4)
    return out


# Fields only a lecture's page (or the request that follows it) gives: a lecture published from its
# listing while its page waits for a later crawl (a page budget) has none of them.
PAGE_ONLY_FIELDS = ("related_lecture_ids", "subtitles")


def listing_only(record: Lecture) -> bool:
    """Whether a lecture was published from its listing alone (``extraction = api_listing...``)."""
    return str(record.extraction or "").split("+", 1)[0] == "api_listing"


def pages_waiting(crawl: GateInput) -> int:
    """The lectures whose page request a page budget left for a later crawl."""
    return int(sum(crawl.count(key) for key in keys.PAGES_WAITING))


def with_fetched_pages(
    coverage: dict[str, dict[str, float]], crawl: GateInput
) -> dict[str, dict[str, float]]:
    """Coverage where the page-only fields count only the lectures whose page a crawl fetched, when a
    page budget left pages waiting: the lectures published from their listing meanwhile have none of
    them by design, and would hide nothing but the budget. An event with no page fetched yet is not
    judged on them."""
    if not pages_waiting(crawl):
        return coverage
    fetched = _coverage(r for r in crawl.records if not listing_only(r))
    out = {event: dict(shares) for event, shares in coverage.items()}
    for event, shares in out.items():
        for name in PAGE_ONLY_FIELDS:
            if name not in shares:
                continue
            if event in fetched:
                shares[name] = fetched[event][name]
            else:
                del shares[name]
    return out


def listing_only_share(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    """Reported, never refused: the share of lectures published from their listing while a page budget
    lets their pages wait (every listed lecture is published; their pages come on later nights)."""
    waiting = pages_waiting(crawl)
    if not waiting:
        return
    live = [r for r in crawl.records if not r.withdrawn]
    only = sum(1 for r in live if listing_only(r))
    share = _rate(only, len(live))
    budget = int(crawl.count(keys.PAGE_BUDGET))
    yield CheckResult(
        "listing_only",
        True,
        round(share, 4),
        1.0,
        f"{only} of {len(live)} lectures ({share:.1%}) published from their listing; {waiting} lecture "
        f"pages wait for later crawls (page budget {budget}); page-only fields "
        f"({', '.join(PAGE_ONLY_FIELDS)}) are judged on the lectures whose pages were fetched",
    )


def field_coverage_check(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    """Each field's coverage per event: not far below the previous release's, not below its floor.

    One result for the whole crawl when every field holds; one failed result per field and event when
    not, naming both figures and a few lectures without the field.
    """
    now = with_fetched_pages(with_incomplete_authors(_coverage(crawl.records), crawl), crawl)
    then = _coverage(crawl.previous)
    fetched = [r for r in crawl.records if not listing_only(r)] if pages_waiting(crawl) else crawl.records
    failures: list[CheckResult] = []
    for event, shares in now.items():
        if event == ALL_EVENTS:
            continue  # each event is judged on its own; the whole would only blur them
        for name, share in shares.items():
            before = then.get(event, {}).get(name)
            floor = t.min_coverage.get(name)
            fell = before is not None and before - share > t.max_coverage_drop + 1e-9
            low = floor is not None and share < floor
            if not (fell or low):
                continue
            where = f"event {event}"
            judged = fetched if name in PAGE_ONLY_FIELDS else crawl.records
            limit = f"{before:.0%} in the previous release" if fell else f"at least {floor:.0%} required"
            failures.append(
                CheckResult(
                    f"coverage:{name}",
                    False,
                    share,
                    (before - t.max_coverage_drop) if fell and before is not None else float(floor or 0),
                    f"`{name}` coverage in {where}: {share:.1%} against {limit}"
                    f" (e.g. lectures {', '.join(_missing(judged, event, name, 3))})",
                    event=event,
                    field=name,
                    previous=before,
                    examples=tuple(_missing(judged, event, name)),
                )
            )
    if failures:
        yield from failures
        return
    monitored = len(next(iter(now.values()), {}))
    yield CheckResult(
        "field_coverage",
        True,
        1.0,
        t.max_coverage_drop,
        f"{monitored} fields hold their coverage in {max(1, len(now) - 1)} event(s)"
        f" (at most {t.max_coverage_drop:.0%} points lost against the previous release)",
    )


CHECKS: tuple[Check, ...] = (
    min_items,
    max_drop,
    title_share,
    abstract_share,
    error_rate,
    retry_exhausted_rate,
    fallback_rate,
    field_coverage_check,
    listing_only_share,
)


def evaluate(crawl: GateInput, thresholds: GateThresholds | None = None) -> GateVerdict:
    """Run every check; the release passes when all of their results pass."""
    thresholds = thresholds or GateThresholds()
    results = [result for check in CHECKS for result in check(crawl, thresholds)]
    return GateVerdict(all(c.passed for c in results), tuple(results))
