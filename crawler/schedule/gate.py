"""The quality gate: checks on a release before it may replace the published one.

Each check is a small function of the crawl (its records, its statistics, the previous release) and the
thresholds, returning its result, in the spirit of spidermon's close-time monitors and datatrove's
filters. A failing check refuses the release and says why. Every command that writes a release
(``run``, ``publish``) is judged by the same checks (:mod:`crawler.schedule.judge`).

The gate looks at every lecture of the release and of the previous one, and ``publish`` holds one
event's rows at a time: a :class:`GateRow` (its id, event, withdrawal, extraction and which monitored
fields hold a value, as bits) is all the gate needs, so a catalogue's gate holds a few dozen bytes a
lecture. The coverage computed here is :func:`crawler.coverage.field_coverage`'s, from the bits.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

from crawler import stats_keys as keys
from crawler.coverage import ALL_EVENTS, MONITORED, coverage_of
from crawler.schema import FIELDS, Lecture, has_value, lecture_order, listing_only_extraction

_BIT = {name: 1 << index for index, name in enumerate(MONITORED)}


@dataclass(frozen=True, slots=True)
class GateRow:
    """One lecture as the gate sees it: ``filled`` holds a bit per monitored field with a value."""

    lecture_id: str
    event_id: str
    withdrawn: bool
    extraction: str
    filled: int

    @classmethod
    def of(cls, lecture: Lecture) -> GateRow:
        filled = 0
        for name, bit in _BIT.items():
            if has_value(getattr(lecture, name)):
                filled |= bit
        # Every lecture of an event shares its id, and most share an extraction: one string each.
        return cls(
            str(lecture.lecture_id),
            sys.intern(str(lecture.event_id or "")),
            bool(lecture.withdrawn),
            sys.intern(str(lecture.extraction or "")),
            filled,
        )

    def has(self, name: str) -> bool:
        """Whether the lecture has a value in the monitored field ``name``."""
        return bool(self.filled & _BIT[name])

    def without(self, name: str) -> GateRow:
        """This row with no value in the monitored field ``name``."""
        return replace(self, filled=self.filled & ~_BIT[name])

    @property
    def listing_only(self) -> bool:
        """Whether the lecture was published from its listing alone (``extraction = api_listing...``)."""
        return listing_only_extraction(self.extraction)


def gate_rows(records: Iterable[Lecture | GateRow]) -> tuple[GateRow, ...]:
    """``records`` as gate rows (rows given as rows are kept)."""
    return tuple(r if isinstance(r, GateRow) else GateRow.of(r) for r in records)


def row_coverage(rows: Iterable[GateRow]) -> dict[str, dict[str, float]]:
    """``{event_id: {field: share}}`` over the live rows, and ``"*"`` for all events: the figures
    :func:`crawler.coverage.field_coverage` gives for the lectures themselves."""
    return coverage_of(rows, event_of=lambda row: row.event_id, has=GateRow.has)


def rows_missing(rows: Sequence[GateRow], event: str, name: str, limit: int = 5) -> list[str]:
    """A few lecture ids of ``event`` without a value in ``name``, lowest first: examples for a report."""
    ids = [
        r.lecture_id
        for r in rows
        if not r.withdrawn and (event == ALL_EVENTS or r.event_id == event) and not r.has(name)
    ]
    return sorted(ids, key=lecture_order)[:limit]


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
    # The share of the previous release's Anthology links, authors or page-derived rows (of lectures
    # still in the release) that the release may lose.
    max_lost_share: float = 0.10
    # The share of an event's lectures that may be without authors, or whose authors' profiles the
    # listing left out: judged on every release, a first one too.
    max_authors_missing: float = 0.05
    # Per-field floors of coverage, e.g. {"authors": 0.95}; fields not named have none.
    min_coverage: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class GateInput:
    """What the gate judges: the release's live records and the crawl's statistics, and the previous
    release's live rows. Records are kept as :class:`GateRow` (lectures given are made rows)."""

    records: Sequence[Lecture | GateRow]
    stats: Mapping[str, object]
    previous_rows: int | None = None
    previous: Sequence[Lecture | GateRow] = ()
    rows: tuple[GateRow, ...] = field(init=False, repr=False)
    before: tuple[GateRow, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", gate_rows(self.records))
        object.__setattr__(self, "before", gate_rows(self.previous))

    def count(self, key: str) -> float:
        value = self.stats.get(key, 0)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0

    def total(self, names: Iterable[str]) -> float:
        return sum(self.count(key) for key in names)

    def events(self) -> list[str]:
        ids = {r.event_id for r in (*self.rows, *self.before)}
        return sorted(ids)


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


class GateRefused(Exception):
    """The gate refused the release and nothing was written; ``verdict`` says why."""

    def __init__(self, verdict: GateVerdict) -> None:
        super().__init__("the quality gate refused to publish; the previous release is untouched")
        self.verdict = verdict


@dataclass(frozen=True)
class GateVerdict:
    passed: bool
    checks: tuple[CheckResult, ...]

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    def as_dict(self) -> dict[str, object]:
        """The verdict as the run report and the stage's ``REFUSED`` marker hold it."""
        return {"passed": self.passed, "checks": [asdict(c) for c in self.checks]}

    def with_checks(self, checks: Sequence[CheckResult]) -> GateVerdict:
        """This verdict with ``checks`` added: it passes when they all pass too."""
        return GateVerdict(self.passed and all(c.passed for c in checks), (*self.checks, *checks))

    def explain(self) -> str:
        lines = [f"{'ok  ' if c.passed else 'FAIL'} {c.name}: {c.message}" for c in self.checks]
        return "\n".join(lines)


# A check yields a result per thing it judges; none when it does not apply (a drop check on a first
# release).
Check = Callable[[GateInput, GateThresholds], Iterator[CheckResult]]


def _rate(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def min_items(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    n = len(crawl.rows)
    yield CheckResult(
        "min_items", n >= t.min_items, n, t.min_items, f"{n} lectures (at least {t.min_items} required)"
    )


def max_drop(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    if not crawl.previous_rows:
        return
    n, before = len(crawl.rows), crawl.previous_rows
    yield _drop_result("max_drop", n, before, t, None)
    events = crawl.events()
    if len(events) < 2:
        return
    # Growth in one event must not hide a drop in another.
    now = Counter(r.event_id for r in crawl.rows)
    then = Counter(r.event_id for r in crawl.before if not r.withdrawn)
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
        n = len(crawl.rows)
        share = _rate(sum(1 for r in crawl.rows if r.has(field)), n)
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


def _failed_share(failed: float, asked: float) -> float:
    """``failed`` of ``asked``; failures counted beyond what was asked are all of it (never over 1), and
    nothing asked is no failed share."""
    return _rate(failed, max(asked, failed))


def few_failed(failed: float, asked: float, share: float) -> bool:
    """Whether ``failed`` of ``asked`` is within ``share``, which allows one failure at least: a crawl
    that asks a handful (a refresh, a night resumed after its listing failed) is not refused for a
    single one, while every one of them failing is still an outage."""
    return failed <= max(1.0, share * asked + 1e-9)


def error_rate(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    """The failed lecture pages of those this crawl asked for (fetched and revalidated), not of the
    lectures listed: a page budget or a refresh asks few, and all of them failing is an outage."""
    asked = crawl.total((keys.PAGES_FETCHED, keys.PAGES_REVALIDATED))
    failed = crawl.total(keys.PAGE_ERRORS)
    rate = _failed_share(failed, asked)
    what = f"{int(failed)} failed pages of {int(asked)} asked" if asked or failed else "no lecture page asked"
    yield CheckResult(
        "error_rate",
        few_failed(failed, asked, t.max_error_rate),
        round(rate, 4),
        t.max_error_rate,
        f"{what}: {rate:.1%} (at most {t.max_error_rate:.0%}, or one page)",
    )


def lost_rate(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    """The lectures the crawl meant to publish and lost on the way (a staged line that cannot be read
    back, a record the schema refuses, a listing page that is not JSON, a callback that failed), of
    the lectures listed."""
    listed = crawl.count(keys.LISTED) or float(len(crawl.rows))
    lost = crawl.total(keys.LOST_LECTURES)
    rate = _failed_share(lost, listed)
    yield CheckResult(
        "lost_rate",
        rate <= t.max_error_rate,
        round(rate, 4),
        t.max_error_rate,
        f"{int(lost)} lectures lost of {int(listed)} listed: {rate:.1%} (at most {t.max_error_rate:.0%})",
    )


def retry_exhausted_rate(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    """The requests that gave up after their retries, of the requests really sent. A listing request
    given up on keeps its event back as last published (its own verdict), not a page lost."""
    requests = crawl.count(keys.REQUESTS_SENT)
    gave_up = crawl.count(keys.BACKOFF_GAVE_UP) + crawl.count(keys.RETRY_GAVE_UP)
    exhausted = max(0.0, gave_up - crawl.count(keys.LISTING_GAVE_UP))
    rate = _failed_share(exhausted, requests)
    yield CheckResult(
        "retry_exhausted_rate",
        few_failed(exhausted, requests, t.max_retry_exhausted_rate),
        round(rate, 4),
        t.max_retry_exhausted_rate,
        f"{int(exhausted)} requests gave up after retries of {int(requests)} sent: {rate:.1%}"
        f" (at most {t.max_retry_exhausted_rate:.0%}, or one request)",
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


def authors_missing(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    """Each event's share of lectures without authors, or whose authors' profiles the listing left out
    (the larger of the two counts): judged on every release, a first one too, where no previous
    release shows what the coverage should be."""
    live = Counter(r.event_id for r in crawl.rows)
    empty = Counter(r.event_id for r in crawl.rows if not r.has("authors"))
    failures = []
    for event in sorted(live, key=lecture_order):
        incomplete = crawl.count(keys.AUTHORS_INCOMPLETE_PREFIX + event)
        without = max(float(empty[event]), incomplete)
        share = _rate(without, live[event])
        if share > t.max_authors_missing + 1e-9:
            examples = tuple(rows_missing(crawl.rows, event, "authors"))
            shown = f" (e.g. lectures {', '.join(examples[:3])})" if examples else ""
            failures.append(
                CheckResult(
                    f"authors_missing:{event}",
                    False,
                    round(share, 4),
                    t.max_authors_missing,
                    f"{int(without)} of {live[event]} lectures of event {event} ({share:.1%}) are without"
                    f" authors ({empty[event]}) or had their authors' profiles left out by the listing"
                    f" ({int(incomplete)}) (at most {t.max_authors_missing:.0%}){shown}",
                    event=event,
                    field="authors",
                    examples=examples,
                )
            )
    if failures:
        yield from failures
        return
    yield CheckResult(
        "authors_missing",
        True,
        0.0,
        t.max_authors_missing,
        f"every event has authors for at least {1 - t.max_authors_missing:.0%} of its lectures",
    )


# What a release may not lose of the previous one's rows that stay in it: (check name, what it is,
# whether a row has it).
KEPT_PROPERTIES: tuple[tuple[str, str, Callable[[GateRow], bool]], ...] = (
    ("anthology_links", "Anthology links", lambda r: r.has("anthology_id")),
    ("authors", "author lists", lambda r: r.has("authors")),
    ("page_rows", "rows read from their page", lambda r: not r.listing_only),
)


def lost_since_previous(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    """The previous release's Anthology links, author lists and page-derived rows, of the lectures
    still in the release: at most ``max_lost_share`` of each may be lost (a link gone, authors
    emptied, a page's row replaced by its listing's). Growth elsewhere does not hide a loss: each
    lecture is compared with itself."""
    now = {r.lecture_id: r for r in crawl.rows}
    for name, what, has in KEPT_PROPERTIES:
        kept_before = [
            r.lecture_id for r in crawl.before if not r.withdrawn and has(r) and r.lecture_id in now
        ]
        if not kept_before:
            continue
        lost = sorted((i for i in kept_before if not has(now[i])), key=lecture_order)
        share = _rate(len(lost), len(kept_before))
        shown = f" (e.g. lectures {', '.join(lost[:3])})" if lost else ""
        yield CheckResult(
            f"lost:{name}",
            share <= t.max_lost_share + 1e-9,
            round(share, 4),
            t.max_lost_share,
            f"{len(lost)} of the previous release's {len(kept_before)} {what} lost: {share:.1%}"
            f" (at most {t.max_lost_share:.0%}){shown}",
            examples=tuple(lost[:5]),
        )


# Fields only a lecture's page (or the request that follows it) gives: a lecture published from its
# listing while its page waits for a later crawl (a page budget) has none of them. The text is not one:
# a pipeline step rebuilds it from the listing's fields.
PAGE_ONLY_FIELDS = tuple(f.name for f in FIELDS if f.from_page and f.filled_by != "pipeline")


def pages_waiting(crawl: GateInput) -> int:
    """The lectures whose page request a page budget left for a later crawl."""
    return int(sum(crawl.count(key) for key in keys.PAGES_WAITING))


def listing_only_share(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    """Reported, never refused: the share of lectures published from their listing while a page budget
    lets their pages wait (every listed lecture is published; their pages come on later nights)."""
    waiting = pages_waiting(crawl)
    if not waiting:
        return
    live = [r for r in crawl.rows if not r.withdrawn]
    only = sum(1 for r in live if r.listing_only)
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


def _judged_coverage(crawl: GateInput, fetched: Sequence[GateRow] | None) -> dict[str, dict[str, float]]:
    """Each event's field coverage as :func:`field_coverage_check` judges it: ``authors`` lowered by the
    lectures whose authors' profiles the listing left out; with pages waiting (``fetched`` given), the
    page-only fields of the lectures whose page was fetched, or none for an event with no page yet."""
    now = row_coverage(crawl.rows)
    live = Counter(r.event_id for r in crawl.rows)
    fetched_coverage = row_coverage(fetched) if fetched is not None else {}
    for event, shares in now.items():
        incomplete = crawl.count(keys.AUTHORS_INCOMPLETE_PREFIX + event)
        if event != ALL_EVENTS and live[event] and incomplete:
            shares["authors"] = round(min(shares["authors"], 1 - incomplete / live[event]), 4)
        for name in PAGE_ONLY_FIELDS if fetched is not None else ():
            if event in fetched_coverage:
                shares[name] = fetched_coverage[event][name]
            else:
                shares.pop(name, None)
    return now


def field_coverage_check(crawl: GateInput, t: GateThresholds) -> Iterator[CheckResult]:
    """Each field's coverage per event: not far below the previous release's, not below its floor.

    ``authors`` counts the lectures whose authors' profiles the listing left out as without authors (they
    keep their last authors, which would hide the site's fault from the gate). When a page budget left
    pages waiting, the page-only fields count only the lectures whose page a crawl fetched: the lectures
    published from their listing meanwhile have none of them by design, and would hide nothing but the
    budget. An event with no page fetched yet is not judged on them.

    One result for the whole crawl when every field holds; one failed result per field and event when
    not, naming both figures and a few lectures without the field.
    """
    waiting = pages_waiting(crawl)
    fetched: Sequence[GateRow] = [r for r in crawl.rows if not r.listing_only] if waiting else crawl.rows
    now = _judged_coverage(crawl, fetched if waiting else None)
    then = row_coverage(crawl.before)
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
            judged = fetched if name in PAGE_ONLY_FIELDS else crawl.rows
            examples = tuple(rows_missing(judged, event, name))
            limit = f"{before:.0%} in the previous release" if fell else f"at least {floor:.0%} required"
            failures.append(
                CheckResult(
                    f"coverage:{name}",
                    False,
                    share,
                    (before - t.max_coverage_drop) if fell and before is not None else float(floor or 0),
                    f"`{name}` coverage in event {event}: {share:.1%} against {limit}"
                    f" (e.g. lectures {', '.join(examples[:3])})",
                    event=event,
                    field=name,
                    previous=before,
                    examples=examples,
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
    lost_rate,
    retry_exhausted_rate,
    fallback_rate,
    field_coverage_check,
    authors_missing,
    lost_since_previous,
    listing_only_share,
)


def evaluate(crawl: GateInput, thresholds: GateThresholds | None = None) -> GateVerdict:
    """Run every check; the release passes when all of their results pass."""
    thresholds = thresholds or GateThresholds()
    results = [result for check in CHECKS for result in check(crawl, thresholds)]
    return GateVerdict(all(c.passed for c in results), tuple(results))
