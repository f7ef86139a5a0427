"""Linking lectures to Anthology papers: an inverted index, a scorer and a decision a librarian would sign.

Candidates come from an inverted index of the papers' rarest pairs of adjacent title words, rarest
title words and their authors' rarer family names, so a lecture is compared with a handful of papers,
never with all of them. Each candidate is
scored on three pieces of evidence, each in [0, 1]:

- ``title``: 1 when the titles are equal once markup, case, punctuation, dashes, quotes and diacritics
  are gone; else the IDF-weighted Dice of their word sets, or, when one title is the other with a
  subtitle added or dropped, the weighted share of the shorter one found in the longer (times 0.9);
  word order does not count, so reordered parts still match;
- ``authors``: Dice of the family names (one lecture name for one paper author, whatever the order,
  initials, middle names or diacritics); null when either side lists none;
- ``abstract``: cosine of the two abstracts' content-word sets; null when either has none.

``score`` is their weighted mean (0.5, 0.3, 0.2; a null one leaves its weight to the others). A lecture
gets the best paper's id only when the evidence is clear (:func:`decide`): the score is high enough, the
title or else both authors and abstract agree, no evidence speaks against it, and the runner-up is not
within ``MARGIN`` of it (a near tie is *ambiguous*). Authors and abstract that both agree strongly are
clear evidence whatever the title (a talk renamed from its paper). A paper goes to one lecture at most:
when several lectures claim it, the best keeps it unless another is within the margin, and the others get none
(*conflict*).

A lecture that knows its event (:class:`~crawler.anthology.timing.TimeAndPlace`) is linked only to a paper
of its time (:func:`~crawler.anthology.timing.paper_in_time`): a paper published after the event, or a
journal paper from before the 12 months before it, is refused however well it matches (a *near miss*,
kept in :attr:`Match.refused` when its evidence alone was clear), and the event's own volumes come first:
when the best of them is clear and no other paper of the time scores ``MARGIN`` above it, the lecture is
decided among them alone (a copy in another venue is no near tie).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from operator import itemgetter
from typing import Literal

from crawler.anthology.comparable import (
    STOPWORDS,
    content_words,
    family_overlap,
    name_family_keys,
    paper_family_keys,
    title_key,
    title_tokens,
)
from crawler.anthology.reader import Paper
from crawler.anthology.timing import (
    UNDATED,
    UNKNOWN_TIME,
    TimeAndPlace,
    Verdict,
    paper_in_time,
)

Status = Literal["linked", "ambiguous", "conflict", "unmatched"]

TITLE_WEIGHT, AUTHORS_WEIGHT, ABSTRACT_WEIGHT = 0.5, 0.3, 0.2
# The weighted share of a shorter title found in a longer one counts this much (a subtitle added or
# dropped), and only when the shorter title has at least this many words that are not stopwords.
CONTAINMENT_FACTOR = 0.9
CONTAINMENT_MIN_WORDS = 3
# A link needs this score, and the runner-up must be this far below it.
ACCEPT = 0.62
MARGIN = 0.08
# What counts as agreeing evidence, and as evidence against.
TITLE_AGREES = 0.6
TITLE_MIN = 0.45
AUTHORS_AGREE = 0.5
AUTHORS_AGAINST = 0.2
ABSTRACT_AGREES = 0.35
# Authors and abstract that agree this well are clear evidence on their own, whatever the title.
AUTHORS_STRONG = 0.8
ABSTRACT_STRONG = 0.6
# Candidate search: the rarest pairs of adjacent title words looked up, then the rarest single words,
# each with the postings read at most; family names only when rare (``Wang`` is no clue); then the
# candidates scored on title and authors, and those of them whose abstracts are compared.
RARE_PAIRS = 8
PAIR_BUDGET = 1500
RARE_WORDS = 4
WORD_BUDGET = 400
FAMILY_BUDGET = 100
POOL = 100
CANDIDATES = 12
ABSTRACT_CANDIDATES = 3


@dataclass(frozen=True, slots=True)
class LectureText:
    """What matching needs of a lecture: its key (the lecture id), title, author names, abstract, and
    when and at which event it is given (None: any paper's date will do)."""

    key: str
    title: str
    authors: tuple[str, ...] = ()
    abstract: str = ""
    event: TimeAndPlace | None = None


@dataclass(frozen=True, slots=True)
class Scores:
    """The evidence for one lecture and one paper (see the module's docstring); ``score`` combines it."""

    title: float
    authors: float | None
    abstract: float | None
    score: float

    @property
    def method(self) -> str:
        """The evidence that agrees, joined by ``+``: ``exact_title`` (equal once normalised) or
        ``title``, then ``authors`` and ``abstract``; e.g. ``exact_title+authors+abstract``."""
        parts = []
        if self.title >= 0.999:
            parts.append("exact_title")
        elif self.title >= TITLE_AGREES:
            parts.append("title")
        if self.authors is not None and self.authors >= AUTHORS_AGREE:
            parts.append("authors")
        if self.abstract is not None and self.abstract >= ABSTRACT_AGREES:
            parts.append("abstract")
        return "+".join(parts) or "none"


@dataclass(frozen=True, slots=True)
class Candidate:
    anthology_id: str
    scores: Scores
    verdict: Verdict = UNDATED  # whether the paper is of the lecture's time


# The tiers candidates are looked at in: the event's own volumes, other papers of the lecture's time,
# papers refused for their date.
OWN, IN_TIME, REFUSED = 0, 1, 2


def tier(verdict: Verdict) -> int:
    """The tier a paper with this verdict on the lecture's time is looked at in."""
    if verdict.own_event:
        return OWN
    return IN_TIME if verdict.taken else REFUSED


@dataclass(frozen=True, slots=True)
class Match:
    """The outcome for one lecture. ``anthology_id`` is set only when ``status`` is ``linked``;
    ``best`` and ``runner_up`` are the two best candidates of the lecture's time whatever the outcome
    (None when there were none); ``margin`` is the best score minus the runner-up's (the best score when
    there is none); ``refused`` the near misses, papers refused for their date whose evidence alone was
    clear, best first."""

    key: str
    status: Status
    best: Candidate | None = None
    runner_up: Candidate | None = None
    reason: str = ""
    refused: tuple[Candidate, ...] = ()

    @property
    def anthology_id(self) -> str | None:
        return self.best.anthology_id if self.status == "linked" and self.best else None

    @property
    def margin(self) -> float:
        if self.best is None:
            return 0.0
        second = self.runner_up.scores.score if self.runner_up else 0.0
        return round(self.best.scores.score - second, 4)


@dataclass(slots=True)
class _Prepared:
    anthology_id: str
    key: str
    words: frozenset[str]
    families: tuple[frozenset[str], ...]
    abstract: str
    family_keys: frozenset[str] = frozenset()  # every key of every author
    weight: float = 0.0  # the title words' summed weight
    time: TimeAndPlace = UNKNOWN_TIME


class PaperIndex:
    """The papers, prepared once, with postings from rare title words and family names to papers."""

    def __init__(self, papers: Iterable[Paper]) -> None:
        self.papers: list[_Prepared] = []
        self.by_title: dict[str, list[int]] = defaultdict(list)
        self.by_word: dict[str, list[int]] = defaultdict(list)
        self.by_pair: dict[str, list[int]] = defaultdict(list)
        self.by_family: dict[str, list[int]] = defaultdict(list)
        # The papers of a volume share one time: held once.
        times: dict[TimeAndPlace, TimeAndPlace] = {}
        for paper in papers:
            index = len(self.papers)
            tokens = title_tokens(paper.title)
            words = frozenset(tokens)
            for pair in word_pairs(tokens):
                self.by_pair[pair].append(index)
            families = tuple(paper_family_keys(a.last or a.first) for a in paper.authors)
            family_keys = frozenset().union(*families) if families else frozenset()
            time = times.setdefault(paper.time, paper.time)
            prepared = _Prepared(
                paper.anthology_id,
                title_key(paper.title),
                words,
                families,
                paper.abstract,
                family_keys,
                time=time,
            )
            self.papers.append(prepared)
            self.by_title[prepared.key].append(index)
            for word in words - STOPWORDS:
                self.by_word[word].append(index)
            for family in family_keys:
                self.by_family[family].append(index)
        count = max(1, len(self.papers))
        self._log_count = math.log(1 + count)
        self._weights: dict[str, float] = {}
        for prepared in self.papers:
            prepared.weight = sum(self.weight(w) for w in prepared.words)

    def __len__(self) -> int:
        return len(self.papers)

    def weight(self, word: str) -> float:
        """The IDF of a title word: rare words weigh more; a word no paper has weighs the most."""
        found = self._weights.get(word)
        if found is None:
            df = len(self.by_word.get(word, ()))
            if word in STOPWORDS:
                found = 0.1
            else:
                found = math.log(1 + len(self.papers) / df) if df else self._log_count
            self._weights[word] = found
        return found

    def candidates(self, lecture: LectureText, tokens: Sequence[str], families: frozenset[str]) -> list[int]:
        """Papers sharing the lecture's rarest pairs of title words, rarest title words or rare family
        names of its authors, most shared first."""
        votes: dict[int, float] = defaultdict(float)
        for index in self.by_title.get(title_key(lecture.title), ()):
            votes[index] += 100.0
        count = len(self.papers)
        for table, keys, most, budget, bonus in (
            (self.by_pair, set(word_pairs(tokens)), RARE_PAIRS, PAIR_BUDGET, 1.5),
            (self.by_word, set(tokens) - STOPWORDS, RARE_WORDS, WORD_BUDGET, 1.0),
        ):
            looked = read = 0
            for key in sorted(keys, key=lambda k: (len(table.get(k, ())), k)):
                postings = table.get(key)
                if not postings:
                    continue
                if looked >= most or read + len(postings) > budget:
                    break
                looked += 1
                read += len(postings)
                weight = bonus * math.log(1 + count / len(postings))
                for index in postings:
                    votes[index] += weight
        for family in families:
            postings = self.by_family.get(family)
            if postings and len(postings) <= FAMILY_BUDGET:
                for index in postings:
                    votes[index] += 1.0
        # Many papers may share a title's first half: the authors' family names, common ones too,
        # decide which of the best-voted go on.
        pool = heapq.nlargest(POOL, votes.items(), key=itemgetter(1))
        papers = self.papers
        if families:
            ranked = [(-(v + 2.0 * len(families & papers[i].family_keys)), i) for i, v in pool]
        else:
            ranked = [(-v, i) for i, v in pool]
        ranked.sort()
        return [index for _, index in ranked[:CANDIDATES]]

    def title_similarity(self, a: frozenset[str], key_a: str, paper: _Prepared, wa: float) -> float:
        """The title evidence (see the module's docstring) of title words ``a`` (their summed weight
        ``wa``) against a paper's."""
        b = paper.words
        if key_a == paper.key and key_a:
            return 1.0
        if not a or not b:
            return 0.0
        wb = paper.weight
        shared = sum(self.weight(w) for w in a & b)
        dice = 2 * shared / (wa + wb)
        shorter = a if wa <= wb else b
        contained = 0.0
        if len(shorter - STOPWORDS) >= CONTAINMENT_MIN_WORDS:
            contained = CONTAINMENT_FACTOR * shared / min(wa, wb)
        return round(min(0.99, max(dice, contained)), 4)


def word_pairs(tokens: Sequence[str]) -> list[str]:
    """Adjacent title words, stopwords left out: ``error discovery``, ``discovery study``..."""
    words = [t for t in tokens if t not in STOPWORDS]
    return [f"{a} {b}" for a, b in itertools.pairwise(words)]


def _author_score(paper: _Prepared, names: Sequence[frozenset[str]]) -> float | None:
    if not paper.families or not names:
        return None
    found, papers, lectures = family_overlap(paper.families, names)
    return round(2 * found / (papers + lectures), 4)


def _abstract_score(paper: _Prepared, words: frozenset[str]) -> float | None:
    if not paper.abstract or not words:
        return None
    other = content_words(paper.abstract)
    if not other:
        return None
    return round(len(words & other) / math.sqrt(len(words) * len(other)), 4)


def combine(title: float, authors: float | None, abstract: float | None) -> float:
    """The weighted mean of the evidence present."""
    weighted = [(TITLE_WEIGHT, title), (AUTHORS_WEIGHT, authors), (ABSTRACT_WEIGHT, abstract)]
    present = [(weight, value) for weight, value in weighted if value is not None]
    return round(sum(weight * value for weight, value in present) / sum(weight for weight, _ in present), 4)


def clear(scores: Scores) -> str:
    """Why the evidence for a paper is not clear enough to link ("" when it is)."""
    authors_agree = scores.authors is not None and scores.authors >= AUTHORS_AGREE
    abstract_agrees = scores.abstract is not None and scores.abstract >= ABSTRACT_AGREES
    strong = (
        scores.authors is not None
        and scores.authors >= AUTHORS_STRONG
        and scores.abstract is not None
        and scores.abstract >= ABSTRACT_STRONG
    )
    if scores.score < ACCEPT and not strong:
        return f"score {scores.score:.2f} below {ACCEPT}"
    if scores.title < TITLE_MIN and not (authors_agree and abstract_agrees):
        return "the titles differ and authors and abstract do not both agree"
    if (
        scores.authors is not None
        and scores.authors < AUTHORS_AGAINST
        and not (scores.title >= 0.9 and abstract_agrees)
    ):
        return "the authors differ"
    if scores.authors is None and scores.abstract is None and scores.title < 0.999:
        return "only a similar title to go by"
    return ""


def decide(key: str, ranked: Sequence[Candidate]) -> Match:
    """The outcome for one lecture from its candidates, best first: among the event's own volumes when
    the best of them is clear and no other paper of the lecture's time scores ``MARGIN`` above it, else
    among every paper of its time; papers refused for their date never, those whose evidence was clear
    kept as near misses."""
    refused = tuple(c for c in ranked if tier(c.verdict) == REFUSED and not clear(c.scores))
    taken = [c for c in ranked if tier(c.verdict) != REFUSED]
    own = [c for c in taken if tier(c.verdict) == OWN]
    other = next((c for c in taken if tier(c.verdict) == IN_TIME), None)
    # The event's own paper wins a near tie with another venue's, not a clear defeat.
    first = (
        bool(own)
        and not clear(own[0].scores)
        and (other is None or other.scores.score - own[0].scores.score < MARGIN)
    )
    group = own if first else taken
    if not group:
        why = f"{refused[0].anthology_id} {refused[0].verdict.reason}" if refused else "no candidate"
        return Match(key, "unmatched", reason=why, refused=refused)
    best = group[0]
    runner_up = group[1] if len(group) > 1 else None
    why = clear(best.scores)
    if why:
        # A paper that matched but was refused for its date says more than a weak one of the time.
        if refused:
            why = f"{refused[0].anthology_id} {refused[0].verdict.reason}"
        return Match(key, "unmatched", best, runner_up, why, refused)
    if runner_up is not None and best.scores.score - runner_up.scores.score < MARGIN:
        return Match(
            key,
            "ambiguous",
            best,
            runner_up,
            f"{runner_up.anthology_id} scores within {MARGIN} of it",
            refused,
        )
    return Match(key, "linked", best, runner_up, refused=refused)


def score_lecture(index: PaperIndex, lecture: LectureText) -> list[Candidate]:
    """The lecture's best candidates, scored, each with its verdict on the lecture's time, best first
    (ties by Anthology id): the best few of the event's own volumes, of the other papers of its time and
    of those refused for their date."""
    tokens = title_tokens(lecture.title)
    words = frozenset(tokens)
    key = title_key(lecture.title)
    names = [name_family_keys(n) for n in lecture.authors]
    families = frozenset().union(*names) if names else frozenset()
    weight = sum(index.weight(w) for w in words)
    partial = []
    for i in index.candidates(lecture, tokens, families):
        paper = index.papers[i]
        title = index.title_similarity(words, key, paper, weight)
        authors = _author_score(paper, names)
        verdict = paper_in_time(lecture.event, paper.time)
        partial.append((combine(title, authors, None), paper.anthology_id, i, title, authors, verdict))
    partial.sort(key=lambda item: (-item[0], item[1]))
    abstract_words = content_words(lecture.abstract) if lecture.abstract else frozenset()
    out = []
    # Each tier's best few have their abstracts compared: papers of another time never crowd out the
    # lecture's own.
    for level in (OWN, IN_TIME, REFUSED):
        chosen = [item for item in partial if tier(item[5]) == level][:ABSTRACT_CANDIDATES]
        for _, anthology_id, i, title, authors, verdict in chosen:
            abstract = _abstract_score(index.papers[i], abstract_words)
            scores = Scores(title, authors, abstract, combine(title, authors, abstract))
            out.append(Candidate(anthology_id, scores, verdict))
    out.sort(key=lambda c: (-c.scores.score, c.anthology_id))
    return out


def match_lectures(index: PaperIndex, lectures: Iterable[LectureText]) -> list[Match]:
    """One :class:`Match` per lecture, in the lectures' order; a paper is linked to one lecture at most."""
    matches = [decide(lecture.key, score_lecture(index, lecture)) for lecture in lectures]
    claims: dict[str, list[int]] = defaultdict(list)
    for position, match in enumerate(matches):
        if match.status == "linked" and match.best is not None:
            claims[match.best.anthology_id].append(position)
    for anthology_id, positions in claims.items():
        if len(positions) < 2:
            continue
        ranked = sorted(positions, key=lambda p: (-_score(matches[p]), matches[p].key))
        top = ranked[0]
        tied = _score(matches[top]) - _score(matches[ranked[1]]) < MARGIN
        for position in ranked if tied else ranked[1:]:
            old = matches[position]
            others = ", ".join(matches[p].key for p in ranked if p != position)
            matches[position] = replace(
                old, status="conflict", reason=f"{anthology_id} is claimed by {others} too"
            )
    return matches


def _score(match: Match) -> float:
    return match.best.scores.score if match.best else 0.0
