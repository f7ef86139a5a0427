"""HTTP cache that revalidates every stored page, never keeps errors or personal data, and can be purged.

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
- :class:`BoundedFilesystemCacheStorage` (``HTTPCACHE_STORAGE``): one file per stored response, written
  whole or not at all and checked against its length and sha256 on every read; personal data is stripped
  before anything is written. Purging by age: ``HTTPCACHE_MAX_AGE_DAYS`` (0 = keep forever) and
  ``HTTPCACHE_PURGE_ON_CLOSE`` purge the spider's cache when it closes, and the stats
  ``httpcache/purged_entries``, ``httpcache/purged_bytes``, ``httpcache/entries``, ``httpcache/bytes``,
  ``httpcache/broken_entries`` (stored bodies found damaged and fetched again) and
  ``httpcache/not_stored_encoding`` (answers in a content encoding the storage cannot strip) and
  ``httpcache/write_errors`` report it.

Ages: an entry's age is the time since it was last stored or revalidated (its file's mtime).
``HTTPCACHE_EXPIRATION_SECS`` (Scrapy's, 0 = never) makes older entries invisible to the crawl, which then
downloads the page in full and overwrites the entry; purging deletes entries from disk. :func:`purge_cache`
and :func:`cache_size` work on any cache directory, for a command line; they also count and purge the
directories of the earlier layout (a directory of part files per entry, ``pickled_meta`` last).

Why one file per entry: measured on 700 stored pages of 49 KB, writing the seven part files of Scrapy's
layout with a sync each took 2.1 ms an entry, one synced file 0.39 ms and SQLite in WAL mode 0.16-0.38 ms;
one file needs no sync at all, since its own length and hash tell a whole entry from a torn one. One file
keeps what a fleet needs (workers on several machines sharing the state directory, where SQLite's WAL
does not work) and purging by mtime; the only DBM this Python offers (``dbm.dumb``) loses its index when
the process is killed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import queue
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from stat import S_ISREG
from time import time
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.httpcache import HttpCacheMiddleware
from scrapy.extensions.httpcache import RFC2616Policy
from scrapy.http import Headers
from scrapy.responsetypes import responsetypes
from scrapy.utils.project import data_path

from crawler import stats_keys as keys
from crawler.cache.entry import (
    ENTRY_SUFFIX,
    TEMP_SUFFIX,
    BodyForm,
    BodyReader,
    BrokenEntry,
    EntryHeader,
    StoredRead,
    decode_entry,
    encode_entry,
    is_json_type,
    new_entry,
    store_entry,
    write_entry,
)
from crawler.extensions.workers import WorkerPool, crawler_pool

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

# The earlier layout: a directory of part files per entry, this one written last.
META_FILE = "pickled_meta"
_VALIDATORS = (b"If-None-Match", b"If-Modified-Since")
_VALIDATORS_SET_META = "_httpcache_validators_set"
_SECONDS_PER_DAY = 86400.0
# Not stored: the body is stored decoded and stripped (its length and encoding change), and cookies are
# the site's business with one client, not a page's content.
_BODY_HEADERS = (b"Content-Length", b"Content-Encoding", b"Transfer-Encoding")
_DROPPED_HEADERS = frozenset({*(h.lower() for h in _BODY_HEADERS), b"set-cookie"})
_IDENTITY = frozenset({b"", b"identity"})
# Entries encoded but not yet on disk, at most: the crawl waits rather than hold more in memory.
_WRITE_QUEUE = 64


# -- personal data ------------------------------------------------------------------------------------


def content_encodings(response: Response) -> tuple[bytes, ...]:
    """The response's content encodings, in the order they were applied (identity left out)."""
    return tuple(
        e.strip().lower()
        for value in response.headers.getlist(b"Content-Encoding")
        for e in value.split(b",")
        if e.strip().lower() not in _IDENTITY
    )


# -- size and purge -----------------------------------------------------------------------------------


# Every regular file under a cache directory (with its stat), by the directory that holds it.
_Files = dict[Path, list[tuple[Path, os.stat_result]]]


