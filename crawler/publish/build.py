"""Building a release in its build directory: the version, every event written
(:func:`crawler.publish.events.write_events`: its lectures' files and its transcripts' file), the summary
tables' files, the Anthology links, the change
files (earlier releases' carried with the removals applied, this release's merged from its events'),
the card with its charts, and the manifest listing every file with its size and sha256; then every file
is synced to disk. The checks (:mod:`crawler.publish.verify`) and the swap
(:mod:`crawler.publish.swap`) come after.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from crawler import schema
from crawler.anthology.links import LINKS_FILE, LinksFile, links_csv, links_file
from crawler.privacy.rule import PRIVACY_RULE
from crawler.privacy.spoken import TRANSCRIPT_PRIVACY_RULE
from crawler.publish import card as cards
from crawler.publish import changes as change_files
from crawler.publish import charts
from crawler.publish.card_metadata import ConfigFiles, card_data, changes_info
from crawler.publish.events import BuildContext, EventRows, Written, merge_changes, write_events
from crawler.publish.lint import LintProblem
from crawler.publish.manifest import (
    CARD,
    MANIFEST,
    MANIFEST_FORMAT,
    ConfigEntry,
    FileEntry,
    Manifest,
    ReleaseError,
    file_entry,
)
from crawler.publish.parquet import EMPTY_PARTITION, data_files_pattern, write_shards
from crawler.publish.previous import PreviousRelease
from crawler.publish.records import session_details
from crawler.publish.removals import RELEASE_LEDGER, remove_from
from crawler.publish.swap import fsync_tree
from crawler.publish.tables import (
    DEFAULT_CONFIG,
    LECTURES,
    SPECS,
    EventConfig,
    TableSpec,
    event_configs,
    lecture_table,
)


def crawl_date_of(provenance: Mapping[str, object]) -> str:
    """The provenance's ``crawl_date`` as ``YYYY-MM-DD`` (the release's version); ValueError otherwise."""
    value = provenance.get("crawl_date")
    if isinstance(value, datetime):
        return value.astimezone(UTC).date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value[:10]).isoformat()
        except ValueError:
            pass
    raise ValueError(f"provenance['crawl_date'] must be a date or YYYY-MM-DD, got {value!r}")


def next_version(crawl_date: str, taken: Iterable[str]) -> str:
    """The crawl date, or ``<date>.2``, ``<date>.3``... when an earlier release already took it."""
    used = set(taken)
    if crawl_date not in used:
        return crawl_date
    n = 2
    while f"{crawl_date}.{n}" in used:
        n += 1
    return f"{crawl_date}.{n}"


@dataclass(frozen=True)
class ReleaseResult:
    out_dir: Path
    version: str
    previous_version: str | None
    row_counts: dict[str, int]
    files: dict[str, FileEntry]
    changes: dict[str, Any]
    warnings: tuple[LintProblem, ...] = field(default=())
    change_file: str | None = None  # ``changes/<version>.parquet``
    event_configs: dict[str, str] = field(default_factory=dict)  # event id -> config name
    # Event configs whose files this release wrote; the others' files are the previous release's.
    rewritten: tuple[str, ...] = ()


def _config_files(
    build: Path,
    spec: TableSpec,
    paths: Sequence[str],
    num_rows: int,
    num_bytes: int,
    *,
    pattern: str | tuple[str, ...],
    name: str = "",
) -> ConfigFiles:
    """A config's files as written in ``build``, their Parquet bytes on disk summed."""
    download_size = sum((build / p).stat().st_size for p in paths)
    return ConfigFiles(spec, tuple(paths), num_rows, num_bytes, download_size, pattern=pattern, name=name)


def _configs(build: Path, written: Written, tables: Mapping[str, pa.Table]) -> list[ConfigFiles]:
    """The ``lectures`` config, the summary tables' and the ``transcripts`` and ``slides`` configs.
    datasets cannot load a split without rows: a table other than the default is left out while empty
    (e.g. ``authors`` until the crawl reads them; a release without any track has no ``transcripts``
    config, its card says so)."""
    if written.events:
        shards = [s for w in written.events for s in w.shards]
    else:
        shards = write_shards(lecture_table([]), build, LECTURES, partition=EMPTY_PARTITION)
    paths, lecture_bytes = [s.path for s in shards], sum(w.num_bytes for w in written.events)
    pattern = data_files_pattern(LECTURES)
    configs = [_config_files(build, LECTURES, paths, written.total, lecture_bytes, pattern=pattern)]
    for spec in (s for s in SPECS if s is not LECTURES and tables[s.name].num_rows):
        table = tables[spec.name]
        paths = [s.path for s in write_shards(table, build, spec)]
        configs.append(
            _config_files(build, spec, paths, table.num_rows, table.nbytes, pattern=data_files_pattern(spec))
        )
    for rows in (written.transcripts, written.slides):
        if rows.num_rows:
            paths = [s.path for f in rows.files for s in f.shards]
            num_bytes = sum(f.num_bytes for f in rows.files)
            configs.append(
                _config_files(build, rows.spec, paths, rows.num_rows, num_bytes, pattern=rows.pattern)
            )
    return configs


