"""Many crawl workers on one Redis frontier: a shared request queue and seen-set, fleet-wide host pacing.

Nothing here imports ``redis`` or ``scrapy_redis`` until a crawl runs with ``FRONTIER_URL`` set, so a
single-machine crawl needs neither. :func:`frontier_settings` gives the settings that turn a crawl into a
fleet worker; :class:`crawler.frontier.addon.FrontierAddon` wires the components:

- ``scheduler``: scrapy-redis's scheduler and dupefilter on shared keys, with a queue that *leases* each
  request it hands out to this worker until the engine is done with it;
- ``core``: the Redis side (Lua scripts): joining, leases, heartbeats, the drain check, host pacing;
- ``pacing``: a downloader middleware that reserves each request's send time per host in Redis;
- ``extension``: heartbeat, lease acknowledgement, seeding, staying alive until the frontier is drained;
- ``stage``: the fleet's side of the stage (one stage file per worker, ``COMPLETE`` once drained).
"""

from __future__ import annotations

from crawler.frontier.addon import default_worker_name, frontier_settings

__all__ = ["default_worker_name", "frontier_settings"]
