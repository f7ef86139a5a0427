"""One gate for every command that writes a release: ``run`` and ``publish`` judge the next release with
the same checks (:mod:`crawler.schedule.gate`), from a few small fields per lecture read one event at a
time, and against the statistics of the crawl it was made from.

``run`` has its crawl's statistics in hand; ``publish`` reads them from the state directory
(:func:`staged_statistics`): the counters every crawl process kept in the stage, a fleet's workers
added up, or the last crawl's report when the stage keeps none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from crawler import stats_keys as keys
from crawler.schedule.gate import (
    CheckResult,
    GateInput,
    GateRefused,
    GateRow,
    GateThresholds,
    GateVerdict,
    evaluate,
    row_coverage,
)
from crawler.schedule.tables_gate import LeftOnRequest, judge_tables
from crawler.state.layout import StateDir

if TYPE_CHECKING:
    from crawler.app.next_release import NextRelease
    from crawler.publish.removals import Redactions
    from crawler.schema import Lecture


def redacted_lectures(release: NextRelease) -> list[str]:
    """The previous release's lectures with an author the redactions in force take out: their rows
    change on request (no loss for the gate over the tables)."""
    redactions = release.redactions
    if not redactions:
        return []
    return [
        lecture.lecture_id
        for lecture in release.previous.iter_lectures()
        if any(redactions.matches(author) for author in lecture.authors or [])
    ]


def table_checks(
    release: NextRelease, thresholds: GateThresholds, *, force: bool = False
) -> tuple[Callable[[Path, Path], None], list[CheckResult]]:
    """The gate over every declared table (:mod:`crawler.schedule.tables_gate`), as a publish calls it on
    the release built aside (``check_built``), and the list it fills with the results: it refuses the
    release (``GateRefused``, nothing swapped in) when one fails, unless ``force``."""
    left = LeftOnRequest(
        frozenset(release.removals.lectures),
        frozenset(release.retired_events),
        frozenset(redacted_lectures(release)),
    )
    results: list[CheckResult] = []

    def check(built: Path, previous: Path) -> None:
        results[:] = judge_tables(built, previous, thresholds, left)
        if not all(c.passed for c in results) and not force:
            raise GateRefused(GateVerdict(False, tuple(results)))

    return check, results


def refusal(verdict: GateVerdict, command: str) -> dict[str, object]:
    """What the stage's ``REFUSED`` marker records of a verdict, and of the command that refused."""
    return {
        "command": command,
        "failed_checks": [c.name for c in verdict.failures()],
        "gate": verdict.as_dict(),
    }


def release_rows(release: NextRelease) -> tuple[list[GateRow], list[GateRow]]:
    """The release's live rows and the previous release's: what the gate compares, as gate rows, read
    one event at a time. What left on request (a retired event, a lecture removed, the authors
    redacted) is not counted in the previous release: it is no loss."""
    now = [GateRow.of(lecture) for lecture in release.events if not lecture.withdrawn]
    retired = set(release.retired_events)
    removed = set(release.removals.lectures)
    before = [
        row_as_asked(lecture, release.redactions)
        for lecture in release.previous.iter_lectures()
        if not lecture.withdrawn
        and str(lecture.event_id) not in retired
        and lecture.lecture_id not in removed
    ]
    return now, before


def row_as_asked(lecture: Lecture, redactions: Redactions) -> GateRow:
    """A previous release's lecture as the gate compares it: without authors when every one of them is
    redacted on request (their absence from the release is asked for, no loss)."""
    row = GateRow.of(lecture)
    if redactions and lecture.authors and all(redactions.matches(a) for a in lecture.authors):
        return row.without("authors")
    return row


def judge_release(
    release: NextRelease, stats: Mapping[str, object], thresholds: GateThresholds, *, bad_lines: int
) -> tuple[GateVerdict, dict[str, dict[str, dict[str, float]]]]:
    """The gate's verdict on ``release`` against its previous release, with the crawl's ``stats``; the
    staged lines that could not be read back (``bad_lines``) are lectures lost. With it, each field's
    coverage in the release and in the previous one (``{"now": ..., "previous": ...}``, each
    ``{event_id: {field: share}}``), as the run report holds it."""
    now, before = release_rows(release)
    counted = {**stats, keys.STAGE_BAD_LINES: bad_lines}
    verdict = evaluate(GateInput(now, counted, len(before) or None, before), thresholds)
    return verdict, {"now": row_coverage(now), "previous": row_coverage(before)}


def staged_statistics(state_dir: Path) -> dict[str, object]:
    """The counters of the crawl staged in ``state_dir``: every crawl process's
    (``stage/stats-<worker>.json``, a fleet's workers added up), or the last crawl report's statistics
    when the stage keeps none; empty when neither is there."""
    from crawler.app.crawling import read_crawl_report
    from crawler.extensions.crawl_stats import add_counters
    from crawler.state.fsutil import read_json_file

    found = sorted(StateDir.of(state_dir).stage.glob("stats-*.json"))
    if not found:
        stats = read_crawl_report(state_dir).get("stats")
        return dict(stats) if isinstance(stats, dict) else {}
    total: dict[str, object] = {}
    for path in found:
        counters = read_json_file(
            path, recovery="remove it to judge the crawl without that process's counters"
        )
        if isinstance(counters, dict):
            total = add_counters(total, counters)
    return total
