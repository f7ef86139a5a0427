"""Publishing a release directory atomically.

Everything is built in ``.<name>.build-*`` beside ``out_dir`` (same filesystem), checked (pyarrow reads
every file with the declared schema, ``datasets.load_dataset`` round trip of each config, card lint), then
swapped in with one ``renameat2(RENAME_EXCHANGE)`` where the kernel has it, else by renaming the old
release to ``.<name>.old`` and the new one in. Whatever step a crash interrupts, ``out_dir`` holds the
old or the new release once the next call has cleaned up, and that call does the cleaning first.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from crawler import schema
from crawler.anthology.links import LINKS_FILE, link_rows, links_csv, read_links_csv
from crawler.fsutil import DamagedFile, exclusive_lock, read_json_file
from crawler.publish import card as cards
from crawler.publish import changes as change_files
from crawler.publish.diff import diff_releases
from crawler.publish.lint import LintProblem, errors, lint_card
from crawler.publish.parquet import (
    EMPTY_PARTITION,
    ROW_GROUP_ROWS,
    SHARD_ROWS,
    Shard,
    data_files_pattern,
    file_schema,
    read_shards,
    write_shards,
)
from crawler.publish.removals import Redactions, apply_removals
from crawler.publish.tables import (
    DEFAULT_CONFIG,
    LECTURES,
    SESSIONS,
    SPECS,
    SPECS_BY_NAME,
    EventConfig,
    SessionDetail,
    event_configs,
    lecture_rows,
    lecture_table,
    session_details,
    summary_tables,
)
from crawler.schema import Lecture
from crawler.urls import without_credentials

MANIFEST = "manifest.json"
CARD = "README.md"
MANIFEST_FORMAT = 1
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
# Progress callback: called with the step's name and the directory it concerns.
ReleaseStep = Callable[[str, Path], None]


class ReleaseError(RuntimeError):
    """The release could not be built, failed its checks, or out_dir is not a release."""


@dataclass(frozen=True)
class ReleaseResult:
    out_dir: Path
    version: str
    previous_version: str | None
    row_counts: dict[str, int]
    files: dict[str, dict[str, Any]]  # path -> {"size", "sha256"}
    changes: cards.Changes
    warnings: tuple[LintProblem, ...] = field(default=())
    change_file: str | None = None  # ``changes/<version>.parquet``
    event_configs: dict[str, str] = field(default_factory=dict)  # event id -> config name
    # Event configs whose files this release wrote; the others' files are the previous release's.
    rewritten: tuple[str, ...] = ()


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
    ``aside``, ``swapped``) for progress reports.
    """
    if not _NAME.match(name):
        raise ValueError(f"name {name!r} must look like `name` or `owner/name`")
    crawl_date = _crawl_date(provenance)
    provenance = public_provenance(provenance)
    template = template or cards.DEFAULT_TEMPLATE
    if not template.is_file():
        raise FileNotFoundError(f"card template not found: {template}")
    details = session_details(sessions)
    records = list(records)
    # A redacted ORCID iD takes the names it carries in this release with it, in the old change files too.
    given = redact_authors if isinstance(redact_authors, Redactions) else Redactions.parse(redact_authors)
    redactions = given.with_names_of(records)
    removals = _Removals(frozenset(str(i) for i in remove_lectures), redactions)
    rows = lecture_rows(
        apply_removals(records, remove_lectures=removals.lectures, redact_authors=removals.authors)
    )
    out_dir = Path(out_dir).absolute()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    step = on_step or (lambda _step, _path: None)
    with exclusive_lock(out_dir.parent / f".{out_dir.name}.lock"):
        recover(out_dir)
        previous = _previous_release(out_dir)
        build = out_dir.parent / f".{out_dir.name}.build-{uuid.uuid4().hex[:12]}"
        build.mkdir()
        try:
            result = _build(
                rows, build, name, provenance, template, crawl_date, now, previous, details, removals
            )
            step("built", build)
            result_warnings = verify_release(build, result.row_counts, carried=result.reused_files)
            step("checked", build)
            _swap(build, out_dir, step)
        finally:
            shutil.rmtree(build, ignore_errors=True)
        step("swapped", out_dir)
    return ReleaseResult(
        out_dir=out_dir,
        version=result.version,
        previous_version=result.previous_version,
        row_counts=result.row_counts,
        files=result.files,
        changes=result.changes,
        warnings=tuple(result_warnings),
        change_file=result.change_file,
        event_configs={e.event_id: e.config_name for e in result.event_configs},
        rewritten=tuple(sorted(result.rewritten)),
    )


