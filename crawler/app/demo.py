"""The demo: serve the bundled replica of Underline on loopback, crawl its two events and publish them, in
one call. An application flow beside the commands: the replica is a neighbour of the crawler, not a
dependency, so the runner never imports it and only this flow (and the CLI's ``serve-replica``) loads it."""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from crawler.app.crawling import LOOPBACK_CRAWL_SETTINGS, CrawlResult, crawl
from crawler.app.runner import PublishRequest, publish_staged

if TYPE_CHECKING:
    from crawler.publish.release import ReleaseResult
    from crawler.replica.layout import ReplicaSite

DEMO_NAME = "emnlp-demo"
# The replica's layout the demo serves unless told another.
DEMO_SEED = 0
# The replica serves two full events, EMNLP 2025 and 2024; the demo crawls both.
DEMO_EVENTS = ("502", "469")
# One replica record in this many goes to the second event, so that both are full events.
DEMO_SIDE_EVENT_EVERY = 4


def demo(
    out_dir: Path,
    *,
    state_dir: Path | None = None,
    lectures: int | None = None,
    seed: int = DEMO_SEED,
    serving: Callable[[str], None] | None = None,
) -> tuple[CrawlResult, ReleaseResult | None, float]:
    """Serve the bundled replica of Underline on loopback (``lectures`` of its records, laid out with
    ``seed``), crawl both its events into ``state_dir`` and publish them to ``out_dir`` as
    :data:`DEMO_NAME`. Without ``state_dir`` the crawl's state lives in a temporary folder, removed
    afterwards. ``serving`` hears the replica's base URL once it answers.

    Returns the crawl of the replica, the release (None: the crawl did not finish, and nothing was
    published) and how long it all took, in seconds."""
    # The replica is a neighbour, not a dependency: only the flows that serve it load it.
    from crawler.replica.layout import build_site, load_records

    started = time.monotonic()
    site = build_site(load_records(), seed=seed, lectures=lectures, side_event_every=DEMO_SIDE_EVENT_EVERY)
    scratch: contextlib.AbstractContextManager[str] = (
        contextlib.nullcontext(str(state_dir))
        if state_dir is not None
        else tempfile.TemporaryDirectory(prefix="eventcrawl-demo-", ignore_cleanup_errors=True)
    )
    with scratch as folder:
        state = Path(folder)
        crawled = _crawl_replica(site, state, serving)
        published = None
        if crawled.finished:
            # The gate every command that writes a release passes (GateRefused when it refuses).
            request = PublishRequest(state_dir=state, out_dir=out_dir, name=DEMO_NAME)
            published = publish_staged(request).result
    return crawled, published, time.monotonic() - started


def _crawl_replica(site: ReplicaSite, state_dir: Path, serving: Callable[[str], None] | None) -> CrawlResult:
    from crawler.replica.server import ReplicaServer

    with ReplicaServer(site, documents=True) as server:
        if serving is not None:
            serving(server.base_url)
        # Loopback and our own server: politeness delays would only slow the demo down. What was said
        # too, and what was shown: the replica serves its subtitle files and PDFs on an assets origin of
        # its own.
        return crawl(
            event_ids=DEMO_EVENTS,
            state_dir=state_dir,
            web_base=server.base_url,
            api_base=server.base_url,
            overrides={**LOOPBACK_CRAWL_SETTINGS, "UNDERLINE_SUBTITLES": True, "UNDERLINE_SLIDES": True},
        )
