"""Where a published row comes from, and which answers of that source are evidence about it.

Every published table is declared with a :class:`RowSource` (:mod:`crawler.publish.tables`): the request
that answers for its rows, the answers that say a row's content is gone, and the table it summarizes when
it is derived from another. The rules that keep a dataset from losing what it published read these
declarations, never a table's name:

- a row loses its content only on its own source's word (:func:`settle_row`): a 404 or 410, or a parsed
  answer that says the thing is gone. Anything else (an HTML page where a file was asked, a robots
  refusal, a redirect off the allowed hosts, an empty or unparsable file, an ``errors`` document, a 5xx, a
  reset, no answer) is no evidence: the row published before stands, counted as kept;
- the quality gate judges every declared table's rows and content columns against the previous release
  (:mod:`crawler.schedule.tables_gate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from crawler.schema.values import has_value

# The HTTP statuses that are a resource's own word that it is gone.
GONE_STATUSES = frozenset({404, 410})
# The ``problem`` a row says when its source answered 404 or 410.
NOT_FOUND = "not_found"
# What the report calls a row kept because its source's answer was no evidence.
KEPT_UNREADABLE = "kept: unreadable answer"


@dataclass(frozen=True)
class RowSource:
    """The request that answers for a table's rows.

    ``request`` says in words which request it is (the docs show it); ``gone`` are the
    values of the row's ``problem`` column that are that request's own word that the content is gone
    (every other problem is no evidence); ``derived_from`` names the table a summary table is made of (its
    rows come and go with that table's rows, and need no rule of their own); ``history`` marks a table
    whose rows are never taken back (the change files).
    """

    request: str
    gone: frozenset[str] = frozenset({NOT_FOUND})
    problem_column: str | None = "problem"
    derived_from: str | None = None
    history: bool = False


R = TypeVar("R")


def has_content(row: Any, content: Sequence[str]) -> bool:
    """Whether any of the ``content`` columns of ``row`` (a record or a mapping) holds a value."""
    get = row.get if isinstance(row, dict) else lambda name: getattr(row, name, None)
    return any(has_value(get(name)) for name in content)


def says_gone(row: Any, source: RowSource) -> bool:
    """Whether ``row``'s problem is its source's own word that its content is gone."""
    if source.problem_column is None:
        return False
    get = row.get if isinstance(row, dict) else lambda name: getattr(row, name, None)
    return get(source.problem_column) in source.gone


def settle_row(new: R, previous: R | None, *, content: Sequence[str], source: RowSource) -> tuple[R, bool]:
    """The row to publish when ``new`` answers for a row published as ``previous``, and whether the
    previous row was kept: a ``new`` row without content replaces a ``previous`` one with content only
    when its source says the content is gone; otherwise the answer is no evidence and ``previous`` stands
    (a previous row without content either gives way to the newer word on why)."""
    if previous is None or has_content(new, content) or says_gone(new, source):
        return new, False
    if not has_content(previous, content):
        return new, False
    return previous, True
