"""The crawl's staging area in the state directory: append-only JSON lines, safe against a kill.

Layout under ``<state>/stage/``: one ``<worker>.jsonl`` per crawl process and a ``COMPLETE`` marker
written when a crawl finishes normally. A crawl that starts on a stage without the marker resumes it
(appends); one that starts after a finished crawl moves that stage to ``stage.previous/`` first, the base
its refresh carries unchanged lectures from. A finished stage the quality gate refused (``REFUSED``) is
never that base: it moves to ``stage.refused/`` and the last accepted stage stays ``stage.previous/``, so
that what the gate refused is fetched again instead of carried over.

The workers of a fleet share one stage: each appends to its own ``<worker>.jsonl``, and the stage belongs to
one run of the fleet, named in ``stage/FRONTIER``. Only the first worker of a new run moves a finished stage
aside (under a lock file, so that two workers starting together agree); a worker that joins later, or after
the run finished, appends to the stage as it is.

Every lecture line read back (the stage a publish reads, the last stage a refresh carries from, the
unfinished stage a crawl resumes, a fleet's shared stage) is checked against the schema as JSON holds it
(:func:`record_problems`): a line that fails is logged with its file and line number, counted as bad, and
its lecture is taken as not staged by it, so its page is fetched again and it is never published. A
session line is checked as a release takes it, and a bad one is counted and left out the same way.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from crawler import stats_keys as keys
from crawler.json_types import JsonObject, JsonValue
from crawler.schema import (
    FIELD_NAMES,
    FIELDS,
    SORT_KEY,
    Lecture,
    from_json_record,
    lecture_order,
    parse_timestamp,
    to_json_record,
)
from crawler.schema_check import validate_record
from crawler.state.fsutil import exclusive_lock, write_json_atomic
from crawler.state.layout import StateDir

logger = logging.getLogger(__name__)

STAGE_DIRNAME = "stage"
PREVIOUS_DIRNAME = STAGE_DIRNAME + ".previous"
REFUSED_DIRNAME = STAGE_DIRNAME + ".refused"
COMPLETE_MARKER = "COMPLETE"
# Written beside COMPLETE when the quality gate refused the finished crawl.
REFUSED_MARKER = "REFUSED"
# The fleet run a shared stage belongs to, and the lock under which a worker decides to move the stage aside.
RUN_FILE = "FRONTIER"
LOCK_FILE = ".stage.lock"
_WORKER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class StageError(RuntimeError):
    """The stage cannot be used as asked (missing, incomplete, or a bad worker name)."""


def stage_dir(state_dir: Path) -> Path:
    return Path(state_dir) / STAGE_DIRNAME


def check_worker_name(name: str) -> str:
    if not _WORKER_NAME.match(name):
        raise StageError(
            f"invalid stage worker name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def record_problems(record: Mapping[str, object]) -> list[str]:
    """Why a staged record (as JSON holds it) cannot be read back: the schema's problems with its fields
    (:func:`crawler.schema.validate_record`: types, a required field missing), or a timestamp that is not
    an ISO 8601 string. Keys that are no field (one the schema dropped since) are left out, as
    :meth:`Lecture.from_json` leaves them. Empty when the record reads back."""
    known = {name: value for name, value in record.items() if name in FIELD_NAMES}
    problems = validate_record(known)
    for f in (f for f in FIELDS if f.kind == "timestamp" and not isinstance(known.get(f.name), str | None)):
        if (named := f"{f.name} is not an ISO 8601 timestamp") not in problems:
            problems.append(named)
    return problems


def _log_bad_line(path: Path, number: int, problem: str) -> None:
    logger.warning("Stage line %s:%d is bad (%s): its lecture is not taken from it", path, number, problem)


def start_stage(state_dir: Path, run: str | None = None) -> bool:
    """Make ``<state>/stage`` ready to append to; returns whether a finished stage was moved aside.

    A crawl alone (*run* None) moves a finished stage to ``stage.previous/``. The workers of a fleet pass
    the run they belong to: a finished stage is moved only when it is not this run's, so that it happens
    once per run, by the first worker that starts.
    """
    directory = stage_dir(state_dir)
    if run is None:
        moved = (directory / COMPLETE_MARKER).exists()
        if moved:
            _move_to_previous(directory)
        directory.mkdir(parents=True, exist_ok=True)
        return moved
    run_file = directory / RUN_FILE
    with exclusive_lock(Path(state_dir) / LOCK_FILE):
        current = run_file.read_text(encoding="utf-8").strip() if run_file.exists() else None
        moved = (directory / COMPLETE_MARKER).exists() and current != run
        if moved:
            _move_to_previous(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if current != run or moved:
            run_file.write_text(run + "\n", encoding="utf-8")
    return moved


def _move_to_previous(directory: Path) -> None:
    # A refused crawl is kept for a look, but the last accepted one stays the base of the next refresh.
    refused = (directory / REFUSED_MARKER).exists()
    previous = directory.with_name(REFUSED_DIRNAME if refused else PREVIOUS_DIRNAME)
    if previous.exists():
        shutil.rmtree(previous)
    directory.rename(previous)


def mark_refused(state_dir: Path, summary: Mapping[str, Any]) -> bool:
    """Say that the quality gate refused the finished stage: the next crawl does not carry lectures over
    from it (see :func:`start_stage`). Returns False when there is no finished stage to mark."""
    directory = stage_dir(state_dir)
    if not (directory / COMPLETE_MARKER).exists():
        return False
    body = {"refused_at": datetime.now(UTC).isoformat(), **summary}
    write_json_atomic(directory / REFUSED_MARKER, body, sort_keys=True)
    return True


def _drop_torn_tail(path: Path) -> int:
    """Cut a last line that a kill left half-written; returns the bytes removed."""
    if not path.exists():
        return 0
    with path.open("rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return 0
        chunk = 1 << 16
        pos = size
        while pos > 0:
            start = max(0, pos - chunk)
            fh.seek(start)
            data = fh.read(pos - start)
            newline = data.rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                fh.truncate(keep)
                return size - keep
            pos = start
        fh.truncate(0)
        return size


class StageWriter:
    """Appends staged lines for one worker; each line is flushed as it is written."""

    def __init__(self, state_dir: Path, worker: str = "main", fsync_every: int = 50) -> None:
        self.directory = stage_dir(state_dir)
        self.worker = check_worker_name(worker)
        self.path = self.directory / f"{self.worker}.jsonl"
        self.fsync_every = max(1, fsync_every)
        self.torn_bytes_dropped = 0
        self.resumed = False
        self.previous_moved = False
        self._fh: IO[str] | None = None
        self._since_fsync = 0

    def open(self, run: str | None = None) -> None:
        """Start appending; *run* names the fleet run whose shared stage this worker writes to (see
        :func:`start_stage`)."""
        self.previous_moved = start_stage(self.directory.parent, run)
        self.resumed = self.path.exists() and self.path.stat().st_size > 0
        self.torn_bytes_dropped = _drop_torn_tail(self.path)
        self._fh = self.path.open("a", encoding="utf-8")

    def _write(self, *payloads: Mapping[str, Any]) -> None:
        """Lines written together and flushed once: a kill leaves all of them or a torn tail."""
        if self._fh is None:
            raise StageError("the stage writer is not open")
        self._fh.write(
            "".join(json.dumps(p, ensure_ascii=False, separators=(",", ":")) + "\n" for p in payloads)
        )
        self._fh.flush()
        self._since_fsync += 1
        if self._since_fsync >= self.fsync_every:
            os.fsync(self._fh.fileno())
            self._since_fsync = 0

    def write_lecture(
        self,
        record: Mapping[str, Any],
        *,
        listing_hashes: Mapping[str, str] | None = None,
        carried: bool = False,
        aliases: Sequence[tuple[str, str]] = (),
        counted: Sequence[str] = (),
    ) -> None:
        """A lecture, with a hash of each of its listing fields (what the next crawl compares), whether
        it was carried over from the previous crawl rather than fetched, and the counters its outcome
        added to the crawl's statistics (so that a resumed crawl counts it exactly once); the
        ``(lecture_id, url)`` aliases its page linked go just before it (once it is staged, a resumed
        crawl skips its page)."""
        payload: JsonObject = {"kind": "lecture", "record": to_json_record(record)}
        if listing_hashes:
            payload["listing_hashes"] = dict(listing_hashes)
        if carried:
            payload["carried"] = True
        if counted:
            payload["counted"] = list(counted)
        self._write(*(_alias_line(lecture_id, url) for lecture_id, url in aliases), payload)

    def write_session(self, session: Mapping[str, Any]) -> None:
        self._write({"kind": "session", "session": dict(session)})

    def write_alias(self, lecture_id: str, url: str) -> None:
        self.write_aliases([(lecture_id, url)])

    def write_aliases(self, aliases: Sequence[tuple[str, str]]) -> None:
        """URLs seen linking to lectures, as ``(lecture_id, url)``: merged into their ``source_urls``."""
        self._write(*(_alias_line(lecture_id, url) for lecture_id, url in aliases))

    def close(self, *, complete: bool, summary: Mapping[str, Any] | None = None) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None
        if complete:
            mark_complete(self.directory.parent, summary or {})


def _alias_line(lecture_id: str, url: str) -> dict[str, str]:
    return {"kind": "alias", "lecture_id": lecture_id, "url": url}


def mark_complete(state_dir: Path, summary: Mapping[str, Any]) -> None:
    body = {"finished_at": datetime.now(UTC).isoformat(), **summary}
    write_json_atomic(stage_dir(state_dir) / COMPLETE_MARKER, body, sort_keys=True)


@dataclass
class StagedCrawl:
    """What a stage holds once every worker's lines are merged: one record per lecture."""

    records: list[dict[str, Any]]
    complete: bool
    workers: list[str]
    lines: int = 0
    bad_lines: int = 0
    duplicate_lectures: int = 0
    orphan_aliases: int = 0
    summary: JsonObject = field(default_factory=dict)
    # What the listings said of the events' sessions, by session id: session_id, event_id, name,
    # description, start, end.
    sessions: list[JsonObject] = field(default_factory=list)


