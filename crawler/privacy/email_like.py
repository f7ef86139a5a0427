"""How many values of a table look like an e-mail address: the count the dataset card shows.

The count is made by an expression of its own, not the scrubber's (:mod:`crawler.privacy.emails`), and
wider than it on purpose: whatever the scrubber replaces is counted, and so is what it leaves that still
looks like an address, so the card shows an address that got through.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

# What looks like an e-mail address, as an RE2 expression (pyarrow's): a character a local part may
# end with (a word character or punctuation); "@" in any form the scrubber knows, repeated or with any
# spaces (line breaks too) on either side; then a host in brackets, localhost, a bare IPv4 address, or
# labels joined by dots in any form (a plain one with no spaces or spaces on both sides), the last of two
# or more characters with a letter. Left out: "e.g. A @ B", "x = A @ B.T", "pass@1", "mAP@0.5",
# "@emnlp" and "at"/"dot" as plain words. (Spaces and repeated forms are not counted up to a bound:
# RE2's automaton for one grows past its memory and the search falls back to one a hundred times
# slower.)
# Every character Python's \s matches (the scrubber's), not RE2's ASCII few.
_LIKE_SPACE = r"[\s\p{Z}\x{0B}\x{1C}-\x{1F}\x{85}]"
_LIKE_INVISIBLE = r"[\p{Cf}\p{Mn}]"
_LIKE_AT = (
    r"[\s\p{Z}\x{0B}\x{1C}-\x{1F}\x{85}\p{Cf}\p{Mn}]*"
    r"(?:@|\x{FF20}|\x{FE6B}|&#0*64;|&#x0*40;|&commat;|%40"
    rf"|[\[({{<]{_LIKE_SPACE}*at{_LIKE_SPACE}*[\])}}>])+"
    r"[\s\p{Z}\x{0B}\x{1C}-\x{1F}\x{85}\p{Cf}\p{Mn}]*"
)
_LIKE_DOT = (
    rf"(?:{_LIKE_INVISIBLE}*(?:\.|{_LIKE_SPACE}+\.{_LIKE_SPACE}+|\x{{FF0E}}|\x{{3002}}|\x{{FE52}}"
    rf"|&#0*46;|&#x0*2e;|&period;|{_LIKE_SPACE}*[\[({{<]{_LIKE_SPACE}*dot{_LIKE_SPACE}*[\])}}>]{_LIKE_SPACE}*)"
    rf"{_LIKE_INVISIBLE}*)+"
)
_LIKE_LABEL_CHARS = r"\pL\pN\pM\p{Cf}_\-"
_LIKE_LABEL = rf"[{_LIKE_LABEL_CHARS}]+"
# Two or more characters, a letter among them (or a number that is no digit, such as "²": Python's
# [^\W\d_], what the scrubber's top-level domains are made of).
_LIKE_LETTER = r"[\pL\p{Nl}\p{No}]"
_LIKE_LAST_LABEL = (
    rf"(?:{_LIKE_LETTER}[{_LIKE_LABEL_CHARS}]+"
    rf"|[{_LIKE_LABEL_CHARS}][{_LIKE_LABEL_CHARS}]*{_LIKE_LETTER}[{_LIKE_LABEL_CHARS}]*)"
)
EMAIL_LIKE = (
    r"(?i)[\pL\pN\pM\p{Cf}'\x{2019}\"._+\-!#$*=?^`|~/]"
    + _LIKE_AT
    + r"(?:\[[^\]\s]{1,64}\]|localhost|\d{1,3}(?:\.\d{1,3}){3}"
    + rf"|{_LIKE_LABEL}(?:{_LIKE_DOT}{_LIKE_LABEL})*{_LIKE_DOT}{_LIKE_LAST_LABEL})"
)
# Names the detector in a release's manifest: a count made by another one is made again.
EMAIL_LIKE_RULE = hashlib.sha256(EMAIL_LIKE.encode()).hexdigest()[:16]


# How many bytes of strings one regex search takes at most. Arrow compiles the expression again for every
# array it is given (about 30 ms for this one, whatever the array's size), so a table's string values are
# searched together, in as few arrays as this bound allows (it keeps a concatenated array's offsets in range
# and its copy small beside the table).
SEARCH_BYTES = 64 << 20


def email_like_values(lectures: pa.Table) -> int:
    """How many string values of a table contain something shaped like an e-mail address
    (:data:`EMAIL_LIKE`)."""
    found = 0
    for values in _searched_together(leaf for c in lectures.itercolumns() for leaf in _string_leaves(c)):
        # RE2 runs in linear time: Python's re backtracks badly on long texts without an '@'.
        found += pc.sum(pc.match_substring_regex(values, EMAIL_LIKE)).as_py() or 0
    return found


def _searched_together(leaves: Iterable[pa.Array]) -> Iterator[pa.Array]:
    """The string arrays *leaves*, concatenated into arrays of at most :data:`SEARCH_BYTES` each (an array
    larger than that alone)."""
    group: list[pa.Array] = []
    size = 0
    for leaf in leaves:
        if group and size + leaf.nbytes > SEARCH_BYTES:
            yield pa.concat_arrays(group)
            group, size = [], 0
        group.append(leaf)
        size += leaf.nbytes
    if group:
        yield pa.concat_arrays(group)


def _string_leaves(values: Any) -> list[Any]:
    """Every string array inside a column: lists flattened, struct members taken one by one."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        return _string_leaves(pc.list_flatten(values))
    if pa.types.is_struct(values.type):
        return [leaf for i in range(values.type.num_fields) for leaf in _string_leaves(values.field(i))]
    if pa.types.is_string(values.type):
        return [values]
    return []


__all__ = ["EMAIL_LIKE", "EMAIL_LIKE_RULE", "email_like_values"]