def build_release(events: EventRows, context: BuildContext) -> tuple[ReleaseResult, frozenset[str]]:
    """The release built in ``context.build`` (its ``out_dir`` the build directory, its warnings not yet
    known), and the files carried byte for byte from the previous release."""
    options, previous, build = context.options, context.previous, context.build
    created = (options.now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    version = next_version(crawl_date_of(options.provenance), previous.versions)
    written = write_events(events, context)
    tables = written.tables.tables(session_details(options.sessions))
    per_event = event_configs(tables["events"].to_pylist())
    by_event = {w.event_id: w for w in written.events}
    configs = _configs(build, written, tables)
    event_files = []
    for e in per_event:
        paths = [s.path for s in by_event[e.event_id].shards]
        rows, num_bytes = by_event[e.event_id].num_rows, by_event[e.event_id].num_bytes
        event_files.append(
            _config_files(build, LECTURES, paths, rows, num_bytes, pattern=tuple(paths), name=e.config_name)
        )
    # The links the Anthology could ingest: every linked lecture still on the site.
    links = links_file(written.linked)
    (build / LINKS_FILE).write_text(links_csv(links.rows), encoding="utf-8")
    history = _carry_change_files(context)
    change_file = change_files.changes_path(version)
    merge_changes(written.change_parts, build / change_file)
    shutil.rmtree(build / ".changes", ignore_errors=True)
    name, provenance = options.name, context.provenance
    release = cards.CardRelease(
        name=name,
        repo_id=str(provenance.get("repo_id") or (name if "/" in name else f"<namespace>/{name}")),
        pretty_name=str(provenance.get("pretty_name") or _pretty_name(name, per_event)),
        version=version,
        created=created,
        provenance=provenance,
        previous_version=previous.version,
        configs=configs,
        event_files=event_files,
        per_event=per_event,
        change_files=[*history, change_file],
        changes=cards.release_changes(written.diff, previous.version),
        history=charts.release_history(
            previous.manifest, version, written.total, change_files.file_counts(written.diff)
        ),
    )
    assets = _write_card(context, release, tables, written.card_table(), written)
    if options.removals_ledger is not None:
        options.removals_ledger.save(build)
    files = _write_manifest(context, release, written, links, assets)
    fsync_tree(build)
    result = ReleaseResult(
        out_dir=build,
        version=version,
        previous_version=previous.version,
        row_counts={c.spec.name: c.num_rows for c in configs},
        files=files,
        changes=release.changes,
        change_file=change_file,
        event_configs={e.event_id: e.config_name for e in per_event},
        rewritten=tuple(sorted(e.config_name for e in per_event if not by_event[e.event_id].reused)),
    )
    return result, frozenset(_reused_files(written))


def _reused_files(written: Written) -> set[str]:
    """The files carried byte for byte from the previous release: events' lecture and transcript files."""
    return {s.path for w in [*written.events, *written.transcripts.files] if w.reused for s in w.shards}


def _write_card(
    context: BuildContext,
    release: cards.CardRelease,
    tables: Mapping[str, pa.Table],
    lectures: pa.Table,
    written: Written,
) -> list[str]:
    """Write the card and its charts; return the charts' paths."""
    context_values = cards.card_context(
        release=release,
        tables={DEFAULT_CONFIG: lectures, **tables},
        diff=written.diff,
        lecture_email_like=sum(w.email_like for w in written.events),
        transcripts=written.transcripts,
        slides=written.slides,
    )
    figures = charts.event_figures(
        context_values["per_event"], release.per_event, written.coverage, written.slides.stats
    )
    drawn = charts.charts(figures, release.history, slides=bool(written.slides.num_rows))
    for chart in drawn:
        (context.build / chart.path).parent.mkdir(parents=True, exist_ok=True)
        (context.build / chart.path).write_text(chart.svg, encoding="utf-8")
    text = cards.render_card(
        template=context.template,
        data=card_data(
            pretty_name=" ".join(release.pretty_name.split()),
            configs=[*release.configs, *release.event_files],
            changes=changes_info(context.build, release.change_files),
        ),
        context={**context_values, "charts": charts.card_rows(drawn)},
        previous_card=context.previous.card,
    )
    (context.build / CARD).write_text(text, encoding="utf-8")
    return [chart.path for chart in drawn]


def _write_manifest(
    context: BuildContext,
    release: cards.CardRelease,
    written: Written,
    links: LinksFile,
    assets: Sequence[str],
) -> dict[str, FileEntry]:
    build, previous = context.build, context.previous
    configs = release.configs
    paths = [CARD, LINKS_FILE, *(p for c in configs for p in c.paths), *release.change_files, *assets]
    if context.options.removals_ledger is not None:
        paths.append(RELEASE_LEDGER)
    reused = _reused_files(written)
    files: dict[str, FileEntry] = {
        path: _kept_entry(previous, path) if path in reused else file_entry(build / path) for path in paths
    }
    event_entries: dict[str, ConfigEntry] = {
        c.config_name: {"rows": c.num_rows, "files": list(c.paths), "event_id": e.event_id}
        for c, e in zip(release.event_files, release.per_event, strict=True)
    }
    manifest: Manifest = {
        "format": MANIFEST_FORMAT,
        "name": context.options.name,
        "version": release.version,
        "previous_version": release.previous_version,
        "versions": [*previous.versions, release.version],
        "created": schema.format_timestamp(release.created),
        "row_counts": {c.spec.name: c.num_rows for c in configs},
        "configs": {
            **{c.spec.name: {"rows": c.num_rows, "files": list(c.paths)} for c in configs},
            **event_entries,
        },
        "event_shards": {w.event_id: w.entry() for w in written.events},
        "transcript_shards": {f.event_id: f.entry() for f in written.transcripts.files},
        "transcripts_privacy_rule": TRANSCRIPT_PRIVACY_RULE,
        "slides_privacy_rule": PRIVACY_RULE,
        "changes": {kind: release.changes[kind] for kind in ("added", "changed", "removed")},
        "change_files": release.change_files,
        "change_rows": {kind: count for kind, count in change_files.file_counts(written.diff).items()},
        "history": release.history,
        "anthology_links": {"path": LINKS_FILE, **links.entry()},
        "provenance": cards.json_safe(context.provenance),
        "files": files,
    }
    (build / MANIFEST).write_text(
        json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return files


def _kept_entry(previous: PreviousRelease, path: str) -> FileEntry:
    assert previous.manifest is not None
    entry = previous.manifest["files"][path]
    return {"size": int(entry["size"]), "sha256": str(entry["sha256"])}


def _carry_change_files(context: BuildContext) -> list[str]:
    """Copy the change files of earlier releases into the build, with the removals applied to them."""
    previous, build = context.previous, context.build
    if previous.manifest is None:
        return []
    paths = list(previous.manifest.get("change_files", []))
    for path in paths:
        source = previous.path_of(path)
        if not source.is_file():
            raise ReleaseError(f"{path}: listed in the previous {MANIFEST} but missing")
        # A file nothing is removed from is carried as it is, without reading its rows (the first
        # release's file holds every lecture), unless it predates the ``release`` column.
        scrubbed = None
        if _may_need_scrubbing(source, context):
            scrubbed = change_files.scrub_changes(
                change_files.read_changes(source),
                removed=context.removed,
                redact=lambda lectures: remove_from(lectures, redactions=context.redactions),
            )
        if scrubbed is None:
            change_files.carry_change_file(source, build / path)
        else:
            change_files.write_changes(scrubbed, build / path)
    return paths


def _may_need_scrubbing(path: Path, context: BuildContext) -> bool:
    """False when a change file cannot hold anything the removals take out: no author is to be
    redacted and none of its lecture ids is removed (read from its ``lecture_id`` column alone)."""
    if context.redactions:
        return True
    if not context.removed:
        return False
    try:
        ids = pq.read_table(path, columns=["lecture_id"]).column(0).to_pylist()
    except (OSError, pa.ArrowException):
        return True  # read_changes names the damage
    return not context.removed.isdisjoint(ids)


def _pretty_name(name: str, events: Sequence[EventConfig]) -> str:
    names = [e.event_name or f"event {e.event_id}" for e in events]
    return f"{', '.join(names)} lectures on Underline" if names else name.rsplit("/", 1)[-1]
