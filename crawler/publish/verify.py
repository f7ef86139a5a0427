"""Checking a built release before it is swapped in: every file against the manifest (size and sha256),
the Parquet files read back with their declared schemas and row counts, each config through a
``datasets`` round trip, the change files and the Anthology links, and the card through lint.
:class:`~crawler.publish.manifest.ReleaseError` names the first failure."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from crawler.anthology.links import link_rows, read_links_csv
from crawler.publish import changes as change_files
from crawler.publish.card_metadata import changes_info
from crawler.publish.events import LINK_COLUMNS, linked_lectures
from crawler.publish.lint import LintProblem, card_yaml_read_in_c, errors, lint_card
from crawler.publish.manifest import CARD, MANIFEST, ReleaseError, file_entry
from crawler.publish.parquet import (
    MAX_ROW_GROUP_BYTES,
    oversized_row_groups,
    read_shards,
    release_unused_memory,
)
from crawler.publish.slides import SlidesTable
from crawler.publish.tables import (
    DEFAULT_CONFIG,
    LECTURES,
    SLIDES,
    SPECS,
    SPECS_BY_NAME,
    TRANSCRIPTS,
    TableSpec,
)
from crawler.publish.transcripts import TranscriptsTable

# The tables written beside the lectures from files each lecture names: a config each, not an event's.
FILE_TABLES: dict[str, TableSpec] = {TRANSCRIPTS.name: TRANSCRIPTS, SLIDES.name: SLIDES}


def verify_files(root: Path, manifest: Mapping[str, Any]) -> None:
    """Raise :class:`ReleaseError` unless every file of the manifest is there with its size and sha256."""
    for path, entry in manifest["files"].items():
        if not (root / path).is_file():
            raise ReleaseError(f"{path}: listed in {MANIFEST} but missing")
        if file_entry(root / path) != entry:
            raise ReleaseError(f"{path}: size or sha256 differs from {MANIFEST}")


def verify_release(
    root: Path,
    expected_rows: Mapping[str, int],
    *,
    carried: Iterable[str] = (),
    max_row_group_bytes: int = MAX_ROW_GROUP_BYTES,
) -> list[LintProblem]:
    """Check a release directory; raise :class:`ReleaseError` on any failure, return lint warnings.

    Every file's size and sha256 is checked against the manifest. A file written by this release is read
    back whole and its config goes through a ``datasets.load_dataset`` round trip; the ``carried`` files
    (lecture files linked from the previous release, which checked them, and equal to them byte for byte)
    have their schema, row count, ids and order checked from two columns, so that a night which changed
    one event costs about that event's reading. The ``lectures`` config's files are checked to be exactly
    its events' files, and ``datasets`` must resolve the config to them with the declared features. No
    Parquet file of the release may hold a row group whose uncompressed size passes
    ``max_row_group_bytes`` (the Hub's viewer would not open it). The ``transcripts`` files (when the
    release has any) have the declared schema, one event each, rows in ``transcript_order``, and load."""
    carried = frozenset(carried)
    manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    verify_files(root, manifest)
    _check_row_groups(root, manifest, max_row_group_bytes)
    _check_tables(root, manifest, expected_rows)
    lecture_files = _check_lecture_files(root, manifest, expected_rows[LECTURES.name])
    rewritten = _check_event_configs(root, manifest, carried)
    if (
        sorted(f for c in rewritten.values() for f in c) != sorted(lecture_files)
        and expected_rows[LECTURES.name]
    ):
        raise ReleaseError("the event configs' files are not exactly the lectures config's files")
    _check_change_files(root, manifest)
    _check_links(root, manifest)
    loaded = {
        name: config["rows"]
        for name, config in manifest["configs"].items()
        if (rewritten.get(name) is not None and not set(config["files"]) <= carried)
        or (name in SPECS_BY_NAME and name != DEFAULT_CONFIG)
        or name in FILE_TABLES
    }
    if not expected_rows[LECTURES.name]:
        loaded[DEFAULT_CONFIG] = 0
    with _datasets_reading() as cache:
        changes = manifest.get("change_files", [])
        if changes_info(root, changes) is not None:
            _check_resolves(root, change_files.CONFIG, changes, cache)
        if expected_rows[LECTURES.name]:
            _check_resolves(root, DEFAULT_CONFIG, lecture_files, cache)
        _check_load_dataset(root, loaded, cache)
    problems = lint_card((root / CARD).read_text(encoding="utf-8"), root)
    bad = errors(problems)
    if bad:
        raise ReleaseError("the dataset card fails lint:\n" + "\n".join(f"  - {p}" for p in bad))
    return [p for p in problems if p not in bad]


def _check_row_groups(root: Path, manifest: Mapping[str, Any], max_bytes: int) -> None:
    """Every Parquet file of the release keeps its row groups within ``max_bytes`` uncompressed (read
    from the files' footers alone)."""
    for path in sorted(p for p in manifest["files"] if p.endswith(".parquet")):
        for index, size in oversized_row_groups(root / path, max_bytes):
            raise ReleaseError(
                f"{path}: row group {index} holds {size} bytes uncompressed, more than {max_bytes}"
            )


def _check_tables(root: Path, manifest: Mapping[str, Any], expected_rows: Mapping[str, int]) -> None:
    """Every summary table reads back whole with its declared schema and row count; the ``transcripts``
    and ``slides`` files (:meth:`crawler.publish.file_tables.FileTable.check_files`) from a few columns."""
    for spec in (s for s in SPECS if s.name in manifest["configs"] and s is not LECTURES):
        table = read_shards(root, spec, manifest["configs"][spec.name]["files"])
        if table.num_rows != expected_rows[spec.name]:
            raise ReleaseError(f"{spec.name}: {table.num_rows} rows read, {expected_rows[spec.name]} written")
    for file_table in (TranscriptsTable(), SlidesTable()):
        name = file_table.spec.name
        config = manifest["configs"].get(name)
        if config is not None or expected_rows.get(name):
            try:
                file_table.check_files(root, (config or {}).get("files", []), expected_rows.get(name, 0))
            except ValueError as exc:
                raise ReleaseError(f"{name}: {exc}") from None


def _check_lecture_files(root: Path, manifest: Mapping[str, Any], expected: int) -> list[str]:
    """The ``lectures`` files have the declared schema and the rows written, counted from their metadata."""
    lecture_files = list(manifest["configs"][LECTURES.name]["files"])
    declared, found = LECTURES.arrow_schema().remove_metadata(), 0
    for path in lecture_files:
        if not pq.read_schema(root / path).remove_metadata().equals(declared):
            raise ReleaseError(f"{path}: schema differs from the declared {LECTURES.name} schema")
        found += pq.read_metadata(root / path).num_rows
    if found != expected:
        raise ReleaseError(f"{LECTURES.name}: {found} rows read, {expected} written")
    return lecture_files


def _check_event_configs(
    root: Path, manifest: Mapping[str, Any], carried: frozenset[str]
) -> dict[str, list[str]]:
    """Each event's config holds exactly its event's rows in lecture-id order: files written now read
    whole, carried ones from two columns. Returns every event config's files, by config."""
    out: dict[str, list[str]] = {}
    for config_name, config in manifest["configs"].items():
        if config_name in SPECS_BY_NAME or config_name in FILE_TABLES:
            continue
        out[config_name] = list(config["files"])
        if set(config["files"]) <= carried:
            table = pa.concat_tables(
                pq.read_table(root / path, columns=["event_id", LECTURES.key]) for path in config["files"]
            )
        else:
            table = read_shards(root, LECTURES, config["files"])
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
        release_unused_memory()
    return out


def _check_change_files(root: Path, manifest: Mapping[str, Any]) -> None:
    """This release's change file reads back whole; the earlier ones (sha256 checked already) by schema."""
    history = list(manifest.get("change_files", []))
    for index, path in enumerate(history):
        try:
            change_files.check_change_file(root / path, rows=index == len(history) - 1, earlier=False)
        except change_files.ChangeFileSchemaError:
            raise ReleaseError(f"{path}: schema differs from the change files' schema") from None


def _check_resolves(root: Path, config: str, files: Sequence[str], cache: str) -> None:
    """``datasets`` reads ``config`` (the lectures' or the changes') from exactly ``files``, with their
    declared features (the files themselves are checked one at a time)."""
    import datasets

    if config == DEFAULT_CONFIG:
        schema, what = LECTURES.arrow_schema(), "lecture file(s)"
    else:
        schema, what = change_files.arrow_schema(), "change file(s)"

    try:
        builder = datasets.load_dataset_builder(
            str(root), None if config == DEFAULT_CONFIG else config, cache_dir=cache
        )
    except ValueError as exc:  # no such config in the card
        raise ReleaseError(f"{config}: {exc}") from None
    data_files = builder.config.data_files or {}
    found = sorted(Path(str(f)).resolve() for split in data_files.values() for f in split)
    if found != sorted((root / f).resolve() for f in files):
        raise ReleaseError(f"{config}: datasets resolves {len(found)} of the {len(files)} {what}")
    if builder.info.features != datasets.Features.from_arrow_schema(schema):
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
    # Read five columns of one file at a time (the schemas were checked before), linked rows only.
    expected = link_rows(
        row
        for path in manifest["configs"][LECTURES.name]["files"]
        for row in linked_lectures(pq.read_table(root / path, columns=list(LINK_COLUMNS)))
    )
    if found != expected or entry["rows"] != len(expected):
        raise ReleaseError(
            f"{entry['path']}: {len(found)} rows do not match the {len(expected)} linked lectures"
        )


@contextlib.contextmanager
def _datasets_reading() -> Iterator[str]:
    """A block in which ``datasets`` reads the release, in a cache directory of its own (yielded) that is
    removed after, without progress bars, reading the card's YAML in C.

    ``datasets`` reads the card's metadata (every config's files and features) again for each config
    resolved or loaded: with a config per event, the configs times the card's size. Within this block the
    dataset module it makes of the same arguments is made once, and each use gets a copy of its builder
    arguments (a load takes them out)."""
    import datasets
    import datasets.load

    make = datasets.load.dataset_module_factory
    made: dict[str, Any] = {}

    def made_once(*args: Any, **kwargs: Any) -> Any:
        key = repr((args, sorted(kwargs.items())))
        if key not in made:
            made[key] = make(*args, **kwargs)
        return dataclasses.replace(made[key], builder_kwargs=copy.deepcopy(made[key].builder_kwargs))

    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    datasets.load.dataset_module_factory = made_once
    try:
        with tempfile.TemporaryDirectory(prefix="eventcrawl-check-") as cache, card_yaml_read_in_c():
            yield cache
    finally:
        datasets.load.dataset_module_factory = make
        if bars:
            datasets.enable_progress_bars()


def _check_load_dataset(root: Path, expected_rows: Mapping[str, int], cache: str) -> None:
    """Every config (tables and events) loads with its declared features and row count."""
    import datasets

    for name, rows in expected_rows.items():
        spec = {**SPECS_BY_NAME, **FILE_TABLES}.get(name, LECTURES)
        config = None if name == DEFAULT_CONFIG else name
        loaded = datasets.load_dataset(str(root), config, split="train", cache_dir=cache)
        if loaded.features != spec.features():
            raise ReleaseError(f"{name}: load_dataset gives features {loaded.features}")
        if loaded.num_rows != rows:
            raise ReleaseError(f"{name}: load_dataset gives {loaded.num_rows} rows")
        del loaded
