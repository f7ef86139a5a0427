from __future__ import annotations

import copy
from typing import Any

from crawler.dedup import near
from crawler.dedup.records import DedupReport, Merge, talk_key
from crawler.schema import Lecture, content_sha256
from tests.support.dedup import merge_duplicates
from tests.test_stage import record

ABSTRACT = (
    "We present a simple method for aligning large language models with human preferences using a small"
    " set of annotated comparisons and show that it improves helpfulness on three benchmarks."
)
OTHER = "Speech translation systems struggle with long audio; we segment recordings and translate them."


def talk(lecture_id: str, title: str = "Alignment", abstract: str = ABSTRACT, **extra: Any) -> Lecture:
    return Lecture.from_json(record(lecture_id, title=title, abstract=abstract, **extra))


def test_the_same_talk_under_two_ids_becomes_one_record() -> None:
    records = [
        talk("130500", session_id="7001"),
        talk("20", title="Speech", abstract=OTHER),
        talk("130100", title=" alignment ", abstract=ABSTRACT.upper(), session_id="7002"),
    ]
    out, report = merge_duplicates(records)
    assert [r.lecture_id for r in out] == ["20", "130100"]
    kept = out[1]
    assert kept.alternate_ids == ["130500"]
    assert kept.source_urls == ["http://x/lecture/130100-t", "http://x/lecture/130500-t"]
    assert kept.session_id == "7002"
    assert kept.content_sha256 == content_sha256(kept.values()) != records[2].content_sha256
    assert out[0].alternate_ids == [] and out[0].content_sha256 == records[1].content_sha256
    assert report.merges == [Merge("130100", ("130500",))]
    assert report.summary() == {
        "records_in": 3,
        "records_out": 2,
        "same_talk_ids_merged": 1,
        "near_duplicate_clusters": 0,
        "near_duplicate_records": 0,
    }


def test_an_id_published_before_is_kept() -> None:
    records = [talk("5"), talk("9", alternate_ids=["3"]), talk("7")]
    out, report = merge_duplicates(records, published={"9"})
    assert [(r.lecture_id, r.alternate_ids) for r in out] == [("9", ["3", "5", "7"])]
    assert report.merges == [Merge("9", ("5", "7"))]


def track(lecture_id: str, locale: str, url: bool = True) -> dict[str, Any]:
    return {
        "locale": locale,
        "name": locale.upper(),
        "auto_generated": False,
        "url": f"http://x/subtitles/{lecture_id}/{locale}.vtt" if url else None,
    }


def test_the_kept_record_lists_the_merged_records_tracks_each_file_once() -> None:
    records = [
        talk(
            "130500",
            subtitles=[track("130100", "en"), track("130500", "de"), track("130500", "it", url=False)],
        ),
        talk("130100", subtitles=[track("130100", "en")]),
        talk("130700", subtitles=None),
        talk("130900", subtitles=[track("130900", "fr"), track("130500", "de")]),
    ]
    out, _ = merge_duplicates(records)
    # Its own tracks, then each merged record's (in id order) whose file it does not list yet.
    assert [(r.lecture_id, r.subtitles) for r in out] == [
        ("130100", [track("130100", "en"), track("130500", "de"), track("130900", "fr")])
    ]
    # Tracks not fetched for any record of the talk stay not fetched.
    out, _ = merge_duplicates([talk("1", subtitles=None), talk("2", subtitles=None)])
    assert [r.subtitles for r in out] == [None]
    out, _ = merge_duplicates([talk("1", subtitles=None), talk("2", subtitles=[track("2", "en")])])
    assert [r.subtitles for r in out] == [[track("2", "en")]]


def test_short_abstracts_never_make_a_talk() -> None:
    records = [talk("1", title="Keynote", abstract="TBA"), talk("2", title="Keynote", abstract="TBA")]
    out, report = merge_duplicates(records)
    assert [r.lecture_id for r in out] == ["1", "2"]
    assert report.merges == [] and talk_key(records[0].title, records[0].abstract) is None
    # The near-duplicate search still sees them: same title and abstract, one cluster.
    assert [r.near_duplicate_cluster for r in out] == ["1", "1"]


def test_near_duplicates_share_a_cluster() -> None:
    revised = ABSTRACT.replace("simple", "robust")
    records = [talk("30"), talk("12", abstract=revised), talk("7", title="Speech", abstract=OTHER)]
    out, report = merge_duplicates(records)
    assert [(r.lecture_id, r.near_duplicate_cluster) for r in out] == [
        ("30", "12"),
        ("12", "12"),
        ("7", None),
    ]
    assert [(c.cluster_id, c.members) for c in report.clusters] == [("12", ("12", "30"))]
    assert report.clusters[0].pairs[0].similarity == 0.8065
    # The cluster is not content: the hash is the one without it.
    assert out[0].content_sha256 == records[0].content_sha256


def test_signatures_come_from_the_state_directory(tmp_path: Any) -> None:
    cache = near.SignatureCache(tmp_path)
    cache.add(near.text_key("Alignment", ABSTRACT), near.signature("Alignment", ABSTRACT))
    cache.close()
    _, report = merge_duplicates(
        [talk("1"), talk("2", title="Speech", abstract=OTHER)], signatures=near.load_signatures(tmp_path)
    )
    assert (report.search.signatures_cached, report.search.signatures_computed) == (1, 1)


def test_records_are_not_changed_in_place_and_order_is_kept() -> None:
    records = [talk("3"), talk("1", title="Speech", abstract=OTHER), talk("2")]
    before = copy.deepcopy(records)
    out, _ = merge_duplicates(records)
    assert records == before
    assert [r.lecture_id for r in out] == ["1", "2"]
    assert merge_duplicates([]) == ([], DedupReport())
