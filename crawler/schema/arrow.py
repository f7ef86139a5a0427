"""The schema's Arrow and ``datasets`` forms: each column kind's Arrow type (the one type mapping), the
pyarrow schema of a table the Parquet writer uses, and the ``datasets.Features`` the card declares, read off
that schema. All are read off :data:`crawler.schema.FIELDS` unless given other fields.
"""

from __future__ import annotations

import pyarrow as pa

from crawler.schema.columns import Field, Kind, ScalarKind
from crawler.schema.lecture import FIELDS

_ARROW_TYPES: dict[ScalarKind, pa.DataType] = {
    "string": pa.string(),
    "string_list": pa.list_(pa.string()),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "bool": pa.bool_(),
    "float": pa.float64(),
    "int": pa.int64(),
    "int32": pa.int32(),
}


def arrow_type(kind: Kind, members: tuple[tuple[str, ScalarKind], ...] = ()) -> pa.DataType:
    """The Arrow type of a kind (``members`` for a ``struct_list``)."""
    if kind == "struct_list":
        return pa.list_(pa.struct([pa.field(name, _ARROW_TYPES[k]) for name, k in members]))
    if kind == "struct":
        return pa.struct([pa.field(name, _ARROW_TYPES[k]) for name, k in members])
    return _ARROW_TYPES[kind]


def field_arrow_type(f: Field) -> pa.DataType:
    return arrow_type(f.kind, f.members)


def arrow_schema(
    fields: tuple[Field, ...] = FIELDS, description: str = "eventcrawl lecture records"
) -> pa.Schema:
    """The pyarrow schema of a table (the ``lectures`` table unless ``fields`` says another)."""
    return pa.schema(
        [pa.field(f.name, field_arrow_type(f), nullable=f.nullable) for f in fields],
        metadata={"description": description},
    )
