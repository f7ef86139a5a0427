"""The ``slides`` rows without a crawl: their stage lines written and read back (by the stage index and
by the last finished stage), which row a release takes for each document a lecture names, and the pure
decisions of the crawl's document requests (is it a PDF, why did it fail, is the byte budget spent)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response
from twisted.python.failure import Failure

from crawler.app.runner import PublishRequest, publish_staged
from crawler.middlewares.byte_budget import BYTE_BUDGET_SPENT, budget_spent
from crawler.privacy.rule import PRIVACY_RULE
from crawler.publish.previous import read_previous_release
from crawler.publish.removals import Redactions
from crawler.publish.slides import DocKey, SlidesTable
from crawler.schema import SLIDES_FIELDS, Lecture, Slides, listed_documents
from crawler.schema.check import validate_record
from crawler.schema.sources import NOT_FOUND
from crawler.spiders.slide_documents import document_problem, pdf_answer
from crawler.state.fsutil import DamagedFile
from crawler.state.previous_stage import PreviousStage
from crawler.state.stage import StageWriter, start_stage
from crawler.state.stage_index import index_stage
from crawler.state.stage_rows import PRIVACY_RULE_KEY, SLIDES_ROWS, StagedSlides
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


def lecture_slides(
    lec: Lecture, staged: list[dict[DocKey, Slides]], published: list[dict[DocKey, Slides]]
) -> list[Slides]:
    """The rows a release takes for a lecture from its ids' staged rows and their published ones."""
    table = SlidesTable()
    return table.lecture_rows(lec, table.united(staged), table.united(published))


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
    assert index.slides.rows_of("7") == expected
    assert index.transcripts.rows_of("7") == []
    start_stage(state)  # the finished stage moves aside: the next crawl carries from it
    assert PreviousStage(state).slides.rows_of("7") == expected


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
    assert index.slides.rows_of("7") == []


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
    # Between the answers of one document under two ids, the evidence rule: a failed read under the kept
    # id gives way to the other id's text, a 404 does not.
    for problem, pages in (("timed_out", row().pages), (NOT_FOUND, None)):
        staged = [{("slides", DECK): unread(problem)}, under_nine]
        found = lecture_slides(kept, staged, [{}, {}])
        assert [(r.lecture_id, r.pages) for r in found] == [("7", pages)], f"{problem=}"


def test_a_row_loses_the_redacted_authors_names_and_addresses_of_earlier_rules() -> None:
    names = Redactions.parse(["José Müller"])
    assert SlidesTable(redactions=names).published(row(), lecture()).pages == [
        "Título:",
        "",
        "Rank-1 updates",
    ]
    older = row(pages=["Contact: jane.doe@uni.edu, Tel. +44 20 7946 0958"])
    again = SlidesTable().redacted_again(older)
    assert again.pages == ["Contact: [email removed], Tel. [phone removed]"]
    assert again.text == again.pages[0]
    assert (
        SlidesTable().redacted_again(row()) is not None
        and SlidesTable().redacted_again(row()).pages == row().pages
    )


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


def test_a_release_whose_slides_were_redacted_under_earlier_rules_is_changed(tmp_path: Path) -> None:
    # A row the release holds with what today's rules take out (stood in for by a staged line that says
    # it is redacted under the rules in force, and a manifest that then names no rule): the next night
    # stages nothing new, yet its rows differ from the published ones, so the night is no "unchanged".
    state, out = tmp_path / "state", tmp_path / "out"
    older = row(pages=["Contact: jane.doe@uni.edu"], text="Contact: jane.doe@uni.edu")
    writer = StageWriter(state)
    writer.open()
    writer.write_lecture(lecture())
    writer.write_row(SLIDES_ROWS, older, {PRIVACY_RULE_KEY: PRIVACY_RULE})
    writer.close(complete=True)
    publish_staged(PublishRequest(state, out, "slides-rules", force=True))
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    assert pq.read_table(out / "data/slides/event-502.parquet").column("pages").to_pylist() == [older.pages]
    assert SlidesTable(previous=read_previous_release(out)).changed([lecture()]) is False
    del manifest["slides_privacy_rule"]
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    assert SlidesTable(previous=read_previous_release(out)).changed([lecture()]) is True


def test_a_damaged_slides_file_is_named_before_anything_is_built(tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "out"
    writer = StageWriter(state)
    writer.open()
    writer.write_lecture(lecture())
    writer.write_row(SLIDES_ROWS, row())
    writer.close(complete=True)
    publish_staged(PublishRequest(state, out, "slides-damaged", force=True))
    damaged = out / "data/slides/event-502.parquet"
    # Edited in place, still Parquet: named as edited, so that the next night writes its event again.
    table = pq.read_table(damaged)
    pq.write_table(table.set_column(table.schema.get_field_index("text"), "text", pa.array(["x"])), damaged)
    assert read_previous_release(out).edited_files() == ["data/slides/event-502.parquet"]
    damaged.write_bytes(damaged.read_bytes()[:100])
    with pytest.raises(DamagedFile, match=r"event-502\.parquet is damaged \(unreadable Parquet"):
        read_previous_release(out)


def test_a_lecture_moved_to_another_event_keeps_its_published_rows_when_none_is_staged(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    for night, (event_id, staged) in enumerate((("502", [row()]), ("469", []))):
        state = tmp_path / f"state-{night}"
        writer = StageWriter(state)
        writer.open()
        writer.write_lecture(lecture(event_id=event_id))
        for document in staged:
            writer.write_row(SLIDES_ROWS, document, {PRIVACY_RULE_KEY: PRIVACY_RULE})
        writer.close(complete=True)
        publish_staged(PublishRequest(state, out, "slides-moved", force=True))
    rows = pq.read_table(out / "data/slides/event-469.parquet").to_pylist()
    assert [(r["lecture_id"], r["event_id"], r["document"], r["pages"]) for r in rows] == [
        ("7", "469", "slides", row().pages)
    ]
    assert not (out / "data/slides/event-502.parquet").exists()
