from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import Response
from scrapy.settings import Settings

from crawler.cache.entry import (
    ENTRY_SUFFIX,
    BrokenEntry,
    decode_entry,
    encode_entry,
    stripped_body,
    write_entry,
)
from crawler.cache.httpcache import RevalidatingPolicy, cache_size, purge_cache
from crawler.pages import parse_lecture_document, parse_lecture_page
from crawler.privacy.stored import strip_personal_data
from tests.support.commands import eventcrawl, start_command
from tests.support.polite_server import (
    BASE_SETTINGS,
    REPO_ROOT,
    CrawlResult,
    Reply,
    page,
    redirect,
    run_crawl,
    serve,
)
from tests.test_pages_profiles import EMAILS, EXPECTED_AUTHORS, SHUFFLED, lecture_with_authors
from tests.test_privacy_stored import answer, page_with

DAY = 86400.0
NOW = 1_762_329_600.0


# The crawls here store their answers as a user's crawl does: decoded, stripped and written by a worker
# process (the default WORKER_PROCESSES), whose extension the probe crawl runs among Scrapy's.
WORKERS = {"crawler.extensions.workers.WorkerProcesses": 100}


def _cache_settings(cache_dir: Path, **extra: object) -> dict[str, object]:
    return {"HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": str(cache_dir), "EXTENSIONS": WORKERS, **extra}


def _legacy_entry(root: Path, name: str, body: bytes, mtime: float) -> Path:
    """An entry of the earlier layout: a directory of part files, ``pickled_meta`` written last."""
    entry = root / "probe" / name[:2] / name
    entry.mkdir(parents=True)
    (entry / "response_body").write_bytes(body)
    meta = entry / "pickled_meta"
    meta.write_bytes(b"0123456789")
    os.utime(meta, (mtime, mtime))
    return entry


def _file_entry(root: Path, name: str, size: int, mtime: float, suffix: str = ENTRY_SUFFIX) -> Path:
    path = root / "probe" / name[:2] / f"{name}{suffix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"e" * size)
    os.utime(path, (mtime, mtime))
    return path


def _entries(cache_dir: Path) -> dict[str, tuple[Path, dict[str, Any], bytes]]:
    """Every stored entry by its request URL: (file, header, body)."""
    found = {}
    for path in cache_dir.rglob(f"*{ENTRY_SUFFIX}"):
        header, body = decode_entry(path.read_bytes())
        found[header["url"]] = (path, header, body)
    return found


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
        assert policy.is_cached_response_valid(cached, fresh, request) is False, f"{status=}"


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
        assert cache_size(cache_dir)[0] == 3  # /l/1, /l/2 and the /old redirect
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
    assert cache_size(cache_dir)[0] == 3
    stored = _entries(cache_dir)
    assert len(stored) == 3
    assert [header["flags"] for _, header, _ in stored.values()] == [[], [], []]


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
    assert cache_size(cache_dir)[0] == 1


