"""Publishing as a library: :func:`publish` writes a checked release of the next release and records what
it published, :func:`push` uploads a release to the Hub, and :func:`publish_staged` is the whole flow of
``eventcrawl publish`` (the stage read, the next release built and judged, then written). The crawl is
:mod:`crawler.app.crawling`, the next release :mod:`crawler.app.next_release`; the command line only parses
arguments and prints.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from crawler.app.next_release import NextRelease, next_release, read_staged
from crawler.publish.removals import RemovalRequests
from crawler.schedule.gate import GateThresholds, GateVerdict
from crawler.state.layout import StateDir

if TYPE_CHECKING:
    from crawler.publish.release import ReleaseResult


def publish(
    release: NextRelease,
    provenance: Mapping[str, object],
    *,
    out_dir: Path,
    name: str,
    state_dir: Path,
    template: Path | None = None,
    check_built: Callable[[Path, Path], None] | None = None,
) -> ReleaseResult:
    """Write a checked release of ``release`` (see :func:`next_release`) to ``out_dir``, one event in
    memory at a time, with the ledger of the removals it applied (``removals.json``, in its manifest),
    record those removals in ``state_dir`` and remember what it published. ``check_built`` judges the
    release built aside before it is swapped in, and raises to refuse it (the gate over every table)."""
    from crawler.coverage import field_coverage
    from crawler.dedup.index import update_index
    from crawler.publish.events import PublishOptions
    from crawler.publish.release import publish_events
    from crawler.publish.removals import ReleaseRemovals, record_removals

    # The card shows each field's coverage per event: what a user can expect to find filled.
    coverage = field_coverage(release.events)
    options = PublishOptions(
        name=name,
        provenance={"coverage": coverage, **provenance},
        template=template,
        sessions=[dict(s) for s in release.sessions],
        remove_lectures=release.removals.lectures,
        redact_authors=release.redactions,
        # The release carries its removals (redactions as digests), pushed with it.
        removals_ledger=(
            ReleaseRemovals.of(release.removals.lectures, release.redactions) if release.removals else None
        ),
        transcripts=release.transcripts,
        slides=release.slides,
        check_built=check_built,
    )
    result = publish_events(release.events, out_dir, options)
    record_removals(state_dir, release.removals)
    update_index((lec.values() for lec in release.events), state_dir)
    return result


# -- the flows the commands run: typed requests in, typed results out --------------------------------


@dataclass(frozen=True)
class PublishRequest:
    """What to publish, checked by the caller: the crawl staged in ``state_dir``, as the next release in
    ``out_dir`` named ``name``, with these removals on request, retired events, ACL Anthology files
    (see :func:`next_release`) and card template; ``allow_partial`` publishes a crawl that did not
    finish. The quality gate judges the release with ``thresholds``; ``force`` publishes it when the
    gate refuses."""

    state_dir: Path
    out_dir: Path
    name: str
    removals: RemovalRequests | None = None
    retire_events: Sequence[str] = ()
    anthology: Path | None = None
    template: Path | None = None
    allow_partial: bool = False
    thresholds: GateThresholds = field(default_factory=GateThresholds)
    force: bool = False


@dataclass(frozen=True)
class Published:
    """A release written: the release as built (links, notes), what was written and the gate's verdict
    on it (failed checks in it when ``force`` published it anyway)."""

    release: NextRelease
    result: ReleaseResult
    verdict: GateVerdict | None = None


def publish_staged(
    request: PublishRequest, *, built: Callable[[NextRelease], None] | None = None
) -> Published:
    """Publish the crawl staged in ``request.state_dir`` as the next release of ``request.out_dir``, under
    the state directory's lock (``LockHeld`` when another command holds it), once the quality gate
    passed it (the gate ``run`` passes, with the statistics the crawl kept in the state directory).
    ``built`` hears the release once it is built, before anything is written.

    :class:`NothingToPublish` when the stage holds nothing publishable, ``GateRefused`` when the gate
    refused the release (nothing is written, and the stage is marked refused as ``run`` marks it),
    ``DamagedFile`` for a damaged state or release file, ``AnthologyError`` for unreadable Anthology
    files."""
    from crawler.schedule.gate import GateRefused
    from crawler.schedule.judge import judge_release, refusal, staged_statistics, table_checks
    from crawler.schedule.lock import StateLock
    from crawler.state.stage import mark_refused

    with StateLock(request.state_dir):
        staged = read_staged(request.state_dir, allow_partial=request.allow_partial)
        release = next_release(
            staged,
            out_dir=request.out_dir,
            state_dir=request.state_dir,
            removals=request.removals,
            retire_events=request.retire_events,
            anthology=request.anthology,
        )
        if built is not None:
            built(release)
        # The stage's index is let go once the release is built (it holds every lecture's place): the
        # release keeps its lectures on disk, and of the index only where the subtitle tracks are.
        provenance, bad_lines = staged.provenance, staged.stage_info["bad_lines"]
        del staged
        stats = staged_statistics(request.state_dir)
        judged, _ = judge_release(release, stats, request.thresholds, bad_lines=bad_lines)
        if not judged.passed and not request.force:
            # As `run` does: what the gate refused is no base for the next crawl's refresh.
            mark_refused(request.state_dir, refusal(judged, "publish"))
            raise GateRefused(judged)
        check_tables, table_results = table_checks(release, request.thresholds, force=request.force)
        try:
            result = publish(
                release,
                provenance,
                out_dir=request.out_dir,
                name=request.name,
                state_dir=request.state_dir,
                template=request.template,
                check_built=check_tables,
            )
        except GateRefused as refused:
            mark_refused(request.state_dir, refusal(refused.verdict, "publish"))
            raise
        verdict = judged.with_checks(table_results)
        # Published, the stage is the release's: the next crawl carries from it.
        StateDir.of(request.state_dir).stage_refused.unlink(missing_ok=True)
    return Published(release, result, verdict)
