"""The configuration of a scheduled run: a TOML file, with CLI flags that override it.

```toml
[crawl]
event_ids = ["502", "469"]  # or event_id = "502"; an event page URL works too
web_base = "..."             # default: UNDERLINE_WEB_BASE in crawler/settings.py
api_base = "..."             # default: UNDERLINE_API_BASE
state = "state"
page_budget = 0              # most lecture-page requests a night (0: no limit); UNDERLINE_PAGE_BUDGET
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
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from crawler.arguments import (
    ArgumentError,
    check_api_base,
    check_base_url,
    check_settings,
    parse_event_ids,
)
from crawler.fsutil import UnreadableText, read_text
from crawler.schedule.gate import GateThresholds


class ConfigError(ValueError):
    """The configuration file is missing, not TOML, or has an unknown or mistyped key."""


@dataclass(frozen=True)
class RunConfig:
    event_ids: tuple[str, ...] = ("502",)
    web_base: str | None = None
    api_base: str | None = None
    state: Path = Path("state")
    settings: dict[str, Any] = field(default_factory=dict)
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


def _check(section: str, key: str, value: Any, expected: type | tuple[type, ...]) -> None:
    if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
        raise ConfigError(f"[{section}] {key} has the wrong type ({type(value).__name__})")


def _coverage_floors(table: Any, path: Path) -> dict[str, float]:
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
    try:
        data = tomllib.loads(read_text(path, f"configuration file {path}"))
    except UnreadableText as exc:
        raise ConfigError(str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"configuration file {path} is not valid TOML: {exc}") from None
    unknown = set(data) - {*_SECTIONS, "gate"}
    if unknown:
        raise ConfigError(f"unknown section(s) in {path}: {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    for section, keys in _SECTIONS.items():
        table = data.get(section, {})
        for key, value in table.items():
            if key not in keys:
                raise ConfigError(f"unknown key [{section}] {key} in {path}")
            _check(section, key, value, keys[key])
            values[key] = value
    gate_fields = {f.name: f.type for f in fields(GateThresholds)}
    gate_values: dict[str, Any] = {}
    for key, value in data.get("gate", {}).items():
        if key not in gate_fields:
            raise ConfigError(f"unknown key [gate] {key} in {path}")
        if key == "min_coverage":
            gate_values[key] = _coverage_floors(value, path)
            continue
        _check("gate", key, value, (int, float))
        _check_gate_range(key, value, path)
        gate_values[key] = value
    if "event_id" in values and "event_ids" in values:
        raise ConfigError(f"[crawl] takes event_id or event_ids, not both, in {path}")
    events = values.pop("event_ids", None) or [values.pop("event_id", "502")]
    values.pop("event_id", None)
    try:
        values["event_ids"] = parse_event_ids(events)
        for key in ("web_base", "api_base"):
            if values.get(key):
                check = check_api_base if key == "api_base" else check_base_url
                values[key] = check(values[key], what=f"[crawl] {key}")
        values["settings"] = check_settings(values.get("settings", {}))
        if "page_budget" in values:
            # The table's key is the setting under a shorter name; it wins over [crawl.settings].
            budget = values.pop("page_budget")
            values["settings"].update(check_settings({"UNDERLINE_PAGE_BUDGET": budget}))
    except ArgumentError as exc:
        raise ConfigError(f"{exc} (in {path})") from None
    for key in ("remove_lectures", "redact_authors", "retire_events"):
        if key in values:
            if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in values[key]):
                raise ConfigError(f"[publish] {key} must be a list of strings (in {path})")
            values[key] = tuple(str(v).strip() if key == "remove_lectures" else str(v) for v in values[key])
    _check_removals(values.get("remove_lectures", ()), values.get("redact_authors", ()), path)
    if values.get("retire_events"):
        try:
            values["retire_events"] = parse_event_ids(values["retire_events"])
        except ArgumentError as exc:
            raise ConfigError(f"[publish] retire_events: {exc} (in {path})") from None
    for key in ("state", "out"):
        if key in values:
            values[key] = Path(values[key])
    if "anthology" in values:
        values["anthology"] = Path(values["anthology"]) if values["anthology"] else None
    for key in ("push_to_hub", "revision", "name", "web_base", "api_base"):
        if values.get(key) == "":
            values[key] = None
    try:
        return _checked_retired(RunConfig(**values, gate=GateThresholds(**gate_values)))
    except ConfigError as exc:
        raise ConfigError(f"{exc} (in {path})") from None
