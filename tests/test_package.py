"""The package itself: its version, read from the installed metadata only when asked for."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest

import crawler


def test_the_version_is_read_when_first_asked_for() -> None:
    code = (
        "import sys, crawler\n"
        "print('importlib.metadata' in sys.modules)\n"
        "print(crawler.__version__)\n"
        "from crawler import __version__\n"
        "print(__version__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", version("eventcrawl"), version("eventcrawl")]


def test_an_unknown_attribute_is_still_an_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'versions'"):
        _ = crawler.versions
