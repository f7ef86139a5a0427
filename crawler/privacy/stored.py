"""API answers and lecture pages with personal data removed, for anything that stores them.

An answer that includes ``sorted_profiles`` carries each author's e-mail address, avatar and more; a
lecture page embeds the same documents in its ``__NEXT_DATA__``. Before either is kept (the HTTP cache,
a recorded sample), every profile is cut down to the attributes the parser reads (name, affiliation,
ORCID iD) and every e-mail address left anywhere is replaced by a placeholder. What remains still
parses to the same fields.

A stored text is written again only where it held personal data: the documents (a page's) or members
(an answer's) that held a profile, and the string literals that held an address, each in place
(:mod:`crawler.pages.json_text` finds where). A text that cannot be written into that way is read and
written again whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, overload

from crawler.json_types import JsonObject, JsonValue
from crawler.pages.attributes import LECTURE_RELATIONSHIPS
from crawler.pages.json_text import Path, object_members, string_literal_around, value_spans
from crawler.pages.jsonapi import camel_case, is_document, member, related_keys, resource_key, snake_case
from crawler.pages.next_data import decode_json, next_data_span
from crawler.pages.profiles import PROFILE_TYPES, allowed_profile
from crawler.privacy.emails import (
    json_address_positions,
    json_may_hold_address,
    scrub_emails,
    spliced,
    strings_to_scrub,
)

# Deep enough for any real document; a deeper one is left to the e-mail scrub alone.
_MAX_DEPTH = 200
# The spellings under which each name of the authors relationship is looked up, in the order tried.
_AUTHOR_SPELLINGS = tuple(
    tuple(dict.fromkeys((name, camel_case(name), snake_case(name))))
    for name in LECTURE_RELATIONSHIPS["authors"]
)
_AUTHOR_LINKS = frozenset(spelling for spellings in _AUTHOR_SPELLINGS for spelling in spellings)


def _profile_keys(resources: list[Any]) -> set[tuple[str, str]]:
    """``(type, id)`` of every resource a lecture's authors relationship points at."""
    keys: set[tuple[str, str]] = set()
    for resource in resources:
        relationships = resource.get("relationships") if type(resource) is dict else None
        if type(relationships) is dict:
            for spelling in _author_spellings(relationships):
                data = member(relationships[spelling], "data")
                keys.update(
                    key for key in map(resource_key, data if isinstance(data, list) else [data]) if key
                )
        elif relationships is not None or type(resource) is not dict:
            for name in LECTURE_RELATIONSHIPS["authors"]:
                keys.update(related_keys(resource, name))
    return keys


def _author_spellings(relationships: dict[str, Any]) -> list[str]:
    """The spellings under which the authors relationship is read from ``relationships``: for each of
    its names, the first of the name's spellings there, each once (most resources have none of them,
    and the names' spellings all find the one there is)."""
    present = [spelling for spelling in _AUTHOR_LINKS if spelling in relationships]
    if len(present) < 2:
        return present
    return list({next((s for s in names if s in relationships), "") for names in _AUTHOR_SPELLINGS} - {""})


def _scrubbed_copy(value: Any, depth: int, dirty: set[str] | None) -> Any:
    """``value`` copied with the addresses in its strings replaced; only strings in ``dirty`` can hold
    one (all of them when it is None)."""
    if isinstance(value, str):
        return scrub_emails(value)[0] if dirty is None or value in dirty else value
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, Mapping):
        return {
            _scrubbed_copy(k, depth, dirty) if isinstance(k, str) else k: _scrubbed_copy(v, depth + 1, dirty)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_scrubbed_copy(v, depth + 1, dirty) for v in value]
    return value


def _plain_strings(value: Any, strings: list[str], depth: int = 0) -> bool:
    """Collects the strings (keys included) of a tree made of plain dicts, lists, strings and other
    values; False when :func:`_scrubbed` would change more than strings in it (a container nested too
    deep, a mapping or list of another type, a string subclass)."""
    kind = type(value)
    if kind is str:
        strings.append(value)
        return True
    if depth > _MAX_DEPTH:
        return False
    if kind is dict:
        for k, v in value.items():
            if type(k) is str:
                strings.append(k)
            elif isinstance(k, str):
                return False
            if not _plain_strings(v, strings, depth + 1):
                return False
        return True
    if kind is list:
        return all(_plain_strings(v, strings, depth + 1) for v in value)
    return not isinstance(value, str | Mapping | list)


