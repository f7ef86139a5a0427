"""The ACL Anthology's XML collection files as typed papers.

A collection file (``data/xml/<collection>.xml`` in the Anthology's repository) holds volumes, and
volumes hold papers: title, authors (``<first>``, ``<last>``), abstract, with inline markup
(``<fixed-case>``, ``<i>``, ``<b>``, ``<tex-math>``, ``<url>``...) whose text is kept and tags dropped.
A paper is dated by its volume's ``<meta>`` (``<year>``, ``<month>``; the collection id's year when the
volume gives none) and placed at the events its volume is at (see :mod:`crawler.anthology.timing`): its
venues' (``<venue>``), the one a Findings volume is named after, and those whose ``<event>`` element lists
the volume under ``<colocated>``, in any collection file read.
Files are parsed as a stream (lxml's parser with a target, fed a chunk at a time): no tree is built and
no text is held past :data:`MAX_TEXT` characters, so memory holds the papers and not the files, whatever
one element of a file holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from lxml import etree

from crawler.anthology.timing import JOURNAL_VENUES, TimeAndPlace, event_ids, month_number

ANTHOLOGY_URL = "https://aclanthology.org/{id}/"
# The most characters a title, an abstract or a name may hold. The Anthology's longest abstracts hold a
# few thousand; a text past this is dropped (counted in the summary) and never held whole: the reader
# keeps at most this much of an element's text.
MAX_TEXT = 20_000
# Bytes of a file handed to the parser at a time.
READ_CHUNK = 1 << 16
# How many dropped texts and refused ids a summary names (all are counted).
LISTED = 20
# A new-style collection id starts with its year (``2025.emnlp``); older ones are a letter and two digits.
_NEW_STYLE = re.compile(r"^\d{4}\.")
_OLD_STYLE = re.compile(r"^[A-Z]\d{2}$")
# The Anthology's own patterns: a collection id, and a paper's full id, new style (``2025.emnlp-main.1``:
# year.venue-volume.number, lower-case letters and digits) or old (``P19-1001``, ``W18-6310``).
COLLECTION_ID = re.compile(r"[0-9]{4}\.[a-z0-9]+|[A-Z][0-9]{2}")
PAPER_ID = re.compile(r"[0-9]{4}\.[a-z0-9]+-[a-z0-9]+\.[a-z0-9]+|[A-Z][0-9]{2}-[0-9]{4}")
# Venues every volume of a kind shares (all workshops, all Findings): no event of their own to place a
# volume at. A Findings volume is at the event it is named after (``2025.findings-emnlp``: emnlp-2025).
SHARED_VENUES = frozenset({"ws", "findings"})
FINDINGS = "findings"


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
    # The volume's year and month (None when unknown), whether it is a journal's, and the ids of the
    # events it is at (``emnlp-2025``).
    year: int | None = None
    month: int | None = None
    journal: bool = False
    events: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return anthology_url(self.anthology_id)

    @property
    def time(self) -> TimeAndPlace:
        """When and where the paper was published, as :func:`crawler.anthology.timing.paper_in_time`
        judges it; the year of its id when the volume gave none."""
        year = self.year if self.year is not None else year_of_id(self.anthology_id)
        return TimeAndPlace(year, self.month, frozenset(self.events), self.journal)


@dataclass(slots=True)
class ReadSummary:
    """What a directory held: collection files read, other XML files skipped, papers found; texts
    dropped for being past :data:`MAX_TEXT` (``capped``) and papers left out for an id that is not the
    Anthology's (``invalid_ids``), counted over the files as they are read, the first :data:`LISTED` of
    them named in ``notes``."""

    files: int = 0
    skipped: tuple[str, ...] = ()
    papers: int = 0
    capped: int = 0
    invalid_ids: int = 0
    notes: list[str] = field(default_factory=list)
    # Full volume id -> ids of the events whose <colocated> list names it.
    colocated: dict[str, set[str]] = field(default_factory=dict)

    def note(self, text: str) -> None:
        if len(self.notes) < LISTED:
            self.notes.append(text)


def anthology_url(anthology_id: str) -> str:
    """``https://aclanthology.org/<id>/``."""
    return ANTHOLOGY_URL.format(id=anthology_id)


def is_anthology_id(text: str) -> bool:
    """Whether ``text`` is a paper's id as the Anthology writes them: ``2025.emnlp-main.123`` or
    ``P19-1001``."""
    return PAPER_ID.fullmatch(text) is not None


