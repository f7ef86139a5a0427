from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from crawler.replica.attributes import SERVED_ATTRIBUTES
from crawler.replica.gold import content_hash
from crawler.replica.layout import (
    EVENTS,
    EXTRA_TRUTH_FIELDS,
    KEYWORD_VOCABULARY,
    MAX_LECTURES,
    SESSION_KIND_ORAL,
    SESSION_KIND_POSTER,
    ReplicaSite,
    build_site,
    copy_slug,
    copy_title,
    ground_truth,
    lecture_id_range,
    lecture_text,
    load_records,
    normalize_block,
    page_links,
    slugify,
    synthesize_records,
    write_ground_truth,
)
from crawler.schema import FIELD_NAMES, FIELDS, content_sha256
from crawler.schema.check import validate_record

BASE = "http://replica.test"


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return load_records()


@pytest.fixture(scope="module")
def full_site(records: list[dict[str, Any]]) -> ReplicaSite:
    return build_site(records)


def published_part(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in EXTRA_TRUTH_FIELDS}


# The fields a truth record takes from the attributes the replica registers (crawler.replica.attributes):
# the listing attributes added to the schema since the layout was written.
REGISTERED_FIELDS = frozenset(f.name for f in FIELDS if set(f.attribute) & set(SERVED_ATTRIBUTES))


def layout_part(record: dict[str, Any]) -> dict[str, Any]:
    """The record as the layout alone gives it: without the registered attributes, and hashed as a
    record without them is (they are hashed only when set, so the hash is the one before they were)."""
    kept = {k: v for k, v in record.items() if k not in REGISTERED_FIELDS}
    return {**kept, "content_sha256": content_hash(kept)}


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def test_load_records_reads_the_bundled_data(records: list[dict[str, Any]]) -> None:
    assert len(records) == 740
    assert records[0]["id"] == "2025.emnlp-main.1"
    assert records[0]["title"] == "Towards Automated Error Discovery: A Study in Conversational AI"
    assert Counter(r["track"] for r in records) == {
        "main": 496,
        "findings": 132,
        "demo": 78,
        "industry": 27,
        "tutorial": 7,
    }


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        (
            "A Systematic Analysis of Base Model Choice for Reward Modeling",
            "a-systematic-analysis-of-base-model-choice-for-reward-modeling",
        ),
        ("Café: naïve résumé!!", "cafe-naive-resume"),
        ("Biased Tales: Children’s Stories", "biased-tales-childrens-stories"),
        ("  --Router-Tuning:  A Simple   Approach-- ", "router-tuning-a-simple-approach"),
        (
            "SEA: Token-Level Visual–Textual Integration in MLLMs",
            "sea-token-level-visualtextual-integration-in-mllms",
        ),
        ("中文标题", "lecture"),
        ("word " * 30, "-".join(["word"] * 16)),
    ],
)
def test_slugify(title: str, slug: str) -> None:
    assert slugify(title) == slug
    assert len(slug) <= 80
    assert not slug.endswith("-")


def test_same_seed_same_site_and_other_seed_other_site(records: list[dict[str, Any]]) -> None:
    first = build_site(records, seed=3, lectures=120)
    second = build_site(records, seed=3, lectures=120)
    assert first == second
    assert ground_truth(first, BASE) == ground_truth(second, BASE)
    assert ground_truth(build_site(records, seed=4, lectures=120), BASE) != ground_truth(first, BASE)


