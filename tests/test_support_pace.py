"""Reading a pace from a server's log: one late arrival is forgiven, a client that sends early is not."""

from __future__ import annotations

import pytest

from tests.support.pace import spaced_at_least


@pytest.mark.parametrize(
    ("between", "kept"),
    [
        ([0.40, 0.41, 0.40], True),
        # The second request logged 20 ms late: its gap shrinks, the next grows.
        ([0.42, 0.38, 0.42], True),
        ([0.38, 0.38, 0.38], False),
        ([0.40, 0.34, 0.46], False),
        ([0.0, 0.8], False),
        ([], False),
    ],
)
def test_a_late_arrival_is_forgiven_and_an_early_send_is_not(between: list[float], kept: bool) -> None:
    assert spaced_at_least(between, 0.4) is kept
