"""Misbehaviour the replica can put on: throttling, server errors, resets, slow and truncated answers
(:class:`FaultProfile`, drawn at random), and particular answers broken every time (:class:`SiteFaults`).

A profile draws from its own seeded ``random.Random``, one decision per request in arrival order, so a
fixed seed and a fixed request sequence give the same faults every time. No URL is faulted more than
``max_consecutive`` times in a row: a client that retries always gets through in the end.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any
from urllib.parse import urlsplit

from crawler.replica.layout import Lecture, ReplicaSite
from crawler.replica.pages import JsonDoc, script_json

# Fault kinds, also what the request log records.
THROTTLED = "429"
SERVER_ERROR = "500"
UNAVAILABLE = "503"
RESET = "reset"
SLOW = "slow"
TRUNCATED = "truncated"
STRICT = "strict"

PROFILE_NAMES: tuple[str, ...] = ("none", "flaky", "robots", "strict")


@dataclass(frozen=True)
class Fault:
    kind: str
    retry_after: str | None = None
    delay: float = 0.0

    @property
    def status(self) -> int | None:
        """The HTTP status the fault answers with (None when it answers normally or not at all)."""
        if self.kind in (THROTTLED, STRICT):
            return 429
        if self.kind == SERVER_ERROR:
            return 500
        if self.kind == UNAVAILABLE:
            return 503
        return None


@dataclass
class FaultProfile:
    """What goes wrong and how often. Rates are shares of all requests (robots.txt excepted)."""

    name: str = "none"
    seed: int = 0
    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_503: float = 0.0
    rate_reset: float = 0.0
    rate_slow: float = 0.0
    rate_truncated: float = 0.0
    slow_seconds: float = 1.0
    retry_after_max: int = 2
    # Share of 429 answers whose Retry-After is an HTTP date instead of a number of seconds.
    retry_after_date_share: float = 0.3
    max_consecutive: int = 3
    crawl_delay: float | None = None
    robots_disallow: tuple[str, ...] = ()
    strict_rate: float | None = None
    strict_window: float = 4.0
    _rng: random.Random = field(init=False, repr=False, compare=False)
    _lock: threading.Lock = field(init=False, repr=False, compare=False)
    _streaks: dict[str, int] = field(init=False, repr=False, compare=False)
    _recent: dict[str, deque[float]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Back to the state of a fresh profile with the same seed."""
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()
        self._streaks = {}
        self._recent = {}

    @property
    def fault_rate(self) -> float:
        return (
            self.rate_429
            + self.rate_500
            + self.rate_503
            + self.rate_reset
            + self.rate_slow
            + self.rate_truncated
        )

    def robots_extra(self) -> str:
        """Lines appended to the replica's robots.txt."""
        lines = [f"Disallow: {path}" for path in self.robots_disallow]
        if self.crawl_delay is not None:
            delay = self.crawl_delay
            lines.append(f"Crawl-delay: {int(delay) if float(delay).is_integer() else delay}")
        return "".join(line + "\n" for line in lines)

    def decide(self, target: str, user_agent: str, now: float) -> Fault | None:
        """The fault for one request to ``target`` (path with query) at ``now`` (seconds since the epoch)."""
        with self._lock:
            if self.strict_rate is not None and self._over_rate(user_agent, now):
                return Fault(STRICT, retry_after="1")
            if self.fault_rate <= 0:
                return None
            fault = self._draw(now)
            streak = self._streaks.get(target, 0)
            failing = fault is not None and fault.kind != SLOW
            if failing and streak >= self.max_consecutive:
                fault = None
                failing = False
            if failing:
                self._streaks[target] = streak + 1
            else:
                self._streaks.pop(target, None)
            return fault

    def _over_rate(self, user_agent: str, now: float) -> bool:
        assert self.strict_rate is not None
        recent = self._recent.setdefault(user_agent, deque())
        recent.append(now)
        while recent and recent[0] <= now - self.strict_window:
            recent.popleft()
        return len(recent) > self.strict_rate * self.strict_window

    def _draw(self, now: float) -> Fault | None:
        # Always the same number of draws per request, so one request's fault never shifts the next ones.
        roll = self._rng.random()
        seconds = self._rng.randint(1, max(1, self.retry_after_max))
        as_date = self._rng.random() < self.retry_after_date_share
        edge = 0.0
        for kind, rate in (
            (THROTTLED, self.rate_429),
            (SERVER_ERROR, self.rate_500),
            (UNAVAILABLE, self.rate_503),
            (RESET, self.rate_reset),
            (SLOW, self.rate_slow),
            (TRUNCATED, self.rate_truncated),
        ):
            edge += rate
            if roll < edge:
                if kind == THROTTLED:
                    # An HTTP date has whole seconds: one more second keeps the wait at least `seconds`.
                    after = formatdate(now + seconds + 1, usegmt=True) if as_date else str(seconds)
                    return Fault(kind, retry_after=after)
                if kind == SLOW:
                    return Fault(kind, delay=self.slow_seconds)
                return Fault(kind)
        return None


