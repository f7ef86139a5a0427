"""The ``eventcrawl`` command line's grammar: every command's options, defaults and help, built into one
:class:`argparse.ArgumentParser` (:func:`build_parser`). What the commands do is :mod:`crawler.app.cli`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from crawler import __version__
from crawler import settings as defaults
from crawler.app import demo as demo_flow
from crawler.schedule.config import RunConfig
from crawler.sitetools import events as catalogue
from crawler.sitetools.check import DEFAULT_TIMEOUT, RECORDED_LECTURES

if TYPE_CHECKING:
    # What ``add_subparsers`` returns: argparse names the class but does not export it.
    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]

# A configuration file's defaults are the command line's.
CONFIG_DEFAULTS = RunConfig()
DEFAULT_STATE = CONFIG_DEFAULTS.state
DEFAULT_EVENT = CONFIG_DEFAULTS.event_id
EVENT_HELP = f"Underline event id or event page URL; repeat for several events (default: {DEFAULT_EVENT})"
STATE_HELP = f"state directory (default: {DEFAULT_STATE})"
RETIRE_HELP = "take this event out of the next release (repeatable); an event not crawled is otherwise kept"
ANTHOLOGY_HELP = (
    "link lectures to their ACL Anthology papers: a folder searched for the Anthology's XML collection"
    " files (a checkout's data/xml/, or some of its files)"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eventcrawl",
        description="Crawl conference lecture pages on Underline and publish them as a Hugging Face dataset.",
    )
    parser.add_argument("--version", action="version", version=f"eventcrawl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    add_crawl_parser(sub)
    add_publish_parser(sub)
    add_run_parser(sub)
    add_site_parsers(sub)
    add_demo_parser(sub)
    # The replica parses its own options (`eventcrawl serve-replica --help` lists them): see main().
    sub.add_parser(
        "serve-replica",
        help="run the local Underline replica until interrupted (its options: serve-replica --help)",
        add_help=False,
    )
    add_events_parser(sub)
    add_cache_parser(sub)
    return parser


def _add_crawl_options(command: argparse.ArgumentParser, *, state: Path | None) -> None:
    """The events, site, state directory, ``--page-budget``, ``--subtitles``, ``--slides`` and ``-s``, which
    ``crawl`` and ``run`` share (``run``'s state directory defaults to its configuration's)."""
    command.add_argument("--event-id", action="append", default=[], metavar="ID|URL", help=EVENT_HELP)
    _add_bases(command)
    command.add_argument("--state", type=Path, default=state, help=STATE_HELP)
    command.add_argument(
        "--page-budget",
        type=int,
        metavar="N",
        help="at most N lecture-page requests this crawl: new lectures first, then changed, then stale; "
        f"the rest waits for the next crawl (default {defaults.UNDERLINE_PAGE_BUDGET}: no limit; "
        "UNDERLINE_PAGE_BUDGET)",
    )
    command.add_argument(
        "--subtitles",
        action="store_true",
        help="also read each fetched lecture's subtitle files into the transcripts table "
        "(UNDERLINE_SUBTITLES)",
    )
    command.add_argument(
        "--slides",
        action="store_true",
        help="also read the slide deck and poster (PDF) each lecture names into the slides table "
        "(UNDERLINE_SLIDES)",
    )
    command.add_argument(
        "-s", dest="settings", action="append", default=[], metavar="KEY=VALUE", help="a Scrapy setting"
    )


def _add_bases(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--web-base", help=f"lecture pages' base URL (default: {defaults.UNDERLINE_WEB_BASE})"
    )
    command.add_argument("--api-base", help=f"JSON:API base URL (default: {defaults.UNDERLINE_API_BASE})")


def _add_release_options(command: argparse.ArgumentParser) -> None:
    """The options of the release that ``publish`` and ``run`` write."""
    command.add_argument("--name", help="dataset name in the card (default: the --out folder's name)")
    command.add_argument("--anthology", type=Path, metavar="PATH", help=ANTHOLOGY_HELP)
    command.add_argument("--push-to-hub", metavar="ORG/NAME", help="also upload the release to the Hub")
    command.add_argument("--revision", help="Hub branch to push to (created when missing)")
    command.add_argument("--retire-event", action="append", default=[], metavar="ID|URL", help=RETIRE_HELP)
    command.add_argument("--force", action="store_true", help="publish even when the quality gate refuses")


def add_crawl_parser(sub: Subcommands) -> None:
    crawl = sub.add_parser(
        "crawl",
        help="crawl events into the state directory",
        description="Exit status: 0 the crawl finished, 5 it failed or stopped (the next crawl resumes it), "
        "6 another command holds the state directory, 2 a usage error.",
    )
    _add_crawl_options(crawl, state=DEFAULT_STATE)
    crawl.add_argument(
        "--frontier",
        metavar="redis://HOST:PORT/DB",
        help="crawl as one worker of a fleet sharing this Redis frontier (queue, seen-set, host pacing)",
    )
    crawl.add_argument(
        "--worker",
        help=f"name to stage items under (default: {defaults.STAGE_WORKER}, or HOSTNAME-PID with --frontier)",
    )


def add_publish_parser(sub: Subcommands) -> None:
    publish = sub.add_parser(
        "publish",
        help="publish the staged crawl as a Hugging Face dataset",
        description="Exit status: 0 published, 4 the quality gate refused the release (nothing written), "
        "2 a usage or configuration error, 6 another command holds the state directory, 8 a state or "
        "release file is damaged.",
    )
    publish.add_argument(
        "--config",
        type=Path,
        help="the `run` TOML: its state, out, name, removals and retired events apply (flags override it)",
    )
    publish.add_argument("--state", type=Path, help=STATE_HELP)
    publish.add_argument(
        "--out", type=Path, help="the dataset repository folder to write (required without --config)"
    )
    _add_release_options(publish)
    publish.add_argument("--private", action="store_true", help="create the Hub repository as private")
    publish.add_argument("--allow-partial", action="store_true", help="publish a crawl that did not finish")
    publish.add_argument("--card-template", type=Path, help="card template (default: the project's own)")


def add_run_parser(sub: Subcommands) -> None:
    run = sub.add_parser(
        "run",
        help="crawl, check and publish: the command a schedule calls",
        description="Exit status: 0 published, 3 nothing changed, 4 the quality gate refused "
        "or an event listed no lectures, 5 the crawl failed (the next run resumes it), "
        "6 another run holds the state directory, "
        "7 published but the push to the Hub failed (the next run pushes it), "
        "8 a state or release file is damaged, 2 a usage or configuration error.",
    )
    run.add_argument("--config", type=Path, help="TOML configuration (see docs/commands.md)")
    _add_crawl_options(run, state=None)
    run.add_argument(
        "--out", type=Path, help=f"the dataset repository folder (default: {CONFIG_DEFAULTS.out})"
    )
    _add_release_options(run)
    # None: the configuration's.
    run.add_argument("--private", action="store_true", default=None, help="create the Hub repository private")


def add_site_parsers(sub: Subcommands) -> None:
    """``check-site`` and ``record``, which look at the same few answers of the site."""
    check = sub.add_parser(
        "check-site",
        help="look at a copy of the site before crawling it: which fields it gives, and from where",
        description="Asks for robots.txt, one listing page and two lecture pages, one request at a time. "
        "Exit status: 0 every required field was found, 1 not (or robots.txt, the listing or a redirect "
        "off the site stopped the check), 2 a usage error.",
    )
    record = sub.add_parser(
        "record",
        help="save a few of the site's answers, personal data removed, for the test suite",
        description="Saves robots.txt, a listing page and a few lecture pages under --out; "
        "tests/recordings/ holds recordings the tests crawl. Exit status: 0 recorded, 1 nothing could be "
        "recorded (site unreachable, robots.txt disallows it, no usable listing, no lecture page), "
        "2 a usage error.",
    )
    for command in (check, record):
        _add_site_options(command)
    record.add_argument("--out", type=Path, required=True, help="the folder to write the recording into")
    record.add_argument(
        "--lectures",
        type=int,
        default=RECORDED_LECTURES,
        help=f"lecture pages to record (default: {RECORDED_LECTURES})",
    )


def _add_site_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--event-id", default=DEFAULT_EVENT, metavar="ID|URL", help="the event to look at")
    _add_bases(command)
    command.add_argument(
        "--delay",
        type=float,
        default=defaults.DOWNLOAD_DELAY,
        help=f"seconds between requests (default: {defaults.DOWNLOAD_DELAY:g})",
    )
    command.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds for a whole answer, body included (default: {DEFAULT_TIMEOUT:g})",
    )


def add_demo_parser(sub: Subcommands) -> None:
    demo = sub.add_parser("demo", help="serve the bundled replica, crawl it and publish the dataset")
    demo.add_argument("--lectures", type=int, help="how many lectures the replica serves (default: all)")
    demo.add_argument(
        "--out", type=Path, default=CONFIG_DEFAULTS.out.parent / demo_flow.DEMO_NAME, help="dataset folder"
    )
    demo.add_argument("--state", type=Path, help="state directory (default: a fresh temporary one)")
    demo.add_argument("--seed", type=int, default=demo_flow.DEMO_SEED, help="the replica's layout seed")


def add_cache_parser(sub: Subcommands) -> None:
    cache = sub.add_parser("cache", help="inspect or purge the HTTP cache")
    cache_sub = cache.add_subparsers(dest="cache_command", required=True)
    purge = cache_sub.add_parser("purge", help="remove cache entries older than --max-age-days")
    purge.add_argument("--state", type=Path, default=DEFAULT_STATE)
    purge.add_argument("--max-age-days", type=float, default=defaults.HTTPCACHE_MAX_AGE_DAYS)
    size = cache_sub.add_parser("size", help="print the cache's entry count and size")
    size.add_argument("--state", type=Path, default=DEFAULT_STATE)


def add_events_parser(sub: Subcommands) -> None:
    events = sub.add_parser(
        "events",
        help="list the events of the whole library (id, name, dates, lectures) for event_ids",
        description="Reads the site's whole-library listing one request at a time (robots.txt obeyed) "
        "and keeps the answer in <state>/events.json; a second call within --max-age-hours asks nothing. "
        "Exit status: 0 listed, 1 the site failed (unreachable, robots.txt disallows, not JSON, listing "
        "incomplete), 2 a usage error.",
    )
    events.add_argument(
        "--match",
        action="append",
        default=[],
        metavar="TEXT",
        help="only events whose name holds TEXT (any case) or whose id is TEXT; repeat for several",
    )
    events.add_argument("--json", action="store_true", help="print JSON instead of a table")
    events.add_argument("--api-base", help=f"JSON:API base URL (default: {defaults.UNDERLINE_API_BASE})")
    events.add_argument("--state", type=Path, default=DEFAULT_STATE, help=STATE_HELP)
    events.add_argument(
        "--max-age-hours",
        type=float,
        default=catalogue.DEFAULT_MAX_AGE_HOURS,
        help=f"answer from events.json while it is younger (default: {catalogue.DEFAULT_MAX_AGE_HOURS:g})",
    )
    events.add_argument("--refresh", action="store_true", help="read the site again whatever the file's age")
    events.add_argument(
        "--delay",
        type=float,
        default=defaults.DOWNLOAD_DELAY,
        help="seconds between requests, or robots.txt's Crawl-delay if larger "
        f"(default: {defaults.DOWNLOAD_DELAY:g})",
    )
    events.add_argument(
        "--page-size",
        type=int,
        default=catalogue.MAX_PAGE_SIZE,
        help=f"lectures a listing page, 1 to {catalogue.MAX_PAGE_SIZE} (default: {catalogue.MAX_PAGE_SIZE})",
    )
    events.add_argument(
        "--max-pages",
        type=int,
        default=catalogue.DEFAULT_MAX_PAGES,
        help=f"a listing longer than this fails (default: {catalogue.DEFAULT_MAX_PAGES})",
    )
