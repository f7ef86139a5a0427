"""One corpus of personal data and of what only looks like it (tests/fixtures/privacy_corpus.jsonl: the
input, the exact output expected, what it holds), run through every scrub the project applies to the
texts it keeps: abstracts, titles, page text, sessions, events, affiliations and transcripts, in the crawl
and in a release, and a plain :func:`crawler.privacy.scrub.scrub_text`. Every case applies to every kind
of text: an address or a phone number is removed in whatever form and wherever it appears, and what is
kept is kept everywhere.

A case holds nothing (it must be kept as it is), or any of "written address", "spoken address" and
"phone number". The pages stored in the HTTP cache are stripped of written addresses only (what is read
from them is scrubbed like every text before it is kept): they take the cases of written addresses and
those to keep.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from crawler.items import LectureItem, SessionItem
from crawler.pages.catalogue import label
from crawler.pipelines.privacy import PrivacyPipeline
from crawler.privacy.scrub import scrub_text
from crawler.privacy.spoken import redact_spoken
from crawler.privacy.stored import strip_page_personal_data
from crawler.publish.records import scrubbed_record, scrubbed_transcript, session_details
from crawler.sitetools.safe_text import kept_text
from crawler.state.stage_rows import StagedTranscript
from crawler.transcripts import parse_subtitle_file
from tests.support.settings import project_crawler
from tests.test_publish_parquet import make_record
from tests.test_stage import record
from tests.test_stage_transcripts import full_transcript

CORPUS = Path(__file__).parent / "fixtures" / "privacy_corpus.jsonl"
CASES = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
KINDS = ("abstract", "title", "page", "session", "event", "affiliation", "transcript", "text")
HOLDS = frozenset(["written address", "spoken address", "phone number"])


@functools.cache
def crawl_pipeline() -> PrivacyPipeline:
    """The crawl's privacy step, built once: building a crawler costs more than the cases it scrubs."""
    return PrivacyPipeline.from_crawler(project_crawler(settings_dict={"STAGE_STATE_DIR": ""}))


def crawled_lecture(**fields: Any) -> Any:
    values = record("5", **fields)
    del values["content_sha256"]
    return crawl_pipeline().process_item(LectureItem(**values))


def crawled_abstract(text: str) -> str:
    return str(crawled_lecture(abstract=text).abstract)


def released_abstract(text: str) -> str:
    return str(scrubbed_record(make_record(1, abstract=text))["abstract"])


def crawled_title(text: str) -> str:
    return str(crawled_lecture(title=text).title)


def released_title(text: str) -> str:
    return str(scrubbed_record(make_record(1, title=text))["title"])


def crawled_page_block(text: str) -> str:
    item = crawled_lecture()
    item.page_blocks = [text]
    return str(crawl_pipeline().process_item(item).page_blocks[0])


def crawled_page_text(text: str) -> str:
    return str(crawled_lecture(text=text).text)


def released_page_text(text: str) -> str:
    return str(scrubbed_record(make_record(1, text=text))["text"])


def stored_page(text: str) -> str:
    head, tail = "<html><body><main><p>", "</p></main></body></html>"
    page = strip_page_personal_data(head + text + tail)
    assert page.startswith(head) and page.endswith(tail), page
    return page[len(head) : -len(tail)]


def crawled_session(text: str) -> str:
    item = SessionItem(session_id="9001", event_id="502", name=text, description=text)
    out = crawl_pipeline().process_item(item)
    assert out["name"] == out["description"]
    return str(out["description"])


def released_session(text: str) -> str:
    (detail,) = session_details([{"session_id": "9001", "name": text, "description": text}]).values()
    assert detail["name"] == detail["description"]
    return str(detail["description"])


def released_session_name(text: str) -> str:
    return str(scrubbed_record(make_record(1, session_name=text))["session_name"])


def kept_event(text: str) -> str:
    """An event's name as the site tools keep it from the library's listing."""
    return kept_text(str(label(text)))


def crawled_event(text: str) -> str:
    return str(crawled_lecture(event_name=text).event_name)


def released_event(text: str) -> str:
    return str(scrubbed_record(make_record(1, event_name=text))["event_name"])


def author(affiliation: str) -> dict[str, Any]:
    return {"name": "Jane Doe", "affiliations": ["Example Labs", affiliation], "orcid": "0000-0002-1825-0097"}


def crawled_affiliation(text: str) -> str:
    (out,) = crawled_lecture(authors=[author(text)]).authors
    assert out["affiliations"][0] == "Example Labs"
    return str(out["affiliations"][1])


def released_affiliation(text: str) -> str:
    (out,) = scrubbed_record(make_record(1, authors=[author(text)]))["authors"]  # type: ignore[misc]
    return str(out["affiliations"][1])


def parsed_transcript(text: str) -> str:
    """A track that says ``text`` in one cue, read, scrubbed by the crawl and by a release."""
    vtt = f"WEBVTT\n\n00:00:01.000 --> 00:00:04.000\n{text}\n".encode()
    track = parse_subtitle_file(vtt, auto_generated=False, max_bytes=1 << 20)
    transcript = full_transcript(text=track.text, segments=track.segments)
    crawled = crawl_pipeline().process_item(StagedTranscript(transcript, {}))
    released = scrubbed_transcript(crawled.record)
    (segment,) = released.segments
    assert segment["text"] == released.text
    return str(released.text)


def spoken(text: str) -> str:
    return redact_spoken(text)[0]


def plain(text: str) -> str:
    return scrub_text(text)[0]


ENTRY_POINTS: dict[str, list[Callable[[str], str]]] = {
    "abstract": [crawled_abstract, released_abstract],
    "title": [crawled_title, released_title],
    "page": [crawled_page_block, crawled_page_text, released_page_text],
    "session": [crawled_session, released_session, released_session_name],
    "event": [kept_event, crawled_event, released_event],
    "affiliation": [crawled_affiliation, released_affiliation],
    "transcript": [parsed_transcript, spoken],
    "text": [plain],
}


def test_the_corpus_holds_as_much_to_keep_as_to_remove() -> None:
    assert set(ENTRY_POINTS) == set(KINDS)
    assert len(CASES) >= 100
    assert len({case["case"] for case in CASES}) == len(CASES), "every case has a name of its own"
    kept = [case for case in CASES if not case["holds"]]
    assert len(kept) * 2 >= len(CASES)
    for case in CASES:
        assert set(case) == {"case", "input", "expected", "holds"}, case["case"]
        assert set(case["holds"]) <= HOLDS, case["case"]
        assert (case["input"] == case["expected"]) == (not case["holds"]), case["case"]
    removed = [case for case in CASES if case["holds"]]
    for holds in HOLDS:
        assert sum(holds in case["holds"] for case in removed) >= 10, holds


@pytest.mark.parametrize(
    ("kind", "scrub"),
    [(kind, scrub) for kind, scrubs in ENTRY_POINTS.items() for scrub in scrubs],
    ids=lambda value: value if isinstance(value, str) else value.__name__,
)
def test_every_entry_point_gives_the_corpus_exact_output(kind: str, scrub: Callable[[str], str]) -> None:
    wrong = []
    for case in CASES:
        said = scrub(case["input"])
        if said != case["expected"]:
            wrong.append((case["case"], case["input"], said, case["expected"]))
    assert wrong == [], kind


def test_a_stored_page_loses_every_written_address_and_keeps_what_is_no_address() -> None:
    wrong = []
    for case in CASES:
        if set(case["holds"]) <= {"written address"}:
            said = stored_page(case["input"])
            if said != case["expected"]:
                wrong.append((case["case"], case["input"], said, case["expected"]))
    assert wrong == []
