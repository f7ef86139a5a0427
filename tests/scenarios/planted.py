"""Planted cases with known answers, added to a built replica site.

:func:`plant_cases` adds to the main event, deterministically from a seed:

- duplicate talks: the same record (title, abstract, keywords) once more under a new id in another
  session (about 2% of the event's lectures); a correct publish keeps one record, the lowest id,
  with the other in ``alternate_ids``;
- near-duplicates: a record once more under a new id with its abstract revised by one to four words
  (a word replaced, dropped or added, a typo made), the word-level edit distance recorded (about 3%);
  a correct publish keeps both and gives them one ``near_duplicate_cluster``;
- pages without usable ``__NEXT_DATA__``: the script missing, cut in half, or not JSON (about 4% in
  all); a correct crawl reads them from the visible page (``extraction`` ``visible_text``), with the
  same ``text`` and no related lecture ids, which only the page's JSON gives;
- an extra banner block on about 5% of pages, before the lecture's section or between the welcome
  text and the related lectures; it must never reach a record's ``text``.

:class:`PlantedTruth` says what was planted and :meth:`PlantedTruth.expected_records` turns the
site's ground truth (``layout.ground_truth``) into the records a correct crawl and publish give.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from crawler.replica.gold import UnknownText, clean_text, content_hash
from crawler.replica.layout import (
    MAIN_EVENT_ID,
    SESSION_KIND_POSTER,
    TAG_IDS,
    Lecture,
    Link,
    ReplicaSite,
    Session,
    normalize_block,
)
from crawler.replica.pages import (
    BANNER_MIDDLE,
    BANNER_TOP,
    NEXT_DATA_MISSING,
    NEXT_DATA_NOT_JSON,
    NEXT_DATA_TRUNCATED,
    PageVariant,
)
from crawler.text.latex import clean_latex

DUPLICATE_SHARE = 0.02
NEAR_DUPLICATE_SHARE = 0.03
# Shares of pages whose __NEXT_DATA__ is missing, cut in half, or not JSON.
FALLBACK_SHARES = ((NEXT_DATA_MISSING, 0.025), (NEXT_DATA_TRUNCATED, 0.01), (NEXT_DATA_NOT_JSON, 0.005))
BANNER_SHARE = 0.05
BANNERS = (
    "Registration for EMNLP 2025 is open: early-bird rates end on October 6th.",
    "Keynotes are streamed live on Underline from November 5th.",
    "We are moving to a new video player. Tell us what you think!",
)
# Near-duplicates revise an abstract of at least this many words, so a few changed words stay few.
MIN_NEAR_WORDS = 60
MAX_EDITS = 4
REPLACEMENTS = (
    "novel", "simple", "robust", "effective", "efficient", "strong", "new", "general", "scalable",
    "practical", "significant", "consistent", "substantial", "comprehensive", "extensive",
)  # fmt: skip


@dataclass(frozen=True)
class PlantedSite(ReplicaSite):
    """A replica site with planted cases; ``page_variants`` is read by the page renderer."""

    page_variants: Mapping[str, PageVariant] = field(default_factory=dict)
    # The cleaned text of revised abstracts the replica's literal table does not know: the crawler's
    # cleaner names it here (only for the few revised abstracts with LaTeX in them).
    clean_text_overrides: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NearDuplicate:
    original: str
    copy: str
    edit_distance: int  # word-level Levenshtein distance between the two abstracts
    edits: tuple[str, ...]  # what was changed, e.g. "replace 'simple' -> 'robust'"


@dataclass(frozen=True)
class PlantedTruth:
    seed: int
    duplicates: tuple[tuple[str, str], ...]  # (original id, duplicate id)
    near_duplicates: tuple[NearDuplicate, ...]
    fallback: Mapping[str, str]  # lecture id -> how its __NEXT_DATA__ is broken
    banners: Mapping[str, str]  # lecture id -> the banner text its page shows

    def duplicate_pairs(self) -> set[frozenset[str]]:
        return {frozenset(pair) for pair in self.duplicates}

    def near_duplicate_pairs(self) -> set[frozenset[str]]:
        return {frozenset((n.original, n.copy)) for n in self.near_duplicates}

    def expected_records(self, truth: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The records a correct crawl and publish give, from ``layout.ground_truth`` of the site.

        Pages read without JSON say ``visible_text`` and have no related lecture ids; of a duplicate
        pair the lower id stays, with the other in ``alternate_ids`` and both records' URLs; the two
        records of a near-duplicate pair share the cluster named by their lower id.
        """
        by_id = {str(r["lecture_id"]): dict(r) for r in truth}
        for lecture_id in self.fallback:
            if lecture_id in by_id:
                by_id[lecture_id]["extraction"] = "visible_text"
                by_id[lecture_id]["related_lecture_ids"] = []
        for pair in self.duplicates:
            keep, drop = sorted(pair, key=id_order)
            if keep not in by_id or drop not in by_id:
                continue
            gone = by_id.pop(drop)
            kept = by_id[keep]
            kept["alternate_ids"] = sorted({*kept.get("alternate_ids", []), drop}, key=id_order)
            kept["source_urls"] = sorted({*kept["source_urls"], *gone["source_urls"]})
        for near in self.near_duplicates:
            members = [m for m in (near.original, near.copy) if m in by_id]
            if len(members) == 2:
                cluster = min(members, key=id_order)
                for member in members:
                    by_id[member]["near_duplicate_cluster"] = cluster
        out = []
        for lecture_id in sorted(by_id, key=id_order):
            record = by_id[lecture_id]
            record.setdefault("alternate_ids", [])
            record.setdefault("near_duplicate_cluster", None)
            record["content_sha256"] = content_hash(record)
            out.append(record)
        return out


