"""Whether requests a server logged kept a pace, allowing for when a loaded machine logs them.

A server logs a request when its thread gets a core: on a loaded 2-core machine that can be tens of
milliseconds after the client sent it, and one gap then shrinks by what the next one grows. The client
kept a delay when every gap is within that noise of it, and the gaps together are no shorter than their
delays (less one late first arrival).
"""

from __future__ import annotations

from collections.abc import Sequence

# Seconds a request may be logged later than it was sent, on the suite's busiest runs.
ARRIVAL_NOISE = 0.05


def spaced_at_least(between: Sequence[float], delay: float) -> bool:
    """True when the gaps ``between`` logged requests show they were sent at least ``delay`` apart."""
    return (
        bool(between)
        and min(between) >= delay - ARRIVAL_NOISE
        and sum(between) >= len(between) * delay - ARRIVAL_NOISE
    )
