"""``eventcrawl run``: crawl, check, then publish; the command a schedule calls.

The exit status says what happened, so cron, systemd and CI can act on it without parsing logs.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from crawler import stats_keys as keys
from crawler.app import crawling, runner
from crawler.app.crawling import CrawlResult
from crawler.app.next_release import NextRelease, StagedCrawl, next_release, read_staged
from crawler.extensions.progress import budget_summary, format_budget
from crawler.publish.diff import ReleaseDiff, diff_releases
from crawler.publish.removals import RemovalRequests
from crawler.schedule.changelog import Changelog, changelog_of
from crawler.schedule.config import RunConfig
from crawler.schedule.gate import GateRefused, GateThresholds, GateVerdict
from crawler.schedule.judge import judge_release, refusal, table_checks
from crawler.schedule.lock import StateLock
from crawler.state.fsutil import write_json_atomic
from crawler.state.layout import StateDir
from crawler.state.stage import mark_refused


class RunStatus(enum.IntEnum):
    PUBLISHED = 0
    NOTHING_CHANGED = 3
    GATE_REFUSED = 4
    CRAWL_FAILED = 5
    LOCKED = 6
    PUSH_FAILED = 7
    DAMAGED = 8
    # Published, but an event's listing could not be read whole: that event's rows stay as they were.
    KEPT_BACK = 9
    # A file could not be written: the disk (or the user's quota) is full.
    DISK_FULL = 10


# ``run-report.json``: what the run did, part by part (a part is missing when the run stopped before it).
RunReport = dict[str, Any]
# What a run ends with: its exit status and the message for the operator.
Verdict = tuple[RunStatus, str]


def execute(config: RunConfig, *, force: bool = False) -> Verdict:
    """Crawl, read the stage, judge the crawl, publish when it passes, and push what the Hub lacks."""
    state = config.state
    state.mkdir(parents=True, exist_ok=True)
    report: RunReport = {"started_at": datetime.now(UTC).isoformat(), "config": _config_dict(config)}
    with StateLock(state):
        status, message = _crawl_and_publish(config, report, force=force)
        if config.push_to_hub:
            status, message = _push_pending(config, report, status, message)
        report["finished_at"] = datetime.now(UTC).isoformat()
        report.update(status=status.name.lower(), exit_code=int(status), message=message)
        write_json_atomic(StateDir(state).run_report, report, sort_keys=True)
        return status, message


def _crawl_and_publish(config: RunConfig, report: RunReport, *, force: bool) -> Verdict:
    crawled = _crawl(config, report)
    refused = _crawl_refused(crawled, force=force)
    if refused is not None:
        return refused
    state = config.state
    staged = read_staged(state)
    report["stage"] = staged.stage_info
    # Removals apply and links are made before anything is compared: a removed lecture is not "added"
    # each night, and a link added or changed is a change of the lecture.
    release = next_release(
        staged,
        out_dir=config.out,
        state_dir=state,
        removals=RemovalRequests(config.remove_lectures, config.redact_authors),
        retire_events=config.retire_events,
        anthology=config.anthology,
    )
    changelog, diff = _report_changes(release, staged, report)
    verdict = _judge(release, crawled, staged, config.gate, report)
    notes = "".join(f"\n{line}" for line in release.notes())
    if diff.repaired:
        notes += (
            f"\n{len(diff.repaired)} rows edited in place in the release are restored as published (no "
            "change of the site, and none in the change file)"
        )
    if not verdict.passed and not force:
        return _refused(state, verdict)
    budget = format_budget(crawled.stats)
    notes += f"\n{budget}" if budget else ""
    if release.unchanged:
        return (
            RunStatus.KEPT_BACK if release.kept_back else RunStatus.NOTHING_CHANGED,
            f"nothing changed since the release in {config.out}; nothing published ({crawled.pages()})"
            + notes,
        )
    version = _publish_judged(config, release, staged, report, verdict, force=force)
    if not isinstance(version, str):
        return version
    linked = f"; {release.links.line()}" if release.links is not None else ""
    return (
        RunStatus.KEPT_BACK if release.kept_back else RunStatus.PUBLISHED,
        f"published release {version} to {config.out}: {changelog.summary()} ({crawled.pages()})"
        + notes
        + linked,
    )


def _refused(state: Path, verdict: GateVerdict) -> Verdict:
    """The gate's refusal: what it refused is no base for the next night's refresh (fetched again)."""
    mark_refused(state, refusal(verdict, "run"))
    return (
        RunStatus.GATE_REFUSED,
        "the quality gate refused to publish; the previous release is untouched:\n" + verdict.explain(),
    )


def _publish_judged(
    config: RunConfig,
    release: NextRelease,
    staged: StagedCrawl,
    report: RunReport,
    verdict: GateVerdict,
    *,
    force: bool,
) -> str | Verdict:
    """Publish the release once every table's checks pass on it, built aside (the lecture checks passed,
    or ``force``): its version, or the gate's refusal with the release untouched."""
    check_tables, table_results = table_checks(release, config.gate, force=force)
    try:
        result = runner.publish(
            release,
            staged.provenance,
            out_dir=config.out,
            name=config.name or config.out.resolve().name,
            state_dir=config.state,
            check_built=check_tables,
        )
    except GateRefused as refused:
        judged = verdict.with_checks(refused.verdict.checks)
        report["gate"] = judged.as_dict()
        return _refused(config.state, judged)
    judged = verdict.with_checks(table_results)
    report["gate"] = judged.as_dict()
    report["release"] = {
        "version": result.version,
        "out": str(config.out),
        "rows": result.row_counts,
        "forced": force and not judged.passed,
    }
    return result.version


