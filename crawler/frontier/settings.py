"""The ``FRONTIER_*`` settings and the settings a fleet worker's crawl runs with.

- ``FRONTIER_URL`` (unset): ``redis://HOST:PORT/DB``; a crawl is a fleet worker only when it is set.
- ``FRONTIER_KEY_PREFIX`` (``eventcrawl``): root of every Redis key; one crawl's keys live under
  ``<prefix>:<spider>:<event id>``, host pacing under ``<prefix>:pace:``.
- ``FRONTIER_HEARTBEAT_TTL`` (30 s): a worker silent this long is dead; its leased requests are re-queued.
- ``FRONTIER_POLL_INTERVAL`` (0.5 s): heartbeat, lease release and shared-queue check period.
- ``FRONTIER_IDLE_TIMEOUT`` (0): seconds a worker with nothing to do goes on waiting while the frontier shows
  no work outstanding (Redis does not answer its drain check) before it closes with
  ``frontier_idle_timeout``; 0 never gives up. Requests queued or leased to any worker, one that died
  included (they come back when its heartbeat expires), and a pending seeding are work outstanding: a worker
  never stops as idle while there is some.
- ``FRONTIER_PACE_ENABLED`` (True): pace every host fleet-wide (one request in flight, the crawl's delay
  between a response and the next request).
- ``FRONTIER_RESET`` (False): start a new crawl when the frontier holds a finished one (never resets a
  running one). Without it a worker that finds the crawl finished has nothing to do and closes.
- ``FRONTIER_RESET_AFTER`` (0: never): start a new crawl when the finished one is at least this many seconds
  old; for scheduled crawls (a worker restarted just after the crawl finished still finds nothing to do).
- ``FRONTIER_SOCKET_TIMEOUT`` (10 s): how long one Redis command may take.
- ``FRONTIER_PACE_FAIL_TIMEOUT`` (60 s): how long a worker that cannot ask Redis for a host's pacing token
  keeps retrying (with backoff, sending nothing to that host) before it stops with
  ``frontier_pace_unavailable``; its requests go back to the queue.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from urllib.parse import urlsplit

from crawler.state.stage import check_worker_name

DEFAULTS: Mapping[str, object] = {
    "FRONTIER_URL": None,
    "FRONTIER_KEY_PREFIX": "eventcrawl",
    "FRONTIER_HEARTBEAT_TTL": 30.0,
    "FRONTIER_POLL_INTERVAL": 0.5,
    "FRONTIER_IDLE_TIMEOUT": 0.0,
    "FRONTIER_PACE_ENABLED": True,
    "FRONTIER_RESET": False,
    "FRONTIER_RESET_AFTER": 0.0,
    "FRONTIER_SOCKET_TIMEOUT": 10.0,
    "FRONTIER_PACE_FAIL_TIMEOUT": 60.0,
}
ADDON = "crawler.frontier.addon.FrontierAddon"
URL_SCHEMES = ("redis", "rediss", "unix")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def default_worker_name() -> str:
    """``<hostname>-<pid>``, made a valid stage worker name."""
    host = _UNSAFE.sub("-", socket.gethostname()).strip("-._") or "worker"
    pid = str(os.getpid())
    return f"{host[: 63 - len(pid)]}-{pid}"


def check_frontier_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in URL_SCHEMES or not (parts.netloc or parts.path):
        raise ValueError(f"--frontier expects redis://HOST:PORT/DB (or rediss://, unix://), got {url!r}")
    return url


def frontier_settings(url: str, worker: str | None) -> Mapping[str, object]:
    """The settings that make this crawl one worker of the fleet sharing the frontier at *url*.

    Raises ``ValueError`` for a URL that is not a Redis URL and ``StageError`` for a bad worker name.
    """
    return {
        "FRONTIER_URL": check_frontier_url(url),
        "STAGE_WORKER": check_worker_name(worker) if worker else default_worker_name(),
        "ADDONS": {ADDON: 0},
    }