def test_layout_is_the_same_in_every_process(records: list[dict[str, Any]]) -> None:
    # A pinned digest: no hash() or global random may leak into the layout.
    # The attributes registered since (each a function of the lecture its own test checks) are left out.
    truth = [layout_part(r) for r in ground_truth(build_site(records, seed=0, lectures=40), BASE)]
    assert len(truth) == 39
    published = [published_part(r) for r in truth]
    # Authors, media and subtitles come from streams of their own; the published part changed only in
    # its content hash, which covers authors and media links since the schema has them.
    assert _digest(published) == "c36aebce796010a693835f2e5a11cf5fe001df85d02a262d81a6d312e82a5487"
    # The whole truth: the same as before the schema had the Anthology's links, with them null.
    unlinked = [{k: v for k, v in r.items() if not k.startswith("anthology_")} for r in truth]
    assert _digest(unlinked) == "70c507e50744d4988a1d91f92514dc2026f878f16292491950c1836c3da41cd8"
    assert all(r["anthology_id"] is r["anthology_url"] is r["anthology_match"] is None for r in truth)
    first = truth[0]
    assert first["lecture_id"] == "129807"
    assert first["title"] == "Generative Annotation for ASR Named Entity Correction"
    assert first["url"] == f"{BASE}/lecture/129807-generative-annotation-for-asr-named-entity-correction"
    assert first["session_id"] == "7002"
    assert first["held_at"] == "2025-11-06T04:00:00Z"
    assert first["doi"] == "10.48448/hiub-libv"
    assert first["keywords"] == ["speech"]


@pytest.mark.parametrize(
    ("lectures", "main", "side", "main_sessions"),
    [(0, 0, 0, 0), (1, 1, 0, 1), (9, 9, 0, 2), (10, 9, 1, 2), (100, 98, 2, 4), (None, 726, 14, 29)],
)
def test_event_sizes(
    records: list[dict[str, Any]], lectures: int | None, main: int, side: int, main_sessions: int
) -> None:
    site = build_site(records, lectures=lectures)
    assert len(site.event_lectures("502")) == main
    assert len(site.event_lectures("469")) == side
    assert len([s for s in site.sessions.values() if s.event_id == "502"]) == main_sessions
    assert len(site.lectures) == main + side


def test_lecture_ids(full_site: ReplicaSite) -> None:
    ids = list(full_site.lectures)
    assert len(set(ids)) == 740
    for lec in full_site.lectures.values():
        assert lec.id == str(int(lec.id)), f"{lec=}"
        low, high = EVENTS[lec.event_id].lecture_id_range
        assert low <= int(lec.id) <= high, f"{lec=}"
    main_ids = sorted(int(lec.id) for lec in full_site.event_lectures("502"))
    # Spread over the range, not packed at one end.
    assert main_ids[0] < 129900 and main_ids[-1] > 132300


def test_sessions_alternate_oral_and_poster(full_site: ReplicaSite) -> None:
    main = [s for s in full_site.sessions.values() if s.event_id == "502"]
    assert [s.id for s in main] == [str(7001 + i) for i in range(29)]
    for i, session in enumerate(main):
        if i % 2 == 0:
            assert session.kind == SESSION_KIND_ORAL, f"{i=}, {session=}"
            assert re.fullmatch(rf"Oral Session {i // 2 + 1}: [A-Z][a-z]+", session.name), f"{i=}, {session=}"
        else:
            assert session.kind == SESSION_KIND_POSTER, f"{i=}, {session=}"
            assert session.name == f"Poster Session {i // 2 + 1}", f"{i=}, {session=}"
    side = [s for s in full_site.sessions.values() if s.event_id == "469"]
    assert [(s.id, s.kind) for s in side] == [("6001", SESSION_KIND_ORAL), ("6002", SESSION_KIND_POSTER)]
    sizes = Counter(lec.session_id for lec in full_site.event_lectures("502"))
    assert min(sizes.values()) == 25 and max(sizes.values()) == 26


def test_presentation_types(full_site: ReplicaSite, records: list[dict[str, Any]]) -> None:
    names = Counter(full_site.tags[lec.tag_id].name for lec in full_site.lectures.values())
    assert names["tutorial"] == 7
    assert names["demo"] == 78
    assert names == {"technical paper": 342, "poster": 313, "demo": 78, "tutorial": 7}
    for lec in full_site.lectures.values():
        kind = full_site.sessions[lec.session_id].kind
        assert lec.poster_lecture == (kind == SESSION_KIND_POSTER), f"{lec=}"
        tag = full_site.tags[lec.tag_id].name
        if lec.track in ("tutorial", "demo"):
            assert tag == lec.track, f"{lec=}"
        else:
            assert tag == ("poster" if kind == SESSION_KIND_POSTER else "technical paper"), f"{lec=}"
    assert {t.id: t.name for t in full_site.tags.values()} == {
        "7": "technical paper",
        "12": "poster",
        "15": "demo",
        "21": "tutorial",
    }


