"""The columns tables of ``docs/columns.md``, generated from the schema so the two cannot disagree.

A page says where a table's columns go with a marker on a line of its own, ``<!-- columns: lectures -->``;
:func:`render_page` replaces each marker with the table's description and its columns (name, type,
nullable, meaning), read off the table's spec in :mod:`crawler.publish.tables` (the ``lectures`` and
``transcripts`` tables are the records of :mod:`crawler.schema` as they are). MkDocs runs it on every page
(``docsgen/hook.py``); ``python -m docsgen.columns docs/columns.md`` prints a page as it is built.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from crawler.publish.card import columns_markdown
from crawler.publish.card_statistics import table_cell
from crawler.publish.tables import DECLARED_TABLES, TableSpec

MARKER = re.compile(r"^<!-- columns: (?P<table>[a-z_]+) -->$", re.MULTILINE)
# ``changes`` is declared for the gate with two of its columns only: its files' own columns are in
# ``crawler/publish/changes.py`` and the output layout says what each holds.
DOCUMENTED: dict[str, TableSpec] = {spec.name: spec for spec in DECLARED_TABLES if spec.name != "changes"}


class UnknownTable(ValueError):
    """A marker names no documented table."""


def table_markdown(spec: TableSpec) -> str:
    """What a marker becomes: the table's description, where its rows are stored, then its columns."""
    lead = table_cell(spec.description)
    if spec.stored_in:
        lead += f" Its columns are in the `{spec.stored_in}` files: no file of its own."
    return f"{lead}\n\n{columns_markdown(spec)}"


def render_page(markdown: str) -> str:
    """The page with each ``<!-- columns: NAME -->`` marker replaced by that table."""

    def replace(match: re.Match[str]) -> str:
        name = match.group("table")
        if name not in DOCUMENTED:
            raise UnknownTable(f"no table {name!r} to document; the tables are {', '.join(DOCUMENTED)}")
        return table_markdown(DOCUMENTED[name])

    return MARKER.sub(replace, markdown)


def markers(markdown: str) -> list[str]:
    """The tables a page's markers name, in order."""
    return [m.group("table") for m in MARKER.finditer(markdown)]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m docsgen.columns PAGE.md", file=sys.stderr)
        return 2
    try:
        sys.stdout.write(render_page(Path(args[0]).read_text(encoding="utf-8")))
    except (OSError, UnknownTable) as exc:
        print(f"docsgen.columns: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
