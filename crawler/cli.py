"""The ``eventcrawl`` command: crawl, publish, demo, serve-replica and cache maintenance."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from crawler import __version__
from crawler.fsutil import write_json_atomic
from crawler.paths import (
    PathError,
    check_dataset_name,
    check_output_dir,
    check_repo_id,
    check_revision,
    check_state_dir,
)
from crawler.stage import StageError
from crawler.urls import without_credentials

DEFAULT_STATE = Path("state")
DEFAULT_EVENT = "502"
DEMO_NAME = "emnlp-2025-demo"
# Settings a dataset's provenance records: the ones that change what or how politely was fetched.
PROVENANCE_SETTINGS = (
    "USER_AGENT",
    "ROBOTSTXT_OBEY",
    "DOWNLOAD_DELAY",
    "CONCURRENT_REQUESTS_PER_DOMAIN",
    "AUTOTHROTTLE_ENABLED",
    "HTTPCACHE_ENABLED",
)


class UsageError(Exception):
    """A user error: printed without a traceback, exit status 2."""


@dataclass
class CrawlOutcome:
    reason: str
    stats: dict[str, Any]
    settings: dict[str, Any]

    @property
    def lectures(self) -> int:
        return int(self.stats.get("stage/lectures", 0))


def parse_setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"-s expects KEY=VALUE, got {text!r}")
    return key.strip(), value


def run_crawl(
    *,
    event_id: str,
    state_dir: Path,
    web_base: str | None = None,
    api_base: str | None = None,
    overrides: Sequence[tuple[str, Any]] = (),
) -> CrawlOutcome:
    """Run the ``underline`` spider in this process (once: Twisted's reactor cannot restart)."""
    from scrapy.crawler import CrawlerProcess

    from crawler.runner import crawl_settings

    state_dir = state_dir.resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    settings = crawl_settings(state_dir, web_base=web_base, api_base=api_base, overrides=overrides)
    process = CrawlerProcess(settings)
    crawler = process.create_crawler("underline")
    process.crawl(crawler, event_id=event_id)
    process.start()
    assert crawler.stats is not None
    stats = dict(crawler.stats.get_stats())
    used = {key: crawler.settings.get(key) for key in PROVENANCE_SETTINGS}
    used["UNDERLINE_WEB_BASE"] = crawler.settings.get("UNDERLINE_WEB_BASE")
    used["UNDERLINE_API_BASE"] = crawler.settings.get("UNDERLINE_API_BASE")
    outcome = CrawlOutcome(reason=str(stats.get("finish_reason", "unknown")), stats=stats, settings=used)
    write_report(state_dir, outcome, event_id)
    return outcome


def write_report(state_dir: Path, outcome: CrawlOutcome, event_id: str) -> Path:
    report = {
        "event_id": event_id,
        "finish_reason": outcome.reason,
        "crawler_version": __version__,
        "settings": outcome.settings,
        "stats": outcome.stats,
    }
    return write_json_atomic(state_dir / "crawl-report.json", report, sort_keys=True)


@dataclass
class StagedForRelease:
    """The staged crawl, merged into one record per lecture, with the provenance of the crawl."""

    records: list[dict[str, Any]]
    provenance: dict[str, Any]


def load_staged(state_dir: Path, *, allow_partial: bool = False) -> StagedForRelease:
    from crawler.stage import read_stage

    staged = read_stage(state_dir)
    if not staged.complete and not allow_partial:
        raise UsageError(
            f"the crawl staged in {state_dir} did not finish; resume it with `eventcrawl crawl --state "
            f"{state_dir}` or publish it anyway with --allow-partial"
        )
    if not staged.records:
        raise UsageError(f"the crawl staged in {state_dir} holds no lectures; nothing to publish")
    from crawler.dedup.index import load_index
    from crawler.dedup.records import merge_duplicates

    # Ids already published keep their place when a talk turns up under a second id.
    published = load_index(state_dir).record_ids()
    records, dedup = merge_duplicates(staged.records, state_dir=state_dir, published=published)
    report_path = state_dir / "crawl-report.json"
    report: dict[str, Any] = {}
    if report_path.exists():
        report = json.loads(report_path.read_text(encoding="utf-8"))
    first = staged.records[0]
    provenance = {
        "crawl_date": str(staged.summary.get("finished_at") or datetime.now(UTC).isoformat())[:10],
        "crawler_version": __version__,
        "event_id": first.get("event_id"),
        "event_name": first.get("event_name"),
        "web_base": without_credentials(
            str(report.get("settings", {}).get("UNDERLINE_WEB_BASE") or staged.summary.get("web_base") or "")
        ),
        "settings": {
            key: without_credentials(value) if isinstance(value, str) and "://" in value else value
            for key, value in report.get("settings", {}).items()
        },
        "staged_lines": staged.lines,
        "bad_lines": staged.bad_lines,
        "dedupe": dedup.summary(),
    }
    return StagedForRelease(records, provenance)


def publish_records(
    records: list[dict[str, Any]],
    provenance: dict[str, Any],
    *,
    out_dir: Path,
    name: str,
    state_dir: Path,
    template: Path | None = None,
) -> Any:
    from crawler.dedup.index import update_index
    from crawler.publish.release import publish_release

    result = publish_release(records, out_dir, name=name, provenance=provenance, template=template)
    update_index(records, state_dir)
    return result


def run_publish(
    *,
    state_dir: Path,
    out_dir: Path,
    name: str,
    allow_partial: bool = False,
    template: Path | None = None,
) -> Any:
    staged = load_staged(state_dir, allow_partial=allow_partial)
    return publish_records(
        staged.records, staged.provenance, out_dir=out_dir, name=name, state_dir=state_dir, template=template
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eventcrawl",
        description="Crawl conference lecture pages on Underline and publish them as a Hugging Face dataset.",
    )
    parser.add_argument("--version", action="version", version=f"eventcrawl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    crawl = sub.add_parser("crawl", help="crawl one event into the state directory")
    crawl.add_argument("--event-id", default=DEFAULT_EVENT, help="Underline event id (default: 502)")
    crawl.add_argument("--web-base", help="lecture pages' base URL (default: https://underline.io)")
    crawl.add_argument("--api-base", help="JSON:API base URL (default: https://app.underline.io)")
    crawl.add_argument("--state", type=Path, default=DEFAULT_STATE, help="state directory (default: state)")
    crawl.add_argument(
        "--frontier",
        metavar="redis://HOST:PORT/DB",
        help="crawl as one worker of a fleet sharing this Redis frontier (queue, seen-set, host pacing)",
    )
    crawl.add_argument(
        "--worker", help="name to stage items under (default: main, or HOSTNAME-PID with --frontier)"
    )
    crawl.add_argument(
        "-s", dest="settings", action="append", default=[], metavar="KEY=VALUE", help="a Scrapy setting"
    )

    publish = sub.add_parser("publish", help="publish the staged crawl as a Hugging Face dataset")
    publish.add_argument("--state", type=Path, default=DEFAULT_STATE, help="state directory (default: state)")
    publish.add_argument("--out", type=Path, required=True, help="the dataset repository folder to write")
    publish.add_argument("--name", help="dataset name in the card (default: the --out folder's name)")
    publish.add_argument("--allow-partial", action="store_true", help="publish a crawl that did not finish")
    publish.add_argument("--card-template", type=Path, help="card template (default: dataset_card/)")
    publish.add_argument("--push-to-hub", metavar="ORG/NAME", help="also upload the release to the Hub")
    publish.add_argument("--private", action="store_true", help="create the Hub repository as private")
    publish.add_argument("--revision", help="Hub branch to push to (created when missing)")

    run = sub.add_parser(
        "run",
        help="crawl, check and publish: the command a schedule calls",
        description="Exit status: 0 published, 3 nothing changed, 4 the quality gate refused, "
        "5 the crawl failed (the next run resumes it), 6 another run holds the state directory, "
        "2 a usage or configuration error.",
    )
    run.add_argument("--config", type=Path, help="TOML configuration (see the README)")
    run.add_argument("--event-id", help="Underline event id (default: 502)")
    run.add_argument("--web-base", help="lecture pages' base URL")
    run.add_argument("--api-base", help="JSON:API base URL")
    run.add_argument("--state", type=Path, help="state directory (default: state)")
    run.add_argument("--out", type=Path, help="the dataset repository folder (default: exports/emnlp-2025)")
    run.add_argument("--name", help="dataset name in the card (default: the --out folder's name)")
    run.add_argument("--push-to-hub", metavar="ORG/NAME", help="upload each release to the Hub")
    run.add_argument("--private", action="store_true", default=None, help="create the Hub repository private")
    run.add_argument("--revision", help="Hub branch to push to")
    run.add_argument("--force", action="store_true", help="publish even when the quality gate refuses")
    run.add_argument(
        "-s", dest="settings", action="append", default=[], metavar="KEY=VALUE", help="a Scrapy setting"
    )

    demo = sub.add_parser("demo", help="serve the bundled replica, crawl it and publish the dataset")
    demo.add_argument("--lectures", type=int, help="how many lectures the replica serves (default: all)")
    demo.add_argument("--out", type=Path, default=Path("exports") / DEMO_NAME, help="dataset folder")
    demo.add_argument("--state", type=Path, help="state directory (default: a fresh temporary one)")
    demo.add_argument("--seed", type=int, default=0, help="the replica's layout seed")

    serve = sub.add_parser("serve-replica", help="run the local Underline replica until interrupted")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="port (default: 0, a free one)")
    serve.add_argument("--lectures", type=int, help="how many lectures to serve (default: all)")
    serve.add_argument("--seed", type=int, default=0, help="layout seed (default: 0)")
    serve.add_argument("--faults", default="none", help="fault profile: none, flaky, robots, strict")
    serve.add_argument("--fault-seed", type=int, default=0, help="seed of the fault profile")
    serve.add_argument("--request-log", type=Path, help="append every request to this JSONL file")
    serve.add_argument("--ground-truth", type=Path, help="write every lecture's true fields as JSONL")

    cache = sub.add_parser("cache", help="inspect or purge the HTTP cache")
    cache_sub = cache.add_subparsers(dest="cache_command", required=True)
    purge = cache_sub.add_parser("purge", help="remove cache entries older than --max-age-days")
    purge.add_argument("--state", type=Path, default=DEFAULT_STATE)
    purge.add_argument("--max-age-days", type=float, default=30.0)
    size = cache_sub.add_parser("size", help="print the cache's entry count and size")
    size.add_argument("--state", type=Path, default=DEFAULT_STATE)
    return parser


def cmd_crawl(args: argparse.Namespace) -> int:
    args.state = check_state_dir(args.state)
    overrides: list[tuple[str, Any]] = [parse_setting(s) for s in args.settings]
    if args.frontier:
        from crawler.frontier import frontier_settings

        try:
            fleet = frontier_settings(args.frontier, args.worker)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        overrides = [*fleet.items(), *overrides]
    elif args.worker:
        from crawler.stage import check_worker_name

        overrides = [("STAGE_WORKER", check_worker_name(args.worker)), *overrides]
    outcome = run_crawl(
        event_id=str(args.event_id),
        state_dir=args.state,
        web_base=args.web_base,
        api_base=args.api_base,
        overrides=overrides,
    )
    print(f"crawl {outcome.reason}: {outcome.lectures} lectures staged in {args.state / 'stage'}")
    # A fleet worker that joined after the others took all the work has done its part too.
    staged_enough = outcome.lectures > 0 or bool(args.frontier)
    return 0 if outcome.reason == "finished" and staged_enough else 1


def cmd_publish(args: argparse.Namespace) -> int:
    args.state = check_state_dir(args.state)
    args.out = check_output_dir(args.out, state_dir=args.state)
    name = check_dataset_name(args.name or args.out.name)
    if args.push_to_hub:
        check_repo_id(args.push_to_hub)
    if args.revision:
        check_revision(args.revision)
    result = run_publish(
        state_dir=args.state,
        out_dir=args.out,
        name=name,
        allow_partial=args.allow_partial,
        template=args.card_template,
    )
    print(f"published {result.row_counts['lectures']} lectures to {args.out} (version {result.version})")
    if args.push_to_hub:
        from crawler.publish.hub import push_to_hub

        url = push_to_hub(args.out, args.push_to_hub, private=args.private, revision=args.revision)
        print(f"pushed to the Hub: {url}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from crawler.schedule.config import ConfigError, load_config
    from crawler.schedule.lock import LockHeld
    from crawler.schedule.run import RunStatus, execute

    try:
        config = load_config(args.config).with_overrides(
            event_id=args.event_id,
            web_base=args.web_base,
            api_base=args.api_base,
            state=args.state,
            out=args.out,
            name=args.name,
            push_to_hub=args.push_to_hub,
            private=args.private,
            revision=args.revision,
            settings=dict(parse_setting(s) for s in args.settings) or None,
        )
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    state = check_state_dir(config.state)
    out = check_output_dir(config.out, state_dir=state)
    check_dataset_name(config.name or out.name)
    if config.push_to_hub:
        check_repo_id(config.push_to_hub)
    if config.revision:
        check_revision(config.revision)
    config = config.with_overrides(state=state, out=out)

    def crawl(cfg: Any) -> CrawlOutcome:
        return run_crawl(
            event_id=cfg.event_id,
            state_dir=cfg.state,
            web_base=cfg.web_base,
            api_base=cfg.api_base,
            overrides=list(cfg.settings.items()),
        )

    provenance: dict[str, Any] = {}

    def read_records(state_dir: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        staged = load_staged(state_dir)
        provenance.update(staged.provenance)
        return staged.records, {k: staged.provenance[k] for k in ("staged_lines", "bad_lines")}

    def publish(cfg: Any, records: list[dict[str, Any]]) -> Any:
        name = cfg.name or cfg.out.resolve().name
        result = publish_records(records, provenance, out_dir=cfg.out, name=name, state_dir=cfg.state)
        if cfg.push_to_hub:
            from crawler.publish.hub import push_to_hub

            push_to_hub(cfg.out, cfg.push_to_hub, private=cfg.private, revision=cfg.revision)
        return result

    try:
        outcome = execute(config, crawl=crawl, read_records=read_records, publish=publish, force=args.force)
    except LockHeld as exc:
        print(f"eventcrawl: {exc}", file=sys.stderr)
        return int(RunStatus.LOCKED)
    stream = sys.stdout if outcome.status == RunStatus.PUBLISHED else sys.stderr
    print(outcome.message, file=stream)
    print(f"report: {config.state / 'run-report.json'}", file=stream)
    return int(outcome.status)


def cmd_demo(args: argparse.Namespace) -> int:
    from crawler.replica.layout import build_site, load_records
    from crawler.replica.server import ReplicaServer
    from crawler.runner import LOOPBACK_CRAWL_SETTINGS

    check_output_dir(args.out, state_dir=args.state)
    started = time.monotonic()
    site = build_site(load_records(), seed=args.seed, lectures=args.lectures)
    temp_state = None
    state_dir = args.state
    if state_dir is None:
        temp_state = Path(tempfile.mkdtemp(prefix="eventcrawl-demo-"))
        state_dir = temp_state
    try:
        with ReplicaServer(site) as server:
            print(f"replica of Underline serving on {server.base_url}", flush=True)
            # Loopback and our own server: politeness delays would only slow the demo down.
            outcome = run_crawl(
                event_id=DEFAULT_EVENT,
                state_dir=state_dir,
                web_base=server.base_url,
                api_base=server.base_url,
                overrides=list(LOOPBACK_CRAWL_SETTINGS.items()),
            )
        if outcome.reason != "finished":
            print(f"the crawl did not finish ({outcome.reason}); nothing published", file=sys.stderr)
            return 1
        result = run_publish(state_dir=state_dir, out_dir=args.out, name=DEMO_NAME)
    finally:
        if temp_state is not None:
            shutil.rmtree(temp_state, ignore_errors=True)
    elapsed = time.monotonic() - started
    out = args.out.resolve()
    print(f"published {result.row_counts['lectures']} lectures to {out} in {elapsed:.1f} s")
    print("load it with:")
    print(f"  python -c \"import datasets; print(datasets.load_dataset({str(out)!r})['train'])\"")
    return 0


def cmd_serve_replica(args: argparse.Namespace) -> int:
    from crawler.replica.server import main as replica_main

    argv = ["--host", args.host, "--port", str(args.port), "--seed", str(args.seed)]
    argv += ["--faults", args.faults, "--fault-seed", str(args.fault_seed)]
    if args.lectures is not None:
        argv += ["--lectures", str(args.lectures)]
    if args.request_log is not None:
        argv += ["--request-log", str(args.request_log)]
    if args.ground_truth is not None:
        argv += ["--ground-truth", str(args.ground_truth)]
    return replica_main(argv)


def cmd_cache(args: argparse.Namespace) -> int:
    from crawler.httpcache import cache_size, purge_cache

    cache_dir = check_state_dir(args.state) / "httpcache"
    if args.cache_command == "purge":
        result = purge_cache(cache_dir, args.max_age_days * 86400)
        print(f"removed {result.removed_entries} entries ({result.removed_bytes} bytes) from {cache_dir}")
    size = cache_size(cache_dir)
    print(f"{cache_dir}: {size.entries} entries, {size.bytes} bytes")
    return 0


COMMANDS = {
    "crawl": cmd_crawl,
    "publish": cmd_publish,
    "run": cmd_run,
    "demo": cmd_demo,
    "serve-replica": cmd_serve_replica,
    "cache": cmd_cache,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (UsageError, StageError, PathError) as exc:
        print(f"eventcrawl: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
