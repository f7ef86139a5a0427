"""The configuration of a scheduled run: a TOML file, with CLI flags that override it.

```toml
[crawl]
event_ids = ["502", "469"]  # or event_id = "502"; an event page URL works too
web_base = "..."             # default: UNDERLINE_WEB_BASE in crawler/settings.py
api_base = "..."             # default: UNDERLINE_API_BASE
state = "state"
page_budget = 0              # most lecture-page requests a night (0: no limit); UNDERLINE_PAGE_BUDGET
subtitles = false            # read each fetched lecture's subtitle files (transcripts); UNDERLINE_SUBTITLES
slides = false               # read each lecture's slide deck and poster (PDF) into slides; UNDERLINE_SLIDES
[crawl.settings]          # any Scrapy setting
DOWNLOAD_DELAY = 1.0

[publish]
out = "exports/emnlp-2025"
name = "emnlp-2025"
push_to_hub = ""          # ORG/NAME to upload each release
private = false
revision = ""
remove_lectures = []      # lecture ids taken out of every later release, on request
redact_authors = []       # author names or ORCID iDs taken out of every later release
retire_events = []        # event ids taken out of the next release (and not crawled)

[gate]                    # see crawler.schedule.gate.GateThresholds
max_drop = 0.10
```
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from crawler.app.arguments import (
    ArgumentError,
    check_api_base,
    check_base_url,
    check_settings,
    parse_event_ids,
)
from crawler.schedule.gate import GateThresholds
from crawler.state.fsutil import UnreadableText, read_text


class ConfigError(ValueError):
    """The configuration file is missing, not TOML, or has an unknown or mistyped key."""


@dataclass(frozen=True)
class RunConfig:
    event_ids: tuple[str, ...] = ("502",)
    web_base: str | None = None
    api_base: str | None = None
    state: Path = Path("state")
    # Scrapy settings the crawl runs with, over the project's.
    settings: Mapping[str, object] = field(default_factory=dict)
    out: Path = Path("exports/emnlp-2025")
    name: str | None = None
    push_to_hub: str | None = None
    private: bool = False
    revision: str | None = None
    # Removal on request: lecture ids taken out, and authors (names or ORCID iDs) redacted, in every
    # later release and in the change files kept from earlier ones.
    remove_lectures: tuple[str, ...] = ()
    redact_authors: tuple[str, ...] = ()
    # Events taken out of the next release; an event merely left out of event_ids is kept as it was.
    retire_events: tuple[str, ...] = ()
    # The ACL Anthology's collection files to link lectures to their papers with (None: no links).
    anthology: Path | None = None
    gate: GateThresholds = field(default_factory=GateThresholds)

    @property
    def event_id(self) -> str:
        """The first event: the one a single-event configuration names."""
        return self.event_ids[0]

    def with_overrides(self, **overrides: Any) -> RunConfig:
        """This configuration with every given (not None, not empty) value replaced; values are checked."""
        given = {k: v for k, v in overrides.items() if v is not None and v != []}
        try:
            if "event_ids" in given:
                given["event_ids"] = parse_event_ids(given["event_ids"])
            if "web_base" in given:
                given["web_base"] = check_base_url(given["web_base"], what="--web-base")
            if "api_base" in given:
                given["api_base"] = check_api_base(given["api_base"])
            if "settings" in given:
                given["settings"] = {**self.settings, **check_settings(given["settings"])}
            if "retire_events" in given:
                given["retire_events"] = tuple(
                    dict.fromkeys([*self.retire_events, *parse_event_ids(given["retire_events"])])
                )
        except ArgumentError as exc:
            raise ConfigError(str(exc)) from None
        return _checked_retired(replace(self, **given))


def _checked_retired(config: RunConfig) -> RunConfig:
    both = sorted(set(config.event_ids) & set(config.retire_events))
    if both:
        raise ConfigError(
            f"event(s) {', '.join(both)} are both crawled (event_ids) and retired (retire_events): "
            "take them out of one of the two"
        )
    return config


_SECTIONS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "crawl": {
        "event_id": (str, int),
        "event_ids": list,
        "web_base": str,
        "api_base": str,
        "state": str,
        "page_budget": int,
        "subtitles": bool,
        "slides": bool,
        "settings": dict,
    },
    "publish": {
        "out": str,
        "name": str,
        "push_to_hub": str,
        "private": bool,
        "revision": str,
        "remove_lectures": list,
        "redact_authors": list,
        "retire_events": list,
        "anthology": str,
    },
}


def _check(section: str, key: str, value: object, expected: type | tuple[type, ...]) -> None:
    if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
        raise ConfigError(f"[{section}] {key} has the wrong type ({type(value).__name__})")


def _coverage_floors(table: object, path: Path) -> dict[str, float]:
    from crawler.coverage import MONITORED

    if not isinstance(table, dict):
        raise ConfigError(f"[gate.min_coverage] must be a table of field = share (in {path})")
    for name, share in table.items():
        if name not in MONITORED:
            raise ConfigError(f"[gate.min_coverage] {name}: not a monitored field ({', '.join(MONITORED)})")
        _check("gate.min_coverage", name, share, (int, float))
        _check_gate_range(name, share, path)
    return {str(k): float(v) for k, v in table.items()}


def _check_gate_range(key: str, value: float, path: Path) -> None:
    if not math.isfinite(value):
        raise ConfigError(f"[gate] {key} must be a finite number, got {value!r} (in {path})")
    if key == "min_items":
        if value < 0 or value != int(value):
            raise ConfigError(f"[gate] min_items must be a whole number >= 0, got {value!r} (in {path})")
    elif not 0 <= value <= 1:
        raise ConfigError(f"[gate] {key} is a share between 0 and 1, got {value!r} (in {path})")


_LECTURE_ID = re.compile(r"^[0-9]{1,12}$")


def _check_removals(lectures: tuple[str, ...], authors: tuple[str, ...], path: Path) -> None:
    """Removals asked for must name something: a blank entry would match nothing, or everything."""
    from crawler.publish.removals import Redactions

    for lecture_id in lectures:
        if not _LECTURE_ID.match(lecture_id):
            raise ConfigError(
                f"[publish] remove_lectures holds {lecture_id!r}, which is not a lecture id (in {path})"
            )
    try:
        Redactions.parse(authors)
    except ValueError as exc:
        raise ConfigError(f"[publish] {exc} (in {path})") from None


def load_config(path: Path | None) -> RunConfig:
    """Read ``path`` (None gives the defaults); unknown sections or keys are errors, not ignored."""
    if path is None:
        return RunConfig()
    data = _read_toml(path)
    unknown = set(data) - {*_SECTIONS, "gate"}
    if unknown:
        raise ConfigError(f"unknown section(s) in {path}: {', '.join(sorted(unknown))}")
    crawl, publish = (_section(data, section, path) for section in ("crawl", "publish"))
    gate = _gate(data.get("gate", {}), path)
    config = RunConfig(**_crawl_values(crawl, path), **_publish_values(publish, path), gate=gate)
    try:
        return _checked_retired(config)
    except ConfigError as exc:
        raise ConfigError(f"{exc} (in {path})") from None


def _read_toml(path: Path) -> dict[str, object]:
    try:
        data: dict[str, object] = tomllib.loads(read_text(path, f"configuration file {path}"))
    except UnreadableText as exc:
        raise ConfigError(str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"configuration file {path} is not valid TOML: {exc}") from None
    return data


def _table(value: object, name: str, path: Path) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ConfigError(f"[{name}] must be a table (in {path})")
    return value


def _section(data: Mapping[str, object], section: str, path: Path) -> dict[str, object]:
    """The ``[section]`` table, every key known and of its type."""
    table = _table(data.get(section, {}), section, path)
    keys = _SECTIONS[section]
    for key, value in table.items():
        if key not in keys:
            raise ConfigError(f"unknown key [{section}] {key} in {path}")
        _check(section, key, value, keys[key])
    return table


def _gate(value: object, path: Path) -> GateThresholds:
    """The ``[gate]`` table's thresholds over the defaults, each within its range."""
    known = {f.name for f in fields(GateThresholds)}
    thresholds: dict[str, float] = {}
    floors: dict[str, float] | None = None
    for key, given in _table(value, "gate", path).items():
        if key not in known:
            raise ConfigError(f"unknown key [gate] {key} in {path}")
        if key == "min_coverage":
            floors = _coverage_floors(given, path)
            continue
        _check("gate", key, given, (int, float))
        assert isinstance(given, int | float)
        _check_gate_range(key, given, path)
        thresholds[key] = int(given) if key == "min_items" else given
    # Each key is a numeric field of GateThresholds, checked above; mypy cannot tell which one.
    gate = replace(GateThresholds(), **thresholds)  # type: ignore[arg-type]
    return gate if floors is None else replace(gate, min_coverage=floors)