def test_keywords_come_from_the_lecture_and_the_vocabulary(full_site: ReplicaSite) -> None:
    counts = Counter(len(lec.keywords) for lec in full_site.lectures.values())
    assert counts == {0: 191, 1: 219, 2: 177, 3: 96, 4: 57}
    for lec in full_site.lectures.values():
        positions = [KEYWORD_VOCABULARY.index(k) for k in lec.keywords]
        assert positions == sorted(set(positions)), f"{lec=}"
        for keyword in lec.keywords:
            assert keyword in f"{lec.title} {lec.abstract}".lower(), f"{lec=}, {keyword=}"


def test_times(full_site: ReplicaSite) -> None:
    for lec in full_site.lectures.values():
        event = EVENTS[lec.event_id]
        start = datetime.combine(event.start_date, datetime.min.time(), tzinfo=UTC)
        end = datetime.combine(event.end_date, datetime.max.time(), tzinfo=UTC)
        assert start <= lec.held_at <= end, f"{lec=}"
        assert lec.held_at.tzinfo is UTC, f"{lec=}"
        assert timedelta(days=14) <= start - lec.published_at <= timedelta(days=43), f"{lec=}"
        assert lec.published_at.microsecond == 0, f"{lec=}"
    by_session: dict[str, list[datetime]] = {}
    for lec in full_site.event_lectures("502"):
        by_session.setdefault(lec.session_id, []).append(lec.held_at)
    for session_id, times in by_session.items():
        assert times[0] == full_site.sessions[session_id].starts_at, f"{session_id=}, {times=}"
        assert all(b - a == timedelta(minutes=15) for a, b in itertools.pairwise(times)), (
            f"{session_id=}, {times=}"
        )


def test_package_and_dois(full_site: ReplicaSite) -> None:
    lectures = list(full_site.lectures.values())
    assert sum(lec.package == "free" for lec in lectures) == 559
    assert {lec.package for lec in lectures} == {"free", "premium"}
    dois = [lec.underline_doi for lec in lectures if lec.underline_doi is not None]
    assert len(dois) == 740 - 63
    videos = [lec.video_doi for lec in lectures if lec.video_doi is not None]
    assert len(videos) == 740 - 383
    assert len(set(dois + videos)) == len(dois) + len(videos)
    for doi in dois + videos:
        assert re.fullmatch(r"10\.48448/[a-z0-9]{4}-[a-z0-9]{4}", doi), f"{doi=}"
    for lec in lectures:
        assert lec.playlist is None or lec.playlist.startswith("https://assets.underline.io/lecture/"), (
            f"{lec=}"
        )


def test_related_next_and_similar(full_site: ReplicaSite) -> None:
    main = full_site.event_lectures("502")
    side_ids = {lec.id for lec in full_site.event_lectures("469")}
    with_side = 0
    poster_links = tabbed = 0
    for pos, lec in enumerate(main):
        assert len(lec.related) == 10, f"{pos=}, {lec=}"
        ids = [link.lecture_id for link in lec.related]
        assert lec.id not in ids, f"{pos=}, {lec=}"
        foreign = [i for i in ids if i in side_ids]
        assert len(foreign) <= 1, f"{pos=}, {lec=}"
        with_side += bool(foreign)
        assert all(full_site.lectures[i].event_id == "502" for i in ids if i not in side_ids), (
            f"{pos=}, {lec=}"
        )
        for link in lec.related:
            target = full_site.lectures[link.lecture_id]
            session = full_site.sessions[target.session_id]
            stem = f"{target.id}-{target.slug}"
            if session.kind == SESSION_KIND_POSTER:
                poster_links += 1
                tabbed += link.href.endswith("?tab=abstract")
                assert link.href.removesuffix("?tab=abstract") == (
                    f"/events/{target.event_id}/posters/{session.id}/poster/{stem}"
                ), f"{pos=}, {lec=}, {link=}"
            else:
                assert link.href == f"/events/{target.event_id}/sessions/{session.id}/lecture/{stem}", (
                    f"{pos=}, {lec=}, {link=}"
                )
        following = main[(pos + 1) % len(main)]
        assert lec.next.lecture_id == following.id, f"{pos=}, {lec=}"
        assert lec.next.href == f"/lecture/{following.id}-{following.slug}", f"{pos=}, {lec=}"
        assert lec.similar is not None, f"{pos=}, {lec=}"
        assert lec.similar.lecture_id != lec.id, f"{pos=}, {lec=}"
        assert full_site.lectures[lec.similar.lecture_id].event_id == "502", f"{pos=}, {lec=}"
        assert lec.similar.href == f"/lecture/{lec.similar.lecture_id}", f"{pos=}, {lec=}"
    assert with_side == 109
    assert (poster_links, tabbed) == (3536, 1171)
    for lec in full_site.event_lectures("469"):
        assert len(lec.related) == 10, f"{lec=}"
        assert {full_site.lectures[link.lecture_id].event_id for link in lec.related} == {"469"}, f"{lec=}"


