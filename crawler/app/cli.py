"""The ``eventcrawl`` command: crawl, publish, run, demo, check-site, record, events, serve-replica and
cache maintenance. Each command checks its arguments, calls the flow and prints; the options are
:mod:`crawler.app.parser`'s.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crawler import settings as defaults
from crawler.anthology.reader import AnthologyError
from crawler.app import crawling, runner
from crawler.app import demo as demo_flow
from crawler.app.arguments import (
    DAYS,
    SECONDS,
    TIMEOUT,
    ArgumentError,
    check_api_base,
    check_base_url,
    check_card_template,
    check_number,
    check_release_dir,
    check_setting,
    check_state_layout,
    check_writable,
    parse_event_id,
    parse_event_ids,
)
from crawler.app.next_release import NextRelease, NothingToPublish
from crawler.app.parser import DEFAULT_EVENT, build_parser
from crawler.cache.httpcache import cache_size, purge_cache
from crawler.extensions.progress import format_budget
from crawler.frontier import frontier_settings
from crawler.publish.removals import RemovalRequests
from crawler.schedule.config import ConfigError, RunConfig, load_config
from crawler.schedule.gate import GateRefused, GateVerdict
from crawler.schedule.lock import LockHeld, StateLock
from crawler.schedule.run import RunStatus, execute
from crawler.sitetools import events as catalogue
from crawler.sitetools.check import RecordError, check_site, record_site
from crawler.sitetools.safe_text import terminal_text
from crawler.state.fsutil import DamagedFile
from crawler.state.layout import StateDir
from crawler.state.paths import (
    PathError,
    check_dataset_name,
    check_directory,
    check_output_dir,
    check_repo_id,
    check_revision,
    check_state_dir,
)
from crawler.state.stage import StageError, check_worker_name

# No space left on the device, or in the user's quota.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def setting_overrides(args: argparse.Namespace) -> list[tuple[str, object]]:
    """``-s``, ``--page-budget``, ``--subtitles`` and ``--slides``, which ``crawl`` and ``run`` share, as
    the settings they stand for, checked (none for an option not given)."""
    overrides: list[tuple[str, object]] = []
    for text in args.settings:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ArgumentError(f"-s expects KEY=VALUE, got {text!r}")
        overrides.append((key.strip(), check_setting(key.strip(), value)))
    if args.page_budget is not None:
        try:
            overrides.append(
                ("UNDERLINE_PAGE_BUDGET", check_setting("UNDERLINE_PAGE_BUDGET", args.page_budget))
            )
        except ArgumentError as exc:
            raise ArgumentError(f"--page-budget: {exc}") from None
    flags = {"UNDERLINE_SUBTITLES": args.subtitles, "UNDERLINE_SLIDES": args.slides}
    return overrides + [(setting, True) for setting, given in flags.items() if given]


def cmd_crawl(args: argparse.Namespace) -> int:
    args.state = check_state_layout(check_writable(check_state_dir(args.state), what="--state"))
    events = parse_event_ids(args.event_id or [DEFAULT_EVENT])
    web_base = check_base_url(args.web_base, what="--web-base") if args.web_base else None
    api_base = check_api_base(args.api_base) if args.api_base else None
    overrides = setting_overrides(args)
    if args.frontier:
        if any(k == "UNDERLINE_PAGE_BUDGET" and int(float(str(v))) > 0 for k, v in overrides):
            # Each worker would spend the budget on what it read of the listing, not the fleet on all.
            raise ArgumentError("a page budget is for a crawl alone, not for a fleet worker (--frontier)")
        try:
            fleet = frontier_settings(args.frontier, args.worker)
        except ValueError as exc:
            raise ArgumentError(str(exc)) from exc
        overrides = [*fleet.items(), *overrides]
    elif args.worker:
        overrides = [("STAGE_WORKER", check_worker_name(args.worker)), *overrides]
    # Fleet workers share the state directory, each staging under its own name (Redis coordinates them):
    # they take its lock shared, and keep out the commands that take it exclusive (run, publish, this one).
    with StateLock(args.state, shared=bool(args.frontier)):
        result = crawling.crawl(
            event_ids=events, state_dir=args.state, web_base=web_base, api_base=api_base, overrides=overrides
        )
    print(f"crawl {result.reason}: {result.lectures} lectures staged in {StateDir(args.state).stage}")
    print(result.pages())
    budget = format_budget(result.stats)
    if budget:
        print(budget)
    for line in result.empty_events() if result.finished else ():
        print(f"eventcrawl: {line}", file=sys.stderr)
    if not result.finished:
        print(f"eventcrawl: {result.explain()}", file=sys.stderr)
        return int(RunStatus.CRAWL_FAILED)
    kept = result.kept_back_events()
    for event in kept:
        print(
            f"eventcrawl: event {event} kept back: its listing could not be read whole (see the log); a "
            "publish keeps its lectures as last published",
            file=sys.stderr,
        )
    return int(RunStatus.KEPT_BACK if kept else RunStatus.PUBLISHED)


def cmd_publish(args: argparse.Namespace) -> int:
    request = publish_request(args)
    try:
        published = runner.publish_staged(request, built=_print_links)
    except GateRefused as refused:
        _print_failed_checks(refused.verdict)
        print(f"eventcrawl: {refused}; --force publishes anyway", file=sys.stderr)
        return int(RunStatus.GATE_REFUSED)
    result, release = published.result, published.release
    out = request.out_dir
    if published.verdict is not None and not published.verdict.passed:
        _print_failed_checks(published.verdict)
        print("eventcrawl: the quality gate refused the release; published anyway (--force)", file=sys.stderr)
    print(f"published {result.row_counts['lectures']} lectures to {out} (version {result.version})")
    for line in release.notes():
        print(f"eventcrawl: {line}", file=sys.stderr)
    if args.push_to_hub:
        from crawler.publish.hub import push_owed

        owed = push_owed(
            out, args.push_to_hub, state_dir=request.state_dir, private=args.private, revision=args.revision
        )
        if owed.error is not None:
            print(
                f"eventcrawl: release {owed.local_version} is published in {out} but the push to {owed.where}"
                f" failed; the next `run` or `publish --push-to-hub` pushes it: {owed.error}",
                file=sys.stderr,
            )
            return int(RunStatus.PUSH_FAILED)
        if owed.result is not None:
            print(f"pushed to the Hub: {owed.result.commit_url}")
        else:
            print(f"the Hub already has release {owed.local_version} in {owed.where}")
    return int(RunStatus.KEPT_BACK if release.kept_back else RunStatus.PUBLISHED)


def _print_failed_checks(verdict: GateVerdict) -> None:
    for check in verdict.failures():
        print(f"eventcrawl: FAIL {check.name}: {check.message}", file=sys.stderr)


def publish_request(args: argparse.Namespace) -> runner.PublishRequest:
    """``publish``'s flags over its ``--config``, checked before anything is read or written."""
    if args.out is None and args.config is None:
        raise ArgumentError("publish needs --out, or a --config whose [publish] out names the folder")
    config = load_config(args.config).with_overrides(
        state=args.state, out=args.out, name=args.name, retire_events=args.retire_event
    )
    state = check_state_layout(check_state_dir(config.state))
    out, name = check_release_options(
        config,
        state,
        template=args.card_template,
        hub=args.push_to_hub,
        revision=args.revision,
        anthology=args.anthology,
    )
    return runner.PublishRequest(
        state_dir=state,
        out_dir=out,
        name=name,
        removals=RemovalRequests(config.remove_lectures, config.redact_authors),
        retire_events=config.retire_events,
        anthology=args.anthology,
        template=args.card_template,
        allow_partial=args.allow_partial,
        thresholds=config.gate,
        force=args.force,
    )


