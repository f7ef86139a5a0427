"""The lecture schema's struct-list fields: types, JSON round trip, content hash and validation."""

from __future__ import annotations

import typing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

from crawler import schema
from crawler.publish.tables import LECTURES
from crawler.schema import arrow as schema_arrow
from crawler.schema import check as schema_check
from tests.test_publish_parquet import make_record

AUTHORS = [
    {"name": "Zoë Ångström", "affiliations": ["Uppsala University", "KTH"], "orcid": "0000-0002-1825-0097"},
    {"name": "Wei Zhang", "affiliations": [], "orcid": None},
]
SUBTITLES = [
    {"locale": "en", "name": "English", "auto_generated": True, "url": "https://assets.example/1.vtt"},
]


def test_the_lecture_record_declares_the_fields_in_column_order() -> None:
    assert tuple(typing.get_type_hints(schema.Lecture)) == schema.FIELD_NAMES


def test_struct_list_types() -> None:
    declared = schema_arrow.arrow_schema()
    assert declared.field("authors").type == pa.list_(
        pa.struct(
            [
                pa.field("name", pa.string()),
                pa.field("affiliations", pa.list_(pa.string())),
                pa.field("orcid", pa.string()),
            ]
        )
    )
    assert declared.field("authors").nullable is False
    assert declared.field("subtitles").type == pa.list_(
        pa.struct(
            [
                pa.field("locale", pa.string()),
                pa.field("name", pa.string()),
                pa.field("auto_generated", pa.bool_()),
                pa.field("url", pa.string()),
            ]
        )
    )
    assert declared.field("subtitles").nullable is True
    for name in ("video_url", "video_doi", "paper_url", "slides_url", "poster_url"):
        assert declared.field(name).type == pa.string() and declared.field(name).nullable, f"{name=}"
    assert declared.field("is_poster").type == pa.bool_() and declared.field("is_poster").nullable
    features = LECTURES.features()
    assert features["authors"] == datasets.List(
        {
            "name": datasets.Value("string"),
            "affiliations": datasets.List(datasets.Value("string")),
            "orcid": datasets.Value("string"),
        }
    )
    assert datasets.Features.from_arrow_schema(declared) == features


def test_a_record_without_the_new_fields_keeps_its_hash_and_publishes() -> None:
    record = make_record(1)
    # The hash of this record before authors and media existed, written down at that time.
    assert record["content_sha256"] == "73a0a38a2a784bfa3363b2c23735c7f60cdcc15a8521d4f0f027d72ac000922b"
    assert schema_check.validate_record(record) == []
    canonical = schema.to_json_record(record)
    assert canonical["authors"] == []
    assert canonical["subtitles"] is None
    assert canonical["video_url"] is None and canonical["is_poster"] is None


def test_authors_and_media_are_content_subtitles_are_not() -> None:
    base = make_record(1)
    with_authors = make_record(1, authors=AUTHORS)
    assert with_authors["content_sha256"] != base["content_sha256"]
    reordered = make_record(1, authors=list(reversed(AUTHORS)))
    assert reordered["content_sha256"] != with_authors["content_sha256"]
    assert (
        make_record(1, slides_url="https://assets.example/s.pdf")["content_sha256"] != base["content_sha256"]
    )
    assert make_record(1, is_poster=False)["content_sha256"] != base["content_sha256"]
    assert make_record(1, subtitles=SUBTITLES)["content_sha256"] == base["content_sha256"]
    assert make_record(1, subtitles=[])["content_sha256"] == base["content_sha256"]


def test_json_round_trip_fills_missing_members() -> None:
    record = make_record(2, authors=[{"name": "Ada Lovelace"}], subtitles=[{"locale": "de"}])
    canonical = schema.to_json_record(record)
    assert canonical["authors"] == [{"name": "Ada Lovelace", "affiliations": [], "orcid": None}]
    assert canonical["subtitles"] == [{"locale": "de", "name": None, "auto_generated": None, "url": None}]
    back = schema.record_values(canonical, schema.FIELDS)
    assert back["authors"] == canonical["authors"]
    assert back["fetched_at"] == datetime(2025, 11, 12, 8, 0, 2, tzinfo=UTC)


