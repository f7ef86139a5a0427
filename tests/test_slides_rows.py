"""The ``slides`` rows without a crawl: their stage lines written and read back (by the stage index and
by the last finished stage), which row a release takes for each document a lecture names, and the pure
decisions of the crawl's document requests (is it a PDF, why did it fail, is the byte budget spent)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response
from twisted.python.failure import Failure

from crawler.middlewares.byte_budget import BYTE_BUDGET_SPENT, budget_spent
from crawler.publish.removals import Redactions
from crawler.publish.slides import lecture_slides, published_row, redacted_again
from crawler.schema import SLIDES_FIELDS, Lecture, Slides, listed_documents
from crawler.schema.check import validate_record
from crawler.spiders.slide_documents import document_problem, pdf_answer
from crawler.state.previous_stage import PreviousStage
from crawler.state.stage import StageWriter, start_stage
from crawler.state.stage_index import index_stage
from crawler.state.stage_slides import SLIDES_ROWS, StagedSlides
from tests.test_stage import record

DECK = "https://assets.underline.io/lecture/7/slideshow/a.pdf"
POSTER = "https://assets.underline.io/lecture/7/poster_document/a.pdf"
WHEN = datetime(2026, 12, 1, 3, 4, 5, tzinfo=UTC)


def row(**changes: Any) -> Slides:
    values: dict[str, Any] = {
        "lecture_id": "7",
        "event_id": "502",
        "document": "slides",
        "url": DECK,
        "pages": ["Título: José Müller", "", "Rank-1 updates"],
        "page_count": 3,
        "text": "Título: José Müller\n\n\n\nRank-1 updates",
        "bytes": 12345,
        "sha256": "ab" * 32,
        "problem": None,
        "fetched_at": WHEN,
    }
    values.update(changes)
    return Slides(**values)


def unread(problem: str, **changes: Any) -> Slides:
    return row(pages=None, page_count=None, text=None, bytes=None, sha256=None, problem=problem, **changes)


def lecture(**changes: Any) -> Lecture:
    return Lecture.from_json({**record("7"), "slides_url": DECK, "poster_url": POSTER, **changes})


def test_a_row_without_pages_stays_null_through_json_and_the_schema_takes_both() -> None:
    for found in (row(), unread("encrypted")):
        assert validate_record(found.to_json(), SLIDES_FIELDS) == [], found
        assert Slides.from_json(found.to_json()) == found, found
    assert unread("not_found").to_json()["pages"] is None
    # A PDF of no page is not one that could not be read.
    assert Slides.from_json(row(pages=[], page_count=0, text="").to_json()).pages == []


def test_document_lines_read_back_from_the_stage_and_from_the_last_stage(tmp_path: Path) -> None:
    state = tmp_path / "state"
    writer = StageWriter(state)
    writer.open()
    writer.write_lecture(Lecture.from_json(record("7")))
    validators = {"etag": '"e1"', "last_modified": "Tue, 01 Dec 2026 03:04:05 GMT"}
    writer.write_row(SLIDES_ROWS, unread("failed"), None)
    writer.write_row(SLIDES_ROWS, row(), validators)  # the same document again: the last line wins
    writer.write_row(SLIDES_ROWS, unread("not_found", document="poster", url=POSTER), None)
    writer.close(complete=True)
    line = json.loads(writer.path.read_text(encoding="utf-8").splitlines()[1])
    assert line["kind"] == "slides" and line["record"]["pages"] is None

    index = index_stage(state)
    assert index.bad_lines == 0
    expected = [
        StagedSlides(unread("not_found", document="poster", url=POSTER), {}),
        StagedSlides(row(), validators),
    ]
    assert index.slides_of("7") == expected
    assert index.transcripts_of("7") == []
    start_stage(state)  # the finished stage moves aside: the next crawl carries from it
    assert PreviousStage(state).slides_of("7") == expected


def test_a_bad_slides_line_is_counted_and_never_taken(tmp_path: Path) -> None:
    state = tmp_path / "state"
    writer = StageWriter(state)
    writer.open()
    writer.write_lecture(Lecture.from_json(record("7")))
    bad = row().to_json()
    bad["page_count"] = "three"
    writer._write_lines([json.dumps({"kind": "slides", "record": bad})])
    writer.close(complete=True)
    index = index_stage(state)
    assert index.bad_lines == 1
    assert index.slides_of("7") == []


def test_the_documents_a_lecture_names_are_its_rows_in_order() -> None:
    assert listed_documents(lecture()) == [("slides", DECK), ("poster", POSTER)]
    assert listed_documents(lecture(slides_url=None)) == [("poster", POSTER)]
    assert listed_documents(lecture(slides_url=None, poster_url=None)) == []


def test_a_release_takes_the_staged_row_else_the_published_one_on_no_evidence() -> None:
    lec = lecture()
    published = {("slides", DECK): row(), ("poster", POSTER): row(document="poster", url=POSTER)}
    # Staged rows without text whose answer was no evidence: the published text stands.
    staged = {("slides", DECK): unread("unreadable"), ("poster", POSTER): unread("failed", document="poster")}
    assert lecture_slides(lec, [staged], [published]) == [
        row(),
        row(document="poster", url=POSTER),
    ]
    # The file's own 404 takes the text away.
    gone = {("slides", DECK): unread("not_found")}
    assert lecture_slides(lec, [gone], [published])[0] == unread("not_found")
    # A deck at a new URL is not the old deck: the old row is no row of it.
    moved = lecture(slides_url=DECK + "?v=2", poster_url=None)
    assert lecture_slides(moved, [{}], [published]) == []
    # A lecture that names no document has no row, whatever was staged.
    assert lecture_slides(lecture(slides_url=None, poster_url=None), [staged], [published]) == []


def test_a_merged_record_takes_its_merged_ids_rows_as_its_own() -> None:
    kept = lecture(lecture_id="7", alternate_ids=["9"], poster_url=None)
    under_nine = {("slides", DECK): row(lecture_id="9", event_id="469")}
    rows = lecture_slides(kept, [{}, under_nine], [{}, {}])
    assert [(r.lecture_id, r.event_id, r.pages) for r in rows] == [("7", "502", row().pages)]


def test_a_row_loses_the_redacted_authors_names_and_addresses_of_earlier_rules() -> None:
    names = Redactions.parse(["José Müller"])
    assert published_row(row(), lecture(), names).pages == ["Título:", "", "Rank-1 updates"]
    older = row(pages=["Contact: jane.doe@uni.edu, Tel. +44 20 7946 0958"])
    again = redacted_again(older)
    assert again.pages == ["Contact: [email removed], Tel. [phone removed]"]
    assert again.text == again.pages[0]
    assert redacted_again(row()) is not None and redacted_again(row()).pages == row().pages


def _response(body: bytes, content_type: str = "application/pdf") -> Response:
    request = Request(DECK)
    if content_type.startswith("text/html"):
        return HtmlResponse(DECK, body=body, headers={"Content-Type": content_type}, request=request)
    return Response(DECK, body=body, headers={"Content-Type": content_type}, request=request)


def test_an_html_page_is_no_pdf_whatever_it_is_served_as() -> None:
    assert pdf_answer(_response(b"%PDF-1.7\n..."))
    assert pdf_answer(_response(b"\r\n  junk before %PDF-1.4\n", "text/html"))
    assert not pdf_answer(_response(b"<!DOCTYPE html><html>maintenance</html>"))
    assert not pdf_answer(_response(b"<html><body>log in</body></html>", "application/pdf"))
    assert not pdf_answer(_response(b"We'll be back", "text/html; charset=utf-8"))
    # Not HTML and not a PDF: the reader names it (unreadable).
    assert pdf_answer(_response(b"PK\x03\x04zip", "application/pdf"))


def test_a_request_the_byte_budget_held_back_is_waiting() -> None:
    failure = Failure(IgnoreRequest(BYTE_BUDGET_SPENT))
    failure.request = Request(DECK)  # type: ignore[attr-defined]
    assert document_problem(failure) == "waiting"
    robots = Failure(IgnoreRequest("Forbidden by robots.txt"))
    robots.request = Request(DECK)  # type: ignore[attr-defined]
    assert document_problem(robots) == "robots"
    assert not budget_spent(0, 100) and budget_spent(100, 100) and not budget_spent(10**12, 0)


@pytest.mark.parametrize(
    "problem", ["encrypted", "unreadable", "too_large", "timed_out", "robots", "waiting"]
)
def test_every_problem_but_gone_keeps_a_published_text(problem: str) -> None:
    published = {("slides", DECK): row()}
    staged = {("slides", DECK): unread(problem)}
    assert lecture_slides(lecture(poster_url=None), [staged], [published]) == [row()]
