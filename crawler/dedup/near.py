"""Near-duplicate talks: MinHash signatures of title + abstract and an LSH search over them.

A talk's text is its normalized, case-folded title and abstract as word 3-shingles. Its MinHash
signature (128 permutations) is computed once per item while crawling and cached in the state
directory under the text's key, so publishing only reads signatures. It is computed with numpy, bit for
bit what datasketch's ``MinHash(num_perm=128, seed=1)`` gives with its default "affine32" scheme,
without building a MinHash object per item, and without importing datasketch, which pulls in scipy.

The search bands the signatures as datasketch's ``MinHashLSH`` would (:func:`lsh_bands`). The crawl
reports the rows that share a band as candidate groups (:func:`band_components`, :func:`candidate_groups`);
publishing takes each record's bucket mates as candidate pairs in about linear time, and verifies each
with the exact Jaccard similarity of the two shingle sets: a pair at or above ``MATCH_THRESHOLD`` is a
near-duplicate (:func:`crawler.publish.summaries.near_pairs`), and the pairs join into clusters
(:func:`clusters`). No step compares every record with every other.

Thresholds, measured on the replica's planted cases and the real EMNLP 2025 records
(``bench/quality.py``): abstracts revised by one to four words score 0.83 and more, while the
closest pair of distinct real papers (one work as a demo paper and as a main paper, different
titles and a rewritten abstract) scores 0.56.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from pathlib import Path
from typing import IO

import numpy as np

from crawler.schema import lecture_order
from crawler.text.normalize import normalize_line

NUM_PERM = 128
SEED = 1
SHINGLE_WORDS = 3
# LSH proposes pairs from this estimated similarity on; the exact check then decides.
LSH_THRESHOLD = 0.5
MATCH_THRESHOLD = 0.7
# A record whose bucket mates exceed this many is checked against the first ones only, so that a
# degenerate text (say, an empty abstract shared by thousands) cannot make the search quadratic.
MAX_CANDIDATES = 50
CACHE_DIRNAME = "minhash"

_WORD = re.compile(r"\w+")

Signature = np.ndarray


# The (a, b) of datasketch's affine32 permutations ``h -> a * h + b mod 2**32`` for NUM_PERM and SEED,
# every a (odd, so that the map is a bijection) then every b, as little-endian uint32: drawing them from
# ``RandomState(SEED)`` imports numpy.random (a tenth of the module's import, in the crawl and in each
# worker process). tests/test_dedup_near.py checks that they are datasketch's.
_PERMUTATIONS_LE32 = (
    "S+iD1dcBj/4ZX85wkSh43f/9DgATh5lBl1XLmgs9gv+fliNLgafgeCEBRy8DoQzLmX9dX488nMbbVe2w+fPoVg0bJcsz+v7eZcnf"
    "EymqT7H9qaDWy2JloCUX1V6pk5EMF/etaPlBDOPVm5jBOSWLdTu/BQ4ds54RZYRHV4nU8tOv+ajVr78W6tOXDB7jhYTc78vgR71b"
    "1eDBjm1lrQiJjhsx+5nTr5NuE/u/7w8IA5t/Inmge5aDLy0ceGJzSksJAxS2wAHv47p54gnKo/GFqBHqiiuxxcGoG/3+E+c0zYtf"
    "A/RW1R9VHvPkm8GRc09XPYRaMo9Ipi8Ha5vXjQvjVyt/cOpj3NXScwr7EAdkJWWJtz1iMVZKlONDi6FX+MNImQx9XzWYDpFpDlSr"
    "oUo409sUXQnn5n4RU+oSgKXbgD8fAEz6gdg+UomRD38zYNSY31qWj8W9a+SvaxyUD0+6cTUK2jQz/Y8l0UxS5S0IQPATbjPRh309"
    "Mc+XVJb9iIbOL0pXk/vaLT3JGpNCN4GyDEt36glzotAqp1SQW03ZbtURhVpsQUom0kW79YcVXg2ZL3qv+x8NNSvfVVIbrzi/ITO+"
    "8iWPH1Y65wEgS7kKv+mVdLktfQmfhV26RmZBp0d2sS1lNC8pIBFvJf/Tg0pe5uNqiGObTnL8B04P1AGXyRT4v8kM/dT2w82BMIkG"
    "x5sLNHLuqdXR1CPGxc+DAvbaykz20PHbD6EHlXgolsuCFOIHWUXnTRhxisiKMSNL1K5yTJ2nIysEY+QUMrHOHl6pYCQmzmVnM9aJ"
    "B6dUKi0P/abEM3HtOZp7XPAuB1n8nS2S0jg1wGBASaMNAdu5CixWIBdZIOJ8P7GwUfuon4fn0qV5wz3AmMCbWspmUVncPWPDlP4Z"
    "RaCpRVuMzFjlwby2wF5il208np/h6cH/9pjA/AJSTdepcxOEf2FzJ5+CCOQS7P1fHdymdclnuhHzYrdmEApxLXO2nvVaYFcRlOk5"
    "HPFSp3to1sk6YcbMrTzCuk7DR+FD5+c/h8WwqNySNvYlTQ8cvACFO9LFkTX9napoJicUAJ9TdlohlLBH7YYWWU4C5RnN4o3Pg7Xx"
    "B3Zbcup7eGHClei1VrzDVIeUnwoMp3dg3AwEt0DdRD2Z7+04zunU2Z7esJWhI43njFD/YNzwEfmBHizTH/R4GVQbI/HVJb6Ok77u"
    "jQgkMdSsYrJ0Ht12K2PlEIYO+TrNBmbBuIIcgrsH/sCPu2Q1GFZL7PsznwyJfCa2wiHUhMc40B81bxosRd0WBaTJdGVlw7UG+Ep8"
    "GxUYPwco7YKCTbAHP9uIJRqxyirccWnpSS/V8InNhVQ7qL2Fjc4VufctVo/XV+c/Rw=="
)
_PERMUTATIONS = (
    np.frombuffer(base64.b64decode(_PERMUTATIONS_LE32), dtype="<u4").astype(np.uint32).reshape(2, NUM_PERM)
)
_PERM_A, _PERM_B = _PERMUTATIONS
_EMPTY_SIGNATURE = np.full(NUM_PERM, np.iinfo(np.uint32).max, dtype=np.uint32)
_SHA1_SIZE = hashlib.sha1().digest_size
# 1 MiB of permuted values at a time, more than a usual abstract needs.
_HASHES_AT_ONCE = 2048


def talk_words(title: str | None, abstract: str | None) -> list[str]:
    """The words of the normalized, case-folded title and abstract (as one text)."""
    head, tail = normalize_line(title or ""), normalize_line(abstract or "")
    if "<" in head:
        # A ``<br>`` tag may open in the title and close in the abstract: normalized as one text, its
        # words may not be the parts' words.
        return _WORD.findall(normalize_line(f"{title or ''} {abstract or ''}").casefold())
    # Otherwise nothing normalizing does reaches across the space between them, and each part is
    # normalized already where the crawl read it (a long abstract is not normalized twice).
    return _WORD.findall(f"{head} {tail}".casefold())


def shingles(title: str | None, abstract: str | None) -> set[str]:
    """Word 3-shingles of the normalized, case-folded title and abstract (fewer words: one shingle)."""
    return shingles_of_words(talk_words(title, abstract))


def shingles_of_words(words: Sequence[str]) -> set[str]:
    if len(words) <= SHINGLE_WORDS:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1)}


def text_key(title: str | None, abstract: str | None) -> str:
    """A key of the talk's text as the signature sees it (equal words, equal key)."""
    return key_of_words(talk_words(title, abstract))