def test_small_events_have_fewer_related(records: list[dict[str, Any]]) -> None:
    site = build_site(records, lectures=10)
    side = site.event_lectures("469")
    assert len(side) == 1
    assert side[0].related == ()
    assert side[0].similar is None
    assert side[0].next.lecture_id == side[0].id
    for lec in site.event_lectures("502"):
        assert len(lec.related) == 8, f"{lec=}"


def test_normalize_block() -> None:
    assert normalize_block("  Fish &amp; Chips<br>\n  and\tmore<BR/> ") == "Fish & Chips and more"
    assert normalize_block("Cafe\u0301") == "Café"
    assert normalize_block("a<br />b") == "ab"
    assert normalize_block(" \n ") == ""


def test_ground_truth_records(full_site: ReplicaSite) -> None:
    truth = ground_truth(full_site, BASE + "/")
    assert len(truth) == 726
    assert [r["lecture_id"] for r in truth] == sorted((r["lecture_id"] for r in truth), key=int)
    published = [n for n in FIELD_NAMES if n != "fetched_at" and n not in EXTRA_TRUTH_FIELDS]
    expected_fields = published + list(EXTRA_TRUTH_FIELDS)
    by_id = {r["lecture_id"]: r for r in truth}
    for record in truth:
        assert list(record) == expected_fields, f"{record=}"
        assert validate_record({**published_part(record), "fetched_at": "2025-12-01T00:00:00Z"}) == [], (
            f"{record=}"
        )
        assert record["content_sha256"] == content_sha256(record), f"{record=}"
        assert record["extraction"] == "next_data", f"{record=}"
        assert record["event_id"] == "502" and record["event_name"] == "EMNLP 2025", f"{record=}"
        assert record["url"] in record["source_urls"], f"{record=}"
        assert record["source_urls"] == sorted(set(record["source_urls"])), f"{record=}"
        lec = full_site.lectures[record["lecture_id"]]
        assert record["url"] == f"{BASE}/lecture/{lec.id}-{lec.slug}", f"{record=}"
        assert record["abstract"] == lec.abstract, f"{record=}"
        assert record["is_premium"] == (lec.package != "free"), f"{record=}"
        assert record["doi"] == lec.underline_doi, f"{record=}"
    # Every link on every page of the event shows up in its target's source_urls, and nothing else does.
    expected: dict[str, set[str]] = {r["lecture_id"]: {r["url"]} for r in truth}
    for lec in full_site.event_lectures("502"):
        for link in page_links(lec):
            if link.lecture_id in expected:
                expected[link.lecture_id].add(BASE + link.href)
    assert {i: set(r["source_urls"]) for i, r in by_id.items()} == expected
    assert sum(len(r["source_urls"]) for r in truth) == 2245