def _crawl_values(table: Mapping[str, object], path: Path) -> dict[str, Any]:
    """The ``[crawl]`` table's values (by :class:`RunConfig` field), checked as the command line's are."""
    if "event_id" in table and "event_ids" in table:
        raise ConfigError(f"[crawl] takes event_id or event_ids, not both, in {path}")
    values: dict[str, Any] = {}
    events = table.get("event_ids") or [table.get("event_id", "502")]
    assert isinstance(events, list)
    try:
        values["event_ids"] = parse_event_ids(events)
        for key in ("web_base", "api_base"):
            given = table.get(key)
            if isinstance(given, str) and given:
                check = check_api_base if key == "api_base" else check_base_url
                values[key] = check(given, what=f"[crawl] {key}")
            elif given == "":
                values[key] = None
        settings = check_settings(_table(table.get("settings", {}), "crawl.settings", path))
        if "page_budget" in table:
            # The table's key is the setting under a shorter name; it wins over [crawl.settings].
            settings.update(check_settings({"UNDERLINE_PAGE_BUDGET": table["page_budget"]}))
        for key, setting in (("subtitles", "UNDERLINE_SUBTITLES"), ("slides", "UNDERLINE_SLIDES")):
            if key in table:
                settings.update(check_settings({setting: table[key]}))
        values["settings"] = settings
    except ArgumentError as exc:
        raise ConfigError(f"{exc} (in {path})") from None
    if "state" in table:
        values["state"] = Path(str(table["state"]))
    return values


