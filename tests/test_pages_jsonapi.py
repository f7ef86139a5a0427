from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from crawler.pages.jsonapi import (
    attr,
    camel_case,
    find_documents,
    id_text,
    index_resources,
    is_document,
    is_resource,
    member,
    primary_data,
    related,
    related_id,
    related_keys,
    resource_key,
    snake_case,
)

API_LECTURE = {
    "type": "thin_lectures",
    "id": "130123",
    "attributes": {"title": "T", "held_at": "2025-11-06T02:30:00Z", "underline_doi": "10.48448/abcd-efgh"},
    "relationships": {
        "event": {"data": {"type": "thin_events", "id": "502"}},
        "event_session": {"data": {"type": "thin_event_sessions", "id": "8841"}},
        "tag": {"data": None},
    },
}
PAGE_LECTURE = {
    "type": "thin_lectures",
    "id": 130124,
    "attributes": {"title": "U", "heldAt": "2025-11-07T02:30:00Z", "underlineDoi": None},
    "relationships": {
        "eventSession": {"data": {"type": "thin_event_sessions", "id": "8842"}},
        "authors": {"data": [{"type": "profiles", "id": "1"}, {"type": "profiles", "id": "2"}, {"id": "3"}]},
    },
}
EVENT = {"type": "thin_events", "id": "502", "attributes": {"name": "EMNLP 2025"}}
SESSION = {"type": "thin_event_sessions", "id": "8841", "attributes": {"name": "Poster Session 2"}}
SESSION_2 = {"type": "thin_event_sessions", "id": "8842", "attributes": {"name": "Oral 1"}}


def test_name_spellings() -> None:
    assert camel_case("held_at") == "heldAt"
    assert camel_case("underline_doi") == "underlineDoi"
    assert camel_case("title") == "title"
    assert snake_case("eventSession") == "event_session"
    assert snake_case("posterLecture") == "poster_lecture"
    assert snake_case("held_at") == "held_at"


def test_attr_accepts_either_spelling() -> None:
    assert attr(API_LECTURE, "held_at") == "2025-11-06T02:30:00Z"
    assert attr(API_LECTURE, "heldAt") == "2025-11-06T02:30:00Z"
    assert attr(PAGE_LECTURE, "held_at") == "2025-11-07T02:30:00Z"
    assert attr(PAGE_LECTURE, "underline_doi", "absent") is None
    assert attr(PAGE_LECTURE, "paper_url", "absent") == "absent"
    assert attr({"attributes": ["not", "a", "map"]}, "title") is None
    assert attr("not a resource", "title") is None
    assert member({"totalPages": 3}, "total_pages") == 3


def test_resource_identity() -> None:
    assert resource_key(API_LECTURE) == ("thin_lectures", "130123")
    assert resource_key(PAGE_LECTURE) == ("thin_lectures", "130124")
    assert resource_key({"type": "x", "id": True}) is None
    assert resource_key({"type": "", "id": "1"}) is None
    assert resource_key({"type": "x", "id": " "}) is None
    assert resource_key({"type": "x", "id": 10**30}) is None
    assert resource_key(["type", "id"]) is None
    assert is_resource({"type": "x", "id": "1"})
    assert id_text(502) == "502"
    assert id_text(" 502 ") == "502"
    assert id_text(None) is None


def test_documents() -> None:
    assert is_document({"data": API_LECTURE})
    assert is_document({"data": []})
    assert is_document({"data": [API_LECTURE, EVENT]})
    assert not is_document({"data": [API_LECTURE, "x"]})
    assert not is_document({"data": None})
    assert not is_document({"errors": [{"status": "404"}]})
    assert primary_data({"data": [API_LECTURE, 5, {"id": "1"}, EVENT]}) == [API_LECTURE, EVENT]
    assert primary_data({"data": EVENT}) == [EVENT]
    assert primary_data({}) == []


def test_index_resources_over_many_documents() -> None:
    first = {"data": API_LECTURE, "included": [EVENT, SESSION, "junk", {"type": "tags"}]}
    second = {"data": [PAGE_LECTURE], "included": [SESSION_2, {**EVENT, "attributes": {"name": "other"}}]}
    index = index_resources([first, second, "not a doc", {"included": "not a list"}])
    assert list(index) == [
        ("thin_lectures", "130123"),
        ("thin_events", "502"),
        ("thin_event_sessions", "8841"),
        ("thin_lectures", "130124"),
        ("thin_event_sessions", "8842"),
    ]
    assert index[("thin_events", "502")] is EVENT


def test_related() -> None:
    index = index_resources([{"data": [API_LECTURE, PAGE_LECTURE], "included": [EVENT, SESSION, SESSION_2]}])
    assert related(API_LECTURE, "event", index) is EVENT
    assert related(API_LECTURE, "event_session", index) is SESSION
    assert related(PAGE_LECTURE, "event_session", index) is SESSION_2
    assert related(API_LECTURE, "tag", index) is None
    assert related(PAGE_LECTURE, "event", index) is None
    assert related(PAGE_LECTURE, "authors", index) is None
    assert related_id(API_LECTURE, "event") == "502"
    assert related_id(PAGE_LECTURE, "eventSession") == "8842"
    assert related_id(PAGE_LECTURE, "authors") is None
    assert related_keys(PAGE_LECTURE, "authors") == [("profiles", "1"), ("profiles", "2")]