def _scan(root: Path) -> _Files:
    """One walk of the tree under ``root``, where sizing and purging each walked it several times."""
    files: _Files = {}
    for dirpath, _, names in os.walk(root):
        directory = Path(dirpath)
        found = files[directory] = []
        for name in names:
            path = directory / name
            try:
                stat = path.stat()
            except OSError:
                continue
            if S_ISREG(stat.st_mode):
                found.append((path, stat))
    return files


def _ending(files: _Files, suffix: str) -> list[tuple[Path, os.stat_result]]:
    return sorted(f for found in files.values() for f in found if f[0].name.endswith(suffix))


def _legacy_dirs(files: _Files) -> list[Path]:
    """Entry directories of the earlier layout (their metadata file written last)."""
    return sorted(d for d, found in files.items() if any(p.name == META_FILE for p, _ in found))


def _tree_bytes(files: _Files, under: Path) -> int:
    return sum(
        stat.st_size
        for directory, found in files.items()
        if directory == under or under in directory.parents
        for _, stat in found
    )


def cache_size(cache_dir: str | os.PathLike[str]) -> tuple[int, int]:
    """Entries (stored responses) and bytes (all files) under *cache_dir*; zero when it does not exist (a
    walk of it finds nothing)."""
    root = Path(cache_dir)
    files = _scan(root)
    return len(_ending(files, ENTRY_SUFFIX)) + len(_legacy_dirs(files)), _tree_bytes(files, root)


def purge_cache(
    cache_dir: str | os.PathLike[str], max_age_seconds: float, now: float | None = None
) -> dict[str, int]:
    """Delete the entries under *cache_dir* last stored or revalidated more than *max_age_seconds* ago.

    Partial entries (an interrupted write) that old go too, and so do the empty directories left behind
    (not *cache_dir* itself). Returns the entries removed and kept, their bytes (the removed ones' with
    the partial entries'), and the partial entries removed (temporary files, or part directories without
    metadata); all zero when *cache_dir* does not exist (a walk of it finds nothing).
    """
    root = Path(cache_dir)
    cutoff = (time() if now is None else now) - max_age_seconds
    files = _scan(root)
    removed = removed_bytes = kept = kept_bytes = partial = 0
    gone: set[Path] = set()
    for entry, stat in _ending(files, ENTRY_SUFFIX):
        if stat.st_mtime < cutoff:
            entry.unlink(missing_ok=True)
            gone.add(entry)
            removed += 1
            removed_bytes += stat.st_size
        else:
            kept += 1
            kept_bytes += stat.st_size
    for temp, stat in _ending(files, TEMP_SUFFIX):
        if stat.st_mtime < cutoff:
            temp.unlink(missing_ok=True)
            gone.add(temp)
            removed_bytes += stat.st_size
            partial += 1
    legacy = _legacy_dirs(files)
    for entry_dir in legacy:
        size = _tree_bytes(files, entry_dir)
        if (entry_dir / META_FILE).stat().st_mtime < cutoff:
            shutil.rmtree(entry_dir)
            removed += 1
            removed_bytes += size
        else:
            kept += 1
            kept_bytes += size
    for entry_dir, found in sorted(files.items()):
        left = [(p, stat) for p, stat in found if p not in gone]
        if entry_dir == root or entry_dir in legacy or not left or (entry_dir / META_FILE).exists():
            continue
        if max(stat.st_mtime for _, stat in left) < cutoff and not any(
            p.suffix == ENTRY_SUFFIX for p, _ in left
        ):
            removed_bytes += _tree_bytes(files, entry_dir)
            shutil.rmtree(entry_dir)
            partial += 1
    for directory in sorted(files, key=lambda d: len(d.parts), reverse=True):
        if directory != root and directory.is_dir() and not any(directory.iterdir()):
            directory.rmdir()
    return {
        "removed_entries": removed,
        "removed_bytes": removed_bytes,
        "kept_entries": kept,
        "kept_bytes": kept_bytes,
        "removed_partial": partial,
    }


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
    async def spider_closed(self, spider: Spider) -> None:  # type: ignore[override]  # Scrapy awaits it
        # Entries still being written by worker processes are on disk before the storage closes.
        drain = getattr(self.storage, "drain", None)
        if drain is not None:
            await drain()
        self.storage.close_spider(spider)

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
            # The stored response takes the 304's headers; a 304's Content-Length and Content-Encoding are
            # not the stored body's (stored decoded).
            for name in _BODY_HEADERS:
                response.headers.pop(name, None)
        result = super().process_response(request, response)
        if revalidated and result is not response:
            self.stats.inc_value("httpcache/hit_304")
        return result


