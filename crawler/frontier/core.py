"""The Redis side of the frontier: one crawl's keys, the Lua scripts that keep them consistent, host pacing.

A crawl's keys live under ``<FRONTIER_KEY_PREFIX>:<spider>:<event id>``:

- ``state`` (hash): ``run`` id, ``seed`` (``pending`` / ``done``) and ``seeder``, ``started_at``, ``done_at``,
  ``done_by``, ``done_epoch``, counters (``leases``, ``staged``, ``workers_joined``);
- ``queue`` (sorted set, scrapy-redis's priority queue format) and ``seen`` (set, scrapy-redis's dupefilter);
- ``workers`` (set of worker sessions), ``alive:<session>`` (a heartbeat key that expires when the worker
  goes silent) and ``leases:<session>`` (hash: every request the worker took from the queue and the engine
  has not finished with, stored as ``<score>:<serialized request>``).

Taking a request moves it from ``queue`` to the worker's ``leases`` in one script; the worker deletes the
lease once the engine is done with the request, which is after the callback's requests were queued and its
items staged. A worker whose heartbeat expired is dead: the next idle worker puts its leases back in the
queue (a worker restarted under the same name does so at once when it joins). Until then its leases look
held, so a worker with nothing to do keeps waiting while any lease is out (it may be the listing page that
queues the rest of the crawl). The frontier is drained when seeding is done, the queue is empty and no
live worker holds a lease; all of that is checked in one script, so a worker's "queued new requests, then
released the lease" is never seen halfway. Pacing keys, ``<prefix>:pace:<download slot>:*``, are shared
by every crawl on the same Redis.

Calls are synchronous redis-py round trips on the reactor thread, as scrapy-redis's own queue makes them.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from collections.abc import Sequence

    from redis import Redis
    from redis.commands.core import Script
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

SEED, JOIN, DONE = "seed", "join", "done"

_REGISTRY: WeakKeyDictionary[Crawler, Frontier] = WeakKeyDictionary()

# Puts one worker's leases back in the queue; shared by joining (this worker's killed run), the drain check
# (dead workers) and leaving.
_REQUEUE_FN = """
local function requeue(leases_key, queue)
  local entries = redis.call('HGETALL', leases_key)
  for i = 2, #entries, 2 do
    local v = entries[i]
    local sep = string.find(v, ':', 1, true)
    redis.call('ZADD', queue, string.sub(v, 1, sep - 1), string.sub(v, sep + 1))
  end
  redis.call('DEL', leases_key)
  return #entries / 2
end
"""

_JOIN = (
    _REQUEUE_FN
    + """
local state, workers, queue, seen = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local me, alive, leases = ARGV[1], ARGV[2], ARGV[3]
if redis.call('HEXISTS', state, 'done_at') == 1 then
  local reset = ARGV[7] == '1'
  if not reset and tonumber(ARGV[8]) > 0 then
    local t = redis.call('TIME')
    local done_epoch = tonumber(redis.call('HGET', state, 'done_epoch') or '0')
    reset = tonumber(t[1]) + tonumber(t[2]) / 1000000 - done_epoch >= tonumber(ARGV[8])
  end
  if not reset then
    return {'done', redis.call('HGET', state, 'run'), 0}
  end
  for _, w in ipairs(redis.call('SMEMBERS', workers)) do
    redis.call('DEL', leases .. w, alive .. w)
  end
  redis.call('DEL', state, workers, queue, seen)
end
-- An earlier session under this worker's name was this worker, killed: its requests come back now, not
-- when its heartbeat expires (a session is "<worker>.<hex>", and worker names may hold dots).
local reclaimed = 0
for _, w in ipairs(redis.call('SMEMBERS', workers)) do
  if w ~= me and string.match(w, '^(.*)%.%x+$') == ARGV[9] then
    reclaimed = reclaimed + requeue(leases .. w, queue)
    redis.call('DEL', alive .. w)
    redis.call('SREM', workers, w)
  end
end
local role = 'join'
if redis.call('HEXISTS', state, 'run') == 0 then
  redis.call('HSET', state, 'run', ARGV[5], 'seed', 'pending', 'seeder', me, 'started_at', ARGV[6])
  role = 'seed'
elseif redis.call('HGET', state, 'seed') ~= 'done' then
  local seeder = redis.call('HGET', state, 'seeder')
  if not seeder or redis.call('EXISTS', alive .. seeder) == 0 then
    redis.call('HSET', state, 'seeder', me)
    role = 'seed'
  end