def test_find_documents_in_next_data() -> None:
    own = {"data": API_LECTURE, "included": [EVENT]}
    rel = {"data": [PAGE_LECTURE], "included": []}
    tree = {
        "props": {
            "pageProps": {"fallback": {"/a": own, "/b": {"notData": 1}, "/c": [rel, {"data": "x"}]}},
            "__N_SSG": True,
        },
        "page": "/lecture/[lectureSlug]",
        "query": {"lectureSlug": "130123-t"},
    }
    found = list(find_documents(tree))
    # Relationship objects inside the documents look like documents but are not searched.
    assert found == [own, rel]
    assert list(find_documents({"data": EVENT})) == [{"data": EVENT}]
    assert list(find_documents("text")) == []


def test_find_documents_survives_deep_and_cyclic_trees() -> None:
    deep: Any = {"data": EVENT}
    for _ in range(100_000):
        deep = [deep]
    assert len(list(find_documents(deep))) == 1
    cyclic: dict[str, Any] = {"a": {"data": EVENT}}
    cyclic["self"] = cyclic
    assert len(list(find_documents(cyclic))) == 1


class JsonMap(Mapping[str, Any]):
    """A mapping that is not a dict: JSON read by another reader than json.loads."""

    def __init__(self, items: dict[str, Any]) -> None:
        self._items = items

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class JsonDict(dict[str, Any]):
    """A dict subclass: not the exact type JSON decodes to."""


def as_mappings(value: Any, kind: type) -> Any:
    """``value`` with every object turned into ``kind`` (lists kept as lists)."""
    if isinstance(value, dict):
        return kind({k: as_mappings(v, kind) for k, v in value.items()})
    if isinstance(value, list):
        return [as_mappings(v, kind) for v in value]
    return value


class JsonStr(str):
    """A str subclass, as an id."""


def test_other_mappings_read_as_dicts_do() -> None:
    # The dict fast paths and the general Mapping checks they fall back on give the same answers.
    tree = {
        "props": {
            "fallback": {
                "a": {"data": API_LECTURE, "included": [EVENT, SESSION, "junk"]},
                "b": {"data": [PAGE_LECTURE, {**EVENT, "id": JsonStr(" 503 ")}], "included": [SESSION_2]},
                "c": {"data": None},
            }
        }
    }
    lecture = PAGE_LECTURE
    for kind in (JsonMap, JsonDict):
        other = as_mappings(tree, kind)
        other_lecture = as_mappings(lecture, kind)
        docs = list(find_documents(other))
        assert len(docs) == 2, f"case {kind.__name__}"
        assert [as_mappings(d, dict) for d in docs] == list(find_documents(tree)), f"case {kind.__name__}"
        assert list(index_resources(docs)) == list(index_resources(find_documents(tree))), (
            f"case {kind.__name__}"
        )
        assert resource_key(other_lecture) == ("thin_lectures", "130124"), f"case {kind.__name__}"
        assert member(other_lecture, "relationships") == other_lecture["relationships"], (
            f"case {kind.__name__}"
        )
        assert member(kind({"totalPages": 3}), "total_pages") == 3, f"case {kind.__name__}"
        assert member(kind({"total_pages": 3}), "totalPages") == 3, f"case {kind.__name__}"
        assert attr(other_lecture, "held_at") == "2025-11-07T02:30:00Z", f"case {kind.__name__}"
        assert is_document(kind({"data": []})), f"case {kind.__name__}"
        assert not is_document(kind({"errors": []})), f"case {kind.__name__}"
        assert related_keys(other_lecture, "authors") == [("profiles", "1"), ("profiles", "2")], (
            f"case {kind.__name__}"
        )
    assert id_text(JsonStr(" 503 ")) == "503"
    assert id_text(JsonStr(" ")) is None
    assert id_text("") is None
    assert id_text(True) is None
    assert id_text(10**18 - 1) == str(10**18 - 1)
    assert id_text(10**18) is None


def test_a_document_listed_again_adds_nothing_and_each_new_one_is_read() -> None:
    first = {"data": API_LECTURE, "included": [EVENT]}
    index = index_resources([first, {"data": [PAGE_LECTURE]}, first])
    assert list(index) == [("thin_lectures", "130123"), ("thin_events", "502"), ("thin_lectures", "130124")]

    # Documents made one at a time and dropped after reading: a freed one's memory (and id) is reused by
    # a later one, which must still be read.
    resources = [{"type": "thin_lectures", "id": str(n)} for n in range(50)]

    def fresh() -> Iterator[dict[str, Any]]:
        for resource in resources:
            yield {"data": resource}

    assert len({id(doc) for doc in fresh()}) < 50
    assert list(index_resources(fresh())) == [("thin_lectures", str(n)) for n in range(50)]
