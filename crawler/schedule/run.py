"""``eventcrawl run``: crawl, check, then publish; the command a schedule calls.

The exit status says what happened, so cron, systemd and CI can act on it without parsing logs.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from crawler.fsutil import write_json_atomic
from crawler.schedule.config import RunConfig
from crawler.schedule.gate import GateVerdict, evaluate
from crawler.schedule.lock import StateLock
from crawler.schema import CONTENT_FIELDS

REPORT_NAME = "run-report.json"


class RunStatus(enum.IntEnum):
    PUBLISHED = 0
    NOTHING_CHANGED = 3
    GATE_REFUSED = 4
    CRAWL_FAILED = 5
    LOCKED = 6


@dataclass
class Changelog:
    """What a release changes against the previous one, lecture by lecture."""

    added: list[str] = field(default_factory=list)
    changed: dict[str, list[str]] = field(default_factory=dict)
    gone: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.gone)

    def as_dict(self) -> dict[str, Any]:
        return {"added": self.added, "changed": self.changed, "gone": self.gone}

    def summary(self) -> str:
        return f"{len(self.added)} added, {len(self.changed)} changed, {len(self.gone)} gone"


def previous_lectures(out_dir: Path) -> list[dict[str, Any]]:
    """The lecture rows of the release in ``out_dir`` (empty when there is none)."""
    directory = out_dir / "data" / "lectures"
    if not (out_dir / "manifest.json").is_file() or not directory.is_dir():
        return []
    return list(pq.read_table(directory).to_pylist())


def compute_changelog(
    previous: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]]
) -> Changelog:
    """Added, changed (with the names of the fields that changed) and gone lecture ids.

    A lecture already marked withdrawn in ``previous`` is not gone again; if it is back, it is added.
    """
    before = {r["lecture_id"]: r for r in previous if not r.get("withdrawn")}
    after = {r["lecture_id"]: r for r in current}
    log = Changelog(added=sorted(after.keys() - before.keys(), key=_id_order))
    for lecture_id in sorted(after.keys() & before.keys(), key=_id_order):
        old, new = before[lecture_id], after[lecture_id]
        if old.get("content_sha256") == new.get("content_sha256"):
            continue
        fields = [name for name in CONTENT_FIELDS if _comparable(old.get(name)) != _comparable(new.get(name))]
        log.changed[lecture_id] = fields
    log.gone = sorted(before.keys() - after.keys(), key=_id_order)
    return log


def _comparable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    if isinstance(value, tuple):
        return list(value)
    return value


def _id_order(lecture_id: str) -> tuple[int, str]:
    return (len(lecture_id), lecture_id)


def with_withdrawn(
    previous: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """``current`` plus every earlier lecture no longer on the site, kept and marked withdrawn."""
    present = {r["lecture_id"] for r in current}
    kept = [{**r, "withdrawn": True} for r in previous if r["lecture_id"] not in present]
    return [dict(r) for r in current] + kept


@dataclass
class RunOutcome:
    status: RunStatus
    message: str
    report: dict[str, Any]


CrawlFn = Callable[[RunConfig], Any]
PublishFn = Callable[[RunConfig, list[dict[str, Any]]], Any]


def execute(
    config: RunConfig,
    *,
    crawl: CrawlFn,
    read_records: Callable[[Path], tuple[list[dict[str, Any]], dict[str, Any]]],
    publish: PublishFn,
    force: bool = False,
) -> RunOutcome:
    """The run's logic; the crawl, stage reading and publishing are passed in by the CLI."""
    state = config.state
    state.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"started_at": datetime.now(UTC).isoformat(), "config": _config_dict(config)}
    with StateLock(state):
        crawl_outcome = crawl(config)
        stats = dict(getattr(crawl_outcome, "stats", {}) or {})
        reason = str(getattr(crawl_outcome, "reason", "unknown"))
        report["crawl"] = {"finish_reason": reason, "stats": stats}
        if reason != "finished":
            return _finish(
                state,
                report,
                RunStatus.CRAWL_FAILED,
                f"the crawl ended with {reason!r}; the next run resumes it, the release is untouched",
            )
        records, stage_info = read_records(state)
        report["stage"] = stage_info
        previous = previous_lectures(config.out)
        changelog = compute_changelog(previous, records)
        report["changes"] = changelog.as_dict()
        live_before = sum(1 for r in previous if not r.get("withdrawn"))
        verdict: GateVerdict = evaluate(records, stats, live_before or None, config.gate)
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
        result = publish(config, with_withdrawn(previous, records))
        report["release"] = {
            "version": getattr(result, "version", None),
            "out": str(config.out),
            "rows": getattr(result, "row_counts", {}),
            "forced": force and not verdict.passed,
        }
        return _finish(
            state,
            report,
            RunStatus.PUBLISHED,
            f"published release {report['release']['version']} to {config.out}: {changelog.summary()}",
        )


def _config_dict(config: RunConfig) -> dict[str, Any]:
    return {
        "event_id": config.event_id,
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