def _stage_lines(path: Path) -> Iterator[tuple[JsonObject | None, str]]:
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.endswith("\n"):
                yield None, line
                continue
            try:
                payload = json.loads(line)
            except json.JSONDecodeError:
                yield None, line
                continue
            yield (payload if isinstance(payload, dict) else None), line


@dataclass(frozen=True)
class StagedLine:
    """Where the latest staged line of a lecture is, and what the index keeps of it."""

    path: Path
    offset: int
    fetched_at: datetime
    event_id: str
    event_name: str | None


@dataclass
class StageIndex:
    """A stage indexed by lecture id in one pass: where each lecture's latest line is, the URLs seen
    linking to it, the sessions and the counts. A lecture's record is read back when it is needed, so
    that the stage is never held whole (see :meth:`lecture`)."""

    directory: Path
    workers: list[str]
    entries: dict[str, StagedLine] = field(default_factory=dict)
    urls: dict[str, set[str]] = field(default_factory=dict)
    sessions: dict[str, JsonObject] = field(default_factory=dict)
    lines: int = 0
    bad_lines: int = 0
    duplicate_lectures: int = 0
    orphan_aliases: int = 0
    # (lecture_id, url) alias lines, united with the lectures' URLs once every line is read.
    _aliases: list[tuple[str, str]] = field(default_factory=list, repr=False)

    @property
    def complete(self) -> bool:
        return (self.directory / COMPLETE_MARKER).exists()

    @property
    def summary(self) -> JsonObject:
        """What the crawl wrote into ``COMPLETE`` when it finished (empty when it did not)."""
        try:
            found = json.loads((self.directory / COMPLETE_MARKER).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}
        return found if isinstance(found, dict) else {}

    def lecture_ids(self) -> list[str]:
        return sorted(self.entries, key=lecture_order)

    def event_ids(self) -> list[str]:
        return sorted({e.event_id for e in self.entries.values()}, key=lecture_order)

    def lectures_of(self, event_id: str) -> list[Lecture]:
        """Every staged lecture of ``event_id`` in lecture order, read back from the stage."""
        ids = [i for i, e in self.entries.items() if e.event_id == event_id]
        return [self.lecture(i) for i in sorted(ids, key=lecture_order)]

    def lecture(self, lecture_id: str) -> Lecture:
        """The lecture's latest staged record, with every URL seen linking to it."""
        entry = self.entries[lecture_id]
        with entry.path.open("rb") as fh:
            fh.seek(entry.offset)
            payload = json.loads(fh.readline())
        lecture = Lecture.from_json(payload["record"])
        lecture.source_urls = sorted(self.urls[lecture_id])
        return lecture

    def _add_line(self, path: Path, offset: int, raw: bytes, number: int) -> None:
        """Index line ``number`` of ``path`` (starting at byte ``offset``); a bad one is logged and
        counted."""
        self.lines += 1
        payload = _payload(raw)
        kind = payload.get("kind") if payload is not None else None
        if payload is None:
            self._bad(path, number, "not a whole JSON object")
        elif (
            kind == "alias"
            and isinstance(payload.get("lecture_id"), str)
            and isinstance(payload.get("url"), str)
        ):
            self._aliases.append((str(payload["lecture_id"]), str(payload["url"])))
        elif kind == "session" and isinstance(payload.get("session"), dict):
            self._add_session(path, payload["session"], number)
        elif kind == "lecture" and isinstance(payload.get("record"), dict):
            self._add_lecture(path, offset, payload["record"], number)
        else:
            self._bad(path, number, f"not a line of the stage (kind {kind!r})")

    def _add_session(self, path: Path, session: JsonValue, number: int) -> None:
        """A session as the listing described it, checked as a release takes it (a bad one is logged
        and counted, not kept)."""
        from crawler.publish.records import session_detail

        assert isinstance(session, dict)
        try:
            session_detail(session, number)
        except ValueError as exc:
            self._bad(path, number, str(exc))
            return
        self.sessions[str(session["session_id"])] = session

    def _bad(self, path: Path, number: int, problem: str) -> None:
        self.bad_lines += 1
        _log_bad_line(path, number, problem)

    def _add_lecture(self, path: Path, offset: int, raw: JsonValue, number: int) -> None:
        assert isinstance(raw, dict)
        problems = record_problems(raw)
        if problems:
            self._bad(path, number, "; ".join(problems))
            return
        record = from_json_record(raw)
        lecture_id = str(record[SORT_KEY])
        self.urls.setdefault(lecture_id, set()).update(record.get("source_urls") or [])
        fetched = _fetched(record)
        held = self.entries.get(lecture_id)
        if held is not None:
            self.duplicate_lectures += 1
        if held is None or fetched >= held.fetched_at:
            self.entries[lecture_id] = StagedLine(
                path, offset, fetched, str(record.get("event_id")), record.get("event_name")
            )

    def _link_aliases(self) -> None:
        for lecture_id, url in self._aliases:
            if lecture_id in self.urls:
                self.urls[lecture_id].add(url)
            else:
                self.orphan_aliases += 1
        self._aliases = []