def _scrubbed(value: Any) -> Any:
    """``value`` with every e-mail address in its strings replaced (keys included). What is nested
    deeper than any real answer nests is dropped rather than kept unread.

    A tree with nothing to replace comes back as it is, not copied: the answers stored hold few
    addresses once their profiles are cut down, and all of their strings are searched at once.
    """
    strings: list[str] = []
    if not _plain_strings(value, strings):
        return _scrubbed_copy(value, 0, None)
    dirty = strings_to_scrub(strings)
    return _scrubbed_copy(value, 0, dirty) if dirty else value


def _without_profiles(doc: Mapping[str, JsonValue]) -> JsonObject:
    """The document with its profiles cut down: a copy, or the document itself (a dict) when it holds
    no profile, since the copy would be the same."""
    data = doc.get("data")
    included = doc.get("included")
    resources = [
        *(data if isinstance(data, list) else [data]),
        *(included if isinstance(included, list) else []),
    ]
    profiles = _profile_keys(resources)
    profile_types = PROFILE_TYPES | {kind for kind, _ in profiles}
    reduced = False

    def reduce(resource: Any) -> Any:
        nonlocal reduced
        if type(resource) is dict:
            # A resource of any other type is kept whatever its id: one lookup instead of reading its key.
            kind = resource.get("type")
            if not isinstance(kind, str) or kind not in profile_types:
                return resource
        key = resource_key(resource)
        if key is not None and (key[0] in PROFILE_TYPES or key in profiles) and isinstance(resource, Mapping):
            reduced = True
            return allowed_profile(resource)
        return resource

    out = dict(doc)
    if isinstance(data, list):
        out["data"] = [reduce(r) for r in data]
    elif data is not None:
        out["data"] = reduce(data)
    if isinstance(included, list):
        out["included"] = [reduce(r) for r in included]
    if not reduced and type(doc) is dict:
        return doc
    return out


def strip_personal_data(doc: Any) -> Any:
    """A JSON:API document with every profile (in ``data`` and ``included``) cut down to its allowed
    attributes, and every e-mail address left in any string replaced. The input is not changed; what
    needed no change may be shared with it (or be the input itself)."""
    if not isinstance(doc, Mapping):
        return _scrubbed(doc)
    return _scrubbed(_without_profiles(doc))


def strip_answer_text(text: str) -> str:
    """The text of a JSON:API answer (an object) with personal data removed as
    :func:`strip_personal_data` removes it from the answer's JSON, written in place: only the members
    that held a profile (``data``, ``included``) and the string literals that held an address are
    written again, every other byte is left as it was. The text itself when nothing was removed.

    Raises ValueError (or RecursionError) for a text that cannot be written into that way: not JSON,
    not an object, or a key repeated (the caller strips the answer's JSON whole).
    """
    members = object_members(text)
    doc = {key: value for key, value, _ in members}
    cut = _without_profiles(doc)
    replacements = []
    for key, value, (start, end) in members:
        new = cut[key]
        if new is not value and new != value:
            replacements.append((start, end, _dump(new)))
    if replacements:
        text = spliced(text, sorted(replacements))
    positions, _ = json_address_positions(text)
    return _scrubbed_in_place(text, positions, _dump) if positions else text


def _strip_tree(node: Any, depth: int = 0) -> Any:
    """A page JSON tree with every JSON:API document inside it stripped of profile data. What holds
    no profile is the node itself, not a copy: the tree then compares equal to the page's at once."""
    if depth > _MAX_DEPTH:
        return node
    if isinstance(node, Mapping):
        if is_document(node):
            return _without_profiles(node)
        stripped = {k: _strip_tree(v, depth + 1) for k, v in node.items()}
        if type(node) is dict and all(
            new is old for new, old in zip(stripped.values(), node.values(), strict=True)
        ):
            return node
        return stripped
    if isinstance(node, list):
        items = [_strip_tree(v, depth + 1) for v in node]
        if type(node) is list and all(new is old for new, old in zip(items, node, strict=True)):
            return node
        return items
    return node


def _dump(tree: Any) -> str:
    return json.dumps(tree, ensure_ascii=False, separators=(",", ":"))


def _script_text(tree: Any, dump: str) -> str:
    """The script text of a tree whose dump (``ensure_ascii`` off) is ``dump``."""
    try:
        dump.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates (JSON escapes of half a pair) cannot be written as UTF-8: keep them escaped.
        dump = json.dumps(tree, separators=(",", ":"))
    # ``<`` escaped, as Next.js does, so no string can close the script.
    return dump.replace("<", "\\u003c")