def test_text_is_the_lecture_blocks(full_site: ReplicaSite) -> None:
    lec = next(x for x in full_site.event_lectures("502") if len(x.keywords) == 3)
    blocks = [
        " ".join(lec.abstract.split()),
        "EMNLP 2025",
        " ".join(lec.title.split()),
        *lec.keywords,
        full_site.tags[lec.tag_id].name,
    ]
    assert lecture_text(full_site, lec) == "\n\n".join(blocks)
    truth = {r["lecture_id"]: r for r in ground_truth(full_site, BASE)}
    assert truth[lec.id]["text"] == "\n\n".join(blocks)
    assert truth[lec.id]["text"].count("\n\n") == 6


def test_ground_truth_of_the_other_event(full_site: ReplicaSite) -> None:
    truth = ground_truth(full_site, BASE, event_id="469")
    assert len(truth) == 14
    assert {r["event_name"] for r in truth} == {"EMNLP 2024"}


def test_write_ground_truth(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    truth = ground_truth(build_site(records, lectures=30), BASE)
    path = write_ground_truth(truth, tmp_path / "deep" / "truth.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == truth


# -- synthesized lectures beyond the real records ----------------------------------------------------


def _layout_digest(site: ReplicaSite) -> str:
    rows = [
        [
            *(lec.id, lec.event_id, lec.session_id, lec.slug, lec.title, lec.held_at.isoformat()),
            [link.href for link in lec.related],
            lec.next.href,
            lec.similar.href if lec.similar else None,
        ]
        for lec in sorted(site.lectures.values(), key=lambda lec: int(lec.id))
    ]
    return _digest(rows)


@pytest.fixture(scope="module")
def site_10k(records: list[dict[str, Any]]) -> ReplicaSite:
    return build_site(records, lectures=10_000)


def test_copy_title_and_slug() -> None:
    assert copy_title("Fish & Chips", 1) == "Fish & Chips"
    assert copy_title("Fish & Chips", 2) == "Fish & Chips (replica copy 2)"
    assert copy_slug("Fish & Chips", 1) == "fish-chips"
    assert (
        copy_slug("Fish & Chips", 2)
        == slugify("Fish & Chips (replica copy 2)")
        == "fish-chips-replica-copy-2"
    )
    long = "Alignment Quality Index (AQI) : Beyond Refusals: AQI as an Intrinsic Alignment Diagnostic"
    assert slugify(copy_title(long, 3)) == slugify(long)  # the 80-character cut would lose the copy number
    assert (
        copy_slug(long, 3)
        == "alignment-quality-index-aqi-beyond-refusals-aqi-as-an-intrinsic-a-replica-copy-3"
    )
    assert len(copy_slug(long, 3)) == 80
    assert (
        copy_slug(long, 12)
        == "alignment-quality-index-aqi-beyond-refusals-aqi-as-an-intrinsic-replica-copy-12"
    )


def test_synthesize_records(records: list[dict[str, Any]]) -> None:
    assert synthesize_records(records, 5) == records[:5]
    assert synthesize_records(records, 740) == records
    out = synthesize_records(records, 1600)
    assert len(out) == 1600
    assert out[:740] == records
    assert out[740] == {**records[0], "title": records[0]["title"] + " (replica copy 2)", "replica_copy": 2}
    assert out[1480]["title"] == records[0]["title"] + " (replica copy 3)"
    assert out[1599]["abstract"] == records[119]["abstract"]
    assert "replica_copy" not in records[0]
    with pytest.raises(ValueError, match="no records"):
        synthesize_records([], 3)


@pytest.mark.parametrize(
    ("lectures", "main", "side", "main_sessions", "side_sessions"),
    [(741, 727, 14, 29, 2), (1000, 980, 20, 39, 2), (2500, 2450, 50, 98, 2)],
)
def test_synthesized_site_sizes(
    records: list[dict[str, Any]], lectures: int, main: int, side: int, main_sessions: int, side_sessions: int
) -> None:
    site = build_site(records, seed=1, lectures=lectures)
    assert len(site.lectures) == lectures
    assert len(site.event_lectures("502")) == main
    assert len(site.event_lectures("469")) == side
    assert len([s for s in site.sessions.values() if s.event_id == "502"]) == main_sessions
    assert len([s for s in site.sessions.values() if s.event_id == "469"]) == side_sessions
    lectures_ = list(site.lectures.values())
    assert len({lec.slug for lec in lectures_}) == lectures
    assert len({lec.title for lec in lectures_}) == lectures
    assert sum("(replica copy 2)" in lec.title for lec in lectures_) == min(lectures, 1480) - 740


def test_synthesis_is_deterministic(records: list[dict[str, Any]]) -> None:
    first = build_site(records, seed=0, lectures=1000)
    assert first == build_site(records, seed=0, lectures=1000)
    assert _layout_digest(first) == "a39235ca9643dcaac5e0e866bf35f42305046d78198708ef524572f071f6a950"
    assert _layout_digest(build_site(records, seed=1, lectures=1000)) != _layout_digest(first)
    copy = min(
        (lec for lec in first.lectures.values() if "(replica copy" in lec.title), key=lambda x: int(x.id)
    )
    assert (copy.id, copy.event_id, copy.session_id) == ("118244", "469", "6002")
    assert copy.title == (
        "BAREC Demo: Resources and Tools for Sentence-level Arabic Readability Assessment (replica copy 2)"
    )
    assert copy.slug == "barec-demo-resources-and-tools-for-sentence-level-arabic-readabil-replica-copy-2"


def test_lecture_id_ranges_widen_apart() -> None:
    assert lecture_id_range(EVENTS["502"], 726) == (129800, 132400)
    assert lecture_id_range(EVENTS["502"], 980) == (129800, 132739)
    assert lecture_id_range(EVENTS["469"], 200) == (118000, 119999)
    assert lecture_id_range(EVENTS["469"], 1000) == (117000, 119999)
    with pytest.raises(ValueError, match="too many lectures"):
        lecture_id_range(EVENTS["469"], 50_000)


def test_ten_thousand_lectures(site_10k: ReplicaSite) -> None:
    lectures = list(site_10k.lectures.values())
    assert len(lectures) == 10_000
    assert len({lec.id for lec in lectures}) == len({lec.slug for lec in lectures}) == 10_000
    assert _layout_digest(site_10k) == "2cd9d5cd78ea3b47820dd44112ea0e433ca4f1a83b5d8baaa04c080e1f2114cb"
    copies = Counter(
        int(lec.title.rsplit("(replica copy ", 1)[1][:-1]) for lec in lectures if "(replica" in lec.title
    )
    assert copies == {n: 740 for n in range(2, 14)} | {14: 380}
    main, side = site_10k.event_lectures("502"), site_10k.event_lectures("469")
    assert (len(main), len(side)) == (9800, 200)
    assert max(int(lec.id) for lec in side) < 120000 <= 129800 <= min(int(lec.id) for lec in main)
    assert max(int(lec.id) for lec in main) <= 129800 + 3 * 9800 - 1
    assert len([s for s in site_10k.sessions.values() if s.event_id == "502"]) == 392
    ids = set(site_10k.lectures)
    for lec in main:
        assert len(lec.related) == 10 and {link.lecture_id for link in lec.related} <= ids, f"{lec=}"
        assert lec.id not in {link.lecture_id for link in lec.related}, f"{lec=}"


def test_ground_truth_of_a_synthesized_site(records: list[dict[str, Any]]) -> None:
    truth = ground_truth(build_site(records, seed=0, lectures=1000), BASE)
    assert len(truth) == 980
    assert len({r["url"] for r in truth}) == 980
    copy = next(r for r in truth if r["title"].endswith("(replica copy 2)"))
    assert copy["url"].endswith("-replica-copy-2")
    assert "(replica copy 2)" in copy["text"]
    for record in truth:
        assert validate_record({**published_part(record), "fetched_at": "2025-12-01T00:00:00Z"}) == [], (
            f"{record=}"
        )


def test_too_many_lectures(records: list[dict[str, Any]]) -> None:
    with pytest.raises(ValueError, match="at most"):
        build_site(records, lectures=MAX_LECTURES + 1)