def year_of_id(anthology_id: str) -> int | None:
    """The year in an Anthology id (a paper's, volume's or collection's): ``2025.emnlp-main.1`` -> 2025,
    ``P19-1001`` -> 2019, ``C69-0101`` -> 1969; None when it is none of those."""
    if _NEW_STYLE.match(anthology_id):
        return int(anthology_id[:4])
    if re.match(r"^[A-Z]\d{2}(?![0-9])", anthology_id):
        two = int(anthology_id[1:3])
        # Old-style ids ran from the 1950s to 2019; new-style ids began in 2020.
        return 2000 + two if two < 50 else 1900 + two
    return None


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


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


class _Text:
    """One element's text as the parser hands it over, kept up to :data:`MAX_TEXT` characters: past
    that, what was kept is let go and the rest is not kept."""

    __slots__ = ("parts", "size")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0

    def add(self, data: str) -> None:
        self.size += len(data)
        if self.size > MAX_TEXT:
            self.parts = []
        else:
            self.parts.append(data)

    @property
    def capped(self) -> bool:
        return self.size > MAX_TEXT

    def value(self) -> str:
        """The text with every inline tag's text kept, spaces collapsed; empty when it was capped."""
        return "" if self.capped else " ".join("".join(self.parts).split())


@dataclass(slots=True)
class _Draft:
    """A paper as it is read: its id, volume and texts, the authors so far."""

    paper_id: str
    volume_id: str
    depth: int
    texts: dict[str, _Text] = field(default_factory=dict)
    authors: list[Author] = field(default_factory=list)
    removed: bool = False
    capped: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Volume:
    """What a volume's ``<meta>`` says of its papers' time and place: year, month, venues."""

    journal: bool = False
    year: int | None = None
    month: int | None = None
    venues: list[str] = field(default_factory=list)


# The texts of a volume's <meta> read.
_META_TEXTS = ("year", "month", "venue")
# The texts a paper keeps, each read from its first element of the name: the paper's own children, and
# an author's.
_PAPER_TEXTS = ("title", "abstract")
_AUTHOR_TEXTS = ("first", "last")