end
if redis.call('SADD', workers, me) == 1 then
  redis.call('HINCRBY', state, 'workers_joined', 1)
end
redis.call('SET', alive .. me, ARGV[6], 'PX', ARGV[4])
return {role, redis.call('HGET', state, 'run'), reclaimed}
"""
)

_LEASE = """
local top = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #top == 0 then
  return false
end
redis.call('ZREM', KEYS[1], top[1])
local id = redis.call('HINCRBY', KEYS[3], 'leases', 1)
redis.call('HSET', KEYS[2], id, top[2] .. ':' .. top[1])
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('SET', KEYS[5], ARGV[3], 'PX', ARGV[2])
return {id, top[1]}
"""

_DRAIN = (
    _REQUEUE_FN
    + """
local state, workers, queue, seen = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local me, alive, leases = ARGV[1], ARGV[2], ARGV[3]
if redis.call('HEXISTS', state, 'done_at') == 1 then
  return {'done', 0}
end
local requeued, busy = 0, 0
for _, w in ipairs(redis.call('SMEMBERS', workers)) do
  if redis.call('EXISTS', alive .. w) == 0 then
    requeued = requeued + requeue(leases .. w, queue)
    redis.call('SREM', workers, w)
  elseif redis.call('HLEN', leases .. w) > 0 then
    busy = busy + 1
  end
end
if requeued > 0 then
  return {'requeued', requeued}
end
if redis.call('HGET', state, 'seed') ~= 'done' then
  local seeder = redis.call('HGET', state, 'seeder')
  if not seeder or redis.call('EXISTS', alive .. seeder) == 0 then
    redis.call('HSET', state, 'seeder', me)
    return {'seed', 0}
  end
  return {'seeding', 0}
end
if redis.call('ZCARD', queue) > 0 then
  return {'queued', 0}
end
if busy > 0 then
  return {'busy', busy}
end
local t = redis.call('TIME')
local epoch = t[1] .. '.' .. string.format('%06d', t[2])
redis.call('HSET', state, 'done_at', ARGV[4], 'done_by', me, 'done_epoch', epoch)
redis.call('DEL', queue, seen)
return {'done', 1}
"""
)

_LEAVE = (
    _REQUEUE_FN
    + """
local n = requeue(KEYS[1], KEYS[2])
redis.call('DEL', KEYS[4])
redis.call('SREM', KEYS[3], ARGV[1])
return n
"""
)

# Host pacing: a token per download slot. Whoever holds it may send one request to the host; it is released
# when the response (or the error) is back, and the host is free again ``interval`` later. Every send is
# then an interval after the previous response arrived, so after the previous request reached the server,
# however late a busy worker sends; and one request is in flight per host in the whole fleet. Times are the
# Redis server's (microseconds), so the workers' clocks do not matter. The holder is the key of its
# heartbeat: a dead holder's token is taken over.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] and redis.call('EXISTS', holder) == 1 then
  return {0, tonumber(ARGV[3])}
end
local free_at = tonumber(redis.call('GET', KEYS[2]) or '0')
if now < free_at then
  return {0, free_at - now}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, 0}
"""

_RELEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
local interval = tonumber(ARGV[2])
local free_at = now + interval
if free_at > tonumber(redis.call('GET', KEYS[2]) or '0') then
  redis.call('SET', KEYS[2], string.format('%.0f', free_at), 'PX', math.floor(interval / 1000) + 1000)
end
return 1
"""


# The crawl's state on the frontier: the worker, its session, the Redis URL (password hidden) and the
# crawl's ``state`` hash, its counters as numbers.
FrontierSummary = dict[str, str | int]


class FrontierUnavailable(RuntimeError):
    """The frontier's Redis cannot be reached."""


