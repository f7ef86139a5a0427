"""The one schema of a published lecture record.

Every consumer derives from ``FIELDS``: the Scrapy item class, the pyarrow schema the Parquet
writer uses, the ``datasets.Features`` declared in the card and the card's field table.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import pyarrow as pa

Kind = Literal["string", "string_list", "timestamp", "bool"]


@dataclass(frozen=True)
class Field:
    name: str
    kind: Kind
    description: str
    nullable: bool = True
    # Fields that describe the fetch rather than the lecture stay out of the content hash, so an
    # unchanged lecture keeps its hash from one crawl to the next.
    in_content_hash: bool = True


FIELDS: tuple[Field, ...] = (
    Field("lecture_id", "string", "Underline's lecture id (a JSON:API id, kept as a string).", False),
    Field("url", "string", "Canonical lecture page URL: `<web base>/lecture/<id>-<slug>`.", False),
    Field(
        "source_urls",
        "string_list",
        "Every URL the lecture was fetched at or linked from, sorted; includes `url`.",
        False,
        in_content_hash=False,
    ),
    Field("title", "string", "Lecture title, Unicode NFC with whitespace collapsed.", False),
    Field("abstract", "string", "Abstract exactly as the site publishes it (not normalized).", False),
    Field("keywords", "string_list", "Keywords shown under the title, in page order.", False),
    Field("presentation_type", "string", "Presentation type (the lecture's tag), e.g. `poster`."),
    Field("event_id", "string", "Underline event id (502 is EMNLP 2025).", False),
    Field("event_name", "string", "Event name, e.g. `EMNLP 2025`."),
    Field("session_id", "string", "Id of the event session the lecture belongs to."),
    Field("session_name", "string", "Name of that session."),
    Field("held_at", "timestamp", "When the lecture is held (UTC)."),
    Field("published_at", "timestamp", "When the lecture was published on the site (UTC)."),
    Field("doi", "string", "Underline DOI of the lecture (prefix 10.48448), if any."),
    Field("is_premium", "bool", "True when the lecture's package is not free (`Premium content`).", False),
    Field(
        "related_lecture_ids",
        "string_list",
        "Ids of the related lectures the page shows, in page order.",
        False,
    ),
    Field(
        "text",
        "string",
        "The lecture's own visible content (abstract, event, title, keywords, type), one block per"
        " paragraph, normalized; no site boilerplate and no other lecture's content.",
        False,
    ),
    Field(
        "withdrawn",
        "bool",
        "True when the lecture was in an earlier release but is no longer on the site; the record"
        " keeps its last published content.",
        False,
        in_content_hash=False,
    ),
    Field(
        "alternate_ids",
        "string_list",
        "Other lecture ids of the same talk (equal title and abstract, e.g. the paper in two sessions),"
        " merged into this record; empty when none.",
    ),
    Field(
        "near_duplicate_cluster",
        "string",
        "Lowest lecture id of the records whose title and abstract nearly match this one's (MinHash LSH,"
        " word 3-shingle Jaccard >= 0.7); null when none.",
        in_content_hash=False,
    ),
    Field(
        "extraction",
        "string",
        "How the fields were extracted: `next_data` (the page's JSON) or `visible_text`.",
        False,
        in_content_hash=False,
    ),
    Field("fetched_at", "timestamp", "When the page was fetched (UTC).", False, in_content_hash=False),
    Field(
        "content_sha256",
        "string",
        "SHA-256 of the lecture's content fields; equal hashes mean an unchanged lecture.",
        False,
        in_content_hash=False,
    ),
)

FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in FIELDS)
FIELDS_BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}
CONTENT_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.in_content_hash)
# Rows are written in this order so that re-publishing the same data gives the same bytes.
SORT_KEY = "lecture_id"


def lecture_order(lecture_id: str) -> tuple[int, str]:
    """Sort key of lecture ids: numeric ids in numeric order (shorter first), then as text."""
    return (len(lecture_id), lecture_id)


_ARROW_TYPES: dict[Kind, pa.DataType] = {
    "string": pa.string(),
    "string_list": pa.list_(pa.string()),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "bool": pa.bool_(),
}


def arrow_schema() -> pa.Schema:
    """The pyarrow schema of the ``lectures`` table."""
    return pa.schema(
        [pa.field(f.name, _ARROW_TYPES[f.kind], nullable=f.nullable) for f in FIELDS],
        metadata={"description": "eventcrawl lecture records"},
    )


def hf_features() -> Any:
    """The ``datasets.Features`` matching :func:`arrow_schema` (imported lazily: datasets is heavy)."""
    import datasets

    def feature(kind: Kind) -> Any:
        if kind == "string_list":
            return datasets.List(datasets.Value("string"))
        if kind == "timestamp":
            return datasets.Value("timestamp[us, tz=UTC]")
        if kind == "bool":
            return datasets.Value("bool")
        return datasets.Value("string")

    return datasets.Features({f.name: feature(f.kind) for f in FIELDS})


def parse_timestamp(value: Any) -> datetime | None:
    """An aware UTC datetime from an ISO 8601 string or datetime; None for empty input.

    A naive value is taken as UTC. Raises ValueError for text that is not ISO 8601.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        parsed = value
    else:
        text = str(value).strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def format_timestamp(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with a trailing ``Z`` and microseconds when there are any."""
    if value is None:
        return None
    text = value.astimezone(UTC).isoformat()
    return text.replace("+00:00", "Z")


def to_json_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record with every schema field, timestamps as ISO strings: the staging format."""
    out: dict[str, Any] = {}
    for f in FIELDS:
        value = record.get(f.name)
        if f.kind == "timestamp":
            out[f.name] = format_timestamp(parse_timestamp(value))
        elif f.kind == "string_list":
            out[f.name] = list(value or [])
        else:
            out[f.name] = value
    return out


def from_json_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`to_json_record`: timestamps become aware datetimes."""
    out = dict(to_json_record(record))
    for f in FIELDS:
        if f.kind == "timestamp":
            out[f.name] = parse_timestamp(out[f.name])
    return out


def content_sha256(record: Mapping[str, Any]) -> str:
    """SHA-256 hex digest of the content fields, stable across processes and crawls."""
    canonical = to_json_record(record)
    payload = {name: canonical[name] for name in CONTENT_FIELDS}
    blob = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def validate_record(record: Mapping[str, Any]) -> list[str]:
    """Problems that keep a record out of the dataset (empty list when it is valid)."""
    problems = []
    unknown = set(record) - set(FIELD_NAMES)
    if unknown:
        problems.append(f"unknown fields: {sorted(unknown)}")
    for f in FIELDS:
        value = record.get(f.name)
        if value is None:
            if not f.nullable:
                problems.append(f"{f.name} is missing")
            continue
        if f.kind == "string" and not isinstance(value, str):
            problems.append(f"{f.name} is not a string")
        elif f.kind == "string_list" and not (
            isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
        ):
            problems.append(f"{f.name} is not a list of strings")
        elif f.kind == "bool" and not isinstance(value, bool):
            problems.append(f"{f.name} is not a bool")
        elif f.kind == "timestamp":
            try:
                parse_timestamp(value)
            except (TypeError, ValueError):
                problems.append(f"{f.name} is not an ISO 8601 timestamp")
    return problems
