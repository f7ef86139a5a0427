"""Checks on what an operator passes a crawl: event ids, base URLs, Scrapy settings and folders.

One place validates them for the command line and the configuration file alike, before anything is
fetched or written; each check returns the value to use or raises :class:`ArgumentError` with one line
that says what to pass instead.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from scrapy.settings import default_settings

from crawler import settings as project_settings
from crawler.state.fsutil import DamagedFile, UnreadableText, read_json_file, read_text
from crawler.state.layout import StateDir


class ArgumentError(ValueError):
    """An argument or configuration value cannot be used; the message says what to pass instead."""


_EVENT_ID = re.compile(r"^\s*0*([0-9]{1,12})\s*$")
_EVENT_PATH = re.compile(r"/events/0*([0-9]{1,12})(?:[/?#-]|$)")
# Where the JSON:API lives below its base URL; a base given with it is accepted and trimmed.
API_PATH = "/api/v1"


def parse_event_id(text: str | int) -> str:
    """An Underline event id from ``502``, ``"502"`` or an event page URL (``.../events/502/...``)."""
    value = str(text)
    match = _EVENT_ID.match(value)
    if match:
        return match.group(1)
    if "://" in value:
        found = _EVENT_PATH.search(urlsplit(value).path)
        if found:
            return found.group(1)
    raise ArgumentError(
        f"event {value!r} is neither an event id (a number such as 502) nor an event page URL "
        "(https://underline.io/events/502/...)"
    )


def parse_event_ids(values: Iterable[str | int]) -> tuple[str, ...]:
    """Every event once, in the order first given."""
    ids: dict[str, None] = {}
    for value in values:
        ids.setdefault(parse_event_id(value), None)
    if not ids:
        raise ArgumentError("name at least one event (--event-id 502)")
    return tuple(ids)


def check_base_url(url: str, *, what: str) -> str:
    """An http(s) base URL without a trailing slash, and without a user name or password: one would
    end up in the logs, the reports and the published card, so it is refused and never printed."""
    # A user name or password is an '@' in the authority: what precedes the first '/' after the scheme.
    if "@" in url.strip().split("://", 1)[-1].split("/", 1)[0]:
        raise ArgumentError(
            f"{what} must not carry a user name or password (user:password@host); give the site's "
            "address alone"
        )
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ArgumentError(f"{what} {url!r} must be an http:// or https:// URL, e.g. https://underline.io")
    if parts.query or parts.fragment:
        raise ArgumentError(f"{what} {url!r} must not carry a query or fragment")
    try:
        parts.port  # noqa: B018 - urllib checks the port only when it is read
    except ValueError:
        raise ArgumentError(f"{what} {url!r} has a port that is not a number from 0 to 65535") from None
    return url.strip().rstrip("/")


def check_api_base(url: str, *, what: str = "--api-base") -> str:
    """The API's base URL; one given with the ``/api/v1`` path is accepted without it."""
    base = check_base_url(url, what=what)
    if base.endswith(API_PATH):
        base = base[: -len(API_PATH)]
    return base


def _defaults() -> dict[str, object]:
    """Every setting a crawl knows, with its default: Scrapy's and the project's."""
    names: dict[str, object] = {}
    for module in (default_settings, project_settings):
        names.update({k: getattr(module, k) for k in dir(module) if k.isupper()})
    return names


@dataclass(frozen=True)
class Bounds:
    """The values a numeric setting or option can mean: from ``low`` to ``high``, both included unless
    ``low_open`` (then ``low`` itself is refused)."""

    low: float
    high: float = math.inf
    low_open: bool = False

    def holds(self, number: float) -> bool:
        above = number > self.low if self.low_open else number >= self.low
        return above and number <= self.high

    def describe(self) -> str:
        low = f"more than {self.low:g}" if self.low_open else f"at least {self.low:g}"
        return low if self.high == math.inf else f"{low} and at most {self.high:g}"


DAY = 86_400.0
# A delay between requests: none, up to a day (a larger one is a mistake, and stalls the crawl).
SECONDS = Bounds(0.0, DAY)
# A time limit or the period of a check: something above none, up to a day. (Settings where 0 means
# "never", such as FRONTIER_IDLE_TIMEOUT, CLOSESPIDER_TIMEOUT or PROGRESS_INTERVAL, keep 0.)
TIMEOUT = Bounds(0.0, DAY, low_open=True)
AT_LEAST_ONE = Bounds(1.0)
SHARE = Bounds(0.0, 1.0)
# An age in days: up to a century (timedelta takes no more than 999,999,999 days).
DAYS = Bounds(0.0, 36_500.0)

