"""HTTP cache that revalidates every stored page, never keeps errors, and can be purged by age.

Components for Scrapy's HTTP cache (``HTTPCACHE_ENABLED = True``):

- :class:`RevalidatingPolicy` (``HTTPCACHE_POLICY``): a stored response is never served as is; every request
  for it goes out with ``If-None-Match`` / ``If-Modified-Since`` built from the stored ``ETag`` /
  ``Last-Modified`` (whatever ``Cache-Control`` says, ``max-age=0, must-revalidate`` included). A ``304``
  answer means the stored response is used (its headers refreshed from the 304 and stored again); anything
  else replaces it. Only 2xx and 3xx answers are stored (never 206 or 304): every 4xx and 5xx is left out, the
  statuses that trigger backoff (408, 429, 5xx) as well as 403 (often a temporary block) and 404 / 410 (a page
  missing during one crawl must not stay missing in the next), and so is ``Cache-Control: no-store``.
  ``HTTPCACHE_IGNORE_HTTP_CODES`` and ``HTTPCACHE_IGNORE_SCHEMES`` are honoured. A cached error is never
  served after a failed revalidation: the error goes up to the backoff middleware, which retries.
- :class:`RevalidatingCacheMiddleware` (replaces ``HttpCacheMiddleware`` at 900): Scrapy's middleware plus the
  stats ``httpcache/conditional`` (requests sent with validators) and ``httpcache/hit_304`` (stored responses
  used after a 304; Scrapy's ``httpcache/revalidate`` counts the same under this policy), and it drops
  validators this policy put on a request when the request comes back (a retry) and its stored response is
  gone, so that a bare 304 never reaches the spider.
- :class:`BoundedFilesystemCacheStorage` (``HTTPCACHE_STORAGE``): Scrapy's filesystem layout, written so that
  a crash mid-write leaves no entry rather than a half-written one (the metadata file, which makes an entry
  exist, is written last and atomically), with purging by age: ``HTTPCACHE_MAX_AGE_DAYS`` (0 = keep forever)
  and ``HTTPCACHE_PURGE_ON_CLOSE`` (False) purge the spider's cache when it closes, and the stats
  ``httpcache/purged_entries``, ``httpcache/purged_bytes``, ``httpcache/entries``, ``httpcache/bytes`` report
  it.

Ages: an entry's age is the time since it was last stored or revalidated (the mtime of its ``pickled_meta``).
``HTTPCACHE_EXPIRATION_SECS`` (Scrapy's, 0 = never) makes older entries invisible to the crawl, which then
downloads the page in full and overwrites the entry; purging deletes entries from disk. :func:`purge_cache`
and :func:`cache_size` work on any cache directory, for a command line.
"""

from __future__ import annotations

import os
import pickle
import shutil
from dataclasses import dataclass
from pathlib import Path
from time import time
from typing import TYPE_CHECKING, Any

from scrapy.downloadermiddlewares.httpcache import HttpCacheMiddleware
from scrapy.extensions.httpcache import FilesystemCacheStorage, RFC2616Policy
from scrapy.utils.python import to_bytes
from w3lib.http import headers_dict_to_raw

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

META_FILE = "pickled_meta"
_VALIDATORS = (b"If-None-Match", b"If-Modified-Since")
_VALIDATORS_SET_META = "_httpcache_validators_set"
_SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class CacheSize:
    entries: int
    bytes: int


@dataclass(frozen=True)
class PurgeResult:
    removed_entries: int
    removed_bytes: int  # entries and partial entries
    kept_entries: int
    kept_bytes: int
    removed_partial: int = 0  # directories left by an interrupted write (files, no metadata)


def _entry_dirs(cache_dir: Path) -> list[Path]:
    return sorted(meta.parent for meta in cache_dir.rglob(META_FILE) if meta.is_file())


def _partial_dirs(cache_dir: Path) -> list[Path]:
    return sorted(
        d
        for d in cache_dir.rglob("*")
        if d.is_dir() and not (d / META_FILE).exists() and any(f.is_file() for f in d.iterdir())
    )


def _tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def cache_size(cache_dir: str | os.PathLike[str]) -> CacheSize:
    """Entries (stored responses) and bytes (all files) under *cache_dir*; zero when it does not exist."""
    root = Path(cache_dir)
    if not root.is_dir():
        return CacheSize(0, 0)
    return CacheSize(len(_entry_dirs(root)), _tree_bytes(root))


