"""Publishing's duplicate decisions (:mod:`crawler.publish.summaries`) over records held in memory."""

from __future__ import annotations

import dataclasses
from collections.abc import Container, Mapping, Sequence

from crawler.dedup import near
from crawler.dedup.records import DedupReport
from crawler.publish.summaries import near_pairs, plan_dedup, read_signatures
from crawler.schema import Lecture, lecture_order


def merge_duplicates(
    records: Sequence[Lecture],
    *,
    signatures: Mapping[str, near.Signature] | None = None,
    published: Container[str] = (),
) -> tuple[list[Lecture], DedupReport]:
    """The records as a release holds them (each talk once, near-duplicates marked), in the input's
    order; the records given are copied, never changed."""
    by_id = {r.lecture_id: r for r in records}

    def read(lecture_id: str) -> Lecture:
        return dataclasses.replace(by_id[lecture_id])

    ids = sorted(by_id, key=lecture_order)
    plan = plan_dedup(ids, read, signatures=signatures or {}, published=published)
    out = [plan.apply(dataclasses.replace(r), read) for r in records]
    return [r for r in out if r is not None], plan.report


def near_duplicate_pairs(
    talks: Sequence[near.Talk],
    signatures: Mapping[str, near.Signature] | None = None,
    *,
    threshold: float = near.MATCH_THRESHOLD,
    stats: near.SearchStats | None = None,
) -> list[near.NearPair]:
    """Publishing's near-duplicate search over ``talks`` (no talk merged into another)."""
    by_id = {
        t.lecture_id: Lecture(lecture_id=t.lecture_id, title=t.title, abstract=t.abstract) for t in talks
    }
    ids = sorted(by_id, key=lecture_order)
    stats = stats if stats is not None else near.SearchStats()
    matrix, _ = read_signatures(ids, by_id.__getitem__, signatures or {}, stats)
    return near_pairs(ids, matrix, by_id.__getitem__, stats, threshold)
