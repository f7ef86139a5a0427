"""What changed between two releases, one row per lecture, written as ``changes/<version>.parquet``.

A row says ``added``, ``changed``, ``withdrawn`` (the lecture left the site; the release keeps it with
``withdrawn = true``) or ``removed`` (the lecture is no longer in the dataset at all, e.g. taken out on
request), which fields differ, and the lecture's new row (null for ``removed``). Deleting every listed
lecture id from a copy of the previous release and appending the non-null rows gives the new release.

``fetched_at`` is refreshed by every crawl; a lecture whose only difference is its ``fetched_at`` (or the
scores in its ``anthology_match``) is not listed, so a copy kept up to date this way keeps the
``fetched_at`` (and ``anthology_match``) of the release that last listed it.

Every row also names its ``release`` (the version whose file holds it), so that the files of all releases
read as one table: the card's ``changes`` config. A file written before that column existed gets it when
the next release carries the file (:func:`carry_change_file`): every file of a release has the same
columns, which ``datasets`` needs to read them as one config.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from crawler.publish.diff import ChangeKind, DiffSummary, ReleaseDiff, diff_releases
from crawler.publish.parquet import release_unused_memory, write_row_groups
from crawler.schema import Lecture
from crawler.schema import arrow as schema_arrow

CHANGES_DIR = "changes"
Change = Literal["added", "changed", "withdrawn", "removed"]
CHANGE_KINDS: tuple[Change, ...] = ("added", "changed", "withdrawn", "removed")
# The change files' word for each kind of the diff: a lecture back on the site is a changed row (its
# ``withdrawn`` field among the changed ones).
FILE_KIND: dict[ChangeKind, Change] = {
    "added": "added",
    "changed": "changed",
    "withdrawn": "withdrawn",
    "re-added": "changed",
    "removed": "removed",
}


# One row of a change file (the columns of :func:`row_schema`), its ``lecture`` the new record (None when
# the lecture was removed).
ChangeRow = dict[str, Any]


RELEASE_COLUMN = "release"
# The change files' config in the card: every release's file.
CONFIG = "changes"
PATTERN = f"{CHANGES_DIR}/*.parquet"


def changes_path(version: str) -> str:
    return f"{CHANGES_DIR}/{version}.parquet"


def version_of(path: str) -> str:
    """The release a change file belongs to (the inverse of :func:`changes_path`)."""
    return PurePosixPath(path).stem


def arrow_schema() -> pa.Schema:
    """A change file's columns: a row's columns (:func:`row_schema`) and the ``release`` holding it."""
    rows = row_schema()
    return rows.append(pa.field(RELEASE_COLUMN, pa.string(), nullable=False)).with_metadata(rows.metadata)


def row_schema() -> pa.Schema:
    """The columns of one change row, before the file gives it its release."""
    lecture = schema_arrow.arrow_schema()
    return pa.schema(
        [
            pa.field("lecture_id", pa.string(), nullable=False),
            pa.field("event_id", pa.string(), nullable=False),
            pa.field("change", pa.string(), nullable=False),
            pa.field("changed_fields", pa.list_(pa.string()), nullable=False),
            pa.field("lecture", pa.struct(list(lecture)), nullable=True),
        ],
        metadata={"description": "eventcrawl changes of one release against the previous one"},
    )


def change_rows(diff: ReleaseDiff) -> list[ChangeRow]:
    """The change file's rows: one per lecture of the diff, in lecture id order."""
    return [
        {
            "lecture_id": c.lecture_id,
            "event_id": c.event_id,
            "change": FILE_KIND[c.kind],
            "changed_fields": list(c.fields),
            "lecture": c.after,
        }
        for c in diff.changes
    ]


def file_counts(diff: DiffSummary) -> dict[Change, int]:
    """How many rows of each kind the change file of a diff with these counts holds."""
    found: dict[Change, int] = dict.fromkeys(CHANGE_KINDS, 0)
    for kind, count in diff.counts.items():
        found[FILE_KIND[kind]] += count
    return found


def compute_changes(previous: Iterable[Lecture], current: Iterable[Lecture]) -> list[ChangeRow]:
    """The change rows turning ``previous`` into ``current`` (see :func:`diff_releases`)."""
    return change_rows(diff_releases(previous, current))


def changes_table(rows: Sequence[ChangeRow]) -> pa.Table:
    """Change rows as a table of :func:`row_schema` (no ``release`` yet: see :func:`with_release`)."""
    declared = row_schema()
    plain = [{**r, "lecture": None if r["lecture"] is None else r["lecture"].values()} for r in rows]
    return pa.Table.from_pylist(plain, schema=declared)


def with_release(table: pa.Table, release: str) -> pa.Table:
    """Change rows (of :func:`row_schema`, or a change file's own columns) as a change file of
    ``release`` holds them."""
    rows = table.select(row_schema().names)
    column = pa.array([release] * rows.num_rows, pa.string())
    return rows.append_column(RELEASE_COLUMN, column).cast(arrow_schema())


