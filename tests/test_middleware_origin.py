from __future__ import annotations

from pathlib import Path

import pytest

from crawler.middlewares.origin import origin
from tests.support.polite_server import page, redirect, run_crawl, serve


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://underline.io/lecture/1", ("https", "underline.io", 443)),
        ("HTTP://Underline.IO:80/x", ("http", "underline.io", 80)),
        ("http://127.0.0.1:8080/a?b", ("http", "127.0.0.1", 8080)),
        ("http://[::1]:9/", ("http", "::1", 9)),
    ],
)
def test_an_origin_is_scheme_host_and_port(url: str, expected: tuple[str, str, int]) -> None:
    assert origin(url) == expected


def test_redirects_leave_the_origin_only_to_be_refused_and_counted(tmp_path: Path) -> None:
    with serve({"/elsewhere": page("another site on the same host")}) as other:
        port = other.url("/").split(":")[2].split("/")[0]
        routes = {
            "/lecture/1": redirect("/lecture/1-slug", status=301),
            "/lecture/1-slug": page("lecture one"),
            "/lecture/2": redirect(other.url("/elsewhere")),
            "/lecture/3": redirect(f"http://localhost:{port}/elsewhere"),
            "/lecture/4": redirect("https://169.254.169.254/latest/meta-data/"),
        }
        with serve(routes) as site:
            urls = [site.url(f"/lecture/{i}") for i in (1, 2, 3, 4)]
            result = run_crawl(urls, {"OFFORIGIN_ENABLED": True}, tmp_path)
    assert other.paths() == []
    assert sorted(site.paths()) == ["/lecture/1", "/lecture/1-slug", "/lecture/2", "/lecture/3", "/lecture/4"]
    assert [i["body"] for i in result.items] == ["lecture one"]
    assert result.stats["offorigin/redirects"] == 3
    assert sorted(e["url"].rsplit("/", 1)[1] for e in result.errors) == ["2", "3", "4"]
    assert {e["error"] for e in result.errors} == {"IgnoreRequest"}
