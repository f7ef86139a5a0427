"""Talks and proceedings that disagree the way real ones do, with the right answer written down.

:func:`perturbed_set` takes real papers (``reader.Paper``) and the titles, authors and abstracts of
other real talks that have no paper in them, and builds, deterministically from a seed:

- proceedings papers: the real ones plus *decoys*, papers that share a real title's head (the part
  before a colon) with another subtitle, other authors (or some of the same group) and another
  abstract, as a second paper of a group would;
- talks: most papers get one (a paper may have none), whose title, authors and abstract are changed
  as a talk's are: a subtitle dropped or added, a word changed, the parts reordered, case, quotes and
  dashes changed; names without diacritics, with initials, without middle names, family name first,
  in another order, one missing; the abstract rewritten (sentences dropped and reordered, words
  dropped), cut short or absent;
- talks without a paper (about a quarter of all talks): the real other talks, and talks on a real
  paper's title head with a subtitle of their own by other people.

The truth (:attr:`Talk.paper_id`) is decided here, by construction, before any matcher sees a talk;
nothing here imports the matcher or its normalisation.

For the papers' time, :func:`collection_xml` writes volumes as the Anthology's collection files do (a
``<meta>`` with ``<year>``, ``<month>`` and ``<venue>``, ``type="journal"``, an ``<event>`` with its
``<colocated>`` volumes), and :func:`later_copies` makes a year-later ACL volume of exact copies of real
papers and a year-later TACL volume of the same titles and people with other abstracts.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from xml.sax.saxutils import escape as xml_escape

from crawler.anthology.reader import Author, Paper

# Words a talk's title may swap one of its own for.
SWAPS = (
    "approach",
    "framework",
    "method",
    "study",
    "analysis",
    "benchmark",
    "evaluation",
    "models",
    "towards",
    "improving",
)
SUBTITLES = (
    "A Case Study",
    "Lessons Learned",
    "An Empirical Study",
    "Extended Version",
    "Work in Progress",
    "A Closer Look",
)
QUOTES = {"'": "\u2019", '"': "\u201c", "-": "\u2013"}


@dataclass(frozen=True)
class Talk:
    """A talk as the site would list it, and the id of its paper (None: it has no paper)."""

    key: str
    title: str
    authors: tuple[str, ...]
    abstract: str
    paper_id: str | None
    kind: str  # how it was made, for reading a failure


@dataclass(frozen=True)
class PerturbedSet:
    papers: tuple[Paper, ...]
    talks: tuple[Talk, ...]


def strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _words(text: str) -> list[str]:
    return text.split()


def change_title(rng: random.Random, title: str) -> tuple[str, str]:
    """A talk's version of a proceedings title, and what was done."""
    head, sep, tail = title.partition(": ")
    roll = rng.random()
    if roll < 0.25:
        return title, "same title"
    if roll < 0.37:
        changed = title.upper() if rng.random() < 0.3 else title.lower()
        for plain, fancy in QUOTES.items():
            changed = changed.replace(plain, fancy)
        return changed.replace(": ", " - "), "case and punctuation"
    if roll < 0.50 and sep and len(_words(head)) >= 3:
        return head, "subtitle dropped"
    if roll < 0.60:
        return f"{title}: {rng.choice(SUBTITLES)}", "subtitle added"
    if roll < 0.75:
        words = _words(title)
        long_ones = [i for i, w in enumerate(words) if len(w) > 4]
        if long_ones:
            words[rng.choice(long_ones)] = rng.choice(SWAPS)
            return " ".join(words), "a word changed"
    if roll < 0.87 and sep:
        return f"{tail}: {head}", "parts reordered"
    words = _words(title)
    if len(words) > 4:
        del words[rng.randrange(1, len(words))]
    return " ".join(words).replace(":", ""), "a word dropped"


def _initials(first: str) -> str:
    return " ".join(p[0] + "." for p in first.replace("-", " ").split() if p)


