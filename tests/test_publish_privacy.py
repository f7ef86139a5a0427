"""Whatever reaches a release is scrubbed of e-mail addresses, in every table, and the card counts
what looks like one in every table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler import schema
from crawler.privacy import email_like
from crawler.privacy.email_like import EMAIL_LIKE, EMAIL_LIKE_RULE, email_like_values
from crawler.privacy.emails import PLACEHOLDER, contains_email, scrub_emails
from crawler.privacy.scrub import scrub_text
from crawler.publish.records import lecture_rows, scrubbed_record, session_details
from crawler.publish.release import publish_release
from crawler.publish.summary_tables import build_tables
from tests.test_pipeline_privacy import replica_lectures
from tests.test_privacy_emails import (
    AT_FORMS,
    DOMAIN_FORMS,
    DOT_FORMS,
    LOCAL_FORMS,
    NOT_AT_FORMS,
    email_corpus,
)
from tests.test_publish_parquet import PROVENANCE, make_record, make_records

ADDRESS = "pc-chair@example.org"


def test_a_record_with_an_address_is_scrubbed_and_its_hash_computed_again() -> None:
    record = make_record(1, session_name=f"Orals (chair: {ADDRESS})", url=f"https://x/lecture/1-{ADDRESS}")
    clean = scrubbed_record(record)
    assert clean["session_name"] == "Orals (chair: [email removed])"
    assert clean["url"] == "https://x/lecture/1-email-removed"
    assert clean["content_sha256"] == schema.content_sha256(clean) != record["content_sha256"]
    plain = make_record(2)
    assert scrubbed_record(plain) is plain


def test_only_the_lectures_whose_texts_held_personal_data_get_a_new_hash() -> None:
    lectures = replica_lectures(300)
    # Every replica lecture (real abstracts, titles, authors, ORCID iDs, DOIs, timestamps) comes out of
    # the release's scrub as it went in: the same record, its hash its own.
    for lecture in lectures:
        assert scrubbed_record(lecture) is lecture, lecture["lecture_id"]
        assert schema.content_sha256(lecture) == lecture["content_sha256"], lecture["lecture_id"]
    said = dict(lectures[7])
    said["abstract"] = f"{said['abstract']} Data: jane dot doe at gmail."
    said["content_sha256"] = schema.content_sha256(said)
    called = dict(lectures[8])
    called["text"] = f"{called['text']}\n\nQuestions? Call +49 30 1234567."
    called["content_sha256"] = schema.content_sha256(called)
    rows = {row.lecture_id: row for row in lecture_rows([*lectures[:7], said, called, *lectures[9:]])}
    hashes = {lecture["lecture_id"]: lecture["content_sha256"] for lecture in lectures}
    changed = sorted(id_ for id_, row in rows.items() if row.content_sha256 != hashes[id_])
    assert changed == sorted([said["lecture_id"], called["lecture_id"]])
    assert rows[said["lecture_id"]].abstract == f"{lectures[7]['abstract']} Data: [email removed]."
    assert rows[called["lecture_id"]].text == f"{lectures[8]['text']}\n\nQuestions? Call [phone removed]."
    for row in rows.values():
        assert row.content_sha256 == schema.content_sha256(row.values()), row.lecture_id


def test_no_table_holds_an_address_given_in_records_or_session_details() -> None:
    records = [
        make_record(1, session_name=f"Orals (chair: {ADDRESS})", event_name=f"EMNLP {ADDRESS}"),
        make_record(
            2, authors=[{"name": f"Jane {ADDRESS}", "affiliations": [f"Lab {ADDRESS}"], "orcid": None}]
        ),
    ]
    details = session_details(
        [{"session_id": "9001", "event_id": "502", "name": ADDRESS, "description": f"Ask {ADDRESS}."}]
    )
    assert details["9001"]["description"] == "Ask [email removed]."
    tables = build_tables(lecture_rows(records), details)
    assert set(tables) == {"lectures", "events", "sessions", "authors"}
    for name, table in tables.items():
        assert ADDRESS not in str(table.to_pylist()), name
        assert email_like_values(table) == 0, name
    (session,) = [s for s in tables["sessions"].to_pylist() if s["session_id"] == "9001"]
    assert (session["session_name"], session["description"]) == (
        "Orals (chair: [email removed])",
        "Ask [email removed].",
    )


def test_the_card_count_reads_any_table_not_only_the_lectures() -> None:
    sessions = pa.table({"session_id": ["1", "2"], "description": [f"write to {ADDRESS}", None]})
    authors = pa.table({"affiliations": [[f"a {ADDRESS}", "b"], []]})
    assert email_like_values(sessions) == 1
    assert email_like_values(authors) == 1


def test_the_count_is_the_same_whichever_way_the_values_are_searched_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Strings, lists of strings (sliced) and struct members: searched in one array, then each alone.
    authors = pa.array(
        [[{"name": f"x {ADDRESS}", "orcid": None}], [{"name": "y", "orcid": ADDRESS}], []],
        pa.list_(pa.struct([("name", pa.string()), ("orcid", pa.string())])),
    )
    table = pa.table(
        {
            "title": [ADDRESS, "plain", None],
            "keywords": pa.array([["a"], [ADDRESS, ADDRESS, "b"], [f"c {ADDRESS}"], []]).slice(1),
            "authors": authors,
            "count": [1, 2, 3],
        }
    )
    assert email_like_values(table) == 6
    monkeypatch.setattr(email_like, "SEARCH_BYTES", 1)
    assert email_like_values(table) == 6


# Written like an address, in no form the written-address scrubber replaces: the card's count must see
# each. The first four are spoken forms (a spaced "@"), which every text's scrub removes (SPOKEN_LEFTOVERS).
LEFTOVERS = [
    "jane @example.org",
    "jane@ example.org",
    "jane @ example . org",
    "jane    @    example.org",
    "jane\n@\nexample.org",
    "jane@@example.org",
    "jane@example..org",
    "jane@example.c0m",
    "x@y.z1",
    "jane@[tag:anything]",
]
SPOKEN_LEFTOVERS = LEFTOVERS[:4]
# Prose and code with an "@" that is no address: neither replaced nor counted.
NOT_ADDRESSES = [
    "e.g. A @ B",
    "x = A @ B.T",
    "pass@1 and recall@75, precision@8.",
    "mAP@0.5 and Acc@1. Experiments show",
    "Follow us on @emnlp",
    "@dataclass\nclass Config:",
    "We evaluate on @article{smith2020}.",
    "C++ & C# @ 50%",
    "look at the dot product",
    "[email removed] and email-removed",
]


def one_column(values: list[str]) -> pa.Table:
    return pa.table({"value": values})


def test_the_card_counts_what_the_scrubber_leaves_and_not_prose() -> None:
    for value in LEFTOVERS:
        assert scrub_emails(value) == (value, 0), f"case {value!r}"
        assert email_like_values(one_column([value])) == 1, f"case {value!r}"
    for value in NOT_ADDRESSES:
        assert scrub_emails(value) == (value, 0), f"case {value!r}"
        assert scrub_text(value) == (value, 0), f"case {value!r}"
        assert email_like_values(one_column([value])) == 0, f"case {value!r}"


def test_a_texts_scrub_removes_the_spoken_leftovers_and_leaves_the_others_for_the_card() -> None:
    # What a record's texts are scrubbed with reads the spaced "@" as an address; what it still leaves
    # is what the card's count is there to show.
    for value in SPOKEN_LEFTOVERS:
        assert scrub_text(value) == (PLACEHOLDER, 1), f"case {value!r}"
    for value in LEFTOVERS[len(SPOKEN_LEFTOVERS) :]:
        assert scrub_text(value) == (value, 0), f"case {value!r}"
        assert email_like_values(one_column([value])) == 1, f"case {value!r}"


def test_the_card_counts_every_address_the_scrubber_replaces() -> None:
    # The count reads wider than the scrubber: whatever the scrubber would replace, it counts.
    # Spaces Python's expressions know and RE2's do not, a top-level domain of numbers that are no digits.
    unusual = ["jane@example [dot]\x1forg", "jane\x85[at]\x0bexample.org", "x@y.\u00b2\u00b3"]
    assert all(contains_email(text) for text in unusual)
    corpus = [text for text in [*unusual, *email_corpus()] if contains_email(text)]
    found = pc.match_substring_regex(pa.array(corpus), EMAIL_LIKE).to_pylist()
    assert [text for text, hit in zip(corpus, found, strict=True) if not hit] == []


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(
        st.one_of(
            st.sampled_from(
                AT_FORMS + NOT_AT_FORMS + DOT_FORMS + LOCAL_FORMS + DOMAIN_FORMS + [" ", '"', "'"]
            ),
            st.from_regex(r"[A-Za-z0-9._+-]{1,12}", fullmatch=True),
            st.text(max_size=8),
        ),
        max_size=14,
    )
)
def test_generated_text_the_scrubber_changes_is_counted(pieces: list[str]) -> None:
    text = "".join(pieces)
    if contains_email(text):
        assert email_like_values(one_column([text])) == 1


def card_count(release: Path) -> int:
    card = (release / "README.md").read_text(encoding="utf-8")
    found = re.search(r"that look like an e-mail address in this release:\n(\d+)\.", card)
    assert found is not None
    return int(found.group(1))


def values_holding(release: Path, needles: list[str]) -> int:
    """How many string values of the release's Parquet files hold one of ``needles``, read back."""
    count = 0
    for path in sorted((release / "data").rglob("*.parquet")):
        for column in pq.read_table(path).itercolumns():
            for value in column.to_pylist():
                strings = value if isinstance(value, list) else [value]
                count += any(isinstance(s, str) and any(n in s for n in needles) for s in strings)
    return count