class CrawlKeys:
    """The Redis keys of one crawl on the frontier."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.state = f"{namespace}:state"
        self.queue = f"{namespace}:queue"
        self.seen = f"{namespace}:seen"
        self.workers = f"{namespace}:workers"
        self.alive_prefix = f"{namespace}:alive:"
        self.leases_prefix = f"{namespace}:leases:"


@dataclass(frozen=True)
class Drain:
    """What the drain check found: ``done`` (``flipped`` when this worker ended the crawl), ``requeued``
    (a dead worker's leases went back to the queue), ``seed`` (this worker must seed: the seeder died),
    ``seeding``, ``queued`` or ``busy`` (*count* workers whose heartbeat has not expired hold requests)."""

    status: str
    count: int = 0

    @property
    def flipped(self) -> bool:
        return self.status == DONE and self.count == 1

    @property
    def outstanding(self) -> bool:
        """Whether the crawl still has work somewhere: every answer but ``done``. A lease is outstanding
        whoever holds it: a worker that died holding one looks busy until its heartbeat expires, and only
        a worker still there then puts the request back in the queue."""
        return self.status != DONE


def crawl_namespace(prefix: str, spider: Spider) -> str:
    event_id = getattr(spider, "event_id", None)
    parts = [prefix, spider.name] + ([str(event_id)] if event_id not in (None, "") else [])
    return ":".join(parts)


def redacted(url: str) -> str:
    """*url* without its password, for logs and reports."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[-1]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + netloc))


def _text(value: object) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _now() -> str:
    return datetime.now(UTC).isoformat()


class Frontier:
    """This worker's view of the shared frontier; one per crawler (:meth:`of`)."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        url = settings.get("FRONTIER_URL")
        if not url:
            raise FrontierUnavailable("FRONTIER_URL is not set")
        self.url: str = url
        self.prefix: str = settings.get("FRONTIER_KEY_PREFIX")
        self.ttl = settings.getfloat("FRONTIER_HEARTBEAT_TTL")
        self.socket_timeout = settings.getfloat("FRONTIER_SOCKET_TIMEOUT")
        self.reset = settings.getbool("FRONTIER_RESET")
        self.reset_after = settings.getfloat("FRONTIER_RESET_AFTER")
        self.worker: str = settings.get("STAGE_WORKER")
        # The worker name may be reused by a restart; the session must not be.
        self.session = f"{self.worker}.{secrets.token_hex(4)}"
        self.keys: CrawlKeys | None = None
        self.role: str | None = None
        self.run: str | None = None
        self.drained = False
        # Requests that an earlier session of this worker (killed) held, put back in the queue on joining.
        self.reclaimed = 0
        self.held: dict[int, Request] = {}
        # Leases the engine is done with that Redis has not been told of yet (the call failed): sent with
        # the next heartbeat. One left unsent would make this worker look busy for ever.
        self.unacked: list[int] = []
        self._client: Redis | None = None
        self._scripts: dict[str, Script] = {}

    @classmethod
    def of(cls, crawler: Crawler) -> Frontier:
        frontier = _REGISTRY.get(crawler)
        if frontier is None:
            frontier = cls(crawler)
            _REGISTRY[crawler] = frontier
        return frontier

    @property
    def client(self) -> Redis:
        if self._client is None:
            import redis

            client = redis.Redis.from_url(
                self.url,
                socket_timeout=self.socket_timeout,
                socket_connect_timeout=self.socket_timeout,
                health_check_interval=30,
            )
            try:
                client.ping()
            except redis.RedisError as exc:
                where = redacted(self.url)
                raise FrontierUnavailable(f"the frontier at {where} does not answer: {exc}") from exc
            self._client = client
        return self._client

    def _script(self, name: str, source: str) -> Script:
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = self.client.register_script(source)
        return script

    def _keys(self) -> CrawlKeys:
        if self.keys is None:
            raise RuntimeError("the frontier is not open")
        return self.keys

    def _mine(self) -> tuple[str, str]:
        """This session's leases hash and heartbeat key (holding a pacing token is holding it as this
        live session: its heartbeat key)."""
        keys = self._keys()
        return keys.leases_prefix + self.session, keys.alive_prefix + self.session

    @property
    def ttl_ms(self) -> int:
        return max(1, int(self.ttl * 1000))

    def open(self, spider: Spider) -> str:
        """Join the crawl of *spider* on the frontier (once); returns the role: seed, join or done."""
        if self.role is not None:
            return self.role
        keys = self.keys = CrawlKeys(crawl_namespace(self.prefix, spider))
        role, run, reclaimed = self._script("join", _JOIN)(
            keys=[keys.state, keys.workers, keys.queue, keys.seen],
            args=[
                self.session,
                keys.alive_prefix,
                keys.leases_prefix,
                self.ttl_ms,
                secrets.token_hex(8),
                _now(),
                "1" if self.reset else "0",
                max(0.0, self.reset_after),
                self.worker,
            ],
        )
        self.role, self.run, self.reclaimed = _text(role), _text(run), int(reclaimed)
        self.drained = self.role == DONE
        return self.role

    def lease(self) -> tuple[int, bytes] | None:
        """Take the highest-priority request from the queue; it stays leased to this worker until acked."""
        keys = self._keys()
        leases, alive = self._mine()
        found = self._script("lease", _LEASE)(
            keys=[keys.queue, leases, keys.state, keys.workers, alive],
            args=[self.session, self.ttl_ms, _now()],
        )
        if not found:
            return None
        lease_id, data = found
        return int(lease_id), bytes(data)

    def finished(self, live: set[Request] | None) -> list[int]:
        """Leases whose request the engine no longer holds (*live*; None: all of them), forgotten here."""
        done = [i for i, request in self.held.items() if live is None or request not in live]
        for lease_id in done:
            del self.held[lease_id]
        return done

    def keep_leased(self, request: Request) -> bool:
        """Never acknowledge *request*: its lease stays in Redis and the request goes back to the queue
        when this worker leaves or its heartbeat expires. False when no lease of this worker holds it."""
        for lease_id, held in list(self.held.items()):
            if held is request:
                del self.held[lease_id]
                return True
        return False

    def heartbeat(self, acks: Sequence[int] = ()) -> int:
        """Refresh this worker's heartbeat, release *acks* (and those a failed call left unsent); returns
        how many requests wait in the queue. Acks that do not reach Redis are kept for the next call."""
        keys = self._keys()
        leases, alive = self._mine()
        self.unacked = [*self.unacked, *acks]
        pipe = self.client.pipeline(transaction=False)
        pipe.set(alive, _now(), px=self.ttl_ms)
        pipe.sadd(keys.workers, self.session)
        if self.unacked:
            pipe.hdel(leases, *self.unacked)
        pipe.zcard(keys.queue)
        queued = int(pipe.execute()[-1])
        self.unacked = []
        return queued

    def drain(self) -> Drain:
        keys = self._keys()
        status, count = self._script("drain", _DRAIN)(
            keys=[keys.state, keys.workers, keys.queue, keys.seen],
            args=[self.session, keys.alive_prefix, keys.leases_prefix, _now()],
        )
        found = Drain(_text(status), int(count))
        if found.status == DONE:
            self.drained = True
        return found

    def mark_seeded(self) -> None:
        self.client.hset(self._keys().state, "seed", "done")

    def count_staged(self, n: int = 1) -> None:
        self.client.hincrby(self._keys().state, "staged", n)

    def leave(self) -> int:
        """Unregister; leases still held go back to the queue. Returns how many did."""
        if self.keys is None or self.role == DONE:
            return 0
        keys = self.keys
        self.held.clear()
        leases, alive = self._mine()
        return int(
            self._script("leave", _LEAVE)(
                keys=[leases, keys.queue, keys.workers, alive],
                args=[self.session],
            )
        )

    def _pace_keys(self, slot: str) -> list[str]:
        return [f"{self.prefix}:pace:{slot}:holder", f"{self.prefix}:pace:{slot}:free-at"]

    def acquire(self, slot: str, hold: float, poll: float) -> float:
        """Try to take the pacing token of download slot *slot* for at most *hold* seconds; 0.0 when taken,
        else the seconds to wait before trying again (*poll* while another worker holds it)."""
        taken, micros = self._script("acquire", _ACQUIRE)(
            keys=self._pace_keys(slot),
            args=[self._mine()[1], max(1, int(hold * 1000)), max(1, int(poll * 1_000_000))],
        )
        return 0.0 if int(taken) else max(1, int(micros)) / 1_000_000

    def release(self, slot: str, interval: float) -> None:
        """Give the token of *slot* back; the host is free again *interval* seconds from now."""
        self._script("release", _RELEASE)(
            keys=self._pace_keys(slot), args=[self._mine()[1], max(0, int(interval * 1_000_000))]
        )

    def summary(self) -> FrontierSummary:
        """The crawl's state on the frontier, for the stage's ``COMPLETE`` marker and the crawl report."""
        out: FrontierSummary = {"url": redacted(self.url), "worker": self.worker, "session": self.session}
        if self.keys is None:
            return out
        out["namespace"] = self.keys.namespace
        state = self.client.hgetall(self.keys.state)
        for key, value in state.items():
            name, text = _text(key), _text(value)
            out[name] = int(text) if name in ("leases", "staged", "workers_joined") else text
        return out
