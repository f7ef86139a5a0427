"""Start the replica in a subprocess and run the ``eventcrawl`` command, as a user would."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from crawler.schema import FIELDS, PARSED_FIELDS
from tests.support.commands import eventcrawl
from tests.support.process import RunningReplica, loopback_crawl_args, running_replica

__all__ = [
    "QUICK_GIVE_UP",
    "TIMESTAMP_FIELDS",
    "RunningReplica",
    "crawl_args",
    "eventcrawl",
    "fast_crawl_settings",
    "loopback_crawl_args",
    "run_args",
    "run_report",
    "running_replica",
]


# Give up on a failing page after one retry, and let the host recover within half a second: a page that
# fails every time must not hold the rest of a loopback crawl at the slowed pace for the default window.
QUICK_GIVE_UP = (
    "-s", "BACKOFF_MAX_RETRIES=1",
    "-s", "BACKOFF_MIN_DELAY=0.05",
    "-s", "BACKOFF_MAX_DELAY=0.2",
    "-s", "BACKOFF_WINDOW=0.5",
)  # fmt: skip


def fast_crawl_settings() -> list[str]:
    """Loopback speed (:func:`loopback_crawl_args`), with the crawl's pure steps in its own process.

    A worker process is spawned for every crawl and imports the crawler again, about a second of CPU
    each, and the suite runs a few hundred crawls. ``test_extension_workers`` checks that a crawl with
    workers stages, caches and signs exactly what a crawl without them does, and sets
    ``WORKER_PROCESSES`` itself (a later ``-s`` wins); the modules that look for personal data on disk
    and the planted end-to-end crawl use :func:`loopback_crawl_args` alone, and so crawl with the
    default ``WORKER_PROCESSES``, as a user's crawl does."""
    return [*loopback_crawl_args(), "-s", "WORKER_PROCESSES=0"]


def crawl_args(base: str, state: Path, *extra: str) -> list[str]:
    """``eventcrawl crawl`` of a replica at ``base`` (pages and API), staged in ``state``."""
    return ["crawl", "--web-base", base, "--api-base", base, "--state", str(state), *extra]


def run_args(base: str, work: Path, name: str, *extra: str) -> list[str]:
    """The whole ``eventcrawl run`` command of a replica at ``base``: state and release under ``work``,
    loopback speed, no progress line."""
    return [
        sys.executable, "-m", "crawler.app.cli", "run",
        "--web-base", base, "--api-base", base,
        "--state", str(work / "state"), "--out", str(work / "out"), "--name", name,
        *fast_crawl_settings(), "-s", "PROGRESS_ENABLED=False", *extra,
    ]  # fmt: skip


def run_report(work: Path) -> dict[str, Any]:
    """The last ``eventcrawl run``'s report in ``work``'s state directory."""
    return json.loads((work / "state" / "run-report.json").read_text(encoding="utf-8"))


# Fields a lecture published from its listing alone has as a full crawl would (the page adds the related
# lectures and the text): what the page budget's tests and benchmark compare with the ground truth. Every
# field the parsers fill that a page does not alone give, and the canonical URL made from the listing.
LISTING_FIELDS = ("url", *(f.name for f in PARSED_FIELDS if not f.from_page))

# The fields a ground-truth record holds as ISO 8601 text and a published row as an aware datetime.
TIMESTAMP_FIELDS = frozenset(f.name for f in FIELDS if f.kind == "timestamp")
