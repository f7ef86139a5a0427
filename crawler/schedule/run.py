"""``eventcrawl run``: crawl, check, then publish; the command a schedule calls.

The exit status says what happened, so cron, systemd and CI can act on it without parsing logs.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from crawler import runner
from crawler.fsutil import write_json_atomic
from crawler.schedule.changelog import compute_changelog, previous_lectures, with_withdrawn
from crawler.schedule.config import RunConfig
from crawler.schedule.gate import GateInput, evaluate
from crawler.schedule.lock import StateLock

REPORT_NAME = "run-report.json"


class RunStatus(enum.IntEnum):
    PUBLISHED = 0
    NOTHING_CHANGED = 3
    GATE_REFUSED = 4
    CRAWL_FAILED = 5
    LOCKED = 6
    PUSH_FAILED = 7
    DAMAGED = 8


@dataclass
class RunOutcome:
    status: RunStatus
    message: str
    report: dict[str, Any]


def execute(config: RunConfig, *, force: bool = False) -> RunOutcome:
    """Crawl, read the stage, judge the crawl, publish (and push) when it passes."""
    state = config.state
    state.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"started_at": datetime.now(UTC).isoformat(), "config": _config_dict(config)}
    with StateLock(state):
        crawled = runner.crawl(
            event_ids=config.event_ids,
            state_dir=state,
            web_base=config.web_base,
            api_base=config.api_base,
            overrides=config.settings,
        )
        report["crawl"] = {"finish_reason": crawled.reason, "stats": crawled.stats}
        if not crawled.finished:
            return _finish(
                state,
                report,
                RunStatus.CRAWL_FAILED,
                f"the crawl ended with {crawled.reason!r}; the next run resumes it, the release is untouched",
            )
        staged = runner.read_staged(state)
        report["stage"] = staged.stage_info
        previous = previous_lectures(config.out)
        changelog = compute_changelog(previous, staged.records)
        report["changes"] = changelog.as_dict()
        live_before = sum(1 for r in previous if not r.get("withdrawn"))
        verdict = evaluate(GateInput(staged.records, crawled.stats, live_before or None), config.gate)
        report["gate"] = verdict.as_dict()
        if not verdict.passed and not force:
            return _finish(
                state,
                report,
                RunStatus.GATE_REFUSED,
                "the quality gate refused to publish; the previous release is untouched:\n"
                + verdict.explain(),
            )
        if previous and changelog.empty:
            return _finish(
                state,
                report,
                RunStatus.NOTHING_CHANGED,
                f"nothing changed since the release in {config.out}; nothing published",
            )
        result = runner.publish(
            with_withdrawn(previous, staged.records),
            staged.provenance,
            out_dir=config.out,
            name=config.name or config.out.resolve().name,
            state_dir=state,
        )
        if config.push_to_hub:
            runner.push(config.out, config.push_to_hub, private=config.private, revision=config.revision)
        report["release"] = {
            "version": result.version,
            "out": str(config.out),
            "rows": result.row_counts,
            "forced": force and not verdict.passed,
        }
        return _finish(
            state,
            report,
            RunStatus.PUBLISHED,
            f"published release {result.version} to {config.out}: {changelog.summary()}",
        )


def _config_dict(config: RunConfig) -> dict[str, Any]:
    return {
        "event_ids": list(config.event_ids),
        "state": str(config.state),
        "out": str(config.out),
        "push_to_hub": config.push_to_hub,
        "gate": vars(config.gate),
    }


def _finish(state: Path, report: dict[str, Any], status: RunStatus, message: str) -> RunOutcome:
    report["finished_at"] = datetime.now(UTC).isoformat()
    report["status"] = status.name.lower()
    report["exit_code"] = int(status)
    report["message"] = message
    write_json_atomic(state / REPORT_NAME, report, sort_keys=True)
    return RunOutcome(status, message, report)
