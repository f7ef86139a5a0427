"""One event's ``lectures`` files in a release: written from its rows, or carried byte for byte (hard-linked)
from the previous release when the event's rows, the file schema and the writer are what made those files
(:func:`rows_fingerprint`, kept in the manifest's ``event_shards``)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from crawler.privacy.email_like import EMAIL_LIKE_RULE, email_like_values
from crawler.publish.manifest import EventShardEntry, file_entry
from crawler.publish.parquet import (
    ROW_GROUP_ROWS,
    ROW_GROUP_TARGET_BYTES,
    SHARD_ROWS,
    Shard,
    file_schema,
    write_shards,
)
from crawler.publish.previous import PreviousRelease
from crawler.publish.tables import LECTURES, TableSpec, event_directory, lecture_table
from crawler.schema import Lecture


@dataclass(frozen=True)
class EventShards:
    """One event's files of a table in the build (its ``lectures`` files, its ``transcripts`` file...):
    written now, or carried byte for byte from the previous release because the event's rows are exactly
    the ones those files hold."""

    event_id: str
    shards: tuple[Shard, ...]
    num_bytes: int
    fingerprint: str
    email_like: int
    reused: bool

    @property
    def num_rows(self) -> int:
        return sum(s.num_rows for s in self.shards)

    def entry(self) -> EventShardEntry:
        return {
            "fingerprint": self.fingerprint,
            "files": [s.path for s in self.shards],
            "rows": self.num_rows,
            "num_bytes": self.num_bytes,
            "email_like": self.email_like,
            "email_like_rule": EMAIL_LIKE_RULE,
        }


def rows_digest(writer: str, spec: TableSpec) -> hashlib._Hash:
    """A digest of everything an event's files of a table are made of: the ``writer`` (its version,
    settings and bounds), the table's declared file schema, then every field of its rows, in order
    (:func:`digest_rows`). Equal digests give equal bytes."""
    digest = hashlib.sha256(f"{writer}\n".encode())
    digest.update(file_schema(spec).serialize().to_pybytes())
    return digest


def digest_rows(digest: hashlib._Hash, rows: Iterable[Any]) -> None:
    for row in rows:
        record = json.dumps(row.to_json(), sort_keys=True, ensure_ascii=False, default=str)
        digest.update(f"{record}\n".encode())


def rows_fingerprint(rows: Iterable[Lecture]) -> str:
    """The digest of an event's ``lectures`` files (:func:`rows_digest`)."""
    digest = rows_digest(
        f"pyarrow {pa.__version__} {SHARD_ROWS} {ROW_GROUP_ROWS} {ROW_GROUP_TARGET_BYTES}", LECTURES
    )
    digest_rows(digest, rows)
    return digest.hexdigest()


def event_shards(
    build: Path, event_id: str, rows: Sequence[Lecture], previous: PreviousRelease
) -> EventShards:
    """Write one event's ``lectures`` files, or link the previous release's when its rows are unchanged."""
    fingerprint = rows_fingerprint(rows)
    before = previous.event_shards().get(event_id)
    if isinstance(before, dict):
        carried = carried_event(previous, build, event_id, before, fingerprint)
        if carried is not None:
            return carried
    table = lecture_table(rows)
    shards = write_shards(table, build, LECTURES, partition=event_directory(event_id))
    found = email_like_values(table)
    return EventShards(event_id, tuple(shards), table.nbytes, fingerprint, found, reused=False)


def carried_event(
    previous: PreviousRelease, build: Path, event_id: str, before: EventShardEntry, fingerprint: str
) -> EventShards | None:
    """The previous release's files of an event (its lectures' or a table's), linked into the build when
    they were made of the rows ``fingerprint`` names (:func:`carry_files`); None otherwise."""
    if before.get("fingerprint") != fingerprint:
        return None
    carried = carry_files(previous, build, before)
    if carried is None:
        return None
    # A count made with another detector is made again, from the files carried.
    if before.get("email_like_rule") == EMAIL_LIKE_RULE:
        email_like = int(before.get("email_like", 0))
    else:
        email_like = sum(email_like_values(pq.read_table(build / s.path)) for s in carried)
    return EventShards(
        event_id, tuple(carried), int(before["num_bytes"]), fingerprint, email_like, reused=True
    )


def carry_files(previous: PreviousRelease, build: Path, entry: EventShardEntry) -> list[Shard] | None:
    """Hard-link (or copy) the previous release's files of an event (its lectures' or its transcripts')
    into the build; None when one of them is missing or not the file its manifest describes (then the
    event is written again)."""
    paths = entry.get("files")
    if not isinstance(paths, list) or not paths or previous.manifest is None:
        return None
    listed = previous.manifest["files"]
    shards = []
    for path in paths:
        if not isinstance(path, str) or path not in listed or not previous.path_of(path).is_file():
            return None
        source = previous.path_of(path)
        # Read once more: a file damaged since it was published is written again, not carried.
        if file_entry(source) != listed[path]:
            return None
        shards.append(Shard(path, pq.read_metadata(source).num_rows))
    for path in paths:
        target = build / path
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(previous.path_of(path), target)
        except OSError:
            shutil.copyfile(previous.path_of(path), target)
    return shards