def test_purge_on_close_removes_old_entries(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    routes = {"/l/1": page("one"), "/l/2": page("two")}
    with serve(routes) as server:
        run_crawl([server.url("/l/1"), server.url("/l/2")], _cache_settings(cache_dir), tmp_path)
        entries = {url: path for url, (path, _, _) in _entries(cache_dir).items()}
        old = entries[server.url("/l/2")]
        os.utime(old, (NOW - 10 * DAY, NOW - 10 * DAY))
        settings = _cache_settings(cache_dir, HTTPCACHE_MAX_AGE_DAYS=5, HTTPCACHE_PURGE_ON_CLOSE=True)
        result = run_crawl([server.url("/l/1")], settings, tmp_path)
    assert not old.exists()
    assert entries[server.url("/l/1")].exists()
    assert result.stats["httpcache/purged_entries"] == 1
    assert result.stats["httpcache/entries"] == 1
    assert cache_size(cache_dir)[0] == 1


def test_purge_and_size(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    _file_entry(root, "aa01", 100, NOW - 40 * DAY)
    _file_entry(root, "aa02", 50, NOW - 1 * DAY)
    _file_entry(root, "bb01", 20, NOW - 31 * DAY)
    _file_entry(root, "cc01", 7, NOW - 50 * DAY, suffix=".entry.4242.tmp")  # a write cut short
    _file_entry(root, "cc02", 3, NOW - 1 * DAY, suffix=".entry.4243.tmp")  # perhaps a write under way
    legacy = _legacy_entry(root, "dd01", b"x" * 30, NOW - 40 * DAY)
    interrupted = _legacy_entry(root, "dd02", b"w" * 5, NOW - 50 * DAY)
    (interrupted / "pickled_meta").unlink()
    os.utime(interrupted / "response_body", (NOW - 50 * DAY, NOW - 50 * DAY))
    assert cache_size(root) == (4, 170 + 7 + 3 + 40 + 5)
    assert purge_cache(root, 30 * DAY, now=NOW) == dict(
        removed_entries=3,
        removed_bytes=100 + 20 + 40 + 7 + 5,
        kept_entries=1,
        kept_bytes=50,
        removed_partial=2,
    )
    assert not legacy.exists()
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == [
        "probe",
        "probe/aa",
        "probe/aa/aa02.entry",
        "probe/cc",
        "probe/cc/cc02.entry.4243.tmp",
    ]
    assert cache_size(root) == (1, 53)
    assert purge_cache(tmp_path / "missing", 0) == dict(
        removed_entries=0, removed_bytes=0, kept_entries=0, kept_bytes=0, removed_partial=0
    )
    assert cache_size(tmp_path / "missing") == (0, 0)


HOLD_LOCK = (
    "import sys; from pathlib import Path; from crawler.schedule.lock import StateLock; "
    "lock = StateLock(Path(sys.argv[1]), shared=sys.argv[2] == 'shared').acquire(); "
    "print('held', flush=True); sys.stdin.read()"
)


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("exclusive", 'another run holds {lock} ({{"pid": {pid}}}); wait for it to end'),
        ("shared", "crawl workers of a fleet hold {lock}; wait for the last one to exit"),
    ],
)
def test_cache_purge_waits_for_no_command_to_hold_the_state(tmp_path: Path, mode: str, says: str) -> None:
    state = tmp_path / "state"
    old = _file_entry(state / "httpcache", "aa01", 100, NOW - 40 * DAY)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(state), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        refused = eventcrawl("cache", "purge", "--state", str(state), "--max-age-days", "1", cwd=tmp_path)
    finally:
        holder.communicate("", timeout=30)
    lock = state / "run.lock"
    assert (refused.returncode, refused.stdout, refused.stderr) == (
        6,
        "",
        f"eventcrawl: {says.format(lock=lock, pid=holder.pid)}\n",
    )
    assert old.exists()
    purged = eventcrawl("cache", "purge", "--state", str(state), "--max-age-days", "1", cwd=tmp_path)
    assert (purged.returncode, purged.stderr) == (0, "")
    assert purged.stdout.splitlines()[0] == f"removed 1 entries (100 bytes) from {state / 'httpcache'}"
    assert not old.exists()


def test_an_entry_is_used_only_when_its_body_is_whole() -> None:
    header = {"url": "http://example.org/", "status": 200}
    data = encode_entry(header, b"<p>body</p>")
    assert data.startswith(b'{"url":"http://example.org/","status":200,"format":"eventcrawl-httpcache/1"')
    assert decode_entry(data) == ({**json.loads(data.partition(b"\n")[0])}, b"<p>body</p>")
    for broken, why in [
        (data[:-1], "body is 10 bytes, 11 were stored"),
        (data[:-1] + b"X", "does not match its stored sha256"),
        (data[:20], "no header line"),
        (b"{" + data[20:], "unreadable header"),
        (b'{"url": "x"}\nbody', "not an entry of this cache"),
    ]:
        with pytest.raises(BrokenEntry, match=why):
            decode_entry(broken)


API_PATH = "/api/v1/thin_lectures/130123"
LECTURE_PATH = "/lecture/130123-router-tuning"


def _api_reply(doc: dict[str, Any], *, gzipped: bool = False) -> Reply:
    body = json.dumps(doc).encode()
    headers = {"Content-Type": "application/vnd.api+json", "Cache-Control": "max-age=0, must-revalidate"}
    if gzipped:
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    return Reply(body=body, headers=headers, validators=True)


ADDRESS = re.compile(rb"[\w.+-]+@[\w-]+\.[\w.-]+")


