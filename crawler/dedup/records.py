"""One record per talk, over the whole staged crawl: what publishing decides before writing
(:func:`crawler.publish.summaries.plan_dedup`), and how it reports it.

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

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from crawler.dedup import near
from crawler.schema import Subtitle
from crawler.text.normalize import normalize_line

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
