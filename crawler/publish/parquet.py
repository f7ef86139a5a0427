"""Writing and reading a config's Parquet shards.

The bytes depend only on the rows and the pyarrow version: no timestamps, no pandas metadata, rows in
key order, fixed row groups and shard sizes. Re-publishing the same records gives identical files.

A row group holds at most :data:`ROW_GROUP_ROWS` rows and about :data:`ROW_GROUP_TARGET_BYTES` of Arrow
data (:func:`row_group_slices`), so that no row group's uncompressed size passes
:data:`MAX_ROW_GROUP_BYTES`: the Hub's dataset viewer refuses to read larger ones.

The ``lectures`` table is written one folder per event (``data/lectures/event-<id>/train-*.parquet``):
the ``lectures`` config globs every folder, each event's config lists its own folder's files, and no row
is written twice.
"""

from __future__ import annotations

import inspect
import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from crawler.publish.tables import TableSpec

ROW_GROUP_ROWS = 10_000
# The largest uncompressed row group a release may hold (Parquet's ``total_byte_size``): the Hub's viewer
# reads a row group at a time and gives up on the largest ones.
MAX_ROW_GROUP_BYTES = 100_000_000
# What the writer aims at, measured in Arrow's memory: half the bound leaves room for Parquet's
# uncompressed encoding of the same values (length prefixes, definition levels).
ROW_GROUP_TARGET_BYTES = MAX_ROW_GROUP_BYTES // 2
SHARD_ROWS = 100_000
SPLIT = "train"


@dataclass(frozen=True)
class Shard:
    path: str  # relative to the release root, POSIX separators
    num_rows: int


# Tables written in one folder per event; their config's pattern reaches one level down.
PARTITIONED = frozenset({"lectures"})
# The folder of a partitioned table with no rows at all, so that its config still loads.
EMPTY_PARTITION = "no-event"


def release_unused_memory() -> None:
    """Hand back to the system what Arrow's memory pool holds free. pyarrow's default pool (mimalloc)
    keeps freed pages for reuse; a publish that reads and writes one event after another would keep
    the largest allocation of every step, and its peak would grow with the number of events."""
    pa.default_memory_pool().release_unused()


def config_dir(spec: TableSpec, partition: str | None = None) -> str:
    return f"data/{spec.name}" if partition is None else f"data/{spec.name}/{partition}"


def data_files_pattern(spec: TableSpec) -> str:
    if spec.name in PARTITIONED:
        return f"{config_dir(spec)}/*/{SPLIT}-*.parquet"
    return f"{config_dir(spec)}/{SPLIT}-*.parquet"


def file_schema(spec: TableSpec) -> pa.Schema:
    """The declared schema plus the ``huggingface`` metadata datasets reads its features from."""
    declared = spec.arrow_schema()
    features = spec.features()
    hf = json.dumps({"info": {"features": features.to_dict()}}, sort_keys=True)
    return declared.with_metadata({**(declared.metadata or {}), b"huggingface": hf.encode()})


@cache
def _writer_parameters() -> frozenset[str]:
    return frozenset(inspect.signature(pq.ParquetWriter.__init__).parameters)


def supports_content_defined_chunking() -> bool:
    return "use_content_defined_chunking" in _writer_parameters()


# The keyword arguments of ``pq.ParquetWriter`` a file is written with.
WriterOptions = dict[str, Any]


def writer_options(spec: TableSpec, num_rows: int) -> WriterOptions:
    options: WriterOptions = {
        "compression": "zstd",
        "write_statistics": True,
        "write_page_index": True,
        "store_schema": True,
        "sorting_columns": [pq.SortingColumn(spec.column_names.index(spec.key))],
    }
    parameters = _writer_parameters()
    # Content-defined pages keep unchanged rows in identical pages from one release to the next,
    # so the Hub's chunk-level deduplication uploads little more than what changed.
    if "use_content_defined_chunking" in parameters:
        options["use_content_defined_chunking"] = True
    if "bloom_filter_options" in parameters and num_rows:
        options["bloom_filter_options"] = {spec.key: {"ndv": num_rows, "fpp": 0.01}}
    return options


