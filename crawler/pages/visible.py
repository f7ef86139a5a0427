"""What a reader of a lecture page sees: meta tags, ``<title>``, ``<h1>``, the premium label.

The fallback when the page's JSON is missing or unusable, and the cross-check of the JSON when it is
there. CSS class names of the real site are unknown, so nothing here depends on them.
"""

from __future__ import annotations

import re
from typing import Any

from crawler.pages.fields import LectureItem
from crawler.text.normalize import collapse_whitespace, normalize_line

PREMIUM_LABEL = "Premium content"

_TITLE_SUFFIX = re.compile(r"\s*\|\s*Underline\s*$")
_HTML_START = re.compile(r"<html[\s>]", re.IGNORECASE)
_HTML_END = re.compile(r"</html\s*>", re.IGNORECASE)


def meta_content(root: Any, *names: str) -> str | None:
    """The first non-empty ``content`` of a ``<meta>`` whose ``property`` or ``name`` is one of
    ``names`` (lower case), whitespace collapsed."""
    for meta in root.iter("meta"):
        key = meta.get("property") or meta.get("name") or ""
        if key.strip().lower() in names:
            content = collapse_whitespace(meta.get("content") or "")
            if content:
                return content
    return None


def _first_text(root: Any, tag: str) -> str | None:
    for element in root.iter(tag):
        text = collapse_whitespace(element.text_content() or "")
        if text:
            return text
    return None


def title(root: Any) -> str | None:
    """``og:title``, else ``<title>``, else the first ``<h1>``, without the `` | Underline`` suffix."""
    for candidate in (meta_content(root, "og:title"), _first_text(root, "title"), _first_text(root, "h1")):
        if candidate:
            candidate = _TITLE_SUFFIX.sub("", candidate)
            if candidate:
                return candidate
    return None


def abstract(root: Any) -> str | None:
    """The page's description meta tag."""
    return meta_content(root, "description", "og:description")


def shows_premium_label(blocks: list[str]) -> bool:
    """True when one of the page's text blocks is the premium label."""
    return PREMIUM_LABEL in blocks


def cut_short(text: str) -> bool:
    """A document that opens ``<html>`` and never closes it (what may follow ``</html>`` does not count)."""
    if _HTML_START.search(text[:4096]) is None:
        return False
    # "</html>" as written, near the end of a page, is found from the end at once; only a page without
    # it needs the expression's scan of all of its text.
    return text.rfind("</html>") < 0 and _HTML_END.search(text) is None


def cross_check(fields: LectureItem, blocks: list[str]) -> list[str]:
    """Where the page's JSON and what the page shows disagree (title, abstract, premium label)."""
    if not blocks:
        return ["the page shows no text"]
    shown = {normalize_line(b) for b in blocks}
    problems = []
    for name in ("title", "abstract"):
        value = getattr(fields, name)
        if isinstance(value, str) and normalize_line(value) and normalize_line(value) not in shown:
            problems.append(f"{name} of __NEXT_DATA__ not visible on the page")
    if fields.is_premium != (PREMIUM_LABEL in shown):
        problems.append(
            f"package {fields.package!r} but the {PREMIUM_LABEL!r} label is "
            + ("missing" if fields.is_premium else "shown")
        )
    return problems
