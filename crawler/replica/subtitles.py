"""What was said in a lecture's subtitle tracks, and how each track's file is written.

A track's speech is made from its lecture's title and abstract: the speakable words of the abstract (LaTeX
and markup characters left out) cut into sentences, framed by a greeting and a closing, repeated in new
words until the talk is long enough (3 to 40 sentences). Every time comes from a ``random.Random`` of the
site's seed and the transcript's id, so a seed names the same files on every machine.

A human track is cued sentence by sentence. An auto-generated track ROLLS, as speech recognition writes
it: the words are cut into short lines, each cue shows the line before and the new line, and a 10 ms cue
between two of them repeats the line just finished; folded, the new lines are what was said.

Some tracks are broken on purpose, each of a *kind* (:data:`BROKEN_KINDS`), so that a crawl meets every
problem a real one does; :func:`assign_kinds` hands the kinds out over the whole site. The files
themselves are written by :mod:`crawler.replica.subtitle_files`; the ground truth of every track by
:func:`track_truth`.
"""

from __future__ import annotations

import hashlib
import random
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

# The kinds of track. A clean track is well-formed UTF-8 WebVTT.
KIND_CLEAN = "clean"
KIND_SRT = "srt_as_vtt"  # SubRip content under a .vtt name
KIND_BOM = "bom"  # a UTF-8 byte order mark before WEBVTT
KIND_CRLF = "crlf"  # CR LF line ends
KIND_CUE_SETTINGS = "cue_settings"  # cue identifiers and cue settings after the times
KIND_BLOCKS = "blocks"  # NOTE, STYLE and REGION blocks
KIND_SPANS = "spans"  # voice and class spans, <i>, <b> and <u>
KIND_INLINE_TIMESTAMPS = "inline_timestamps"  # word times inside the rolling cues of an auto track
KIND_ENTITIES = "entities"  # &amp; &lt; &gt; &quot; &#39; in the cue text
KIND_GZIP = "gzip"  # served with Content-Encoding: gzip to a client that accepts it
KIND_CP1252 = "cp1252"  # Windows-1252 bytes, not UTF-8
KIND_OVERSIZE = "oversize"  # a file larger than 2 MiB
KIND_MALFORMED_CUE = "malformed_cue"  # one cue with a broken timing line among good ones
KIND_NOT_FOUND = "not_found"  # the file answers 404
KIND_NO_URL = "no_url"  # listed without a subtitle URL (still processing)
KIND_OFFSITE_REDIRECT = "offsite_redirect"  # the file redirects to a host that is not the site's
KIND_ROBOTS = "robots_disallowed"  # the file sits under a path the assets host's robots.txt disallows
KIND_PERSONAL = "personal_data"  # the speaker says an e-mail address and a phone number

BROKEN_KINDS: tuple[str, ...] = (
    KIND_SRT,
    KIND_BOM,
    KIND_CRLF,
    KIND_CUE_SETTINGS,
    KIND_BLOCKS,
    KIND_SPANS,
    KIND_INLINE_TIMESTAMPS,
    KIND_ENTITIES,
    KIND_GZIP,
    KIND_CP1252,
    KIND_OVERSIZE,
    KIND_MALFORMED_CUE,
    KIND_NOT_FOUND,
    KIND_NO_URL,
    KIND_OFFSITE_REDIRECT,
    KIND_ROBOTS,
    KIND_PERSONAL,
)
KINDS: tuple[str, ...] = (KIND_CLEAN, *BROKEN_KINDS)
# Kinds only human tracks get (their cues are whole sentences) and kinds only auto tracks get.
HUMAN_ONLY = frozenset({KIND_SPANS, KIND_ENTITIES, KIND_CP1252, KIND_MALFORMED_CUE, KIND_PERSONAL})
AUTO_ONLY = frozenset({KIND_INLINE_TIMESTAMPS})
# Each broken kind's share of a site's tracks (at least one track each while there are tracks left).
KIND_SHARE = 0.015
# An event with this many tracks has every kind among its own (twice as many tracks as kinds).
OWN_KINDS_TRACKS = 2 * len(BROKEN_KINDS)

