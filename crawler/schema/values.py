"""The schema's values as JSON holds them: timestamps as ISO strings, records with every field of their
table, struct members in order. The one codec of every JSON form a record takes (the stage line, a
request's round trip, the spill files, the change files), and the one "has a value".
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from crawler.json_types import JsonObject, JsonValue
from crawler.schema.columns import Field


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


def has_value(value: object) -> bool:
    """Whether a field holds a value: None, a blank or whitespace-only string and an empty list (or
    mapping) hold none; False and 0 are values. The one definition coverage, the gate and the card use."""
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list | tuple | dict):
        return bool(value)
    return True


_JSON_SCALARS = (str, bool, int, float)


def _json_value(value: object) -> JsonValue:
    """A value as JSON holds it: timestamps as ISO strings, tuples as lists. Anything else JSON cannot
    hold is written as its text (such a record fails :func:`crawler.schema.check.validate_record` anyway)."""
    if value is None or isinstance(value, _JSON_SCALARS):
        return value
    if isinstance(value, datetime):
        return format_timestamp(parse_timestamp(value))
    if isinstance(value, list | tuple):
        return [v if v is None or isinstance(v, _JSON_SCALARS) else _json_value(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    return str(value)


def _struct_entry(f: Field, item: object) -> JsonObject:
    members = item if isinstance(item, Mapping) else {}
    entry: JsonObject = {}
    for name, kind in f.members:
        member = members.get(name)
        if kind == "string_list":
            entry[name] = _json_value(member) if isinstance(member, list | tuple) and member else []
        elif member is None or isinstance(member, _JSON_SCALARS):
            entry[name] = member
        else:
            entry[name] = _json_value(member)
    return entry


def _struct_items(f: Field, value: object) -> list[JsonValue] | None:
    """A struct list with every member present, in member order (missing lists become empty)."""
    if value is None:
        return None if f.nullable else []
    items = value if isinstance(value, list | tuple) else [value]
    return [_struct_entry(f, item) for item in items]


def record_to_json(record: Mapping[str, object], fields: tuple[Field, ...]) -> JsonObject:
    """A record with every field of its table, timestamps as ISO strings: the form JSON holds it in.

    A missing list field becomes an empty list; a missing nullable struct list (``subtitles``) stays null.
    """
    out: JsonObject = {}
    for f in fields:
        value = record.get(f.name)
        kind = f.kind
        if kind == "timestamp":
            out[f.name] = format_timestamp(parse_timestamp(value))
        elif kind == "string_list":
            out[f.name] = _json_value(value) if isinstance(value, list | tuple) and value else []
        elif kind == "struct_list":
            out[f.name] = _struct_items(f, value)
        elif kind == "struct":
            out[f.name] = None if value is None else _struct_entry(f, value)
        elif value is None or isinstance(value, _JSON_SCALARS):
            out[f.name] = value
        else:
            out[f.name] = _json_value(value)
    return out


def record_values(record: Mapping[str, object], fields: tuple[Field, ...]) -> dict[str, object]:
    """The inverse of :func:`record_to_json`: every field's value, timestamps as aware datetimes."""
    out: dict[str, object] = dict(record_to_json(record, fields))
    for f in fields:
        if f.kind == "timestamp":
            out[f.name] = parse_timestamp(out[f.name])
    return out
