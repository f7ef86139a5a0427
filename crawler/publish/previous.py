"""The previous release, and carrying it forward into the next one.

:class:`PreviousRelease` is every reader's way into the release a new one is built on: its manifest and
card at once, its lecture rows one event's files at a time, narrow columns of all of them.
:func:`carry_forward` makes the next release's rows from its rows and the staged crawl's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from crawler import schema
from crawler.publish.manifest import (
    CARD,
    MANIFEST,
    EventShardEntry,
    Manifest,
    ReleaseError,
    file_entry,
    read_manifest,
    recovery,
)
from crawler.publish.records import SessionDetail
from crawler.publish.tables import DEFAULT_CONFIG, SESSIONS, SLIDES, TRANSCRIPTS
from crawler.schema import (
    PAGE_FIELDS,
    VOLATILE_FIELDS,
    Lecture,
    content_sha256,
    is_listing_only,
    lecture_order,
    volatile_digest,
)
from crawler.state.fsutil import DamagedFile
from crawler.state.withdrawals import Withdrawals

T = TypeVar("T")


@dataclass(frozen=True)
class LectureState:
    """What tells whether a lecture changed: its content hash, whether it is withdrawn, its event, and its
    volatile values (see :func:`crawler.schema.volatile_digest`)."""

    content_sha256: str
    withdrawn: bool
    event_id: str
    volatile: str = ""


@dataclass
class PreviousRelease:
    """The release in ``root`` that the next one is built on, read when it is needed: its manifest and
    card at once, its lecture rows one event's files at a time, and narrow columns of all of them (ids,
    hashes, events, links). Every reader of the previous release goes through here. ``root`` is None
    when there is no release yet (then it holds nothing)."""

    root: Path | None = None
    manifest: Manifest | None = None
    card: str | None = None
    _states: dict[str, LectureState] | None = field(default=None, repr=False)

    @property
    def version(self) -> str | None:
        return self.manifest["version"] if self.manifest else None

    @property
    def versions(self) -> list[str]:
        return list(self.manifest.get("versions", [])) if self.manifest else []

    @property
    def lecture_files(self) -> list[str]:
        return self.files_of(DEFAULT_CONFIG)

    def files_of(self, table: str) -> list[str]:
        """The files of the config ``table`` (none when the release has no such config)."""
        config = self.manifest["configs"].get(table) if self.manifest else None
        return list(config.get("files", [])) if config else []

    def path_of(self, path: str) -> Path:
        assert self.root is not None
        return self.root / path

    def _read(self, read: Callable[..., T], path: str, **kwargs: Any) -> T:
        """``read`` (a pyarrow reader) of one of the release's files; DamagedFile names it when unreadable."""
        try:
            return read(self.path_of(path), **kwargs)
        except (OSError, pa.ArrowException) as exc:
            raise DamagedFile(
                self.path_of(path), f"unreadable Parquet: {exc}", recovery(self.path_of("."))
            ) from None

    def _table(self, path: str, columns: list[str] | None = None) -> pa.Table:
        return self._read(pq.read_table, path, columns=columns)

    def _column_names(self, path: str) -> list[str]:
        """The columns a file holds (none is read when the schema has no volatile field to look for)."""
        return self._read(pq.read_schema, path).names if VOLATILE_FIELDS else []

    @property
    def row_files(self) -> list[str]:
        """The files of the lectures and of the tables read from the files lectures name."""
        return [*self.lecture_files, *self.files_of(TRANSCRIPTS.name), *self.files_of(SLIDES.name)]

    def check(self) -> None:
        """Every one of :attr:`row_files` opens as Parquet (a damaged release is named before anything is
        built)."""
        for path in self.row_files:
            self._read(pq.read_metadata, path)

    def edited_files(self) -> list[str]:
        """Those of :attr:`row_files` that are no longer the files the manifest describes (size or sha256):
        edited in place since they were published. The next release writes their events again."""
        if self.manifest is None:
            return []
        listed = self.manifest["files"]
        return [
            path
            for path in self.row_files
            if path in listed
            and self.path_of(path).is_file()
            and file_entry(self.path_of(path)) != listed[path]
        ]

    def _lectures_in(self, path: str, keep: Callable[[str, str], bool] | None = None) -> list[Lecture]:
        # An older release may lack columns added since: Lecture.from_json gives them their empty value.
        rows = self._table(path).to_pylist()
        return [
            Lecture.from_json(row)
            for row in rows
            if keep is None or keep(str(row["lecture_id"]), str(row["event_id"]))
        ]

    def iter_lectures(self) -> Iterator[Lecture]:
        """Every lecture row, one file in memory at a time."""
        for path in self.lecture_files:
            yield from self._lectures_in(path)

    def states(self) -> dict[str, LectureState]:
        """Every lecture's hash, withdrawal, event and volatile values, from a few narrow columns (read
        once; a volatile column an older release lacks reads as null)."""
        if self._states is None:
            self._states = {}
            for path in self.lecture_files:
                volatile = [name for name in VOLATILE_FIELDS if name in self._column_names(path)]
                names = ["lecture_id", "content_sha256", "withdrawn", "event_id", *volatile]
                table = self._table(path, names)
                for lecture_id, digest, withdrawn, event, *values in zip(
                    *(table.column(name).to_pylist() for name in names), strict=True
                ):
                    self._states[str(lecture_id)] = LectureState(
                        str(digest),
                        bool(withdrawn),
                        str(event),
                        volatile_digest(dict(zip(volatile, values, strict=True))),
                    )
        return self._states

    def event_ids(self) -> list[str]:
        return sorted({s.event_id for s in self.states().values()}, key=lecture_order)

    def _files_of(self, event_id: str) -> list[str]:
        """The files holding an event's rows: its own config's, else (a release without event configs)
        every lecture file."""
        assert self.manifest is not None
        for config in self.manifest["configs"].values():
            if config.get("event_id") == event_id:
                return list(config.get("files", []))
        return self.lecture_files

    def lectures_of(
        self, event_ids: Iterable[str], keep: Callable[[str, str], bool] | None = None
    ) -> list[Lecture]:
        """The rows of these events (``keep(lecture_id, event_id)`` choosing among them), in lecture order."""
        wanted = set(event_ids)
        paths = dict.fromkeys(p for e in sorted(wanted) if self.manifest for p in self._files_of(e))

        def chosen(lecture_id: str, event_id: str) -> bool:
            return event_id in wanted and (keep is None or keep(lecture_id, event_id))

        out = [lec for path in paths for lec in self._lectures_in(path, chosen)]
        return sorted(out, key=lambda lec: lecture_order(lec.lecture_id))

    def links(self) -> dict[str, dict[str, Any]]:
        """The Anthology fields (``anthology_id``, ``anthology_url``, ``anthology_match``) of every linked
        lecture, by id."""
        out: dict[str, dict[str, Any]] = {}
        columns = ["lecture_id", "anthology_id", "anthology_url", "anthology_match"]
        for path in self.lecture_files:
            for row in self._table(path, columns).to_pylist():
                lecture_id = row.pop("lecture_id")
                if row["anthology_id"]:
                    out[str(lecture_id)] = row
        return out

    def sessions(self) -> list[SessionDetail]:
        """The session details the release's ``sessions`` table holds."""
        out: list[SessionDetail] = []
        for path in self.files_of(SESSIONS.name):
            for row in self._table(path).to_pylist():
                out.append(
                    {
                        "session_id": row.get("session_id"),
                        "event_id": row.get("event_id"),
                        "name": row.get("session_name"),
                        "description": row.get("description"),
                        "start": schema.parse_timestamp(row.get("starts_at")),
                        "end": schema.parse_timestamp(row.get("ends_at")),
                    }
                )
        return out

    def event_shards(self) -> dict[str, EventShardEntry]:
        found = self.manifest.get("event_shards") if self.manifest else None
        return found if isinstance(found, dict) else {}