# Settings that a crawl cannot run with outside these bounds. Every other number must be finite and,
# unless its name says it is a priority, not negative.
SETTING_BOUNDS: dict[str, Bounds] = {
    "DOWNLOAD_DELAY": SECONDS,
    "AUTOTHROTTLE_START_DELAY": SECONDS,
    "AUTOTHROTTLE_MAX_DELAY": SECONDS,
    "AUTOTHROTTLE_TARGET_CONCURRENCY": Bounds(0.0, low_open=True),
    "BACKOFF_MIN_DELAY": SECONDS,
    "BACKOFF_MAX_DELAY": SECONDS,
    "BACKOFF_WINDOW": SECONDS,
    "BACKOFF_DELAY_FACTOR": Bounds(1.0, 100.0),
    "ROBOTSTXT_CRAWLDELAY_MAX": SECONDS,
    "DOWNLOAD_TIMEOUT": TIMEOUT,
    "DNS_TIMEOUT": TIMEOUT,
    "CONCURRENT_REQUESTS": AT_LEAST_ONE,
    "CONCURRENT_REQUESTS_PER_DOMAIN": AT_LEAST_ONE,
    "CONCURRENT_ITEMS": AT_LEAST_ONE,
    "REACTOR_THREADPOOL_MAXSIZE": AT_LEAST_ONE,
    "UNDERLINE_PAGE_SIZE": Bounds(1.0, 100.0),
    "UNDERLINE_MAX_LISTING_PAGES": AT_LEAST_ONE,
    "UNDERLINE_REVALIDATE_AFTER_DAYS": DAYS,
    "UNDERLINE_REVALIDATE_SHARE": SHARE,
    "UNDERLINE_PAGE_BUDGET": Bounds(0.0),
    "UNDERLINE_SUBTITLE_MAX_BYTES": AT_LEAST_ONE,
    "HTTPCACHE_MAX_AGE_DAYS": DAYS,
    "FRONTIER_HEARTBEAT_TTL": TIMEOUT,
    "FRONTIER_POLL_INTERVAL": TIMEOUT,
    "FRONTIER_SOCKET_TIMEOUT": TIMEOUT,
    "FRONTIER_PACE_FAIL_TIMEOUT": TIMEOUT,
    # 0 would abandon every page as timed out.
    "WORKER_JOB_TIMEOUT": TIMEOUT,
    # 0 is no period: Scrapy's memory check fails to start, and the memory limit goes unwatched.
    "MEMUSAGE_CHECK_INTERVAL_SECONDS": TIMEOUT,
}
# Settings that hold a base URL of the site: checked as --web-base and --api-base are.
_URL_SETTINGS = ("UNDERLINE_WEB_BASE", "UNDERLINE_API_BASE")


def check_number(value: float, *, what: str, bounds: Bounds) -> float:
    """A finite number within ``bounds``; ``what`` names it in the message (``--delay``)."""
    if not math.isfinite(value) or not bounds.holds(value):
        raise ArgumentError(f"{what} must be a number {bounds.describe()}, not {value!r}")
    return value


def check_setting(key: str, value: object) -> object:
    """A Scrapy setting named and typed as a known setting's default; unknown names are refused, and so
    are numbers no crawl can mean (not finite, negative, or outside :data:`SETTING_BOUNDS`).

    A value given as text (``-s DOWNLOAD_DELAY=1.5``) is checked for the default's type and passed on
    as text, which Scrapy's typed getters read.
    """
    defaults = _defaults()
    if key not in defaults:
        close = [k for k in defaults if k.split("_")[0] == key.split("_")[0]][:3]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ArgumentError(f"unknown setting {key!r}{hint}")
    default = defaults[key]
    kind = type(default)
    if isinstance(default, bool):
        if isinstance(value, bool) or str(value).strip().lower() in ("true", "false", "1", "0"):
            return value
        raise ArgumentError(f"setting {key} takes True or False, not {value!r}")
    if isinstance(default, int | float) and default is not None:
        try:
            number = float(value) if isinstance(value, str) else value
            if not isinstance(number, int | float) or isinstance(number, bool):
                raise TypeError
        except (TypeError, ValueError):
            raise ArgumentError(f"setting {key} takes a number, not {value!r}") from None
        if kind is int and isinstance(value, str) and not re.fullmatch(r"\s*-?\d+\s*", value):
            raise ArgumentError(f"setting {key} takes a whole number, not {value!r}")
        if not math.isfinite(number):
            raise ArgumentError(f"setting {key} takes a finite number, not {value!r}")
        if number < 0 and "PRIORITY" not in key:
            raise ArgumentError(f"setting {key} must not be negative, got {value!r}")
        bounds = SETTING_BOUNDS.get(key)
        if bounds is not None and not bounds.holds(number):
            raise ArgumentError(f"setting {key} must be {bounds.describe()}, not {value!r}")
    if key in _URL_SETTINGS and value is not None:
        if not isinstance(value, str):
            raise ArgumentError(f"setting {key} takes a URL, not {value!r}")
        check = check_api_base if key == "UNDERLINE_API_BASE" else check_base_url
        return check(value, what=f"setting {key}")
    return value


