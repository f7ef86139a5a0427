from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.http import Response
from scrapy.settings import Settings

from crawler.httpcache import CacheSize, PurgeResult, RevalidatingPolicy, cache_size, purge_cache
from tests.support.polite_server import CrawlResult, Reply, page, redirect, run_crawl, serve

DAY = 86400.0
NOW = 1_762_329_600.0


def _cache_settings(cache_dir: Path, **extra: object) -> dict[str, object]:
    return {"HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": str(cache_dir), **extra}


def _entry(root: Path, name: str, body: bytes, mtime: float) -> Path:
    entry = root / "probe" / name[:2] / name
    entry.mkdir(parents=True)
    (entry / "response_body").write_bytes(body)
    meta = entry / "pickled_meta"
    meta.write_bytes(b"0123456789")
    os.utime(meta, (mtime, mtime))
    return entry


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (200, {}, True),
        (200, {"Cache-Control": "max-age=0, must-revalidate"}, True),
        (200, {"Cache-Control": "no-store"}, False),
        (301, {"Location": "/x"}, True),
        (302, {"Location": "/log-in"}, True),
        (304, {}, False),
        (206, {}, False),
        (403, {}, False),
        (404, {}, False),
        (408, {}, False),
        (429, {}, False),
        (500, {}, False),
        (503, {}, False),
    ],
)
def test_policy_stores_only_successes_and_redirects(
    status: int, headers: dict[str, str], expected: bool
) -> None:
    policy = RevalidatingPolicy(Settings())
    response = Response("http://example.org/", status=status, headers=headers)
    assert policy.should_cache_response(response, Request("http://example.org/")) is expected


def test_policy_always_revalidates() -> None:
    policy = RevalidatingPolicy(Settings())
    cached = Response(
        "http://example.org/",
        headers={
            "ETag": '"abc"',
            "Last-Modified": "Wed, 05 Nov 2025 08:00:00 GMT",
            "Cache-Control": "max-age=3600",
        },
    )
    request = Request("http://example.org/")
    assert policy.is_cached_response_fresh(cached, request) is False
    assert request.headers[b"If-None-Match"] == b'"abc"'
    assert request.headers[b"If-Modified-Since"] == b"Wed, 05 Nov 2025 08:00:00 GMT"
    assert (
        policy.is_cached_response_valid(cached, Response("http://example.org/", status=304), request) is True
    )
    for status in (200, 500, 503):
        fresh = Response("http://example.org/", status=status)
        assert policy.is_cached_response_valid(cached, fresh, request) is False


