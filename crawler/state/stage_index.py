"""Reading the crawl's stage back: indexing every worker's lines, merging them into one record per
lecture, and the checks every line read back goes through.

Every lecture line read back (the stage a publish reads, the last stage a refresh carries from, the
unfinished stage a crawl resumes, a fleet's shared stage) is checked against the schema as JSON holds it
(:func:`record_problems`): a line that fails is logged with its file and line number, counted as bad, and
its lecture is taken as not staged by it, so its page is fetched again and it is never published. A
session line is checked as a release takes it, and a bad one is counted and left out the same way; so is
a transcript line whose record fails the ``transcripts`` schema (it is never published).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from crawler import stats_keys as keys
from crawler.json_types import JsonObject, JsonValue
from crawler.schema import (
    FIELD_NAMES,
    FIELDS,
    SORT_KEY,
    Lecture,
    Slides,
    Transcript,
    lecture_order,
)
from crawler.schema.check import validate_record
from crawler.state.layout import COMPLETE, StateDir
from crawler.state.stage import StageError, check_worker_name, staged_lecture
from crawler.state.stage_rows import SLIDES_KIND, SLIDES_ROWS, TRANSCRIPT_KIND, TRANSCRIPT_ROWS, RowLines

logger = logging.getLogger(__name__)


def record_problems(record: Mapping[str, object]) -> list[str]:
    """Why a staged record (as JSON holds it) cannot be read back: the schema's problems with its fields
    (:func:`crawler.schema.check.validate_record`: types, a required field missing), or a timestamp that is
    not an ISO 8601 string. Keys that are no field (one the schema dropped since) are left out, as
    :meth:`Lecture.from_json` leaves them. Empty when the record reads back."""
    known = {name: value for name, value in record.items() if name in FIELD_NAMES}
    problems = validate_record(known)
    for f in (f for f in FIELDS if f.kind == "timestamp" and not isinstance(known.get(f.name), str | None)):
        if (named := f"{f.name} is not an ISO 8601 timestamp") not in problems:
            problems.append(named)
    return problems


def _log_bad_line(path: Path, number: int, problem: str) -> None:
    logger.warning("Stage line %s:%d is bad (%s): its lecture is not taken from it", path, number, problem)


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
    # Where each lecture's subtitle tracks are staged (the last line of a track wins), read on demand.
    transcripts: RowLines[Transcript] = field(default_factory=lambda: RowLines(TRANSCRIPT_ROWS), repr=False)
    # Where each lecture's documents (slide deck, poster) are staged, the same way.
    slides: RowLines[Slides] = field(default_factory=lambda: RowLines(SLIDES_ROWS), repr=False)
    # (lecture_id, url) alias lines, united with the lectures' URLs once every line is read.
    _aliases: list[tuple[str, str]] = field(default_factory=list, repr=False)

    @property
    def complete(self) -> bool:
        return (self.directory / COMPLETE).exists()

    @property
    def summary(self) -> JsonObject:
        """What the crawl wrote into ``COMPLETE`` when it finished (empty when it did not)."""
        try:
            found = json.loads((self.directory / COMPLETE).read_text(encoding="utf-8"))
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
            staged = staged_lecture(json.loads(fh.readline()))
        assert staged is not None  # the index holds lecture lines only
        lecture = Lecture.from_json(staged)
        lecture.source_urls = sorted(self.urls[lecture_id])
        return lecture

    def _add_line(self, path: Path, offset: int, payload: JsonObject | None, number: int) -> None:
        """Index line ``number`` of ``path`` (starting at byte ``offset``, ``payload`` its JSON object); a
        bad one is logged and counted."""
        self.lines += 1
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
        elif (staged := staged_lecture(payload)) is not None:
            self._add_lecture(path, offset, staged, number)
        elif kind in (TRANSCRIPT_KIND, SLIDES_KIND):
            lines = self.transcripts if kind == TRANSCRIPT_KIND else self.slides
            problems = lines.add(payload, path, offset)
            if problems:
                self._bad(path, number, "; ".join(problems))
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
        lecture = Lecture.from_json(raw)
        lecture_id = lecture.lecture_id
        self.urls.setdefault(lecture_id, set()).update(lecture.source_urls)
        fetched = lecture.fetched_at or datetime.min.replace(tzinfo=UTC)
        held = self.entries.get(lecture_id)
        if held is not None:
            self.duplicate_lectures += 1
        if held is None or fetched >= held.fetched_at:
            self.entries[lecture_id] = StagedLine(
                path, offset, fetched, str(lecture.event_id), lecture.event_name
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


def _stage_lines(path: Path) -> Iterator[tuple[int, int, JsonObject | None]]:
    """Each line of ``path``: its number, the byte it starts at and its JSON object (:func:`_payload`)."""
    with path.open("rb") as fh:
        offset = 0
        for number, raw in enumerate(fh, start=1):
            yield number, offset, _payload(raw)
            offset += len(raw)


def index_stage(state_dir: Path) -> StageIndex:
    """Index every worker's staged lines: the latest fetch of a lecture wins, URLs are united."""
    directory = StateDir.of(state_dir).stage
    if not directory.is_dir():
        raise StageError(f"no staged crawl in {directory}: run `eventcrawl crawl --state {state_dir}` first")
    index = StageIndex(directory, sorted(p.stem for p in directory.glob("*.jsonl")))
    for worker in index.workers:
        path = directory / f"{worker}.jsonl"
        for number, offset, payload in _stage_lines(path):
            index._add_line(path, offset, payload, number)
    index._link_aliases()
    return index


