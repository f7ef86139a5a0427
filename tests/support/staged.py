"""A staged crawl read back whole: what the tests check a crawl's stage against."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from crawler.json_types import JsonObject
from crawler.schema import Lecture, lecture_order
from crawler.state.stage_index import index_stage


@dataclass
class StagedCrawl:
    """What a stage holds once every worker's lines are merged: one record per lecture."""

    records: list[Lecture]
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


def read_stage(state_dir: Path) -> StagedCrawl:
    """Merge every worker's staged lines: the latest fetch of a lecture wins, URLs are united."""
    index = index_stage(state_dir)
    sessions = index.sessions
    return StagedCrawl(
        records=[index.lecture(i) for i in index.lecture_ids()],
        complete=index.complete,
        workers=index.workers,
        lines=index.lines,
        bad_lines=index.bad_lines,
        duplicate_lectures=index.duplicate_lectures,
        orphan_aliases=index.orphan_aliases,
        summary=dict(index.summary) if index.complete else {},
        sessions=[dict(sessions[k]) for k in sorted(sessions, key=lecture_order)],
    )