def read_previous_release(out_dir: Path) -> PreviousRelease:
    """The release in ``out_dir`` (empty when there is none), its manifest checked and its lecture files
    opened; every command that writes the next release reads it through here."""
    out_dir = Path(out_dir).absolute()
    if not out_dir.exists():
        return PreviousRelease()
    manifest = read_manifest(out_dir)
    if manifest is None:
        if any(out_dir.iterdir()):
            raise ReleaseError(
                f"{out_dir} exists and is not a release (no {MANIFEST}); refusing to replace it"
            )
        return PreviousRelease()
    card_path = out_dir / CARD
    card = card_path.read_text(encoding="utf-8") if card_path.is_file() else None
    previous = PreviousRelease(out_dir, manifest, card)
    previous.check()
    return previous


@dataclass(frozen=True)
class CarriedRelease:
    """The rows of the next release before removals: what was staged, and what the previous release
    held that this crawl did not restage. ``carried_events``: events of the previous release the crawl
    did not cover, their rows kept as they were (event id -> rows); ``retired_events``: events taken
    out on request (event id -> rows dropped); ``withdrawn``: lecture ids newly marked withdrawn."""

    records: list[Lecture]
    carried_events: dict[str, int]
    retired_events: dict[str, int]
    withdrawn: list[str]


