"""What every request for a file a lecture names (a subtitle file, a slide deck, a poster) shares: how it
is asked (only on the site's own hosts, web or API base, any port, or an asset host,
``UNDERLINE_ASSET_HOSTS``; never through the HTTP cache, within a size bound, in a politeness slot of its
own host, revalidated with the validators the stage kept), the validators its answer gives, why one that
brought no file failed, as a row's ``problem`` says it, and what its row keeps of the last stage's
(:class:`FileRows`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.statscollectors import StatsCollector
from scrapy.utils.httpobj import urlparse_cached
from twisted.python.failure import Failure

from crawler.publish.tables import TableSpec
from crawler.schema.sources import KEPT_UNREADABLE, settle_row
from crawler.state.stage_rows import StagedRow
from crawler.urls import ASSET_FILE_META

# The answer statuses a file request's callback reads itself (the rest are failures).
HANDLED_STATUSES = (304, 404, 410)
# The validators a staged row keeps for the next revalidation, by response header.
VALIDATOR_HEADERS = {"etag": b"ETag", "last_modified": b"Last-Modified"}
_CONDITIONAL = {"etag": "If-None-Match", "last_modified": "If-Modified-Since"}


def failure_problem(failure: Failure) -> str:
    """Why a file request brought no file, as the ``problem`` column says it: ``too_large`` when the
    download or its decompression passed the size cap, ``off_host`` for a redirect off the allowed hosts,
    ``robots`` when the host's robots.txt forbids the file, else ``failed``."""
    request = getattr(failure, "request", None)
    meta = request.meta if request is not None else {}
    if meta.get("off_origin"):
        return "off_host"
    error = failure.value
    text = str(error).lower()
    name = type(error).__name__
    if name in ("DownloadCancelledError", "CancelledError") or "max size" in text or "maxsize" in text:
        return "too_large"
    if isinstance(error, IgnoreRequest) and "larger than" in text:
        return "too_large"
    if isinstance(error, IgnoreRequest) and "robots.txt" in text:
        return "robots"
    return "failed"


def response_validators(response: Response) -> dict[str, str]:
    """The validators of a file's answer, as a staged row keeps them."""
    out = {}
    for name, header in VALIDATOR_HEADERS.items():
        value = response.headers.get(header)
        if value:
            out[name] = value.decode("latin-1")
    return out


def asset_file_request(
    url: str,
    *,
    callback: Callable[..., Any],
    errback: Callable[..., Any],
    cb_kwargs: Mapping[str, Any],
    validators: Mapping[str, str],
    max_bytes: int,
    meta: Mapping[str, Any] | None = None,
) -> scrapy.Request:
    """The request for a file at ``url`` (the caller checked its host), asked with ``validators``."""
    headers = {_CONDITIONAL[name]: value for name, value in validators.items() if name in _CONDITIONAL}
    request = scrapy.Request(
        url,
        headers=headers,
        callback=callback,
        errback=errback,
        cb_kwargs=dict(cb_kwargs),
        meta={
            "dont_cache": True,
            # The host check is the guard: an asset host need not be under the site's domains (the
            # spider's allowed_domains), and Scrapy's offsite filter would drop it unseen.
            "allow_offsite": True,
            "download_maxsize": max_bytes,
            "download_warnsize": 0,
            "handle_httpstatus_list": list(HANDLED_STATUSES),
            ASSET_FILE_META: True,
            **(meta or {}),
        },
    )
    # Each host its own politeness slot (Scrapy's slot is the host name alone: an asset origin on another
    # port of the same host would wait behind the site's pages).
    request.meta["download_slot"] = urlparse_cached(request).netloc.lower()
    return request


# A staged row of the component's table (a transcript, a document) with its file's validators.
S = TypeVar("S", bound=StagedRow[Any])


class FileRows(Generic[S]):
    """What a component reading the files lectures name keeps of the last stage's rows: a file's row is
    the last stage's when it says the same (:meth:`settled`), or when its answer is no evidence that the
    text is gone (:meth:`evidence`, the rule of every declared table), and a lecture staged again carries
    its rows (:meth:`carried`). Each component says which table its rows are (whose source says what
    answer takes a text away), which columns name one file among its lecture's (the last of them its
    URL), how its log names a file, and its counters."""

    table: ClassVar[TableSpec]
    matched: ClassVar[tuple[str, ...]]
    label: ClassVar[str]
    kept_unreadable_key: ClassVar[str]
    carried_key: ClassVar[str]

    stats: StatsCollector
    logger: logging.LoggerAdapter[logging.Logger]
    previous: Callable[[str], list[S]]

    def kept(self, row: Mapping[str, Any]) -> S | None:
        """The last stage's row of the file ``row`` names (its ``lecture_id`` and matched columns), as it
        was."""
        for staged in self.previous(str(row["lecture_id"])):
            if all(getattr(staged.record, name) == row[name] for name in self.matched):
                return staged
        return None

    def kept_row(self, record: Any) -> S | None:
        return self.kept({"lecture_id": record.lecture_id, **{n: getattr(record, n) for n in self.matched}})

    def settled(self, found: S) -> S:
        """``found``, or the last stage's row of its file when it says the same (only ``fetched_at`` would
        differ), so that an unchanged file is the same row from one crawl to the next."""
        before = self.kept_row(found.record)
        if before is None:
            return found
        if {**before.record.values(), "fetched_at": None} != {**found.record.values(), "fetched_at": None}:
            return found
        return type(found)(record=before.record, validators=found.validators or before.validators)

    def evidence(self, found: S) -> S:
        """``found``, or the last stage's row of its file when ``found`` has no text and its answer was no
        evidence that the text is gone (only the file's 404 or 410 takes a text away)."""
        record = found.record
        kept = self.kept_row(record)
        source = self.table.source
        assert source is not None  # every table whose rows a crawl reads from files declares one
        _, was_kept = settle_row(
            record, kept.record if kept is not None else None, content=self.table.content, source=source
        )
        if not was_kept or kept is None:
            return found
        self.stats.inc_value(self.kept_unreadable_key)
        self.logger.warning(
            "%s %s: %s; the text read before is kept (%s)",
            self.label,
            getattr(record, self.matched[-1]),
            getattr(record, "problem", None) or "no text",
            KEPT_UNREADABLE,
        )
        return kept

    def carried(self, lecture_id: str) -> list[S]:
        """The last stage's rows of a lecture carried without a request."""
        kept = self.previous(lecture_id)
        if kept:
            self.stats.inc_value(self.carried_key, len(kept))
        return kept
