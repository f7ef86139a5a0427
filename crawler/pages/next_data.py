"""A lecture page's ``__NEXT_DATA__``: the JSON:API documents the page was rendered from.

The lecture's data sits in ``props.pageProps.fallback``, a map whose values are whole documents; its
keys are not a stable contract, so documents are found by their shape and the lecture by its
``(type, id)``. The resource is read by the API's own reader (:func:`crawler.pages.api.lecture_fields`):
page JSON and API answers differ in spelling only.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from crawler.pages.api import LECTURE_TYPE, lecture_fields
from crawler.pages.fields import LectureItem
from crawler.pages.jsonapi import Resource, find_documents, index_resources, member, resource_key

MAX_JSON_BYTES = 5_000_000
# The script in a page's raw text, for when the parsed tree lost it (markup nested deeper than the
# parser follows drops the rest of the page). Group 1 is the JSON.
# The script is found in two steps, its opening tag and then the first closing tag after it: one
# expression with a lazy ``(.*?)</script>`` tried the closing tag at every character of the JSON, five
# times slower on a real page (the match is the same).
_NEXT_DATA_OPEN = re.compile(r"""<script\b[^>]*\bid\s*=\s*["']?__NEXT_DATA__["']?[^>]*>""", re.IGNORECASE)
_SCRIPT_CLOSE = re.compile(r"</script\s*>", re.IGNORECASE)
_LEADING_ID = re.compile(r"^\s*0*(\d{1,18})(?!\d)")


def decode_json(text: str, max_json_bytes: int | None = MAX_JSON_BYTES) -> tuple[Any, str | None]:
    """The JSON of a ``__NEXT_DATA__`` script's text (HTML-escaped JSON too), or None and why not.
    ``max_json_bytes`` None reads it whatever its size (its length in bytes is then never computed)."""
    # A character is at most 4 bytes of UTF-8 (3 for a lone surrogate): a text of at most a quarter of
    # the limit in characters is within it, and is not encoded to be measured.
    if (
        max_json_bytes is not None
        and len(text) * 4 > max_json_bytes
        and (len(text) > max_json_bytes or len(text.encode("utf-8", "surrogatepass")) > max_json_bytes)
    ):
        return None, f"__NEXT_DATA__ larger than {max_json_bytes} bytes"
    global _decoded_last
    last, _decoded_last = _decoded_last, None
    if last is not None and last[0] == text:
        return last[1]
    decoded = _decode(text)
    _decoded_last = (text, decoded)
    return decoded


# The last script text decoded, with what it decoded to, handed to the next caller with the same text
# once: the worker job that stores a lecture page strips the page's JSON and then reads the page, and
# the JSON is decoded once for both. Nothing here changes a decoded
# tree, so the two can share it.
_decoded_last: tuple[str, tuple[Any, str | None]] | None = None


def _candidates(text: str) -> Iterator[str]:
    """The script's text, then (only if that is not JSON) the text unescaped when it is HTML-escaped:
    the search for ``&quot;`` costs a scan of all of it, which JSON read at once needs not."""
    yield text
    if "&quot;" in text:
        yield html_lib.unescape(text)


def _decode(text: str) -> tuple[Any, str | None]:
    reason = "__NEXT_DATA__ is empty"
    for candidate in _candidates(text):
        if not candidate.strip():
            continue
        try:
            return json.loads(candidate), None
        except RecursionError:
            return None, "__NEXT_DATA__ nested too deeply"
        except ValueError as exc:
            reason = f"__NEXT_DATA__ is not JSON: {exc}"[:200]
    return None, reason


def next_data_span(page_text: str) -> tuple[int, int] | None:
    """Where the text of the page's ``<script id="__NEXT_DATA__">`` starts and ends, as found in the raw
    text (the first such script with a closing tag), or None."""
    if "__NEXT_DATA__" not in page_text:
        return None
    opening = _NEXT_DATA_OPEN.search(page_text)
    if opening is None:
        return None
    closing = _SCRIPT_CLOSE.search(page_text, opening.end())
    return (opening.end(), closing.start()) if closing is not None else None


def read_next_data(root: Any, page_text: str, max_json_bytes: int = MAX_JSON_BYTES) -> tuple[Any, str | None]:
    """The ``__NEXT_DATA__`` JSON of a parsed page, or None and why not.

    The script is looked up in the parsed tree, and in the page's text when the tree lost it.
    """
    script = next((s for s in root.iter("script") if s.get("id") == "__NEXT_DATA__"), None)
    if script is not None:
        text = script.text or ""
    elif (span := next_data_span(page_text)) is not None:
        text = page_text[span[0] : span[1]]
    else:
        return None, "no __NEXT_DATA__ script"
    return decode_json(text, max_json_bytes)


def slug_lecture_id(tree: Any) -> str | None:
    """The lecture id that starts the page's ``query.lectureSlug`` (``"130412-router-tuning"``)."""
    value = member(member(tree, "query"), "lectureSlug")
    if not isinstance(value, str):
        return None
    match = _LEADING_ID.match(value)
    return match[1] if match else None


def find_lecture(docs: list[Mapping[str, Any]], wanted: Iterable[str | None]) -> Resource | None:
    """The first document's lecture resource whose id is the first of ``wanted`` that has one."""
    for lecture_id in dict.fromkeys(w for w in wanted if w):
        for doc in docs:
            data = doc.get("data")
            key = resource_key(data)
            if key == (LECTURE_TYPE, lecture_id) and isinstance(data, Mapping):
                return data
    return None


def related_lecture_ids(docs: list[Mapping[str, Any]], own_id: str | None) -> list[str]:
    """The ids of the first list of lectures in the page's documents (its related lectures), without
    repeats and without the lecture's own id."""
    for doc in docs:
        data = doc.get("data")
        if not isinstance(data, list):
            continue
        keys = [resource_key(item) for item in data]
        ids = [key[1] for key in keys if key is not None and key[0] == LECTURE_TYPE]
        if ids:
            return [i for i in dict.fromkeys(ids) if i != own_id]
    return []


def documents(tree: Any) -> tuple[list[Mapping[str, Any]], str | None]:
    """Every JSON:API document of the page JSON, or [] and why not."""
    try:
        return list(find_documents(tree)), None
    except RecursionError:
        return [], "__NEXT_DATA__ nested too deeply"


def lecture_from_next_data(
    docs: list[Mapping[str, Any]], wanted: Iterable[str | None], base_url: str | None = None
) -> LectureItem | None:
    """The fields of the lecture (the first of ``wanted`` ids found) in the page's documents, with its
    related lectures; None when no document holds it."""
    lecture = find_lecture(docs, wanted)
    if lecture is None:
        return None
    # The lecture's own document first: its included resources are the ones meant for it.
    own_doc = next(d for d in docs if d.get("data") is lecture)
    fields = lecture_fields(lecture, index_resources([own_doc, *docs]), base_url)
    fields.related_lecture_ids = related_lecture_ids(docs, fields.lecture_id)
    return fields
