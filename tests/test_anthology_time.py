"""Papers of a talk's own time: the rule on hand-made dates, the Anthology's volume metadata as the reader
takes it, and the links real EMNLP 2025 papers get when later copies, other venues and journals are in
the Anthology's folder too (``tests/scenarios/anthology.py`` writes their collection files)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from crawler import schema
from crawler.anthology.links import link_records
from crawler.anthology.match import LectureText, Match, PaperIndex, match_lectures
from crawler.anthology.reader import Paper, read_papers, year_of_id
from crawler.anthology.timing import TimeAndPlace, event_time, month_number, paper_in_time
from tests.scenarios.anthology import Volume, collection_xml, later_copies, with_abstract_of
from tests.test_publish_parquet import make_record

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "anthology"
EMNLP = FIXTURES / "2025.emnlp.xml"
REAL, _ = read_papers(FIXTURES)
BY_ID = {p.anthology_id: p for p in REAL}
# EMNLP 2025 was held in Suzhou from 5 to 9 November 2025.
HELD = datetime(2025, 11, 6, 9, 30, tzinfo=UTC)
AT_EMNLP = event_time("EMNLP 2025", HELD)
PAPER = BY_ID["2025.emnlp-main.26"]
# Another real paper, whose abstract a later paper under the same title takes.
DONOR = BY_ID["2025.emnlp-main.40"]


def event(year: int, month: int | None, *events: str) -> TimeAndPlace:
    return TimeAndPlace(year, month, frozenset(events))


def paper_time(
    year: int | None, month: int | None = None, *events: str, journal: bool = False
) -> TimeAndPlace:
    return TimeAndPlace(year, month, frozenset(events), journal)


@pytest.mark.parametrize(
    ("at", "paper", "kind"),
    [
        # The event's own volumes, whatever their month.
        (event(2025, 11, "emnlp-2025"), paper_time(2025, 12, "emnlp-2025"), "own_event"),
        # After the event: a later year, or a later month of its year.
        (event(2025, 11, "emnlp-2025"), paper_time(2026, 7, "acl-2026"), "later"),
        (event(2025, 11, "emnlp-2025"), paper_time(2026, journal=True), "later"),
        (event(2025, 11, "emnlp-2025"), paper_time(2025, 12, "coling-2025"), "later"),
        (event(2025, None, "emnlp-2025"), paper_time(2026, 1, "eacl-2026"), "later"),
        # Before it, another venue.
        (event(2025, 11, "emnlp-2025"), paper_time(2025, 7, "acl-2025"), "before"),
        (event(2025, 11, "emnlp-2025"), paper_time(2025, 11, "ijcnlp-2025"), "before"),
        (event(2025, 11, "emnlp-2025"), paper_time(2019, None), "before"),
        # A month unknown on either side is read the way that keeps the paper.
        (event(2025, None, "emnlp-2025"), paper_time(2025, 12, "coling-2025"), "before"),
        (event(2025, 11, "emnlp-2025"), paper_time(2025, None, "wmt-2025"), "before"),
        # Journals: within the 12 months before the event, not 13.
        (event(2025, 11), paper_time(2024, 11, journal=True), "journal"),
        (event(2025, 11), paper_time(2024, 10, journal=True), "journal_too_old"),
        (event(2025, 11), paper_time(2025, None, journal=True), "journal"),
        (event(2025, 11), paper_time(2024, None, journal=True), "journal"),
        (event(2025, 11), paper_time(2023, None, journal=True), "journal_too_old"),
        (event(2026, 1), paper_time(2024, None, journal=True), "journal_too_old"),
        # Nothing to judge by.
        (None, paper_time(2026, 7), "undated"),
        (event(2025, 11), paper_time(None), "undated"),
    ],
)
def test_paper_in_time(at: TimeAndPlace | None, paper: TimeAndPlace, kind: str) -> None:
    verdict = paper_in_time(at, paper)
    assert verdict.kind == kind
    assert verdict.taken == (kind not in ("later", "journal_too_old"))
    assert verdict.own_event == (kind == "own_event")


def test_the_reasons_name_both_dates() -> None:
    assert paper_in_time(AT_EMNLP, paper_time(2026, 7, "acl-2026")).reason == (
        "published July 2026, after the event (November 2025)"
    )
    assert paper_in_time(AT_EMNLP, paper_time(2023, journal=True)).reason == (
        "a journal paper of 2023, more than 12 months before the event (November 2025)"
    )


@pytest.mark.parametrize(
    ("name", "held_at", "expected"),
    [
        ("EMNLP 2025", HELD, TimeAndPlace(2025, 11, frozenset({"emnlp-2025"}))),
        ("EMNLP2025", None, TimeAndPlace(2025, None, frozenset({"emnlp-2025"}))),
        ("LREC-COLING 2024", None, TimeAndPlace(2024, None, frozenset({"lrec-2024", "coling-2024"}))),
        # A lecture put up after its event's year is still the event's: its date gives no month.
        ("EMNLP 2024", HELD, TimeAndPlace(2024, None, frozenset({"emnlp-2024"}))),
        ("Keynotes", HELD, TimeAndPlace(2025, 11, frozenset({"keynotes-2025"}))),
        ("Keynotes", None, None),
        ("", None, None),
    ],
)
def test_event_time(name: str, held_at: datetime | None, expected: TimeAndPlace | None) -> None:
    assert event_time(name, held_at) == expected


@pytest.mark.parametrize(
    ("text", "month"),
    [("November", 11), ("Nov", 11), ("june-july", 6), ("7", 7), ("13", None), ("Spring", None), ("", None)],
)
def test_month_number(text: str, month: int | None) -> None:
    assert month_number(text) == month


@pytest.mark.parametrize(
    ("anthology_id", "year"),
    [("2025.emnlp-main.1", 2025), ("P19-1001", 2019), ("C69-0101", 1969), ("W18", 2018), ("x", None)],
)
def test_year_of_id(anthology_id: str, year: int | None) -> None:
    assert year_of_id(anthology_id) == year


def write(folder: Path, collections: dict[str, str]) -> list[Paper]:
    """The collection files ``{collection id: XML}`` in ``folder``, read."""
    folder.mkdir(parents=True, exist_ok=True)
    for collection_id, text in collections.items():
        (folder / f"{collection_id}.xml").write_text(text, encoding="utf-8")
    papers, _ = read_papers(folder)
    return papers


def test_the_real_volumes_are_dated_and_placed_at_their_event() -> None:
    assert {(p.volume_id, p.year, p.month, p.journal, p.events) for p in REAL} == {
        ("2025.emnlp-main", 2025, 11, False, ("emnlp-2025",)),
        ("2025.emnlp-tutorials", 2025, 11, False, ("emnlp-2025",)),
    }


def test_journals_findings_workshops_and_colocated_volumes_as_the_reader_takes_them(tmp_path: Path) -> None:
    papers = write(
        tmp_path,
        {
            "2025.emnlp": collection_xml(
                "2025.emnlp",
                [Volume("demos", 2025, (DONOR,), "November", ("emnlp",))],
                event=("emnlp-2025", ["2025.findings-emnlp", "2025.wmt-1"]),
            ),
            "2025.findings": collection_xml(
                "2025.findings", [Volume("emnlp", 2025, (PAPER,), "November", ("findings",))]
            ),
            "2025.wmt": collection_xml("2025.wmt", [Volume("1", 2025, (PAPER,), "November", ("wmt", "ws"))]),
            "2024.tacl": collection_xml("2024.tacl", [Volume("1", 2024, (PAPER,), None, ("tacl",), True)]),
            # A CL issue names its month; an old volume may give no <year>: its id's is taken.
            "2024.cl": collection_xml("2024.cl", [Volume("4", 2024, (PAPER,), "December", ("cl",))]),
        },
    )
    found = {p.anthology_id: (p.year, p.month, p.journal, p.events) for p in papers}
    assert found == {
        "2025.emnlp-demos.1": (2025, 11, False, ("emnlp-2025",)),
        "2025.findings-emnlp.1": (2025, 11, False, ("emnlp-2025",)),
        "2025.wmt-1.1": (2025, 11, False, ("emnlp-2025", "wmt-2025")),
        "2024.tacl-1.1": (2024, None, True, ("tacl-2024",)),
        "2024.cl-4.1": (2024, 12, True, ("cl-2024",)),
    }


def talk(paper: Paper, at: TimeAndPlace | None = AT_EMNLP, key: str = "1") -> LectureText:
    """The talk of ``paper``, as the site lists it, given at ``at``."""
    return LectureText(key, paper.title, tuple(a.name for a in paper.authors), paper.abstract, at)


def one(papers: list[Paper], lecture: LectureText) -> Match:
    (found,) = match_lectures(PaperIndex(papers), [lecture])
    return found


def later_ones(tmp_path: Path, *, with_the_right_one: bool) -> list[Paper]:
    """A year-later ACL paper that is an exact copy of ``PAPER``, a year-later TACL paper of the same
    title and people with another abstract, and the real EMNLP 2025 proceedings with ``PAPER`` or
    without it."""
    text = EMNLP.read_text(encoding="utf-8")
    if not with_the_right_one:
        start = text.index('    <paper id="26">')
        text = text[:start] + text[text.index("</paper>", start) + len("</paper>\n") :]
    return write(
        tmp_path,
        {
            "2025.emnlp": text,
            "2026.acl": collection_xml("2026.acl", [Volume("long", 2026, (PAPER,), "July", ("acl",))]),
            "2026.tacl": collection_xml(
                "2026.tacl", [Volume("1", 2026, (with_abstract_of(PAPER, DONOR),), None, ("tacl",), True)]
            ),
        },
    )


def test_a_later_paper_is_refused_even_when_it_is_the_only_candidate(tmp_path: Path) -> None:
    papers = later_ones(tmp_path, with_the_right_one=False)
    assert "2025.emnlp-main.26" not in {p.anthology_id for p in papers}
    found = one(papers, talk(PAPER))
    assert (found.status, found.anthology_id) == ("unmatched", None)
    assert [c.anthology_id for c in found.refused] == ["2026.acl-long.1", "2026.tacl-1.1"]
    assert found.reason == "2026.acl-long.1 published July 2026, after the event (November 2025)"
    assert found.refused[1].verdict.reason == "published 2026, after the event (November 2025)"


def test_the_talks_own_paper_is_linked_and_the_later_ones_counted(tmp_path: Path) -> None:
    papers = later_ones(tmp_path, with_the_right_one=True)
    found = one(papers, talk(PAPER))
    assert (found.status, found.anthology_id) == ("linked", "2025.emnlp-main.26")
    assert [c.anthology_id for c in found.refused] == ["2026.acl-long.1", "2026.tacl-1.1"]


def record(index: int, paper: Paper, event_name: str, held_at: str) -> schema.Lecture:
    fields: dict[str, Any] = {
        "title": paper.title,
        "abstract": paper.abstract,
        "authors": [{"name": a.name, "affiliations": [], "orcid": None} for a in paper.authors],
        "event_name": event_name,
        "held_at": held_at,
    }
    made = make_record(index, **fields)
    made["content_sha256"] = schema.content_sha256(made)
    return schema.Lecture.from_json(made)


def test_the_evidence_and_the_summary_count_the_near_misses(tmp_path: Path) -> None:
    papers = later_ones(tmp_path, with_the_right_one=True)
    records = [
        record(1, PAPER, "EMNLP 2025", "2025-11-06T09:30:00Z"),
        # A talk of the year before: its paper is the later one, never its own.
        record(2, DONOR, "EMNLP 2024", "2024-11-13T10:00:00Z"),
    ]
    (linked, before), summary = link_records(records, papers)
    assert linked.anthology_id == "2025.emnlp-main.26"
    assert linked.anthology_match is not None and linked.anthology_match["refused_for_date"] == 2
    assert (before.anthology_id, before.anthology_match) == (None, None)
    assert summary.refused_for_date == 2
    tacl = next(c for c in one(papers, talk(PAPER)).refused if c.anthology_id == "2026.tacl-1.1")
    assert summary.refused == (
        f"lecture {linked.lecture_id}: 2026.acl-long.1 (1.00) refused: published July 2026, after the "
        f"event (November 2025); 2026.tacl-1.1 ({tacl.scores.score:.2f}) refused: published 2026, after "
        "the event (November 2025); linked to 2025.emnlp-main.26",
        f"lecture {before.lecture_id}: 2025.emnlp-main.40 (1.00) refused: published November 2025, after "
        "the event (November 2024); left unmatched",
    )
    assert summary.line().endswith("; 2 lectures with a paper refused for its date")
    assert summary.as_dict()["refused_for_date"] == 2
    assert 0.8 <= tacl.scores.score < 1.0


def test_the_events_own_volume_comes_before_another_venue_of_the_same_year(tmp_path: Path) -> None:
    # The same paper in ACL 2025 (July) and EMNLP 2025 (November), both of the time of an EMNLP talk.
    acl = collection_xml("2025.acl", [Volume("long", 2025, (PAPER,), "July", ("acl",))])
    papers = write(tmp_path / "both", {"2025.acl": acl, "2025.emnlp": EMNLP.read_text(encoding="utf-8")})
    found = one(papers, talk(PAPER))
    assert (found.status, found.anthology_id, found.refused) == ("linked", "2025.emnlp-main.26", ())
    assert found.runner_up is not None and found.runner_up.anthology_id != "2025.acl-long.1"
    # The ACL talk of it gets ACL's: EMNLP's, four months later, is refused.
    at_acl = event_time("ACL 2025", datetime(2025, 7, 29, 14, 0, tzinfo=UTC))
    found = one(papers, talk(PAPER, at_acl))
    assert (found.status, found.anthology_id) == ("linked", "2025.acl-long.1")
    assert [c.anthology_id for c in found.refused] == ["2025.emnlp-main.26"]


def test_another_venues_paper_that_matches_clearly_better_still_wins(tmp_path: Path) -> None:
    # EMNLP 2025 holds the title and people with another abstract; ACL 2025 holds the talk's own text.
    emnlp = collection_xml(
        "2025.emnlp", [Volume("main", 2025, (with_abstract_of(PAPER, DONOR),), "November", ("emnlp",))]
    )
    acl = collection_xml("2025.acl", [Volume("long", 2025, (PAPER,), "July", ("acl",))])
    found = one(write(tmp_path, {"2025.emnlp": emnlp, "2025.acl": acl}), talk(PAPER))
    assert (found.status, found.anthology_id) == ("linked", "2025.acl-long.1")
    assert found.runner_up is not None and found.runner_up.anthology_id == "2025.emnlp-main.1"
    assert found.runner_up.verdict.own_event and found.margin >= 0.08


def test_findings_and_a_colocated_workshop_are_the_events_own(tmp_path: Path) -> None:
    # The same paper in NAACL 2025 (April), Findings of EMNLP 2025 and a workshop held at EMNLP 2025.
    emnlp = collection_xml(
        "2025.emnlp",
        [Volume("demos", 2025, (DONOR,), "November", ("emnlp",))],
        event=("emnlp-2025", ["2025.findings-emnlp", "2025.wmt-1"]),
    )
    naacl = collection_xml("2025.naacl", [Volume("long", 2025, (PAPER,), "April", ("naacl",))])
    findings = collection_xml("2025.findings", [Volume("emnlp", 2025, (PAPER,), "November", ("findings",))])
    wmt = collection_xml("2025.wmt", [Volume("1", 2025, (PAPER,), "November", ("wmt", "ws"))])
    papers = write(tmp_path / "findings", {"2025.naacl": naacl, "2025.findings": findings})
    found = one(papers, talk(PAPER))
    assert (found.status, found.anthology_id) == ("linked", "2025.findings-emnlp.1")
    papers = write(tmp_path / "workshop", {"2025.emnlp": emnlp, "2025.naacl": naacl, "2025.wmt": wmt})
    found = one(papers, talk(PAPER))
    assert (found.status, found.anthology_id) == ("linked", "2025.wmt-1.1")
    # Without the event's <colocated> list the workshop is another venue: a tie with NAACL's.
    papers = write(tmp_path / "alone", {"2025.naacl": naacl, "2025.wmt": wmt})
    assert one(papers, talk(PAPER)).status == "ambiguous"


def test_a_journal_paper_within_the_12_months_before_the_event_is_taken_not_an_older_one(
    tmp_path: Path,
) -> None:
    def tacl(year: int) -> str:
        return collection_xml(f"{year}.tacl", [Volume("1", year, (PAPER,), None, ("tacl",), True)])

    papers = write(tmp_path / "tacl", {"2024.tacl": tacl(2024), "2023.tacl": tacl(2023)})
    found = one(papers, talk(PAPER))
    assert (found.status, found.anthology_id) == ("linked", "2024.tacl-1.1")
    assert [(c.anthology_id, c.verdict.reason) for c in found.refused] == [
        ("2023.tacl-1.1", "a journal paper of 2023, more than 12 months before the event (November 2025)")
    ]
    # Alone, the TACL paper of more than 12 months before is refused.
    papers = write(tmp_path / "old", {"2023.tacl": tacl(2023)})
    found = one(papers, talk(PAPER))
    assert (found.status, found.anthology_id) == ("unmatched", None)
    assert [c.anthology_id for c in found.refused] == ["2023.tacl-1.1"]
    # CL gives its issues' months: 12 months before the event is in, 13 is out.
    cl = collection_xml(
        "2024.cl",
        [
            Volume("3", 2024, (PAPER,), "October", ("cl",), True),
            Volume("4", 2024, (PAPER,), "November", ("cl",), True),
        ],
    )
    found = one(write(tmp_path / "cl", {"2024.cl": cl}), talk(PAPER))
    assert (found.status, found.anthology_id) == ("linked", "2024.cl-4.1")
    assert [c.anthology_id for c in found.refused] == ["2024.cl-3.1"]


def test_a_lecture_without_an_event_is_matched_as_before(tmp_path: Path) -> None:
    papers = later_ones(tmp_path, with_the_right_one=False)
    found = one(papers, talk(PAPER, None))
    assert (found.status, found.anthology_id, found.refused) == ("linked", "2026.acl-long.1", ())


def test_no_talk_of_emnlp_2025_is_linked_to_a_later_copy_of_its_paper(tmp_path: Path) -> None:
    """Every real EMNLP 2025 paper's talk, with a third of the papers published again a year later (an
    exact copy in ACL 2026, the same title and people with another abstract in TACL 2026): each talk
    gets its own paper, and each copy is a near miss."""
    acl, tacl = later_copies(REAL, seed=3)
    papers = write(
        tmp_path,
        {
            "2025.emnlp": EMNLP.read_text(encoding="utf-8"),
            "2026.acl": collection_xml("2026.acl", [acl]),
            "2026.tacl": collection_xml("2026.tacl", [tacl]),
        },
    )
    assert len(papers) == len(REAL) + 2 * len(acl.papers) and len(acl.papers) >= 40
    talks = [talk(p, key=p.anthology_id) for p in REAL]
    matches = match_lectures(PaperIndex(papers), talks)
    assert {m.key: m.anthology_id for m in matches} == {p.anthology_id: p.anthology_id for p in REAL}
    copied = {p.title for p in acl.papers}
    refused = {m.key: len(m.refused) for m in matches if m.refused}
    assert refused == {p.anthology_id: 2 for p in REAL if p.title in copied}
