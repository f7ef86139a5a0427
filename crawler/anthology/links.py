"""Lecture records linked to their Anthology papers, and the links as a CSV the Anthology could ingest.

:func:`link_records` matches records (``crawler.schema`` shape) against papers and sets the three
Anthology fields; :func:`links_csv` writes ``anthology-links.csv``: one row per linked lecture still on
the site (Anthology id, lecture URL, video URL, video DOI), in Anthology id order. The file is opened in
spreadsheets, and its cells come from the site: a lecture whose id is not the Anthology's is left out, a
video DOI that is not a DOI is left out of its cell, and a cell a spreadsheet would read as a formula is
written after a ``'`` (all counted, see :class:`LinksFile`).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crawler import schema
from crawler.anthology.match import Candidate, LectureText, Match, PaperIndex, match_lectures
from crawler.anthology.reader import MAX_TEXT, Paper, ReadSummary, anthology_url, is_anthology_id
from crawler.anthology.timing import event_time
from crawler.schema import AnthologyMatch, Lecture, has_value

LINKS_FILE = "anthology-links.csv"
LINK_COLUMNS = ("anthology_id", "lecture_url", "video_url", "video_doi")
# How many ambiguous lectures a summary names (all are counted).
LISTED = 50
# A DOI as the links file takes it: ``10.``, the registrant's four to nine digits, a slash and a suffix
# of printable characters without spaces.
DOI = re.compile(r"10\.[0-9]{4,9}/[^\s\x00-\x1f\x7f-\x9f]+")
# What makes a spreadsheet read a cell as a formula when the cell starts with it (OWASP's list for CSV
# injection, with the full-width forms, line feed and NUL); such a cell is written after a ``'``.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\0", "\uff1d", "\uff0b", "\uff0d", "\uff20")


@dataclass(frozen=True)
class LinkRow:
    anthology_id: str
    lecture_url: str
    video_url: str | None
    video_doi: str | None


@dataclass(frozen=True)
class LinkSummary:
    """What linking did: papers read, lectures linked (per event too), ambiguous and conflicting ones;
    what reading the Anthology's files left out (texts past the reader's cap, papers whose id is not the
    Anthology's, the first of them named in ``read_notes``); lectures with a near miss, a paper that
    matched but was refused for its date (``refused_for_date``, the first of them told in ``refused``)."""

    papers: int
    lectures: int
    linked: int
    ambiguous: int
    conflicts: int
    # Each event's lectures, and how many of them are linked: {"lectures": n, "linked": m}.
    by_event: dict[str, dict[str, int]] = field(default_factory=dict)
    unclear: tuple[str, ...] = ()  # the first LISTED ambiguous and conflicting lectures, a line each
    capped: int = 0
    invalid_ids: int = 0
    read_notes: tuple[str, ...] = ()
    refused_for_date: int = 0
    refused: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        matches: Sequence[Match],
        *,
        papers: int,
        by_event: Mapping[str, dict[str, int]],
        read: ReadSummary | None = None,
    ) -> LinkSummary:
        """The summary of these decisions, one per lecture, against ``papers`` papers read as ``read``
        tells."""
        unclear = [m for m in matches if m.status in ("ambiguous", "conflict")]
        near_misses = [m for m in matches if m.refused]
        return cls(
            papers=papers,
            lectures=len(matches),
            linked=sum(1 for m in matches if m.status == "linked"),
            ambiguous=sum(1 for m in matches if m.status == "ambiguous"),
            conflicts=sum(1 for m in matches if m.status == "conflict"),
            by_event=dict(sorted(by_event.items())),
            unclear=tuple(unclear_link(m) for m in unclear[:LISTED]),
            capped=read.capped if read else 0,
            invalid_ids=read.invalid_ids if read else 0,
            read_notes=tuple(read.notes) if read else (),
            refused_for_date=len(near_misses),
            refused=tuple(near_miss(m) for m in near_misses[:LISTED]),
        )

    def line(self) -> str:
        left_out = (
            f"; left out of the Anthology's files: {self.capped} texts past {MAX_TEXT} characters, "
            f"{self.invalid_ids} papers whose id is not the Anthology's"
            if self.capped or self.invalid_ids
            else ""
        )
        refused = (
            f"; {self.refused_for_date} lectures with a paper refused for its date"
            if self.refused_for_date
            else ""
        )
        return (
            f"anthology: {self.linked} of {self.lectures} lectures linked to {self.papers} papers, "
            f"{self.ambiguous} ambiguous, {self.conflicts} in conflict{left_out}{refused}"
        )

    def as_dict(self) -> dict[str, object]:
        """The summary as the run report holds it."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


