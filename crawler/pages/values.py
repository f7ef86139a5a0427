"""Values of uncertain type, read into the forms a lecture's fields take.

Every reader here takes whatever the source sent and returns a usable value or None; what could not be
used is described in ``problems`` (messages that never carry an e-mail address).
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any
from urllib.parse import urljoin

from crawler.privacy.emails import scrub_emails
from crawler.schema import parse_timestamp
from crawler.text.normalize import without_surrogates

# The longest URL kept from a source: more is a hostile page, not a link.
MAX_URL_LENGTH = 2_048
# A slug goes into the canonical URL's path: one path segment, nothing a URL would read otherwise.
_SLUG = re.compile(r"^[\w.~%-]{1,300}$")
_SCHEME = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9+.-]*):")


def opt_str(value: Any) -> str | None:
    """A string as given (lone surrogates, which no UTF-8 file can hold, dropped); None otherwise."""
    return without_surrogates(value) if isinstance(value, str) else None


def has_surrogates(value: Any) -> bool:
    """True for a string holding lone surrogates."""
    return isinstance(value, str) and without_surrogates(value) != value


def count(value: Any) -> int | None:
    """A non-negative count from an integer, an integral float or a decimal string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and 0 <= value < 2**53:
        return int(value)
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdecimal() and len(value) < 20:
        return int(value.strip())
    return None


def shown(value: Any) -> str:
    """A short, safe rendering of a value for a problem message (never recurses into it; no e-mail
    address or unprintable surrogate reaches a log)."""
    if isinstance(value, str):
        return scrub_emails(without_surrogates(value[:80]))[0]
    if isinstance(value, float) or (isinstance(value, int) and value.bit_length() < 256):
        return str(value)[:80]
    return f"<{type(value).__name__}>"


def timestamp(value: Any, name: str, problems: list[str]) -> datetime | None:
    """An aware UTC datetime from ISO 8601 text; None (and a problem) for anything else."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            return parse_timestamp(value)
        except (ValueError, OverflowError):
            pass
    problems.append(f"{name} is not an ISO 8601 timestamp: {shown(value)!r}")
    return None


def string_list(value: Any, name: str, singular: str, problems: list[str]) -> list[str]:
    """The strings of a list (others dropped and counted); [] for a missing value."""
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(f"{name} is not a list")
        return []
    kept = [k for k in value if isinstance(k, str)]
    if len(kept) != len(value):
        problems.append(f"{len(value) - len(kept)} {singular}(s) not strings")
    if any(has_surrogates(k) for k in kept):
        problems.append(f"{name} hold lone surrogates (dropped)")
    return [without_surrogates(k) for k in kept]


def optional_bool(value: Any, name: str, problems: list[str]) -> bool | None:
    """A JSON boolean; None (and a problem unless the value is null) for anything else."""
    if value is None or isinstance(value, bool):
        return value
    problems.append(f"{name} is not a bool: {shown(value)!r}")
    return None


# The range of each integer kind of the schema (``int32`` columns are 32-bit, ``int`` ones 64-bit).
INT_RANGES = {"int": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1)}


def optional_int(value: Any, name: str, kind: str, problems: list[str]) -> int | None:
    """A JSON integer in the range of the ``kind`` (``int`` or ``int32``); None (and a problem unless
    the value is null) for anything else: a bool, a fraction, text, a number out of range."""
    if value is None:
        return None
    low, high = INT_RANGES[kind]
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    problems.append(f"{name} is not a {kind}: {shown(value)!r}")
    return None


def optional_float(value: Any, name: str, problems: list[str]) -> float | None:
    """A finite JSON number; None (and a problem unless the value is null) for anything else."""
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    problems.append(f"{name} is not a number: {shown(value)!r}")
    return None


def slug(value: Any, problems: list[str]) -> str | None:
    """A slug that is one URL path segment; None (and a problem) for anything else."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and _SLUG.match(value):
        return value
    if isinstance(value, str):
        problems.append(f"slug is not one URL path segment: {shown(value)!r}")
    return None


def url_scheme(url: str) -> str:
    """The scheme of a URL, lower case; "" for none (a relative URL)."""
    match = _SCHEME.match(url)
    return match[1].lower() if match else ""


def absolute_http_url(value: Any, name: str, base: str | None, problems: list[str]) -> str | None:
    """An absolute http(s) URL: as given when it already is one, else resolved against ``base``.

    A relative URL without a base, another scheme (``javascript:``, ``data:``) or an overlong URL is
    None and a problem.
    """
    text = opt_str(value)
    if text is None or not text.strip():
        return None
    text = text.strip()
    if len(text) > MAX_URL_LENGTH:
        problems.append(f"{name} is longer than {MAX_URL_LENGTH} characters")
        return None
    if url_scheme(text) in ("http", "https"):
        return text
    if url_scheme(text) == "":
        if base is None:
            problems.append(f"{name} is relative and no base URL was given: {shown(text)!r}")
            return None
        try:
            joined = urljoin(base, text)
        except ValueError:
            joined = ""
        if url_scheme(joined) in ("http", "https"):
            return joined
    problems.append(f"{name} is not an http(s) URL: {shown(text)!r}")
    return None
