"""eventcrawl: a polite crawler and Hugging Face dataset publisher for conference event pages."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    # ``__version__`` is read from the installed metadata when first asked for: reading it costs more
    # than importing the package, and most processes (a crawl's workers) never ask.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("eventcrawl")
    except PackageNotFoundError:  # running from a source tree that was never installed
        found = "0.0.0+unknown"
    globals()["__version__"] = found
    return found
