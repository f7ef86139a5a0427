"""Taking lectures and authors out of a release on request, before anything is written.

``remove_lectures`` lists lecture ids; ``redact_authors`` lists authors by name or ORCID iD. A removed
lecture is not published; a redacted author leaves every lecture's ``authors`` list, and their name leaves
``text``. The content hash of an edited record is computed again, so the record stays valid and the next
release's changes file carries the edited row.

A request is kept once it has been applied: ``<state>/removals.json`` holds every removal a release of
the state directory applied (:func:`load_removals`, :func:`record_removals`), and every command that
writes a release applies them with what its configuration asks, so a later command without that
configuration cannot bring a lecture or an author back. Every release carries its own ledger,
``removals.json`` (:class:`ReleaseRemovals`), listed in its manifest and pushed with it: the removed
lecture ids and, for each redacted author, the SHA-256 of the ORCID iD or the name as compared, never
who. A redaction entry may be such a digest (``orcid-sha256:<hex>``, ``name-sha256:<words>:<hex>``):
it matches what the name or iD it was made of matches, so a state directory lost and restored from
the Hub, or another state directory, applies every removal the release applied.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import cast

from crawler import schema
from crawler.schema import Author, Lecture
from crawler.state.fsutil import DamagedFile, read_json_file, write_json_atomic
from crawler.state.layout import StateDir
from crawler.text.normalize import person_name

_ORCID = re.compile(r"^(?:https?://orcid\.org/)?(\d{4}-\d{4}-\d{4}-\d{3}[\dX])$", re.IGNORECASE)
# A redaction kept as a digest: of an ORCID iD, or of a name (with its number of words).
_ORCID_DIGEST = re.compile(r"^orcid-sha256:[0-9a-f]{64}$")
_NAME_DIGEST = re.compile(r"^name-sha256:([1-9]\d{0,2}):[0-9a-f]{64}$")
# The punctuation around a run of words in a text (a name's first and last words are taken without it).
_EDGE = re.compile(r"^\W+|\W+$")
_HEAD, _TAIL = re.compile(r"^\W+"), re.compile(r"\W+$")
# The ledger every release keeps of its removals, listed in its manifest (so pushed with it).
RELEASE_LEDGER = "removals.json"
# What releases made before kept beside them (not in the manifest: never pushed).
LEGACY_RELEASE_LEDGER = ".removals.json"
RELEASE_LEDGER_FORMAT = 1


def _name_key(name: str) -> str:
    """A name as compared: :func:`person_name` (format characters out, NFC, spaces collapsed), case-folded."""
    return person_name(name).casefold()


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def orcid_digest(orcid: str) -> str:
    """The redaction entry that matches a bare ORCID iD (upper-case check digit) without naming it."""
    return f"orcid-sha256:{_sha256(orcid)}"


def name_digest(key: str) -> str:
    """The redaction entry that matches a name as compared (see :func:`_name_key`) without naming it."""
    return f"name-sha256:{len(key.split())}:{_sha256(key)}"


def is_digest(entry: str) -> bool:
    """Whether a redaction entry is a digest rather than a name or an ORCID iD."""
    return bool(_ORCID_DIGEST.match(entry) or _NAME_DIGEST.match(entry))


@dataclass(frozen=True)
class RemovalRequests:
    """Removals asked for: lecture ids and authors (names, ORCID iDs, or digests a release's ledger
    kept), each once, in order."""

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
    """What a release keeps of the removals it applied (``removals.json``, listed in its manifest): the
    lecture ids (its change files list them anyway) and a digest of every author redaction (ORCID iDs,
    names, and the names a redacted ORCID iD carried), never who. ``authors`` is what a release made
    before kept beside it instead of digests: how many authors it redacted. ``missing``: the manifest
    lists the ledger but the release folder lacks it."""

    lectures: tuple[str, ...] = ()
    redactions: tuple[str, ...] = ()
    authors: int = 0
    missing: bool = False

    @classmethod
    def of(cls, lectures: Iterable[str], redactions: Redactions) -> ReleaseRemovals:
        return cls(tuple(dict.fromkeys(str(i) for i in lectures)), redactions.digests())

    def requests(self, known: RemovalRequests) -> RemovalRequests:
        """The removals to apply again beside ``known``: the lecture ids, and the redactions ``known``
        does not name already, as digest entries."""
        named = set(Redactions.parse(known.authors).digests())
        return RemovalRequests(self.lectures, tuple(d for d in self.redactions if d not in named))

    def save(self, directory: Path) -> None:
        payload = {
            "format": RELEASE_LEDGER_FORMAT,
            "lectures": list(self.lectures),
            "redactions": list(self.redactions),
        }
        write_json_atomic(Path(directory) / RELEASE_LEDGER, payload)

    @classmethod
    def load(cls, out_dir: Path) -> ReleaseRemovals:
        """The removals the release in ``out_dir`` applied (none when there is no release or it applied
        none); :class:`DamagedFile` when its ledger differs from the manifest or lost its shape."""
        from crawler.publish.manifest import file_entry, read_manifest

        out_dir = Path(out_dir)
        manifest = read_manifest(out_dir)
        listed = manifest["files"].get(RELEASE_LEDGER) if manifest is not None else None
        if listed is None:
            return cls._legacy(out_dir)
        path = out_dir / RELEASE_LEDGER
        if not path.is_file():
            return cls(missing=True)
        recovery = (
            f"restore the release from the Hub (hf download --repo-type dataset <repo> --local-dir {out_dir})"
        )
        if file_entry(path) != listed:
            raise DamagedFile(path, "its size or sha256 differs from manifest.json", recovery)
        data = read_json_file(path, recovery=recovery)
        found = [data.get(key) if isinstance(data, dict) else None for key in ("lectures", "redactions")]
        if not (
            isinstance(data, dict)
            and data.get("format") == RELEASE_LEDGER_FORMAT
            and all(isinstance(v, list) and all(isinstance(i, str) for i in v) for v in found)
            and all(is_digest(i) for i in cast(list[str], found[1]))
        ):
            raise DamagedFile(
                path, "`lectures` must list ids and `redactions` digests, in format 1", recovery
            )
        return cls(tuple(cast(list[str], found[0])), tuple(cast(list[str], found[1])))

    @classmethod
    def _legacy(cls, out_dir: Path) -> ReleaseRemovals:
        """What a release made before kept beside it: lecture ids and a count of redactions."""
        path = out_dir / LEGACY_RELEASE_LEDGER
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
        return cls(tuple(lectures), authors=authors)


@dataclass(frozen=True)
class Redactions:
    """The authors to redact: ORCID iDs (bare, upper-case check digit) and names (NFC, spaces collapsed,
    case-folded), each either as such or as a digest entry (see :func:`orcid_digest`,
    :func:`name_digest`) that matches what it was made of."""

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
            elif _ORCID_DIGEST.match(entry.strip()):
                orcids.add(entry.strip())
            elif _NAME_DIGEST.match(entry.strip()):
                names.add(entry.strip())
            else:
                names.add(_name_key(entry))
        return cls(frozenset(orcids), frozenset(names))

    @cached_property
    def _digested(self) -> bool:
        return any(is_digest(e) for e in self.orcids | self.names)

    @cached_property
    def plain_names(self) -> frozenset[str]:
        """The names given as such (not as digests)."""
        return frozenset(n for n in self.names if not _NAME_DIGEST.match(n))

    @cached_property
    def _digest_words(self) -> tuple[int, ...]:
        """How many words the names given as digests have, each count once."""
        found = (_NAME_DIGEST.match(n) for n in self.names)
        return tuple(sorted({int(m.group(1)) for m in found if m}))

    def redacts_orcid(self, orcid: object) -> bool:
        if not orcid:
            return False
        bare = str(orcid).upper()
        return bare in self.orcids or (self._digested and orcid_digest(bare) in self.orcids)

    def redacts_name(self, name: object) -> bool:
        if not name:
            return False
        key = _name_key(str(name))
        return key in self.names or (self._digested and name_digest(key) in self.names)

    def matches(self, author: Author | Mapping[str, object]) -> bool:
        return self.redacts_orcid(author.get("orcid")) or self.redacts_name(author.get("name"))

    def __bool__(self) -> bool:
        return bool(self.orcids or self.names)

    def digests(self) -> tuple[str, ...]:
        """Every redaction as a digest entry, sorted: what a release's ledger keeps of them."""
        orcids = {o if is_digest(o) else orcid_digest(o) for o in self.orcids}
        names = {n if is_digest(n) else name_digest(n) for n in self.names}
        return tuple(sorted(orcids | names))

    def names_in(self, text: str) -> list[str]:
        """The runs of words in ``text`` that are names given as digests, as ``text`` spells them (a
        run's first and last words without the punctuation around them)."""
        if not self._digest_words:
            return []
        spelled = [m.group() for m in re.finditer(r"\S+", text)]
        keys = [_name_key(w) for w in spelled]
        # Each word as a run's first word (punctuation before it dropped) and as its last (after it).
        heads, tails = [_HEAD.sub("", k) for k in keys], [_TAIL.sub("", k) for k in keys]
        found = []
        for count in self._digest_words:
            for start in range(len(spelled) - count + 1):
                end = start + count - 1
                if count == 1:
                    key = _EDGE.sub("", keys[start])
                else:
                    key = " ".join([heads[start], *keys[start + 1 : end], tails[end]])
                if key and f"name-sha256:{count}:{_sha256(key)}" in self.names and len(key.split()) == count:
                    found.append(_EDGE.sub("", " ".join(spelled[start : end + 1])))
        return found

    def with_names_of(self, records: Iterable[Mapping[str, object]]) -> Redactions:
        """These redactions plus every name a redacted ORCID iD carries in ``records``: the same person
        listed elsewhere without an iD is redacted too."""
        if not self.orcids:
            return self
        names = set(self.names)
        for record in records:
            for author in cast(list[Author], record.get("authors") or []):
                if self.redacts_orcid(author.get("orcid")) and author.get("name"):
                    names.add(_name_key(str(author["name"])))
        return Redactions(self.orcids, frozenset(names))


def without_redacted_names(text: str, redactions: Redactions) -> str:
    """``text`` without the names of the redacted authors (given as such, or as digests as ``text``
    spells them), as a lecture's ``text`` loses them: for the release's other texts (a transcript)."""
    if not redactions:
        return text
    return _without_names(text, [*redactions.plain_names, *redactions.names_in(text)])


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
    if isinstance(text, str):
        new_text: object = _without_names(text, [*names, *redactions.plain_names, *redactions.names_in(text)])
    else:
        new_text = text
    if not gone and new_text == text:
        return None
    return [a for a in authors if not redactions.matches(a)], new_text
