from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from email.utils import formatdate
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.core.downloader import Slot
from scrapy.exceptions import IgnoreRequest, NotConfigured
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from crawler.middlewares.backoff import BackoffMiddleware, HostDeferred, full_jitter_wait, parse_retry_after
from crawler.middlewares.slots import count_dispatched_as_transferring
from crawler.spiders.asset_files import failure_problem
from tests.support.pace import spaced_at_least
from tests.support.polite_server import REPO_ROOT, Logged, Reply, Routes, gaps, page, run_crawl, serve
from tests.support.settings import project_crawler

NOW = 1_762_329_600.0  # 2025-11-05 08:00:00 UTC


def _after(log: list[Logged], entry: Logged) -> list[Logged]:
    return [e for e in log if e.mono > entry.mono]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3", 3.0),
        (b" 120 ", 120.0),
        ("0", 0.0),
        ("1.5", 1.5),
        (formatdate(NOW + 90, usegmt=True), 90.0),
        (formatdate(NOW - 90, usegmt=True), 0.0),
        ("Wed, 05 Nov 2025 08:00:30 -0000", 30.0),
        ("-5", None),
        ("inf", None),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(value: str | bytes | None, expected: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == expected


def test_full_jitter_wait_is_uniform_up_to_the_capped_exponential() -> None:
    random.seed(7)
    waits = [full_jitter_wait(n, 0.5, 2.0, 3.0) for n in range(1, 7)]
    random.seed(7)
    assert waits == [random.uniform(0, high) for high in (0.5, 1.0, 2.0, 3.0, 3.0, 3.0)]


def test_disabled_or_misconfigured() -> None:
    with pytest.raises(NotConfigured):
        BackoffMiddleware.from_crawler(project_crawler(settings_dict={"BACKOFF_ENABLED": False}))
    with pytest.raises(ValueError, match="BACKOFF_MIN_DELAY"):
        BackoffMiddleware.from_crawler(project_crawler(settings_dict={"BACKOFF_MIN_DELAY": 0}))
    middleware = BackoffMiddleware.from_crawler(project_crawler(settings_dict={}))
    assert middleware.http_codes == {429, 500, 502, 503, 504, 522, 524, 408}
    assert middleware.max_retries == 5


def test_retry_after_seconds_holds_the_whole_host(tmp_path: Path) -> None:
    routes: Routes = {
        "/a": [Reply(429, headers={"Retry-After": "1"}), page("a")],
        "/b": page("b"),
        "/c": page("c"),
        "/d": page("d"),
    }
    with serve(routes) as server:
        result = run_crawl([server.url(p) for p in ("/a", "/b", "/c", "/d")], {}, tmp_path)
    limited = server.requests_to("/a")[0]
    assert limited.status == 429 and limited.retry_after_until is not None
    later = _after(server.log, limited)
    assert sorted(e.path for e in later) == ["/a", "/b", "/c", "/d"]
    assert min(e.wall for e in later) >= limited.retry_after_until
    assert sorted((i["url"].rsplit("/", 1)[1], i["retry_times"]) for i in result.items) == [
        ("a", 1),
        ("b", 0),
        ("c", 0),
        ("d", 0),
    ]
    stats = result.stats
    assert stats["backoff/retry_count"] == 1
    assert stats["backoff/retry_count/429"] == 1
    assert stats["backoff/retry_after_honoured"] == 1
    assert stats["backoff/delay_raised"] == 1
    assert "backoff/max_reached" not in stats
    assert "retry/count" not in stats


def test_retry_after_http_date(tmp_path: Path) -> None:
    routes: Routes = {"/a": [Reply(503, retry_after_date_in=1.5), page("a")], "/b": page("b")}
    with serve(routes) as server:
        result = run_crawl([server.url("/a"), server.url("/b")], {}, tmp_path)
    limited = server.requests_to("/a")[0]
    assert limited.retry_after_until is not None
    later = _after(server.log, limited)
    assert sorted(e.path for e in later) == ["/a", "/b"]
    assert min(e.wall for e in later) >= limited.retry_after_until
    assert result.stats["backoff/retry_after_honoured"] == 1
    assert result.stats["backoff/retry_count/503"] == 1


def test_retry_after_is_capped_by_max_delay(tmp_path: Path) -> None:
    routes: Routes = {"/a": [Reply(429, headers={"Retry-After": "3600"}), page("a")]}
    with serve(routes) as server:
        result = run_crawl([server.url("/a")], {"BACKOFF_MAX_DELAY": 0.5}, tmp_path)
    first, second = server.requests_to("/a")
    assert 0.5 <= second.mono - first.mono < 3
    assert result.stats["backoff/retry_after_capped"] == 1
    assert [i["status"] for i in result.items] == [200]


def test_gives_up_after_max_retries_with_per_request_overrides(tmp_path: Path) -> None:
    routes: Routes = {"/x": Reply(503), "/y": Reply(500), "/z": Reply(502)}
    with serve(routes) as server:
        result = run_crawl(
            [
                server.url("/x"),
                {"url": server.url("/y"), "meta": {"backoff_max_retries": 1}},
                {"url": server.url("/z"), "meta": {"dont_retry": True}},
            ],
            {"BACKOFF_MAX_RETRIES": 2},
            tmp_path,
        )
    assert [len(server.requests_to(p)) for p in ("/x", "/y", "/z")] == [3, 2, 1]
    stats = result.stats
    assert stats["backoff/retry_count"] == 3
    assert stats["backoff/retry_count/503"] == 2
    assert stats["backoff/retry_count/500"] == 1
    assert stats["backoff/max_reached"] == 2
    assert stats["backoff/delay_raised"] == 6
    assert sorted((e["url"].rsplit("/", 1)[1], e["status"], e["retry_times"]) for e in result.errors) == [
        ("x", 503, 2),
        ("y", 500, 1),
        ("z", 502, 0),
    ]
    assert result.items == []


def test_connection_reset_and_truncated_body_are_retried(tmp_path: Path) -> None:
    routes: Routes = {
        "/r": [Reply(reset=True), page("r")],
        "/t": [Reply(body=b"x" * 1000, truncate=True), page("t")],
    }
    with serve(routes) as server:
        result = run_crawl([server.url("/r"), server.url("/t")], {}, tmp_path)
    assert [e.status for e in server.requests_to("/r")] == [0, 200]
    assert [e.status for e in server.requests_to("/t")] == [200, 200]
    assert sorted((i["body"], i["retry_times"]) for i in result.items) == [("r", 1), ("t", 1)]
    stats = result.stats
    assert stats["backoff/retry_count"] == 2
    assert stats["backoff/retry_count/scrapy.exceptions.DownloadFailedError"] == 1
    assert stats["backoff/retry_count/scrapy.exceptions.ResponseDataLossError"] == 1
    assert stats["backoff/delay_raised"] == 2


def test_raised_delay_survives_autothrottle(tmp_path: Path) -> None:
    routes: Routes = {"/p0": [Reply(503), page("p0")], **{f"/p{i}": page(f"p{i}") for i in range(1, 6)}}
    settings = {
        "DOWNLOAD_DELAY": 0.1,
        "AUTOTHROTTLE_ENABLED": True,
        "AUTOTHROTTLE_START_DELAY": 0,
        "AUTOTHROTTLE_TARGET_CONCURRENCY": 8,
        "BACKOFF_MIN_DELAY": 0.4,
        "BACKOFF_WINDOW": 60,
    }
    with serve(routes) as server:
        result = run_crawl([server.url(f"/p{i}") for i in range(6)], settings, tmp_path)
    failed = server.requests_to("/p0")[0]
    later = _after(server.log, failed)
    assert len(later) == 6
    assert spaced_at_least(gaps(later), 0.4), gaps(later)
    assert {i["slot_delay"] for i in result.items} == {0.4}
    assert "backoff/recovered" not in result.stats


def test_delay_recovers_once_the_host_answers_well(tmp_path: Path) -> None:
    routes: Routes = {"/p0": [Reply(503), page("p0")], **{f"/p{i}": page(f"p{i}") for i in range(1, 8)}}
    settings = {"DOWNLOAD_DELAY": 0.1, "BACKOFF_MIN_DELAY": 0.2, "BACKOFF_WINDOW": 0.2}
    with serve(routes) as server:
        result = run_crawl([server.url(f"/p{i}") for i in range(8)], settings, tmp_path)
    delays = [i["slot_delay"] for i in sorted(result.items, key=lambda i: i["url"])]
    assert set(delays) <= {0.2, 0.1}
    assert result.stats["backoff/delay_raised"] == 1
    assert result.stats["backoff/recovered"] == 1
    recovered = gaps(server.log[-3:])
    assert spaced_at_least(recovered, 0.1) and max(recovered) < 0.19, recovered


def test_a_request_taken_off_the_slot_queue_counts_against_the_concurrency_at_once() -> None:
    slot = Slot(concurrency=1, delay=0, jitter=0)
    slot.queue.extend((Request(f"http://example.org/{i}"), Deferred()) for i in range(2))
    count_dispatched_as_transferring(slot)
    assert [r.url for r, _ in slot.queue] == ["http://example.org/0", "http://example.org/1"]
    request, _ = slot.queue.popleft()
    assert slot.transferring == {request}
    assert slot.free_transfer_slots() == 0
    count_dispatched_as_transferring(slot)  # idempotent
    assert len(slot.queue) == 1 and slot.transferring == {request}


def _throttled_site(pages: int, throttled: tuple[int, ...]) -> Routes:
    """Pages /p0.. of which the *throttled* ones answer 429 with ``Retry-After: 1`` the first time."""
    limited = Reply(429, headers={"Retry-After": "1"})
    return {f"/p{i}": [limited, page(f"p{i}")] if i in throttled else page(f"p{i}") for i in range(pages)}


def _arrived_while_held(log: list[Logged], limited: Logged) -> list[Logged]:
    """Requests that arrived after the server had sent *limited* and before its Retry-After had passed."""
    assert limited.sent is not None and limited.retry_after_until is not None
    return [e for e in log if e.mono > limited.sent and e.wall < limited.retry_after_until]


def test_retry_after_holds_the_host_without_download_delay(tmp_path: Path) -> None:
    # DOWNLOAD_DELAY = 0, one request at a time: nothing at all may reach the host during Retry-After.
    # Scrapy 2.19 counts a request against the slot concurrency only once its download task has started, so
    # a slot without delay used to send its whole queue at once (the requests held by a backoff, when the
    # backoff had recovered), a 429 among them arriving with the others right behind it.
    routes = _throttled_site(10, throttled=(0, 3, 6))
    with serve(routes) as server:
        result = run_crawl([server.url(p) for p in routes], {"DOWNLOAD_DELAY": 0}, tmp_path)
    limited = [e for e in server.log if e.status == 429]
    assert len(limited) == 3
    for entry in limited:
        later = _after(server.log, entry)
        assert entry.retry_after_until is not None and later, entry
        assert min(e.wall for e in later) >= entry.retry_after_until, entry
    assert sorted(i["body"] for i in result.items) == sorted(f"p{i}" for i in range(10))
    assert result.stats["backoff/retry_after_honoured"] == 3


def test_retry_after_holds_the_host_at_concurrency_4_without_download_delay(tmp_path: Path) -> None:
    # With 4 requests to the host at a time, the other 3 may still be on the wire when the 429 reaches the
    # crawler, and each may have been answered and replaced in that very moment: up to 2 * 3 requests arrive
    # just after the 429 has left the server. None may arrive later, until Retry-After has passed.
    concurrency = 4
    routes = _throttled_site(20, throttled=(0, 4, 8, 12, 16))
    settings = {"DOWNLOAD_DELAY": 0, "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency}
    with serve(routes) as server:
        result = run_crawl([server.url(p) for p in routes], settings, tmp_path)
    limited = [e for e in server.log if e.status == 429]
    assert len(limited) == 5
    for entry in limited:
        assert entry.sent is not None, f"{entry=}"
        on_the_wire = _arrived_while_held(server.log, entry)
        assert len(on_the_wire) <= 2 * (concurrency - 1), (entry, on_the_wire)
        assert all(e.mono - entry.sent < 0.25 for e in on_the_wire), (entry, on_the_wire)
    assert sorted(i["body"] for i in result.items) == sorted(f"p{i}" for i in range(20))
    assert result.stats["backoff/retry_after_honoured"] == 5


def test_the_middleware_loads_without_the_retry_library() -> None:
    """Every crawl loads the middleware; the retry library it draws its waits from is loaded at the first
    error only."""
    code = (
        "import sys; from crawler.middlewares import backoff; loaded = 'tenacity' in sys.modules; "
        "backoff.full_jitter_wait(2, 0.5, 2.0, 3.0); print(loaded, 'tenacity' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]


# -- a failing host is bounded ----------------------------------------------------------------------------

# Small waits, and the host deferred after three failures in a row.
HOST_BOUND = {"BACKOFF_HOST_MAX_FAILURES": 3, "BACKOFF_MIN_DELAY": 0.05, "BACKOFF_MAX_DELAY": 0.2}


def test_a_host_failing_in_a_row_is_deferred_and_the_others_go_on(tmp_path: Path) -> None:
    """Three 503s in a row and the failing server gets no fourth request: its other requests, its retries
    among them, fail as deferred. Another server on the same host name (one download slot, another port)
    answers between its failures without resetting them, and is crawled whole."""
    failing = {f"/f{i}": Reply(503) for i in range(10)}
    healthy = {f"/ok{i}": page(f"ok{i}") for i in range(5)}
    with serve(failing) as bad, serve(healthy) as good:
        urls = [bad.url(p) for p in failing] + [good.url(p) for p in healthy]
        result = run_crawl(urls, HOST_BOUND, tmp_path)
    assert len(bad.log) == 3
    assert len(good.log) == 5
    assert sorted(i["body"] for i in result.items) == [f"ok{i}" for i in range(5)]
    host = f"http://127.0.0.1:{bad.port}"
    assert sorted(e["url"] for e in result.errors) == sorted(bad.url(p) for p in failing)
    assert {(e["error"], e["message"]) for e in result.errors} == {
        ("HostDeferred", f"host failing: deferred to the next night ({host})")
    }
    stats = result.stats
    assert stats["backoff/hosts_deferred"] == 1
    # The ten requests: seven never sent, and the retries of the three that were.
    assert stats["backoff/deferred"] == 10
    assert stats[f"backoff/deferred/{host}"] == 10
    assert stats["backoff/retry_count"] == 2
    assert "backoff/max_reached" not in stats
    assert result.log.count("failed 3 times in a row: its other requests wait for the next crawl") == 1


def test_an_answer_between_failures_resets_the_count(tmp_path: Path) -> None:
    """Two failures, an answer, two failures...: never three in a row, so every request is sent."""
    script = [Reply(503), Reply(503), page("x")] * 3
    requests = [{"url": "", "meta": {"dont_retry": True}} for _ in script]
    with serve({"/x": script}) as server:
        for request in requests:
            request["url"] = server.url("/x")
        result = run_crawl(requests, HOST_BOUND, tmp_path)
    assert [e.status for e in server.log] == [503, 503, 200] * 3
    assert [i["body"] for i in result.items] == ["x"] * 3
    assert [e["status"] for e in result.errors] == [503] * 6
    assert "backoff/deferred" not in result.stats


def test_a_closing_crawl_does_not_wait_for_the_backoff(tmp_path: Path) -> None:
    """A 429 holds the host for a minute; the crawl's time runs out after two seconds, and it closes then:
    the requests held (the retry too) are handed back to the scheduler unsent."""
    routes: Routes = {f"/a{i}": Reply(429, headers={"Retry-After": "60"}) for i in range(4)}
    settings = {"BACKOFF_MAX_DELAY": 60.0, "BACKOFF_MIN_DELAY": 60.0, "CLOSESPIDER_TIMEOUT": 2}
    with serve(routes) as server:
        started = time.monotonic()
        result = run_crawl([server.url(p) for p in routes], settings, tmp_path, timeout=30)
        took = time.monotonic() - started
    assert took < 15, took
    assert len(server.log) == 1
    assert result.stats["finish_reason"] == "closespider_timeout"
    assert result.stats["backoff/handed_back_at_close"] == 4
    assert result.items == [] and result.errors == []


def test_a_deferred_request_is_no_answer_for_the_subtitle_rows() -> None:
    """What a deferred subtitle request's row says: ``failed`` (its last row kept), neither a robots.txt
    refusal nor a size cap."""
    request = Request("https://assets.underline.io/lecture/1/transcripts/en.vtt")
    failure = Failure(HostDeferred("https://assets.underline.io"))
    failure.request = request  # type: ignore[attr-defined]
    assert isinstance(failure.value, IgnoreRequest)
    assert failure_problem(failure) == "failed"