def _publish_values(table: Mapping[str, object], path: Path) -> dict[str, Any]:
    """The ``[publish]`` table's values (by :class:`RunConfig` field): removals that name something,
    retired events as event ids."""
    values: dict[str, Any] = {}
    removals = {
        key: _texts(table, key, path) for key in ("remove_lectures", "redact_authors", "retire_events")
    }
    lectures = tuple(text.strip() for text in removals["remove_lectures"] or ())
    _check_removals(lectures, removals["redact_authors"] or (), path)
    if removals["remove_lectures"] is not None:
        values["remove_lectures"] = lectures
    if removals["redact_authors"] is not None:
        values["redact_authors"] = removals["redact_authors"]
    retired = removals["retire_events"]
    if retired is not None:
        try:
            values["retire_events"] = parse_event_ids(retired) if retired else ()
        except ArgumentError as exc:
            raise ConfigError(f"[publish] retire_events: {exc} (in {path})") from None
    if "out" in table:
        values["out"] = Path(str(table["out"]))
    if "anthology" in table:
        values["anthology"] = Path(str(table["anthology"])) if table["anthology"] else None
    if "private" in table:
        values["private"] = bool(table["private"])
    for key in ("name", "push_to_hub", "revision"):
        if key in table:
            values[key] = str(table[key]) or None
    return values


def _texts(table: Mapping[str, object], key: str, path: Path) -> tuple[str, ...] | None:
    """The list of texts (or numbers, taken as texts) under ``key``; None when it is not given."""
    if key not in table:
        return None
    given = table[key]
    assert isinstance(given, list)
    if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in given):
        raise ConfigError(f"[publish] {key} must be a list of strings (in {path})")
    return tuple(str(v) for v in given)
