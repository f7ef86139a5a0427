from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.exceptions import NotConfigured

from crawler.middlewares.robots_delay import RobotsCrawlDelayMiddleware
from tests.support.pace import spaced_at_least
from tests.support.polite_server import Reply, gaps, page, run_crawl, serve
from tests.support.settings import project_crawler

PAGES = {f"/p{i}": page(f"p{i}") for i in range(5)}


def _robots(text: str) -> Reply:
    return Reply(body=text.encode(), headers={"Content-Type": "text/plain"})


def test_not_configured_without_robots_or_rate() -> None:
    with pytest.raises(NotConfigured):
        RobotsCrawlDelayMiddleware.from_crawler(project_crawler(settings_dict={"ROBOTSTXT_OBEY": False}))
    middleware = RobotsCrawlDelayMiddleware.from_crawler(
        project_crawler(settings_dict={"HOST_MAX_RATE": 4, "DOWNLOAD_DELAY": 0.1})
    )
    assert middleware.host_floor("example.org") == 0.25


def test_crawl_delay_and_disallow_are_obeyed_despite_autothrottle_and_jitter(tmp_path: Path) -> None:
    routes = {
        "/robots.txt": _robots("User-agent: *\nCrawl-delay: 0.5\nDisallow: /private/\n"),
        **PAGES,
        "/private/a": page("secret a"),
        "/private/b": page("secret b"),
    }
    settings = {
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 4,
        "DOWNLOAD_DELAY_JITTER": 0.5,
        "AUTOTHROTTLE_ENABLED": True,
        "AUTOTHROTTLE_START_DELAY": 0,
        "AUTOTHROTTLE_TARGET_CONCURRENCY": 8,
    }
    urls = [*(f"/p{i}" for i in range(5)), "/private/a", "/private/b"]
    with serve(routes) as server:
        result = run_crawl([server.url(u) for u in urls], settings, tmp_path)
    assert server.paths()[0] == "/robots.txt"
    assert sorted(server.paths()[1:]) == [f"/p{i}" for i in range(5)]
    between = gaps(server.log)
    assert len(between) == 5
    assert spaced_at_least(between, 0.5), between
    assert max(between) < 1.0
    assert {i["slot_delay"] for i in result.items} == {0.5}
    stats = result.stats
    assert stats["robotstxt/forbidden"] == 2
    assert stats["robotstxt/crawl_delay/hosts"] == 1
    assert sorted(e["url"].rsplit("/", 1)[1] for e in result.errors) == ["a", "b"]
    assert {e["error"] for e in result.errors} == {"IgnoreRequest"}


def test_forbidden_count_is_visible_when_nothing_is_refused(tmp_path: Path) -> None:
    routes = {"/robots.txt": _robots("User-agent: *\nDisallow:\n"), "/p0": page("p0")}
    with serve(routes) as server:
        result = run_crawl([server.url("/p0")], {"ROBOTSTXT_OBEY": True}, tmp_path)
    assert server.paths() == ["/robots.txt", "/p0"]
    assert result.stats["robotstxt/forbidden"] == 0
    assert "robotstxt/crawl_delay/hosts" not in result.stats


def test_crawl_delay_is_capped(tmp_path: Path) -> None:
    routes = {"/robots.txt": _robots("User-agent: *\nCrawl-delay: 30\n"), **PAGES}
    settings = {"ROBOTSTXT_OBEY": True, "ROBOTSTXT_CRAWLDELAY_MAX": 0.4}
    with serve(routes) as server:
        result = run_crawl([server.url(f"/p{i}") for i in range(3)], settings, tmp_path)
    between = gaps(server.log)
    assert len(between) == 3
    assert spaced_at_least(between, 0.4), between
    assert max(between) < 1.0
    assert result.stats["robotstxt/crawl_delay/capped"] == 1


def test_crawl_delay_can_be_turned_off(tmp_path: Path) -> None:
    routes = {"/robots.txt": _robots("User-agent: *\nCrawl-delay: 5\n"), **PAGES}
    settings = {"ROBOTSTXT_OBEY": True, "ROBOTSTXT_CRAWLDELAY_ENABLED": False}
    with serve(routes) as server:
        result = run_crawl([server.url(f"/p{i}") for i in range(3)], settings, tmp_path)
    assert max(gaps(server.log)) < 1.0
    assert len(result.items) == 3
    assert result.stats["robotstxt/forbidden"] == 0


def test_host_max_rate_is_a_floor_under_jitter(tmp_path: Path) -> None:
    settings = {"HOST_MAX_RATE": 2.5, "DOWNLOAD_DELAY": 0.1, "DOWNLOAD_DELAY_JITTER": 0.5}
    with serve(PAGES) as server:
        result = run_crawl([server.url(f"/p{i}") for i in range(5)], settings, tmp_path)
    between = gaps(server.log)
    assert len(between) == 4
    assert spaced_at_least(between, 0.4), between
    assert max(between) < 0.4 * 1.5
    assert {i["slot_delay"] for i in result.items} == {0.4}
