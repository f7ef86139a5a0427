"""Reading JSON:API documents whatever the spelling of their member names.

Underline's API answers in snake_case (``held_at``), while the documents embedded in a page's
``__NEXT_DATA__`` use camelCase (``heldAt``); every lookup here accepts either spelling. Nothing
trusts the shape of its input: a member of the wrong type reads as missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from itertools import chain
from typing import Any

Resource = Mapping[str, Any]
ResourceKey = tuple[str, str]

_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])([A-Z])")


def camel_case(name: str) -> str:
    """``held_at`` -> ``heldAt``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def snake_case(name: str) -> str:
    """``heldAt`` -> ``held_at``."""
    return _CAMEL_HUMP.sub(r"_\1", name).lower()


@lru_cache(maxsize=512)
def _spellings(name: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys((name, camel_case(name), snake_case(name))))


def member(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` under its snake_case or camelCase spelling; ``default`` when absent."""
    # ``type(obj) is dict`` first, here and below: JSON decodes to dicts, and the check of the abstract
    # ``Mapping`` (kept for every other mapping) costs several times more on these hot paths.
    if type(obj) is dict or isinstance(obj, Mapping):
        # The name as given is its first spelling, and the one nearly always there.
        if name in obj:
            return obj[name]
        for key in _spellings(name)[1:]:
            if key in obj:
                return obj[key]
    return default


def attr(resource: Any, name: str, default: Any = None) -> Any:
    """An attribute of a resource (``attr(r, "held_at")`` finds ``heldAt`` or ``held_at``)."""
    return member(member(resource, "attributes"), name, default)


def id_text(value: Any) -> str | None:
    """A JSON:API id (or an integer id attribute such as ``event_id``) as a string; None if absent."""
    if type(value) is str:  # the usual case, tried first
        return value.strip() or None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value) if -(10**18) < value < 10**18 else None
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def resource_key(obj: Any) -> ResourceKey | None:
    """``(type, id)`` of a resource or resource identifier; None for anything else."""
    if type(obj) is not dict and not isinstance(obj, Mapping):
        return None
    kind = obj.get("type")
    if not isinstance(kind, str) or not kind:
        return None
    ident = id_text(obj.get("id"))
    return None if ident is None else (kind, ident)


def is_resource(obj: Any) -> bool:
    """True for a mapping with a string ``type`` and a string (or integer) ``id``."""
    return resource_key(obj) is not None


def primary_data(doc: Any) -> list[Resource]:
    """The resources of a document's ``data`` (one or many), invalid entries left out."""
    data = member(doc, "data")
    items = data if isinstance(data, list) else [data]
    return [item for item in items if is_resource(item)]


def is_document(obj: Any) -> bool:
    """True for a mapping whose ``data`` is a resource or a list of resources (possibly empty)."""
    if (type(obj) is not dict and not isinstance(obj, Mapping)) or "data" not in obj:
        return False
    data = obj["data"]
    if isinstance(data, list):
        return all(is_resource(item) for item in data)
    return is_resource(data)


def index_resources(docs: Iterable[Any]) -> dict[ResourceKey, Resource]:
    """Every resource in the documents' ``data`` and ``included``, by ``(type, id)``.

    The first occurrence of a key wins, so callers list the most authoritative document first.
    """
    index: dict[ResourceKey, Resource] = {}
    # A document listed again (a lecture's own document first, then every one) has nothing left to add.
    # Each is held here, so that no id is reused while the documents are read.
    read: dict[int, Any] = {}
    for doc in docs:
        if id(doc) in read:
            continue
        read[id(doc)] = doc
        data = member(doc, "data")
        included = member(doc, "included")
        items = data if isinstance(data, list) else [data]
        for item in chain(items, included if isinstance(included, list) else ()):
            key = resource_key(item)
            if key is not None and key not in index:
                index[key] = item
    return index


def find_documents(tree: Any) -> Iterator[Mapping[str, Any]]:
    """Every JSON:API document inside a JSON tree, in document order.

    A document's own insides are not searched (a relationship ``{"data": {...}}`` would look like
    one). The walk is iterative, so deep trees cannot exhaust the stack.
    """
    stack: list[Any] = [tree]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if type(node) is dict or isinstance(node, Mapping):
            if id(node) in seen:
                continue
            seen.add(id(node))
            if is_document(node):
                yield node
                continue
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend(reversed(node))


def _linkage(resource: Any, name: str) -> Any:
    return member(member(member(resource, "relationships"), name), "data")


def related_keys(resource: Any, name: str) -> list[ResourceKey]:
    """``(type, id)`` of the resources a relationship points at (to-one or to-many)."""
    data = _linkage(resource, name)
    items = data if isinstance(data, list) else [data]
    return [key for key in map(resource_key, items) if key is not None]


def related_id(resource: Any, name: str) -> str | None:
    """The id a to-one relationship points at, even when that resource is not included."""
    data = _linkage(resource, name)
    key = resource_key(data) if not isinstance(data, list) else None
    return key[1] if key else None


def related(resource: Any, name: str, index: Mapping[ResourceKey, Resource]) -> Resource | None:
    """The included resource a to-one relationship points at (``related(r, "event_session", i)``)."""
    data = _linkage(resource, name)
    key = resource_key(data) if not isinstance(data, list) else None
    return index.get(key) if key else None