def named_profile(name: str, seed: int = 0) -> FaultProfile | None:
    """The profile behind ``--faults NAME`` (None for "none"). Raises ValueError for an unknown name."""
    if name == "none":
        return None
    if name == "flaky":
        return FaultProfile(
            name="flaky",
            seed=seed,
            rate_429=0.05,
            rate_500=0.04,
            rate_503=0.04,
            rate_reset=0.03,
            rate_slow=0.02,
            rate_truncated=0.02,
        )
    if name == "robots":
        return FaultProfile(name="robots", seed=seed, crawl_delay=2, robots_disallow=("/events/",))
    if name == "strict":
        return FaultProfile(name="strict", seed=seed, strict_rate=1.5)
    raise ValueError(f"unknown fault profile {name!r}; known: {', '.join(PROFILE_NAMES)}")


# -- breakage of particular answers, every time (no randomness) -----------------------------------

# What ``meta`` an endless listing sends: the real event's page count and total, or none at all.
ENDLESS_META_SMALL = "small"
ENDLESS_META_ABSENT = "absent"
ENDLESS_META_KINDS: tuple[str, ...] = (ENDLESS_META_SMALL, ENDLESS_META_ABSENT)
# A made-up lecture of an endless listing has the id of the real lecture it copies plus this times its round.
ENDLESS_ID_STEP = 10_000_000
# Where an off-origin redirect of a lecture page points (see :func:`redirect_location`).
REDIRECT_LOCALHOST = "localhost"
REDIRECT_SCHEME = "https"
REDIRECT_METADATA = "metadata"
REDIRECT_PORT_PREFIX = "port:"
METADATA_URL = "http://169.254.169.254/latest/meta-data/"
# What a lecture's own resource answers instead of itself (``SiteFaults.resource_answers``).
RESOURCE_GONE = "410"
RESOURCE_UNAVAILABLE = "503"
RESOURCE_LOGIN = "login"
RESOURCE_OTHER = "other"
RESOURCE_ANSWERS: tuple[str, ...] = (RESOURCE_GONE, RESOURCE_UNAVAILABLE, RESOURCE_LOGIN, RESOURCE_OTHER)
# How a request goes without an answer (``SiteFaults.unanswered``): the connection reset; no byte
# sent until the replica stops; the origin going down (every connection of it dropped, none accepted
# after, as a host that went down refuses them).
UNANSWERED_RESET = "reset"
UNANSWERED_TIMEOUT = "timeout"
UNANSWERED_REFUSED = "refused"
UNANSWERED_KINDS: tuple[str, ...] = (UNANSWERED_RESET, UNANSWERED_TIMEOUT, UNANSWERED_REFUSED)


