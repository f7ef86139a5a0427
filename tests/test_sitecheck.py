"""`eventcrawl check-site` against the replica, and against a replica whose site changed overnight."""

from __future__ import annotations

from pathlib import Path

from tests.support.replica import eventcrawl, running_replica


def check(base: str, tmp_path: Path) -> tuple[int, str]:
    result = eventcrawl(
        "check-site", "--web-base", base, "--api-base", base + "/api/v1", "--delay", "0",
        cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, result.stdout


def test_the_replica_passes_and_every_field_says_where_it_came_from(tmp_path: Path) -> None:
    with running_replica(tmp_path / "replica", "--lectures", "30") as replica:
        code, out = check(replica.base_url, tmp_path)
        kinds = [r["kind"] for r in replica.requests()]
    assert code == 0, out
    assert out.splitlines()[-1] == "verdict: OK, every required field was found"
    rows = {
        line.split()[0]: line.split()[1:3]
        for line in out.splitlines()
        if line.startswith(("title ", "authors "))
    }
    assert rows == {"title": ["next_data", "next_data"], "authors": ["next_data", "next_data"]}
    assert "no attributes the crawler does not know" in out
    assert "robots.txt " + replica.base_url + "/robots.txt: HTTP 200" in out
    # Politely little: robots.txt, one listing page, two lecture pages.
    assert sorted(kinds) == ["lecture_page", "lecture_page", "listing", "robots"]


def test_a_renamed_attribute_fails_the_check_and_is_named(tmp_path: Path) -> None:
    with running_replica(
        tmp_path / "replica", "--lectures", "30", "--rename-attribute", "keywords=topics"
    ) as replica:
        code, out = check(replica.base_url, tmp_path)
    assert code == 1, out
    assert out.splitlines()[-1] == "verdict: FAIL, missing keywords"
    assert "new attribute `topics`: 5 of 5 listed lectures" in out