def check_settings(settings: Mapping[str, object]) -> dict[str, object]:
    """Every setting of ``settings`` checked by :func:`check_setting`, in a bag to hand Scrapy."""
    return {key: check_setting(key, value) for key, value in settings.items()}


def check_writable(directory: Path, *, what: str) -> Path:
    """``directory`` exists or can be made, and this process may write into it."""
    probe = directory
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise ArgumentError(f"{what} {str(directory)!r} is not writable ({str(probe)!r} refuses writes)")
    return directory


def check_state_layout(state_dir: Path) -> Path:
    """``state_dir``'s known entries are of the right kind; :class:`DamagedFile` names the first that
    is not and says how to recover. A file where a folder belongs (or the other way round) stops every
    command that works on the directory, so it is found before anything else is done."""
    state = StateDir(state_dir)
    for path in state.checked_folders():
        if path.exists() and not path.is_dir():
            raise DamagedFile(
                path,
                "a file where a folder belongs",
                f"move it aside (mv {path} {path}.damaged) and crawl again",
            )
    for path in state.checked_files():
        if path.is_dir():
            raise DamagedFile(
                path,
                "a folder where a file belongs",
                f"move it aside (mv {path} {path}.damaged); the next command writes a new one",
            )
    return state_dir


def check_release_dir(out_dir: Path, *, what: str = "--out") -> Path:
    """``out_dir`` can take the next release: it does not exist, is empty, or holds an earlier release
    whose manifest and change files read back (a publish carries those into the next release).

    Checked before a crawl, so that a run does not crawl the site to find it cannot publish: a folder
    that is no release is an :class:`ArgumentError`, a damaged release a ``DamagedFile``.
    """
    manifest_path = out_dir / "manifest.json"
    if not out_dir.is_dir():
        return out_dir
    if not manifest_path.exists():
        if any(out_dir.iterdir()):
            raise ArgumentError(
                f"{what} {str(out_dir)!r} exists and is not a release (no manifest.json); name a new or "
                "empty folder, or the folder of an earlier release"
            )
        return out_dir
    recovery = (
        f"restore {out_dir} from the Hub (hf download --repo-type dataset ... --local-dir DIR) or a backup, "
        "or move it aside to publish a first release again"
    )
    if not manifest_path.is_file():
        raise DamagedFile(manifest_path, "not a file", recovery)
    manifest = read_json_file(manifest_path, recovery=recovery)
    change_files = manifest.get("change_files", []) if isinstance(manifest, dict) else None
    if not isinstance(change_files, list) or not all(isinstance(p, str) for p in change_files):
        raise DamagedFile(manifest_path, "not a release manifest", recovery)
    if change_files:
        import pyarrow as pa

        from crawler.publish.changes import ChangeFileSchemaError, check_change_file

        for name in change_files:
            path = out_dir / name
            try:
                check_change_file(path)
            except (OSError, pa.ArrowException, ChangeFileSchemaError) as exc:
                raise DamagedFile(path, f"unreadable change file: {exc}", recovery) from None
    return out_dir


def check_card_template(path: Path, *, what: str = "--card-template") -> Path:
    """A dataset card template that exists, is UTF-8 text, parses as a Jinja template and uses no name
    the card does not define (``{{ no_such_thing }}``, ``{{ x.y }}`` on an undefined ``x``)."""
    import jinja2

    from crawler.publish.card import check_names

    try:
        text = read_text(path, f"{what} {str(path)!r}")
    except UnreadableText as exc:
        raise ArgumentError(str(exc)) from None
    try:
        jinja2.Environment().parse(text)
    except jinja2.TemplateSyntaxError as exc:
        raise ArgumentError(
            f"{what} {str(path)!r} is not a valid template: {exc.message} (line {exc.lineno})"
        ) from None
    check_names(text, where=f"{what} {str(path)!r}")
    return path