def _payload(raw: bytes) -> JsonObject | None:
    """A stage line's JSON object; None for a torn, undecodable or non-object line."""
    if not raw.endswith(b"\n"):
        return None
    try:
        payload = json.loads(raw.decode("utf-8", errors="replace"))
    except json.JSONDecodeError:
        return None
    return payload if isinstance(payload, dict) else None


def index_stage(state_dir: Path) -> StageIndex:
    """Index every worker's staged lines: the latest fetch of a lecture wins, URLs are united."""
    directory = stage_dir(state_dir)
    if not directory.is_dir():
        raise StageError(f"no staged crawl in {directory}: run `eventcrawl crawl --state {state_dir}` first")
    index = StageIndex(directory, sorted(p.stem for p in directory.glob("*.jsonl")))
    for worker in index.workers:
        path = directory / f"{worker}.jsonl"
        with path.open("rb") as fh:
            offset = 0
            for number, raw in enumerate(fh, start=1):
                index._add_line(path, offset, raw, number)
                offset += len(raw)
    index._link_aliases()
    return index


def read_stage(state_dir: Path) -> StagedCrawl:
    """Merge every worker's staged lines: the latest fetch of a lecture wins, URLs are united."""
    index = index_stage(state_dir)
    sessions = index.sessions
    return StagedCrawl(
        records=[from_json_record(index.lecture(i).values()) for i in index.lecture_ids()],
        complete=index.complete,
        workers=index.workers,
        lines=index.lines,
        bad_lines=index.bad_lines,
        duplicate_lectures=index.duplicate_lectures,
        orphan_aliases=index.orphan_aliases,
        summary=dict(index.summary) if index.complete else {},
        sessions=[dict(sessions[k]) for k in sorted(sessions, key=lecture_order)],
    )


