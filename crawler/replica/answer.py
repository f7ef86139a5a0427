"""One answer of the replica, as its handlers send it: the site's pages and API, and the assets origin."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    # Pages and API documents carry validators and may be answered with 304.
    cacheable: bool = False
    # Seconds between small pieces of the body (a hostile page that trickles out).
    drip_seconds: float = 0.0
