"""Where values sit in a JSON text, so that a part can be written again in place."""

from __future__ import annotations

import json

import pytest

from crawler.pages.json_text import object_members, string_literal_around, value_spans

SPACED = '{ "data" : [ {"id": "1"} , 2 ] ,\n\t"meta": {"a": "x\\"y"} , "n":null }'


def test_object_members_are_read_with_their_spans() -> None:
    members = object_members(SPACED)
    assert [(key, value) for key, value, _ in members] == [
        ("data", [{"id": "1"}, 2]),
        ("meta", {"a": 'x"y'}),
        ("n", None),
    ]
    assert [SPACED[start:end] for _, _, (start, end) in members] == [
        '[ {"id": "1"} , 2 ]',
        '{"a": "x\\"y"}',
        "null",
    ]
    assert object_members(" {} ") == []


def test_object_members_refuse_what_json_reads_otherwise_or_not_at_all() -> None:
    # A repeated key: json.loads keeps its last value only, which its first span does not hold.
    for text in [
        '{"a": 1, "a": 2}',
        '{"a": 1} x',
        "[1, 2]",
        '{"a" 1}',
        '{"a": 1,}',
        "\ufeff{}",
        "",
    ]:
        with pytest.raises(ValueError):
            object_members(text)


def test_value_spans_find_nested_members_and_items() -> None:
    text = '{"props": {"a": {"x": 1}, "b": [{"y": 2}, {"z": [3, "4"]}]}, "page": "/p"}'
    tree = json.loads(text)
    paths = [("props", "a"), ("props", "b", 1, "z"), ("page",)]
    spans = value_spans(text, tree, paths)
    assert {path: text[start:end] for path, (start, end) in spans.items()} == {
        ("props", "a"): '{"x": 1}',
        ("props", "b", 1, "z"): '[3, "4"]',
        ("page",): '"/p"',
    }


def test_value_spans_refuse_a_repeated_key_anywhere_along_a_path() -> None:
    # The wanted member's key or one around it comes again, written as it is or escaped: the tree
    # holds the last value of each, which a span found first may not be (or may equal).
    same = '{"data": {"type": "p", "id": "1"}}'
    for text in [
        '{"props": {"a": ' + same + ', "a": ' + same + "}}",
        '{"props": {"a": {"data": 1}, "b": 1, "a": ' + same + "}}",
        '{"props": {"a": ' + same + ', "\\u0061": ' + same + "}}",
        '{"props": {"a": ' + same + '}, "prop\\u0073": {"a": ' + same + "}}",
        '{"props": {"a": ' + same + '}, "props": {"a": ' + same + "}}",
        '{"props": {"a": {"data": 1}}, "x": 1, "props": {"a": ' + same + "}}",
    ]:
        tree = json.loads(text)
        with pytest.raises(ValueError):
            value_spans(text, tree, [("props", "a")])
        assert tree["props"]["a"] == json.loads(same), f"case {text}"


def test_value_spans_refuse_a_tree_the_text_does_not_hold() -> None:
    text = '{"a": {"b": 1}}'
    for tree in [{"a": {"b": 2}}, {"a": [1]}, {"a": "b"}]:
        with pytest.raises(ValueError):
            value_spans(text, tree, [("a", "b")])
    with pytest.raises(ValueError):
        value_spans(text, {"a": {"b": float("nan")}}, [("a", "b")])


def test_the_string_literal_around_a_position() -> None:
    text = '{"k\\"ey": "a\\\\", "v": "x\\"@\\\\\\"y", "w": 1}'
    at = text.index("@")
    (start, end), value = string_literal_around(text, at)
    assert text[start:end] == '"x\\"@\\\\\\"y"'
    assert value == 'x"@\\"y'
    (start, end), value = string_literal_around(text, text.index("ey"))
    assert (text[start:end], value) == ('"k\\"ey"', 'k"ey')
    # Where no literal can start before it, or none ends after it.
    for outside in [0, text.index("1")]:
        with pytest.raises(ValueError):
            string_literal_around(text, outside)


def test_value_spans_let_a_key_repeated_off_the_paths_be() -> None:
    # The wanted value is written in place whichever "b" the JSON reads; a repeated key is refused only
    # among the members read before it, and after it only for the keys along a path.
    text = '{"props": {"b": 1, "a": {"x": 1}, "b": 2}, "b": [], "b": 3}'
    start = text.index('{"x"')
    assert value_spans(text, json.loads(text), [("props", "a")]) == {("props", "a"): (start, start + 8)}
    before = '{"props": {"b": 1, "b": 2, "a": {"x": 1}}}'
    with pytest.raises(ValueError):
        value_spans(before, json.loads(before), [("props", "a")])
