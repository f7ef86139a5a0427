"""Writing and rotating the crawl's staging area in the state directory: append-only JSON lines, safe
against a kill.

Layout under ``<state>/stage/``: one ``<worker>.jsonl`` per crawl process (lecture, transcript, session
and alias lines) and a ``COMPLETE`` marker written when a crawl finishes normally. A crawl that starts on
a stage without the marker resumes it (appends); one that starts after a finished crawl moves that stage
to ``stage.previous/`` first, the base its refresh carries unchanged lectures from. A finished stage the
quality gate refused (``REFUSED``) is never that base: it moves to ``stage.refused/`` and the last
accepted stage stays ``stage.previous/``, so that what the gate refused is fetched again instead of
carried over.

The workers of a fleet share one stage: each appends to its own ``<worker>.jsonl``, and the stage belongs to
one run of the fleet, named in ``stage/FRONTIER``. Only the first worker of a new run moves a finished stage
aside (under a lock file, so that two workers starting together agree); a worker that joins later, or after
the run finished, appends to the stage as it is.

Reading the stage back is :mod:`crawler.state.stage_index`; the last finished stage a refresh carries from
is :mod:`crawler.state.previous_stage`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from json.encoder import encode_basestring
from pathlib import Path
from typing import IO, Any

from crawler.json_types import JsonObject
from crawler.schema import Lecture, Slides, Transcript
from crawler.state import layout
from crawler.state.fsutil import exclusive_lock, write_json_atomic
from crawler.state.stage_rows import RowKind

_WORKER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# The kind of a lecture's line, and where the line holds the lecture (as ``to_json`` writes it).
LECTURE_KIND = "lecture"
LECTURE_KEY = "lecture"
# What a lecture line an earlier version wrote holds beside its ``record``: side data of the lecture (and,
# in a stage from before there were per-field listing hashes, ``listing_sha256``, the one hash of them).
_LEGACY_SIDE = ("listing_hashes", "carried", "counted", "listing_sha256")
# ``json.dumps`` with the stage's options, without building an encoder for every line.
_ENCODE_LINE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# How that encoder writes a string.
_ENCODE_STRING = encode_basestring


class StageError(RuntimeError):
    """The stage cannot be used as asked (missing, incomplete, or a bad worker name)."""


def check_worker_name(name: str) -> str:
    if not _WORKER_NAME.match(name):
        raise StageError(
            f"invalid stage worker name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def start_stage(state_dir: Path, run: str | None = None) -> bool:
    """Make ``<state>/stage`` ready to append to; returns whether a finished stage was moved aside.

    A crawl alone (*run* None) moves a finished stage to ``stage.previous/``. The workers of a fleet pass
    the run they belong to: a finished stage is moved only when it is not this run's, so that it happens
    once per run, by the first worker that starts.
    """
    directory = layout.StateDir.of(state_dir).stage
    if run is None:
        moved = (directory / layout.COMPLETE).exists()
        if moved:
            _move_to_previous(directory)
        directory.mkdir(parents=True, exist_ok=True)
        return moved
    run_file = directory / layout.STAGE_RUN
    with exclusive_lock(Path(state_dir) / layout.STAGE_LOCK):
        current = run_file.read_text(encoding="utf-8").strip() if run_file.exists() else None
        moved = (directory / layout.COMPLETE).exists() and current != run
        if moved:
            _move_to_previous(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if current != run or moved:
            run_file.write_text(run + "\n", encoding="utf-8")
    return moved


def _move_to_previous(directory: Path) -> None:
    # A refused crawl is kept for a look, but the last accepted one stays the base of the next refresh.
    refused = (directory / layout.REFUSED).exists()
    previous = directory.with_name(layout.REFUSED_STAGE if refused else layout.PREVIOUS_STAGE)
    if previous.exists():
        shutil.rmtree(previous)
    directory.rename(previous)


def mark_refused(state_dir: Path, summary: Mapping[str, Any]) -> bool:
    """Say that the quality gate refused the finished stage: the next crawl does not carry lectures over
    from it (see :func:`start_stage`). Returns False when there is no finished stage to mark."""
    directory = layout.StateDir.of(state_dir).stage
    if not (directory / layout.COMPLETE).exists():
        return False
    body = {"refused_at": datetime.now(UTC).isoformat(), **summary}
    write_json_atomic(directory / layout.REFUSED, body, sort_keys=True)
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
        self.directory = layout.StateDir.of(state_dir).stage
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

    def _write_lines(self, lines: Sequence[str]) -> None:
        """Lines (encoded) written together and flushed once: a kill leaves all of them or a torn tail."""
        if self._fh is None:
            raise StageError("the stage writer is not open")
        self._fh.write("".join([line + "\n" for line in lines]))
        self._fh.flush()
        self._since_fsync += 1
        if self._since_fsync >= self.fsync_every:
            os.fsync(self._fh.fileno())
            self._since_fsync = 0

    def write_lecture(self, lecture: Lecture, *, aliases: Sequence[tuple[str, str]] = ()) -> None:
        """A lecture in its JSON form (``lecture.to_json()``). A crawled lecture's holds, beside its record,
        a hash of each of its listing fields (what the next crawl compares), whether it was carried over
        from the previous crawl rather than fetched, and the counters its outcome added to the crawl's
        statistics (so that a resumed crawl counts it exactly once); a record alone's holds none of them.
        The ``(lecture_id, url)`` aliases its page linked go just before it (once it is staged, a resumed
        crawl skips its page)."""
        self._write_lines(
            [
                *(_alias_text(lecture_id, url) for lecture_id, url in aliases),
                _ENCODE_LINE(lecture_line(lecture.to_json())),
            ]
        )

    def write_row(
        self, rows: RowKind[Any], record: Transcript | Slides, validators: Mapping[str, str] | None = None
    ) -> None:
        """A row read from a file a lecture names, as a line of the kind ``rows``: a subtitle track's
        ``transcripts`` row (``TRANSCRIPT_ROWS``) or a document's ``slides`` row (``SLIDES_ROWS``), with the
        file's ``validators`` (``etag``, ``last_modified``: what the next crawl revalidates the file with,
        never published). The last line of a (lecture_id, subtitle_url) or (lecture_id, document) is the
        one read back."""
        self._write_lines([_ENCODE_LINE(rows.line(record, validators))])

    def write_session(self, session: Mapping[str, Any]) -> None:
        self._write_lines([_ENCODE_LINE({"kind": "session", "session": dict(session)})])

    def write_aliases(self, aliases: Sequence[tuple[str, str]]) -> None:
        """URLs seen linking to lectures, as ``(lecture_id, url)``: merged into their ``source_urls``."""
        self._write_lines([_alias_text(lecture_id, url) for lecture_id, url in aliases])

    def close(self, *, complete: bool, summary: Mapping[str, Any] | None = None) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None
        if complete:
            mark_complete(self.directory.parent, summary or {})


def lecture_line(lecture: JsonObject) -> JsonObject:
    """The stage line of a lecture in its JSON form."""
    return {"kind": LECTURE_KIND, LECTURE_KEY: lecture}


def staged_lecture(payload: Mapping[str, Any]) -> JsonObject | None:
    """The lecture a stage line holds, in its JSON form; None for any other line.

    A stage an earlier version wrote (a ``stage.previous/`` is the base of the next refresh) holds
    ``{"kind": "lecture", "record": {...}}`` with the side data beside the record (an empty one left
    out): read as the same JSON.
    """
    if payload.get("kind") != LECTURE_KIND:
        return None
    lecture = payload.get(LECTURE_KEY)
    if isinstance(lecture, dict):
        return lecture
    record = payload.get("record")
    if not isinstance(record, dict):
        return None
    return {**record, **{name: payload[name] for name in _LEGACY_SIDE if name in payload}}


def _alias_text(lecture_id: str, url: str) -> str:
    """The stage's line saying ``url`` links to ``lecture_id``: a page links a few lectures, each line this
    small, and building it from its two strings costs a fraction of a call of the encoder."""
    if type(lecture_id) is str and type(url) is str:
        return f'{{"kind":"alias","lecture_id":{_ENCODE_STRING(lecture_id)},"url":{_ENCODE_STRING(url)}}}'
    return _ENCODE_LINE({"kind": "alias", "lecture_id": lecture_id, "url": url})


def mark_complete(state_dir: Path, summary: Mapping[str, Any]) -> None:
    body = {"finished_at": datetime.now(UTC).isoformat(), **summary}
    write_json_atomic(layout.StateDir.of(state_dir).stage / layout.COMPLETE, body, sort_keys=True)
