"""Crawlers for component tests, built on the project's own settings as ``crawler/settings.py`` writes them.

Components read their settings without fallbacks: a component built on bare Scrapy settings would miss
the project's defaults. :func:`project_defaults` holds the settings the project adds (not Scrapy's, so a
test crawler keeps Scrapy's behaviour apart from the component under test).
"""

from __future__ import annotations

from typing import Any

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.settings import default_settings
from scrapy.utils.test import get_crawler

import crawler.settings


def project_defaults() -> dict[str, Any]:
    """The settings crawler/settings.py adds to Scrapy's, with their defaults."""
    return {
        name: value
        for name, value in vars(crawler.settings).items()
        if name.isupper() and not hasattr(default_settings, name)
    }


def project_crawler(
    spidercls: type[Spider] | None = None, settings_dict: dict[str, Any] | None = None
) -> Crawler:
    """An unstarted crawler with the project's defaults under *settings_dict*."""
    return get_crawler(spidercls, {**project_defaults(), **(settings_dict or {})})
