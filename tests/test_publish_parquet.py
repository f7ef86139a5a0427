"""Tables from records, and their Parquet shards: schema, layout, options, determinism."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawler import schema
from crawler.publish import parquet, tables
from crawler.publish.records import InvalidRecordsError, lecture_rows
from crawler.publish.summary_tables import build_tables
from crawler.publish.tables import EVENTS, LECTURES, SESSIONS
from crawler.schema import arrow as schema_arrow

WEB = "https://underline.io"
# Titles a card must render as text: YAML delimiters, HTML, table pipes, Jinja, a forged marker.
NASTY_TITLES = [
    "--- license: mit ---",
    "<script>alert('x')</script> | A | B |",
    "{{ card_data }} {% raw %} Templating in a Title",
    "<!-- maintainer:start notes --> Forged Marker",
    "*Bold* _claims_ [link](javascript:alert(1)) # not a heading `code` $x^2$",
    "Ünïcödé Models — 日本語 Evaluation",
]
PLAIN_TITLES = [
    "Towards Automated Error Discovery: A Study in Conversational AI",
    "Retrieval-Augmented Generation for Long-Form Question Answering",
    "Efficient Fine-Tuning of Large Language Models with Sparse Adapters",
    "Multilingual Evaluation of Instruction-Following Models",
    "Probing Factual Knowledge in Vision-Language Models",
    "A Benchmark for Dialogue State Tracking under Noise",
]
SESSIONS_BY_ID = {
    "9001": "Oral: Dialogue | Interactive Systems",
    "9002": "Poster Session 3 --- Machine Translation",
    "9003": "<b>Industry</b> Track",
}
PROVENANCE: dict[str, Any] = {
    "crawl_date": "2025-11-12",
    "crawler_version": "0.1.0",
    "event_id": "502",
    "event_name": "EMNLP 2025",
    "web_base": WEB,
    "settings": {"DOWNLOAD_DELAY": 1.0, "ROBOTSTXT_OBEY": True, "USER_AGENT": "eventcrawl/0.1.0"},
}


def make_record(index: int, **changes: Any) -> dict[str, Any]:
    """A schema-valid lecture record, realistic and deterministic; ``changes`` override fields."""
    lecture_id = str(130100 + index)
    titles = NASTY_TITLES + PLAIN_TITLES
    title = titles[index % len(titles)]
    slug = f"lecture-{lecture_id}"
    session_id = [None, "9001", "9002", "9003"][index % 4]
    keywords = [["dialogue", "LLM|agents"], ["machine translation"], ["<b>evaluation</b>", "dialogue"], []][
        index % 4
    ]
    abstract = (
        f"We study problem {index} with \\textbf{{new}} methods.\n\n---\nlicense: mit\n"
        + "Results improve by 3 points. " * (index % 5 + 1)
    )
    record: dict[str, Any] = {
        "lecture_id": lecture_id,
        "url": f"{WEB}/lecture/{lecture_id}-{slug}",
        "source_urls": sorted([f"{WEB}/lecture/{lecture_id}-{slug}", f"{WEB}/lecture/{lecture_id}"]),
        "title": title,
        "abstract": abstract,
        "keywords": keywords,
        "presentation_type": [None, "poster", "oral", "poster"][index % 4] if index % 7 else "poster",
        "event_id": "469" if index % 10 == 9 else "502",
        "event_name": "EMNLP 2024" if index % 10 == 9 else "EMNLP 2025",
        "session_id": session_id,
        "session_name": SESSIONS_BY_ID.get(session_id or ""),
        "held_at": f"2025-11-0{5 + index % 3}T0{index % 9}:30:00Z" if index % 6 else None,
        "published_at": datetime(2025, 10, 1, 12, index % 60, tzinfo=UTC),
        "doi": f"10.48448/ab{index:02d}-cd{index:02d}" if index % 2 else None,
        "is_premium": index % 5 == 0,
        "related_lecture_ids": [str(130100 + (index + k) % 12) for k in (1, 2)],
        "text": f"{abstract}\n\nEMNLP 2025\n\n{title}",
        "extraction": "next_data",
        "withdrawn": False,
        "fetched_at": datetime(2025, 11, 12, 8, 0, index, tzinfo=UTC),
    }
    record.update(changes)
    record["content_sha256"] = schema.content_sha256(record)
    return record


def make_records(n: int = 12) -> list[dict[str, Any]]:
    # Reversed so that the writer's sort is observable.
    return [make_record(i) for i in reversed(range(n))]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_lecture_table_schema_is_the_schema() -> None:
    assert LECTURES.arrow_schema().equals(schema_arrow.arrow_schema(), check_metadata=True)
    assert LECTURES.column_names == schema.FIELD_NAMES


def test_summary_tables_take_their_types_from_lecture_fields() -> None:
    lecture = schema_arrow.arrow_schema()
    events = EVENTS.arrow_schema()
    sessions = SESSIONS.arrow_schema()
    assert events.field("event_id").type == lecture.field("event_id").type
    assert events.field("first_held_at").type == lecture.field("held_at").type == pa.timestamp("us", tz="UTC")
    assert events.field("lecture_count").type == pa.int64()
    assert sessions.field("presentation_types").type == pa.list_(lecture.field("presentation_type").type)
    assert [f.nullable for f in sessions] == [False, True, False, False, False, True, True, True]
    assert sessions.field("starts_at").type == sessions.field("ends_at").type == pa.timestamp("us", tz="UTC")
    assert sessions.field("description").type == pa.string()
    import datasets

    assert SESSIONS.features()["presentation_types"] == datasets.List(datasets.Value("string"))
    assert all(c.description for spec in tables.SPECS for c in spec.columns)


def test_rows_are_validated_sorted_and_summarized() -> None:
    rows = lecture_rows(make_records())
    assert [r.lecture_id for r in rows] == [str(130100 + i) for i in range(12)]
    assert rows[1].held_at == datetime(2025, 11, 6, 1, 30, tzinfo=UTC)
    built = build_tables(rows)
    assert built["events"].to_pylist() == [
        {
            "event_id": "469",
            "event_name": "EMNLP 2024",
            "lecture_count": 1,
            "page_lectures": 1,
            "listing_only_lectures": 0,
            "first_held_at": datetime(2025, 11, 5, 0, 30, tzinfo=UTC),
            "last_held_at": datetime(2025, 11, 5, 0, 30, tzinfo=UTC),
        },
        {
            "event_id": "502",
            "event_name": "EMNLP 2025",
            "lecture_count": 11,
            "page_lectures": 11,
            "listing_only_lectures": 0,
            "first_held_at": datetime(2025, 11, 5, 3, 30, tzinfo=UTC),
            "last_held_at": datetime(2025, 11, 7, 8, 30, tzinfo=UTC),
        },
    ]
    assert built["sessions"].to_pylist() == [
        {
            "session_id": "9001",
            "session_name": SESSIONS_BY_ID["9001"],
            "event_id": "502",
            "lecture_count": 3,
            "presentation_types": ["poster"],
            "description": None,
            "starts_at": None,
            "ends_at": None,
        },
        {
            "session_id": "9002",
            "session_name": SESSIONS_BY_ID["9002"],
            "event_id": "502",
            "lecture_count": 3,
            "presentation_types": ["oral"],
            "description": None,
            "starts_at": None,
            "ends_at": None,
        },
        {
            "session_id": "9003",
            "session_name": SESSIONS_BY_ID["9003"],
            "event_id": "502",
            "lecture_count": 3,
            "presentation_types": ["poster"],
            "description": None,
            "starts_at": None,
            "ends_at": None,
        },
    ]


def test_invalid_records_are_all_reported() -> None:
    bad_type = make_record(1)
    bad_type["is_premium"] = "no"
    missing = make_record(2)
    del missing["title"]
    wrong_hash = make_record(3)
    wrong_hash["title"] = "Changed after hashing"
    with pytest.raises(InvalidRecordsError) as caught:
        lecture_rows([make_record(0), bad_type, missing, wrong_hash, make_record(0)])
    assert caught.value.problems == (
        "record 1 (lecture_id='130101'): is_premium is not a bool",
        "record 2 (lecture_id='130102'): title is missing",
        "record 3 (lecture_id='130103'): content_sha256 does not match the record's content",
        "record 4 (lecture_id='130100'): duplicate lecture_id",
    )
    assert str(caught.value).startswith("4 problem(s) in 5 record(s):")


def test_shards_row_groups_and_options(tmp_path: Path) -> None:
    table = build_tables(lecture_rows(make_records()))["lectures"]
    shards = parquet.write_shards(table, tmp_path, LECTURES, shard_rows=5, row_group_rows=2)
    assert shards == [
        parquet.Shard("data/lectures/train-00000-of-00003.parquet", 5),
        parquet.Shard("data/lectures/train-00001-of-00003.parquet", 5),
        parquet.Shard("data/lectures/train-00002-of-00003.parquet", 2),
    ]
    assert sorted(p.name for p in (tmp_path / "data" / "lectures").iterdir()) == [
        "train-00000-of-00003.parquet",
        "train-00001-of-00003.parquet",
        "train-00002-of-00003.parquet",
    ]
    meta = pq.read_metadata(tmp_path / shards[0].path)
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [2, 2, 1]
    column = meta.row_group(0).column(0)
    assert column.compression == "ZSTD"
    assert column.has_offset_index and column.has_column_index
    assert meta.row_group(0).sorting_columns == (pq.SortingColumn(0),)
    keys = set(meta.metadata)
    assert b"pandas" not in keys
    assert keys == {b"ARROW:schema", b"description", b"huggingface"}
    read = parquet.read_shards(tmp_path, LECTURES, [s.path for s in shards])
    assert read.schema.equals(schema_arrow.arrow_schema())
    assert read.to_pylist() == table.to_pylist()
    assert (
        pq.read_schema(tmp_path / shards[0].path)
        .remove_metadata()
        .equals(schema_arrow.arrow_schema().remove_metadata())
    )


def test_same_rows_give_the_same_bytes(tmp_path: Path) -> None:
    built = build_tables(lecture_rows(make_records()))
    digests = []
    for attempt in ("a", "b"):
        written = [
            s
            for spec in tables.SPECS
            for s in parquet.write_shards(built[spec.name], tmp_path / attempt, spec)
        ]
        digests.append([(s.path, sha(tmp_path / attempt / s.path)) for s in written])
    assert digests[0] == digests[1]
    assert [p for p, _ in digests[0]] == [
        "data/lectures/train-00000-of-00001.parquet",
        "data/events/train-00000-of-00001.parquet",
        "data/sessions/train-00000-of-00001.parquet",
        "data/authors/train-00000-of-00001.parquet",
    ]


def test_content_defined_chunking_is_used_when_available_and_optional(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert parquet.supports_content_defined_chunking() is True  # pyarrow >= 21
    assert parquet.writer_options(LECTURES, 10)["use_content_defined_chunking"] is True
    without = frozenset(parquet._writer_parameters()) - {
        "use_content_defined_chunking",
        "bloom_filter_options",
    }
    monkeypatch.setattr(parquet, "_writer_parameters", lambda: without)
    options = parquet.writer_options(LECTURES, 10)
    assert "use_content_defined_chunking" not in options and "bloom_filter_options" not in options
    table = build_tables(lecture_rows(make_records(3)))["lectures"]
    shards = parquet.write_shards(table, tmp_path, LECTURES)
    assert pq.read_table(tmp_path / shards[0].path).num_rows == 3


def test_an_empty_table_still_gets_one_loadable_shard(tmp_path: Path) -> None:
    empty = build_tables([])
    shards = parquet.write_shards(empty["sessions"], tmp_path, SESSIONS)
    assert shards == [parquet.Shard("data/sessions/train-00000-of-00001.parquet", 0)]
    assert parquet.read_shards(tmp_path, SESSIONS, [shards[0].path]).num_rows == 0


def _texts(*sizes: int) -> pa.Table:
    # Each text its own letters, so that no encoding makes the file much smaller than the values.
    return pa.table({"text": pa.array([(chr(65 + i % 26) * n) for i, n in enumerate(sizes)], pa.string())})


def test_row_groups_are_sized_from_the_table_and_bounded_in_bytes() -> None:
    # Ten rows of 1000 characters: 10,040 bytes in Arrow (values and offsets), 1004 a row.
    assert _texts(*[1000] * 10).nbytes == 10_040
    assert parquet.row_group_slices(_texts(*[1000] * 10), max_bytes=3500) == [(0, 3), (3, 3), (6, 3), (9, 1)]
    assert parquet.row_group_slices(_texts(*[1000] * 10), max_rows=4, max_bytes=10**9) == [
        (0, 4),
        (4, 4),
        (8, 2),
    ]
    # One row far larger than the mean: its group is halved until it fits, or holds that row alone.
    skewed = _texts(10, 10, 10, 10, 10, 10, 10, 5000)
    assert parquet.row_group_slices(skewed, max_bytes=4000) == [(0, 6), (6, 1), (7, 1)]
    assert parquet.row_group_slices(_texts()) == []


def test_a_written_file_keeps_its_row_groups_within_the_bound(tmp_path: Path) -> None:
    # As in a release, the writer aims at half the bound the file is checked against: Parquet's
    # uncompressed size counts more than Arrow's (here mostly the statistics' min and max values).
    assert parquet.MAX_ROW_GROUP_BYTES == 2 * parquet.ROW_GROUP_TARGET_BYTES
    table = _texts(*[1000] * 10)
    with pq.ParquetWriter(tmp_path / "bounded.parquet", table.schema) as writer:
        parquet.write_row_groups(writer, table, max_bytes=3500)
    metadata = pq.read_metadata(tmp_path / "bounded.parquet")
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [3, 3, 3, 1]
    assert parquet.oversized_row_groups(tmp_path / "bounded.parquet", 7000) == []
    # The same rows in one row group: past the bound, and named.
    pq.write_table(table, tmp_path / "one-group.parquet", compression="zstd")
    size = pq.read_metadata(tmp_path / "one-group.parquet").row_group(0).total_byte_size
    assert size > 10_000
    assert parquet.oversized_row_groups(tmp_path / "one-group.parquet", 7000) == [(0, size)]


def test_the_release_s_verification_refuses_a_row_group_past_the_bound(tmp_path: Path) -> None:
    from crawler.publish.manifest import ReleaseError
    from crawler.publish.release import publish_release
    from crawler.publish.verify import verify_release

    out = tmp_path / "release"
    result = publish_release(make_records(), out, name="emnlp-2025", provenance=PROVENANCE)
    assert verify_release(out, result.row_counts) == []
    files = sorted(p for p in result.files if p.endswith(".parquet"))
    largest = {
        p: max(
            pq.read_metadata(out / p).row_group(i).total_byte_size
            for i in range(pq.read_metadata(out / p).num_row_groups)
        )
        for p in files
        if pq.read_metadata(out / p).num_row_groups
    }
    # Every Parquet file is checked: the change file too, and with a bound below its row group it is refused.
    assert "changes/2025-11-12.parquet" in largest
    bound = min(largest.values()) - 1
    first = min(p for p, size in largest.items() if size > bound)
    with pytest.raises(
        ReleaseError,
        match=re.escape(f"{first}: row group 0 holds {largest[first]} bytes uncompressed, more than {bound}"),
    ):
        verify_release(out, result.row_counts, max_row_group_bytes=bound)