def test_a_release_counts_the_addresses_its_parquet_holds_even_when_carried(tmp_path: Path) -> None:
    records = make_records()
    records[0] = make_record(11, title="Mail jane @ example . org")
    records[1] = make_record(10, keywords=["x@y.z1"])
    records[3] = make_record(8, abstract="Mail jane@@example.org")
    release = tmp_path / "release"
    publish_release(records, release, name="emnlp-2025", provenance=PROVENANCE)
    # The spoken form in the title is removed as any address is; the keyword and the abstract hold what
    # only looks like one.
    assert values_holding(release, ["jane @ example . org"]) == 0
    held = values_holding(release, ["jane@@example.org", "x@y.z1"])
    assert held == 2
    assert card_count(release) == 2
    # A release whose manifest kept a count from another detector: the next one counts again.
    manifest_path = release / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for entry in manifest["event_shards"].values():
        entry["email_like"] = 0
        entry.pop("email_like_rule", None)
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    publish_release(
        records, release, name="emnlp-2025", provenance={**PROVENANCE, "crawl_date": "2025-11-13"}
    )
    assert values_holding(release, ["jane@@example.org", "x@y.z1"]) == 2
    assert card_count(release) == 2
    kept = json.loads(manifest_path.read_text(encoding="utf-8"))["event_shards"]
    assert sorted((e["email_like"], e["email_like_rule"]) for e in kept.values()) == [
        (0, EMAIL_LIKE_RULE),
        (2, EMAIL_LIKE_RULE),
    ]