def public_provenance(value: Any) -> Any:
    """``value`` with the ``user:password@`` part removed from every URL in it: it goes into the card."""
    if isinstance(value, Mapping):
        return {key: public_provenance(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [public_provenance(item) for item in value]
    if isinstance(value, str) and "://" in value:
        return without_credentials(value)
    return value


def _crawl_date(provenance: Mapping[str, Any]) -> str:
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


@dataclass(frozen=True)
class _Removals:
    lectures: frozenset[str]
    authors: Redactions


@dataclass(frozen=True)
class _Previous:
    """The previous release, read lazily: its rows are read one file at a time when they are needed."""

    manifest: dict[str, Any]
    card: str | None
    root: Path

    @property
    def lecture_files(self) -> list[str]:
        return list(self.manifest["configs"][DEFAULT_CONFIG]["files"])

    def _table(self, path: str, columns: list[str] | None = None) -> pa.Table:
        try:
            return pq.read_table(self.root / path, columns=columns)
        except (OSError, pa.ArrowException) as exc:
            raise DamagedFile(self.root / path, f"unreadable Parquet: {exc}", _recovery(self.root)) from None

    def check(self) -> None:
        """Every lecture file opens as Parquet (a damaged release is named before anything is built)."""
        for path in self.lecture_files:
            try:
                pq.read_metadata(self.root / path)
            except (OSError, pa.ArrowException) as exc:
                raise DamagedFile(
                    self.root / path, f"unreadable Parquet: {exc}", _recovery(self.root)
                ) from None

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        """Every lecture row, one file in memory at a time."""
        for path in self.lecture_files:
            # An older release may lack columns added since: from_json_record gives them their empty value.
            for row in self._table(path).to_pylist():
                yield schema.from_json_record(row)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return list(self.iter_rows())

    @property
    def hashes(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for path in self.lecture_files:
            table = self._table(path, ["lecture_id", "content_sha256"])
            out.update(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True))
        return out

    def event_shards(self) -> dict[str, dict[str, Any]]:
        found = self.manifest.get("event_shards")
        return found if isinstance(found, dict) else {}


def _recovery(out_dir: Path) -> str:
    return (
        f"restore {out_dir} from the Hub (huggingface-cli download --repo-type dataset ...) or a backup, "
        "or move it aside to publish a first release again"
    )


def manifest_problem(manifest: Any) -> str | None:
    """What makes ``manifest`` (parsed JSON) not a release manifest this code can build on; None when it
    is one. A manifest that reads as JSON but lost its history or its files would otherwise start the
    release history again, silently."""
    if not isinstance(manifest, dict):
        return f"not a JSON object but {type(manifest).__name__}"
    fmt = manifest.get("format")
    if not isinstance(fmt, int) or isinstance(fmt, bool) or not 1 <= fmt <= MANIFEST_FORMAT:
        return f"`format` is {fmt!r}, not a format up to {MANIFEST_FORMAT}"
    version = manifest.get("version")
    if not isinstance(version, str) or not version:
        return f"`version` is {version!r}, not a release version"
    versions = manifest.get("versions")
    if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        return "`versions` is not a list of release versions"
    if version not in versions:
        return f"`versions` does not hold the release's own version {version!r}"
    if not isinstance(manifest.get("previous_version"), str | None):
        return "`previous_version` is neither a version nor null"
    configs = manifest.get("configs")
    if not isinstance(configs, dict) or DEFAULT_CONFIG not in configs:
        return f"`configs` does not list the `{DEFAULT_CONFIG}` config"
    for config_name, config in configs.items():
        files = config.get("files") if isinstance(config, dict) else None
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            return f"`configs.{config_name}.files` is not a list of paths"
    change_files = manifest.get("change_files")
    if not isinstance(change_files, list) or not all(isinstance(f, str) for f in change_files):
        return "`change_files` is not a list of paths"
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(isinstance(e, dict) for e in files.values()):
        return "`files` is not a table of files with their size and sha256"
    return None


def read_manifest(out_dir: Path) -> dict[str, Any] | None:
    """The manifest of the release in ``out_dir``, checked (None when there is no manifest).

    :class:`DamagedFile` names the file when it is not JSON or not shaped like a manifest."""
    path = Path(out_dir) / MANIFEST
    if not path.is_file():
        return None
    manifest = read_json_file(path, recovery=_recovery(out_dir))
    problem = manifest_problem(manifest)
    if problem is not None:
        raise DamagedFile(path, problem, _recovery(out_dir))
    assert isinstance(manifest, dict)
    return manifest


def _previous_release(out_dir: Path) -> _Previous | None:
    if not out_dir.exists():
        return None
    manifest = read_manifest(out_dir)
    if manifest is None:
        if any(out_dir.iterdir()):
            raise ReleaseError(
                f"{out_dir} exists and is not a release (no {MANIFEST}); refusing to replace it"
            )
        return None
    card_path = out_dir / CARD
    card = card_path.read_text(encoding="utf-8") if card_path.is_file() else None
    previous = _Previous(manifest, card, out_dir)
    previous.check()
    return previous


@dataclass(frozen=True)
class PreviousRelease:
    """What the next release is built on: the lecture rows (withdrawn ones included) and the session
    details of the release in ``out_dir``."""

    version: str | None
    rows: list[dict[str, Any]]
    sessions: list[dict[str, Any]]


def read_previous_release(out_dir: Path) -> PreviousRelease:
    """The release in ``out_dir`` (empty when there is none), its manifest checked; every command that
    writes the next release reads it through here."""
    previous = _previous_release(Path(out_dir).absolute())
    if previous is None:
        return PreviousRelease(None, [], [])
    sessions: list[dict[str, Any]] = []
    config = previous.manifest["configs"].get(SESSIONS.name)
    for path in config["files"] if isinstance(config, dict) else []:
        try:
            table = pq.read_table(previous.root / path)
        except (OSError, pa.ArrowException) as exc:
            problem = f"unreadable Parquet: {exc}"
            raise DamagedFile(previous.root / path, problem, _recovery(out_dir)) from None
        for row in table.to_pylist():
            sessions.append(
                {
                    "session_id": row.get("session_id"),
                    "event_id": row.get("event_id"),
                    "name": row.get("session_name"),
                    "description": row.get("description"),
                    "start": schema.format_timestamp(row.get("starts_at")),
                    "end": schema.format_timestamp(row.get("ends_at")),
                }
            )
    return PreviousRelease(str(previous.manifest["version"]), previous.rows, sessions)


@dataclass(frozen=True)
class CarriedRelease:
    """The rows of the next release before removals: what was staged, and what the previous release
    held that this crawl did not restage. ``carried_events``: events of the previous release the crawl
    did not cover, their rows kept as they were (event id -> rows); ``retired_events``: events taken
    out on request (event id -> rows dropped); ``withdrawn``: lecture ids newly marked withdrawn."""

    records: list[dict[str, Any]]
    carried_events: dict[str, int]
    retired_events: dict[str, int]
    withdrawn: list[str]


def carry_forward(
    previous: Sequence[Mapping[str, Any]],
    staged: Sequence[Mapping[str, Any]],
    *,
    crawled_events: Iterable[str],
    complete: bool,
    retire_events: Iterable[str] = (),
) -> CarriedRelease:
    """The next release's rows from the previous release's and the staged crawl's.

    A staged lecture replaces its previous row. A previous lecture the crawl did not stage is kept:
    marked withdrawn when its event was crawled and the crawl finished (the listing was read whole and
    no longer names it), as it was when its event was not crawled (the site was not asked about it) or
    the crawl is partial. Every lecture of a retired event, staged or not, is left out.
    """
    crawled = {str(e) for e in crawled_events}
    retired = {str(e) for e in retire_events}
    retired_counts: dict[str, int] = {}
    carried: dict[str, int] = {}
    withdrawn: list[str] = []
    out: list[dict[str, Any]] = []
    for record in staged:
        event = str(record.get("event_id"))
        if event in retired:
            retired_counts[event] = retired_counts.get(event, 0) + 1
        else:
            out.append(dict(record))
    staged_ids = {str(r.get("lecture_id")) for r in staged}
    for row in previous:
        event = str(row.get("event_id"))
        if event in retired:
            retired_counts[event] = retired_counts.get(event, 0) + 1
        elif str(row.get("lecture_id")) in staged_ids:
            continue
        elif event not in crawled:
            carried[event] = carried.get(event, 0) + 1
            out.append(dict(row))
        elif complete and not row.get("withdrawn"):
            withdrawn.append(str(row["lecture_id"]))
            out.append({**row, "withdrawn": True})
        else:
            out.append(dict(row))
    return CarriedRelease(out, dict(sorted(carried.items())), dict(sorted(retired_counts.items())), withdrawn)


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
class _Built:
    version: str
    previous_version: str | None
    row_counts: dict[str, int]
    files: dict[str, dict[str, Any]]
    changes: cards.Changes
    change_file: str
    event_configs: list[EventConfig]
    rewritten: frozenset[str] = frozenset()  # event configs whose files were written anew
    reused_files: frozenset[str] = frozenset()  # lecture files carried from the previous release


# The columns of the lectures the card's statistics read (the release writes the whole rows one event at
# a time; the card sees these few columns of all of them).
CARD_COLUMNS = (
    "lecture_id",
    "title",
    "abstract",
    "keywords",
    "authors",
    "presentation_type",
    "event_id",
    "session_id",
    "session_name",
    "is_premium",
    "doi",
    "held_at",
    "anthology_id",
    "withdrawn",
    "extraction",
)


@dataclass(frozen=True)
class _EventShards:
    """One event's ``lectures`` files in the build: written now, or carried byte for byte from the
    previous release because the event's rows are exactly the ones those files hold."""

    event: EventConfig
    shards: tuple[Shard, ...]
    num_bytes: int
    fingerprint: str
    email_like: int
    reused: bool

    @property
    def num_rows(self) -> int:
        return sum(s.num_rows for s in self.shards)

    def entry(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "files": [s.path for s in self.shards],
            "rows": self.num_rows,
            "num_bytes": self.num_bytes,
            "email_like": self.email_like,
        }


def rows_fingerprint(rows: Iterable[Mapping[str, Any]]) -> str:
    """A digest of everything an event's ``lectures`` files are made of: every field of its rows (in
    order), the declared file schema and the writer's version and settings. Equal digests give equal
    bytes."""
    digest = hashlib.sha256()
    digest.update(f"pyarrow {pa.__version__} {SHARD_ROWS} {ROW_GROUP_ROWS}\n".encode())
    digest.update(file_schema(LECTURES).serialize().to_pybytes())
    for row in rows:
        record = schema.to_json_record(row)
        digest.update(json.dumps(record, sort_keys=True, ensure_ascii=False, default=str).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _event_shards(
    build: Path,
    event: EventConfig,
    rows: Sequence[Lecture],
    previous: _Previous | None,
) -> _EventShards:
    """Write one event's ``lectures`` files, or link the previous release's when its rows are unchanged."""
    fingerprint = rows_fingerprint(r.values() for r in rows)
    before = previous.event_shards().get(event.event_id) if previous else None
    if previous is not None and isinstance(before, dict) and before.get("fingerprint") == fingerprint:
        carried = _carry_files(previous, build, before)
        if carried is not None:
            return _EventShards(
                event,
                tuple(carried),
                int(before["num_bytes"]),
                fingerprint,
                int(before.get("email_like", 0)),
                reused=True,
            )
    table = lecture_table(rows)
    shards = write_shards(table, build, LECTURES, partition=event.directory)
    found = cards.email_like_values(table)
    return _EventShards(event, tuple(shards), table.nbytes, fingerprint, found, reused=False)


def _carry_files(previous: _Previous, build: Path, entry: Mapping[str, Any]) -> list[Shard] | None:
    """Hard-link (or copy) the previous release's files of an event into the build; None when one of
    them is missing or not the file its manifest describes (then the event is written again)."""
    paths = entry.get("files")
    if not isinstance(paths, list) or not paths:
        return None
    listed = previous.manifest["files"]
    shards = []
    for path in paths:
        source = previous.root / str(path)
        if not isinstance(path, str) or path not in listed or not source.is_file():
            return None
        # Read once more: a file damaged since it was published is written again, not carried.
        if _file_entry(source) != listed[path]:
            return None
        shards.append(Shard(path, pq.read_metadata(source).num_rows))
    for path in paths:
        target = build / path
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(previous.root / path, target)
        except OSError:
            shutil.copyfile(previous.root / path, target)
    return shards


def _build(
    rows: list[Lecture],
    build: Path,
    name: str,
    provenance: Mapping[str, Any],
    template: Path,
    crawl_date: str,
    now: datetime | None,
    previous: _Previous | None,
    sessions: Mapping[str, SessionDetail],
    removals: _Removals,
) -> _Built:
    created = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    history = list(previous.manifest.get("versions", [])) if previous else []
    previous_version = previous.manifest.get("version") if previous else None
    version = next_version(crawl_date, history)
    tables = summary_tables(rows, sessions)
    per_event = event_configs(tables["events"].to_pylist())
    by_event: dict[str, list[Lecture]] = {}
    for row in rows:
        by_event.setdefault(str(row.event_id), []).append(row)
    # One event's table in memory at a time; an event whose rows did not change keeps its files.
    written = [_event_shards(build, e, by_event[e.event_id], previous) for e in per_event]
    del by_event
    if written:
        lecture_shards = [s for w in written for s in w.shards]
    else:
        lecture_shards = write_shards(lecture_table([]), build, LECTURES, partition=EMPTY_PARTITION)
    configs = [
        cards.ConfigFiles(
            spec=LECTURES,
            paths=tuple(s.path for s in lecture_shards),
            num_rows=len(rows),
            num_bytes=sum(w.num_bytes for w in written),
            download_size=sum((build / s.path).stat().st_size for s in lecture_shards),
            pattern=data_files_pattern(LECTURES),
        )
    ]
    event_files = [_event_config_files(build, w) for w in written]
    # datasets cannot load a split without rows: a table other than the default is left out while empty
    # (e.g. ``authors`` until the crawl reads them).
    for spec in (s for s in SPECS if s is not LECTURES and tables[s.name].num_rows):
        shards = write_shards(tables[spec.name], build, spec)
        configs.append(
            cards.ConfigFiles(
                spec=spec,
                paths=tuple(s.path for s in shards),
                num_rows=tables[spec.name].num_rows,
                num_bytes=tables[spec.name].nbytes,
                download_size=sum((build / s.path).stat().st_size for s in shards),
                pattern=data_files_pattern(spec),
            )
        )
    # The links the Anthology could ingest: every linked lecture still on the site.
    links = link_rows(rows)
    (build / LINKS_FILE).write_text(links_csv(links), encoding="utf-8")
    history_files = _carry_change_files(previous, build, removals)
    # The one diff the change file and the card both tell.
    diff = diff_releases((Lecture.from_json(r) for r in previous.iter_rows()) if previous else [], rows)
    change_rows = change_files.change_rows(diff)
    change_file = change_files.changes_path(version)
    change_files.write_changes(change_rows, build / change_file)
    all_change_files = [*history_files, change_file]
    changes = cards.Changes.of(diff, previous_version)
    repo_id = str(provenance.get("repo_id") or (name if "/" in name else f"<namespace>/{name}"))
    pretty_name = str(provenance.get("pretty_name") or _pretty_name(name, tables["events"].to_pylist()))
    context = cards.card_context(
        release=cards.CardRelease(name, repo_id, pretty_name, version, created, provenance, previous_version),
        configs=[*configs, *event_files],
        tables={DEFAULT_CONFIG: lecture_table(rows, CARD_COLUMNS), **tables},
        diff=diff,
        event_configs=per_event,
        change_files=all_change_files,
        lecture_email_like=sum(w.email_like for w in written),
    )
    text = cards.render_card(
        template=template,
        data=cards.card_data(pretty_name=" ".join(pretty_name.split()), configs=[*configs, *event_files]),
        context=context,
        previous_card=previous.card if previous else None,
    )
    (build / CARD).write_text(text, encoding="utf-8")
    row_counts = {c.spec.name: c.num_rows for c in configs}
    paths = [CARD, LINKS_FILE, *(p for c in configs for p in c.paths), *all_change_files]
    reused = {s.path for w in written if w.reused for s in w.shards}
    files = {
        path: dict(previous.manifest["files"][path])
        if previous and path in reused
        else _file_entry(build / path)
        for path in paths
    }
    manifest = {
        "format": MANIFEST_FORMAT,
        "name": name,
        "version": version,
        "previous_version": previous_version,
        "versions": [*history, version],
        "created": schema.format_timestamp(created),
        "row_counts": row_counts,
        "configs": {
            **{c.spec.name: {"rows": c.num_rows, "files": list(c.paths)} for c in configs},
            **{
                c.config_name: {"rows": c.num_rows, "files": list(c.paths), "event_id": e.event_id}
                for c, e in zip(event_files, per_event, strict=True)
            },
        },
        # Per event: what its files were made of, so that the next release keeps them when nothing changed.
        "event_shards": {w.event.event_id: w.entry() for w in written},
        "changes": {"added": changes.added, "changed": changes.changed, "removed": changes.removed},
        "change_files": all_change_files,
        "change_rows": change_files.counts(change_rows),
        "anthology_links": {"path": LINKS_FILE, "rows": len(links)},
        "provenance": cards.json_safe(provenance),
        "files": files,
    }
    (build / MANIFEST).write_text(
        json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    _fsync_tree(build)
    rewritten = frozenset(w.event.config_name for w in written if not w.reused)
    return _Built(
        version,
        previous_version,
        row_counts,
        files,
        changes,
        change_file,
        per_event,
        rewritten,
        frozenset(reused),
    )


def _event_config_files(build: Path, written: _EventShards) -> cards.ConfigFiles:
    event = written.event
    paths = tuple(s.path for s in written.shards)
    return cards.ConfigFiles(
        spec=LECTURES,
        paths=paths,
        num_rows=written.num_rows,
        num_bytes=written.num_bytes,
        download_size=sum((build / p).stat().st_size for p in paths),
        pattern=paths,
        name=event.config_name,
        description=f"The lectures of {event.event_name or 'event ' + event.event_id} only.",
    )


def _carry_change_files(previous: _Previous | None, build: Path, removals: _Removals) -> list[str]:
    """Copy the change files of earlier releases into the build, with the removals applied to them."""
    if previous is None:
        return []
    carried = []
    for path in previous.manifest.get("change_files", []):
        source = previous.root / path
        if not source.is_file():
            raise ReleaseError(f"{path}: listed in the previous {MANIFEST} but missing")
        target = build / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not _may_need_scrubbing(source, removals):
            # Nothing to remove from it: the file is carried as it is, without reading its rows (the
            # first release's file holds every lecture).
            shutil.copyfile(source, target)
            carried.append(path)
            continue
        scrubbed = change_files.scrub_changes(
            change_files.read_changes(source),
            removed=removals.lectures,
            redact=lambda lectures: [
                Lecture.from_json(r)
                for r in apply_removals([x.values() for x in lectures], redact_authors=removals.authors)
            ],
        )
        if scrubbed is None:
            shutil.copyfile(source, target)
        else:
            change_files.write_changes(scrubbed, target)
        carried.append(path)
    return carried


def _may_need_scrubbing(path: Path, removals: _Removals) -> bool:
    """False when a change file cannot hold anything the removals take out: no author is to be
    redacted and none of its lecture ids is removed (read from its ``lecture_id`` column alone)."""
    if removals.authors.orcids or removals.authors.names:
        return True
    if not removals.lectures:
        return False
    try:
        ids = pq.read_table(path, columns=["lecture_id"]).column(0).to_pylist()
    except (OSError, pa.ArrowException):
        return True  # read_changes names the damage
    return not removals.lectures.isdisjoint(ids)


def _pretty_name(name: str, events: list[dict[str, Any]]) -> str:
    names = [e["event_name"] or f"event {e['event_id']}" for e in events]
    return f"{', '.join(names)} lectures on Underline" if names else name.rsplit("/", 1)[-1]


def _file_entry(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return {"size": path.stat().st_size, "sha256": digest.hexdigest()}


def verify_files(root: Path, manifest: Mapping[str, Any]) -> None:
    """Raise :class:`ReleaseError` unless every file of the manifest is there with its size and sha256."""
    for path, entry in manifest["files"].items():
        if not (root / path).is_file():
            raise ReleaseError(f"{path}: listed in {MANIFEST} but missing")
        if _file_entry(root / path) != entry:
            raise ReleaseError(f"{path}: size or sha256 differs from {MANIFEST}")


def verify_release(
    root: Path, expected_rows: Mapping[str, int], *, carried: Iterable[str] = ()
) -> list[LintProblem]:
    """Check a release directory; raise :class:`ReleaseError` on any failure, return lint warnings.

    Every file's size and sha256 is checked against the manifest. A file written by this release is read
    back whole and its config goes through a ``datasets.load_dataset`` round trip; the ``carried`` files
    (lecture files linked from the previous release, which checked them, and equal to them byte for byte)
    have their schema, row count, ids and order checked from two columns, so that a night which changed
    one event costs about that event's reading. The ``lectures`` config's files are checked to be exactly
    its events' files, and ``datasets`` must resolve the config to them with the declared features."""
    carried = frozenset(carried)
    manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    verify_files(root, manifest)
    for spec in (s for s in SPECS if s.name in manifest["configs"] and s is not LECTURES):
        table = read_shards(root, spec, manifest["configs"][spec.name]["files"])
        if table.num_rows != expected_rows[spec.name]:
            raise ReleaseError(f"{spec.name}: {table.num_rows} rows read, {expected_rows[spec.name]} written")
    lecture_files = list(manifest["configs"][LECTURES.name]["files"])
    lecture_rows_read = 0
    for path in lecture_files:
        _check_schema(root, path)
        lecture_rows_read += pq.read_metadata(root / path).num_rows
    if lecture_rows_read != expected_rows[LECTURES.name]:
        raise ReleaseError(
            f"{LECTURES.name}: {lecture_rows_read} rows read, {expected_rows[LECTURES.name]} written"
        )
    event_files: list[str] = []
    rewritten: dict[str, int] = {}
    for config_name, config in manifest["configs"].items():
        if config_name in SPECS_BY_NAME:
            continue
        event_files += config["files"]
        if set(config["files"]) <= carried:
            table = pa.concat_tables(
                pq.read_table(root / path, columns=["event_id", LECTURES.key]) for path in config["files"]
            )
        else:
            table = read_shards(root, LECTURES, config["files"])
            rewritten[config_name] = config["rows"]
        if table.num_rows != config["rows"] or set(table.column("event_id").to_pylist()) - {
            config["event_id"]
        }:
            raise ReleaseError(
                f"{config_name}: its files do not hold exactly its event's {config['rows']} rows"
            )
        ids = table.column(LECTURES.key).to_pylist()
        if ids != sorted(ids):
            raise ReleaseError(f"{config_name}: lectures are not sorted by lecture_id")
        del table
    if sorted(event_files) != sorted(lecture_files) and expected_rows[LECTURES.name]:
        raise ReleaseError("the event configs' files are not exactly the lectures config's files")
    history = list(manifest.get("change_files", []))
    for index, path in enumerate(history):
        # This release's change file is read whole; the earlier ones (sha256 checked above) by schema.
        if index == len(history) - 1:
            pq.read_table(root / path, schema=change_files.arrow_schema())
        elif not pq.read_schema(root / path).remove_metadata().equals(change_files.arrow_schema()):
            raise ReleaseError(f"{path}: schema differs from the change files' schema")
    _check_links(root, manifest)
    loaded = {
        name: config["rows"]
        for name, config in manifest["configs"].items()
        if name in rewritten or (name in SPECS_BY_NAME and name != DEFAULT_CONFIG)
    }
    if not expected_rows[LECTURES.name]:
        loaded[DEFAULT_CONFIG] = 0
    else:
        _check_resolves(root, DEFAULT_CONFIG, lecture_files)
    _check_load_dataset(root, loaded)
    problems = lint_card((root / CARD).read_text(encoding="utf-8"), root)
    bad = errors(problems)
    if bad:
        raise ReleaseError("the dataset card fails lint:\n" + "\n".join(f"  - {p}" for p in bad))
    return [p for p in problems if p not in bad]


def _check_schema(root: Path, path: str) -> None:
    found = pq.read_schema(root / path)
    if not found.remove_metadata().equals(LECTURES.arrow_schema().remove_metadata()):
        raise ReleaseError(f"{path}: schema differs from the declared {LECTURES.name} schema")


def _check_resolves(root: Path, config: str, files: Sequence[str]) -> None:
    """``datasets`` reads ``config`` from exactly ``files``, with the declared features (the files
    themselves are checked one event at a time)."""
    import datasets

    builder = datasets.load_dataset_builder(str(root), None if config == DEFAULT_CONFIG else config)
    data_files = builder.config.data_files or {}
    found = sorted(Path(str(f)).resolve() for split in data_files.values() for f in split)
    wanted = sorted((root / f).resolve() for f in files)
    if found != wanted:
        raise ReleaseError(
            f"{config}: datasets resolves {len(found)} file(s), the manifest lists {len(wanted)}"
        )
    if builder.info.features is not None and builder.info.features != LECTURES.features():
        raise ReleaseError(f"{config}: the card declares features {builder.info.features}")


def _check_links(root: Path, manifest: Mapping[str, Any]) -> None:
    """``anthology-links.csv`` lists exactly the linked lectures still on the site, with their URLs."""
    entry = manifest.get("anthology_links")
    if entry is None:
        return
    try:
        found = read_links_csv((root / entry["path"]).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ReleaseError(f"{entry['path']}: {exc}") from None
    columns = ["anthology_id", "url", "video_url", "video_doi", "withdrawn"]
    lectures = read_shards(root, LECTURES, manifest["configs"][LECTURES.name]["files"]).select(columns)
    expected = link_rows([Lecture.from_json(r) for r in lectures.to_pylist()])
    if found != expected or entry["rows"] != len(expected):
        raise ReleaseError(
            f"{entry['path']}: {len(found)} rows do not match the {len(expected)} linked lectures"
        )


def _check_load_dataset(root: Path, expected_rows: Mapping[str, int]) -> None:
    """Every config (tables and events) loads with its declared features and row count."""
    import datasets

    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        with tempfile.TemporaryDirectory(prefix="eventcrawl-check-") as cache:
            for name, rows in expected_rows.items():
                spec = SPECS_BY_NAME.get(name, LECTURES)
                config = None if name == DEFAULT_CONFIG else name
                loaded = datasets.load_dataset(str(root), config, split="train", cache_dir=cache)
                if loaded.features != spec.features():
                    raise ReleaseError(f"{name}: load_dataset gives features {loaded.features}")
                if loaded.num_rows != rows:
                    raise ReleaseError(f"{name}: load_dataset gives {loaded.num_rows} rows")
                del loaded
    finally:
        if bars:
            datasets.enable_progress_bars()


def _aside(out_dir: Path) -> Path:
    return out_dir.parent / f".{out_dir.name}.old"


def recover(out_dir: Path) -> None:
    """Finish what an interrupted publish left: restore the old release if it was moved aside, drop builds."""
    aside = _aside(out_dir)
    if aside.exists():
        if out_dir.exists():
            shutil.rmtree(aside)
        else:
            os.rename(aside, out_dir)
            _fsync_dir(out_dir.parent)
    for build in out_dir.parent.glob(f".{out_dir.name}.build-*"):
        shutil.rmtree(build, ignore_errors=True)


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _rename_exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _swap(build: Path, out_dir: Path, step: ReleaseStep) -> None:
    if not out_dir.exists():
        os.rename(build, out_dir)
    elif not _rename_exchange(build, out_dir):
        aside = _aside(out_dir)
        os.rename(out_dir, aside)
        _fsync_dir(out_dir.parent)
        step("aside", aside)
        os.rename(build, out_dir)
        _fsync_dir(out_dir.parent)
        shutil.rmtree(aside)
    # After an exchange ``build`` holds the old release; the caller removes it.
    _fsync_dir(out_dir.parent)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    for path in sorted(root.rglob("*"), reverse=True):
        if path.is_file():
            with path.open("rb") as fh:
                os.fsync(fh.fileno())
        else:
            _fsync_dir(path)
    _fsync_dir(root)
