"""Publishing lecture records as a Hugging Face dataset repository.

``publish_release`` builds and checks a release directory (card, Parquet, manifest) and swaps it into
place atomically; ``push_to_hub`` uploads a release in one commit.
"""

from __future__ import annotations

from crawler.publish.hub import HubPushError, RetryPolicy, push_to_hub
from crawler.publish.lint import LintProblem, lint_card
from crawler.publish.release import ReleaseError, ReleaseResult, publish_release
from crawler.publish.tables import InvalidRecordsError

__all__ = [
    "HubPushError",
    "InvalidRecordsError",
    "LintProblem",
    "ReleaseError",
    "ReleaseResult",
    "RetryPolicy",
    "lint_card",
    "publish_release",
    "push_to_hub",
]