def write_change_file(target: Path, tables: Iterable[pa.Table]) -> None:
    """Write tables of the change files' columns to ``target``, a row group at a time, each table
    dropped before the next is read. Every change file is written so: the same rows give the same
    bytes."""
    target.parent.mkdir(parents=True, exist_ok=True)
    options: dict[str, Any] = {"compression": "zstd", "write_statistics": True, "store_schema": True}
    with pq.ParquetWriter(target, arrow_schema(), **options) as writer:
        for table in tables:
            write_row_groups(writer, table)
            release_unused_memory()


def write_changes(rows: Sequence[ChangeRow], path: Path) -> None:
    """Write change rows deterministically (same rows, same bytes), as the file of the release its name
    says."""
    write_change_file(path, [with_release(changes_table(rows), version_of(path.name))])


def earlier_form(found: pa.DataType | pa.Schema, current: pa.DataType | pa.Schema) -> bool:
    """Whether ``found`` is ``current`` as an earlier schema wrote it: the same columns (and struct
    members) in the same order, some of them not yet there, each there of the same type."""
    if isinstance(found, pa.Schema | pa.StructType):
        if not isinstance(current, type(found)):
            return False
        members = {f.name: f.type for f in current}
        order = [f.name for f in current]
        names = [f.name for f in found]
        if any(n not in members for n in names) or names != sorted(names, key=order.index):
            return False
        return all(earlier_form(f.type, members[f.name]) for f in found)
    if isinstance(found, pa.ListType) and isinstance(current, pa.ListType):
        return earlier_form(found.value_type, current.value_type)
    return bool(found.equals(current))


def current_form(table: pa.Table, release: str) -> pa.Table:
    """Change rows written under an earlier schema (a column, a lecture field or the ``release`` not yet
    there) in the change files' columns: what was not there is null (an empty list)."""
    rows = [{**row, RELEASE_COLUMN: release} for row in table.to_pylist()]
    for row in rows:
        if row.get("lecture") is not None:
            row["lecture"] = Lecture.from_json(row["lecture"]).values()
    return pa.Table.from_pylist(rows, schema=arrow_schema())


def carry_change_file(source: Path, target: Path) -> None:
    """Copy an earlier release's change file; one written under an earlier schema (before the ``release``
    column, or before a lecture field) is rewritten in the current one (read and written a row group at a
    time: a first release's file holds every lecture's whole row)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    reader = pq.ParquetFile(source)
    if reader.schema_arrow.remove_metadata().equals(arrow_schema().remove_metadata()):
        shutil.copyfile(source, target)
        return
    release = version_of(target.name)
    groups = range(reader.num_row_groups)
    write_change_file(target, (current_form(reader.read_row_group(group), release) for group in groups))


class ChangeFileSchemaError(ValueError):
    """A change file whose columns are not the change files' columns."""


def check_change_file(path: Path, *, rows: bool = True, earlier: bool = True) -> None:
    """Raise unless ``path`` is a change file: :class:`ChangeFileSchemaError` when its schema differs,
    ``OSError`` or pyarrow's ``ArrowException`` when it does not read back. With ``rows``, every row is
    read back, a row group at a time (a first release's change file holds every lecture's whole row).
    With ``earlier``, a file an earlier schema wrote (before the ``release`` column, or before a lecture
    field) is a change file too."""
    reader = pq.ParquetFile(path)
    found = reader.schema_arrow.remove_metadata()
    current = arrow_schema().remove_metadata()
    if not (found.equals(current) or (earlier and earlier_form(found, current))):
        raise ChangeFileSchemaError(f"{path.name}: schema differs from the change files' schema")
    for group in range(reader.num_row_groups if rows else 0):
        reader.read_row_group(group)
        release_unused_memory()


def read_changes(path: Path) -> list[ChangeRow]:
    """A change file's rows (one an earlier schema wrote reads the same way: what it lacks is empty)."""
    rows = []
    columns = [name for name in row_schema().names if name in pq.read_schema(path).names]
    for row in pq.read_table(path, columns=columns).to_pylist():
        lecture = row["lecture"]
        rows.append(
            {
                "lecture_id": str(row["lecture_id"]),
                "event_id": str(row["event_id"]),
                "change": row["change"],
                "changed_fields": list(row["changed_fields"]),
                "lecture": None if lecture is None else Lecture.from_json(lecture),
            }
        )
    return rows


def counts(rows: Iterable[ChangeRow]) -> dict[Change, int]:
    found: dict[Change, int] = dict.fromkeys(CHANGE_KINDS, 0)
    for row in rows:
        found[row["change"]] += 1
    return found


def scrub_changes(
    rows: Sequence[ChangeRow],
    *,
    removed: frozenset[str],
    redact: Callable[[list[Lecture]], list[Lecture]],
) -> list[ChangeRow] | None:
    """An earlier release's change rows with removed lectures dropped and ``redact`` applied to every
    lecture it carries; None when nothing had to change (the file stays as it is)."""
    kept = [dict(r) for r in rows if r["lecture_id"] not in removed]
    lectures = [r["lecture"] for r in kept if r["lecture"] is not None]
    redacted = redact(list(lectures))
    if len(kept) == len(rows) and redacted == lectures:
        return None
    it = iter(redacted)
    for r in kept:
        if r["lecture"] is not None:
            r["lecture"] = next(it)
    return kept