class BoundedFilesystemCacheStorage:
    """One file per stored response, written whole or not at all, checked on every read.

    An entry is ``<HTTPCACHE_DIR>/<spider>/<fp[:2]>/<fp>.entry``: a JSON header line (URL, status, headers,
    the body's length and sha256) and then the body (see :func:`encode_entry`). It is written to a
    temporary file and then renamed into place: the rename is the commit point, so a kill at any moment
    leaves the old entry or the complete new one. Whatever happened to the disk anyway (a power loss), a
    body that does not match its stored length and sha256 is never used: the storage reports no entry, so
    the request goes out without validators, ``httpcache/broken_entries`` counts it and the new answer
    replaces the entry.

    Entries are built (decoded, stripped of personal data by :func:`new_entry`, hashed) and written by a
    worker process when the crawl has them (``WORKER_PROCESSES``), else by a thread of their own; every one
    is written when the spider closes, and a crash before that loses the entries not yet written, never a
    whole one. A spider with a ``stored_body_reader(request, response)`` method that returns a
    :data:`BodyReader` for an answer has that answer's decoded body read by the same worker job, which
    the worker pool keeps for the request (``WorkerPool.kept_for``): the body is sent to a worker once.
    ``ETag`` and ``Last-Modified`` are kept, so revalidation still works. A response that came
    from this cache (a 304 refreshing it) is stored as it is: its body was stripped when first stored.
    """

    def __init__(self, settings: BaseSettings) -> None:
        self.cachedir = data_path(settings["HTTPCACHE_DIR"])
        self.expiration_secs = settings.getint("HTTPCACHE_EXPIRATION_SECS")
        self.max_age_seconds = settings.getfloat("HTTPCACHE_MAX_AGE_DAYS") * _SECONDS_PER_DAY
        self.purge_on_close = settings.getbool("HTTPCACHE_PURGE_ON_CLOSE")
        self.max_size = settings.getint("DOWNLOAD_MAXSIZE")
        self.stats: StatsCollector | None = None
        self._writes: queue.Queue[tuple[Path, bytes] | None] = queue.Queue(_WRITE_QUEUE)
        self._writer: threading.Thread | None = None
        self._workers: WorkerPool | None = None
        self._reader_for: Callable[[Request, Response], BodyReader | None] | None = None
        self._write_errors = 0
        # Store jobs under way in worker processes (a callback, not a task each, sees each one end).
        self._in_workers: set[asyncio.Future[StoredRead[object]]] = set()

    def open_spider(self, spider: Spider) -> None:
        self._fingerprinter = spider.crawler.request_fingerprinter
        self.stats = spider.crawler.stats
        self._workers = crawler_pool(spider.crawler)
        self._reader_for = getattr(spider, "stored_body_reader", None)
        # Syncing a file waits on the disk for milliseconds: a thread of its own keeps the crawl going.
        self._writer = threading.Thread(target=self._write_entries, name="httpcache-writer", daemon=True)
        self._writer.start()

    def _write_entries(self) -> None:
        while True:
            job = self._writes.get()
            if job is None:
                return
            path, data = job
            try:
                write_entry(path, data)
            except OSError as exc:
                self._write_errors += 1
                logger.warning("Could not store %s in the HTTP cache: %s", path, exc)

    def _stored(self, path: Path, job: asyncio.Future[StoredRead[object]]) -> None:
        self._in_workers.discard(job)
        if job.cancelled():
            return
        error = job.exception()
        if error is not None:  # a disk error, or the worker pool gave the job up (JobFailed)
            self._write_errors += 1
            logger.warning("Could not store %s in the HTTP cache: %s", path, error)
            return
        if not job.result().stored:
            self._count(keys.HTTPCACHE_NOT_STORED_ENCODING)

    async def drain(self) -> None:
        """Wait until every entry handed to a worker process is on disk."""
        while self._in_workers:
            await asyncio.gather(*self._in_workers, return_exceptions=True)
            await asyncio.sleep(0)  # the jobs' callbacks run on the loop's next turn

    def flush(self) -> None:
        """Wait until every entry handed to the writer is on disk."""
        if self._writer is not None:
            self._writes.put(None)
            self._writer.join()
            self._writer = None

    def spider_dir(self, spider: Spider) -> Path:
        return Path(self.cachedir, spider.name)

    def entry_path(self, spider: Spider, request: Request) -> Path:
        key = self._fingerprinter.fingerprint(request).hex()
        return self.spider_dir(spider) / key[:2] / f"{key}{ENTRY_SUFFIX}"

    def _count(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)

    def close_spider(self, spider: Spider) -> None:
        self.flush()
        stats = spider.crawler.stats
        if self._write_errors:
            stats.set_value("httpcache/write_errors", self._write_errors)
        if self.purge_on_close and self.max_age_seconds > 0:
            result = purge_cache(self.spider_dir(spider), self.max_age_seconds)
            stats.set_value("httpcache/purged_entries", result["removed_entries"])
            stats.set_value("httpcache/purged_bytes", result["removed_bytes"])
        entries, size = cache_size(self.spider_dir(spider))
        stats.set_value("httpcache/entries", entries)
        stats.set_value("httpcache/bytes", size)

    def retrieve_response(self, spider: Spider, request: Request) -> Response | None:
        path = self.entry_path(spider, request)
        try:
            with path.open("rb") as fh:
                mtime = os.fstat(fh.fileno()).st_mtime
                if 0 < self.expiration_secs < time() - mtime:
                    return None
                data = fh.read()
        except FileNotFoundError:
            return None
        try:
            header, body = decode_entry(data)
        except BrokenEntry as exc:
            self._count("httpcache/broken_entries")
            logger.warning("Cached answer for %s is broken (%s): fetching it again", request.url, exc)
            return None
        headers = Headers(
            {k.encode("latin-1"): [v.encode("latin-1") for v in vs] for k, vs in header["headers"]}
        )
        url = header["response_url"]
        cls = responsetypes.from_args(headers=headers, url=url, body=body)
        request.meta["cache_timestamp"] = header["timestamp"]
        return cls(
            url=url,
            status=header["status"],
            headers=headers,
            body=body,
            flags=list(header.get("flags") or []),
            request=request,
            protocol=header.get("protocol"),
        )

    def store_response(self, spider: Spider, request: Request, response: Response) -> None:
        header = entry_header(request, response)
        path = self.entry_path(spider, request)
        if "cached" in response.flags:
            # Read from this cache (a 304 refreshed it): its body was stripped when it was first stored.
            data = encode_entry(header, response.body)
        else:
            form = (
                content_encodings(response),
                is_json_type(response.headers.get(b"Content-Type") or b""),
                self.max_size,
            )
            if self._workers is not None:
                self._store_in_worker(path, header, request, response, form)
                return
            built = new_entry(header, response.body, form)
            if built is None:
                self._count(keys.HTTPCACHE_NOT_STORED_ENCODING)
                return
            data = built[0]
        if self._writer is None:  # not opened for a spider: write in this thread
            write_entry(path, data)
        else:
            self._writes.put((path, data))

    def _store_in_worker(
        self, path: Path, header: EntryHeader, request: Request, response: Response, form: BodyForm
    ) -> None:
        """Decoded, stripped, hashed and written by a worker process; drain() waits for it. A spider that
        will read this body has the worker read it in the same job."""
        workers = self._workers
        assert workers is not None
        reader = self._reader_for(request, response) if self._reader_for is not None else None
        job = workers.submit(store_entry, path, header, response.body, form, reader)
        if reader is not None:
            workers.keep_for(request, job)
        self._in_workers.add(job)
        job.add_done_callback(functools.partial(self._stored, path))


def entry_header(request: Request, response: Response) -> EntryHeader:
    """What an entry keeps of an answer besides its body."""
    return {
        "url": request.url,
        "method": request.method,
        "status": response.status,
        "response_url": response.url,
        "timestamp": time(),
        "headers": [
            (name.decode("latin-1"), [v.decode("latin-1") for v in values])
            for name, values in response.headers.items()
            if name.lower() not in _DROPPED_HEADERS
        ],
        # "cached" is added on every read; stored, it would pile up once per revalidation.
        "flags": [flag for flag in response.flags if flag != "cached"],
        "protocol": response.protocol,
    }