def unfinished_lecture_ids(state_dir: Path) -> set[str]:
    """Ids already staged by a crawl that did not finish (every worker's lines): a resumed crawl need not
    fetch them again. A lecture whose line is bad (see :func:`record_problems`) is not among them: it is
    fetched again, not lost."""
    directory = StateDir.of(state_dir).stage
    if not directory.is_dir() or (directory / COMPLETE).exists():
        return set()
    ids: set[str] = set()
    for path in sorted(directory.glob("*.jsonl")):
        for lecture in _readable_lectures(path, log=True):
            ids.add(str(lecture[SORT_KEY]))
    return ids


def _readable_lectures(path: Path, *, log: bool = False) -> Iterator[JsonObject]:
    """The lectures (in their JSON form) of the lines of ``path`` whose record reads back; ``log`` names
    the others."""
    for number, _, payload in _stage_lines(path):
        lecture = staged_lecture(payload) if payload is not None else None
        if lecture is None:
            continue
        problems = record_problems(lecture)
        if not problems:
            yield lecture
        elif log:
            _log_bad_line(path, number, "; ".join(problems))


def staged_counts(state_dir: Path, worker: str, prefixes: Iterable[str] = ()) -> Counter[str]:
    """The counters an unfinished crawl's lecture lines in ``<worker>.jsonl`` hold: what each lecture's
    outcome counted (see :meth:`crawler.state.stage.StageWriter.write_lecture`), and ``stage/lectures`` and
    ``stage/carried`` for the lines themselves. Only keys starting with one of ``prefixes`` (all when none
    is given)."""
    wanted = tuple(prefixes)
    counts: Counter[str] = Counter()
    path = StateDir.of(state_dir).stage / f"{check_worker_name(worker)}.jsonl"
    if not path.is_file():
        return counts
    # A line read back by nobody is not counted: its lecture is fetched, and counted, again.
    for lecture in _readable_lectures(path):
        counts[keys.STAGE_LECTURES] += 1
        if lecture.get("carried"):
            counts[keys.STAGE_CARRIED] += 1
        counted = lecture.get("counted")
        if isinstance(counted, list):
            counts.update(k for k in counted if isinstance(k, str))
    if wanted:
        counts = Counter({k: v for k, v in counts.items() if k.startswith(wanted)})
    return counts
