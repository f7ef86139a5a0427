"""`eventcrawl check-site` against the replica, and against a replica whose site changed overnight."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from crawler.app.cli import main
from crawler.sitetools.fetcher import fetch_url
from tests.support.bad_site import BadSite, Canned, Rule
from tests.support.replica import RunningReplica, eventcrawl, running_replica


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


# --- A site that misbehaves: robots.txt, redirects off the site, listings that are no listing, trickles.
# One replica serves every test below; a BadSite in front of it changes what each test needs.

EMAIL = re.compile(rb"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
ROBOTS_WITH_EMAIL = b"# Contact: webmaster@mail.example.org\nUser-agent: *\nDisallow: /log-in\n"


@pytest.fixture(scope="module")
def replica(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningReplica]:
    with running_replica(tmp_path_factory.mktemp("replica"), "--lectures", "30") as running:
        yield running


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The command as its entry point runs it, in this process (it returns before any crawl)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def site_args(base: str, *extra: str) -> list[str]:
    return ["--web-base", base, "--api-base", base, "--delay", "0", *extra]


def only(path: str, answer: Canned) -> Rule:
    return lambda asked: answer if urlsplit(asked).path == path else None


def test_record_strips_personal_data_from_every_file_it_writes(
    replica: RunningReplica, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "recording"
    with BadSite(replica.base_url, only("/robots.txt", Canned(body=ROBOTS_WITH_EMAIL))) as site:
        code, stdout, err = run_cli(capsys, "record", "--out", str(out), *site_args(site.base_url))
    assert code == 0, err
    files = sorted(p for p in out.rglob("*") if p.is_file())
    assert {p.name for p in files} >= {"recording.json", "00-robots.txt", "01-listing.json"}
    assert {p.relative_to(out).as_posix(): EMAIL.findall(p.read_bytes()) for p in files} == {
        p.relative_to(out).as_posix(): [] for p in files
    }
    robots = (out / "bodies" / "00-robots.txt").read_bytes()
    assert robots == b"# Contact: [email removed]\nUser-agent: *\nDisallow: /log-in\n"
    index = json.loads((out / "recording.json").read_text(encoding="utf-8"))
    assert len(index["lecture_ids"]) == 3
    assert stdout.strip() == f"recorded 5 answers (3 lectures) in {out}"


def test_a_robots_txt_that_disallows_everything_stops_both_commands_after_it(
    replica: RunningReplica, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rule = only("/robots.txt", Canned(body=b"User-agent: *\nDisallow: /\n"))
    with BadSite(replica.base_url, rule) as site:
        code, out, _ = run_cli(capsys, "check-site", *site_args(site.base_url))
        assert code == 1
        assert out.splitlines()[-1] == (
            "verdict: FAIL, robots.txt disallows the lecture listing for this crawler; nothing else was asked"
        )
        assert site.paths == ["/robots.txt"]
        code, out, err = run_cli(capsys, "record", "--out", str(tmp_path / "rec"), *site_args(site.base_url))
        assert site.paths == ["/robots.txt", "/robots.txt"]
    assert code == 1
    assert err.strip().splitlines() == [
        "eventcrawl: nothing recorded: robots.txt disallows the lecture listing for this crawler; "
        "nothing else was asked"
    ]
    assert not (tmp_path / "rec").exists()


def test_lecture_pages_robots_txt_disallows_are_not_asked_for(
    replica: RunningReplica, capsys: pytest.CaptureFixture[str]
) -> None:
    rule = only("/robots.txt", Canned(body=b"User-agent: *\nDisallow: /lecture/\n"))
    with BadSite(replica.base_url, rule) as site:
        code, out, _ = run_cli(capsys, "check-site", *site_args(site.base_url))
    assert code == 1
    assert [urlsplit(p).path for p in site.paths] == ["/robots.txt", "/api/v1/thin_lectures"]
    assert sum(line.startswith("problem: robots.txt disallows lecture ") for line in out.splitlines()) == 2
    assert out.splitlines()[-1] == "verdict: FAIL, no lecture could be read; 2 problem(s)"


@pytest.mark.parametrize(
    ("status", "code", "verdict"),
    [
        (404, 0, "verdict: OK, every required field was found"),
        (503, 1, "could not be read (HTTP 503); nothing else was asked of the site"),
    ],
)
def test_a_missing_robots_txt_allows_everything_and_an_unreadable_one_nothing(
    replica: RunningReplica, capsys: pytest.CaptureFixture[str], status: int, code: int, verdict: str
) -> None:
    with BadSite(replica.base_url, only("/robots.txt", Canned(status=status))) as site:
        got, out, _ = run_cli(capsys, "check-site", *site_args(site.base_url))
    assert (got, out.splitlines()[-1].endswith(verdict)) == (code, True), out
    assert len(site.paths) == (4 if status == 404 else 1)


def test_a_redirect_off_the_site_is_not_followed_and_is_counted(
    replica: RunningReplica, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def rule(path: str) -> Canned | None:
        if path.startswith("/lecture/"):
            return Canned(status=302, location=replica.base_url + path)
        return None

    before = len(replica.requests())
    with BadSite(replica.base_url, rule) as site:
        code, out, _ = run_cli(capsys, "check-site", *site_args(site.base_url))
        record, _, err = run_cli(capsys, "record", "--out", str(tmp_path / "rec"), *site_args(site.base_url))
    # The replica, another origin, was never asked for a page: only the forwarded robots.txt and listings.
    asked = [r["kind"] for r in replica.requests()[before:]]
    assert sorted(asked) == ["listing", "listing", "robots", "robots"]
    assert code == 1
    upstream = replica.base_url
    off = [line for line in out.splitlines() if line.startswith("redirects off the site")]
    assert len(off) == 1 and off[0].startswith("redirects off the site, not followed: 2 (lecture ")
    assert off[0].count(f"-> {upstream}") == 2
    assert record == 1 and "nothing recorded: no lecture page could be recorded" in err
    assert not (tmp_path / "rec").exists()


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (
            Canned(
                body=b"<html>Down for maintenance, write to ops@mail.example.org</html>",
                content_type="text/html",
            ),
            "the listing is not JSON (HTTP 200, text/html)",
        ),
        (
            Canned(body=b"[]", content_type="application/json"),
            "the listing is JSON, but not a JSON:API document (HTTP 200, application/json)",
        ),
        (
            Canned(body=b'{"errors": [{"title": "ops@mail.example.org"}]}', content_type="application/json"),
            "the listing is JSON, but not a JSON:API document (HTTP 200, application/json)",
        ),
    ],
)
def test_a_listing_that_is_no_json_api_document_fails_record_and_nothing_is_written(
    replica: RunningReplica, tmp_path: Path, capsys: pytest.CaptureFixture[str], answer: Canned, says: str
) -> None:
    rule = only("/api/v1/thin_lectures", answer)
    with BadSite(replica.base_url, rule) as site:
        code, out, err = run_cli(capsys, "record", "--out", str(tmp_path / "rec"), *site_args(site.base_url))
    assert code == 1
    assert err.strip() == f"eventcrawl: nothing recorded: {says}"
    assert not EMAIL.search((out + err).encode())
    assert not (tmp_path / "rec").exists()


def test_an_answer_that_trickles_in_is_cut_off_at_the_timeout_for_the_whole_answer(
    replica: RunningReplica, capsys: pytest.CaptureFixture[str]
) -> None:
    # 60 bytes, one every 0.1 s: 6 s for the whole answer, never 1 s without a byte.
    slow = Canned(body=b"User-agent: *\n" + b"#" * 46, trickle=0.1)
    with BadSite(replica.base_url, only("/robots.txt", slow)) as site:
        started = time.monotonic()
        answer = fetch_url(site.base_url + "/robots.txt", {}, timeout=1.0)
        took = time.monotonic() - started
        started = time.monotonic()
        code, out, _ = run_cli(capsys, "check-site", *site_args(site.base_url, "--timeout", "1"))
        check_took = time.monotonic() - started
    assert (answer.status, answer.error, answer.body) == (0, "no whole answer within 1 s", b"")
    assert 0.9 < took < 2.0
    assert code == 1 and check_took < 2.5
    assert out.splitlines()[-1] == (
        f"verdict: FAIL, robots.txt {site.base_url}/robots.txt could not be read "
        "(no whole answer within 1 s); nothing else was asked of the site"
    )


def test_record_of_a_site_that_cannot_be_reached_fails_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Port 9 on loopback: nothing listens there.
    code, out, err = run_cli(
        capsys, "record", "--out", str(tmp_path / "rec"), *site_args("http://127.0.0.1:9")
    )
    assert code == 1
    assert out == ""
    assert err.startswith(
        "eventcrawl: nothing recorded: robots.txt http://127.0.0.1:9/robots.txt could not be read ("
    )
    assert not (tmp_path / "rec").exists()


def test_record_of_an_event_without_lectures_is_not_a_success(
    replica: RunningReplica, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(
        capsys, "record", "--event-id", "999", "--out", str(tmp_path / "rec"), *site_args(replica.base_url)
    )
    assert code == 1
    assert err.strip() == (
        "eventcrawl: nothing recorded: no lecture page could be recorded: event 999 lists no lectures "
        "(the API answered HTTP 200)"
    )
    assert not (tmp_path / "rec").exists()


def test_a_crawl_delay_no_crawl_would_wait_is_capped_as_the_crawl_caps_it(
    replica: RunningReplica, capsys: pytest.CaptureFixture[str]
) -> None:
    rule = only("/robots.txt", Canned(body=b"User-agent: *\nCrawl-delay: 100000\nDisallow: /api/\n"))
    with BadSite(replica.base_url, rule) as site:
        code, out, _ = run_cli(capsys, "check-site", *site_args(site.base_url))
    assert code == 1
    assert out.splitlines()[0] == (
        f"robots.txt {site.base_url}/robots.txt: HTTP 200, Crawl-delay 60 s; listing DISALLOWED, "
        "lecture pages allowed"
    )
