"""The listing's hashes: one per field, the same however often and from whichever copy they are asked."""

from __future__ import annotations

import dataclasses
import hashlib
import json

from crawler.pages import LectureItem
from crawler.spiders.refresh import listing_hashes, listing_sha256


def _hash(value: object) -> str:
    blob = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def listed() -> LectureItem:
    return LectureItem(lecture_id="130123", title="Router Tuning", keywords=["ü", "b"], session_id="7")


def test_each_field_hashes_its_json() -> None:
    hashes = listing_hashes(listed())
    assert hashes["title"] == _hash("Router Tuning")
    assert hashes["keywords"] == _hash(["ü", "b"])
    assert hashes["session_id"] == _hash("7")
    assert "lecture_id" not in hashes and "problems" not in hashes
    expected = {k: v for k, v in listed().to_json().items() if k == "lecture_id" or k in hashes}
    blob = json.dumps(expected, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    assert listing_sha256(listed()) == hashlib.sha256(blob.encode("utf-8")).hexdigest()


def test_the_fields_a_request_carried_hash_the_same_and_a_change_shows() -> None:
    first = listing_hashes(listed())
    carried = LectureItem.read_json(json.loads(json.dumps(listed().to_json())))
    assert carried is not None
    assert listing_hashes(carried) == first
    # What a caller does with its copy of the hashes is no other caller's.
    first["title"] = "page-disagreed"
    assert listing_hashes(carried)["title"] == _hash("Router Tuning")
    carried.title = "Router Tuning, again"
    changed = listing_hashes(carried)
    assert changed["title"] == _hash("Router Tuning, again")
    assert {k: v for k, v in changed.items() if k != "title"} == {
        k: v for k, v in listing_hashes(listed()).items() if k != "title"
    }
    assert listing_hashes(dataclasses.replace(carried, title="Router Tuning"))["title"] == _hash(
        "Router Tuning"
    )