def row_group_slices(
    table: pa.Table, *, max_rows: int = ROW_GROUP_ROWS, max_bytes: int = ROW_GROUP_TARGET_BYTES
) -> list[tuple[int, int]]:
    """Where ``table``'s row groups start and how many rows each holds: at most ``max_rows``, and no
    more than ``max_bytes`` of Arrow data unless one row alone is larger. The rows per group come from the
    table's mean row size; a group of larger rows than the mean is halved until it fits."""
    if max_rows < 1 or max_bytes < 1:
        raise ValueError("max_rows and max_bytes must be positive")
    total = table.num_rows
    if not total:
        return []
    mean = max(1, table.nbytes // total)
    rows = max(1, min(max_rows, max_bytes // mean))
    out = []
    start = 0
    while start < total:
        length = min(rows, total - start)
        while length > 1 and table.slice(start, length).nbytes > max_bytes:
            length //= 2
        out.append((start, length))
        start += length
    return out


def write_row_groups(
    writer: pq.ParquetWriter,
    table: pa.Table,
    *,
    max_rows: int = ROW_GROUP_ROWS,
    max_bytes: int = ROW_GROUP_TARGET_BYTES,
) -> None:
    """Write ``table`` as row groups bounded by :func:`row_group_slices` (none when it has no rows:
    datasets cannot read a row group of zero rows)."""
    for start, length in row_group_slices(table, max_rows=max_rows, max_bytes=max_bytes):
        writer.write_table(table.slice(start, length), row_group_size=length)


def oversized_row_groups(path: Path, max_bytes: int = MAX_ROW_GROUP_BYTES) -> list[tuple[int, int]]:
    """The row groups of a Parquet file whose uncompressed size passes ``max_bytes``: (index, size)."""
    metadata = pq.read_metadata(path)
    sizes = (metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    return [(index, size) for index, size in enumerate(sizes) if size > max_bytes]


def write_shards(
    table: pa.Table,
    root: Path,
    spec: TableSpec,
    *,
    shard_rows: int = SHARD_ROWS,
    row_group_rows: int = ROW_GROUP_ROWS,
    partition: str | None = None,
) -> list[Shard]:
    """Write ``table`` (already in key order) as ``data/<config>[/<partition>]/train-0000i-of-0000n.parquet``.

    An empty table still gets one (empty) shard so that the config loads.
    """
    if shard_rows < 1 or row_group_rows < 1:
        raise ValueError("shard_rows and row_group_rows must be positive")
    target = root / config_dir(spec, partition)
    target.mkdir(parents=True, exist_ok=True)
    schema = file_schema(spec)
    table = table.cast(schema)
    count = max(1, math.ceil(table.num_rows / shard_rows))
    shards = []
    for index in range(count):
        part = table.slice(index * shard_rows, shard_rows)
        name = f"{SPLIT}-{index:05d}-of-{count:05d}.parquet"
        with pq.ParquetWriter(target / name, schema, **writer_options(spec, part.num_rows)) as writer:
            write_row_groups(writer, part, max_rows=row_group_rows)
        shards.append(Shard(f"{config_dir(spec, partition)}/{name}", part.num_rows))
    return shards


def read_shards(root: Path, spec: TableSpec, paths: list[str]) -> pa.Table:
    """Read the shards back, refusing any whose schema differs from the declared one."""
    declared = spec.arrow_schema()
    tables = []
    for path in paths:
        found = pq.read_schema(root / path)
        if not found.remove_metadata().equals(declared.remove_metadata()):
            raise ValueError(f"{path}: schema differs from the declared {spec.name} schema:\n{found}")
        tables.append(pq.read_table(root / path, schema=declared))
    return pa.concat_tables(tables) if tables else declared.empty_table()
