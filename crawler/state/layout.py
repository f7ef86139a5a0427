"""The state directory (``--state``, default ``state/``): every file and folder in it, named once.

A crawl, a publish and a scheduled run keep what must outlive one process here. :class:`StateDir` is
the one place that says where each thing lives; a module asks it for a path instead of joining names
onto the directory itself.

=============================  ==========================================================================
Path (under ``<state>/``)      What it holds
=============================  ==========================================================================
``stage/``                     the current crawl's staging area (:mod:`crawler.state.stage`)
``stage/<worker>.jsonl``       one crawl process's staged lectures, sessions and aliases (append-only)
``stage/stats-<worker>.json``  that process's crawl counters, kept so that a resumed crawl is judged
                               whole (:mod:`crawler.extensions.crawl_stats`)
``stage/COMPLETE``             written when the crawl finished normally; its summary
``stage/REFUSED``              written beside ``COMPLETE`` when the quality gate refused the crawl
``stage/FRONTIER``             the fleet run a shared stage belongs to (:mod:`crawler.frontier`)
``.stage.lock``                the lock under which a fleet worker decides to move a finished stage aside
``stage.previous/``            the last finished, accepted stage: what a refresh carries unchanged lectures
                               from
``stage.refused/``             the last finished stage the quality gate refused (never carried from)
``release-base.jsonl``         the published rows the previous stage lacks (a lost state, an event kept
                               back): a refresh carries them like the previous stage's own
``httpcache/``                 Scrapy's HTTP cache (``eventcrawl cache``)
``minhash/<worker>.jsonl``     near-duplicate signatures computed by each crawl process
``boilerplate-model.json``     the learnt boilerplate model of the lecture pages
``crawl-report.json``          the last crawl's finish reason, settings and statistics
``run-report.json``            the last ``eventcrawl run``'s report
``hub-push.json``              the release versions pushed to the Hub, per repository
``published-index.json``       every lecture id published, with its content hash and dates
``removals.json``              every removal on request a release applied, kept for every later one (names,
                               ORCID iDs, and the digests a release's own ledger kept)
``events.json``                the library's events as ``eventcrawl events`` last read them
``run.lock``                   the ``flock`` that keeps two commands from working on the directory at once
=============================  ==========================================================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

STAGE = "stage"
PREVIOUS_STAGE = STAGE + ".previous"
REFUSED_STAGE = STAGE + ".refused"
STAGE_RUN = "FRONTIER"
STAGE_LOCK = ".stage.lock"
COMPLETE = "COMPLETE"
REFUSED = "REFUSED"


@dataclass(frozen=True)
class StateDir:
    """The paths of one state directory. Nothing here touches the filesystem."""

    root: Path

    @classmethod
    def of(cls, root: str | os.PathLike[str]) -> StateDir:
        return cls(Path(root))

    # -- the stage and the stages kept beside it -------------------------------------------------

    @property
    def stage(self) -> Path:
        return self.root / STAGE

    @property
    def stage_complete(self) -> Path:
        return self.stage / COMPLETE

    @property
    def stage_refused(self) -> Path:
        return self.stage / REFUSED

    def crawl_stats(self, worker: str) -> Path:
        return self.stage / f"stats-{worker}.json"

    @property
    def previous_stage(self) -> Path:
        return self.root / PREVIOUS_STAGE

    @property
    def release_base(self) -> Path:
        return self.root / "release-base.jsonl"

    # -- caches the crawl keeps ------------------------------------------------------------------

    @property
    def http_cache(self) -> Path:
        return self.root / "httpcache"

    @property
    def signatures(self) -> Path:
        return self.root / "minhash"

    # -- reports and what publishing remembers ---------------------------------------------------

    @property
    def crawl_report(self) -> Path:
        return self.root / "crawl-report.json"

    @property
    def run_report(self) -> Path:
        return self.root / "run-report.json"

    @property
    def hub_push(self) -> Path:
        return self.root / "hub-push.json"

    @property
    def published_index(self) -> Path:
        return self.root / "published-index.json"

    @property
    def removals(self) -> Path:
        return self.root / "removals.json"

    @property
    def events(self) -> Path:
        return self.root / "events.json"

    @property
    def lock(self) -> Path:
        return self.root / "run.lock"

    # -- what every command checks before it starts ----------------------------------------------

    def checked_folders(self) -> tuple[Path, ...]:
        """The entries that must be folders when they exist: a file in their place stops every command
        that works on the directory, so it is reported before anything is done."""
        return (self.stage, self.previous_stage, self.http_cache, self.signatures)

    def checked_files(self) -> tuple[Path, ...]:
        """The entries that must be files when they exist (a folder in their place is reported)."""
        return (
            self.lock,
            self.crawl_report,
            self.run_report,
            self.hub_push,
            self.published_index,
            self.release_base,
        )
