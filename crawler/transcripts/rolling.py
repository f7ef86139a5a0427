"""Rolling captions folded: what each cue newly says, once.

Speech recognition tracks roll: each cue shows the line (or lines) before it again with the new words
after them, and very short cues (10 ms) show a line once more. A cue's new words are what follows the
longest run of its first words that ends what was already said (the longest suffix of the text so far
that is a prefix of the cue, words compared without case and punctuation). The longest overlap is what
keeps a word said twice on purpose ("very very"): the cue that repeats the line before and adds the
second "very" overlaps the whole line, not just its last word.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

# A track rolls when at least this share of its cue pairs overlap (the later cue starts with words that
# end the earlier one: two at least, or the whole later cue) ...
_ROLLING_SHARE = 0.5
# ... and at least this many pairs do.
_ROLLING_PAIRS = 2
# Said-so-far words a new cue is compared with: a cue repeats what was just shown, never more.
_TAIL_WORDS = 256


@dataclass(frozen=True)
class TimedText:
    """A cue's cleaned text and its times, in milliseconds."""

    start_ms: int
    end_ms: int
    text: str


# A talk says the same few thousand words again and again.
@functools.lru_cache(maxsize=8192)
def word_key(word: str) -> str:
    """A word as folding compares it: case folded, punctuation at both ends removed (a word of
    punctuation alone compares as itself)."""
    key = word.casefold().strip(".,;:!?\"'()[]{}\u2018\u2019\u201c\u201d\u2026-\u2013\u2014")
    return key or word.casefold()


def overlap(said: Sequence[str], cue: Sequence[str]) -> int:
    """The length of the longest run of ``cue``'s first words that ``said`` ends with (both word keys),
    looked for among the last ``_TAIL_WORDS`` words only."""
    for size in range(min(len(said), len(cue), _TAIL_WORDS), 0, -1):
        if said[len(said) - size :] == cue[:size]:
            return size
    return 0


def visibly_rolls(texts: Sequence[str]) -> bool:
    """True when the cue texts (in order, empty ones aside) roll: most cues start with words that end
    the cue before them (at least two, or the whole cue)."""
    pairs, rolling = _rolling_pairs(texts)
    return rolling >= _ROLLING_PAIRS and rolling >= pairs * _ROLLING_SHARE


def folds(texts: Sequence[str], auto_generated: bool | None) -> bool:
    """Whether a track's cues are folded: never a human track's (``auto_generated`` False); a track the
    site says is generated unless its cues visibly do not roll (enough pairs, too few overlapping: a cue
    of a track that does not roll may begin with the word the cue before it ended with); a track the site
    says nothing of when they visibly roll."""
    if auto_generated is False:
        return False
    if auto_generated is None:
        return visibly_rolls(texts)
    pairs, rolling = _rolling_pairs(texts)
    return pairs < _ROLLING_PAIRS or rolling >= pairs * _ROLLING_SHARE


def _rolling_pairs(texts: Sequence[str]) -> tuple[int, int]:
    """How many pairs of successive cues there are, and how many of them roll."""
    keyed = [[word_key(w) for w in text.split()] for text in texts if text]
    pairs = 0
    rolling = 0
    for before, after in pairwise(keyed):
        pairs += 1
        size = overlap(before, after)
        if size >= 2 or (size and size == len(after)):
            rolling += 1
    return pairs, rolling


def fold_rolling(cues: Sequence[TimedText]) -> list[TimedText]:
    """Each cue's newly said words as a segment with the cue's times; a cue that adds nothing is none."""
    said: list[str] = []
    segments: list[TimedText] = []
    for cue in cues:
        words = cue.text.split()
        keys = [word_key(w) for w in words]
        new = words[overlap(said, keys) :]
        if not new:
            continue
        said.extend(keys[len(words) - len(new) :])
        del said[:-_TAIL_WORDS]
        segments.append(TimedText(cue.start_ms, cue.end_ms, " ".join(new)))
    return segments