def _rewritten_next_data(text: str, tree: Any) -> str:
    """The script text of ``tree`` stripped whole: its profiles cut, every string searched, all of it
    written again. For a script whose text cannot be written into in place."""
    try:
        stripped = _strip_tree(tree)
        # Whether any string may hold an address is read from the dump of the tree with its profiles
        # cut, which is written anyway when they were: the script's own text holds the addresses of
        # the profiles, and may write any character escaped (\u0040, the quotes of "J. Doe"@...) or
        # HTML-escaped (&#64).
        dump = _dump(stripped)
        if json_may_hold_address(dump):
            scrubbed = _scrubbed(stripped)
            if scrubbed is not stripped:
                stripped, dump = scrubbed, _dump(scrubbed)
        if stripped == tree:
            return text
        return _script_text(stripped, dump)
    except (RecursionError, ValueError):
        return text


def _script_value(value: Any) -> str:
    return _script_text(value, _dump(value))


def _documents(node: Any, path: Path, depth: int, found: list[tuple[Path, Any]]) -> None:
    """Every JSON:API document of a page tree with its path, as :func:`_strip_tree` finds them: none
    inside another, none deeper than it reads."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, Mapping):
        if is_document(node):
            found.append((path, node))
            return
        items: Iterable[tuple[str | int, Any]] = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return
    for step, value in items:
        if isinstance(value, Mapping | list):
            _documents(value, (*path, step), depth + 1, found)


def _cut_in_place(text: str, tree: Any, write: Callable[[Any], str]) -> str:
    """JSON ``text`` (read as ``tree``) with each document that holds a profile written again by
    ``write``, cut down, where it was: the rest of the text is left as it is."""
    found: list[tuple[Path, Any]] = []
    _documents(tree, (), 0, found)
    cuts = {}
    for path, doc in found:
        cut = _without_profiles(doc)
        if cut is not doc and cut != doc:
            cuts[path] = cut
    if not cuts:
        return text
    if () in cuts:
        return write(cuts[()])
    spans = value_spans(text, tree, cuts)
    return spliced(text, sorted((*spans[path], write(cut)) for path, cut in cuts.items()))


def _scrubbed_in_place(text: str, positions: list[int], write: Callable[[str], str]) -> str:
    """JSON ``text`` with each string literal that holds one of ``positions`` (see
    :func:`json_address_positions`) and an address written again by ``write``, its addresses replaced.
    """
    replacements = []
    read = 0
    for position in positions:
        if position < read:
            continue
        span, value = string_literal_around(text, position)
        read = span[1]
        clean = scrub_emails(value)[0]
        if clean != value:
            replacements.append((*span, write(clean)))
    return spliced(text, replacements) if replacements else text


def _strip_next_data(text: str) -> tuple[str, bool]:
    """A script's text stripped, and whether it may still hold an address as plain text (to be
    scrubbed as the rest of the page is).

    Only the documents that hold a profile (on a lecture page, the lecture's own) are written again,
    in place, and only the string literals that may hold an address are read again: most of the
    script is neither decoded again nor written. A text that cannot be written into that way (HTML-
    escaped JSON, a repeated key, a document not found where it should be) is stripped whole.
    """
    # The whole script is read whatever its size, so its length in bytes is never needed.
    tree, why_not = decode_json(text, max_json_bytes=None)
    if why_not is not None:
        return text, True
    if "&quot;" in text:
        # Possibly HTML-escaped JSON (what decode_json reads when the text is not JSON itself).
        return _rewritten_next_data(text, tree), True
    try:
        cut = _cut_in_place(text, tree, _script_value)
        positions, plain = json_address_positions(cut)
        clean = _scrubbed_in_place(cut, positions, _script_value) if positions else cut
    except (RecursionError, ValueError):
        return _rewritten_next_data(text, tree), True
    # A literal written again writes what the JSON text escaped (a "@" written \u0040) as itself.
    return clean, plain or clean is not cut


@overload
def strip_page_personal_data(page: str) -> str: ...
@overload
def strip_page_personal_data(page: bytes) -> bytes: ...


def strip_page_personal_data(page: str | bytes) -> str | bytes:
    """A lecture page with the profiles of its ``__NEXT_DATA__`` cut down to their allowed attributes
    and every e-mail address in the page replaced; everything else is left byte for byte.

    Bytes are read as UTF-8, and bytes that are not UTF-8 come back unchanged.
    """
    if isinstance(page, bytes):
        text = page.decode("utf-8", "surrogateescape")
        return strip_page_personal_data(text).encode("utf-8", "surrogateescape")
    span = next_data_span(page)
    if span is None:
        return scrub_emails(page)[0]
    start, end = span
    script, plain = _strip_next_data(page[start:end])
    if plain:
        return scrub_emails(page[:start] + script + page[end:])[0]
    # No form of "@" in the script's text, and none can span its ends (an address's parts cannot
    # cross the tags around it): the text around it is scrubbed alone.
    return scrub_emails(page[:start])[0] + script + scrub_emails(page[end:])[0]
