"""Publishing lecture records as a Hugging Face dataset repository.

``publish_release`` builds and checks a release directory (card, Parquet, change file, manifest) and
swaps it into place atomically; ``push_to_hub`` uploads a release in one commit and tags it.
``compute_changes`` and ``apply_removals`` are the pure steps it uses, for other callers too.
"""

from __future__ import annotations

from crawler.publish.changes import compute_changes
from crawler.publish.hub import HubPushError, RetryPolicy, push_to_hub
from crawler.publish.lint import LintProblem, lint_card
from crawler.publish.release import ReleaseError, ReleaseResult, publish_release
from crawler.publish.removals import apply_removals
from crawler.publish.tables import InvalidRecordsError

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
