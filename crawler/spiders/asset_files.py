"""What every request for a file a lecture names (a subtitle file, a slide deck, a poster) shares: how it
is asked (never through the HTTP cache, within a size bound, in a politeness slot of its own host,
revalidated with the validators the stage kept), the validators its answer gives, and why one that
brought no file failed, as a row's ``problem`` says it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached
from twisted.python.failure import Failure

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