def id_order(lecture_id: str) -> tuple[int, str]:
    return (len(lecture_id), lecture_id)


def word_edit_distance(a: Sequence[str], b: Sequence[str]) -> int:
    """Levenshtein distance between two word sequences (insert, delete, replace a word)."""
    previous = list(range(len(b) + 1))
    for i, word in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != other)))
        previous = current
    return previous[-1]


_WORD = re.compile(r"[A-Za-z]{4,}")


def revise(rng: random.Random, abstract: str, edits: int) -> tuple[str, tuple[str, ...]]:
    """``abstract`` with ``edits`` words changed (replaced, dropped, added or misspelt), and what."""
    words = abstract.split(" ")
    done: list[str] = []
    touched: set[int] = set()
    for _ in range(edits):
        candidates = [i for i, w in enumerate(words) if _WORD.fullmatch(w) and i not in touched]
        if not candidates:
            break
        i = rng.choice(candidates)
        kind = rng.choice(("replace", "drop", "add", "typo"))
        word = words[i]
        if kind == "replace":
            new = rng.choice([r for r in REPLACEMENTS if r != word.lower()])
            words[i] = new
            done.append(f"replace {word!r} -> {new!r}")
        elif kind == "drop":
            del words[i]
            touched = {t - 1 if t > i else t for t in touched}
            done.append(f"drop {word!r}")
            continue
        elif kind == "add":
            new = rng.choice(REPLACEMENTS)
            words.insert(i, new)
            touched = {t + 1 if t >= i else t for t in touched}
            done.append(f"add {new!r}")
        else:
            k = rng.randrange(len(word) - 1)
            new = word[:k] + word[k + 1] + word[k] + word[k + 2 :]
            if new == word:
                new = word + word[-1]
            words[i] = new
            done.append(f"typo {word!r} -> {new!r}")
        touched.add(i)
    return " ".join(words), tuple(done)


def _free_ids(rng: random.Random, site: ReplicaSite, count: int) -> list[str]:
    taken = {int(i) for i in site.lectures}
    ours = [int(lec.id) for lec in site.lectures.values() if lec.event_id == MAIN_EVENT_ID]
    low, high = (min(ours), max(ours)) if ours else (129800, 132400)
    pool = [n for n in range(low, high + 1) if n not in taken]
    if len(pool) < count:
        pool += list(range(high + 1, high + 1 + count))
    return [str(n) for n in sorted(rng.sample(pool, count))]


def _doi(rng: random.Random, used: set[str]) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    while True:
        doi = "10.48448/" + "".join(rng.choice(alphabet) for _ in range(4)) + "-"
        doi += "".join(rng.choice(alphabet) for _ in range(4))
        if doi not in used:
            used.add(doi)
            return doi


def _session_link(lecture_id: str, session: Session, slug: str) -> Link:
    if session.kind == SESSION_KIND_POSTER:
        return Link(lecture_id, f"/events/{session.event_id}/posters/{session.id}/poster/{lecture_id}-{slug}")
    return Link(lecture_id, f"/events/{session.event_id}/sessions/{session.id}/lecture/{lecture_id}-{slug}")


def _copy_lecture(
    rng: random.Random,
    site: ReplicaSite,
    original: Lecture,
    new_id: str,
    abstract: str,
    used_dois: set[str],
    pool: Sequence[Lecture],
) -> Lecture:
    """``original`` once more under ``new_id`` in another session of its event."""
    sessions = [s for s in site.sessions.values() if s.event_id == original.event_id]
    others = [s for s in sessions if s.id != original.session_id] or sessions
    session = rng.choice(sorted(others, key=lambda s: int(s.id)))
    if original.track in ("tutorial", "demo"):
        tag_id = TAG_IDS[original.track]
    else:
        tag_id = TAG_IDS["poster" if session.kind == SESSION_KIND_POSTER else "technical paper"]
    related_pool = [lec for lec in pool if lec.id not in (original.id, new_id)]
    related = tuple(
        _session_link(lec.id, site.sessions[lec.session_id], lec.slug)
        for lec in rng.sample(related_pool, min(10, len(related_pool)))
    )
    nxt = rng.choice(related_pool)
    similar = rng.choice(related_pool)
    return replace(
        original,
        id=new_id,
        session_id=session.id,
        tag_id=tag_id,
        abstract=abstract,
        held_at=session.starts_at + timedelta(minutes=15 * rng.randint(0, 40)),
        published_at=original.published_at + timedelta(hours=rng.randint(1, 72)),
        package="free" if rng.random() < 0.75 else "premium",
        underline_doi=_doi(rng, used_dois),
        video_doi=None,
        playlist=None,
        poster_lecture=session.kind == SESSION_KIND_POSTER,
        related=related,
        next=Link(nxt.id, f"/lecture/{nxt.id}-{nxt.slug}"),
        similar=Link(similar.id, f"/lecture/{similar.id}"),
    )


