"""The type of JSON data as it is read from the site or from disk, before it is given a shape.

Only for data that really is untyped JSON: an API answer, a page's ``__NEXT_DATA__``, a report file. A
lecture has its own type (:class:`crawler.schema.Lecture`) as soon as it is parsed.
"""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
JsonObject: TypeAlias = dict[str, JsonValue]
