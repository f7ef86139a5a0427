"""Taking lectures and authors out of a release on request, before anything is written.

``remove_lectures`` lists lecture ids; ``redact_authors`` lists authors by name or ORCID iD. A removed
lecture is not published; a redacted author leaves every lecture's ``authors`` list, and their name leaves
``text``. The content hash of an edited record is computed again, so the record stays valid and the next
release's changes file carries the edited row.

A request is kept once it has been applied: ``<state>/removals.json`` holds every removal a release of
the state directory applied (:func:`load_removals`, :func:`record_removals`), and every command that
writes a release applies them with what its configuration asks, so a later command without that
configuration cannot bring a lecture or an author back. Beside the release, ``.removals.json`` (not in
the manifest, so never pushed) keeps the removed lecture ids and how many authors were redacted, never
who (:class:`ReleaseRemovals`): a command with another state directory applies those lectures too,
and refuses to publish when it knows fewer redactions than the release applied.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

from crawler import schema
from crawler.fsutil import DamagedFile, read_json_file, write_json_atomic
from crawler.schema import Author, Lecture
from crawler.state_dir import StateDir
from crawler.text.normalize import person_name

_ORCID = re.compile(r"^(?:https?://orcid\.org/)?(\d{4}-\d{4}-\d{4}-\d{3}[\dX])$", re.IGNORECASE)
# What a release keeps of its removals, beside it (not in its manifest: never pushed).
RELEASE_LEDGER = ".removals.json"


def _name_key(name: str) -> str:
    """A name as compared: :func:`person_name` (format characters out, NFC, spaces collapsed), case-folded."""
    return person_name(name).casefold()


@dataclass(frozen=True)
class RemovalRequests:
    """Removals asked for: lecture ids and authors (names or ORCID iDs), each once, in order."""

    lectures: tuple[str, ...] = ()
    authors: tuple[str, ...] = ()

    def merged(self, other: RemovalRequests) -> RemovalRequests:
        return RemovalRequests(
            tuple(dict.fromkeys([*self.lectures, *other.lectures])),
            tuple(dict.fromkeys([*self.authors, *other.authors])),
        )

    def __bool__(self) -> bool:
        return bool(self.lectures or self.authors)


def _ledger_recovery(state_dir: Path) -> str:
    return (
        f'restore it from a backup, or write it again as {{"lectures": [...], "authors": [...]}} with '
        f"every removal asked for so far (in {state_dir})"
    )


def load_removals(state_dir: Path) -> RemovalRequests:
    """Every removal a release of ``state_dir`` applied (none when the ledger does not exist)."""
    path = StateDir.of(state_dir).removals
    if not path.is_file():
        return RemovalRequests()
    data = read_json_file(path, recovery=_ledger_recovery(state_dir))
    lists = [data.get(key) if isinstance(data, dict) else None for key in ("lectures", "authors")]
    if not all(isinstance(v, list) and all(isinstance(i, str) and i.strip() for i in v) for v in lists):
        raise DamagedFile(
            path, "`lectures` and `authors` must be lists of strings", _ledger_recovery(state_dir)
        )
    return RemovalRequests(tuple(lists[0] or ()), tuple(lists[1] or ()))


def record_removals(state_dir: Path, requests: RemovalRequests) -> None:
    """Add ``requests`` to the ledger of ``state_dir`` (written only when it grows)."""
    known = load_removals(state_dir)
    merged = known.merged(requests)
    if merged != known:
        payload = {"lectures": list(merged.lectures), "authors": list(merged.authors)}
        write_json_atomic(StateDir.of(state_dir).removals, payload)


def redaction_count(authors: Iterable[str]) -> int:
    """How many people ``authors`` (redaction entries) name: distinct ORCID iDs and names as compared."""
    parsed = Redactions.parse(authors)
    return len(parsed.orcids) + len(parsed.names)


@dataclass(frozen=True)
class ReleaseRemovals:
    """What a release keeps of its removals: the lecture ids (its change files list them anyway) and how
    many authors it redacted."""

    lectures: tuple[str, ...] = ()
    authors: int = 0

    @classmethod
    def load(cls, out_dir: Path) -> ReleaseRemovals:
        path = Path(out_dir) / RELEASE_LEDGER
        if not path.is_file():
            return cls()
        recovery = f"remove it; the removals of {out_dir} are then those of the state directory"
        data = read_json_file(path, recovery=recovery)
        lectures = data.get("lectures") if isinstance(data, dict) else None
        authors = data.get("authors") if isinstance(data, dict) else None
        if not (isinstance(lectures, list) and all(isinstance(i, str) for i in lectures)) or not (
            isinstance(authors, int) and not isinstance(authors, bool) and authors >= 0
        ):
            raise DamagedFile(path, "`lectures` must list ids and `authors` be a count", recovery)
        return cls(tuple(lectures), authors)

    def save(self, out_dir: Path) -> None:
        write_json_atomic(
            Path(out_dir) / RELEASE_LEDGER, {"lectures": list(self.lectures), "authors": self.authors}
        )


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

    def matches(self, author: Author | Mapping[str, object]) -> bool:
        orcid = author.get("orcid")
        if orcid and str(orcid).upper() in self.orcids:
            return True
        name = author.get("name")
        return bool(name) and _name_key(str(name)) in self.names

    def __bool__(self) -> bool:
        return bool(self.orcids or self.names)

    def with_names_of(self, records: Iterable[Mapping[str, object]]) -> Redactions:
        """These redactions plus every name a redacted ORCID iD carries in ``records``: the same person
        listed elsewhere without an iD is redacted too."""
        if not self.orcids:
            return self
        names = set(self.names)
        for record in records:
            for author in cast(list[Author], record.get("authors") or []):
                orcid = author.get("orcid")
                if orcid and str(orcid).upper() in self.orcids and author.get("name"):
                    names.add(_name_key(str(author["name"])))
        return Redactions(self.orcids, frozenset(names))


def _without_names(text: str, names: Iterable[str]) -> str:
    out = text
    for name in sorted(set(names), key=len, reverse=True):
        words = [re.escape(w) for w in person_name(name).split()]
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
    records: Iterable[Mapping[str, object]],
    *,
    remove_lectures: Iterable[str] = (),
    redact_authors: Iterable[str] | Redactions = (),
) -> list[dict[str, object]]:
    """``records`` without the removed lecture ids and without the redacted authors.

    A redacted author is matched by ORCID iD (bare or as an ``https://orcid.org/`` URL) or by name
    (case, spacing and invisible characters aside) and dropped from ``authors``; a name that a redacted
    ORCID iD carries in ``records`` is redacted wherever it appears without an iD; every name under which
    a matched author appears is also removed from ``text``, as is a redacted name itself. Records that
    are not touched come back equal to the input; edited ones get a new ``content_sha256``.
    ``redact_authors`` may be :class:`Redactions` already expanded (the same for several calls).
    """
    removed = {str(i) for i in remove_lectures}
    records = list(records)
    redactions = (
        redact_authors
        if isinstance(redact_authors, Redactions)
        else Redactions.parse(redact_authors).with_names_of(records)
    )
    out = []
    for record in records:
        if str(record.get("lecture_id")) in removed:
            continue
        row = dict(record)
        edited = _redacted(cast(list[Author], row.get("authors") or []), row.get("text"), redactions)
        if edited is not None:
            row["authors"], row["text"] = edited
            row["content_sha256"] = schema.content_sha256(row)
        out.append(row)
    return out


def remove_from(
    lectures: Iterable[Lecture], *, remove_lectures: Iterable[str] = (), redactions: Redactions
) -> list[Lecture]:
    """:func:`apply_removals` on lecture records (``redactions`` already expanded); edited lectures are
    new records with a new ``content_sha256``, the others the records given."""
    removed = {str(i) for i in remove_lectures}
    out = []
    for lecture in lectures:
        if lecture.lecture_id in removed:
            continue
        edited = _redacted(lecture.authors, lecture.text, redactions)
        if edited is not None:
            lecture = replace(lecture, authors=edited[0], text=str(edited[1] or ""))
            lecture.content_sha256 = schema.content_sha256(lecture.values())
        out.append(lecture)
    return out


def _redacted(
    authors: list[Author], text: object, redactions: Redactions
) -> tuple[list[Author], object] | None:
    """The authors and text left once the redacted authors are taken out; None when nothing changes."""
    if not redactions:
        return None
    gone = [a for a in authors if redactions.matches(a)]
    names = [str(a["name"]) for a in gone if a.get("name")]
    new_text = _without_names(text, [*names, *redactions.names]) if isinstance(text, str) else text
    if not gone and new_text == text:
        return None
    return [a for a in authors if not redactions.matches(a)], new_text
