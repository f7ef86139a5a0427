"""The schema's check of a record from outside (a stage line, a caller's records): every problem that
keeps it out of the dataset, read off :data:`crawler.schema.FIELDS` (unknown fields, a required field
missing, a value of the wrong type, a list of records with unknown or mistyped members).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crawler.schema.columns import Field, ScalarKind
from crawler.schema.lecture import FIELDS
from crawler.schema.values import parse_timestamp


def validate_record(record: Mapping[str, Any], fields: tuple[Field, ...] = FIELDS) -> list[str]:
    """Problems that keep a record out of the dataset (empty list when it is valid); a lecture unless
    ``fields`` names another table's."""
    problems = []
    unknown = set(record) - {f.name for f in fields}
    if unknown:
        problems.append(f"unknown fields: {sorted(unknown)}")
    for f in fields:
        value = record.get(f.name)
        if value is None:
            # A record staged before a list field existed has none: it publishes with an empty list.
            added_list = not f.hashed_when_empty and f.kind in ("string_list", "struct_list")
            if not f.nullable and not added_list:
                problems.append(f"{f.name} is missing")
            continue
        if f.kind == "struct_list":
            problems.extend(_struct_problems(f, value))
        elif f.kind == "struct":
            problems.extend(_struct_problems(f, [value], one=True))
        elif _member_problem(f.kind, value):
            problems.append(f"{f.name} {_WRONG_KIND[f.kind]}")
    return problems


# What a value of the wrong type for a column of each scalar kind is said to be not.
_WRONG_KIND: dict[ScalarKind, str] = {
    "string": "is not a string",
    "string_list": "is not a list of strings",
    "bool": "is not a bool",
    "float": "is not a number",
    "int": "is not an integer in range",
    "int32": "is not an integer in range",
    "timestamp": "is not an ISO 8601 timestamp",
}


def _member_problem(kind: ScalarKind, value: Any) -> bool:
    if value is None:
        return False
    if kind == "string":
        return not isinstance(value, str)
    if kind == "bool":
        return not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, bool) or not isinstance(value, int | float)
    if kind in ("int", "int32"):
        bound = 2**31 if kind == "int32" else 2**63
        return isinstance(value, bool) or not isinstance(value, int) or not -bound <= value < bound
    if kind == "string_list":
        return not (isinstance(value, list | tuple) and all(isinstance(v, str) for v in value))
    try:
        parse_timestamp(value)
    except (TypeError, ValueError):
        return True
    return False


def _struct_problems(f: Field, value: Any, *, one: bool = False) -> list[str]:
    if not isinstance(value, list | tuple):
        return [f"{f.name} is not a list"]
    names = {name for name, _ in f.members}
    problems = []
    for index, item in enumerate(value):
        label = f.name if one else f"{f.name}[{index}]"
        if not isinstance(item, Mapping):
            problems.append(f"{label} is not a mapping")
            continue
        unknown = set(item) - names
        if unknown:
            problems.append(f"{label} has unknown members: {sorted(unknown)}")
        bad = [name for name, kind in f.members if _member_problem(kind, item.get(name))]
        if bad:
            problems.append(f"{label} has members of the wrong type: {bad}")
    return problems
