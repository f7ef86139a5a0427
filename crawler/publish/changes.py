"""What changed between two releases, one row per lecture, written as ``changes/<version>.parquet``.

A row says ``added``, ``changed``, ``withdrawn`` (the lecture left the site; the release keeps it with
``withdrawn = true``) or ``removed`` (the lecture is no longer in the dataset at all, e.g. taken out on
request), which fields differ, and the lecture's new row (null for ``removed``). Deleting every listed
lecture id from a copy of the previous release and appending the non-null rows gives the new release.

``fetched_at`` is refreshed by every crawl; a lecture whose only difference is its ``fetched_at`` (or the
scores in its ``anthology_match``) is not listed, so a copy kept up to date this way keeps the
``fetched_at`` (and ``anthology_match``) of the release that last listed it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from crawler import schema

CHANGES_DIR = "changes"
Change = Literal["added", "changed", "withdrawn", "removed"]
CHANGE_KINDS: tuple[Change, ...] = ("added", "changed", "withdrawn", "removed")
# Fields that differ in every crawl without the lecture changing, and the evidence behind an
# Anthology link, whose scores may move while the link stays (a changed link is a change).
NOT_A_CHANGE = frozenset({"fetched_at", "anthology_match"})
COMPARED = tuple(name for name in schema.FIELD_NAMES if name not in NOT_A_CHANGE)


def changes_path(version: str) -> str:
    return f"{CHANGES_DIR}/{version}.parquet"


def arrow_schema() -> pa.Schema:
    lecture = schema.arrow_schema()
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


def compute_changes(
    previous_rows: Iterable[Mapping[str, Any]], current_rows: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The change rows turning ``previous_rows`` into ``current_rows`` (lecture rows), by lecture id.

    Rows compare field by field (timestamps as instants, missing list fields as empty), ``fetched_at``
    aside; ``changed_fields`` lists the differing fields in schema order (empty for added and removed).
    """
    # The previous rows are read as they come (one file at a time); only the change rows are kept.
    current = {r["lecture_id"]: r for r in current_rows}
    seen: set[str] = set()
    out = []
    for previous_row in previous_rows:
        old = schema.to_json_record(previous_row)
        lecture_id = old["lecture_id"]
        seen.add(lecture_id)
        row = current.get(lecture_id)
        if row is None:
            out.append(_row(lecture_id, old["event_id"], "removed", [], None))
            continue
        new = schema.to_json_record(row)
        differing = [name for name in COMPARED if old[name] != new[name]]
        if not differing:
            continue
        change: Change = "withdrawn" if new["withdrawn"] and not old["withdrawn"] else "changed"
        out.append(_row(lecture_id, new["event_id"], change, differing, row))
    for lecture_id, row in current.items():
        if lecture_id not in seen:
            out.append(_row(lecture_id, row["event_id"], "added", [], row))
    out.sort(key=lambda change_row: change_row["lecture_id"])
    return out


def _row(
    lecture_id: str, event_id: str, change: Change, fields: list[str], row: Mapping[str, Any] | None
) -> dict[str, Any]:
    lecture = None if row is None else schema.from_json_record(row)
    return {
        "lecture_id": lecture_id,
        "event_id": event_id,
        "change": change,
        "changed_fields": fields,
        "lecture": lecture,
    }


def changes_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    declared = arrow_schema()
    return pa.Table.from_pylist([dict(r) for r in rows], schema=declared)


def write_changes(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Write change rows deterministically (same rows, same bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(changes_table(rows), path, compression="zstd", write_statistics=True, store_schema=True)


def read_changes(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path, schema=arrow_schema()).to_pylist()


def counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    found: dict[str, int] = dict.fromkeys(CHANGE_KINDS, 0)
    for row in rows:
        found[row["change"]] += 1
    return found


def scrub_changes(
    rows: Sequence[Mapping[str, Any]],
    *,
    removed: frozenset[str],
    redact: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
) -> list[dict[str, Any]] | None:
    """An earlier release's change rows with removed lectures dropped and ``redact`` applied to every
    lecture row it carries; None when nothing had to change (the file stays as it is)."""
    kept = [dict(r) for r in rows if r["lecture_id"] not in removed]
    lectures = [r["lecture"] for r in kept if r["lecture"] is not None]
    redacted = redact([dict(x) for x in lectures])
    if len(kept) == len(rows) and redacted == lectures:
        return None
    it = iter(redacted)
    for r in kept:
        if r["lecture"] is not None:
            r["lecture"] = schema.from_json_record(next(it))
    return kept
