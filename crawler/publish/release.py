"""Publishing a release directory atomically, one event at a time: the entry every command calls.

:func:`publish_release` takes the records in memory, :func:`publish_events` one event at a time. Under a
lock beside ``out_dir``, a publish first finishes what an interrupted one left
(:func:`crawler.publish.swap.recover`), reads the previous release (:mod:`crawler.publish.previous`),
builds the new one in ``.<name>.build-*`` beside ``out_dir`` (same filesystem; :mod:`crawler.publish.build`,
its events written by :mod:`crawler.publish.events`), checks it (:mod:`crawler.publish.verify`: pyarrow
reads every file with the declared schema, ``datasets.load_dataset`` round trip of each config, card lint)
and swaps it in (:mod:`crawler.publish.swap`) with one ``renameat2(RENAME_EXCHANGE)`` where the kernel has
it, else by renaming the old release to ``.<name>.old`` and the new one in. Whatever step a crash
interrupts, ``out_dir`` holds the old or the new release once the next call has cleaned up, and that call
does the cleaning first.

The rows come one event at a time (:class:`crawler.publish.events.EventRows`): an event's rows are
validated, written (or its files carried byte for byte when they did not change), compared with the
previous release's rows of the same lectures and dropped before the next event's are read, so the memory
a release takes is bounded by its largest event.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from crawler.publish import card as cards
from crawler.publish.build import ReleaseResult, build_release, crawl_date_of
from crawler.publish.events import BuildContext, EventRows, GroupedEvents, PublishOptions
from crawler.publish.previous import read_previous_release
from crawler.publish.records import lecture_rows
from crawler.publish.removals import Redactions, apply_removals
from crawler.publish.swap import ReleaseStep, recover, swap_in
from crawler.publish.verify import verify_release
from crawler.state.fsutil import exclusive_lock

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


def publish_release(
    records: Iterable[Mapping[str, Any]],
    out_dir: Path,
    *,
    name: str,
    provenance: Mapping[str, Any],
    template: Path | None = None,
    now: datetime | None = None,
    on_step: ReleaseStep | None = None,
    sessions: Iterable[Mapping[str, Any]] | None = None,
    remove_lectures: Iterable[str] = (),
    redact_authors: Iterable[str] | Redactions = (),
) -> ReleaseResult:
    """Write a checked dataset release of ``records`` to ``out_dir``, replacing the previous one atomically.

    ``name`` is the dataset's name or Hub repository id (``owner/name``); ``provenance`` must hold
    ``crawl_date`` and may hold ``crawler_version``, ``event_id``, ``event_name``, ``web_base``,
    ``settings``, ``repo_id``, ``pretty_name`` and ``coverage`` (event id -> field -> share of lectures
    with a value, shown in the card). ``sessions`` are what the caller knows about sessions
    (``session_id``, ``event_id``, ``name``, ``description``, ``start``, ``end``): they fill the
    ``sessions`` table's name, description and times. ``remove_lectures`` (lecture ids) and
    ``redact_authors`` (names or ORCID iDs) are applied to the records and to the change files earlier
    releases left (``redact_authors`` may be :class:`Redactions` already expanded with the names their
    ORCID iDs carried). ``on_step(step, path)`` is called after each step (``built``, ``checked``,
    ``aside``, ``swapped``) for progress reports. The records are held in memory; :func:`publish_events`
    takes them one event at a time.
    """
    records = list(records)
    # A redacted ORCID iD takes the names it carries in these records with it, in the old change files too.
    redactions = _redactions(redact_authors, lambda: records)
    options = PublishOptions(name, provenance, template, now, on_step, sessions, remove_lectures, redactions)
    # Invalid records are named all at once, with their place in ``records``, before anything is written.
    rows = lecture_rows(apply_removals(records, remove_lectures=remove_lectures, redact_authors=redactions))
    return publish_events(GroupedEvents(rows, validated=True), out_dir, options)


def _redactions(
    given: Iterable[str] | Redactions, records: Callable[[], Iterable[Mapping[str, object]]]
) -> Redactions:
    """``given`` as :class:`Redactions`, expanded (unless it already is) with every name a redacted
    ORCID iD carries in ``records`` (read only when an ORCID iD is to be redacted)."""
    if isinstance(given, Redactions):
        return given
    parsed = Redactions.parse(given)
    return parsed.with_names_of(records()) if parsed.orcids else parsed


def publish_events(events: EventRows, out_dir: Path, options: PublishOptions) -> ReleaseResult:
    """Write a checked release of ``events`` to ``out_dir`` (see :func:`publish_release`), one event's
    rows in memory at a time, replacing the previous release atomically."""
    if not _NAME.match(options.name):
        raise ValueError(f"name {options.name!r} must look like `name` or `owner/name`")
    crawl_date_of(options.provenance)
    template = options.template or cards.DEFAULT_TEMPLATE
    if not template.is_file():
        raise FileNotFoundError(f"card template not found: {template}")
    # Every lecture as a row mapping, one event in memory at a time (read only to expand an ORCID iD).
    redactions = _redactions(
        options.redact_authors,
        lambda: (lec.values() for event_id in events.event_ids() for lec in events.lectures_of(event_id)),
    )
    removed = frozenset(str(i) for i in options.remove_lectures)
    out_dir = Path(out_dir).absolute()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    step = options.on_step or (lambda _step, _path: None)
    with exclusive_lock(out_dir.parent / f".{out_dir.name}.lock"):
        recover(out_dir)
        previous = read_previous_release(out_dir)
        build = out_dir.parent / f".{out_dir.name}.build-{uuid.uuid4().hex[:12]}"
        build.mkdir()
        try:
            context = BuildContext(build, options, template, previous, removed, redactions)
            result, carried = build_release(events, context)
            step("built", build)
            warnings = verify_release(build, result.row_counts, carried=carried)
            if options.check_built is not None:
                options.check_built(build, out_dir)
            step("checked", build)
            swap_in(build, out_dir, step)
        finally:
            shutil.rmtree(build, ignore_errors=True)
        step("swapped", out_dir)
    return dataclasses.replace(result, out_dir=out_dir, warnings=tuple(warnings))
