"""The index of what was published, kept in the state directory across crawls.

``<state>/published-index.json`` maps each lecture id to its content hash, when it was first and last
published, its near-duplicate cluster and, for an id merged into another record, that record's id.
A later crawl reads it to recognise lectures it already published (unchanged, changed, new, gone)
and to keep the same record when a talk turns up under two ids again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from crawler.schema import lecture_order
from crawler.state.fsutil import DamagedFile, write_json_atomic

INDEX_NAME = "published-index.json"
INDEX_VERSION = 1


@dataclass
class IndexEntry:
    content_sha256: str | None
    first_seen: str
    last_seen: str
    cluster: str | None = None
    merged_into: str | None = None  # set for an id published as an alternate of another record


@dataclass
class PublishedIndex:
    entries: dict[str, IndexEntry] = field(default_factory=dict)
    updated_at: str | None = None

    def __contains__(self, lecture_id: object) -> bool:
        return lecture_id in self.entries

    def record_ids(self) -> set[str]:
        """Ids published as records of their own (not merged into another)."""
        return {i for i, e in self.entries.items() if e.merged_into is None}

    def to_json(self) -> dict[str, Any]:
        """``published-index.json`` as written: each entry's fields in their order here."""
        return {
            "version": INDEX_VERSION,
            "updated_at": self.updated_at,
            "lectures": {
                i: asdict(e) for i, e in sorted(self.entries.items(), key=lambda kv: lecture_order(kv[0]))
            },
        }


@dataclass
class IndexDelta:
    """What an update found, against the index as it was."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # indexed records absent from this publish


# The index only remembers first-seen dates and merges: a new one is rebuilt from the next publish.
_REBUILD = (
    "move it aside and publish again: the next publish starts a new index from the records it publishes "
    "(first-seen dates start again)"
)


def index_path(state_dir: Path) -> Path:
    return Path(state_dir) / INDEX_NAME


def load_index(state_dir: Path) -> PublishedIndex:
    """The index in ``state_dir``; an empty one when there is none. Raises ValueError when the file
    is not an index (it is never overwritten silently)."""
    path = index_path(state_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return PublishedIndex()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DamagedFile(path, f"not JSON: {exc}", _REBUILD) from None
    if not isinstance(data, Mapping) or data.get("version") != INDEX_VERSION:
        raise DamagedFile(path, f"not a published index of version {INDEX_VERSION}", _REBUILD)
    entries: dict[str, IndexEntry] = {}
    try:
        for lecture_id, raw in (data.get("lectures") or {}).items():
            entries[str(lecture_id)] = IndexEntry(
                content_sha256=raw.get("content_sha256"),
                first_seen=str(raw["first_seen"]),
                last_seen=str(raw["last_seen"]),
                cluster=raw.get("cluster"),
                merged_into=raw.get("merged_into"),
            )
    except (KeyError, TypeError, AttributeError) as exc:
        raise DamagedFile(path, f"a malformed entry: {exc}", _REBUILD) from None
    return PublishedIndex(entries, data.get("updated_at"))


def save_index(state_dir: Path, index: PublishedIndex) -> Path:
    """Write the index atomically (a temporary file beside it, fsync, rename)."""
    return write_json_atomic(index_path(state_dir), index.to_json(), indent=1)


def apply_records(
    index: PublishedIndex, records: Iterable[Mapping[str, Any]], *, now: datetime | None = None
) -> IndexDelta:
    """Update ``index`` in memory with the records of one publish; what changed against it."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).isoformat().replace("+00:00", "Z")
    delta = IndexDelta()
    seen: set[str] = set()
    for record in records:
        lecture_id = str(record["lecture_id"])
        seen.add(lecture_id)
        digest = record.get("content_sha256")
        entry = index.entries.get(lecture_id)
        if entry is None or entry.merged_into is not None:
            delta.added.append(lecture_id)
            first = entry.first_seen if entry is not None else stamp
            entry = index.entries[lecture_id] = IndexEntry(digest, first, stamp)
        elif entry.content_sha256 != digest:
            delta.changed.append(lecture_id)
        else:
            delta.unchanged.append(lecture_id)
        entry.content_sha256 = digest
        entry.last_seen = stamp
        entry.cluster = record.get("near_duplicate_cluster")
        entry.merged_into = None
        for alternate in record.get("alternate_ids") or []:
            alternate = str(alternate)
            seen.add(alternate)
            previous = index.entries.get(alternate)
            first = previous.first_seen if previous is not None else stamp
            index.entries[alternate] = IndexEntry(None, first, stamp, merged_into=lecture_id)
    delta.missing = sorted((i for i in index.record_ids() if i not in seen), key=lecture_order)
    for name in ("added", "changed", "unchanged"):
        getattr(delta, name).sort(key=lecture_order)
    index.updated_at = stamp
    return delta


def update_index(
    records: Iterable[Mapping[str, Any]], state_dir: Path, *, now: datetime | None = None
) -> IndexDelta:
    """Record one publish's records in ``<state>/published-index.json`` (load, update, save atomically).

    A lecture id keeps its ``first_seen``; ``last_seen`` becomes ``now``. Indexed ids absent from
    ``records`` stay in the index (a lecture can come back) and are listed in ``missing``.
    """
    index = load_index(state_dir)
    delta = apply_records(index, records, now=now)
    save_index(state_dir, index)
    return delta
