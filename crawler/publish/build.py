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

import pyarrow as pa
import pyarrow.parquet as pq

from crawler import schema
from crawler.anthology.links import LINKS_FILE, LinksFile, links_csv, links_file
from crawler.privacy.rule import PRIVACY_RULE
from crawler.privacy.spoken import TRANSCRIPT_PRIVACY_RULE
from crawler.publish import card as cards
from crawler.publish import changes as change_files
from crawler.publish import charts
from crawler.publish.card_metadata import ChangesConfig, ConfigFiles, card_data
from crawler.publish.events import BuildContext, EventRows, Removals, Written, merge_changes, write_events
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
from crawler.publish.shards import EventShards
from crawler.publish.swap import fsync_tree
from crawler.publish.tables import (
    DEFAULT_CONFIG,
    LECTURES,
    SPECS,
    EventConfig,
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
class Built:
    version: str
    previous_version: str | None
    row_counts: dict[str, int]
    files: dict[str, FileEntry]
    changes: cards.Changes
    change_file: str
    event_configs: list[EventConfig]
    rewritten: frozenset[str] = frozenset()  # event configs whose files were written anew
    reused_files: frozenset[str] = frozenset()  # lecture and transcript files carried from the last release


def _lecture_configs(context: BuildContext, written: Written, rows: int) -> list[ConfigFiles]:
    build = context.build
    if written.events:
        shards = [s for w in written.events for s in w.shards]
    else:
        shards = write_shards(lecture_table([]), build, LECTURES, partition=EMPTY_PARTITION)
    return [
        ConfigFiles(
            spec=LECTURES,
            paths=tuple(s.path for s in shards),
            num_rows=rows,
            num_bytes=sum(w.num_bytes for w in written.events),
            download_size=sum((build / s.path).stat().st_size for s in shards),
            pattern=data_files_pattern(LECTURES),
        )
    ]


def _table_configs(build: Path, tables: Mapping[str, pa.Table]) -> list[ConfigFiles]:
    """The summary tables' files. datasets cannot load a split without rows: a table other than the
    default is left out while empty (e.g. ``authors`` until the crawl reads them)."""
    configs = []
    for spec in (s for s in SPECS if s is not LECTURES and tables[s.name].num_rows):
        shards = write_shards(tables[spec.name], build, spec)
        configs.append(
            ConfigFiles(
                spec=spec,
                paths=tuple(s.path for s in shards),
                num_rows=tables[spec.name].num_rows,
                num_bytes=tables[spec.name].nbytes,
                download_size=sum((build / s.path).stat().st_size for s in shards),
                pattern=data_files_pattern(spec),
            )
        )
    return configs


def _file_table_configs(build: Path, written: Written) -> list[ConfigFiles]:
    """The ``transcripts`` and ``slides`` configs, each declared only when a row was written: datasets
    cannot load a split without rows, so a release without any track has no ``transcripts`` config (its
    card says so)."""
    configs = []
    for table in (written.transcripts, written.slides):
        if not table.num_rows:
            continue
        paths = tuple(s.path for f in table.files for s in f.shards)
        configs.append(
            ConfigFiles(
                spec=table.spec,
                paths=paths,
                num_rows=table.num_rows,
                num_bytes=sum(f.num_bytes for f in table.files),
                download_size=sum((build / p).stat().st_size for p in paths),
                pattern=table.pattern,
            )
        )
    return configs


@dataclass(frozen=True)
class _Release:
    """What the card and the manifest describe: the version, the configs and the change files."""

    version: str
    previous_version: str | None
    created: datetime
    configs: list[ConfigFiles]
    event_files: list[ConfigFiles]
    per_event: list[EventConfig]
    change_files: list[str]
    changes: cards.Changes
    history: list[charts.HistoryEntry] = field(default_factory=list)


def build_release(events: EventRows, context: BuildContext) -> Built:
    options, previous, build = context.options, context.previous, context.build
    created = (options.now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    version = next_version(crawl_date_of(options.provenance), previous.versions)
    written = write_events(events, context)
    tables = written.tables.tables(session_details(options.sessions))
    per_event = event_configs(tables["events"].to_pylist())
    by_event = {w.event_id: w for w in written.events}
    event_files = [_event_config_files(build, by_event[e.event_id], e) for e in per_event]
    configs = [
        *_lecture_configs(context, written, written.total),
        *_table_configs(build, tables),
        *_file_table_configs(build, written),
    ]
    # The links the Anthology could ingest: every linked lecture still on the site.
    links = links_file(written.linked)
    (build / LINKS_FILE).write_text(links_csv(links.rows), encoding="utf-8")
    history = _carry_change_files(previous, build, context.removals)
    change_file = change_files.changes_path(version)
    merge_changes(written.change_parts, build / change_file)
    shutil.rmtree(build / ".changes", ignore_errors=True)
    release = _Release(
        version,
        previous.version,
        created,
        configs,
        event_files,
        per_event,
        [*history, change_file],
        cards.Changes.of(written.diff, previous.version),
        charts.release_history(
            previous.manifest, version, written.total, change_files.file_counts(written.diff)
        ),
    )
    assets = _write_card(context, release, tables, written.card_table(), written)
    if options.removals_ledger is not None:
        options.removals_ledger.save(build)
    files = _write_manifest(context, release, written, links, assets)
    fsync_tree(build)
    return Built(
        version,
        previous.version,
        {c.spec.name: c.num_rows for c in configs},
        files,
        release.changes,
        change_file,
        per_event,
        frozenset(e.config_name for e in per_event if not by_event[e.event_id].reused),
        frozenset(_reused_files(written)),
    )


def _reused_files(written: Written) -> set[str]:
    """The files carried byte for byte from the previous release: events' lecture and transcript files."""
    return {s.path for w in [*written.events, *written.transcripts.files] if w.reused for s in w.shards}


def _write_card(
    context: BuildContext,
    release: _Release,
    tables: Mapping[str, pa.Table],
    lectures: pa.Table,
    written: Written,
) -> list[str]:
    """Write the card and its charts; return the charts' paths."""
    options = context.options
    name, provenance = options.name, context.provenance
    repo_id = str(provenance.get("repo_id") or (name if "/" in name else f"<namespace>/{name}"))
    pretty_name = str(provenance.get("pretty_name") or _pretty_name(name, release.per_event))
    all_configs = [*release.configs, *release.event_files]
    context_values = cards.card_context(
        release=cards.CardRelease(
            name, repo_id, pretty_name, release.version, release.created, provenance, release.previous_version
        ),
        configs=all_configs,
        tables={DEFAULT_CONFIG: lectures, **tables},
        diff=written.diff,
        event_configs=release.per_event,
        change_files=release.change_files,
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
            pretty_name=" ".join(pretty_name.split()),
            configs=all_configs,
            changes=ChangesConfig.of(context.build, release.change_files),
        ),
        context={**context_values, "charts": charts.card_rows(drawn)},
        previous_card=context.previous.card,
    )
    (context.build / CARD).write_text(text, encoding="utf-8")
    return [chart.path for chart in drawn]


def _write_manifest(
    context: BuildContext, release: _Release, written: Written, links: LinksFile, assets: Sequence[str]
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
    changes = release.changes
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
        "changes": {"added": changes.added, "changed": changes.changed, "removed": changes.removed},
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


def _event_config_files(build: Path, written: EventShards, event: EventConfig) -> ConfigFiles:
    paths = tuple(s.path for s in written.shards)
    return ConfigFiles(
        spec=LECTURES,
        paths=paths,
        num_rows=written.num_rows,
        num_bytes=written.num_bytes,
        download_size=sum((build / p).stat().st_size for p in paths),
        pattern=paths,
        name=event.config_name,
    )


def _carry_change_files(previous: PreviousRelease, build: Path, removals: Removals) -> list[str]:
    """Copy the change files of earlier releases into the build, with the removals applied to them."""
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
        if _may_need_scrubbing(source, removals):
            scrubbed = change_files.scrub_changes(
                change_files.read_changes(source),
                removed=removals.lectures,
                redact=lambda lectures: remove_from(lectures, redactions=removals.authors),
            )
        if scrubbed is None:
            change_files.carry_change_file(source, build / path)
        else:
            change_files.write_changes(scrubbed, build / path)
    return paths


def _may_need_scrubbing(path: Path, removals: Removals) -> bool:
    """False when a change file cannot hold anything the removals take out: no author is to be
    redacted and none of its lecture ids is removed (read from its ``lecture_id`` column alone)."""
    if removals.authors:
        return True
    if not removals.lectures:
        return False
    try:
        ids = pq.read_table(path, columns=["lecture_id"]).column(0).to_pylist()
    except (OSError, pa.ArrowException):
        return True  # read_changes names the damage
    return not removals.lectures.isdisjoint(ids)


def _pretty_name(name: str, events: Sequence[EventConfig]) -> str:
    names = [e.event_name or f"event {e.event_id}" for e in events]
    return f"{', '.join(names)} lectures on Underline" if names else name.rsplit("/", 1)[-1]