def purge_cache(
    cache_dir: str | os.PathLike[str], max_age_seconds: float, now: float | None = None
) -> PurgeResult:
    """Delete the entries under *cache_dir* last stored or revalidated more than *max_age_seconds* ago.

    Partial entries (an interrupted write) whose newest file is that old go too, and so do the empty
    directories left behind (not *cache_dir* itself).
    """
    root = Path(cache_dir)
    if not root.is_dir():
        return PurgeResult(0, 0, 0, 0)
    cutoff = (time() if now is None else now) - max_age_seconds
    removed = removed_bytes = kept = kept_bytes = 0
    for entry in _entry_dirs(root):
        size = _tree_bytes(entry)
        if (entry / META_FILE).stat().st_mtime < cutoff:
            shutil.rmtree(entry)
            removed += 1
            removed_bytes += size
        else:
            kept += 1
            kept_bytes += size
    partial = 0
    for entry in _partial_dirs(root):
        files = [f for f in entry.iterdir() if f.is_file()]
        if max(f.stat().st_mtime for f in files) < cutoff:
            removed_bytes += _tree_bytes(entry)
            shutil.rmtree(entry)
            partial += 1
    for directory in sorted(
        (d for d in root.rglob("*") if d.is_dir()), key=lambda d: len(d.parts), reverse=True
    ):
        if not any(directory.iterdir()):
            directory.rmdir()
    return PurgeResult(removed, removed_bytes, kept, kept_bytes, partial)


class RevalidatingPolicy(RFC2616Policy):
    def __init__(self, settings: BaseSettings) -> None:
        super().__init__(settings)
        self.ignore_http_codes = frozenset(int(c) for c in settings.getlist("HTTPCACHE_IGNORE_HTTP_CODES"))

    def should_cache_response(self, response: Response, request: Request) -> bool:
        if b"no-store" in self._parse_cachecontrol(response):
            return False
        status = response.status
        return 200 <= status < 400 and status not in (206, 304) and status not in self.ignore_http_codes

    def is_cached_response_fresh(self, cachedresponse: Response, request: Request) -> bool:
        self._set_conditional_validators(request, cachedresponse)
        request.meta[_VALIDATORS_SET_META] = any(v in request.headers for v in _VALIDATORS)
        return False

    def is_cached_response_valid(
        self, cachedresponse: Response, response: Response, request: Request
    ) -> bool:
        return response.status == 304


class RevalidatingCacheMiddleware(HttpCacheMiddleware):
    def process_request(self, request: Request, spider: Spider | None = None) -> Request | Response | None:
        if request.meta.pop(_VALIDATORS_SET_META, False):
            for header in _VALIDATORS:
                request.headers.pop(header, None)
        result = super().process_request(request)
        if request.meta.get(_VALIDATORS_SET_META):
            self.stats.inc_value("httpcache/conditional")
        return result

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Request | Response:
        revalidated = response.status == 304 and request.meta.get("cached_response") is not None
        if revalidated:
            # The stored response takes the 304's headers; a 304's Content-Length is not the stored body's.
            response.headers.pop(b"Content-Length", None)
        result = super().process_response(request, response)
        if revalidated and result is not response:
            self.stats.inc_value("httpcache/hit_304")
        return result


class BoundedFilesystemCacheStorage(FilesystemCacheStorage):
    def __init__(self, settings: BaseSettings) -> None:
        super().__init__(settings)
        self.max_age_seconds = settings.getfloat("HTTPCACHE_MAX_AGE_DAYS") * _SECONDS_PER_DAY
        self.purge_on_close = settings.getbool("HTTPCACHE_PURGE_ON_CLOSE")

    def spider_dir(self, spider: Spider) -> Path:
        return Path(self.cachedir, spider.name)

    def size(self, spider: Spider) -> CacheSize:
        return cache_size(self.spider_dir(spider))

    def close_spider(self, spider: Spider) -> None:
        super().close_spider(spider)
        stats = spider.crawler.stats
        if self.purge_on_close and self.max_age_seconds > 0:
            result = purge_cache(self.spider_dir(spider), self.max_age_seconds)
            stats.set_value("httpcache/purged_entries", result.removed_entries)
            stats.set_value("httpcache/purged_bytes", result.removed_bytes)
        size = self.size(spider)
        stats.set_value("httpcache/entries", size.entries)
        stats.set_value("httpcache/bytes", size.bytes)

    def store_response(self, spider: Spider, request: Request, response: Response) -> None:
        rpath = Path(self._get_request_path(spider, request))
        rpath.mkdir(parents=True, exist_ok=True)
        # Without its metadata file an entry does not exist: remove it first, write it last.
        (rpath / META_FILE).unlink(missing_ok=True)
        metadata = {
            "url": request.url,
            "method": request.method,
            "status": response.status,
            "response_url": response.url,
            "timestamp": time(),
        }
        data: dict[str, Any] = {
            key: value
            for key, value in response.to_dict().items()
            if key not in {"url", "status", "headers", "body"}
        }
        # "cached" is added on every read; stored, it would pile up once per revalidation.
        data["flags"] = [flag for flag in data.get("flags") or [] if flag != "cached"]
        files = {
            "meta": to_bytes(repr(metadata)),
            "response_headers": headers_dict_to_raw(response.headers) or b"",
            "response_body": response.body,
            "response_data": pickle.dumps(data, protocol=4),
            "request_headers": headers_dict_to_raw(request.headers) or b"",
            "request_body": request.body,
        }
        for name, content in files.items():
            with self._open(rpath / name, "wb") as f:
                f.write(content)
        partial = rpath / f"{META_FILE}.partial"
        with self._open(partial, "wb") as f:
            pickle.dump(metadata, f, protocol=4)
        os.replace(partial, rpath / META_FILE)
