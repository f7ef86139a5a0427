"""The stage a refresh carries unchanged lectures from: the last finished stage (``stage.previous/``),
filled in by the published release's rows the stage lacks (``release-base.jsonl``), indexed by lecture id.
"""

from __future__ import annotations

import json
import logging
import os
import re
from array import array
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from crawler.json_types import JsonObject
from crawler.pages.fields import LectureItem
from crawler.schema import SORT_KEY, parse_timestamp, to_json_record
from crawler.state.layout import COMPLETE, StateDir
from crawler.state.stage import lecture_line, staged_lecture
from crawler.state.stage_index import record_problems
from crawler.state.stage_rows import SLIDES_KIND, SLIDES_ROWS, TRANSCRIPT_KIND, TRANSCRIPT_ROWS, RowLines

logger = logging.getLogger(__name__)


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
        # Where the previous crawl staged each lecture's subtitle tracks: a carried lecture keeps them.
        self.transcripts = RowLines(TRANSCRIPT_ROWS)
        self.slides = RowLines(SLIDES_ROWS)
        # Each lecture's event, as an index into ``_events``: what a listing that no longer names it is
        # asked about.
        self._event = array("I")
        self._events: dict[str, int] = {}
        if state_dir is None:
            return
        state = StateDir.of(state_dir)
        if (state.previous_stage / COMPLETE).exists():
            for path in sorted(state.previous_stage.glob("*.jsonl")):
                self._index(path)
        if state.release_base.is_file():
            # The published rows the stage lacks (a lost state, an event kept back): the release is the
            # base for them, never a reason to replace a lecture the stage holds.
            self._index(state.release_base, fill_only=True)

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
        if payload.get("kind") in (TRANSCRIPT_KIND, SLIDES_KIND):
            self._add_row(payload, file, offset)
            return
        record = staged_lecture(payload)
        if record is None:
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

    def _add_row(self, payload: JsonObject, file: int, offset: int) -> None:
        path = self._paths[file]
        lines = self.transcripts if payload.get("kind") == TRANSCRIPT_KIND else self.slides
        problems = lines.add(payload, path, offset)
        if problems:
            logger.warning(
                "The last stage's %s line %s:%d cannot be read back (%s): it is not carried",
                payload.get("kind"),
                path,
                _line_number(path, offset),
                "; ".join(problems),
            )

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

    def fetched_at(self, lecture_id: str) -> datetime | None:
        """When the previous crawl fetched the lecture's page; None when it staged no line of it."""
        row = self.entries.get(lecture_id)
        return None if row is None else _EPOCH + timedelta(microseconds=self._fetched[row])

    def staged(self, lecture_id: str) -> LectureItem | None:
        """The lecture as the previous crawl staged it, carried, with the hashes its listing was staged
        with; None when it has none, or when its line cannot be read back (logged with the file, and
        counted in ``damaged``)."""
        row = self.entries.get(lecture_id)
        if row is None:
            return None
        path, offset = self._paths[self._file[row]], self._offset[row]
        try:
            with path.open("rb") as fh:
                fh.seek(offset)
                lecture = staged_lecture(json.loads(fh.readline()))
            if lecture is None:
                raise ValueError("not a lecture line")
            problems = record_problems(lecture)
            if problems:
                raise ValueError("; ".join(problems))
            # Raises ValueError for listing hashes that are not a map of strings.
            staged = LectureItem.from_json(lecture)
            # Only a stage from before there were per-field listing hashes has it (see ``staged_lecture``).
            sha = lecture.get("listing_sha256")
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            if lecture_id not in self.damaged:
                self.damaged.add(lecture_id)
                logger.warning(
                    "The last stage's record of lecture %s (%s:%d) cannot be read back (%s): its page is "
                    "fetched again",
                    lecture_id,
                    path,
                    _line_number(path, offset),
                    exc,
                )
            return None
        staged.source_urls = sorted({*staged.source_urls, *self.alias_urls(lecture_id)})
        return LectureItem.carried_over(
            staged, listing_hashes=staged.listing_hashes, listing_sha256=sha if isinstance(sha, str) else None
        )


def _line_number(path: Path, offset: int) -> int:
    """The number of the line starting at byte ``offset`` of ``path`` (read only to name a bad line)."""
    try:
        with path.open("rb") as fh:
            return fh.read(offset).count(b"\n") + 1
    except OSError:
        return 0


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(moment: datetime) -> int:
    """An aware datetime as whole microseconds since the epoch (exact: a datetime has no finer part)."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


# A lecture line as StageWriter writes it (or an earlier version wrote it, the lecture under ``record``):
# its id is the lecture's first field. Read without parsing the line, to list a large stage's ids quickly;
# a line written otherwise is only not found here.
_LECTURE_LINE_ID = re.compile(rb'^\{"kind":"lecture","(?:lecture|record)":\{"lecture_id":"([^"\\]+)"')


def refresh_base_ids(state_dir: Path) -> set[str]:
    """The lecture ids of the stage the next crawl will refresh from: the finished stage (unless the gate
    refused it), else the previous one; none when neither finished."""
    state = StateDir.of(state_dir)
    if state.stage_complete.exists() and not state.stage_refused.exists():
        directory = state.stage
    elif (state.previous_stage / COMPLETE).exists():
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
                line = lecture_line(to_json_record(record))
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
