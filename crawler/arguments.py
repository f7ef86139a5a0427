"""Checks on what an operator passes a crawl: event ids, base URLs and Scrapy settings.

One place validates them for the command line and the configuration file alike; each check returns the
value to use or raises :class:`ArgumentError` with one line that says what to pass instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scrapy.settings import default_settings

from crawler import settings as project_settings


class ArgumentError(ValueError):
    """An argument or configuration value cannot be used; the message says what to pass instead."""


_EVENT_ID = re.compile(r"^\s*0*([0-9]{1,12})\s*$")
_EVENT_PATH = re.compile(r"/events/0*([0-9]{1,12})(?:[/?#-]|$)")
# Where the JSON:API lives below its base URL; a base given with it is accepted and trimmed.
API_PATH = "/api/v1"


def parse_event_id(text: str | int) -> str:
    """An Underline event id from ``502``, ``"502"`` or an event page URL (``.../events/502/...``)."""
    value = str(text)
    match = _EVENT_ID.match(value)
    if match:
        return match.group(1)
    if "://" in value:
        found = _EVENT_PATH.search(urlsplit(value).path)
        if found:
            return found.group(1)
    raise ArgumentError(
        f"event {value!r} is neither an event id (a number such as 502) nor an event page URL "
        "(https://underline.io/events/502/...)"
    )


def parse_event_ids(values: Iterable[str | int]) -> tuple[str, ...]:
    """Every event once, in the order first given."""
    ids: dict[str, None] = {}
    for value in values:
        ids.setdefault(parse_event_id(value), None)
    if not ids:
        raise ArgumentError("name at least one event (--event-id 502)")
    return tuple(ids)


def check_base_url(url: str, *, what: str) -> str:
    """An http(s) base URL without a trailing slash."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ArgumentError(f"{what} {url!r} must be an http:// or https:// URL, e.g. https://underline.io")
    if parts.query or parts.fragment:
        raise ArgumentError(f"{what} {url!r} must not carry a query or fragment")
    return url.strip().rstrip("/")


def check_api_base(url: str, *, what: str = "--api-base") -> str:
    """The API's base URL; one given with the ``/api/v1`` path is accepted without it."""
    base = check_base_url(url, what=what)
    if base.endswith(API_PATH):
        base = base[: -len(API_PATH)]
    return base


def _defaults() -> dict[str, Any]:
    from crawler.frontier.settings import DEFAULTS as frontier_defaults

    names: dict[str, Any] = {}
    for module in (default_settings, project_settings):
        names.update({k: getattr(module, k) for k in dir(module) if k.isupper()})
    names.update(frontier_defaults)
    return names


def check_setting(key: str, value: Any) -> Any:
    """A Scrapy setting named and typed as a known setting's default; unknown names are refused.

    A value given as text (``-s DOWNLOAD_DELAY=1.5``) is checked for the default's type and passed on
    as text, which Scrapy's typed getters read.
    """
    defaults = _defaults()
    if key not in defaults:
        close = [k for k in defaults if k.split("_")[0] == key.split("_")[0]][:3]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ArgumentError(f"unknown setting {key!r}{hint}")
    default = defaults[key]
    kind = type(default)
    if isinstance(default, bool):
        if isinstance(value, bool) or str(value).strip().lower() in ("true", "false", "1", "0"):
            return value
        raise ArgumentError(f"setting {key} takes True or False, not {value!r}")
    if isinstance(default, int | float) and default is not None:
        try:
            number = float(value) if isinstance(value, str) else value
            if not isinstance(number, int | float) or isinstance(number, bool):
                raise TypeError
        except (TypeError, ValueError):
            raise ArgumentError(f"setting {key} takes a number, not {value!r}") from None
        if kind is int and isinstance(value, str) and not re.fullmatch(r"\s*-?\d+\s*", value):
            raise ArgumentError(f"setting {key} takes a whole number, not {value!r}")
        if number < 0:
            raise ArgumentError(f"setting {key} must not be negative, got {value!r}")
    return value


def check_settings(pairs: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> dict[str, Any]:
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    return {key: check_setting(key, value) for key, value in items}


def check_writable(directory: Path, *, what: str) -> Path:
    """``directory`` exists or can be made, and this process may write into it."""
    probe = directory
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise ArgumentError(f"{what} {str(directory)!r} is not writable ({str(probe)!r} refuses writes)")
    return directory
