"""One corpus of personal data and of what only looks like it (tests/fixtures/privacy_corpus.jsonl: the
input, the exact output expected, the kinds of text it applies to), run through every scrub the project
applies to abstracts, page text, sessions, events and transcripts, in the crawl and in a release."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from crawler.items import LectureItem, SessionItem
from crawler.pages.catalogue import label
from crawler.pipelines.privacy import PrivacyPipeline
from crawler.privacy.spoken import redact_spoken
from crawler.privacy.stored import strip_page_personal_data
from crawler.publish.records import scrubbed_record, scrubbed_transcript, session_details
from crawler.state.stage_transcripts import StagedTranscript
from crawler.transcripts import parse_subtitle_file
from tests.support.settings import project_crawler
from tests.test_publish_parquet import make_record
from tests.test_stage import record
from tests.test_stage_transcripts import full_transcript

CORPUS = Path(__file__).parent / "fixtures" / "privacy_corpus.jsonl"
CASES = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
KINDS = ("abstract", "page", "session", "event", "transcript")


def crawl_pipeline() -> PrivacyPipeline:
    return PrivacyPipeline.from_crawler(project_crawler(settings_dict={"STAGE_STATE_DIR": ""}))


def crawled_lecture(**fields: Any) -> Any:
    values = record("5", **fields)
    del values["content_sha256"]
    return crawl_pipeline().process_item(LectureItem(**values))


def crawled_abstract(text: str) -> str:
    return str(crawled_lecture(abstract=text).abstract)


def released_abstract(text: str) -> str:
    return str(scrubbed_record(make_record(1, abstract=text))["abstract"])


def crawled_page_block(text: str) -> str:
    item = crawled_lecture()
    item.page_blocks = [text]
    return str(crawl_pipeline().process_item(item).page_blocks[0])


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


def catalogue_event(text: str) -> str:
    return str(label(text))


def released_event(text: str) -> str:
    return str(scrubbed_record(make_record(1, event_name=text))["event_name"])


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


ENTRY_POINTS: dict[str, list[Callable[[str], str]]] = {
    "abstract": [crawled_abstract, released_abstract],
    "page": [crawled_page_block, stored_page],
    "session": [crawled_session, released_session],
    "event": [catalogue_event, released_event],
    "transcript": [parsed_transcript, spoken],
}


def test_the_corpus_holds_as_much_to_keep_as_to_remove_in_every_kind() -> None:
    assert len(CASES) >= 40
    kept = [case for case in CASES if case["input"] == case["expected"]]
    assert len(kept) * 2 >= len(CASES)
    assert all(set(case["kinds"]) <= set(KINDS) for case in CASES)
    assert all(case["kinds"] == list(KINDS) for case in kept), "what is kept is kept everywhere"


@pytest.mark.parametrize(
    ("kind", "scrub"),
    [(kind, scrub) for kind, scrubs in ENTRY_POINTS.items() for scrub in scrubs],
    ids=lambda value: value if isinstance(value, str) else value.__name__,
)
def test_every_entry_point_gives_the_corpus_exact_output(kind: str, scrub: Callable[[str], str]) -> None:
    wrong = []
    for case in CASES:
        if kind in case["kinds"]:
            said = scrub(case["input"])
            if said != case["expected"]:
                wrong.append((case["case"], case["input"], said, case["expected"]))
    assert wrong == []