# What a crawl is expected to record for a track it could not read (``transcripts.problem``).
PROBLEM_NOT_FOUND = "not_found"
PROBLEM_TOO_LARGE = "too_large"
PROBLEM_OFF_HOST = "off_host"
PROBLEM_ROBOTS = "robots"
PROBLEM_NOT_UTF8 = "not_utf8"
EXPECTED_PROBLEMS: dict[str, str] = {
    KIND_NOT_FOUND: PROBLEM_NOT_FOUND,
    KIND_OVERSIZE: PROBLEM_TOO_LARGE,
    KIND_OFFSITE_REDIRECT: PROBLEM_OFF_HOST,
    KIND_ROBOTS: PROBLEM_ROBOTS,
    KIND_CP1252: PROBLEM_NOT_UTF8,
}
# Kinds whose file holds no text a crawl can have.
NO_TEXT_KINDS = frozenset({KIND_NOT_FOUND, KIND_OVERSIZE, KIND_OFFSITE_REDIRECT, KIND_ROBOTS, KIND_NO_URL})

# Where the robots.txt of the assets host forbids, and where an off-site redirect goes.
PRIVATE_PREFIX = "/private"
OFFSITE_HOST = "http://elsewhere.invalid"

# What the personal-data track's speaker says (each a form a grep or a redaction finds).
SPOKEN_EMAIL = "jane.roe@example.org"
SPOKEN_PHONE = "+1 415 555 0142"
PERSONAL_SENTENCE = f"If you have questions, write to {SPOKEN_EMAIL} or call me at {SPOKEN_PHONE}."
# What the entities track's speaker says: every character that cue text must write as an entity.
ENTITY_SENTENCE = 'Q&A comes last, and note that recall < 1 > 0 is "not" what we\'re after.'
# What the cp1252 track's speaker says: characters Windows-1252 writes in one byte each, never two of them
# side by side (so that every decoder replaces each with exactly one U+FFFD).
CP1252_SENTENCE = (
    "Our na\u00efve caf\u00e9 baseline \u2013 it\u2019s the \u201csimple\u201d one \u2013 works."
)

MIN_SENTENCES = 3
MAX_SENTENCES = 40
# The said text of a track is about this many characters (before the sentence bounds apply): a human
# track's file is about 1.3 times as long, a rolling auto track's about 3.5 times, both 5 to 30 KB.
HUMAN_SAID_CHARS = (4_500, 20_000)
AUTO_SAID_CHARS = (1_500, 6_500)
# Words of a rolling line of an auto track.
LINE_WORDS = (4, 8)
REPEAT_CUE_MS = 10
OVERSIZE_BYTES = 2 * 1024 * 1024 + 200_000

_GREETINGS = (
    "Hello everyone, and thank you for joining this talk on {title}.",
    "Hi, I am happy to present our paper {title}.",
    "Good morning, today I will talk about {title}.",
)
_CLOSINGS = (
    "Thank you for your attention, and I am happy to take questions.",
    "That is all from me, thank you for listening.",
)
_AGAIN = ("To say it once more,", "In other words,", "Let me repeat the main point:", "Again,")
# Characters of a word that nobody says: markup, LaTeX and the characters cue text must escape.
_UNSPEAKABLE = re.compile(r"[^\w.,;:?!'\u2019%/()-]|_")
_LATEX = re.compile(r"[\\${}^]")
_SENTENCE_END = re.compile(r"[.?!]$")


@dataclass(frozen=True)
class Sentence:
    """One sentence of a talk: its words and when it is said (milliseconds from the start)."""

    words: tuple[str, ...]
    start_ms: int
    end_ms: int

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class Cue:
    """One cue of a file: times, the lines shown, and the words newly said in it ('' for a repeat)."""

    start_ms: int
    end_ms: int
    lines: tuple[str, ...]
    new: str
    # For the rolling cues of an auto track: when each newly said word starts.
    word_starts: tuple[int, ...] = ()


def speakable_words(text: str) -> list[str]:
    """The words of ``text`` a speaker says: NFC, LaTeX tokens dropped, markup characters removed."""
    words = []
    for token in unicodedata.normalize("NFC", text).split():
        if _LATEX.search(token):
            continue
        word = _UNSPEAKABLE.sub("", token)
        if any(c.isalnum() for c in word):
            words.append(word)
    return words