def _print_links(release: NextRelease) -> None:
    if release.links is not None:
        print(release.links.line())
        for unclear in release.links.unclear:
            print(f"  {unclear}")


def check_release_options(
    config: RunConfig,
    state: Path,
    *,
    hub: str | None,
    revision: str | None,
    anthology: Path | None,
    template: Path | None = None,
) -> tuple[Path, str]:
    """The folder and dataset name of the release ``publish`` and ``run`` write, its card template, Hub
    repository and branch, and the ``--anthology`` folder or file (which must exist), checked."""
    out = check_release_dir(check_writable(check_output_dir(config.out, state_dir=state), what="--out"))
    if template is not None:
        check_card_template(template)
    name = check_dataset_name(config.name or out.name)
    if hub:
        check_repo_id(hub)
    if revision:
        check_revision(revision)
    if anthology is not None and not anthology.exists():
        raise ArgumentError(f"--anthology {anthology}: no such file or directory")
    return out, name


def cmd_run(args: argparse.Namespace) -> int:
    config = load_config(args.config).with_overrides(
        event_ids=args.event_id,
        web_base=args.web_base,
        api_base=args.api_base,
        state=args.state,
        out=args.out,
        name=args.name,
        push_to_hub=args.push_to_hub,
        private=args.private,
        revision=args.revision,
        anthology=args.anthology,
        settings=dict(setting_overrides(args)) or None,
        retire_events=args.retire_event,
    )
    state = check_state_layout(check_writable(check_state_dir(config.state), what="--state"))
    # Before the crawl: a folder that cannot take the release would only be found after it.
    out, _ = check_release_options(
        config, state, hub=config.push_to_hub, revision=config.revision, anthology=config.anthology
    )
    config = config.with_overrides(state=state, out=out)

    status, message = execute(config, force=args.force)
    stream = sys.stdout if status == RunStatus.PUBLISHED else sys.stderr
    print(message, file=stream)
    print(f"report: {StateDir(config.state).run_report}", file=stream)
    return int(status)


