"""Text as a librarian compares it: titles, family names and abstracts reduced to comparable tokens.

Case, diacritics, punctuation, dashes and quotes are dropped; letters that Unicode does not decompose
(``ø``, ``ł``, ``ß``...) are spelled out in ASCII. The Anthology's markup is removed by the reader
(``reader.py``) before any of this sees the text.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

# Letters without a Unicode decomposition into a base letter and marks.
_LETTERS: dict[str, str] = {
    "ø": "o",
    "Ø": "O",
    "ł": "l",
    "Ł": "L",
    "đ": "d",
    "Đ": "D",
    "ð": "d",
    "Ð": "D",
    "þ": "th",
    "Þ": "Th",
    "æ": "ae",
    "Æ": "Ae",
    "œ": "oe",
    "Œ": "Oe",
    "ß": "ss",
    "ı": "i",
    "&": " and ",
}
_SPECIAL = re.compile("[" + "".join(_LETTERS) + "]")
_COMBINING = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")
_NOT_WORD = re.compile(r"[^a-z0-9\u0370-\u03ff\u0400-\u04ff\u4e00-\u9fff]+")
# Words too common in titles and abstracts to tell two papers apart (they still count in the scores).
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "our",
        "over",
        "than",
        "that",
        "the",
        "their",
        "this",
        "through",
        "to",
        "toward",
        "towards",
        "under",
        "using",
        "via",
        "we",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "with",
        "within",
        "without",
    ]
)


def _spell_out(text: str) -> str:
    return _SPECIAL.sub(lambda m: _LETTERS[m.group(0)], text)


def fold(text: str) -> str:
    """Lower-case ASCII-like text: diacritics dropped, ligatures and special letters spelled out,
    every run of punctuation, dashes, quotes and spaces one space."""
    if text.isascii():
        text = text.replace("&", " and ").lower()
    else:
        text = _COMBINING.sub("", unicodedata.normalize("NFKD", _spell_out(text)))
        text = _spell_out(text).casefold()
    return " ".join(_NOT_WORD.sub(" ", text).split())


def stem(token: str) -> str:
    """A token's comparable form: a plural ``s`` dropped (``models`` and ``model`` compare equal)."""
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


# Words come back again and again: each is stemmed once (bounded by the vocabulary).
_stem = functools.cache(stem)


def title_tokens(title: str) -> list[str]:
    """The title's words, folded and stemmed, in order (duplicates kept)."""
    return [_stem(t) for t in fold(title).split()]


def title_key(title: str) -> str:
    """One string per title: equal for titles that differ only in case, markup, punctuation or accents."""
    return " ".join(title_tokens(title))


def content_words(text: str) -> frozenset[str]:
    """The distinct words of an abstract that carry meaning: folded, stemmed, no stopwords or digits."""
    return frozenset(
        {_stem(t) for t in fold(text).split() if len(t) > 2 and t not in STOPWORDS and not t.isdigit()}
    )


@functools.lru_cache(maxsize=1 << 18)
def paper_family_keys(last: str) -> frozenset[str]:
    """The keys a paper author's family name may be found under: whole (``desouza``) and its last word
    (``souza``), for a talk that lists the name without its particle."""
    words = fold(last).split()
    if not words:
        return frozenset()
    return frozenset({"".join(words), words[-1]})


@functools.lru_cache(maxsize=1 << 18)
def name_family_keys(name: str) -> frozenset[str]:
    """Keys a displayed name's family name may be under, whatever the order and initials: ``Smith, J.``
    -> ``smith``; ``Maria de Souza`` -> ``souza``, ``desouza``...; ``Zhang Wei`` -> also ``zhang``.

    Initials (one letter) never make a key on their own."""
    if "," in name:
        return paper_family_keys(name.partition(",")[0])
    words = [w for w in fold(name).split() if len(w) > 1]
    if not words:
        return frozenset()
    keys = {"".join(words[-k:]) for k in range(1, min(3, len(words)) + 1)}
    keys.add(words[0])
    return frozenset(keys)


def family_overlap(
    paper_families: Sequence[frozenset[str]], name_keys: Sequence[frozenset[str]]
) -> tuple[int, int, int]:
    """(paper authors found among the names, paper authors, names), the names given by their
    :func:`name_family_keys`; each name counts for one author at most."""
    used = [False] * len(name_keys)
    found = 0
    for keys in paper_families:
        for i, candidates in enumerate(name_keys):
            if not used[i] and keys & candidates:
                used[i] = True
                found += 1
                break
    return found, len(paper_families), len(name_keys)
