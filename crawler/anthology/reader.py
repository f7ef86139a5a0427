"""The ACL Anthology's XML collection files as typed papers.

A collection file (``data/xml/<collection>.xml`` in the Anthology's repository) holds volumes, and
volumes hold papers: title, authors (``<first>``, ``<last>``), abstract, with inline markup
(``<fixed-case>``, ``<i>``, ``<b>``, ``<tex-math>``, ``<url>``...) whose text is kept and tags dropped.
Files are read with lxml's ``iterparse``, each paper cleared once read, so memory holds the papers
and not the trees.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

ANTHOLOGY_URL = "https://aclanthology.org/{id}/"
# A new-style collection id starts with its year (``2025.emnlp``); older ones are a letter and two digits.
_NEW_STYLE = re.compile(r"^\d{4}\.")
_OLD_STYLE = re.compile(r"^[A-Z]\d{2}$")


class AnthologyError(ValueError):
    """A collection file that cannot be read; the message names the file and where it broke."""


@dataclass(frozen=True, slots=True)
class Author:
    first: str
    last: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}".strip()


@dataclass(frozen=True, slots=True)
class Paper:
    """One paper of the Anthology, its text free of markup (spaces collapsed)."""

    anthology_id: str
    title: str
    authors: tuple[Author, ...]
    abstract: str = ""
    volume_id: str = ""

    @property
    def url(self) -> str:
        return anthology_url(self.anthology_id)


@dataclass(frozen=True, slots=True)
class ReadSummary:
    """What a directory held: collection files read, other XML files skipped, papers found."""

    files: int
    skipped: tuple[str, ...]
    papers: int


def anthology_url(anthology_id: str) -> str:
    """``https://aclanthology.org/<id>/``."""
    return ANTHOLOGY_URL.format(id=anthology_id)


def build_id(collection_id: str, volume_id: str, paper_id: str) -> str:
    """The Anthology id of a paper: ``2025.emnlp`` + ``main`` + ``1`` -> ``2025.emnlp-main.1``; the
    older, width-padded form for collections before 2020: ``P18`` + ``1`` + ``7`` -> ``P18-1007``,
    ``W18`` + ``63`` + ``10`` -> ``W18-6310``."""
    if _NEW_STYLE.match(collection_id):
        return f"{collection_id}-{volume_id}.{paper_id}"
    if not _OLD_STYLE.match(collection_id) or not volume_id.isdigit() or not paper_id.isdigit():
        raise ValueError(
            f"not Anthology ids: collection {collection_id!r}, volume {volume_id!r}, paper {paper_id!r}"
        )
    two_digit_volumes = (
        collection_id.startswith("W")
        or collection_id == "C69"
        or (collection_id == "D19" and int(volume_id) >= 5)
    )
    if two_digit_volumes:
        return f"{collection_id}-{int(volume_id):02d}{int(paper_id):02d}"
    return f"{collection_id}-{int(volume_id)}{int(paper_id):03d}"


def _text(element: etree._Element | None) -> str:
    """An element's text with every inline tag dropped and its text kept, spaces collapsed."""
    if element is None:
        return ""
    return " ".join("".join(element.itertext()).split())


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def read_collection(path: Path) -> Iterator[Paper]:
    """The papers of one collection file, in file order; raise :class:`AnthologyError` when the file is
    not XML or not a collection (a ``<collection id=...>`` root)."""
    collection_id = ""
    volume_id = ""
    try:
        for event, element in etree.iterparse(
            str(path), events=("start", "end"), resolve_entities=False, no_network=True, huge_tree=True
        ):
            tag = _local(element.tag)
            if event == "start":
                if not collection_id:
                    if tag != "collection" or not element.get("id"):
                        raise AnthologyError(f"{path}: not an Anthology collection file (root <{tag}>)")
                    collection_id = str(element.get("id"))
                elif tag == "volume":
                    volume_id = str(element.get("id") or "")
                continue
            if tag == "paper":
                paper = _paper(element, collection_id, volume_id, path)
                element.clear(keep_tail=False)
                # Papers already read are dropped from the root too, so a big file stays small in memory.
                parent = element.getparent()
                while parent is not None and element.getprevious() is not None:
                    del parent[0]
                if paper is not None:
                    yield paper
            elif tag in ("frontmatter", "meta"):
                element.clear(keep_tail=False)
    except etree.XMLSyntaxError as exc:
        raise AnthologyError(f"{path}: not well-formed XML: {exc}") from None
    except OSError as exc:
        raise AnthologyError(f"{path}: cannot be read: {exc}") from None


def _paper(element: etree._Element, collection_id: str, volume_id: str, path: Path) -> Paper | None:
    paper_id = str(element.get("id") or "")
    # A paper taken out of the Anthology keeps its place in the file but is no paper to link to.
    if not paper_id or element.find("removed") is not None:
        return None
    title = _text(element.find("title"))
    if not title:
        return None
    try:
        anthology_id = build_id(collection_id, volume_id, paper_id)
    except ValueError as exc:
        raise AnthologyError(f"{path}: {exc}") from None
    authors = tuple(
        Author(_text(a.find("first")), _text(a.find("last")))
        for a in element.findall("author")
        if _text(a.find("last")) or _text(a.find("first"))
    )
    return Paper(
        anthology_id=anthology_id,
        title=title,
        authors=authors,
        abstract=_text(element.find("abstract")),
        volume_id=f"{collection_id}-{volume_id}" if _NEW_STYLE.match(collection_id) else "",
    )


def collection_files(root: Path) -> list[Path]:
    """Every ``*.xml`` file under ``root`` (or ``root`` itself when it is a file), sorted by path."""
    root = Path(root)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise AnthologyError(f"{root}: no such file or directory")
    return sorted(p for p in root.rglob("*.xml") if p.is_file())


def _is_collection(path: Path) -> bool:
    """Whether the file's root element is ``<collection>`` (other XML in a checkout is skipped)."""
    try:
        for _event, element in etree.iterparse(
            str(path), events=("start",), resolve_entities=False, no_network=True
        ):
            return _local(element.tag) == "collection"
    except etree.XMLSyntaxError:
        # Broken files are reported by read_collection with their line.
        return True
    return False


def read_papers(root: Path) -> tuple[list[Paper], ReadSummary]:
    """Every paper of every collection file under ``root``, each id once (the first file's wins).

    XML files whose root is not ``<collection>`` are skipped and named in the summary; a collection file
    that is not well-formed raises :class:`AnthologyError` naming it."""
    papers: list[Paper] = []
    seen: set[str] = set()
    skipped: list[str] = []
    files = 0
    for path in collection_files(root):
        if not _is_collection(path):
            skipped.append(str(path))
            continue
        files += 1
        for paper in read_collection(path):
            if paper.anthology_id not in seen:
                seen.add(paper.anthology_id)
                papers.append(paper)
    return papers, ReadSummary(files=files, skipped=tuple(skipped), papers=len(papers))


def iter_papers(paths: Iterable[Path]) -> Iterator[Paper]:
    """The papers of several collection files, in order."""
    for path in paths:
        yield from read_collection(path)
