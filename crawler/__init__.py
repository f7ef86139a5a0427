"""eventcrawl: a polite crawler and Hugging Face dataset publisher for conference event pages."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("eventcrawl")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