def cmd_demo(args: argparse.Namespace) -> int:
    check_release_dir(check_output_dir(args.out, state_dir=args.state))
    try:
        crawled, published, seconds = demo_flow.demo(
            args.out, state_dir=args.state, lectures=args.lectures, seed=args.seed, serving=_print_serving
        )
    except GateRefused as refused:
        _print_failed_checks(refused.verdict)
        print(f"eventcrawl: {refused}; nothing published", file=sys.stderr)
        return int(RunStatus.GATE_REFUSED)
    if published is None:
        print(f"the crawl did not finish ({crawled.reason}); nothing published", file=sys.stderr)
        return 1
    out = args.out.resolve()
    counts = published.row_counts
    print(
        f"published {counts['lectures']} lectures, {counts.get('transcripts', 0)} subtitle tracks and"
        f" {counts.get('slides', 0)} slide decks and posters to {out} in {seconds:.1f} s"
    )
    print("load it with:")
    print(f"  python -c \"import datasets; print(datasets.load_dataset({str(out)!r})['train'])\"")
    for table in ("transcripts", "slides"):
        if counts.get(table):
            print(
                f'  python -c "import datasets;'
                f" print(datasets.load_dataset({str(out)!r}, {table!r}, split='train'))\""
            )
    return 0


def _print_serving(base_url: str) -> None:
    print(f"replica of Underline serving on {base_url}", flush=True)


def _site_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """Where and how to look at the site: what :func:`check_site` and :func:`record_site` are given."""
    return dict(
        event_id=parse_event_id(args.event_id),
        web_base=check_base_url(args.web_base or defaults.UNDERLINE_WEB_BASE, what="--web-base"),
        api_base=check_api_base(args.api_base or defaults.UNDERLINE_API_BASE),
        delay=check_number(args.delay, what="--delay", bounds=SECONDS),
        timeout=check_number(args.timeout, what="--timeout", bounds=TIMEOUT),
    )


def cmd_check_site(args: argparse.Namespace) -> int:
    report, _ = check_site(**_site_arguments(args))
    print(report.render())
    return 0 if report.passed else 1


def cmd_record(args: argparse.Namespace) -> int:
    out = check_writable(check_directory(args.out, what="--out"), what="--out")
    if args.lectures < 1:
        raise ArgumentError(f"--lectures must be at least 1, not {args.lectures}")
    try:
        index = record_site(out, lectures=args.lectures, **_site_arguments(args))
    except RecordError as exc:
        print(f"eventcrawl: nothing recorded: {exc}", file=sys.stderr)
        return 1
    off = index["off_origin_redirects"]
    note = f"; {off} redirect(s) off the site not followed" if off else ""
    print(f"recorded {len(index['responses'])} answers ({len(index['lecture_ids'])} lectures) in {out}{note}")
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    state = check_state_layout(check_state_dir(args.state))
    cache_dir = StateDir(state).http_cache
    if args.cache_command == "purge":
        check_number(args.max_age_days, what="--max-age-days", bounds=DAYS)
        # A crawl revalidates and stores entries while it runs: purge only when no command works on the
        # state directory (the lock is taken exclusive, as publish does; a missing folder has no cache).
        with StateLock(state) if state.is_dir() else contextlib.nullcontext():
            result = purge_cache(cache_dir, args.max_age_days * 86400)
        print(
            f"removed {result['removed_entries']} entries ({result['removed_bytes']} bytes) from {cache_dir}"
        )
    entries, size = cache_size(cache_dir)
    print(f"{cache_dir}: {entries} entries, {size} bytes")
    return 0


