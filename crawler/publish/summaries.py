"""What publishing decides over the whole catalogue, from small per-lecture summaries.

A release is written one event at a time (:mod:`crawler.publish.events`), but two decisions look
across events: the same talk staged under two ids becomes one record, and near-duplicate talks share a
cluster. Both are taken here from what each lecture is reduced to (its id, the key of its talk, the key
of its text and its MinHash signature, one row of a ``uint32`` matrix), never from whole records: the
memory they take is a few hundred bytes per lecture, and a candidate pair's texts are read back from
the stage only to check its exact similarity.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import weakref
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from crawler import schema
from crawler.dedup import near
from crawler.dedup.records import SAME_TALK, Cluster, DedupReport, Merge, talk_key, united_subtitles
from crawler.schema import VOLATILE_FIELDS, Lecture, lecture_order, volatile_digest
from crawler.state.stage_index import StageIndex

logger = logging.getLogger(__name__)

# Reads a lecture back by id (from the stage): only candidate pairs' texts are read twice.
ReadLecture = Callable[[str], Lecture]


# What the same-talk decision needs of a staged lecture, by id: the key of its talk
# (:func:`crawler.dedup.records.talk_key`) and its alternate ids.
Talks = dict[str, tuple[str | None, tuple[str, ...]]]


@dataclass
class DedupPlan:
    """The duplicate decisions over a staged crawl, applied to its lectures one at a time."""

    dropped: frozenset[str] = frozenset()
    # Kept id -> its alternate ids, and the ids whose URLs it takes over.
    alternates: dict[str, tuple[list[str], tuple[str, ...]]] = field(default_factory=dict)
    clusters: dict[str, str] = field(default_factory=dict)
    report: DedupReport = field(default_factory=DedupReport)

    def apply(self, lecture: Lecture, read: ReadLecture) -> Lecture | None:
        """``lecture`` as the release holds it (its hash computed again), None when it was merged into
        another id; ``read`` reads a merged id's staged record back (a kept record unites their URLs and
        their tracks with its own)."""
        if lecture.lecture_id in self.dropped:
            return None
        merged = self.alternates.get(lecture.lecture_id)
        if merged is not None:
            lecture.alternate_ids = merged[0]
            others = [read(other) for other in merged[1]]
            united = set(lecture.source_urls)
            for other in others:
                united.update(other.source_urls)
            lecture.source_urls = sorted(united)
            lecture.subtitles = united_subtitles(lecture.subtitles, (other.subtitles for other in others))
        lecture.alternate_ids = list(lecture.alternate_ids or [])
        lecture.near_duplicate_cluster = self.clusters.get(lecture.lecture_id)
        lecture.content_sha256 = schema.content_sha256(lecture.values())
        return lecture


def read_signatures(
    ids: Sequence[str], read: ReadLecture, cached: Mapping[str, near.Signature], stats: near.SearchStats
) -> tuple[np.ndarray, Talks]:
    """The signatures of the lectures ``ids`` (in lecture order), each read once with ``read``, as the rows
    of one matrix: the cached one of its text (by text key) or one computed; and what the same-talk
    decision needs."""
    matrix = np.empty((len(ids), near.NUM_PERM), dtype=np.uint32)
    talks: Talks = {}
    for row, lecture_id in enumerate(ids):
        lecture = read(lecture_id)
        talks[lecture_id] = (talk_key(lecture.title, lecture.abstract), tuple(lecture.alternate_ids))
        words = near.talk_words(lecture.title, lecture.abstract)
        values = cached.get(near.key_of_words(words))
        if values is None:
            values = near.signature_of_shingles(near.shingles_of_words(words))
            stats.signatures_computed += 1
        else:
            stats.signatures_cached += 1
        matrix[row] = values
    return matrix, talks


def _same_talks(talks: Talks, published: Container[str], plan: DedupPlan) -> None:
    """Each talk once: the id an earlier release published (else the lowest) kept, the others dropped."""
    groups: dict[str, list[str]] = {}
    for lecture_id, (talk, _) in talks.items():
        if talk is not None:
            groups.setdefault(talk, []).append(lecture_id)
    dropped: set[str] = set()
    for members in groups.values():
        if len(members) < 2:
            continue
        keep = min(members, key=lambda i: (i not in published, lecture_order(i)))
        merged = tuple(sorted((i for i in members if i != keep), key=lecture_order))
        alternates = {*talks[keep][1], *merged, *(a for i in merged for a in talks[i][1])}
        alternates.discard(keep)
        plan.alternates[keep] = (sorted(alternates, key=lecture_order), merged)
        dropped.update(merged)
        merge = Merge(keep, merged)
        plan.report.merges.append(merge)
        logger.info("lectures %s are lecture %s (%s): merged", ", ".join(merge.merged), merge.kept, SAME_TALK)
    plan.report.merges.sort(key=lambda m: lecture_order(m.kept))
    plan.dropped = frozenset(dropped)


def _band_mates(matrix: np.ndarray, threshold: float) -> dict[int, set[int]]:
    """Per row, the rows sharing an LSH band with it (datasketch's banding for ``threshold``), from a
    sort of each band's values: no index of MinHash objects. A bucket larger than the candidate cap
    gives each member only its lowest ``MAX_CANDIDATES + 1`` rows, which is all the capped query keeps."""
    bands, rows = near.lsh_bands(threshold)
    values = np.ascontiguousarray(matrix[:, : bands * rows], dtype="<u4")
    mates: dict[int, set[int]] = {}
    for band in range(bands):
        keys = np.ascontiguousarray(values[:, band * rows : (band + 1) * rows]).view(
            np.dtype((np.void, 4 * rows))
        )[:, 0]
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        breaks = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
        for bucket in np.split(order, breaks):
            if len(bucket) < 2:
                continue
            members = sorted(int(i) for i in bucket)
            lowest = members[: near.MAX_CANDIDATES + 1]
            for member in members:
                mates.setdefault(member, set()).update(m for m in lowest if m != member)
    return mates


def near_pairs(
    ids: Sequence[str],
    matrix: np.ndarray,
    read: ReadLecture,
    stats: near.SearchStats,
    threshold: float = near.MATCH_THRESHOLD,
) -> list[near.NearPair]:
    """The pairs among the lectures ``ids`` (their signatures the rows of ``matrix``) whose shingle sets
    have a Jaccard similarity of at least ``threshold``, sorted by their ids: candidates from shared bands
    (the first ``MAX_CANDIDATES`` of each row's, in lecture order; the bands those for ``LSH_THRESHOLD``,
    or for ``threshold`` when it is lower), each checked by the exact similarity. No step compares every
    row with every other."""
    mates = _band_mates(matrix, min(near.LSH_THRESHOLD, threshold))
    grams: dict[int, set[str]] = {}

    def grams_of(row: int) -> set[str]:
        if row not in grams:
            lecture = read(ids[row])
            grams[row] = near.shingles(lecture.title, lecture.abstract)
        return grams[row]

    pairs = []
    for row in sorted(mates):
        candidates = sorted(mates[row])
        if len(candidates) > near.MAX_CANDIDATES:
            stats.capped_queries += 1
            candidates = candidates[: near.MAX_CANDIDATES]
        for mate in (m for m in candidates if m > row):
            stats.candidate_pairs += 1
            similarity = near.jaccard(grams_of(row), grams_of(mate))
            if similarity >= threshold:
                pairs.append(near.NearPair(ids[row], ids[mate], round(similarity, 4)))
    return sorted(pairs, key=lambda p: (lecture_order(p.first), lecture_order(p.second)))


def _report_clusters(pairs: Sequence[near.NearPair], plan: DedupPlan) -> None:
    by_cluster: dict[str, list[str]] = {}
    for member, cluster_id in plan.clusters.items():
        by_cluster.setdefault(cluster_id, []).append(member)
    for cluster_id in sorted(by_cluster, key=lecture_order):
        members = tuple(sorted(by_cluster[cluster_id], key=lecture_order))
        inside = tuple(p for p in pairs if plan.clusters.get(p.first) == cluster_id)
        plan.report.clusters.append(Cluster(cluster_id, members, inside))
        logger.info(
            "lectures %s are near-duplicates (Jaccard %s): cluster %s",
            ", ".join(members),
            ", ".join(f"{p.similarity:.2f}" for p in inside),
            cluster_id,
        )


def plan_dedup(
    ids: Sequence[str],
    read: ReadLecture,
    *,
    signatures: Mapping[str, near.Signature],
    published: Container[str] = (),
) -> DedupPlan:
    """The duplicate decisions over the lectures ``ids`` (in lecture order), each read once with
    ``read``; ``signatures`` are the ones the crawl cached (by text key), ``published`` the ids an
    earlier release published (they win when one record of a talk must be kept)."""
    plan = DedupPlan()
    plan.report.records_in = len(ids)
    matrix, talks = read_signatures(ids, read, signatures, plan.report.search)
    _same_talks(talks, published, plan)
    keep = [row for row, lecture_id in enumerate(ids) if lecture_id not in plan.dropped]
    kept = [ids[row] for row in keep]
    pairs = near_pairs(kept, matrix[np.asarray(keep, dtype=np.int64)], read, plan.report.search)
    plan.clusters = near.clusters(pairs)
    _report_clusters(pairs, plan)
    plan.report.records_out = len(keep)
    return plan


class StagedEvents:
    """The staged crawl's lectures with the duplicate decisions applied, one event at a time (see
    :class:`crawler.publish.events.EventRows`), read back from the stage when they are asked for."""

    def __init__(self, index: StageIndex, plan: DedupPlan) -> None:
        self.index = index
        self.plan = plan

    def event_of(self) -> dict[str, str]:
        return {i: e.event_id for i, e in self.index.entries.items() if i not in self.plan.dropped}

    def event_ids(self) -> list[str]:
        return sorted(set(self.event_of().values()), key=lecture_order)

    def lectures_of(self, event_id: str) -> list[Lecture]:
        out = []
        for lecture in self.index.lectures_of(event_id):
            kept = self.plan.apply(lecture, self.index.lecture)
            if kept is not None:
                out.append(kept)
        return out


class SpilledEvents:
    """Lectures kept on disk, one JSON-lines file per event, until they are written: what the next
    release holds between building it and publishing it. Only each lecture's id, event, hash and
    withdrawal stay in memory; the folder is removed with the object."""

    def __init__(self, prefix: str = "eventcrawl-events-") -> None:
        self.directory = Path(tempfile.mkdtemp(prefix=prefix))
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.directory, ignore_errors=True)
        self._files: dict[str, Path] = {}
        self.states: dict[str, tuple[str, bool, str]] = {}
        self._event_of: dict[str, str] = {}

    def add(self, event_id: str, lectures: Iterable[Lecture]) -> None:
        """Append lectures to an event (an event may be added in several parts)."""
        path = self._files.setdefault(event_id, self.directory / f"{len(self._files)}.jsonl")
        with path.open("a", encoding="utf-8") as fh:
            for lecture in lectures:
                fh.write(json.dumps(lecture.to_json(), ensure_ascii=False) + "\n")
                volatile = volatile_digest({name: getattr(lecture, name) for name in VOLATILE_FIELDS})
                self.states[lecture.lecture_id] = (lecture.content_sha256, lecture.withdrawn, volatile)
                self._event_of[lecture.lecture_id] = event_id

    def event_ids(self) -> list[str]:
        return sorted(self._files, key=lecture_order)

    def event_of(self) -> dict[str, str]:
        return dict(self._event_of)

    def lectures_of(self, event_id: str) -> list[Lecture]:
        path = self._files.get(event_id)
        if path is None:
            return []
        with path.open(encoding="utf-8") as fh:
            return [Lecture.from_json(json.loads(line)) for line in fh]

    def __iter__(self) -> Iterator[Lecture]:
        """Every lecture, one event in memory at a time."""
        for event_id in self.event_ids():
            yield from self.lectures_of(event_id)

    def close(self) -> None:
        self._finalizer()