class _Collection:
    """The parser's target for one collection file: papers come out of :meth:`take` as they end."""

    def __init__(self, path: Path, tally: ReadSummary) -> None:
        self.path = path
        self.tally = tally
        self.depth = 0
        self.collection_id = ""
        self.volume_id = ""
        self.volume = _Volume()
        # The <event> being read (its id), and the full ids of the collection's volumes so far.
        self.event_id = ""
        self.volumes: list[str] = []
        # A <meta> or <colocated> child being read: its depth, name and text.
        self.field: tuple[int, str, _Text] | None = None
        self.paper: _Draft | None = None
        self.author: dict[str, _Text] | None = None
        # The text being read: its element's depth and the text.
        self.text: tuple[int, _Text] | None = None
        self.ready: list[Paper] = []

    def start(self, tag: object, attrib: Mapping[str, str]) -> None:
        self.depth += 1
        name = _local(tag)
        if self.depth == 1:
            self.collection_id = _collection_id(self.path, name, attrib.get("id"))
        elif name == "collection":
            raise AnthologyError(f"{self.path}: a <collection> inside collection {self.collection_id}")
        elif name == "volume":
            self.volume_id = str(attrib.get("id") or "")
            self.volume = _Volume(journal=attrib.get("type") == "journal")
            self.volumes.append(f"{self.collection_id}-{self.volume_id}")
        elif self.depth == 2 and name == "event":
            self.event_id = str(attrib.get("id") or "")
            for volume in self.volumes:
                self.tally.colocated.setdefault(volume, set()).add(self.event_id)
        elif self.depth == 4 and self.paper is None and self._in(name):
            self.field = (self.depth, name, _Text())
        paper = self.paper
        if paper is None:
            if name == "paper":
                self.paper = _Draft(str(attrib.get("id") or ""), self.volume_id, self.depth)
            return
        if self.depth == paper.depth + 1:
            if name == "removed":
                paper.removed = True
            elif name == "author":
                self.author = {}
            elif name in _PAPER_TEXTS:
                self._begin(paper.texts, name)
        elif self.author is not None and self.depth == paper.depth + 2 and name in _AUTHOR_TEXTS:
            self._begin(self.author, name)

    def _begin(self, texts: dict[str, _Text], name: str) -> None:
        """Read the text of this element, unless an earlier element of the name was read."""
        if name not in texts:
            texts[name] = _Text()
            self.text = (self.depth, texts[name])

    def _in(self, name: str) -> bool:
        """Whether an element at depth 4 is a volume's date or venue, or a volume an event lists."""
        if self.event_id:
            return name == "volume-id"
        return name in _META_TEXTS

    def data(self, data: str) -> None:
        if self.text is not None:
            self.text[1].add(data)
        if self.field is not None:
            self.field[2].add(data)

    def end(self, tag: object) -> None:
        depth, self.depth = self.depth, self.depth - 1
        if self.text is not None and self.text[0] == depth:
            self.text = None
        if self.field is not None and self.field[0] == depth:
            self._end_field(*self.field[1:])
            self.field = None
        if depth == 2 and _local(tag) == "event":
            self.event_id = ""
        paper = self.paper
        if paper is None:
            return
        if self.author is not None and depth == paper.depth + 1:
            self._end_author(paper, self.author)
            self.author = None
        elif depth == paper.depth:
            self.paper = None
            found = self._paper(paper)
            if found is not None:
                self.ready.append(found)

    def _end_field(self, name: str, text: _Text) -> None:
        value = text.value()
        if name == "volume-id":
            if value:
                self.tally.colocated.setdefault(value, set()).add(self.event_id)
        elif name == "year":
            self.volume.year = int(value) if value.isdigit() and len(value) == 4 else None
        elif name == "month":
            self.volume.month = month_number(value)
        elif name == "venue" and value:
            self.volume.venues.append(value.lower())

    def _end_author(self, paper: _Draft, texts: dict[str, _Text]) -> None:
        paper.capped.extend(f"an author's {name} name" for name, text in texts.items() if text.capped)
        first, last = (texts[n].value() if n in texts else "" for n in _AUTHOR_TEXTS)
        if first or last:
            paper.authors.append(Author(first, last))

    def _paper(self, paper: _Draft) -> Paper | None:
        """The paper read, or None: removed from the Anthology, without a title (or a title past the
        cap), or with an id that is not the Anthology's. Capped texts and refused ids are counted."""
        texts = paper.texts
        capped = [*(f"its {n}" for n in _PAPER_TEXTS if n in texts and texts[n].capped), *paper.capped]
        where = f"{self.path}: paper {paper.paper_id!r} of volume {paper.volume_id!r}"
        self.tally.capped += len(capped)
        for name in capped:
            self.tally.note(f"{where}: {name} is longer than {MAX_TEXT} characters, left out")
        # A paper taken out of the Anthology keeps its place in the file but is no paper to link to.
        title = texts["title"].value() if "title" in texts else ""
        if not paper.paper_id or paper.removed or not title:
            return None
        try:
            anthology_id = build_id(self.collection_id, paper.volume_id, paper.paper_id)
        except ValueError:
            anthology_id = ""
        # Parts that do not make an id the Anthology could give leave the paper out.
        if not is_anthology_id(anthology_id):
            self.tally.invalid_ids += 1
            self.tally.note(f"{where}: not an Anthology id, left out")
            return None
        volume = self.volume
        year = volume.year if volume.year is not None else year_of_id(self.collection_id)
        return Paper(
            anthology_id=anthology_id,
            title=title,
            authors=tuple(paper.authors),
            abstract=texts["abstract"].value() if "abstract" in texts else "",
            volume_id=f"{self.collection_id}-{paper.volume_id}"
            if _NEW_STYLE.match(self.collection_id)
            else "",
            year=year,
            month=volume.month,
            journal=volume.journal or any(v in JOURNAL_VENUES for v in volume.venues),
            events=volume_events(self.collection_id, paper.volume_id, volume.venues, year),
        )

    def take(self) -> list[Paper]:
        """The papers ended since the last call."""
        ready, self.ready = self.ready, []
        return ready

    def close(self) -> None:
        return None


def volume_events(
    collection_id: str, volume_id: str, venues: Iterable[str], year: int | None
) -> tuple[str, ...]:
    """The events a volume is at by its own metadata, sorted: ``<venue>-<year>`` for each of its venues
    and its collection's (``2025.wmt`` -> ``wmt-2025``), a Findings volume at the event it is named
    after (``2025.findings`` + ``emnlp`` -> ``emnlp-2025``); none for the venues all workshops or all
    Findings share."""
    if year is None:
        return ()
    names = set(venues)
    if _NEW_STYLE.match(collection_id):
        name = collection_id.split(".", 1)[1]
        names.add(volume_id if name == FINDINGS else name)
    return tuple(sorted(event_ids(names - SHARED_VENUES, year)))


