"""The quality gate: checks on a finished crawl before it may replace the published release.

Each check is a small function of the crawl (its records, its statistics, the previous release) and the
thresholds, returning its result, in the spirit of spidermon's close-time monitors and datatrove's
filters. A failing check refuses the release and says why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from crawler import stats_keys as keys


@dataclass(frozen=True)
class GateThresholds:
    min_items: int = 1
    max_drop: float = 0.10
    min_title_share: float = 0.98
    min_abstract_share: float = 0.95
    max_error_rate: float = 0.02
    max_retry_exhausted_rate: float = 0.02
    max_fallback_rate: float = 0.05


@dataclass(frozen=True)
class GateInput:
    """What the gate judges: the crawl's records and statistics, and the previous release's size."""

    records: Sequence[Mapping[str, Any]]
    stats: Mapping[str, Any]
    previous_rows: int | None = None

    def count(self, key: str) -> float:
        value = self.stats.get(key, 0)
        return float(value) if isinstance(value, int | float) else 0.0


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    value: float
    threshold: float
    message: str


@dataclass(frozen=True)
class GateVerdict:
    passed: bool
    checks: tuple[CheckResult, ...]

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "checks": [asdict(c) for c in self.checks]}

    def explain(self) -> str:
        lines = [f"{'ok  ' if c.passed else 'FAIL'} {c.name}: {c.message}" for c in self.checks]
        return "\n".join(lines)


# A check returns None when it does not apply (the drop check on a first release).
Check = Callable[[GateInput, GateThresholds], CheckResult | None]


def _rate(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def min_items(crawl: GateInput, t: GateThresholds) -> CheckResult:
    n = len(crawl.records)
    return CheckResult(
        "min_items", n >= t.min_items, n, t.min_items, f"{n} lectures (at least {t.min_items} required)"
    )


def max_drop(crawl: GateInput, t: GateThresholds) -> CheckResult | None:
    if not crawl.previous_rows:
        return None
    n, before = len(crawl.records), crawl.previous_rows
    drop = max(0.0, 1 - n / before)
    return CheckResult(
        "max_drop",
        drop <= t.max_drop,
        round(drop, 4),
        t.max_drop,
        f"{n} lectures against {before} in the previous release: a drop of {drop:.1%}"
        f" (at most {t.max_drop:.0%} allowed)",
    )


def _share_check(name: str, field: str, what: str, minimum: Callable[[GateThresholds], float]) -> Check:
    def check(crawl: GateInput, t: GateThresholds) -> CheckResult:
        n = len(crawl.records)
        share = _rate(sum(1 for r in crawl.records if (r.get(field) or "").strip()), n)
        least = minimum(t)
        return CheckResult(
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


def error_rate(crawl: GateInput, t: GateThresholds) -> CheckResult:
    pages = crawl.count(keys.LISTED) or float(len(crawl.records))
    errors = sum(crawl.count(key) for key in keys.ERRORS)
    rate = _rate(errors, pages)
    return CheckResult(
        "error_rate",
        rate <= t.max_error_rate,
        round(rate, 4),
        t.max_error_rate,
        f"{int(errors)} failed pages of {int(pages)}: {rate:.1%} (at most {t.max_error_rate:.0%})",
    )


def retry_exhausted_rate(crawl: GateInput, t: GateThresholds) -> CheckResult:
    requests = crawl.count(keys.REQUESTS_SENT)
    exhausted = crawl.count(keys.BACKOFF_GAVE_UP) + crawl.count(keys.RETRY_GAVE_UP)
    rate = _rate(exhausted, requests)
    return CheckResult(
        "retry_exhausted_rate",
        rate <= t.max_retry_exhausted_rate,
        round(rate, 4),
        t.max_retry_exhausted_rate,
        f"{int(exhausted)} requests gave up after retries of {int(requests)}: {rate:.1%}"
        f" (at most {t.max_retry_exhausted_rate:.0%})",
    )


def fallback_rate(crawl: GateInput, t: GateThresholds) -> CheckResult:
    fallback = crawl.count(keys.EXTRACTION_VISIBLE_TEXT)
    extracted = fallback + crawl.count(keys.EXTRACTION_NEXT_DATA)
    rate = _rate(fallback, extracted)
    return CheckResult(
        "fallback_rate",
        rate <= t.max_fallback_rate,
        round(rate, 4),
        t.max_fallback_rate,
        f"{int(fallback)} of {int(extracted)} pages had no usable page JSON: {rate:.1%}"
        f" (at most {t.max_fallback_rate:.0%})",
    )


CHECKS: tuple[Check, ...] = (
    min_items,
    max_drop,
    title_share,
    abstract_share,
    error_rate,
    retry_exhausted_rate,
    fallback_rate,
)


def evaluate(crawl: GateInput, thresholds: GateThresholds | None = None) -> GateVerdict:
    """Run every check that applies; the release passes when all of them pass."""
    thresholds = thresholds or GateThresholds()
    results = [r for check in CHECKS if (r := check(crawl, thresholds)) is not None]
    return GateVerdict(all(c.passed for c in results), tuple(results))
