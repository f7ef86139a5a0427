"""The configuration of a scheduled run: a TOML file, with CLI flags that override it.

```toml
[crawl]
event_id = "502"
web_base = "https://underline.io"
api_base = "https://app.underline.io"
state = "state"
[crawl.settings]          # any Scrapy setting
DOWNLOAD_DELAY = 1.0

[publish]
out = "exports/emnlp-2025"
name = "emnlp-2025"
push_to_hub = ""          # ORG/NAME to upload each release
private = false
revision = ""

[gate]                    # see crawler.schedule.gate.GateThresholds
max_drop = 0.10
```
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from crawler.schedule.gate import GateThresholds


class ConfigError(ValueError):
    """The configuration file is missing, not TOML, or has an unknown or mistyped key."""


@dataclass(frozen=True)
class RunConfig:
    event_id: str = "502"
    web_base: str | None = None
    api_base: str | None = None
    state: Path = Path("state")
    settings: dict[str, Any] = field(default_factory=dict)
    out: Path = Path("exports/emnlp-2025")
    name: str | None = None
    push_to_hub: str | None = None
    private: bool = False
    revision: str | None = None
    gate: GateThresholds = field(default_factory=GateThresholds)

    def with_overrides(self, **overrides: Any) -> RunConfig:
        given = {k: v for k, v in overrides.items() if v is not None}
        if "settings" in given:
            given["settings"] = {**self.settings, **given["settings"]}
        return replace(self, **given)


_SECTIONS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "crawl": {"event_id": (str, int), "web_base": str, "api_base": str, "state": str, "settings": dict},
    "publish": {"out": str, "name": str, "push_to_hub": str, "private": bool, "revision": str},
}


def _check(section: str, key: str, value: Any, expected: type | tuple[type, ...]) -> None:
    if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
        raise ConfigError(f"[{section}] {key} has the wrong type ({type(value).__name__})")


def load_config(path: Path | None) -> RunConfig:
    """Read ``path`` (None gives the defaults); unknown sections or keys are errors, not ignored."""
    if path is None:
        return RunConfig()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"configuration file {path} does not exist") from None
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
        _check("gate", key, value, (int, float))
        gate_values[key] = value
    if "event_id" in values:
        values["event_id"] = str(values["event_id"])
    for key in ("state", "out"):
        if key in values:
            values[key] = Path(values[key])
    for key in ("push_to_hub", "revision", "name", "web_base", "api_base"):
        if values.get(key) == "":
            values[key] = None
    return RunConfig(**values, gate=GateThresholds(**gate_values))