@dataclass(frozen=True)
class PreviousLecture:
    """Where the last finished crawl staged a lecture, and when its page was fetched."""

    path: Path
    offset: int
    fetched_at: datetime


@dataclass(frozen=True)
class StagedLecture:
    """A lecture as the last finished crawl staged it: its record (with the URLs seen linking to it) and
    what the next crawl compares its listing by: a hash per listing field, or (a stage written before
    there were per-field hashes) one hash over all of them."""

    record: dict[str, Any]
    listing_hashes: dict[str, str] | None
    listing_sha256: str | None


class PreviousStage:
    """The last finished stage (``stage.previous/``) indexed by lecture id, for a refresh to carry
    unchanged lectures over. Only where each lecture's line is, and when its page was fetched, are kept
    in memory, as small numbers in arrays; a lecture's line is read when it is needed, and one that cannot
    be read back is counted in ``damaged`` and treated as absent (its page is fetched again)."""

    def __init__(self, state_dir: Path | None) -> None:
        # Per lecture id its row in the arrays below: its line's file (an index into ``_paths``), the
        # line's offset, and its page's fetch time in microseconds since the epoch. An object a lecture
        # (a path, an offset and a datetime) cost about 300 bytes; this costs its id and about 40.
        self.entries: dict[str, int] = {}
        self._paths: list[Path] = []
        self._file = array("H")
        self._offset = array("q")
        self._fetched = array("q")
        # URLs the previous crawl saw linking to each lecture, the one string most lectures have rather
        # than a set: a carried lecture keeps them.
        self._aliases: dict[str, str | tuple[str, ...]] = {}
        self.damaged: set[str] = set()
        # Each lecture's event, as an index into ``_events``: what a listing that no longer names it is
        # asked about.
        self._event = array("I")
        self._events: dict[str, int] = {}
        directory = Path(state_dir or ".") / PREVIOUS_DIRNAME
        if state_dir is not None and directory.is_dir() and (directory / COMPLETE_MARKER).exists():
            for path in sorted(directory.glob("*.jsonl")):
                self._index(path)
        base = StateDir.of(state_dir or ".").release_base
        if state_dir is not None and base.is_file():
            # The published rows the stage lacks (a lost state, an event kept back): the release is the
            # base for them, never a reason to replace a lecture the stage holds.
            self._index(base, fill_only=True)

    def _index(self, path: Path, *, fill_only: bool = False) -> None:
        file = len(self._paths)
        self._paths.append(path)
        with path.open("rb") as fh:
            offset = 0
            for raw in fh:
                start, offset = offset, offset + len(raw)
                if not raw.endswith(b"\n"):
                    break
                try:
                    payload = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    continue
                if isinstance(payload, dict):
                    self._add(payload, file, start, fill_only=fill_only)

    def _add(self, payload: JsonObject, file: int, offset: int, *, fill_only: bool = False) -> None:
        """Index one line of the stage: a URL linking to a lecture, or a lecture's record (``fill_only``:
        only a lecture not indexed yet)."""
        if payload.get("kind") == "alias" and isinstance(payload.get("lecture_id"), str):
            self._add_alias(str(payload["lecture_id"]), str(payload.get("url")))
            return
        record = payload.get("record")
        if payload.get("kind") != "lecture" or not isinstance(record, dict):
            return
        lecture_id = record.get(SORT_KEY)
        if not isinstance(lecture_id, str) or (fill_only and lecture_id in self.entries):
            return
        try:
            fetched = parse_timestamp(record.get("fetched_at")) or datetime.min.replace(tzinfo=UTC)
        except ValueError:
            return
        micros = _micros(fetched)
        event = self._events.setdefault(str(record.get("event_id") or ""), len(self._events))
        row = self.entries.get(lecture_id)
        if row is None:
            self.entries[lecture_id] = len(self._offset)
            self._file.append(file)
            self._offset.append(offset)
            self._fetched.append(micros)
            self._event.append(event)
        elif micros >= self._fetched[row]:
            self._file[row], self._offset[row], self._fetched[row] = file, offset, micros
            self._event[row] = event

    def lectures_by_event(self) -> dict[str, list[str]]:
        """The lecture ids indexed, per the event their record names."""
        names = {index: event for event, index in self._events.items()}
        out: dict[str, list[str]] = {}
        for lecture_id, row in self.entries.items():
            out.setdefault(names[self._event[row]], []).append(lecture_id)
        return out

    def _add_alias(self, lecture_id: str, url: str) -> None:
        known = self._aliases.get(lecture_id)
        if known is None:
            self._aliases[lecture_id] = url
        elif isinstance(known, str):
            if url != known:
                self._aliases[lecture_id] = (known, url)
        elif url not in known:
            self._aliases[lecture_id] = (*known, url)

    def alias_urls(self, lecture_id: str) -> tuple[str, ...]:
        """The URLs the previous crawl saw linking to the lecture (by alias lines, not in its record)."""
        known = self._aliases.get(lecture_id, ())
        return (known,) if isinstance(known, str) else known

    def __contains__(self, lecture_id: object) -> bool:
        return lecture_id in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, lecture_id: str) -> PreviousLecture | None:
        row = self.entries.get(lecture_id)
        if row is None:
            return None
        return PreviousLecture(
            self._paths[self._file[row]],
            self._offset[row],
            _EPOCH + timedelta(microseconds=self._fetched[row]),
        )

    def staged(self, lecture_id: str) -> StagedLecture | None:
        """The lecture as the previous crawl staged it; None when it has none, or when its line cannot
        be read back (logged with the file, and counted in ``damaged``)."""
        entry = self.get(lecture_id)
        if entry is None:
            return None
        try:
            with entry.path.open("rb") as fh:
                fh.seek(entry.offset)
                payload = json.loads(fh.readline())
            problems = record_problems(payload["record"])
            if problems:
                raise ValueError("; ".join(problems))
            record = from_json_record(payload["record"])
            hashes = payload.get("listing_hashes")
            if hashes is not None and not (
                isinstance(hashes, dict) and all(isinstance(v, str) for v in hashes.values())
            ):
                raise ValueError("listing_hashes is not a map of strings")
            sha = payload.get("listing_sha256")
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            if lecture_id not in self.damaged:
                self.damaged.add(lecture_id)
                logger.warning(
                    "The last stage's record of lecture %s (%s:%d) cannot be read back (%s): its page is "
                    "fetched again",
                    lecture_id,
                    entry.path,
                    _line_number(entry.path, entry.offset),
                    exc,
                )
            return None
        urls = {*(record.get("source_urls") or []), *self.alias_urls(lecture_id)}
        record["source_urls"] = sorted(urls)
        return StagedLecture(record, hashes, sha if isinstance(sha, str) else None)

    def record(self, lecture_id: str) -> dict[str, Any] | None:
        """The lecture's record as the previous crawl staged it, with the URLs seen linking to it; None
        when there is none or it cannot be read back."""
        staged = self.staged(lecture_id)
        return staged.record if staged is not None else None