@dataclass(frozen=True)
class SiteFaults:
    """Answers that break the same way every time, for the crawler's robustness tests.

    - ``listing_errors``: listing page number -> how many requests for it answer 500 before it
      answers normally (None: every request); counted across every filter and page size;
    - ``failing_lectures``: lecture ids whose pages answer 503 every time;
    - ``endless_listing``: every listing page past the end brings new lectures (copies of the real ones
      under new ids, each with a page); ``meta`` is the real count (``"small"``) or missing (``"absent"``);
    - ``redirects``: lecture id -> where its page redirects (302): ``"localhost"`` (same port, host
      ``localhost``), ``"https"`` (same host and port, other scheme), ``"metadata"`` (the cloud metadata
      address), ``"port:<n>"`` (``127.0.0.1:<n>``, same path) or an absolute URL;
    - ``swapped_pages``: lecture id -> the id of the lecture whose whole page (JSON included) is served
      at its URLs;
    - ``renamed_attributes``: lecture attribute -> the name it is served under, in the API and (in
      camelCase) in the page JSON, as a site that renamed a field overnight;
    - ``planted_email``: an e-mail address written into every session's name and description and every
      event's description (the welcome text every lecture page shows), as organizers do (see
      :func:`with_planted_email`).
    - ``listing_appends``: lecture id -> text appended to its abstract in the API listing only (its page
      lags the listing);
    - ``stripped_pages``: lecture ids whose pages are served without their ``__NEXT_DATA__``;
    - ``empty_listing_pages``: listing page numbers that answer 200 with no lectures, ``meta`` unchanged;
    - ``dropped_profiles``: lecture ids whose authors' profiles are left out of ``included``, in the
      listing and in the page JSON (``sorted_profiles`` still names them).
    - ``failing_listing_events``: event ids whose listing answers 500 on every page, every time;
    - ``unlisted_lectures``: lecture ids the listings leave out (their ``meta`` counting without them),
      while the lectures' own resources and pages are still served.
    - ``resource_answers``: lecture id -> what its own resource (``/api/v1/thin_lectures/<id>``)
      answers, every time: ``"410"`` (gone), ``"503"`` (an error), ``"login"`` (the log-in page, HTML
      200) or ``"other"`` (the resource of the lecture its page names next);
    - ``unanswered``: request path (no query) -> how a request for it goes unanswered, on either origin:
      ``"reset"``, ``"timeout"`` or ``"refused"`` (see :data:`UNANSWERED_KINDS`).
    """

    listing_errors: Mapping[int, int | None] = field(default_factory=dict)
    failing_lectures: frozenset[str] = frozenset()
    endless_listing: str | None = None
    redirects: Mapping[str, str] = field(default_factory=dict)
    swapped_pages: Mapping[str, str] = field(default_factory=dict)
    renamed_attributes: Mapping[str, str] = field(default_factory=dict)
    planted_email: str | None = None
    listing_appends: Mapping[str, str] = field(default_factory=dict)
    stripped_pages: frozenset[str] = frozenset()
    empty_listing_pages: frozenset[int] = frozenset()
    dropped_profiles: frozenset[str] = frozenset()
    failing_listing_events: frozenset[str] = frozenset()
    unlisted_lectures: frozenset[str] = frozenset()
    resource_answers: Mapping[str, str] = field(default_factory=dict)
    unanswered: Mapping[str, str] = field(default_factory=dict)

    @property
    def edits_listing(self) -> bool:
        """Whether listing answers are edited (see :func:`broken_listing`)."""
        return bool(self.listing_appends or self.empty_listing_pages or self.dropped_profiles)

    def edits_page(self, lecture_id: str) -> bool:
        """Whether the lecture's page is edited (see :func:`broken_page`)."""
        return lecture_id in self.stripped_pages or lecture_id in self.dropped_profiles

    def __post_init__(self) -> None:
        if self.endless_listing is not None and self.endless_listing not in ENDLESS_META_KINDS:
            raise ValueError(f"endless_listing must be one of {', '.join(ENDLESS_META_KINDS)}")
        for target in self.redirects.values():
            if not _redirect_target_ok(target):
                raise ValueError(f"unknown redirect target {target!r}")
        for answer in self.resource_answers.values():
            if answer not in RESOURCE_ANSWERS:
                raise ValueError(f"a resource answers one of {', '.join(RESOURCE_ANSWERS)}, not {answer!r}")
        for how in self.unanswered.values():
            if how not in UNANSWERED_KINDS:
                raise ValueError(f"a request goes unanswered as one of {', '.join(UNANSWERED_KINDS)}")


def _redirect_target_ok(target: str) -> bool:
    if target in (REDIRECT_LOCALHOST, REDIRECT_SCHEME, REDIRECT_METADATA):
        return True
    if target.startswith(REDIRECT_PORT_PREFIX):
        return target.removeprefix(REDIRECT_PORT_PREFIX).isdigit()
    return target.startswith(("http://", "https://"))


def redirect_location(target: str, base_url: str, path: str) -> str:
    """The ``Location`` of an off-origin redirect ``target`` (see :class:`SiteFaults`) of ``path``."""
    parts = urlsplit(base_url)
    port = f":{parts.port}" if parts.port else ""
    if target == REDIRECT_LOCALHOST:
        return f"{parts.scheme}://localhost{port}{path}"
    if target == REDIRECT_SCHEME:
        return f"https://{parts.hostname}{port}{path}"
    if target == REDIRECT_METADATA:
        return METADATA_URL
    if target.startswith(REDIRECT_PORT_PREFIX):
        return f"http://127.0.0.1:{target.removeprefix(REDIRECT_PORT_PREFIX)}{path}"
    return target