def key_of_words(words: Sequence[str]) -> str:
    return hashlib.sha1(" ".join(words).encode("utf-8")).hexdigest()


def shingle_hashes(grams: Iterable[str]) -> np.ndarray:
    """Each shingle's 32-bit hash as the permutations take it: SHA-1's first four bytes read as a
    little-endian integer (datasketch's ``sha1_hash32``), then the MurmurHash3 32-bit finalizer."""
    return _hashes_of_digests(b"".join([hashlib.sha1(g.encode("utf-8")).digest() for g in grams]))


def _word_shingle_hashes(words: Sequence[str], joined: bytes) -> np.ndarray:
    """:func:`shingle_hashes` of :func:`shingles_of_words`, for a signature: each 3-shingle is read off
    ``joined`` (the words' UTF-8 bytes joined by a space) as a slice, rather than joined and encoded
    again, and a shingle that repeats is hashed again rather than sorted out of a set first: a
    signature is a minimum per permutation, which repeated values do not change."""
    if len(words) <= SHINGLE_WORDS:
        return _hashes_of_digests(hashlib.sha1(joined).digest() if words else b"")
    # Where each word starts (and, last, where a word after the last would): the shingle from word i to
    # word i + 2 is the bytes from the start of word i to the start of word i + 3, without the space.
    starts = list(accumulate(map(_PLUS_ONE, map(len, words)), initial=0))
    if starts[-1] - 1 != len(joined):  # not ASCII: a character may take more than one byte
        starts = list(accumulate(map(_PLUS_ONE, map(len, map(str.encode, words))), initial=0))
    sha1 = hashlib.sha1
    pairs = zip(starts, starts[SHINGLE_WORDS:], strict=False)  # the last SHINGLE_WORDS starts end shingles
    digests = [sha1(joined[a : b - 1]).digest() for a, b in pairs]
    return _hashes_of_digests(b"".join(digests))