def test_validation_of_struct_lists() -> None:
    def problems(**changes: Any) -> list[str]:
        record = make_record(3)
        record.update(changes)
        return schema_check.validate_record(record)

    assert problems(authors=AUTHORS, subtitles=SUBTITLES) == []
    assert problems(authors="Ada Lovelace") == ["authors is not a list"]
    assert problems(authors=["Ada Lovelace"]) == ["authors[0] is not a mapping"]
    assert problems(authors=[{"name": "A", "email": "a@example.org"}]) == [
        "authors[0] has unknown members: ['email']"
    ]
    assert problems(authors=[{"name": "A", "affiliations": "KTH"}]) == [
        "authors[0] has members of the wrong type: ['affiliations']"
    ]
    assert problems(subtitles=[{"auto_generated": "yes"}]) == [
        "subtitles[0] has members of the wrong type: ['auto_generated']"
    ]
    assert problems(is_poster="true") == ["is_poster is not a bool"]
    assert problems(title=None) == ["title is missing"]


def test_struct_lists_survive_parquet_and_load_dataset(tmp_path: Path) -> None:
    rows = [
        schema.record_values(make_record(1, authors=AUTHORS, subtitles=SUBTITLES), schema.FIELDS),
        schema.record_values(make_record(2), schema.FIELDS),
    ]
    table = pa.Table.from_pylist(rows, schema=schema_arrow.arrow_schema())
    pq.write_table(table, tmp_path / "lectures.parquet")
    assert pq.read_table(tmp_path / "lectures.parquet").to_pylist() == rows
    loaded = datasets.load_dataset(
        "parquet",
        data_files=str(tmp_path / "lectures.parquet"),
        split="train",
        features=LECTURES.features(),
        cache_dir=str(tmp_path / "cache"),
    )
    assert loaded[0]["authors"] == AUTHORS
    assert loaded[0]["subtitles"] == SUBTITLES
    assert loaded[1]["authors"] == [] and loaded[1]["subtitles"] is None


def test_lecture_from_json_and_back_keeps_every_value() -> None:
    staged = {
        "lecture_id": "130001",
        "url": "https://underline.io/lecture/130001-a-talk",
        "title": "A Talk",
        "held_at": "2025-11-05T09:30:00.000Z",
        "authors": [{"name": "Ada Lovelace", "affiliations": ["Analytical Engines"]}],
        "extraction": "next_data",
    }
    lecture = schema.Lecture.from_json(staged)
    assert lecture.held_at == datetime(2025, 11, 5, 9, 30, tzinfo=UTC)
    assert lecture.authors == [
        {"name": "Ada Lovelace", "affiliations": ["Analytical Engines"], "orcid": None}
    ]
    assert lecture.keywords == [] and lecture.subtitles is None
    back = lecture.to_json()
    assert back["held_at"] == "2025-11-05T09:30:00Z"
    assert back["title"] == "A Talk"
    assert list(back) == list(schema.FIELD_NAMES)
    assert schema.Lecture.from_json(back) == lecture


def test_lecture_table_has_the_schema_and_the_values() -> None:
    first = schema.Lecture.from_json(
        {"lecture_id": "2", "url": "u2", "title": "T", "extraction": "api_listing", "is_poster": True}
    )
    second = schema.Lecture.from_json(
        {"lecture_id": "1", "url": "u1", "held_at": "2025-01-01T00:00:00Z", "extraction": "next_data"}
    )
    from crawler.publish.tables import lecture_table

    table = lecture_table([first, second])
    assert table.schema == schema_arrow.arrow_schema()
    assert table.column("lecture_id").to_pylist() == ["2", "1"]
    assert table.column("is_poster").to_pylist() == [True, None]
    assert table.column("held_at").to_pylist() == [None, datetime(2025, 1, 1, tzinfo=UTC)]