def _collection_id(path: Path, tag: str, given: str | None) -> str:
    """The root's collection id; :class:`AnthologyError` when the root is no ``<collection>`` with an
    id of the Anthology's pattern."""
    if tag != "collection" or not given:
        raise AnthologyError(f"{path}: not an Anthology collection file (root <{tag}>)")
    if COLLECTION_ID.fullmatch(given) is None:
        raise AnthologyError(f"{path}: {given!r} is not an Anthology collection id (2025.emnlp, P19)")
    return given


def _read(path: Path, tally: ReadSummary) -> Iterator[Paper]:
    """The papers of one collection file, in file order; raise :class:`AnthologyError` when the file is
    not XML or not a collection (a ``<collection id=...>`` root)."""
    target = _Collection(path, tally)
    parser = etree.XMLParser(target=target, resolve_entities=False, no_network=True)
    try:
        with Path(path).open("rb") as stream:
            while chunk := stream.read(READ_CHUNK):
                parser.feed(chunk)
                yield from target.take()
        parser.close()
        yield from target.take()
    except etree.XMLSyntaxError as exc:
        raise AnthologyError(f"{path}: not well-formed XML: {exc}") from None
    except OSError as exc:
        raise AnthologyError(f"{path}: cannot be read: {exc}") from None


def collection_files(root: Path) -> list[Path]:
    """Every ``*.xml`` file under ``root`` (or ``root`` itself when it is a file), sorted by path."""
    root = Path(root)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise AnthologyError(f"{root}: no such file or directory")
    return sorted(p for p in root.rglob("*.xml") if p.is_file())


def root_collection(path: Path) -> str | None:
    """The id of the file's root ``<collection>`` ("" when it has none, or when the file breaks before
    its root: :func:`read_papers` reports it with its line); None when the root is another element
    (other XML in a checkout is skipped)."""
    try:
        for _event, element in etree.iterparse(
            str(path), events=("start",), resolve_entities=False, no_network=True
        ):
            return str(element.get("id") or "") if _local(element.tag) == "collection" else None
    except (etree.XMLSyntaxError, OSError):
        return ""
    return None


def _refuse_copies(roots: Mapping[Path, str | None]) -> None:
    """:class:`AnthologyError` when two files hold the same collection: one would shadow the other."""
    first: dict[str, Path] = {}
    for path, collection_id in roots.items():
        if not collection_id:
            continue
        if collection_id in first:
            raise AnthologyError(
                f"{path}: collection {collection_id} is also in {first[collection_id]}; "
                "give each collection once (remove the copy)"
            )
        first[collection_id] = path


def read_papers(root: Path) -> tuple[list[Paper], ReadSummary]:
    """Every paper of every collection file under ``root``.

    XML files whose root is not ``<collection>`` are skipped and named in the summary. A collection
    file that is not well-formed, a collection given in two files, or a paper id given twice raises
    :class:`AnthologyError` naming the file, before any paper is linked; a text past :data:`MAX_TEXT`
    and a paper whose id is not the Anthology's are left out and counted."""
    roots = {path: root_collection(path) for path in collection_files(root)}
    _refuse_copies(roots)
    papers: list[Paper] = []
    seen: set[str] = set()
    summary = ReadSummary()
    for path in (p for p, collection_id in roots.items() if collection_id is not None):
        for paper in _read(path, summary):
            if paper.anthology_id in seen:
                raise AnthologyError(f"{path}: paper {paper.anthology_id} is given twice")
            seen.add(paper.anthology_id)
            papers.append(paper)
    papers = [with_colocated(p, summary.colocated) for p in papers]
    summary.files = sum(1 for c in roots.values() if c is not None)
    summary.skipped = tuple(str(p) for p, c in roots.items() if c is None)
    summary.papers = len(papers)
    return papers, summary


def with_colocated(paper: Paper, colocated: Mapping[str, set[str]]) -> Paper:
    """``paper`` at the events whose ``<colocated>`` list (in any file read) names its volume too."""
    more = colocated.get(paper.volume_id)
    if not more or more.issubset(paper.events):
        return paper
    return replace(paper, events=tuple(sorted(set(paper.events) | more)))
