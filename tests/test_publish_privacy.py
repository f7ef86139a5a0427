"""Whatever reaches a release is scrubbed of e-mail addresses, in every table, and the card counts
what looks like one in every table."""

from __future__ import annotations

import pyarrow as pa

from crawler import schema
from crawler.publish.card import email_like_values
from crawler.publish.tables import build_tables, lecture_rows, scrubbed_record, session_details
from tests.test_publish_parquet import make_record

ADDRESS = "pc-chair@example.org"


def test_a_record_with_an_address_is_scrubbed_and_its_hash_computed_again() -> None:
    record = make_record(1, session_name=f"Orals (chair: {ADDRESS})", url=f"https://x/lecture/1-{ADDRESS}")
    clean = scrubbed_record(record)
    assert clean["session_name"] == "Orals (chair: [email removed])"
    assert clean["url"] == "https://x/lecture/1-email-removed"
    assert clean["content_sha256"] == schema.content_sha256(clean) != record["content_sha256"]
    plain = make_record(2)
    assert scrubbed_record(plain) is plain


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
