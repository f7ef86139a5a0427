"""API answers and lecture pages with personal data removed, for anything that stores them.

An answer that includes ``sorted_profiles`` carries each author's e-mail address, avatar and more; a
lecture page embeds the same documents in its ``__NEXT_DATA__``. Before either is kept (the HTTP cache,
a recorded sample), every profile is cut down to the attributes the parser reads (name, affiliation,
ORCID iD) and every e-mail address left anywhere is replaced by a placeholder. What remains still
parses to the same fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, overload

from crawler.pages.attributes import LECTURE_RELATIONSHIPS
from crawler.pages.jsonapi import is_document, related_keys, resource_key
from crawler.pages.next_data import decode_json, next_data_span
from crawler.pages.profiles import PROFILE_TYPES, allowed_profile
from crawler.text.privacy import scrub_emails

# Deep enough for any real document; a deeper one is left to the e-mail scrub alone.
_MAX_DEPTH = 200


def _profile_keys(resources: list[Any]) -> set[tuple[str, str]]:
    """``(type, id)`` of every resource a lecture's authors relationship points at."""
    keys: set[tuple[str, str]] = set()
    for resource in resources:
        for name in LECTURE_RELATIONSHIPS["authors"]:
            keys.update(related_keys(resource, name))
    return keys


def _scrubbed(value: Any, depth: int = 0) -> Any:
    """``value`` with every e-mail address in its strings replaced (keys included). What is nested
    deeper than any real answer nests is dropped rather than kept unread."""
    if isinstance(value, str):
        return scrub_emails(value)[0]
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, Mapping):
        return {
            scrub_emails(k)[0] if isinstance(k, str) else k: _scrubbed(v, depth + 1) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_scrubbed(v, depth + 1) for v in value]
    return value


def _without_profiles(doc: Mapping[str, Any]) -> dict[str, Any]:
    data = doc.get("data")
    included = doc.get("included")
    resources = [
        *(data if isinstance(data, list) else [data]),
        *(included if isinstance(included, list) else []),
    ]
    profiles = _profile_keys(resources)

    def reduce(resource: Any) -> Any:
        key = resource_key(resource)
        if key is not None and (key[0] in PROFILE_TYPES or key in profiles) and isinstance(resource, Mapping):
            return allowed_profile(resource)
        return resource

    out = dict(doc)
    if isinstance(data, list):
        out["data"] = [reduce(r) for r in data]
    elif data is not None:
        out["data"] = reduce(data)
    if isinstance(included, list):
        out["included"] = [reduce(r) for r in included]
    return out


def strip_personal_data(doc: Any) -> Any:
    """A JSON:API document with every profile (in ``data`` and ``included``) cut down to its allowed
    attributes, and every e-mail address left in any string replaced. The input is not changed."""
    if not isinstance(doc, Mapping):
        return _scrubbed(doc)
    return _scrubbed(_without_profiles(doc))


def _strip_tree(node: Any, depth: int = 0) -> Any:
    """A page JSON tree with every JSON:API document inside it stripped of profile data."""
    if depth > _MAX_DEPTH:
        return node
    if isinstance(node, Mapping):
        if is_document(node):
            return _without_profiles(node)
        return {k: _strip_tree(v, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [_strip_tree(v, depth + 1) for v in node]
    return node


def _strip_next_data(text: str) -> str:
    tree, why = decode_json(text, max_json_bytes=len(text.encode("utf-8", "surrogatepass")) + 1)
    if why is not None:
        return text
    try:
        stripped = _strip_tree(tree)
        if stripped == tree:
            return text
        text = json.dumps(stripped, ensure_ascii=False, separators=(",", ":"))
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # Lone surrogates (JSON escapes of half a pair) cannot be written as UTF-8: keep them escaped.
            text = json.dumps(stripped, separators=(",", ":"))
        # ``<`` escaped, as Next.js does, so no string can close the script.
        return text.replace("<", "\\u003c")
    except (RecursionError, ValueError):
        return text


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
    if span is not None:
        start, end = span
        page = page[:start] + _strip_next_data(page[start:end]) + page[end:]
    return scrub_emails(page)[0]
