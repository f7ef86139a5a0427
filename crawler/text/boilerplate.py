"""The lecture's own blocks among a page's visible blocks.

A lecture page shows, besides the lecture (abstract, event name, title, keywords, presentation
type), the event's welcome text, related lectures as abstract + title teasers, interface labels and
a footer. The lecture's own block is found structurally: it is the longest run of (nearly) adjacent
blocks that are values of the lecture's own fields, anchored on its abstract or title. A related
teaser of the same text is only an abstract and a title, so it never outranks the real block, and a
run holding nothing but an abstract and a title is not taken when the lecture has an event name,
keywords or a type to show. Nothing that is not one of the lecture's own values is ever returned.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from crawler.schema import TEXT_BLOCK_FIELDS
from crawler.text.normalize import normalize_line

# How many blocks past the lecture's block its presentation type may sit: on the real site the
# type can follow one or two events' welcome texts (up to about twenty lines).
TYPE_LOOKAHEAD = 24


def _field(fields: Any, name: str) -> Any:
    if isinstance(fields, Mapping):
        return fields.get(name)
    return getattr(fields, name, None)


def _text(value: Any) -> str:
    return normalize_line(value) if isinstance(value, str) else ""


def _texts(value: Any) -> list[str]:
    """A text block field's value as the blocks it shows: one for a text, one a string for a list."""
    if isinstance(value, str):
        return [_text(value)]
    if isinstance(value, Sequence):
        return [_text(v) for v in value]
    return []


def _grow(
    values: Sequence[str], anchor: int, counts: Counter[str], max_gap: int
) -> tuple[list[int], Counter[str]]:
    """The run of own values around ``anchor``, forward first (the lecture's fields follow its
    abstract); up to ``max_gap`` other blocks may sit between two own values and are left out."""
    remaining = counts.copy()
    remaining[values[anchor]] -= 1
    used = [anchor]
    for step in (1, -1):
        i = anchor + step
        gap = 0
        while 0 <= i < len(values):
            if remaining[values[i]] > 0:
                remaining[values[i]] -= 1
                used.append(i)
                gap = 0
            else:
                gap += 1
                if gap > max_gap:
                    break
            i += step
    return sorted(used), remaining


def own_content_indices(
    blocks: Sequence[str], fields: Any, *, normalized: Sequence[str] | None = None
) -> list[int]:
    """Indices (ascending) of the lecture's own blocks; see :func:`own_content_blocks`. ``normalized``:
    the blocks each normalized with :func:`normalize_line` (``""`` for what is not text), when the
    caller has them."""
    norm = normalized if normalized is not None else [_text(b) for b in blocks]
    # What the lecture's own blocks say: every text block field of the schema (``TEXT_BLOCK_FIELDS``), the
    # abstract (the anchor) and the title apart from the rest, its context.
    texts = {name: _texts(_field(fields, name)) for name in TEXT_BLOCK_FIELDS}
    abstract, title, ptype, event = (
        (texts.get(name) or [""])[0] for name in ("abstract", "title", "presentation_type", "event_name")
    )
    others = [v for name, found in texts.items() if name not in ("abstract", "title") for v in found if v]
    counts = Counter(v for v in (abstract, title, *others) if v)
    context = frozenset(others)
    # Blocks that normalize to nothing (a lone ``<br>``) are transparent: work on the others only.
    shown = [i for i, v in enumerate(norm) if v]
    values = [norm[i] for i in shown]
    anchors = [i for i, v in enumerate(values) if v in (abstract, title)]
    best: tuple[tuple[int, bool, bool, int], list[int], Counter[str]] | None = None
    # Fields read from the visible page know no event name, which sits between abstract and title.
    max_gap = 0 if event else 1
    for anchor in anchors:
        used, remaining = _grow(values, anchor, counts, max_gap)
        has_context = any(values[i] in context for i in used)
        # Ties go to the run that starts at the abstract (the page's order), then to the earliest.
        score = (len(used), has_context, values[anchor] == abstract, -anchor)
        if best is None or score > best[0]:
            best = (score, used, remaining)
    if best is None:
        return []
    (_, has_context, _, _), used, remaining = best
    if context and not has_context:
        # Only an abstract and a title next to each other: the shape of a related-lecture teaser.
        return []
    if ptype and remaining[ptype] > 0:
        for i in range(used[-1] + 1, min(len(values), used[-1] + 1 + TYPE_LOOKAHEAD)):
            if values[i] in (abstract, title):
                break
            if values[i] == ptype:
                used.append(i)
                break
    return [shown[i] for i in used]


def own_content_blocks(blocks: Sequence[str], fields: Any) -> list[str]:
    """The lecture's own blocks in page order, each normalized with :func:`normalize_line`.

    ``fields`` is a mapping or an object with ``abstract``, ``event_name``, ``title``, ``keywords``
    and ``presentation_type``. The result is those values that the page actually shows, in the
    page's order, each page block used at most once: abstract, event name, title, keywords,
    presentation type on Underline. It is empty when the lecture's block cannot be found.
    """
    norm = [_text(b) for b in blocks]
    return [norm[i] for i in own_content_indices(blocks, fields, normalized=norm)]
