"""Rolling captions folded: what each cue newly says, once.

Speech recognition tracks roll: each cue shows the line (or lines) before it again with the new words
after them, and very short cues (10 ms) show a line once more; a track that starts one word at a time
shows a one-word line again under the next. A cue's new words are what follows the longest run of its
first words that ends what was already said (the longest suffix of the text so far that is a prefix of
the cue, words compared without case and punctuation). The longest overlap is what keeps a word said
twice on purpose ("very very"): the cue that repeats the line before and adds the second "very" overlaps
the whole line, not just its last word.

Scripts written without spaces between words (Chinese, Japanese, Thai, ...) are compared character by
character: a line of them is one "word" to ``str.split``, and a rolling cue that repeats it with new
characters after it would share none.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

# A track rolls when at least this share of its cue pairs overlap (the later cue starts with words that
# end the earlier one: two at least, or the whole later cue; for a track the site says is generated, also
# the whole earlier cue or the later cue's whole first line, however short) ...
_ROLLING_SHARE = 0.5
# ... and at least this many pairs do.
_ROLLING_PAIRS = 2
# Said-so-far words a new cue is compared with: a cue repeats what was just shown, never more.
_TAIL_WORDS = 256
# Scripts written without spaces between words: Thai, Lao, Myanmar, Khmer, CJK punctuation, kana,
# bopomofo, CJK ideographs (with extensions and compatibility forms), halfwidth and fullwidth forms.
_UNSPACED = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u2e80-\u2fdf\u3001-\u303f\u3040-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f"
)
_UNSPACED_CHAR = re.compile(f"[{_UNSPACED}]")
# A token of a text that holds such a script: one of its characters, or a run of other non-space ones.
_TOKEN = re.compile(rf"[{_UNSPACED}]|[^\s{_UNSPACED}]+")


@dataclass(frozen=True)
class TimedText:
    """A cue's cleaned text and its times, in milliseconds."""

    start_ms: int
    end_ms: int
    text: str
    # A cue of a generated track that shows more than one line: its first line's text. A cue that shows a
    # line of the cue before on a line of its own repeats it, however short the line.
    first_line: str | None = None


# A talk says the same few thousand words again and again.
@functools.lru_cache(maxsize=8192)
def word_key(word: str) -> str:
    """A word as folding compares it: case folded, punctuation at both ends removed (a word of
    punctuation alone compares as itself)."""
    key = word.casefold().strip(".,;:!?\"'()[]{}\u2018\u2019\u201c\u201d\u2026-\u2013\u2014")
    return key or word.casefold()


# The keys of the words read lately, looked up without a call each: a cue's words are mostly known.
_known_keys: dict[str, str] = {}
_KNOWN_KEYS_MAX = 32768


def _is_spaced(text: str) -> bool:
    return text.isascii() or _UNSPACED_CHAR.search(text) is None


def token_keys(text: str) -> list[str]:
    """The keys ``text`` is compared by: each word's (see :func:`word_key`), each character's of a
    script written without spaces."""
    tokens = text.split() if _is_spaced(text) else _TOKEN.findall(text)
    try:
        return list(map(_known_keys.__getitem__, tokens))
    except KeyError:
        if len(_known_keys) > _KNOWN_KEYS_MAX:
            _known_keys.clear()
        for token in tokens:
            if token not in _known_keys:
                _known_keys[token] = word_key(token)
        return list(map(_known_keys.__getitem__, tokens))


def text_after(text: str, count: int) -> str:
    """``text`` without its first ``count`` tokens (as :func:`token_keys` cuts it)."""
    if _is_spaced(text):
        return " ".join(text.split()[count:])
    starts = [found.start() for found in _TOKEN.finditer(text)]
    return text[starts[count] :].strip() if count < len(starts) else ""


def overlap(said: Sequence[str], cue: Sequence[str]) -> int:
    """The length of the longest run of ``cue``'s first keys that ``said`` ends with, looked for among
    the last ``_TAIL_WORDS`` keys only."""
    if not cue:
        return 0
    first, end = cue[0], len(said)
    for size in range(min(end, len(cue), _TAIL_WORDS), 0, -1):
        # Only a run that starts with the cue's first key can be it: the slices are compared only then.
        if said[end - size] == first and said[end - size :] == cue[:size]:
            return size
    return 0


def folds(
    keyed: Sequence[Sequence[str]], auto_generated: bool | None, first_lines: Sequence[str | None] = ()
) -> bool:
    """Whether a track's cues (their keys, in order, empty ones aside) are folded: never a human track's
    (``auto_generated`` False); a track the site says nothing of when they visibly roll; a track the site
    says is generated unless its cues visibly do not roll: enough pairs, too few of them repeating the
    cue before (its end at the later cue's start: two words at least, or all of the earlier cue, or
    all of the later cue's first line of ``first_lines``, one word or more). A cue of a track that does
    not roll may begin with the word the cue before it ended with, but seldom with all of that cue, nor
    on a line of its own."""
    if auto_generated is False:
        return False
    pairs, rolling = _rolling_pairs(keyed, generated=auto_generated is True, first_lines=first_lines)
    if auto_generated is None:
        # Visibly rolling: most cues start with words that end the cue before them (at least two, or the
        # whole cue).
        return rolling >= _ROLLING_PAIRS and rolling >= pairs * _ROLLING_SHARE
    return pairs < _ROLLING_PAIRS or rolling >= pairs * _ROLLING_SHARE


def _rolling_pairs(
    keyed: Sequence[Sequence[str]], *, generated: bool, first_lines: Sequence[str | None] = ()
) -> tuple[int, int]:
    """How many pairs of successive cues there are, and how many of them roll: the earlier cue ends with
    at least two of the later cue's first words, or with all of the later cue; in a ``generated``
    track also a later cue that starts with all of the earlier one, or whose first line (of
    ``first_lines``, when given) is what the earlier one ends with (a track rolling one word at a
    time)."""
    pairs = 0
    rolling = 0
    for index, (before, after) in enumerate(pairwise(keyed), 1):
        pairs += 1
        size = overlap(before, after)
        if size >= 2 or (size and size == len(after)):
            rolling += 1
        elif size and generated:
            line = first_lines[index] if index < len(first_lines) else None
            rolling += size == len(before) or (line is not None and size == len(token_keys(line)))
    return pairs, rolling


def fold_rolling(cues: Sequence[TimedText], keyed: Sequence[Sequence[str]]) -> list[TimedText]:
    """Each cue's newly said words as a segment with the cue's times; a cue that adds nothing is none.
    ``keyed``: each cue's :func:`token_keys`."""
    said: list[str] = []
    segments: list[TimedText] = []
    for cue, keys in zip(cues, keyed, strict=True):
        repeated = overlap(said, keys)
        if repeated == len(keys):
            continue
        said.extend(keys[repeated:])
        del said[:-_TAIL_WORDS]
        segments.append(TimedText(cue.start_ms, cue.end_ms, text_after(cue.text, repeated)))
    return segments


def folded(cues: Sequence[TimedText], auto_generated: bool | None) -> list[TimedText]:
    """The cues that say something, folded when the track rolls (see :func:`folds`)."""
    said = [cue for cue in cues if cue.text]
    if auto_generated is False:
        return said
    keyed = [token_keys(cue.text) for cue in said]
    first_lines = [cue.first_line for cue in said] if auto_generated else ()
    return fold_rolling(said, keyed) if folds(keyed, auto_generated, first_lines) else said