def _crawl(config: RunConfig, report: RunReport) -> CrawlResult:
    crawled = crawling.crawl(
        event_ids=config.event_ids,
        state_dir=config.state,
        web_base=config.web_base,
        api_base=config.api_base,
        overrides=config.settings,
        release_dir=config.out,
    )
    report["crawl"] = {
        "finish_reason": crawled.reason,
        "pages": crawled.pages(),
        "empty_events": crawled.empty_events(),
        "stats": crawled.stats,
        "page_budget": budget_summary(crawled.stats),
    }
    return crawled


def _crawl_refused(crawled: CrawlResult, *, force: bool) -> Verdict | None:
    """Why nothing may be published from this crawl; None when it may go on to the gate."""
    if not crawled.finished:
        return (
            RunStatus.CRAWL_FAILED,
            f"{crawled.explain()}; the release is untouched",
        )
    empty = crawled.empty_events()
    if empty and not force:
        # An event id that lists nothing is a typo or an event the site took down: say which, publish
        # nothing until the configuration says what to do with it.
        return (
            RunStatus.GATE_REFUSED,
            "; ".join(empty) + ": nothing published, the previous release is untouched. Check the event id, "
            "retire the event (retire_events / --retire-event) or publish the other events with --force",
        )
    return None


def release_diff(release: NextRelease) -> ReleaseDiff:
    """The next release's diff against the previous one: what its changelog, change file and card tell."""
    return diff_releases(release.previous.iter_lectures(), release.records)


def _report_changes(
    release: NextRelease, staged: StagedCrawl, report: RunReport
) -> tuple[Changelog, ReleaseDiff]:
    """Put the release's changelog, its Anthology links and its events into the report; the changelog
    and the diff it was read from."""
    diff = release_diff(release)
    changelog = changelog_of(diff, retired_events=release.retired_events)
    # The changelog, and the events retired from the release (event id -> lectures dropped).
    report["changes"] = {**changelog.as_dict(), "retired_events": release.retired_events}
    if diff.repaired:
        # Rows edited in place in the release, which this one restores: no change of the site.
        report["changes"]["repaired"] = list(diff.repaired)
    if release.links is not None:
        report["anthology"] = release.links.as_dict()
    report["changes_by_event"] = changelog.by_event()
    report["events"] = {
        "crawled": list(staged.event_ids),
        "not_crawled_kept": release.carried_events,
        # Crawled, but their listing could not be read whole: kept as last published (event -> why).
        "kept_back": release.kept_back,
        "retired": release.retired_events,
        "notes": release.notes(),
    }
    return changelog, diff


def _judge(
    release: NextRelease,
    crawled: CrawlResult,
    staged: StagedCrawl,
    thresholds: GateThresholds,
    report: RunReport,
) -> GateVerdict:
    """The gate's verdict on the release's live lectures against the previous release's (the one gate
    ``publish`` passes too), reported with the fields' coverage and the attributes the crawler does not
    map."""
    # A staged line that cannot be read back is a lecture lost: it counts against the lost share.
    verdict, report["coverage"] = judge_release(
        release, crawled.stats, thresholds, bad_lines=staged.stage_info["bad_lines"]
    )
    report["gate"] = verdict.as_dict()
    report["unmapped_attributes"] = unmapped_attributes(crawled.stats)
    return verdict


def _push_pending(config: RunConfig, report: RunReport, status: RunStatus, message: str) -> Verdict:
    """Push the local release when the Hub does not have it yet: this run's, or one a failed push left
    (``run`` or ``publish``'s: the same record tells both)."""
    from crawler.publish.hub import push_owed

    assert config.push_to_hub
    owed = push_owed(
        config.out,
        config.push_to_hub,
        state_dir=config.state,
        private=config.private,
        revision=config.revision,
    )
    local, where = owed.local_version, owed.where
    hub: dict[str, object] = {"repo": where, "local_version": local, "hub_version": owed.hub_version}
    report["hub"] = hub
    if owed.error is not None:
        hub["error"] = owed.error
        if status in (RunStatus.GATE_REFUSED, RunStatus.CRAWL_FAILED):
            return status, f"{message}\nthe push of release {local} failed too; the next run retries it"
        return (
            RunStatus.PUSH_FAILED,
            f"{message}\nrelease {local} is published locally but the push to {where} failed; the next run"
            f" pushes it: {owed.error}",
        )
    if owed.result is None:
        return status, message
    hub["commit"] = owed.result.commit_url
    if status == RunStatus.NOTHING_CHANGED:
        return RunStatus.PUBLISHED, f"pushed release {local}, which an earlier run could not push, to {where}"
    return status, f"{message}; pushed to {where}"


def unmapped_attributes(stats: Mapping[str, object]) -> dict[str, dict[str, object]]:
    """Attributes the site sent that the crawler does not map: how many lectures carried each, and an
    example value (personal data scrubbed), so a renamed attribute shows up beside its emptied field."""
    found: dict[str, dict[str, object]] = {}
    for key, value in stats.items():
        if key.startswith(keys.UNMAPPED_ATTRIBUTE):
            found.setdefault(key[len(keys.UNMAPPED_ATTRIBUTE) :], {})["lectures"] = value
        elif key.startswith(keys.UNMAPPED_EXAMPLE):
            found.setdefault(key[len(keys.UNMAPPED_EXAMPLE) :], {})["example"] = value
    return dict(sorted(found.items()))


def _config_dict(config: RunConfig) -> dict[str, object]:
    return {
        "event_ids": list(config.event_ids),
        "state": str(config.state),
        "out": str(config.out),
        "push_to_hub": config.push_to_hub,
        "retire_events": list(config.retire_events),
        "anthology": str(config.anthology) if config.anthology else None,
        "gate": {k: dict(v) if isinstance(v, Mapping) else v for k, v in vars(config.gate).items()},
    }