def unfinished_lecture_ids(state_dir: Path) -> set[str]:
    """Ids already staged by a crawl that did not finish (every worker's lines): a resumed crawl need not
    fetch them again. A lecture whose line is bad (see :func:`record_problems`) is not among them: it is
    fetched again, not lost."""
    directory = stage_dir(state_dir)
    if not directory.is_dir() or (directory / COMPLETE_MARKER).exists():
        return set()
    ids: set[str] = set()
    for path in sorted(directory.glob("*.jsonl")):
        for _, record in _readable_lectures(path, log=True):
            ids.add(str(record[SORT_KEY]))
    return ids


def _readable_lectures(path: Path, *, log: bool = False) -> Iterator[tuple[JsonObject, JsonObject]]:
    """The lecture lines of ``path`` whose record reads back, with that record; ``log`` names the
    others."""
    for number, (payload, _) in enumerate(_stage_lines(path), start=1):
        raw = _record_of(payload)
        if payload is None or raw is None:
            continue
        problems = record_problems(raw)
        if not problems:
            yield payload, raw
        elif log:
            _log_bad_line(path, number, "; ".join(problems))


def _line_number(path: Path, offset: int) -> int:
    """The number of the line starting at byte ``offset`` of ``path`` (read only to name a bad line)."""
    try:
        with path.open("rb") as fh:
            return fh.read(offset).count(b"\n") + 1
    except OSError:
        return 0


