"""A dataset card template rendered strictly: every name it uses must be one the card defines.

A name the card does not define (``{{ no_such_thing }}``, ``{{ x.y }}`` on an undefined ``x``) would
render as nothing and leave a hole in the published card, so it is refused twice: by :func:`undefined_names`
before anything is read or written (the names are known from the template's text alone), and while
rendering (an attribute or key a value lacks, ``{{ stats.no_such_field }}``, shows only then), with
:class:`CardTemplateError` naming the template, the name and its line.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import meta, nodes

from crawler.app.arguments import ArgumentError

# The names the card's YAML metadata gives the template (``DatasetCardData.to_dict()`` of
# ``card.card_data``, which sets these), besides the YAML itself as ``card_data``.
CARD_DATA_NAMES = frozenset(
    {
        "card_data",
        "pretty_name",
        "language",
        "license",
        "license_name",
        "license_details",
        "annotations_creators",
        "language_creators",
        "multilinguality",
        "size_categories",
        "source_datasets",
        "task_categories",
        "task_ids",
        "tags",
        "configs",
        "dataset_info",
    }
)


class CardTemplateError(ArgumentError):
    """A card template uses a name the card does not define; the message names it and its line."""


def _environment() -> jinja2.Environment:
    # ``jinja2.Template(text)`` renders with a default environment: the same settings, strict.
    return jinja2.Environment(undefined=jinja2.StrictUndefined)


def template_names() -> frozenset[str]:
    """Every top-level name a card template may use."""
    from crawler.publish.card import CardContext

    context_names = CardContext.__required_keys__ | CardContext.__optional_keys__
    return frozenset(context_names) | CARD_DATA_NAMES | frozenset(_environment().globals)


def undefined_names(source: str) -> list[tuple[str, int]]:
    """The names ``source`` (a template's text, which must parse) reads that the card does not define,
    each with the line it is first read on, in the order of the text."""
    tree = _environment().parse(source)
    missing = meta.find_undeclared_variables(tree) - template_names()
    first: dict[str, int] = {}
    for node in tree.find_all(nodes.Name):
        if node.ctx == "load" and node.name in missing:
            first.setdefault(node.name, node.lineno)
    return sorted(first.items(), key=lambda item: (item[1], item[0]))


def check_names(source: str, *, where: str) -> None:
    """:class:`CardTemplateError` when ``source`` reads a name the card does not define; ``where``
    names the template in the message (``--card-template 'card.md'``)."""
    missing = undefined_names(source)
    if missing:
        names = ", ".join(f"{name!r} (line {line})" for name, line in missing)
        raise CardTemplateError(
            f"{where} uses what the card does not define: {names}; the names it defines are"
            " CardContext's in crawler/publish/card.py and the metadata's fields"
        )


def _template_line(error: BaseException) -> int | None:
    """The template line an error was raised on: jinja2 puts the template's frames in the traceback."""
    line = None
    trace: types.TracebackType | None = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == "<template>":
            line = trace.tb_lineno
        trace = trace.tb_next
    return line


def render_template(template: Path, context: Mapping[str, Any]) -> str:
    """``template``'s text rendered with ``context``; :class:`CardTemplateError` when it reads a name,
    attribute or key that ``context`` does not hold."""
    source = template.read_text(encoding="utf-8")
    where = f"card template {str(template)!r}"
    check_names(source, where=where)
    try:
        return _environment().from_string(source).render(**context)
    except jinja2.UndefinedError as exc:
        line = _template_line(exc)
        line_note = f" (line {line})" if line is not None else ""
        raise CardTemplateError(
            f"{where} uses what the card does not define: {exc.message}{line_note}"
        ) from None
