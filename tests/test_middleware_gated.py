from __future__ import annotations

from pathlib import Path

import pytest

from crawler.middlewares.gated import is_login_url
from crawler.settings import GATED_LOGIN_PATHS
from tests.support.polite_server import Reply, page, redirect, run_crawl, serve


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.org/log-in", True),
        ("https://example.org/log-in/", True),
        ("https://example.org/Log-In?next=/paper", True),
        ("https://example.org/login/sso", True),
        ("https://example.org/log-inside", False),
        ("https://example.org/lecture/1-login", False),
        ("https://example.org/", False),
    ],
)
def test_is_login_url(url: str, expected: bool) -> None:
    assert is_login_url(url, GATED_LOGIN_PATHS) is expected


def _routes() -> dict[str, Reply]:
    return {
        "/paper/1": redirect("/log-in"),
        "/paper/2": redirect("/login?next=/paper/2", status=301),
        "/log-in": page("log in"),
        "/login": page("log in"),
        "/lecture/1": redirect("/lecture/1-slug", status=301),
        "/lecture/1-slug": page("lecture one"),
    }


def test_gated_downloads_are_dropped_and_counted(tmp_path: Path) -> None:
    with serve(_routes()) as server:
        urls = [server.url(p) for p in ("/paper/1", "/paper/2", "/lecture/1")]
        result = run_crawl(urls, {}, tmp_path)
    assert sorted(server.paths()) == ["/lecture/1", "/lecture/1-slug", "/paper/1", "/paper/2"]
    assert result.stats["gated/count"] == 2
    assert sorted((e["url"].rsplit("/", 2)[-2:], e["error"], e["gated"]) for e in result.errors) == [
        (["paper", "1"], "IgnoreRequest", True),
        (["paper", "2"], "IgnoreRequest", True),
    ]
    assert [(i["url"].rsplit("/", 1)[1], i["body"], i["gated"]) for i in result.items] == [
        ("1-slug", "lecture one", False)
    ]


def test_gated_downloads_can_reach_the_spider_flagged(tmp_path: Path) -> None:
    with serve(_routes()) as server:
        result = run_crawl([server.url("/paper/1")], {"GATED_ACTION": "flag"}, tmp_path)
    assert server.paths() == ["/paper/1"]
    assert result.stats["gated/count"] == 1
    assert [(i["status"], i["gated"], i["flags"]) for i in result.items] == [(302, True, ["gated"])]
    assert result.errors == []
