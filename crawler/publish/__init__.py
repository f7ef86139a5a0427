"""Publishing lecture records as a Hugging Face dataset repository.

``publish_release`` builds and checks a release directory (card, Parquet, change file, manifest) and
swaps it into place atomically; ``push_to_hub`` uploads a release in one commit and tags it.
``compute_changes`` and ``apply_removals`` are the pure steps it uses, for other callers too.

The names are imported when first asked for: importing one module of the package (a crawl reads
:mod:`crawler.publish.removals`) does not import the Hub's client and the release's checks with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crawler.publish.changes import compute_changes
    from crawler.publish.hub import HubPushError, RetryPolicy, push_to_hub
    from crawler.publish.lint import LintProblem, lint_card
    from crawler.publish.manifest import ReleaseError
    from crawler.publish.records import InvalidRecordsError
    from crawler.publish.release import ReleaseResult, publish_release
    from crawler.publish.removals import apply_removals

_MODULE_OF = {
    "HubPushError": "hub",
    "InvalidRecordsError": "records",
    "LintProblem": "lint",
    "ReleaseError": "manifest",
    "ReleaseResult": "release",
    "RetryPolicy": "hub",
    "apply_removals": "removals",
    "compute_changes": "changes",
    "lint_card": "lint",
    "publish_release": "release",
    "push_to_hub": "hub",
}
__all__ = [
    "HubPushError",
    "InvalidRecordsError",
    "LintProblem",
    "ReleaseError",
    "ReleaseResult",
    "RetryPolicy",
    "apply_removals",
    "compute_changes",
    "lint_card",
    "publish_release",
    "push_to_hub",
]


def __getattr__(name: str) -> object:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
