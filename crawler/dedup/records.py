"""One record per talk, over the whole staged crawl: what publishing does before writing.

Two decisions, each explained in the :class:`DedupReport` and logged:

- the same talk under two ids (the same paper in two sessions or events: equal title and abstract
  once normalized and case-folded, the abstract not empty) becomes one record. The record kept is
  one that an earlier release already published, else the lowest id; it lists the others in
  ``alternate_ids`` and unites their ``source_urls`` and their subtitle tracks
  (:func:`united_subtitles`: the ``transcripts`` rows follow a record's track list, so the merged
  records' tracks travel with it). Its other fields stay its own.
- near-duplicates (an abstract revised by a few words, a typo fixed) stay separate records and
  share ``near_duplicate_cluster``, the lowest id of their cluster (see :mod:`crawler.dedup.near`).

Both are about linear in the number of records: exact duplicates by a hash map, near-duplicates by
LSH over signatures the crawl computed item by item.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crawler.dedup import near
from crawler.schema import Lecture, Subtitle, content_sha256, lecture_order
from crawler.text.normalize import normalize_line

logger = logging.getLogger(__name__)

# Abstracts shorter than this say too little to call two talks the same (a "TBA", a lone title).
MIN_ABSTRACT_CHARS = 50
SAME_TALK = "same title and abstract"


def talk_key(title: str | None, abstract: str | None) -> str | None:
    """The key two records of one talk share; None when the abstract is too short to tell."""
    title = normalize_line(str(title or "")).casefold()
    abstract = normalize_line(str(abstract or "")).casefold()
    if len(abstract) < MIN_ABSTRACT_CHARS:
        return None
    return hashlib.sha256(f"{title}\x1f{abstract}".encode()).hexdigest()


def united_subtitles(
    own: Sequence[Subtitle] | None, merged: Iterable[Sequence[Subtitle] | None]
) -> list[Subtitle] | None:
    """The track list of a kept record: its own tracks, then each merged record's tracks (in the order
    given) whose subtitle URL it does not list yet; a merged track without a URL is left out (it is no
    ``transcripts`` row). None only when no record's tracks were fetched."""
    lists = [own, *merged]
    if all(tracks is None for tracks in lists):
        return None
    united = list(own or [])
    listed = {url for track in united if (url := track.get("url"))}
    for tracks in lists[1:]:
        for track in tracks or []:
            url = track.get("url")
            if url and url not in listed:
                listed.add(url)
                united.append(track)
    return united


@dataclass(frozen=True)
class Merge:
    kept: str
    merged: tuple[str, ...]


@dataclass(frozen=True)
class Cluster:
    cluster_id: str
    members: tuple[str, ...]
    pairs: tuple[near.NearPair, ...]


@dataclass
class DedupReport:
    records_in: int = 0
    records_out: int = 0
    merges: list[Merge] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    search: near.SearchStats = field(default_factory=near.SearchStats)

    def summary(self) -> dict[str, int]:
        """The counts for a dataset's provenance (short: the card shows it on one line)."""
        return {
            "records_in": self.records_in,
            "records_out": self.records_out,
            "same_talk_ids_merged": sum(len(m.merged) for m in self.merges),
            "near_duplicate_clusters": len(self.clusters),
            "near_duplicate_records": sum(len(c.members) for c in self.clusters),
        }


def merge_duplicates(
    records: Sequence[Lecture],
    *,
    state_dir: Path | None = None,
    signatures: Mapping[str, near.Signature] | None = None,
    published: Container[str] = (),
    threshold: float = near.MATCH_THRESHOLD,
) -> tuple[list[Lecture], DedupReport]:
    """The records with each talk once and near-duplicates marked, in the input's order.

    ``signatures`` (or the ones cached under ``state_dir`` by the crawl) spare computing MinHash
    signatures again; ``published`` holds ids an earlier release published, which win when one
    record of a talk must be kept. Records are copied, never changed in place; a record's
    ``content_sha256`` is computed again when its ``alternate_ids`` change.
    """
    report = DedupReport(records_in=len(records))
    if signatures is None and state_dir is not None:
        signatures = near.load_signatures(state_dir)
    out = _merge_same_talks(records, published, report)
    talks = [near.Talk(str(r.lecture_id), r.title, r.abstract) for r in out]
    pairs = near.near_duplicate_pairs(talks, signatures, threshold=threshold, stats=report.search)
    membership = near.clusters(pairs)
    _report_clusters(pairs, membership, report)
    for record in out:
        record.alternate_ids = list(record.alternate_ids or [])
        record.near_duplicate_cluster = membership.get(str(record.lecture_id))
        record.content_sha256 = content_sha256(record.values())
    report.records_out = len(out)
    return out, report


def _talks(records: Sequence[Lecture]) -> list[list[int]]:
    """The positions of the records of each talk that more than one record holds."""
    groups: dict[str, list[int]] = {}
    for position, record in enumerate(records):
        key = talk_key(record.title, record.abstract)
        if key is not None:
            groups.setdefault(key, []).append(position)
    return [positions for positions in groups.values() if len(positions) > 1]


def _merge_same_talks(
    records: Sequence[Lecture], published: Container[str], report: DedupReport
) -> list[Lecture]:
    """Copies of the records with each talk once: the one an earlier release published (else the lowest
    id) kept, with the others' ids as its ``alternate_ids``, their URLs among its ``source_urls`` and
    their tracks among its ``subtitles``."""
    dropped: set[int] = set()
    replaced: dict[int, Lecture] = {}
    for positions in _talks(records):
        ids = {p: str(records[p].lecture_id) for p in positions}
        keep = min(positions, key=lambda p: (ids[p] not in published, lecture_order(ids[p])))
        others = sorted((p for p in positions if p != keep), key=lambda p: lecture_order(ids[p]))
        kept = dataclasses.replace(records[keep])
        alternates = set(kept.alternate_ids or [])
        urls = set(kept.source_urls or [])
        for p in others:
            alternates.add(ids[p])
            alternates.update(records[p].alternate_ids or [])
            urls.update(records[p].source_urls or [])
        alternates.discard(ids[keep])
        kept.alternate_ids = sorted(alternates, key=lecture_order)
        kept.source_urls = sorted(urls)
        kept.subtitles = united_subtitles(kept.subtitles, (records[p].subtitles for p in others))
        replaced[keep] = kept
        dropped.update(others)
        merge = Merge(ids[keep], tuple(ids[p] for p in others))
        report.merges.append(merge)
        logger.info("lectures %s are lecture %s (%s): merged", ", ".join(merge.merged), merge.kept, SAME_TALK)
    report.merges.sort(key=lambda m: lecture_order(m.kept))
    return [replaced.get(p, dataclasses.replace(r)) for p, r in enumerate(records) if p not in dropped]


def _report_clusters(
    pairs: Sequence[near.NearPair], membership: Mapping[str, str], report: DedupReport
) -> None:
    """The near-duplicate clusters, lowest id first, each with the pairs inside it, into ``report``."""
    by_cluster: dict[str, list[str]] = {}
    for member, cluster_id in membership.items():
        by_cluster.setdefault(cluster_id, []).append(member)
    for cluster_id in sorted(by_cluster, key=lecture_order):
        members = tuple(sorted(by_cluster[cluster_id], key=lecture_order))
        inside = tuple(p for p in pairs if membership.get(p.first) == cluster_id)
        report.clusters.append(Cluster(cluster_id, members, inside))
        logger.info(
            "lectures %s are near-duplicates (Jaccard %s): cluster %s",
            ", ".join(members),
            ", ".join(f"{p.similarity:.2f}" for p in inside),
            cluster_id,
        )