# Adds one (a word's space) without a Python call per word.
_PLUS_ONE = (1).__add__


def _hashes_of_digests(digests: bytes) -> np.ndarray:
    """The shingle hashes of concatenated SHA-1 digests (see :func:`shingle_hashes`)."""
    count = len(digests) // _SHA1_SIZE
    # The first four bytes of every 20-byte digest, read in place rather than sliced one by one.
    hashes = np.ndarray((count,), dtype="<u4", buffer=digests, strides=(_SHA1_SIZE,)).astype(np.uint32)
    hashes ^= hashes >> np.uint32(16)
    hashes *= np.uint32(0x85EBCA6B)
    hashes ^= hashes >> np.uint32(13)
    hashes *= np.uint32(0xC2B2AE35)
    hashes ^= hashes >> np.uint32(16)
    return hashes


def signature_of_hashes(hashes: np.ndarray) -> Signature:
    """The MinHash signature of :func:`shingle_hashes`' values: per permutation, the least ``a * h + b``
    modulo 2**32 (uint32 arithmetic wraps around, which is that modulo); no hashes, all values maximal."""
    values = _EMPTY_SIGNATURE.copy()
    # In slices: a page with an enormous abstract must not need shingles x NUM_PERM values at once.
    for start in range(0, len(hashes), _HASHES_AT_ONCE):
        permuted = np.multiply.outer(hashes[start : start + _HASHES_AT_ONCE], _PERM_A)
        permuted += _PERM_B
        np.minimum(values, permuted.min(axis=0), out=values)
    return values


def signature_of_shingles(grams: Iterable[str]) -> Signature:
    return signature_of_hashes(shingle_hashes(grams))


def signature(title: str | None, abstract: str | None) -> Signature:
    """The talk's MinHash signature: ``NUM_PERM`` unsigned 32-bit values."""
    return signature_of_shingles(shingles(title, abstract))


def keyed_signature(title: str | None, abstract: str | None) -> tuple[str, Signature]:
    """:func:`text_key` and :func:`signature` of a talk, normalizing and splitting its text once."""
    words = talk_words(title, abstract)
    joined = " ".join(words).encode("utf-8")
    return hashlib.sha1(joined).hexdigest(), signature_of_hashes(_word_shingle_hashes(words, joined))


def keyed_signatures(texts: Sequence[tuple[str | None, str | None]]) -> list[tuple[str, Signature]]:
    """:func:`keyed_signature` of each ``(title, abstract)``: one worker job for many talks."""
    return [keyed_signature(title, abstract) for title, abstract in texts]


