"""The crawl -> stage -> publish flow as a library: every command and the scheduler call it."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from scrapy.settings import Settings

# Our own server on loopback: politeness delays would only slow a crawl of it down.
LOOPBACK_CRAWL_SETTINGS: dict[str, Any] = {
    "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False,
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "LOG_LEVEL": "WARNING",
}


def crawl_settings(
    state_dir: Path,
    *,
    web_base: str | None = None,
    api_base: str | None = None,
    overrides: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
) -> Settings:
    """The Scrapy settings of a crawl into ``state_dir``: the project's, then the caller's overrides."""
    from scrapy.utils.project import get_project_settings

    # Outside a checkout there is no scrapy.cfg to name the settings module.
    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "crawler.settings")
    settings = get_project_settings()
    state_dir = Path(state_dir).resolve()
    settings.set("STAGE_STATE_DIR", str(state_dir), priority="cmdline")
    settings.set("HTTPCACHE_DIR", str(state_dir / "httpcache"), priority="cmdline")
    if web_base:
        settings.set("UNDERLINE_WEB_BASE", web_base, priority="cmdline")
    if api_base:
        settings.set("UNDERLINE_API_BASE", api_base, priority="cmdline")
    pairs = overrides.items() if isinstance(overrides, Mapping) else overrides
    for key, value in pairs:
        settings.set(key, value, priority="cmdline")
    return settings
