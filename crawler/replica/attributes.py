"""The lecture attributes the replica serves beyond those it is built with: where a new listing attribute
of the site is added to the replica, one entry each.

:data:`SERVED_ATTRIBUTES` maps an attribute's name as the API sends it (snake_case) to a function of the
replica's lecture and of the night giving its value as the API sends it: JSON (a string, a bool, a number,
an ISO 8601 timestamp, a list of strings), None for a lecture the site sends it null for. Every lecture
resource the replica serves carries it (the listing's, the lecture's own, the related, next and similar
lectures'), and so does a lecture page's ``__NEXT_DATA__``, camelCased as every attribute there is. The
ground truth reads the expected value from here too (:func:`crawler.replica.layout.ground_truth`), as the
crawl must publish it.

The night is the server's (``ReplicaServer(night=...)``, ``--night``; 0 the first): a value the site
changes every night without the lecture changing (a view count, a ``volatile`` column) is a function of it;
any other value must not depend on it. Each function must be deterministic: the same lecture and night give
the same value in every process.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from crawler.json_types import JsonValue

if TYPE_CHECKING:
    from crawler.replica.layout import Lecture

# An attribute's value for a lecture on a night, as the API sends it.
AttributeValue = Callable[["Lecture", int], JsonValue]

# name (snake_case, as the API sends it) -> its value. Empty: the replica serves the attributes it is
# built with, and nothing more.
SERVED_ATTRIBUTES: Mapping[str, AttributeValue] = {}


def served_attributes(lecture: Lecture, night: int) -> dict[str, JsonValue]:
    """The lecture's registered attributes on ``night``, by API name, in the registry's order."""
    return {name: value(lecture, night) for name, value in SERVED_ATTRIBUTES.items()}