def _record_of(payload: JsonObject | None) -> JsonObject | None:
    """The record of a lecture line (None for any other line)."""
    record = payload.get("record") if payload is not None and payload.get("kind") == "lecture" else None
    return record if isinstance(record, dict) else None


def staged_counts(state_dir: Path, worker: str, prefixes: Iterable[str] = ()) -> Counter[str]:
    """The counters an unfinished crawl's lecture lines in ``<worker>.jsonl`` hold: what each lecture's
    outcome counted (see :meth:`StageWriter.write_lecture`), and ``stage/lectures`` and ``stage/carried``
    for the lines themselves. Only keys starting with one of ``prefixes`` (all when none is given)."""
    wanted = tuple(prefixes)
    counts: Counter[str] = Counter()
    path = stage_dir(state_dir) / f"{check_worker_name(worker)}.jsonl"
    if not path.is_file():
        return counts
    # A line read back by nobody is not counted: its lecture is fetched, and counted, again.
    for payload, _ in _readable_lectures(path):
        counts[keys.STAGE_LECTURES] += 1
        if payload.get("carried"):
            counts[keys.STAGE_CARRIED] += 1
        counted = payload.get("counted")
        if isinstance(counted, list):
            counts.update(k for k in counted if isinstance(k, str))
    if wanted:
        counts = Counter({k: v for k, v in counts.items() if k.startswith(wanted)})
    return counts


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(moment: datetime) -> int:
    """An aware datetime as whole microseconds since the epoch (exact: a datetime has no finer part)."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _fetched(record: Mapping[str, Any]) -> datetime:
    return parse_timestamp(record.get("fetched_at")) or datetime.min.replace(tzinfo=UTC)


# A lecture line as StageWriter writes it: its id is the record's first field. Read without parsing the
# line, to list a large stage's ids quickly; a line written otherwise is only not found here.
_LECTURE_LINE_ID = re.compile(rb'^\{"kind":"lecture","record":\{"lecture_id":"([^"\\]+)"')


def refresh_base_ids(state_dir: Path) -> set[str]:
    """The lecture ids of the stage the next crawl will refresh from: the finished stage (unless the gate
    refused it), else the previous one; none when neither finished."""
    state = StateDir.of(state_dir)
    if state.stage_complete.exists() and not state.stage_refused.exists():
        directory = state.stage
    elif (state.previous_stage / COMPLETE_MARKER).exists():
        directory = state.previous_stage
    else:
        return set()
    ids: set[str] = set()
    for path in directory.glob("*.jsonl"):
        with path.open("rb") as fh:
            for raw in fh:
                found = _LECTURE_LINE_ID.match(raw)
                if found:
                    ids.add(found[1].decode("utf-8", "replace"))
    return ids


def write_release_base(state_dir: Path, rows_by_event: Iterable[Iterable[Mapping[str, Any]]]) -> int:
    """Write ``<state>/release-base.jsonl`` with these published rows (as stage lines, no listing hashes:
    a refresh fetches each page again when its budget allows, and carries the row until then); remove it
    when there are none. Returns the rows written."""
    path = StateDir.of(state_dir).release_base
    written = 0
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for rows in rows_by_event:
            for record in rows:
                line = {"kind": "lecture", "record": to_json_record(record)}
                fh.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
                written += 1
        fh.flush()
        os.fsync(fh.fileno())
    if written:
        tmp.replace(path)
    else:
        tmp.unlink()
        path.unlink(missing_ok=True)
    return written
