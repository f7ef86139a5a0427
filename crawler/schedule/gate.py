"""The quality gate: checks on a finished crawl before it may replace the published release.

Each check reads the crawl's own statistics or compares its records with the previous release,
in the spirit of spidermon's close-time monitors. A failing check refuses the release and says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any


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


ERROR_STATS = (
    "underline/fetch_failed",
    "underline/page_unparsable",
    "underline/page_without_lecture",
    "spider_exceptions/count",
)


def _count(stats: Mapping[str, Any], key: str) -> float:
    value = stats.get(key, 0)
    return float(value) if isinstance(value, int | float) else 0.0


def _rate(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def evaluate(
    records: Sequence[Mapping[str, Any]],
    stats: Mapping[str, Any],
    previous_rows: int | None,
    thresholds: GateThresholds | None = None,
) -> GateVerdict:
    """Run every check; ``previous_rows`` is the live lecture count of the last release, if any."""
    thresholds = thresholds or GateThresholds()
    n = len(records)
    checks: list[CheckResult] = []

    checks.append(
        CheckResult(
            "min_items",
            n >= thresholds.min_items,
            n,
            thresholds.min_items,
            f"{n} lectures (at least {thresholds.min_items} required)",
        )
    )
    if previous_rows:
        drop = max(0.0, 1 - n / previous_rows)
        checks.append(
            CheckResult(
                "max_drop",
                drop <= thresholds.max_drop,
                round(drop, 4),
                thresholds.max_drop,
                f"{n} lectures against {previous_rows} in the previous release: a drop of {drop:.1%}"
                f" (at most {thresholds.max_drop:.0%} allowed)",
            )
        )
    titled = sum(1 for r in records if (r.get("title") or "").strip())
    share = _rate(titled, n)
    checks.append(
        CheckResult(
            "title_share",
            n == 0 or share >= thresholds.min_title_share,
            round(share, 4),
            thresholds.min_title_share,
            f"{share:.1%} of lectures have a title (at least {thresholds.min_title_share:.0%} required)",
        )
    )
    with_abstract = sum(1 for r in records if (r.get("abstract") or "").strip())
    share = _rate(with_abstract, n)
    checks.append(
        CheckResult(
            "abstract_share",
            n == 0 or share >= thresholds.min_abstract_share,
            round(share, 4),
            thresholds.min_abstract_share,
            f"{share:.1%} of lectures have an abstract (at least {thresholds.min_abstract_share:.0%})",
        )
    )
    pages = _count(stats, "underline/listed") or float(n)
    errors = float(sum(_count(stats, key) for key in ERROR_STATS))
    rate = _rate(errors, pages)
    checks.append(
        CheckResult(
            "error_rate",
            rate <= thresholds.max_error_rate,
            round(rate, 4),
            thresholds.max_error_rate,
            f"{int(errors)} failed pages of {int(pages)}: {rate:.1%}"
            f" (at most {thresholds.max_error_rate:.0%})",
        )
    )
    requests = _count(stats, "downloader/request_count")
    exhausted = _count(stats, "backoff/max_reached") + _count(stats, "retry/max_reached")
    rate = _rate(exhausted, requests)
    checks.append(
        CheckResult(
            "retry_exhausted_rate",
            rate <= thresholds.max_retry_exhausted_rate,
            round(rate, 4),
            thresholds.max_retry_exhausted_rate,
            f"{int(exhausted)} requests gave up after retries of {int(requests)}: {rate:.1%}"
            f" (at most {thresholds.max_retry_exhausted_rate:.0%})",
        )
    )
    fallback = _count(stats, "underline/extraction/visible_text")
    extracted = fallback + _count(stats, "underline/extraction/next_data")
    rate = _rate(fallback, extracted)
    checks.append(
        CheckResult(
            "fallback_rate",
            rate <= thresholds.max_fallback_rate,
            round(rate, 4),
            thresholds.max_fallback_rate,
            f"{int(fallback)} of {int(extracted)} pages had no usable page JSON: {rate:.1%}"
            f" (at most {thresholds.max_fallback_rate:.0%})",
        )
    )
    return GateVerdict(all(c.passed for c in checks), tuple(checks))