def plant_cases(site: ReplicaSite, seed: int = 0) -> tuple[PlantedSite, PlantedTruth]:
    """``site`` with the planted cases added (see the module), and what was planted.

    The same site and seed always give the same result. The site's own lectures are unchanged
    except that some pages get a page variant; the planted lectures are new ids of the main event.
    """
    rng = random.Random(f"planted-{seed}")
    main = sorted(site.event_lectures(MAIN_EVENT_ID), key=lambda lec: id_order(lec.id))
    n = len(main)
    n_dup = max(1, round(n * DUPLICATE_SHARE)) if n >= 10 else 0
    long_enough = [lec for lec in main if len(lec.abstract.split()) >= MIN_NEAR_WORDS]
    n_near = min(len(long_enough), max(1, round(n * NEAR_DUPLICATE_SHARE))) if n >= 10 else 0
    near_sources = rng.sample(long_enough, n_near)
    chosen = {lec.id for lec in near_sources}
    dup_sources = rng.sample([lec for lec in main if lec.id not in chosen], n_dup)
    chosen.update(lec.id for lec in dup_sources)
    new_ids = _free_ids(rng, site, n_dup + n_near)
    rng.shuffle(new_ids)
    used_dois = {lec.underline_doi for lec in site.lectures.values() if lec.underline_doi}
    lectures: dict[str, Lecture] = dict(site.lectures)

    duplicates = []
    for original, new_id in zip(dup_sources, new_ids[:n_dup], strict=True):
        lectures[new_id] = _copy_lecture(rng, site, original, new_id, original.abstract, used_dois, main)
        duplicates.append((original.id, new_id))
    near = []
    for original, new_id in zip(near_sources, new_ids[n_dup:], strict=True):
        wanted = rng.randint(1, MAX_EDITS)
        abstract, edits = revise(rng, original.abstract, wanted)
        distance = word_edit_distance(original.abstract.split(), abstract.split())
        lectures[new_id] = _copy_lecture(rng, site, original, new_id, abstract, used_dois, main)
        near.append(NearDuplicate(original.id, new_id, distance, edits))

    variants: dict[str, PageVariant] = {}
    fallback: dict[str, str] = {}
    plain = [lec.id for lec in main if lec.id not in chosen]
    for kind, share in FALLBACK_SHARES:
        count = max(1, round(n * share)) if n >= 10 else 0
        for lecture_id in rng.sample([i for i in plain if i not in fallback], count):
            fallback[lecture_id] = kind
    banners: dict[str, str] = {}
    every = sorted(lectures, key=id_order)
    every = [i for i in every if lectures[i].event_id == MAIN_EVENT_ID]
    positions: dict[str, str] = {}
    for lecture_id in rng.sample(every, round(len(every) * BANNER_SHARE)):
        banners[lecture_id] = rng.choice(BANNERS)
        positions[lecture_id] = rng.choice((BANNER_TOP, BANNER_MIDDLE))
    for lecture_id in sorted({*fallback, *banners}, key=id_order):
        variants[lecture_id] = PageVariant(
            next_data=fallback.get(lecture_id, "ok"),
            banner=banners.get(lecture_id),
            banner_position=positions.get(lecture_id, BANNER_TOP),
        )
    overrides: dict[str, str] = {}
    for lecture_id, lecture in lectures.items():
        if lecture_id in site.lectures:
            continue
        block = normalize_block(lecture.abstract)
        try:
            clean_text(block)
        except UnknownText:
            overrides[block] = clean_latex(block)
    planted = PlantedSite(
        clean_text_overrides=overrides,
        seed=site.seed,
        events=site.events,
        tags=site.tags,
        sessions=site.sessions,
        lectures=dict(sorted(lectures.items(), key=lambda kv: int(kv[0]))),
        page_variants=variants,
    )
    truth = PlantedTruth(
        seed=seed,
        duplicates=tuple(sorted(duplicates, key=lambda p: id_order(p[0]))),
        near_duplicates=tuple(sorted(near, key=lambda x: id_order(x.original))),
        fallback=dict(sorted(fallback.items(), key=lambda kv: id_order(kv[0]))),
        banners=dict(sorted(banners.items(), key=lambda kv: id_order(kv[0]))),
    )
    return planted, truth