def test_personal_data_never_reaches_the_cache_and_revalidation_still_works(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    doc = answer()
    routes = {
        API_PATH: _api_reply(doc),
        "/api/gzipped": _api_reply(doc, gzipped=True),
        LECTURE_PATH: page(page_with(doc)),
    }
    paths = [API_PATH, "/api/gzipped", LECTURE_PATH]
    with serve(routes) as server:
        urls = [server.url(p) for p in paths]
        first = run_crawl(urls, _cache_settings(cache_dir), tmp_path)
        served = len(server.log)
        second = run_crawl(urls, _cache_settings(cache_dir), tmp_path)
    # What the server sent did carry the addresses and avatars.
    assert all(address in routes[API_PATH].body.decode() for address in EMAILS)
    assert b"avatar" in routes[LECTURE_PATH].body
    files = [p for p in cache_dir.rglob("*") if p.is_file()]
    assert len(files) == 3
    for path in files:
        data = path.read_bytes()
        assert ADDRESS.findall(data) == [], path
        assert b"avatar" not in data, f"{path=}"
    stored = _entries(cache_dir)
    for path in paths:
        _, header, _ = stored[server.url(path)]
        names = {name.lower() for name, _ in header["headers"]}
        assert {"etag", "last-modified"} <= names, f"{path=}"
        assert "content-encoding" not in names, f"{path=}"
    # The second crawl revalidates everything and reads the same fields.
    assert [(e.path, e.status, e.headers.get("if-none-match")) for e in server.log[served:]] == [
        (p, 304, routes[p].etag) for p in paths
    ]
    assert second.stats["httpcache/hit_304"] == 3
    # Each answer of the first crawl was stripped and stored by a worker process.
    assert (first.stats["workers/processes"], first.stats["workers/jobs"]) == (1, 3)

    def fields(result: CrawlResult) -> list[Any]:
        by_url = {item["request_url"]: item["body"] for item in result.items}
        api = [parse_lecture_document(json.loads(by_url[server.url(p)])) for p in paths[:2]]
        lecture = parse_lecture_page(by_url[server.url(LECTURE_PATH)], server.url(LECTURE_PATH)).fields
        assert lecture is not None
        return [(f.lecture_id, f.title, f.authors) for f in [*api, lecture]]

    assert fields(second) == fields(first)
    assert [authors for _, _, authors in fields(second)] == [EXPECTED_AUTHORS] * 3
    assert all(not ADDRESS.findall(item["body"].encode()) for item in second.items)


def test_a_broken_entry_is_fetched_again_without_validators_and_replaced(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    routes = {"/l/1": page("<p>lecture one</p>" * 50), "/l/2": page("<p>lecture two</p>" * 50)}
    with serve(routes) as server:
        urls = [server.url("/l/1"), server.url("/l/2")]
        run_crawl(urls, _cache_settings(cache_dir), tmp_path)
        path, _, body = _entries(cache_dir)[server.url("/l/1")]
        whole = path.read_bytes()
        path.write_bytes(whole[: len(whole) - len(body) // 2])  # the body cut in half
        served = len(server.log)
        second = run_crawl(urls, _cache_settings(cache_dir), tmp_path)
        third_from = len(server.log)
        third = run_crawl(urls, _cache_settings(cache_dir), tmp_path)
    assert sorted(
        (e.path, e.status, e.headers.get("if-none-match")) for e in server.log[served:third_from]
    ) == [
        ("/l/1", 200, None),
        ("/l/2", 304, routes["/l/2"].etag),
    ]
    assert second.stats["httpcache/broken_entries"] == 1
    assert "is broken (body is" in second.log
    assert {i["request_url"]: i["body"] for i in second.items} == {
        server.url(p): routes[p].body.decode() for p in ("/l/1", "/l/2")
    }
    assert path.read_bytes() != whole[: len(whole) - len(body) // 2]
    assert _entries(cache_dir)[server.url("/l/1")][2] == routes["/l/1"].body
    # Replaced: the next crawl revalidates it again.
    assert [e.status for e in server.log[third_from:]] == [304, 304]
    assert "httpcache/broken_entries" not in third.stats


def test_an_entry_older_than_the_expiration_is_fetched_in_full_and_replaced(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    routes = {"/l/1": page("<p>lecture one</p>"), "/l/2": page("<p>lecture two</p>")}
    with serve(routes) as server:
        urls = [server.url("/l/1"), server.url("/l/2")]
        run_crawl(urls, _cache_settings(cache_dir), tmp_path)
        old = _entries(cache_dir)[urls[1]][0]
        hour_ago = time.time() - 3600
        os.utime(old, (hour_ago, hour_ago))
        served = len(server.log)
        second = run_crawl(urls, _cache_settings(cache_dir, HTTPCACHE_EXPIRATION_SECS=600), tmp_path)
    # The fresh entry is revalidated; the expired one is not offered to the site, nor served.
    assert sorted((e.path, e.status, e.headers.get("if-none-match")) for e in server.log[served:]) == [
        ("/l/1", 304, routes["/l/1"].etag),
        ("/l/2", 200, None),
    ]
    assert {i["request_url"]: i["cached"] for i in second.items} == {urls[0]: True, urls[1]: False}
    assert second.stats["httpcache/hit_304"] == 1
    assert second.stats["httpcache/conditional"] == 1
    # The answer fetched in full took the expired entry's place.
    assert old.stat().st_mtime > hour_ago + 1800
    assert _entries(cache_dir)[urls[1]][2] == routes["/l/2"].body


def test_a_crawl_killed_while_storing_leaves_only_whole_entries(tmp_path: Path) -> None:
    """kill -9 mid-crawl, many times over large bodies: every entry left is whole, and the next crawl
    revalidates exactly those and fetches the rest in full."""
    cache_dir = tmp_path / "cache"
    count = 120
    routes = {f"/l/{i}": page(f"<p>lecture {i}</p>" + "x" * 400_000) for i in range(count)}
    config = tmp_path / "killed.json"
    with serve(routes) as server:
        urls = [server.url(f"/l/{i}") for i in range(count)]
        config.write_text(
            json.dumps(
                {
                    "requests": [{"url": u} for u in urls],
                    "settings": {**BASE_SETTINGS, **_cache_settings(cache_dir), "CONCURRENT_REQUESTS": 4},
                    "output": str(tmp_path / "killed.out.json"),
                }
            )
        )
        # The crawl of tests/support/polite_server.py, forked from the suite's fork server.
        crawl = [sys.executable, "-m", "tests.support.polite_server", str(config)]
        for share in (0.2, 0.4, 0.6):  # killed three times, each crawl further than the last
            out, err = tmp_path / f"killed-{share}.out", tmp_path / f"killed-{share}.err"
            proc = start_command(crawl, cwd=tmp_path, stdout=out, stderr=err)
            deadline = time.monotonic() + 60
            while (
                time.monotonic() < deadline and len(list(cache_dir.rglob(f"*{ENTRY_SUFFIX}"))) < share * count
            ):
                time.sleep(0.002)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            stored = _entries(cache_dir)  # raises if any entry is not whole
            assert share * count <= len(stored) < count, f"{share=}"
            assert all(
                body == routes[url.split(str(server.port), 1)[1]].body for url, (_, _, body) in stored.items()
            ), f"{share=}"
        served = len(server.log)
        second = run_crawl(urls, _cache_settings(cache_dir), tmp_path, timeout=120)
    again = {e.path: (e.status, e.headers.get("if-none-match")) for e in server.log[served:]}
    assert len(server.log) - served == count
    assert again == {
        path: (304, reply.etag) if server.url(path) in stored else (200, None)
        for path, reply in routes.items()
    }
    assert "httpcache/broken_entries" not in second.stats
    assert {i["request_url"]: i["body"] for i in second.items} == {
        server.url(p): r.body.decode() for p, r in routes.items()
    }


def test_an_entry_killed_while_written_keeps_the_old_one_whole(tmp_path: Path) -> None:
    """A process killed in the middle of writing a large entry leaves the entry it was replacing."""
    path = tmp_path / "ab" / f"ab01{ENTRY_SUFFIX}"
    path.parent.mkdir()
    old = encode_entry({"url": "http://example.org/"}, b"old body")
    path.write_bytes(old)
    writer = (
        "import sys; from pathlib import Path; "
        "from crawler.cache.entry import encode_entry, write_entry; "
        "write_entry(Path(sys.argv[1]), encode_entry({'url': 'http://example.org/'}, b'n' * 50_000_000))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", writer, str(path)], env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(
        p.stat().st_size > 1_000_000 for p in path.parent.glob(f"*{ENTRY_SUFFIX}*")
    ):
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert path.read_bytes() == old
    assert decode_entry(path.read_bytes())[1] == b"old body"
    assert [p.name for p in path.parent.iterdir() if p != path] == [f"ab01{ENTRY_SUFFIX}.{proc.pid}.tmp"]


def test_an_entry_asks_for_its_directory_only_when_it_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The directory of an entry is made once, not asked for again on every entry written into it; one
    removed meanwhile (a purge) is made again and the entry written whole."""
    made: list[str] = []
    real_mkdir = os.mkdir

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        made.append(Path(path).name)
        real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    directory = tmp_path / "cache" / "ab"
    first, second = directory / f"ab01{ENTRY_SUFFIX}", directory / f"ab02{ENTRY_SUFFIX}"
    write_entry(first, encode_entry({"url": "http://example.org/1"}, b"one"))
    assert (tmp_path / "cache").is_dir() and "ab" in made
    made.clear()
    write_entry(second, encode_entry({"url": "http://example.org/2"}, b"two"))
    write_entry(first, encode_entry({"url": "http://example.org/1"}, b"one again"))
    assert made == []
    assert decode_entry(first.read_bytes())[1] == b"one again"
    shutil.rmtree(directory)
    write_entry(second, encode_entry({"url": "http://example.org/2"}, b"two again"))
    assert made == ["ab"]
    assert decode_entry(second.read_bytes())[1] == b"two again"
    assert sorted(p.name for p in directory.iterdir()) == [f"ab02{ENTRY_SUFFIX}"]


def _whole(doc: Any) -> bytes:
    """An answer's body as it is stored when it is written again whole."""
    return json.dumps(strip_personal_data(doc), ensure_ascii=False, separators=(",", ":")).encode()


def test_a_stored_answer_keeps_the_bytes_of_what_held_no_personal_data() -> None:
    # Only ``included`` held profiles: it is written again, and the lecture's one address in place;
    # every other byte of the answer is kept, its layout and escapes included.
    doc = answer()
    doc["data"] = [doc["data"]]
    doc["meta"] = {"count": 1, "note": "\u00fc and \\url{x} & <b>"}
    body = json.dumps(doc, indent=1).encode()
    stored = stripped_body(body, is_json=True)
    assert json.loads(stored) == json.loads(_whole(doc))
    meta = json.dumps(doc["meta"], indent=1).replace("\n", "\n ")
    assert stored.endswith(b'\n "meta": ' + meta.encode() + b"\n}")
    title = json.dumps(doc["data"][0]["attributes"]["title"]).encode()
    assert b'"title": ' + title + b",\n" in stored
    for address in EMAILS:
        assert address.encode() not in stored, f"case {address}"
    assert b"avatar" not in stored


def test_a_stored_answer_without_personal_data_is_the_body_it_came_as() -> None:
    body = b'{"data": [], "meta": {"note": "pass@1, x = A @ B, \\u0040"}}'
    assert stripped_body(body, is_json=True) is body


def test_an_answer_written_in_place_reads_as_the_answer_written_whole() -> None:
    # Addresses in keys, written as escapes, spaced with escapes, in every string of the answer; and
    # profiles in ``data`` as well as in ``included``.
    doc = answer()
    doc["meta"] = {"ada@example.net": ["jose(\tat)example.es", "li.lei@example.cn"], "n": [1.5, None]}
    doc["included"].append({"type": "tags", "id": "1", "attributes": {"name": "jane@example.org"}})
    with_profiles_in_data = {"data": [*SHUFFLED, lecture_with_authors()], "meta": {"x": 1}}
    for number, tree in enumerate([doc, with_profiles_in_data]):
        for body in [
            json.dumps(tree).encode(),
            json.dumps(tree, ensure_ascii=False, indent=2).encode(),
            json.dumps(tree).replace("@", "\\u0040").encode(),
        ]:
            stored = stripped_body(body, is_json=True)
            assert json.loads(stored) == json.loads(_whole(json.loads(body))), f"case {number} {body[:40]!r}"
            for gone in [*EMAILS, "avatar", "\\u0040example"]:
                assert gone.encode() not in stored, f"case {number} {gone}"


def test_an_answer_that_cannot_be_written_in_place_is_written_whole() -> None:
    # A repeated key (the JSON reads its last value only), a byte-order mark, UTF-16, a list: each
    # is read as JSON and written again whole, as every answer was.
    profile = json.dumps(SHUFFLED[0])
    repeated = '{"data": [], "included": [' + profile + '], "included": [' + profile + "]}"
    listed = [{"email": "a@example.org"}]
    for body in [
        repeated.encode(),
        b"\xef\xbb\xbf" + json.dumps(answer()).encode(),
        json.dumps(answer()).encode("utf-16"),
        json.dumps(listed).encode(),
    ]:
        stored = stripped_body(body, is_json=True)
        assert stored == _whole(json.loads(body)), f"case {body[:20]!r}"
        assert b"avatar" not in stored and b"example.org" not in stored, f"case {body[:20]!r}"