# -- events: the events of the whole library, for a run's event_ids ---------------------------------


def _events_progress(number: int, claimed: int | None, delay: float) -> None:
    line = catalogue.progress_line(number, claimed, delay)
    if line is not None:
        print(f"eventcrawl: {line}", file=sys.stderr, flush=True)


def cmd_events(args: argparse.Namespace) -> int:
    if not 1 <= args.page_size <= catalogue.MAX_PAGE_SIZE:
        raise ArgumentError(f"--page-size must be from 1 to {catalogue.MAX_PAGE_SIZE}, not {args.page_size}")
    if args.max_pages < 1:
        raise ArgumentError(f"--max-pages must be at least 1, not {args.max_pages}")
    if not args.max_age_hours >= 0 or not args.delay >= 0:
        raise ArgumentError("--max-age-hours and --delay must be numbers of 0 or more")
    state = check_writable(check_state_dir(args.state), what="--state")
    api_base = check_api_base(args.api_base or defaults.UNDERLINE_API_BASE)
    try:
        answer = catalogue.events(
            state,
            api_base,
            max_age_hours=args.max_age_hours,
            refresh=args.refresh,
            delay=args.delay,
            page_size=args.page_size,
            max_pages=args.max_pages,
            progress=_events_progress,
        )
    except catalogue.CatalogueError as exc:
        # The message may quote the site (a content type, a page's error): shown as the names are.
        print(f"eventcrawl: {terminal_text(str(exc))}", file=sys.stderr)
        return 1
    found = catalogue.matching(answer.catalogue.events, args.match)
    read = answer.catalogue
    if args.json:
        shown = {**catalogue.catalogue_json(read), "from_cache": answer.from_cache}
        shown["events"] = [catalogue.event_row(e) for e in found]
        shown["event_ids"] = [e.event_id for e in found]
        print(json.dumps(shown, ensure_ascii=False, indent=2))
        return 0
    for note in read.notes:
        print(f"eventcrawl: {terminal_text(note)}", file=sys.stderr)
    for line in catalogue.render_table(found):
        print(line)
    how = "kept in" if not answer.from_cache else "from"
    print(
        f"{len(found)} of {len(read.events)} events; {read.lectures} lectures in {read.pages} listing pages, "
        f"read {read.read_at.isoformat(timespec='seconds')} ({how} {answer.path}; --refresh reads again)"
    )
    if args.match and not found:
        print(f"eventcrawl: no event matches {', '.join(args.match)}", file=sys.stderr)
    print("# in the [crawl] section of the run configuration:")
    print(catalogue.toml_line(found))
    return 0


COMMANDS = {
    "crawl": cmd_crawl,
    "publish": cmd_publish,
    "run": cmd_run,
    "demo": cmd_demo,
    "check-site": cmd_check_site,
    "record": cmd_record,
    "cache": cmd_cache,
    "events": cmd_events,
}


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["serve-replica"]:
        from crawler.replica.server import main as replica_main

        return replica_main(given[1:])
    parser = build_parser()
    args = parser.parse_args(given)
    try:
        return COMMANDS[args.command](args)
    except (ArgumentError, ConfigError, StageError, PathError, NothingToPublish, AnthologyError) as exc:
        print(f"eventcrawl: {exc}", file=sys.stderr)
        return 2
    except LockHeld as exc:
        print(f"eventcrawl: {exc}", file=sys.stderr)
        return int(RunStatus.LOCKED)
    except DamagedFile as exc:
        print(f"eventcrawl: {exc}", file=sys.stderr)
        return int(RunStatus.DAMAGED)
    except OSError as exc:
        # A full disk is a failure any command that writes can meet; other system errors are not expected.
        if exc.errno not in DISK_FULL_ERRNOS:
            raise
        print(f"eventcrawl: {' '.join(str(exc).split())}; free some space and run it again", file=sys.stderr)
        return int(RunStatus.DISK_FULL)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
