"""Where values sit in a JSON text: so that a part of an answer or a page script can be written again
in place, leaving every other byte as it was, instead of writing the whole text again.

Each function reads a text that :func:`json.loads` reads (and the tree it read, where one is given) and
raises :class:`ValueError` (or :class:`RecursionError`) when the text is not read as that tree was: a
repeated key, whose earlier values the tree does not hold, or a span that does not decode to the value
it should hold. The caller then writes the whole text again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any, cast

Path = tuple[str | int, ...]
# A value's span in a text: where it starts and ends.
Span = tuple[int, int]
# Which members or items to look into, by key or index: None for the value itself.
_Wanted = dict[str | int, "_Wanted | None"]

_DECODER = json.JSONDecoder()
# A JSON escape of an ASCII character (a backslash escaped is found too, which only costs a look), and
# any escape.
_ASCII_ESCAPE = re.compile(r'\\(?:u00[0-7][0-9a-fA-F]|["\\/bfnrt])')
_ANY_ESCAPE = re.compile(r"\\")
# The decoder's own reader of a string literal (the C one where there is one): the value of the literal
# whose text starts after its opening quote, and where the literal ends.
_scanstring = cast(Callable[[str, int], tuple[str, int]], json.decoder.scanstring)  # type: ignore[attr-defined]
_SPACE = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match is not None else at


def _expect(text: str, at: int, char: str) -> int:
    """Where the text goes on after ``char`` at ``at`` and the spaces after it."""
    if not text.startswith(char, at):
        raise ValueError(f"expected {char!r} at {at}")
    return _skip_space(text, at + 1)


def _key(text: str, at: int, seen: set[str]) -> tuple[str, int]:
    """A member's key at ``at`` and where its value starts; a key seen before in the same object
    raises, since the tree holds only its last value."""
    if not text.startswith('"', at):
        raise ValueError(f"expected a key at {at}")
    key, at = _scanstring(text, at + 1)
    if key in seen:
        raise ValueError(f"repeated key {key!r}")
    seen.add(key)
    return key, _expect(text, _skip_space(text, at), ":")


def object_members(text: str) -> list[tuple[str, Any, Span]]:
    """The members of the JSON object that is the whole of ``text``: key, value and the value's span,
    in order. Each value is decoded as :func:`json.loads` decodes it."""
    at = _expect(text, _skip_space(text, 0), "{")
    members: list[tuple[str, Any, Span]] = []
    seen: set[str] = set()
    if not text.startswith("}", at):
        while True:
            key, at = _key(text, at, seen)
            value, end = _DECODER.raw_decode(text, at)
            members.append((key, value, (at, end)))
            at = _skip_space(text, end)
            if not text.startswith(",", at):
                break
            at = _skip_space(text, at + 1)
    if _skip_space(text, _expect(text, at, "}")) != len(text):
        raise ValueError("text after the object")
    return members


def _wanted(paths: Iterable[Path]) -> _Wanted:
    root: _Wanted = {}
    for path in paths:
        if not path:
            raise ValueError("the whole text is no member")
        node = root
        for step in path[:-1]:
            child = node.setdefault(step, {})
            if child is None:
                raise ValueError(f"a path through another's value: {path!r}")
            node = child
        node[path[-1]] = None
    return root


def value_spans(text: str, tree: Any, paths: Iterable[Path]) -> dict[Path, Span]:
    """The span of the value at each of ``paths`` (keys and list indexes from the root) in ``text``,
    which :func:`json.loads` reads as ``tree``. No path may lead through another's value.

    Only the containers along the paths are read member by member, up to the last value wanted; the
    members before it are skipped by the decoder, and the text of each span is decoded and checked
    equal to the tree's value. A key repeated along a path is refused: among the members read, as it
    is read; after them, where the text is not read, by looking for the key's literal itself (every
    literal that decodes to it is written as it is, or holds a backslash).
    """
    unique = set(paths)
    wanted = _wanted(unique)
    spans: dict[Path, Span] = {}
    end = _locate(text, _skip_space(text, 0), tree, wanted, path=(), spans=spans, last=True)
    if len(spans) != len(unique):
        raise ValueError("a path the text does not hold")
    if end is None:
        _refuse_keys_after(text, max(stop for _, stop in spans.values()), _keys(wanted))
    return spans


def _keys(wanted: _Wanted) -> set[str]:
    keys: set[str] = set()
    for step, inner in wanted.items():
        if isinstance(step, str):
            keys.add(step)
        if inner is not None:
            keys |= _keys(inner)
    return keys


def _refuse_keys_after(text: str, start: int, keys: set[str]) -> None:
    """Raises when a string literal after ``start`` (outside any literal) may decode to one of
    ``keys``: one written as it is, or one with an escape of a character a key holds (ASCII keys: an
    escape of an ASCII character; the escapes of a text written ASCII-only are mostly of others)."""
    for key in keys:
        if text.find(f'"{key}"', start) >= 0:
            raise ValueError(f"the key {key!r} again after {start}")
    escape = _ASCII_ESCAPE if all(key.isascii() for key in keys) else _ANY_ESCAPE
    match = escape.search(text, start)
    while match is not None:
        (_, end), value = string_literal_around(text, match.start())
        if value in keys:
            raise ValueError(f"the key {value!r} again after {start}")
        match = escape.search(text, end)


def _locate(
    text: str, at: int, node: Any, wanted: _Wanted | None, *, path: Path, spans: dict[Path, Span], last: bool
) -> int | None:
    """Where the value at ``at`` (read as ``node``) ends, with the spans of what ``wanted`` names
    inside it added to ``spans``; None when reading stopped after the last of them (``last``: no value
    is wanted after this one)."""
    if wanted is None:
        value, end = _DECODER.raw_decode(text, at)
        if value != node:
            raise ValueError(f"the text at {at} is not the value at {path!r}")
        spans[path] = (at, end)
        return end
    is_object = type(node) is dict
    if not is_object and type(node) is not list:
        raise ValueError(f"no container at {path!r}")
    closing = "}" if is_object else "]"
    at = _expect(text, at, "{" if is_object else "[")
    if text.startswith(closing, at):
        return at + 1
    seen: set[str] = set()
    index = 0
    remaining = len(wanted)
    while True:
        step: str | int = index
        if is_object:
            step, at = _key(text, at, seen)
        index += 1
        if step in wanted:
            remaining -= 1
            inner_last = last and not remaining
            inner_end = _locate(
                text, at, node[step], wanted[step], path=(*path, step), spans=spans, last=inner_last
            )
            if inner_end is None or inner_last:
                return None
            at = inner_end
        else:
            at = _DECODER.raw_decode(text, at)[1]
        at = _skip_space(text, at)
        if not text.startswith(",", at):
            break
        at = _skip_space(text, at + 1)
    if not text.startswith(closing, at):
        raise ValueError(f"expected {closing!r} at {at}")
    return at + 1


def string_literal_around(text: str, position: int) -> tuple[Span, str]:
    """The span and the value of the string literal of JSON ``text`` that holds ``position`` (not its
    opening quote). Inside a literal every quote is escaped, so the nearest quote before ``position``
    that no backslash escapes opens it. ``position`` must be inside a literal: what is read from a
    position between two is whatever the text between them reads as."""
    quote = text.rfind('"', 0, position)
    while quote >= 0:
        before = quote
        while before > 0 and text[before - 1] == "\\":
            before -= 1
        if (quote - before) % 2 == 0:
            break
        quote = text.rfind('"', 0, before)
    if quote < 0:
        raise ValueError(f"no string holds {position}")
    value, end = _scanstring(text, quote + 1)
    if end <= position:
        raise ValueError(f"no string holds {position}")
    return (quote, end), value