def encode_signature(values: Signature) -> str:
    return base64.b64encode(np.asarray(values, dtype="<u4").tobytes()).decode("ascii")


def decode_signature(text: str) -> Signature:
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    values = np.frombuffer(raw, dtype="<u4").astype(np.uint32)
    if values.shape != (NUM_PERM,):
        raise ValueError(f"a signature holds {NUM_PERM} values, not {values.shape}")
    return values


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


# -- the cache of signatures in the state directory -------------------------------------------------


def cache_dir(state_dir: Path) -> Path:
    return Path(state_dir) / CACHE_DIRNAME


class SignatureCache:
    """Appends ``{"key", "sig"}`` lines to ``<state>/minhash/<worker>.jsonl``, opened on first use.

    A signature is a pure function of the text, so the cache never goes stale: a line is valid for
    any record whose :func:`text_key` matches, in this crawl or a later one.
    """

    def __init__(self, state_dir: Path | None, worker: str = "main") -> None:
        self.path = cache_dir(state_dir) / f"{worker}.jsonl" if state_dir is not None else None
        # Each written key's hash: a set of small numbers rather than of 40-character keys.
        self.known: set[int] = set()
        self._fh: IO[str] | None = None

    def add(self, key: str, values: Signature) -> bool:
        """Remember a signature; False when this key was already written by this process."""
        known = hash(key)
        if known in self.known:
            return False
        self.known.add(known)
        if self.path is None:
            return True
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("a", encoding="utf-8")
        self._fh.write(json.dumps({"key": key, "sig": encode_signature(values)}) + "\n")
        return True

    def close(self) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None


def load_signatures(state_dir: Path) -> dict[str, Signature]:
    """Every cached signature of the state directory by text key; torn or bad lines are skipped."""
    found: dict[str, Signature] = {}
    directory = cache_dir(state_dir)
    if not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.jsonl")):
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    payload = json.loads(line)
                    found[str(payload["key"])] = decode_signature(str(payload["sig"]))
                except (ValueError, KeyError, TypeError):
                    continue
    return found


# -- the search ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Talk:
    """What the near-duplicate search needs of a record."""

    lecture_id: str
    title: str | None
    abstract: str | None


@dataclass(frozen=True)
class NearPair:
    first: str  # the lower id
    second: str
    similarity: float  # exact Jaccard of the shingle sets


@dataclass
class SearchStats:
    signatures_cached: int = 0
    signatures_computed: int = 0
    candidate_pairs: int = 0
    capped_queries: int = 0


def clusters(pairs: Iterable[NearPair]) -> dict[str, str]:
    """Connected components of the pairs: lecture id -> cluster id (its lowest member id)."""
    pairs = list(pairs)
    ids = sorted({i for pair in pairs for i in (pair.first, pair.second)}, key=lecture_order)
    index = {lecture_id: n for n, lecture_id in enumerate(ids)}
    components = UnionFind(len(ids))
    for pair in pairs:
        components.union(index[pair.first], index[pair.second])
    # Indices follow lecture order and a component's root is its lowest index: its lowest id.
    return {lecture_id: ids[components.find(n)] for n, lecture_id in enumerate(ids)}


def all_pairs(talks: Sequence[Talk], *, threshold: float = MATCH_THRESHOLD) -> Iterator[NearPair]:
    """Every pair at or above ``threshold`` by comparing all pairs: quadratic, for measurements only."""
    grams = [(t.lecture_id, shingles(t.title, t.abstract)) for t in talks]
    for i, (a, ga) in enumerate(grams):
        for b, gb in grams[i + 1 :]:
            similarity = jaccard(ga, gb)
            if similarity >= threshold:
                first, second = sorted((a, b), key=lecture_order)
                yield NearPair(first, second, round(similarity, 4))