def sentences_of(text: str) -> list[list[str]]:
    """The speakable words of ``text`` cut after every word that ends with '.', '?' or '!'."""
    out: list[list[str]] = []
    current: list[str] = []
    for word in speakable_words(text):
        current.append(word)
        if _SENTENCE_END.search(word):
            out.append(current)
            current = []
    if current:
        current[-1] = current[-1].rstrip(",;:") + "."
        out.append(current)
    return out


def track_rng(seed: int, transcript_id: str) -> random.Random:
    return random.Random(f"{seed}:subtitle:{transcript_id}")


def script(
    rng: random.Random, title: str, abstract: str, *, auto: bool, extra: str | None = None
) -> list[list[str]]:
    """The sentences of a talk (each a list of words): a greeting naming the title, the abstract's
    sentences (over again in other words while the talk is short), ``extra`` near the end, a closing."""
    body = sentences_of(abstract) or [speakable_words(title) or ["Welcome."]]
    greeting = speakable_words(rng.choice(_GREETINGS).format(title=title.rstrip(".?!")))
    closing = speakable_words(rng.choice(_CLOSINGS))
    said_chars = rng.randint(*(AUTO_SAID_CHARS if auto else HUMAN_SAID_CHARS))
    out = [greeting]
    size, round_ = len(" ".join(greeting)), 0
    while size < said_chars and len(out) < MAX_SENTENCES - 2:
        for k, sentence in enumerate(body):
            if round_ > 0 and k == 0:
                sentence = [*rng.choice(_AGAIN).split(), _lower_first(sentence[0]), *sentence[1:]]
            out.append(sentence)
            size += len(" ".join(sentence)) + 1
            if size >= said_chars or len(out) >= MAX_SENTENCES - 2:
                break
        round_ += 1
    if extra is not None:
        out.append(extra.split())
    out.append(closing)
    return out


def _lower_first(word: str) -> str:
    return word[:1].lower() + word[1:] if word[1:2].islower() else word


def timed(rng: random.Random, sentences: Sequence[Sequence[str]]) -> list[Sentence]:
    """The sentences with times: a start after a short silence, a pace of the track's own, pauses."""
    word_ms = rng.randint(280, 420)
    at = rng.randint(600, 3000)
    out = []
    for words in sentences:
        end = at + word_ms * len(words)
        out.append(Sentence(tuple(words), at, end))
        at = end + rng.randint(150, 900)
    return out


def word_starts(sentence: Sentence) -> list[int]:
    """When each word of the sentence starts (the sentence's time shared out evenly)."""
    step = (sentence.end_ms - sentence.start_ms) // max(1, len(sentence.words))
    return [sentence.start_ms + k * step for k in range(len(sentence.words))]


def human_cues(sentences: Sequence[Sentence]) -> list[Cue]:
    """One cue a sentence."""
    return [Cue(s.start_ms, s.end_ms, (s.text,), s.text) for s in sentences]


def rolling_cues(rng: random.Random, sentences: Sequence[Sentence]) -> list[Cue]:
    """Lines of a few words each; every cue shows the line before and the new one, and a 10 ms cue
    between two of them shows the finished line alone."""
    timed_words = [(w, t) for s in sentences for w, t in zip(s.words, word_starts(s), strict=True)]
    lines: list[list[tuple[str, int]]] = []
    at = 0
    while at < len(timed_words):
        size = rng.randint(*LINE_WORDS)
        lines.append(timed_words[at : at + size])
        at += size
    final_end = sentences[-1].end_ms if sentences else 0
    cues: list[Cue] = []
    for k, line in enumerate(lines):
        start = line[0][1]
        end = lines[k + 1][0][1] if k + 1 < len(lines) else final_end
        text = " ".join(w for w, _ in line)
        shown = (" ".join(w for w, _ in lines[k - 1]), text) if k else (text,)
        cues.append(Cue(start, end - REPEAT_CUE_MS, shown, text, tuple(t for _, t in line)))
        cues.append(Cue(end - REPEAT_CUE_MS, end, (text,), ""))
    return cues


@dataclass(frozen=True)
class TrackPlan:
    """Everything one track's file and truth come from."""

    kind: str
    auto: bool
    sentences: tuple[Sentence, ...]
    cues: tuple[Cue, ...]
    # The index in ``cues`` of the malformed cue (its words are not said), or None.
    malformed: int | None = None