def lecture_text(record: Lecture) -> LectureText:
    """What matching reads of a lecture record: its text, and its time from its event's name and when it
    is held."""
    authors = tuple(str(a.get("name") or "") for a in record.authors or () if a.get("name"))
    return LectureText(
        key=str(record.lecture_id),
        title=str(record.title or ""),
        authors=authors,
        abstract=str(record.abstract or ""),
        event=event_time(str(record.event_name or ""), record.held_at),
    )


def evidence(match: Match) -> AnthologyMatch | None:
    """The ``anthology_match`` value of a match (None unless it linked)."""
    if match.anthology_id is None or match.best is None:
        return None
    scores = match.best.scores
    return {
        "method": scores.method,
        "score": scores.score,
        "title_score": scores.title,
        "author_score": scores.authors,
        "abstract_score": scores.abstract,
        "margin": match.margin,
        "refused_for_date": len(match.refused),
    }


def _with_fields(
    record: Lecture, anthology_id: str | None, url: str | None, found: AnthologyMatch | None
) -> Lecture:
    out = dataclasses.replace(record, anthology_id=anthology_id, anthology_url=url, anthology_match=found)
    out.content_sha256 = schema.content_sha256(out.values())
    return out


def with_link(record: Lecture, match: Match | None) -> Lecture:
    """``record`` with its three Anthology fields set from ``match`` (cleared when it did not link) and
    its content hash recomputed."""
    anthology_id = match.anthology_id if match is not None else None
    url = anthology_url(anthology_id) if anthology_id else None
    return _with_fields(record, anthology_id, url, evidence(match) if match is not None else None)


def link_records(records: Sequence[Lecture], papers: Iterable[Paper]) -> tuple[list[Lecture], LinkSummary]:
    """Every record with its Anthology fields set (a lecture without a clear paper gets nulls), and a
    summary. Withdrawn lectures are matched too: they keep a link to their paper."""
    index = PaperIndex(papers)
    matches = match_lectures(index, [lecture_text(r) for r in records])
    linked = [with_link(r, m) for r, m in zip(records, matches, strict=True)]
    by_event: dict[str, dict[str, int]] = {}
    for record in linked:
        counts = by_event.setdefault(str(record.event_id or ""), {"lectures": 0, "linked": 0})
        counts["lectures"] += 1
        counts["linked"] += 1 if has_value(record.anthology_id) else 0
    return linked, LinkSummary.of(matches, papers=len(index), by_event=by_event)


def keep_links(records: Sequence[Lecture], previous: Iterable[Lecture]) -> list[Lecture]:
    """The records of a release built without the Anthology's files, each lecture with the link it had in
    ``previous`` (the last release): a publish that was not asked to link changes no link."""
    before = {str(r.lecture_id): r for r in previous if has_value(r.anthology_id)}
    out = []
    for record in records:
        old = before.get(str(record.lecture_id))
        if old is None or has_value(record.anthology_id):
            out.append(dataclasses.replace(record))
            continue
        out.append(_with_fields(record, old.anthology_id, old.anthology_url, old.anthology_match))
    return out


def unclear_link(match: Match) -> str:
    """A lecture left without an id although a paper came close, in a line: why, and the two best papers."""

    def paper(candidate: Candidate | None) -> str:
        return f"{candidate.anthology_id} ({candidate.scores.score:.2f})" if candidate else "none"

    return (
        f"lecture {match.key}: {match.status}, {paper(match.best)} against {paper(match.runner_up)}: "
        f"{match.reason}"
    )


def near_miss(match: Match) -> str:
    """A lecture's near misses in a line: the papers refused for their date, and what it got instead."""
    refused = "; ".join(
        f"{c.anthology_id} ({c.scores.score:.2f}) refused: {c.verdict.reason}" for c in match.refused
    )
    got = f"linked to {match.anthology_id}" if match.anthology_id else f"left {match.status}"
    return f"lecture {match.key}: {refused}; {got}"


