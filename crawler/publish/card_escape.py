"""How text enters the dataset card's body: scraped values as inert inline markdown (one line, HTML and
markdown syntax escaped, ``|`` safe) and the project's own markdown made safe for one table cell.

Scraped text only ever reaches the card's body through :func:`escape_text`: a title such as ``---`` or
``<b>|</b>`` renders as text and can neither end the front matter nor break a table.
"""

from __future__ import annotations

import html
import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~$#+!{}])")


def escape_text(value: Any, *, limit: int | None = None, empty: str = "(none)") -> str:
    """Scraped text as inert inline markdown: one line, HTML and markdown syntax escaped, ``|`` safe."""
    if value is None:
        return empty
    text = " ".join(_CONTROL.sub("", str(value)).split())
    if not text:
        return empty
    if limit is not None and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))


def table_cell(markdown: str) -> str:
    """Our own markdown (e.g. a field description) made safe for one table cell."""
    return " ".join(markdown.split()).replace("|", "\\|")