@cache
def lsh_bands(threshold: float = LSH_THRESHOLD) -> tuple[int, int]:
    """The (bands, rows per band) datasketch's ``MinHashLSH`` chooses for ``threshold``.

    The same choice without scipy: of every ``bands * rows <= NUM_PERM``, the first (bands, then rows,
    ascending) minimizing the equally weighted areas of false positives (the chance
    ``1 - (1 - s**r)**b`` of sharing a band, below ``threshold``) and of false negatives (its complement,
    above). The integrands are polynomials of degree at most ``NUM_PERM``, which Gauss-Legendre
    quadrature with ``NUM_PERM // 2 + 1`` nodes integrates exactly (up to rounding).
    """
    # Imported here: only a search needs it, once (the choice is cached).
    from numpy.polynomial.legendre import leggauss

    pairs = [(b, r) for b in range(1, NUM_PERM + 1) for r in range(1, NUM_PERM // b + 1)]
    bands = np.array([b for b, _ in pairs], dtype=np.float64)[:, None]
    rows = np.array([r for _, r in pairs], dtype=np.float64)[:, None]
    nodes, weights = leggauss(NUM_PERM // 2 + 1)

    def area(low: float, high: float, false_positive: bool) -> np.ndarray:
        s = (high - low) / 2 * nodes + (high + low) / 2
        miss = (1 - s**rows) ** bands
        return ((1 - miss) if false_positive else miss) @ weights * ((high - low) / 2)

    error = 0.5 * area(0.0, threshold, True) + 0.5 * area(threshold, 1.0, False)
    return pairs[int(np.argmin(error))]


class UnionFind:
    """Connected components of ``0 .. size - 1``; a component's root is its lowest member."""

    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[max(a, b)] = min(a, b)

    def components(self) -> list[list[int]]:
        """Every component of two members or more, each in ascending order."""
        members: dict[int, list[int]] = {}
        for x in range(len(self.parent)):
            members.setdefault(self.find(x), []).append(x)
        return [m for m in members.values() if len(m) >= 2]


def band_components(signatures: np.ndarray, threshold: float = LSH_THRESHOLD) -> list[list[int]]:
    """The LSH over an ``(n, NUM_PERM)`` array of signatures: rows that agree on every value of one band
    share that band's bucket, and rows joined by shared buckets make a component (of two rows or more).
    The bands are those :func:`lsh_bands` picks for ``threshold`` (datasketch's ``MinHashLSH`` choice,
    whose buckets are the same), so a pair becomes a candidate with the chance
    ``1 - (1 - s**rows)**bands`` at similarity ``s``. Memory is a few bytes per row and band: no index
    of MinHash objects.
    """
    bands, rows = lsh_bands(threshold)
    joined = UnionFind(len(signatures))
    for band in range(bands):
        # One band's columns copied at a time, not the whole array: a crawl's matrix of every lecture
        # would otherwise be held twice while the groups are found.
        keys = np.ascontiguousarray(signatures[:, band * rows : (band + 1) * rows], dtype="<u4").view(
            np.dtype((np.void, 4 * rows))
        )[:, 0]
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        ends = np.r_[starts[1:], len(order)]
        for a, b in zip(starts, ends, strict=True):
            first = int(order[a])
            for member in order[a + 1 : b].tolist():
                joined.union(first, member)
    return joined.components()


def candidate_groups(
    ids: Sequence[str], signatures: np.ndarray, talks: Sequence[Hashable | None] | None = None
) -> list[list[str]]:
    """Groups of ids whose signatures share an LSH band (connected components), for a crawl's summary.

    ``signatures`` is an ``(len(ids), NUM_PERM)`` array. Members of one talk (equal non-None ``talks``) do
    not make a group by themselves: a group holds at least two talks. Publishing checks the exact
    similarity and decides. Groups and their members come in lecture order.
    """
    count = len(ids)
    if count < 2:
        return []
    groups = []
    for indices in band_components(signatures[:count]):
        kinds = {talks[i] if talks is not None and talks[i] is not None else f"#{i}" for i in indices}
        if len(kinds) >= 2:
            groups.append(sorted((ids[i] for i in indices), key=lecture_order))
    return sorted(groups, key=lambda g: lecture_order(g[0]))
