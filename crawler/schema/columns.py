"""How a table's columns are declared: a record class's fields, each made with :func:`column`, whose type
gives the column's kind and whose options say the rest (:class:`Column`). :func:`fields_of` reads a record
class into its :class:`Field` tuple, which every consumer derives from.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NewType

# A 32-bit integer column (an ``int`` field is a 64-bit one).
Int32 = NewType("Int32", int)

# Which step of the crawl fills a field of a record (see ``Field.filled_by``).
FilledBy = Literal["parser", "spider", "pipeline", "release"]
ScalarKind = Literal["string", "string_list", "timestamp", "bool", "float", "int", "int32"]
# A ``struct_list`` is an ordered list of records whose members are scalar kinds (see ``Field.members``);
# a ``struct`` is one such record.
Kind = Literal["string", "string_list", "timestamp", "bool", "float", "int", "int32", "struct_list", "struct"]
STRUCT_KINDS = frozenset({"struct_list", "struct"})


@dataclass(frozen=True)
class Column:
    """What a field's declaration in a record class (:class:`crawler.schema.Lecture`, ...) says beyond its
    type: each option, its default and what it means, written once."""

    description: str
    nullable: bool = True
    # Fields that describe the fetch rather than the lecture stay out of the content hash, so an
    # unchanged lecture keeps its hash from one crawl to the next.
    in_content_hash: bool = True
    # False (the default, right for every field added after records were first hashed): the field enters
    # the hash only when it holds a value (not null, not an empty list), so records staged before it
    # existed keep their hash, and neither the stage's stored hashes nor the release history see every
    # lecture as changed because of the schema; such a record may also lack the field. True: the field
    # is hashed even when empty, and a record that is not nullable must hold it (the first fields).
    hashed_when_empty: bool = False
    # A plain attribute of the lecture resource, read alike from the listing (snake_case) and from a
    # page's ``__NEXT_DATA__`` (camelCase): its spellings, the first that carries a value wins. Such a
    # field needs nothing else to be parsed, cross-checked, staged, published and described; a renamed
    # attribute is a new spelling here. Empty for the fields read another way (relationships, the page).
    attribute: tuple[str, ...] = ()
    # An ``attribute`` holding a link: made absolute against the API's base URL, http(s) only.
    link: bool = False
    # Text shown as one line (a title, a name): the normalize step cleans it (NFC, entities, markup,
    # whitespace); each item of a list.
    one_line: bool = False
    # What only the lecture's page (or the request that follows it) gives: a record published from its
    # listing alone lacks it, and never replaces a published row that has it.
    from_page: bool = False
    # A field no crawl can do without: `check-site` fails when none of its sampled lectures has it.
    site_required: bool = False
    # A column the card's statistics read, gathered of every lecture while the rows go one event at a time.
    card_statistic: bool = False
    # The field's name among a listing's parsed fields, when not the record's (``package``: ``is_premium``).
    listing_name: str = ""
    # Who fills the field: the parsers of a lecture's listing and page (``parser``, the default: what
    # the site says of the lecture, read, carried with a page request, cross-checked between the page and
    # its listing and hashed to decide whether the page is fetched again), the spider around them
    # (``spider``: its URLs, the fetch, the subtitles' request), a pipeline step (``pipeline``: the text,
    # the hash) or the release (``release``: what is decided across crawls and sources).
    filled_by: FilledBy = "parser"
    # Decided by the crawl or the dataset's bookkeeping, not said by the site: neither monitored for
    # coverage nor compared between a page and its listing.
    bookkeeping: bool = False
    # Holds URLs of the lecture itself: e-mail addresses in them are replaced by a URL-safe placeholder.
    own_url: bool = False
    # The place of the field's text among the blocks of the lecture the page shows (1: first), in the
    # order the page shows them; 0: not shown as a block of the lecture.
    text_block: int = 0
    # A listing attribute that changes without the lecture changing (a view count): taken from the listing
    # every night, for a lecture whose page is carried over as well as for one fetched, so it never costs
    # a page request; never hashed (neither to decide a fetch nor in the content hash), so a new value is
    # no change of the lecture, and the listing's value wins over the page's, which may lag it.
    volatile: bool = False

    @property
    def meaning(self) -> str:
        """What the column holds, as the card and the documentation say it."""
        if self.volatile:
            return f"{self.description} Refreshed from the listing every night: a new value is no change."
        return self.description

    @property
    def hashed(self) -> bool:
        """Whether the field enters the content hash (and a listing's hashes)."""
        return self.in_content_hash and not self.volatile


@dataclass(frozen=True, kw_only=True)
class Field(Column):
    """A column of a table, as its record class declares it: its options (:class:`Column`), its name and its
    kind read off the field's type."""

    name: str
    kind: Kind
    # The members of a ``struct_list`` or ``struct`` field, in order: (name, kind).
    members: tuple[tuple[str, ScalarKind], ...] = ()

    def __post_init__(self) -> None:
        if (self.kind in STRUCT_KINDS) != bool(self.members):
            raise ValueError(f"{self.name}: members are required for struct fields and only for them")
        if self.attribute and self.kind in STRUCT_KINDS:
            raise ValueError(f"{self.name}: a list of records cannot be a plain attribute")
        if self.link and (self.kind != "string" or not self.attribute):
            raise ValueError(f"{self.name}: only a string attribute can be a link")
        if self.volatile and (not self.attribute or self.from_page):
            raise ValueError(f"{self.name}: only an attribute the listing gives can be volatile")


def column(
    description: str,
    *,
    default: Any = dataclasses.MISSING,
    factory: Callable[[], Any] | None = None,
    compare: bool = True,
    **options: Any,
) -> Any:
    """A field of :class:`Lecture`: its column's description and options, and its default in flight
    (``compare``: whether records that differ only in it are equal, as ``dataclasses.field`` says)."""
    metadata = {"column": Column(description, **options)}
    if factory is not None:
        return dataclasses.field(default_factory=factory, compare=compare, metadata=metadata)
    return dataclasses.field(default=default, compare=compare, metadata=metadata)


def _scalar_kind(hint: Any) -> ScalarKind:
    """The kind of a (possibly optional) scalar type: ``str``, ``list[str]``, ``datetime``, ``bool``."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1:
        hint = args[0]
    if hint is str:
        return "string"
    if hint is bool:
        return "bool"
    if hint is datetime:
        return "timestamp"
    if hint is float:
        return "float"
    if hint is Int32:
        return "int32"
    if hint is int:
        return "int"
    if typing.get_origin(hint) is list and typing.get_args(hint) == (str,):
        return "string_list"
    raise TypeError(f"no column kind for the type {hint!r}")


def _kind_and_members(hint: Any) -> tuple[Kind, tuple[tuple[str, ScalarKind], ...]]:
    """A field's column kind from its type: a TypedDict is a ``struct`` of its members, a list of them a
    ``struct_list``."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1:
        hint = args[0]
    if typing.is_typeddict(hint):
        hints = typing.get_type_hints(hint)
        return "struct", tuple((name, _scalar_kind(t)) for name, t in hints.items())
    inner = typing.get_args(hint)[0] if typing.get_origin(hint) is list else None
    if inner is not None and typing.is_typeddict(inner):
        hints = typing.get_type_hints(inner)
        return "struct_list", tuple((name, _scalar_kind(t)) for name, t in hints.items())
    return _scalar_kind(hint), ()


def fields_of(record: type) -> tuple[Field, ...]:
    """The columns a record class declares with :func:`column`, in order (a field declared otherwise is
    no column: data a subclass keeps beside the record, never written)."""
    hints = typing.get_type_hints(record)
    out = []
    for f in dataclasses.fields(record):
        if "column" not in f.metadata:
            continue
        kind, members = _kind_and_members(hints[f.name])
        out.append(Field(name=f.name, kind=kind, members=members, **dataclasses.asdict(f.metadata["column"])))
    return tuple(out)
