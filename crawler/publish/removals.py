"""Taking lectures and authors out of a release on request, before anything is written.

``remove_lectures`` lists lecture ids; ``redact_authors`` lists authors by name or ORCID iD. A removed
lecture is not published; a redacted author leaves every lecture's ``authors`` list, and their name leaves
``text``. The content hash of an edited record is computed again, so the record stays valid and the next
release's changes file carries the edited row.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from crawler import schema

_ORCID = re.compile(r"^(?:https?://orcid\.org/)?(\d{4}-\d{4}-\d{4}-\d{3}[\dX])$", re.IGNORECASE)


def _name_key(name: str) -> str:
    return " ".join(unicodedata.normalize("NFC", name).split()).casefold()


@dataclass(frozen=True)
class Redactions:
    """The authors to redact: ORCID iDs (bare, upper-case check digit) and names (NFC, spaces collapsed,
    case-folded)."""

    orcids: frozenset[str]
    names: frozenset[str]

    @classmethod
    def parse(cls, entries: Iterable[str]) -> Redactions:
        orcids, names = set(), set()
        for entry in entries:
            if not isinstance(entry, str) or not entry.strip():
                raise ValueError(f"redact_authors entries must be names or ORCID iDs, got {entry!r}")
            match = _ORCID.match(entry.strip())
            if match:
                orcids.add(match.group(1).upper())
            else:
                names.add(_name_key(entry))
        return cls(frozenset(orcids), frozenset(names))

    def matches(self, author: Mapping[str, Any]) -> bool:
        orcid = author.get("orcid")
        if orcid and str(orcid).upper() in self.orcids:
            return True
        name = author.get("name")
        return bool(name) and _name_key(str(name)) in self.names

    def __bool__(self) -> bool:
        return bool(self.orcids or self.names)


def _without_names(text: str, names: Iterable[str]) -> str:
    out = text
    for name in sorted(set(names), key=len, reverse=True):
        words = [re.escape(w) for w in unicodedata.normalize("NFC", name).split()]
        if words:
            out = re.sub(r"\b" + r"\s+".join(words) + r"\b", "", out, flags=re.IGNORECASE)
    if out == text:
        return text
    # Tidy what the removal left: doubled separators, blank runs, lines that held only the name.
    lines = [
        re.sub(r"[ \t]+,", ",", re.sub(r"[ \t]{2,}", " ", re.sub(r"(,\s*){2,}", ", ", line))).strip(" ,;")
        for line in out.split("\n")
    ]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


def apply_removals(
    records: Iterable[Mapping[str, Any]],
    *,
    remove_lectures: Iterable[str] = (),
    redact_authors: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """``records`` without the removed lecture ids and without the redacted authors.

    A redacted author is matched by ORCID iD (bare or as an ``https://orcid.org/`` URL) or by name
    (case and spacing aside) and dropped from ``authors``; every name under which a matched author
    appears is also removed from ``text``, as is a redacted name itself. Records that are not touched
    come back equal to the input; edited ones get a new ``content_sha256``.
    """
    removed = {str(i) for i in remove_lectures}
    redactions = Redactions.parse(redact_authors)
    out = []
    for record in records:
        if str(record.get("lecture_id")) in removed:
            continue
        row = dict(record)
        if redactions:
            row = _redact(row, redactions)
        out.append(row)
    return out


def _redact(row: dict[str, Any], redactions: Redactions) -> dict[str, Any]:
    authors = list(row.get("authors") or [])
    gone = [a for a in authors if redactions.matches(a)]
    text = row.get("text")
    names = [str(a["name"]) for a in gone if a.get("name")]
    new_text = _without_names(text, [*names, *redactions.names]) if isinstance(text, str) else text
    if not gone and new_text == text:
        return row
    row["authors"] = [a for a in authors if not redactions.matches(a)]
    row["text"] = new_text
    row["content_sha256"] = schema.content_sha256(row)
    return row