def _id_order(anthology_id: str) -> tuple[Any, ...]:
    """Anthology ids in natural order: ``2025.emnlp-main.2`` before ``2025.emnlp-main.10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", anthology_id))


def is_doi(text: str) -> bool:
    """Whether ``text`` is a DOI: ``10.<registrant>/<suffix>``, nothing around it."""
    return DOI.fullmatch(text) is not None


def safe_cell(text: str) -> str:
    """``text`` as a CSV cell no spreadsheet reads as a formula: after a ``'`` when it starts like one."""
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


@dataclass(frozen=True)
class LinksFile:
    """The rows of ``anthology-links.csv`` and what they left out: linked lectures whose id is not the
    Anthology's (no row), video DOIs that are not DOIs (an empty cell), and how many cells were written
    after a ``'``."""

    rows: list[LinkRow]
    invalid_ids: int = 0
    invalid_dois: int = 0
    neutralised: int = 0

    def entry(self) -> dict[str, int]:
        """The counts as the release's manifest holds them."""
        return {
            "rows": len(self.rows),
            "invalid_ids": self.invalid_ids,
            "invalid_dois": self.invalid_dois,
            "neutralised_cells": self.neutralised,
        }


def _link_row(record: Lecture) -> tuple[LinkRow | None, list[str]]:
    """The row of a linked lecture (None when its id is not the Anthology's), and what was wrong:
    ``id``, ``doi``, and one ``cell`` per cell neutralised."""
    anthology_id = str(record.anthology_id)
    if not is_anthology_id(anthology_id):
        return None, ["id"]
    doi = (record.video_doi or "").strip() or None
    wrong = [] if doi is None or is_doi(doi) else ["doi"]
    lecture_url, video_url = str(record.url), record.video_url or None
    row = LinkRow(
        anthology_id=anthology_id,
        lecture_url=safe_cell(lecture_url),
        video_url=safe_cell(video_url) if video_url else None,
        video_doi=None if wrong else doi,
    )
    wrong += ["cell" for cell in (lecture_url, video_url) if cell and safe_cell(cell) != cell]
    return row, wrong


def links_file(records: Iterable[Lecture]) -> LinksFile:
    """One row per linked lecture that is not withdrawn, in Anthology id order, every cell safe to open
    in a spreadsheet; with what was left out."""
    rows: list[LinkRow] = []
    wrong: list[str] = []
    for record in records:
        if has_value(record.anthology_id) and not record.withdrawn:
            row, found = _link_row(record)
            wrong += found
            rows += [row] if row is not None else []
    return LinksFile(
        rows=sorted(rows, key=lambda row: (_id_order(row.anthology_id), row.lecture_url)),
        invalid_ids=wrong.count("id"),
        invalid_dois=wrong.count("doi"),
        neutralised=wrong.count("cell"),
    )


def link_rows(records: Iterable[Lecture]) -> list[LinkRow]:
    """The rows of :func:`links_file`."""
    return links_file(records).rows


def links_csv(rows: Iterable[LinkRow]) -> str:
    """The CSV text: a header, then one line per row; an empty cell where there is no video. No cell
    starts like a formula (see :func:`safe_cell`)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(LINK_COLUMNS)
    for row in rows:
        cells = (row.anthology_id, row.lecture_url, row.video_url or "", row.video_doi or "")
        writer.writerow([safe_cell(cell) for cell in cells])
    return buffer.getvalue()


def read_links_csv(text: str) -> list[LinkRow]:
    """The rows of a links CSV; ValueError when its header or a row is not what :func:`links_csv` writes."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or tuple(header) != LINK_COLUMNS:
        raise ValueError(f"the header is {header!r}, not {list(LINK_COLUMNS)!r}")
    rows = []
    for number, cells in enumerate(reader, start=2):
        if len(cells) != len(LINK_COLUMNS) or not cells[0] or not cells[1]:
            raise ValueError(f"line {number} is not an id, a lecture URL, a video URL and a video DOI")
        rows.append(LinkRow(cells[0], cells[1], cells[2] or None, cells[3] or None))
    return rows