def carry_forward(
    previous: Iterable[Lecture],
    staged: Sequence[Lecture],
    *,
    crawled_events: Iterable[str],
    withdrawals: Withdrawals,
    retire_events: Iterable[str] = (),
    staged_ids: Iterable[str] | None = None,
) -> CarriedRelease:
    """The next release's rows from the previous release's and the staged crawl's.

    A staged lecture replaces its previous row, except that a row read from the lecture's page is never
    replaced by one its listing alone gave (a page budget, a lost state): the listing's fields update it
    (:func:`with_listing_fields`). A previous lecture the crawl did not stage is kept: marked withdrawn
    only when the site said it is gone (``withdrawals``: its own resource, or its event's, answered so),
    as it was otherwise (its event not crawled, kept back, or the site not asked). Every lecture of a
    retired event, staged or not, is left out. ``staged_ids`` are the ids staged in the whole crawl when
    ``staged`` is one event's part of it (a lecture staged under another event replaces its previous row
    too).
    """
    crawled = {str(e) for e in crawled_events}
    retired = {str(e) for e in retire_events}
    retired_counts: dict[str, int] = {}
    carried: dict[str, int] = {}
    withdrawn: list[str] = []
    out: list[Lecture] = []
    before = list(previous)
    published = {row.lecture_id: row for row in before}
    for lecture in staged:
        event = str(lecture.event_id)
        if event in retired:
            retired_counts[event] = retired_counts.get(event, 0) + 1
            continue
        last = published.get(lecture.lecture_id)
        out.append(lecture if last is None else with_listing_fields(lecture, last))
    restaged = set(staged_ids) if staged_ids is not None else {lec.lecture_id for lec in staged}
    for row in before:
        event = str(row.event_id)
        if event in retired:
            retired_counts[event] = retired_counts.get(event, 0) + 1
        elif row.lecture_id in restaged:
            continue
        elif event not in crawled:
            carried[event] = carried.get(event, 0) + 1
            out.append(row)
        elif not row.withdrawn and withdrawals.withdraws(event, row.lecture_id):
            withdrawn.append(row.lecture_id)
            out.append(replace(row, withdrawn=True))
        else:
            out.append(row)
    return CarriedRelease(out, dict(sorted(carried.items())), dict(sorted(retired_counts.items())), withdrawn)


def with_listing_fields(staged: Lecture, published: Lecture) -> Lecture:
    """``staged`` as the next release holds it against its ``published`` row: a record its listing alone
    gave (``extraction = api_listing...``) keeps what the published row read from the lecture's page (the
    fields only a page gives, how and when it was read), its listing fields taken from ``staged``."""
    if not is_listing_only(staged) or is_listing_only(published):
        return staged
    kept = {name: getattr(published, name) for name in PAGE_FIELDS}
    merged = replace(staged, **kept)
    return replace(merged, content_sha256=content_sha256(merged.values()))
