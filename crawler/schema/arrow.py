"""The schema's Arrow and ``datasets`` forms: each column kind's Arrow type and feature, the pyarrow
schema of the ``lectures`` table the Parquet writer uses, the ``datasets.Features`` the card declares, and
the ``lectures`` table of a list of records. All are read off :data:`crawler.schema.FIELDS`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from crawler.schema.columns import Field, Kind, ScalarKind
from crawler.schema.lecture import FIELDS, Lecture

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


def hf_feature(kind: Kind, members: tuple[tuple[str, ScalarKind], ...] = ()) -> Any:
    """The ``datasets`` feature of a kind (imported lazily: datasets is heavy)."""
    import datasets

    if kind == "struct_list":
        return datasets.List({name: hf_feature(k) for name, k in members})
    if kind == "struct":
        return {name: hf_feature(k) for name, k in members}
    if kind == "string_list":
        return datasets.List(datasets.Value("string"))
    if kind == "timestamp":
        return datasets.Value("timestamp[us, tz=UTC]")
    if kind == "bool":
        return datasets.Value("bool")
    if kind == "float":
        return datasets.Value("float64")
    if kind == "int":
        return datasets.Value("int64")
    if kind == "int32":
        return datasets.Value("int32")
    return datasets.Value("string")


def hf_features(fields: tuple[Field, ...] = FIELDS) -> Any:
    """The ``datasets.Features`` matching :func:`arrow_schema` of the same fields."""
    import datasets

    return datasets.Features({f.name: hf_feature(f.kind, f.members) for f in fields})


def lecture_table(lectures: Iterable[Lecture]) -> pa.Table:
    """The ``lectures`` table of these records, column by column, in the schema's order."""
    rows = list(lectures)
    arrays = [pa.array([getattr(row, f.name) for row in rows], type=field_arrow_type(f)) for f in FIELDS]
    return pa.Table.from_arrays(arrays, schema=arrow_schema())