def test_second_crawl_revalidates_and_keeps_errors_out(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    routes = {
        "/l/1": page("<p>lecture one</p>"),
        "/l/2": page("<p>lecture two</p>"),
        "/old": redirect("/l/1", status=301),
        "/e/403": Reply(403),
        "/e/404": Reply(404),
        "/e/429": Reply(429),
        "/e/503": Reply(503),
    }
    paths = ["/l/1", "/l/2", "/old", "/e/403", "/e/404", "/e/429", "/e/503"]
    settings = _cache_settings(cache_dir, BACKOFF_MAX_RETRIES=0)
    with serve(routes) as server:
        urls = [server.url(p) for p in paths]
        first = run_crawl(urls, settings, tmp_path)
        first_log = len(server.log)
        assert cache_size(cache_dir).entries == 3  # /l/1, /l/2 and the /old redirect
        second = run_crawl(urls, settings, tmp_path)
    second_requests = server.log[first_log:]
    by_path = {(e.path, e.headers.get("if-none-match")): e.status for e in second_requests}
    etags = {p: routes[p].etag for p in ("/l/1", "/l/2")}
    assert by_path == {
        ("/l/1", etags["/l/1"]): 304,
        ("/l/2", etags["/l/2"]): 304,
        ("/old", None): 301,
        ("/e/403", None): 403,
        ("/e/404", None): 404,
        ("/e/429", None): 429,
        ("/e/503", None): 503,
    }
    assert len(second_requests) == 8  # /l/1 twice: itself and through /old

    def _items(result: CrawlResult) -> list[tuple[str, int, str]]:
        return sorted((i["url"], i["status"], i["body"]) for i in result.items)

    assert _items(second) == _items(first)
    assert [i["cached"] for i in second.items] == [True, True, True]
    assert second.stats["httpcache/hit_304"] == 3
    assert second.stats["httpcache/revalidate"] == 3
    assert second.stats["httpcache/conditional"] == 3
    assert second.stats["httpcache/entries"] == 3
    assert cache_size(cache_dir).entries == 3
    for data in cache_dir.rglob("response_data"):
        assert pickle.loads(data.read_bytes())["flags"] == []


def test_failed_revalidation_is_retried_not_served_from_cache(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    lecture = page("<p>lecture one</p>")
    with serve({"/l/1": [lecture, Reply(503), lecture]}) as server:
        first = run_crawl([server.url("/l/1")], _cache_settings(cache_dir), tmp_path)
        second = run_crawl([server.url("/l/1")], _cache_settings(cache_dir), tmp_path)
    assert [(e.status, e.headers.get("if-none-match")) for e in server.log] == [
        (200, None),
        (503, lecture.etag),
        (304, lecture.etag),
    ]
    assert [(i["body"], i["cached"], i["retry_times"]) for i in second.items] == [
        (first.items[0]["body"], True, 1)
    ]
    assert second.stats["backoff/retry_count/503"] == 1
    assert second.stats["httpcache/hit_304"] == 1
    assert second.stats["httpcache/conditional"] == 2
    assert cache_size(cache_dir).entries == 1


def test_purge_on_close_removes_old_entries(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    routes = {"/l/1": page("one"), "/l/2": page("two")}
    with serve(routes) as server:
        run_crawl([server.url("/l/1"), server.url("/l/2")], _cache_settings(cache_dir), tmp_path)
        entries = {pickle.loads((m).read_bytes())["url"]: m.parent for m in cache_dir.rglob("pickled_meta")}
        old = entries[server.url("/l/2")]
        os.utime(old / "pickled_meta", (NOW - 10 * DAY, NOW - 10 * DAY))
        settings = _cache_settings(cache_dir, HTTPCACHE_MAX_AGE_DAYS=5, HTTPCACHE_PURGE_ON_CLOSE=True)
        result = run_crawl([server.url("/l/1")], settings, tmp_path)
    assert not old.exists()
    assert entries[server.url("/l/1")].exists()
    assert result.stats["httpcache/purged_entries"] == 1
    assert result.stats["httpcache/entries"] == 1
    assert cache_size(cache_dir).entries == 1


def test_purge_and_size(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    _entry(root, "aa01", b"x" * 100, NOW - 40 * DAY)
    _entry(root, "aa02", b"y" * 50, NOW - 1 * DAY)
    _entry(root, "bb01", b"z" * 20, NOW - 31 * DAY)
    interrupted = _entry(root, "cc01", b"w" * 7, NOW - 50 * DAY)
    (interrupted / "pickled_meta").unlink()
    os.utime(interrupted / "response_body", (NOW - 50 * DAY, NOW - 50 * DAY))
    assert cache_size(root) == CacheSize(entries=3, bytes=170 + 3 * 10 + 7)
    assert purge_cache(root, 30 * DAY, now=NOW) == PurgeResult(
        removed_entries=2, removed_bytes=120 + 2 * 10 + 7, kept_entries=1, kept_bytes=60, removed_partial=1
    )
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == [
        "probe",
        "probe/aa",
        "probe/aa/aa02",
        "probe/aa/aa02/pickled_meta",
        "probe/aa/aa02/response_body",
    ]
    assert cache_size(root) == CacheSize(entries=1, bytes=60)
    assert purge_cache(tmp_path / "missing", 0) == PurgeResult(0, 0, 0, 0)
    assert cache_size(tmp_path / "missing") == CacheSize(0, 0)