def endless_chunk(lectures: Sequence[Lecture], size: int, number: int) -> list[Lecture]:
    """Page ``number`` of an endless listing of ``lectures``: the real page while there is one, then
    copies of the lectures in the same order under new ids, round after round."""
    if not lectures:
        return []
    out = []
    for position in range((number - 1) * size, number * size):
        round_, index = divmod(position, len(lectures))
        source = lectures[index]
        if round_ == 0:
            out.append(source)
        else:
            out.append(dataclasses.replace(source, id=str(int(source.id) + round_ * ENDLESS_ID_STEP)))
    return out


def endless_lecture(lectures: Mapping[str, Lecture], lecture_id: str) -> Lecture | None:
    """The made-up lecture ``lecture_id`` of an endless listing (None when it is not one)."""
    round_, source_id = divmod(int(lecture_id), ENDLESS_ID_STEP)
    source = lectures.get(str(source_id))
    if round_ == 0 or source is None:
        return None
    return dataclasses.replace(source, id=lecture_id)


def with_planted_email(site: ReplicaSite, address: str | None) -> ReplicaSite:
    """``site`` with ``address`` in every session's name (``Orals (chair: <address>)``) and description
    and in every event's description; ``site`` itself when ``address`` is None."""
    if address is None:
        return site
    sessions = {
        key: dataclasses.replace(
            s, name=f"{s.name} (chair: {address})", description=f"{s.description} Questions: {address}."
        )
        for key, s in site.sessions.items()
    }
    events = {
        key: dataclasses.replace(e, description=f"{e.description}\n\nWrite to the organizers: {address}")
        for key, e in site.events.items()
    }
    return dataclasses.replace(site, sessions=sessions, events=events)


# -- answers edited the same way every time -------------------------------------------------------

_NEXT_DATA = re.compile(r'<script id="__NEXT_DATA__" type="application/json">(.*?)</script>', re.S)


def broken_listing(doc: JsonDoc, faults: SiteFaults, number: int) -> JsonDoc:
    """Listing page ``number`` as ``faults`` break it: abstracts appended to, the page emptied (its
    ``meta`` unchanged), authors' profiles left out of ``included``."""
    data = [] if number in faults.empty_listing_pages else list(doc.get("data") or [])
    out = {**doc, "data": data}
    edited = []
    for resource in data:
        addition = faults.listing_appends.get(str(resource.get("id")))
        if addition:
            attributes = dict(resource["attributes"])
            attributes["abstract"] = (attributes.get("abstract") or "") + addition
            resource = {**resource, "attributes": attributes}
        edited.append(resource)
    out["data"] = edited
    gone = {
        str(ref.get("id"))
        for resource in doc.get("data") or []
        if str(resource.get("id")) in faults.dropped_profiles
        for ref in (resource.get("relationships", {}).get("sorted_profiles", {}).get("data") or [])
    }
    if gone:
        out["included"] = [
            r
            for r in doc.get("included") or []
            if not (r.get("type") == "profiles" and str(r.get("id")) in gone)
        ]
    return out


def _without_profiles(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _without_profiles(v) for k, v in node.items()}
        if isinstance(out.get("included"), list):
            out["included"] = [
                i for i in out["included"] if not (isinstance(i, dict) and i.get("type") == "profiles")
            ]
        return out
    if isinstance(node, list):
        return [_without_profiles(v) for v in node]
    return node


def broken_page(html: bytes, lecture_id: str, faults: SiteFaults) -> bytes:
    """The lecture's page as ``faults`` break it: without its ``__NEXT_DATA__``, or with its authors'
    profiles left out of the JSON's ``included``."""
    text = html.decode("utf-8")
    if lecture_id in faults.stripped_pages:
        text = _NEXT_DATA.sub("", text)
    elif lecture_id in faults.dropped_profiles:
        found = _NEXT_DATA.search(text)
        if found is not None:
            tree = _without_profiles(json.loads(found.group(1)))
            text = text[: found.start(1)] + script_json(tree) + text[found.end(1) :]
    return text.encode("utf-8")