_EXTRA_SENTENCES = {
    KIND_PERSONAL: PERSONAL_SENTENCE,
    KIND_ENTITIES: ENTITY_SENTENCE,
    KIND_CP1252: CP1252_SENTENCE,
}


def plan_track(
    *, seed: int, transcript_id: str, title: str, abstract: str, auto: bool, kind: str
) -> TrackPlan:
    """The track's sentences and cues (the same for the same arguments, in every process)."""
    rng = track_rng(seed, transcript_id)
    if kind == KIND_CP1252:
        title, abstract = cp1252_safe(title), cp1252_safe(abstract)
    sentences = timed(rng, script(rng, title, abstract, auto=auto, extra=_EXTRA_SENTENCES.get(kind)))
    cues = rolling_cues(rng, sentences) if auto else human_cues(sentences)
    malformed = len(cues) // 2 if kind == KIND_MALFORMED_CUE else None
    return TrackPlan(kind, auto, tuple(sentences), tuple(cues), malformed)


def cp1252_safe(text: str) -> str:
    """``text`` in ASCII (accents dropped, other characters left out): the cp1252 track's speech only
    holds the non-ASCII characters its planted sentence places."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def normalized(text: str) -> str:
    """NFC, every run of whitespace one space, none at either end."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def said_text(plan: TrackPlan) -> str:
    """What was said in the file's readable cues, once and in order."""
    said = (c.new for k, c in enumerate(plan.cues) if c.new and k != plan.malformed)
    return normalized(" ".join(said))


def segment_starts(plan: TrackPlan) -> list[int]:
    """When each segment starts: every readable cue of a human track, every cue with new words of an
    auto track (a cue that only repeats what was shown is no segment)."""
    return [c.start_ms for k, c in enumerate(plan.cues) if c.new and k != plan.malformed]


def replaced_non_ascii(text: str) -> str:
    """``text`` as a reader that replaces bytes which are not UTF-8 sees cp1252 bytes: every non-ASCII
    character (one byte in cp1252, never next to another) becomes U+FFFD."""
    return "".join(c if c.isascii() else "\ufffd" for c in text)


def assign_kinds(seed: int, events: Sequence[Sequence[tuple[str, bool]]]) -> dict[str, str]:
    """Transcript id -> kind, for ``(transcript id, auto_generated)`` of every track of a site, one
    sequence an event.

    An event with at least :data:`OWN_KINDS_TRACKS` tracks has every kind among its own (so that a
    crawl of that event alone meets them all); the tracks of the smaller events share one set. In a
    seeded order of a set's tracks, round after round, each broken kind takes the first track left that
    it fits (human or auto), until each has its share (:data:`KIND_SHARE`, at least one); the rest are
    clean. A set with at least as many tracks of each sort as the kinds need has every kind.
    """
    large = [list(tracks) for tracks in events if len(tracks) >= OWN_KINDS_TRACKS]
    pooled = [t for tracks in events if len(tracks) < OWN_KINDS_TRACKS for t in tracks]
    kinds: dict[str, str] = {}
    for tracks in [*large, pooled]:
        kinds.update(_kinds_of(seed, tracks))
    return kinds


def _kinds_of(seed: int, tracks: Sequence[tuple[str, bool]]) -> dict[str, str]:
    order = sorted(tracks, key=lambda t: hashlib.sha256(f"{seed}:kind:{t[0]}".encode()).hexdigest())
    quota = max(1, round(len(tracks) * KIND_SHARE))
    kinds: dict[str, str] = {}
    free = list(order)
    for _ in range(quota):
        for kind in BROKEN_KINDS:
            pick = next((t for t in free if _fits(kind, t[1])), None)
            if pick is not None:
                free.remove(pick)
                kinds[pick[0]] = kind
    for transcript_id, _auto in free:
        kinds[transcript_id] = KIND_CLEAN
    return kinds


def _fits(kind: str, auto: bool) -> bool:
    return not (kind in HUMAN_ONLY and auto) and not (kind in AUTO_ONLY and not auto)


def file_path(lecture_id: str, locale: str, token: str, kind: str) -> str | None:
    """Where the track's file is on the assets origin (None: listed without a URL)."""
    if kind == KIND_NO_URL:
        return None
    path = f"/lecture/{lecture_id}/transcripts/{locale}-{token}.vtt"
    return PRIVATE_PREFIX + path if kind == KIND_ROBOTS else path