def change_authors(rng: random.Random, authors: Sequence[Author]) -> tuple[tuple[str, ...], str]:
    """A talk's author list for a paper's authors, and what was done."""
    names = [a.name for a in authors]
    roll = rng.random()
    kind = "same names"
    if roll < 0.2:
        names = [strip_accents(n) for n in names]
        kind = "no diacritics"
    elif roll < 0.4:
        names = [f"{_initials(a.first)} {a.last}".strip() for a in authors]
        kind = "initials"
    elif roll < 0.5:
        names = [f"{a.first.split()[0]} {a.last}" if a.first.split() else a.last for a in authors]
        kind = "no middle names"
    elif roll < 0.6:
        names = [f"{a.last}, {a.first}".strip(", ") for a in authors]
        kind = "family name first"
    elif roll < 0.7:
        rng.shuffle(names)
        kind = "other order"
    elif roll < 0.8 and len(names) > 2:
        del names[rng.randrange(len(names))]
        kind = "one author missing"
    return tuple(names), kind


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if s]


def rewrite_abstract(rng: random.Random, abstract: str) -> tuple[str, str]:
    roll = rng.random()
    if not abstract or roll < 0.12:
        return "", "no abstract"
    if roll < 0.35:
        return abstract, "same abstract"
    sentences = _sentences(abstract)
    if roll < 0.45:
        return " ".join(sentences[: max(1, len(sentences) // 3)]), "abstract cut short"
    if len(sentences) > 3:
        del sentences[rng.randrange(len(sentences))]
        i, j = rng.sample(range(len(sentences)), 2)
        sentences[i], sentences[j] = sentences[j], sentences[i]
    words = " ".join(sentences).split()
    kept = [w for w in words if rng.random() > 0.2]
    return " ".join(kept), "abstract rewritten"


def _decoy(paper: Paper, donor: Paper, other: Paper, serial: int, same_group: bool) -> Paper | None:
    """A paper on ``paper``'s title head with a subtitle made of ``donor``'s words, by ``other``'s
    authors (with ``paper``'s first author when ``same_group``) and with ``other``'s abstract."""
    head, sep, _tail = paper.title.partition(": ")
    _donor_head, donor_sep, donor_tail = donor.title.partition(": ")
    if not sep or len(_words(head)) < 2:
        return None
    subtitle = " ".join(_words(donor_tail if donor_sep else donor.title)[:6])
    authors = other.authors
    if same_group and paper.authors:
        authors = (paper.authors[0], *other.authors[1:])
    return Paper(
        anthology_id=f"2025.emnlp-decoy.{serial}",
        title=f"{head}: {subtitle}",
        authors=authors,
        abstract=other.abstract,
        volume_id="2025.emnlp-decoy",
        # A second paper of the same proceedings: of the same time and event as the real ones.
        year=paper.year,
        month=paper.month,
        events=paper.events,
    )


def perturbed_set(
    papers: Sequence[Paper],
    unpublished: Sequence[tuple[str, tuple[str, ...], str]],
    *,
    seed: int,
    talk_share: float = 0.85,
    decoy_share: float = 0.35,
) -> PerturbedSet:
    """Papers (the real ones and decoys) and talks with their true paper ids; see the module."""
    rng = random.Random(seed)
    real = list(papers)
    decoys: list[Paper] = []
    for paper in real:
        if rng.random() < decoy_share:
            donor, other = rng.sample(real, 2)
            if paper.anthology_id not in (donor.anthology_id, other.anthology_id):
                made = _decoy(paper, donor, other, len(decoys) + 1, same_group=rng.random() < 0.3)
                if made is not None:
                    decoys.append(made)
    all_papers = real + decoys
    talks: list[Talk] = []
    for paper in all_papers:
        if rng.random() >= talk_share:
            continue
        title, title_kind = change_title(rng, paper.title)
        authors, author_kind = change_authors(rng, paper.authors)
        abstract, abstract_kind = rewrite_abstract(rng, paper.abstract)
        kind = f"{title_kind}; {author_kind}; {abstract_kind}"
        talks.append(Talk(f"t{len(talks)}", title, authors, abstract, paper.anthology_id, kind))
    with_paper = len(talks)
    # A quarter of the talks have no paper: other real talks, and talks on a real title's head.
    wanted = round(with_paper / 3)
    pool = list(unpublished)
    rng.shuffle(pool)
    for title, authors, abstract in pool[: wanted * 3 // 4]:
        talks.append(Talk(f"t{len(talks)}", title, authors, abstract, None, "talk without a paper"))
    while len(talks) < with_paper + wanted and pool:
        paper = rng.choice(real)
        head, sep, _tail = paper.title.partition(": ")
        other_title, other_authors, other_abstract = rng.choice(pool)
        if not sep:
            continue
        talks.append(
            Talk(
                f"t{len(talks)}",
                f"{head}: {rng.choice(SUBTITLES)} of {other_title.split(':')[0]}",
                other_authors,
                other_abstract,
                None,
                "talk without a paper on a paper's title head",
            )
        )
    order = list(range(len(talks)))
    rng.shuffle(order)
    shuffled = [talks[i] for i in order]
    return PerturbedSet(tuple(all_papers), tuple(shuffled))


# Papers of other times and venues, written as the Anthology writes its collection files.


@dataclass(frozen=True)
class Volume:
    """A volume of a collection file: its id, date, venues, kind and papers (numbered from 1 in order)."""

    volume_id: str
    year: int
    papers: tuple[Paper, ...]
    month: str | None = None
    venues: tuple[str, ...] = ()
    journal: bool = False


def _text(text: str) -> str:
    return xml_escape(text)


def _paper_xml(number: int, paper: Paper) -> str:
    authors = "".join(
        f"<author><first>{_text(a.first)}</first><last>{_text(a.last)}</last></author>" for a in paper.authors
    )
    abstract = f"<abstract>{_text(paper.abstract)}</abstract>" if paper.abstract else ""
    return f'    <paper id="{number}"><title>{_text(paper.title)}</title>{authors}{abstract}</paper>\n'


def collection_xml(
    collection_id: str, volumes: Sequence[Volume], event: tuple[str, Sequence[str]] | None = None
) -> str:
    """A collection file holding ``volumes``, and an ``<event id>`` listing ``<colocated>`` volumes when
    ``event`` is given (its id and the full ids of the volumes held at it)."""
    parts = [f'<?xml version="1.0" encoding="UTF-8"?>\n<collection id="{collection_id}">\n']
    for volume in volumes:
        kind = "journal" if volume.journal else "proceedings"
        month = f"<month>{volume.month}</month>" if volume.month else ""
        venues = "".join(f"<venue>{v}</venue>" for v in volume.venues)
        parts.append(f'  <volume id="{volume.volume_id}" type="{kind}">\n')
        parts.append(f"    <meta><booktitle>{collection_id}</booktitle>{month}<year>{volume.year}</year>")
        parts.append(f"{venues}</meta>\n")
        parts.extend(_paper_xml(n, p) for n, p in enumerate(volume.papers, start=1))
        parts.append("  </volume>\n")
    if event is not None:
        event_id, colocated = event
        listed = "".join(f"<volume-id>{v}</volume-id>" for v in colocated)
        parts.append(f'  <event id="{event_id}"><colocated>{listed}</colocated></event>\n')
    parts.append("</collection>\n")
    return "".join(parts)


def with_abstract_of(paper: Paper, other: Paper) -> Paper:
    """``paper`` with ``other``'s abstract: the same title and people, another text (a journal version
    rewritten, or another work under a reused title)."""
    return replace(paper, abstract=other.abstract)


def later_copies(papers: Sequence[Paper], *, seed: int, share: float = 0.3) -> tuple[Volume, Volume]:
    """A year-later ACL volume holding exact copies of a share of ``papers`` (a paper published again),
    and a year-later TACL volume holding the same titles and people with another paper's abstract."""
    rng = random.Random(seed)
    chosen = [p for p in papers if rng.random() < share]
    donors = rng.sample(list(papers), len(chosen))
    acl = Volume("long", 2026, tuple(chosen), month="July", venues=("acl",))
    tacl = Volume(
        "1",
        2026,
        tuple(with_abstract_of(p, d) for p, d in zip(chosen, donors, strict=True)),
        venues=("tacl",),
        journal=True,
    )
    return acl, tacl
