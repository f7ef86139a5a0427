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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from crawler import schema
from crawler.fsutil import exclusive_lock
from crawler.publish import card as cards
from crawler.publish.lint import LintProblem, errors, lint_card
from crawler.publish.parquet import data_files_pattern, read_shards, write_shards
from crawler.publish.tables import DEFAULT_CONFIG, LECTURES, SPECS, build_tables, lecture_rows
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


def publish_release(
    records: Iterable[Mapping[str, Any]],
    out_dir: Path,
    *,
    name: str,
    provenance: Mapping[str, Any],
    template: Path | None = None,
    now: datetime | None = None,
    on_step: ReleaseStep | None = None,
) -> ReleaseResult:
    """Write a checked dataset release of ``records`` to ``out_dir``, replacing the previous one atomically.

    ``name`` is the dataset's name or Hub repository id (``owner/name``); ``provenance`` must hold
    ``crawl_date`` and may hold ``crawler_version``, ``event_id``, ``event_name``, ``web_base``,
    ``settings``, ``repo_id`` and ``pretty_name``. ``on_step(step, path)`` is called after each step
    (``built``, ``checked``, ``aside``, ``swapped``) for progress reports.
    """
    if not _NAME.match(name):
        raise ValueError(f"name {name!r} must look like `name` or `owner/name`")
    crawl_date = _crawl_date(provenance)
    provenance = public_provenance(provenance)
    template = template or cards.DEFAULT_TEMPLATE
    if not template.is_file():
        raise FileNotFoundError(f"card template not found: {template}")
    rows = lecture_rows(records)
    out_dir = Path(out_dir).absolute()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    step = on_step or (lambda _step, _path: None)
    with exclusive_lock(out_dir.parent / f".{out_dir.name}.lock"):
        recover(out_dir)
        previous = _previous_release(out_dir)
        build = out_dir.parent / f".{out_dir.name}.build-{uuid.uuid4().hex[:12]}"
        build.mkdir()
        try:
            result = _build(rows, build, name, provenance, template, crawl_date, now, previous)
            step("built", build)
            result_warnings = verify_release(build, result.row_counts)
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
class _Previous:
    manifest: dict[str, Any]
    card: str | None
    hashes: dict[str, str]


def _previous_release(out_dir: Path) -> _Previous | None:
    if not out_dir.exists():
        return None
    manifest_path = out_dir / MANIFEST
    if not manifest_path.is_file():
        if any(out_dir.iterdir()):
            raise ReleaseError(
                f"{out_dir} exists and is not a release (no {MANIFEST}); refusing to replace it"
            )
        return None
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    hashes: dict[str, str] = {}
    for path in manifest.get("configs", {}).get(DEFAULT_CONFIG, {}).get("files", []):
        ids = pq.read_table(out_dir / path, columns=["lecture_id", "content_sha256"]).to_pydict()
        hashes.update(zip(ids["lecture_id"], ids["content_sha256"], strict=True))
    card_path = out_dir / CARD
    return _Previous(manifest, card_path.read_text(encoding="utf-8") if card_path.is_file() else None, hashes)


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


def _build(
    rows: list[dict[str, Any]],
    build: Path,
    name: str,
    provenance: Mapping[str, Any],
    template: Path,
    crawl_date: str,
    now: datetime | None,
    previous: _Previous | None,
) -> _Built:
    created = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    history = list(previous.manifest.get("versions", [])) if previous else []
    previous_version = previous.manifest.get("version") if previous else None
    version = next_version(crawl_date, history)
    tables = build_tables(rows)
    configs = []
    for spec in SPECS:
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
    changes = cards.diff_lectures(
        previous.hashes if previous else {},
        {r["lecture_id"]: r["content_sha256"] for r in rows},
        previous_version,
    )
    repo_id = str(provenance.get("repo_id") or (name if "/" in name else f"<namespace>/{name}"))
    pretty_name = str(provenance.get("pretty_name") or _pretty_name(name, tables["events"].to_pylist()))
    context = cards.card_context(
        name=name,
        repo_id=repo_id,
        pretty_name=pretty_name,
        version=version,
        created=created,
        provenance=provenance,
        configs=configs,
        tables=tables,
        changes=changes,
    )
    text = cards.render_card(
        template=template,
        data=cards.card_data(pretty_name=" ".join(pretty_name.split()), configs=configs),
        context=context,
        previous_card=previous.card if previous else None,
    )
    (build / CARD).write_text(text, encoding="utf-8")
    row_counts = {c.spec.name: c.num_rows for c in configs}
    files = {path: _file_entry(build / path) for path in [CARD, *(p for c in configs for p in c.paths)]}
    manifest = {
        "format": MANIFEST_FORMAT,
        "name": name,
        "version": version,
        "previous_version": previous_version,
        "versions": [*history, version],
        "created": schema.format_timestamp(created),
        "row_counts": row_counts,
        "configs": {c.spec.name: {"rows": c.num_rows, "files": list(c.paths)} for c in configs},
        "changes": {"added": changes.added, "changed": changes.changed, "removed": changes.removed},
        "provenance": cards.json_safe(provenance),
        "files": files,
    }
    (build / MANIFEST).write_text(
        json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    _fsync_tree(build)
    return _Built(version, previous_version, row_counts, files, changes)


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


def verify_release(root: Path, expected_rows: Mapping[str, int]) -> list[LintProblem]:
    """Check a release directory; raise :class:`ReleaseError` on any failure, return lint warnings."""
    manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    verify_files(root, manifest)
    for spec in SPECS:
        table = read_shards(root, spec, manifest["configs"][spec.name]["files"])
        if table.num_rows != expected_rows[spec.name]:
            raise ReleaseError(f"{spec.name}: {table.num_rows} rows read, {expected_rows[spec.name]} written")
        if spec is LECTURES:
            ids = table.column(LECTURES.key).to_pylist()
            if ids != sorted(ids):
                raise ReleaseError("lectures are not sorted by lecture_id")
    _check_load_dataset(root, expected_rows)
    problems = lint_card((root / CARD).read_text(encoding="utf-8"), root)
    bad = errors(problems)
    if bad:
        raise ReleaseError("the dataset card fails lint:\n" + "\n".join(f"  - {p}" for p in bad))
    return [p for p in problems if p not in bad]


def _check_load_dataset(root: Path, expected_rows: Mapping[str, int]) -> None:
    import datasets

    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        with tempfile.TemporaryDirectory(prefix="eventcrawl-check-") as cache:
            for spec in SPECS:
                config = None if spec.name == DEFAULT_CONFIG else spec.name
                loaded = datasets.load_dataset(str(root), config, split="train", cache_dir=cache)
                if loaded.features != spec.features():
                    raise ReleaseError(f"{spec.name}: load_dataset gives features {loaded.features}")
                if loaded.num_rows != expected_rows[spec.name]:
                    raise ReleaseError(f"{spec.name}: load_dataset gives {loaded.num_rows} rows")
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
