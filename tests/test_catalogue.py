"""`eventcrawl events` against the replica over HTTP on loopback: the library's events, politely, kept.

The expected events and lecture counts come from the replica's own site model
(:func:`crawler.replica.layout.build_site`), counted here without the code under test.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from crawler import settings as defaults
from crawler.app.cli import main
from crawler.replica.faults import FaultProfile, SiteFaults
from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.replica.server import ReplicaServer, Router
from crawler.schedule.config import load_config
from crawler.sitetools import events as catalogue
from crawler.sitetools.fetcher import PoliteFetcher
from tests.support.pace import spaced_at_least
from tests.support.replica import RunningReplica, eventcrawl, running_replica
from tests.support.sites import Override

LECTURES = 120
SIDE_EVERY = 4
PAGE_SIZE = 25
DELAY = 0.2


def expected_rows(site: ReplicaSite) -> list[dict[str, Any]]:
    """The events of ``site`` as ``--json`` must show them: by start date, with their lecture counts."""
    counts = Counter(lec.event_id for lec in site.lectures.values())
    rows = [
        {
            "id": event.id,
            "name": event.name,
            "start_date": event.start_date.isoformat(),
            "end_date": event.end_date.isoformat(),
            "location": event.location,
            "lectures": counts[event.id],
        }
        for event in site.events.values()
        if counts[event.id]
    ]
    return sorted(rows, key=lambda r: (r["start_date"], int(r["id"])))


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    # The site the replica subprocess serves with the same options (seed 0).
    return build_site(load_records(), seed=0, lectures=LECTURES, side_event_every=SIDE_EVERY)


@dataclass
class FirstCall:
    replica: RunningReplica
    state: Path
    stdout: str
    stderr: str
    requests: list[dict[str, Any]]


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FirstCall]:
    work = tmp_path_factory.mktemp("events")
    extra = ("--lectures", str(LECTURES), "--side-event-every", str(SIDE_EVERY))
    with running_replica(work / "replica", *extra) as replica:
        state = work / "state"
        result = events(replica, state)
        assert result.returncode == 0, result.stderr
        yield FirstCall(replica, state, result.stdout, result.stderr, replica.requests())


def events(replica: RunningReplica, state: Path, *extra: str) -> Any:
    return eventcrawl(
        "events", "--api-base", replica.base_url, "--state", str(state),
        "--delay", str(DELAY), "--page-size", str(PAGE_SIZE), *extra, timeout=120,
    )  # fmt: skip


def as_args(call: FirstCall, *extra: str) -> list[str]:
    return [
        "events", "--api-base", call.replica.base_url, "--state", str(call.state),
        "--delay", str(DELAY), "--page-size", str(PAGE_SIZE), *extra,
    ]  # fmt: skip


def test_the_table_shows_every_event_with_its_dates_and_lecture_count(
    first: FirstCall, site: ReplicaSite
) -> None:
    lines = first.stdout.splitlines()
    expected = expected_rows(site)
    assert [len(expected), sum(r["lectures"] for r in expected)] == [2, LECTURES]
    assert lines[0].split() == ["id", "name", "start", "end", "lectures"]
    assert [line.split() for line in lines[1:3]] == [
        [r["id"], *r["name"].split(), r["start_date"], r["end_date"], str(r["lectures"])] for r in expected
    ]
    assert lines[3].startswith(f"2 of 2 events; {LECTURES} lectures in 5 listing pages, read ")
    # The last line is the configuration's line, as a run reads it.
    assert lines[-1] == 'event_ids = ["469", "502"]'
    config = first.state.parent / "run.toml"
    config.write_text("[crawl]\n" + lines[-1] + "\n", encoding="utf-8")
    assert load_config(config).event_ids == ("469", "502")


def test_the_listing_is_read_once_politely_and_without_profiles(first: FirstCall) -> None:
    requests = first.requests
    assert [r["kind"] for r in requests] == ["robots"] + ["listing"] * math.ceil(LECTURES / PAGE_SIZE)
    assert {r["user_agent"] for r in requests} == {defaults.USER_AGENT}
    assert {r["status"] for r in requests} == {200}
    for number, r in enumerate(requests[1:], start=1):
        query = parse_qs(urlsplit(r["path"]).query)
        assert query == {
            "filter[library]": ["true"],
            "filter[scope]": ["published"],
            "include": ["event"],
            "page[size]": [str(PAGE_SIZE)],
            "page[number]": [str(number)],
        }, f"{number=}, {r=}"
    gaps = [b["time"] - a["time"] for a, b in itertools.pairwise(requests)]
    assert spaced_at_least(gaps, DELAY), gaps


def test_the_kept_file_holds_the_events_and_nothing_personal(first: FirstCall, site: ReplicaSite) -> None:
    kept = json.loads((first.state / "events.json").read_text(encoding="utf-8"))
    assert kept["events"] == expected_rows(site)
    assert kept["api_base"] == first.replica.base_url
    assert (kept["pages"], kept["lectures"], kept["total_count"], kept["notes"]) == (
        5,
        LECTURES,
        LECTURES,
        [],
    )
    read_at = datetime.fromisoformat(kept["read_at"])
    assert timedelta(0) <= datetime.now(UTC) - read_at < timedelta(minutes=5)
    text = (first.state / "events.json").read_text(encoding="utf-8")
    assert "@" not in text
    # The events' welcome texts are not kept.
    assert all(event.description[:40] not in text for event in site.events.values())


def test_a_second_call_asks_nothing_and_refresh_reads_again(
    first: FirstCall, site: ReplicaSite, capsys: pytest.CaptureFixture[str]
) -> None:
    before = len(first.replica.requests())
    again = events(first.replica, first.state)
    assert again.returncode == 0, again.stderr
    assert len(first.replica.requests()) == before
    assert again.stdout.splitlines()[:3] == first.stdout.splitlines()[:3]
    assert "from " + str(first.state / "events.json") in again.stdout

    # --json and --refresh in this process, to keep the test short.
    assert main(as_args(first, "--json")) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["events"] == expected_rows(site)
    assert shown["event_ids"] == ["469", "502"]
    assert shown["from_cache"] is True
    assert len(first.replica.requests()) == before

    assert main(as_args(first, "--refresh", "--json")) == 0
    assert json.loads(capsys.readouterr().out)["from_cache"] is False
    assert len(first.replica.requests()) == before + 1 + math.ceil(LECTURES / PAGE_SIZE)


@pytest.mark.parametrize(
    ("match", "ids"),
    [
        (["2024"], ["469"]),
        (["emnlp"], ["469", "502"]),
        (["SUZHOU"], []),  # the place is not the name
        (["502"], ["502"]),
        (["50"], []),  # an id matches whole
        (["acl", "2025"], ["502"]),
        (["nothing like it"], []),
    ],
)
def test_match_filters_on_the_name_or_the_id(
    first: FirstCall, capsys: pytest.CaptureFixture[str], match: list[str], ids: list[str]
) -> None:
    # In this process, from the kept file (the command's own process is tested above).
    args = [a for m in match for a in ("--match", m)]
    before = len(first.replica.requests())
    status = main(as_args(first, *args))
    out, err = capsys.readouterr()
    assert status == 0, err
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[1 : 1 + len(ids)]] == ids
    assert lines[1 + len(ids)].startswith(f"{len(ids)} of 2 events")
    assert lines[-1] == "event_ids = [" + ", ".join(f'"{i}"' for i in ids) + "]"
    assert ("no event matches" in err) == (not ids)
    assert len(first.replica.requests()) == before


def test_a_site_that_cannot_be_reached_fails_with_status_1_and_keeps_the_old_file(first: FirstCall) -> None:
    kept = (first.state / "events.json").read_bytes()
    result = eventcrawl(
        "events", "--api-base", "http://127.0.0.1:9", "--state", str(first.state), "--delay", "0", timeout=60
    )
    assert result.returncode == 1, result.stderr
    assert "the site cannot be reached: http://127.0.0.1:9/robots.txt" in result.stderr
    assert "Traceback" not in result.stderr
    assert (first.state / "events.json").read_bytes() == kept


def test_robots_disallow_stops_before_the_listing(site: ReplicaSite, tmp_path: Path) -> None:
    faults = FaultProfile(name="robots", robots_disallow=("/api/v1/thin_lectures",))
    with ReplicaServer(site, faults=faults) as server:
        base = server.base_url
        result = eventcrawl(
            "events", "--api-base", server.base_url, "--state", str(tmp_path / "state"), "--delay", "0",
            timeout=60,
        )  # fmt: skip
        requests = server.requests
    assert result.returncode == 1
    assert f"robots.txt ({base}/robots.txt) disallows the library listing" in result.stderr
    assert [r.path for r in requests] == ["/robots.txt"]
    assert not (tmp_path / "state" / "events.json").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--page-size", "0"], "--page-size must be from 1 to 100, not 0"),
        (["--page-size", "101"], "--page-size must be from 1 to 100, not 101"),
        (["--max-pages", "0"], "--max-pages must be at least 1, not 0"),
        (["--delay", "-1"], "--max-age-hours and --delay must be numbers of 0 or more"),
        (["--max-age-hours", "nan"], "--max-age-hours and --delay must be numbers of 0 or more"),
        (["--api-base", "app.underline.io"], "--api-base 'app.underline.io' must be an http"),
    ],
)
def test_a_usage_mistake_is_status_2_and_asks_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    status = main(["events", "--state", str(tmp_path / "state"), *args])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith(f"eventcrawl: {says}")
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "state").exists()


def test_an_event_page_url_in_event_ids_is_its_id(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        '[crawl]\nevent_ids = ["https://underline.io/events/469/sessions?eventSessionId=6001", 502]\n',
        encoding="utf-8",
    )
    assert load_config(config).event_ids == ("469", "502")


# -- the library on its own, in this process (the replica still answers over HTTP) ------------------


@pytest.fixture(scope="module")
def small_site() -> ReplicaSite:
    return build_site(load_records(), seed=3, lectures=30, side_event_every=3)


def small_counts(site: ReplicaSite) -> dict[str, int]:
    return dict(Counter(lec.event_id for lec in site.lectures.values()))


def listing_numbers(server: ReplicaServer) -> list[int]:
    return [
        int(parse_qs(urlsplit(r.path).query)["page[number]"][0])
        for r in server.requests
        if r.kind == "listing"
    ]


def test_a_crawl_delay_in_robots_raises_the_pace(small_site: ReplicaSite) -> None:
    with ReplicaServer(small_site, faults=FaultProfile(name="robots", crawl_delay=0.3)) as server:
        read = catalogue.read_catalogue(server.base_url, delay=0.0, page_size=10)
        times = [r.time for r in server.requests]
    assert {e.event_id: e.lectures for e in read.events} == small_counts(small_site)
    assert read.notes == ["robots.txt asks for 0.3 s between requests"]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(gaps) == 3 and spaced_at_least(gaps, 0.3), gaps


def test_a_page_that_fails_once_is_asked_again_and_one_that_keeps_failing_fails_the_read(
    small_site: ReplicaSite, tmp_path: Path
) -> None:
    with ReplicaServer(small_site, site_faults=SiteFaults(listing_errors={2: 1})) as server:
        read = catalogue.read_catalogue(server.base_url, delay=0.0, page_size=10, retry_waits=(0.0,))
        assert listing_numbers(server) == [1, 2, 2, 3]
    assert {e.event_id: e.lectures for e in read.events} == small_counts(small_site)

    state = tmp_path / "state"
    state.mkdir()
    (state / "events.json").write_text("kept\n")
    with ReplicaServer(small_site, site_faults=SiteFaults(listing_errors={2: None})) as server:
        with pytest.raises(catalogue.CatalogueError, match=r"listing page 2 failed \(HTTP 500\)"):
            catalogue.events(state, server.base_url, delay=0.0, page_size=10, retry_waits=(0.0, 0.0))
        assert listing_numbers(server) == [1, 2, 2, 2]
    assert (state / "events.json").read_text() == "kept\n"


def test_a_listing_that_does_not_end_stops_with_an_error(small_site: ReplicaSite) -> None:
    with ReplicaServer(small_site, site_faults=SiteFaults(endless_listing="absent")) as server:
        with pytest.raises(catalogue.CatalogueError, match="more than 5 pages"):
            catalogue.read_catalogue(server.base_url, delay=0.0, page_size=10, max_pages=5)
        assert listing_numbers(server) == [1, 2, 3, 4, 5]
    # With meta kept, the walk stops where meta says, whatever lies beyond.
    with ReplicaServer(small_site, site_faults=SiteFaults(endless_listing="small")) as server:
        read = catalogue.read_catalogue(server.base_url, delay=0.0, page_size=10)
        assert listing_numbers(server) == [1, 2, 3]
    assert {e.event_id: e.lectures for e in read.events} == small_counts(small_site)


@pytest.mark.parametrize("size", [0, 101, 500])
def test_a_page_size_the_api_does_not_take_is_refused_before_any_request(
    small_site: ReplicaSite, size: int
) -> None:
    # The command line refuses it too; a caller of the module gets the same bound (the replica, as the
    # API may some day, would answer 500 lectures a page).
    with ReplicaServer(small_site) as server:
        with pytest.raises(ValueError, match="page size must be from 1 to 100"):
            catalogue.read_catalogue(server.base_url, delay=0.0, page_size=size)
        assert server.requests == [], f"page size {size}"


class ListingAs:
    """Answers every listing page with one fixed body (a page JSON the site never sent)."""

    def __init__(self, pages: dict[int, tuple[bytes, str]]) -> None:
        self.pages = pages

    def lecture_page(self, lecture: Any, query: Any) -> None:
        return None

    def listing(self, lectures: Any, size: int, number: int) -> Override | None:
        found = self.pages.get(number)
        return Override(200, found[0], found[1], []) if found else None


def serve_listing(site: ReplicaSite, pages: dict[int, tuple[bytes, str]]) -> ReplicaServer:
    return ReplicaServer(site, overrides=lambda s, base: ListingAs(pages))


@pytest.mark.parametrize(
    ("page", "says"),
    [
        ((b"<!DOCTYPE html><html>maintenance</html>", "text/html"), "listing page 2 is not JSON (text/html)"),
        (
            (b'["not", "an", "object"]', "application/json"),
            "listing page 2 cannot be read: the answer is not",
        ),
        (
            (b'{"data": {"type": "x", "id": "1"}}', "application/json"),
            "page 2 cannot be read: data is not a list",
        ),
    ],
)
def test_a_page_that_is_not_a_listing_fails_the_read(
    small_site: ReplicaSite, page: tuple[bytes, str], says: str
) -> None:
    with (
        serve_listing(small_site, {2: page}) as server,
        pytest.raises(catalogue.CatalogueError, match=re.escape(says)),
    ):
        catalogue.read_catalogue(server.base_url, delay=0.0, page_size=10)


def test_a_page_repeating_the_last_one_fails_the_read(small_site: ReplicaSite) -> None:
    doc = {
        "data": [{"type": "thin_lectures", "id": "1", "relationships": {}}],
        "meta": {},
    }
    body = json.dumps(doc).encode()
    pages = {1: (body, "application/json"), 2: (body, "application/json")}
    with (
        serve_listing(small_site, pages) as server,
        pytest.raises(catalogue.CatalogueError, match="page 2 brings no lecture not seen before"),
    ):
        catalogue.read_catalogue(server.base_url, delay=0.0, page_size=10)


def test_an_empty_page_before_the_last_its_meta_counts_fails_the_read(small_site: ReplicaSite) -> None:
    """The replica's page 2 of 3 answers 200 with no lectures: the library is cut short, not whole."""
    empty = json.dumps({"data": [], "included": [], "meta": {"total_pages": 3}}).encode()
    with (
        serve_listing(small_site, {2: (empty, "application/json")}) as server,
        pytest.raises(catalogue.CatalogueError, match="listing page 2 of 3 lists no lecture"),
    ):
        catalogue.read_catalogue(server.base_url, delay=0.0, page_size=len(small_site.lectures) // 3 + 1)


def test_a_stale_or_damaged_or_other_sites_file_is_read_again(
    small_site: ReplicaSite, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    with ReplicaServer(small_site) as server:
        answer = catalogue.events(state, server.base_url, delay=0.0, page_size=10)
        assert not answer.from_cache
        asked = len(server.requests)
        assert catalogue.events(state, server.base_url, delay=0.0, page_size=10).from_cache
        assert len(server.requests) == asked
        kept = json.loads((state / "events.json").read_text())

        stale = {**kept, "read_at": (datetime.now(UTC) - timedelta(hours=25)).isoformat()}
        (state / "events.json").write_text(json.dumps(stale))
        assert not catalogue.events(state, server.base_url, delay=0.0, page_size=10).from_cache
        assert not catalogue.events(state, server.base_url, max_age_hours=0, delay=0.0).from_cache

        (state / "events.json").write_text('{"format": 1, "read_at": "yesterday"')
        assert not catalogue.events(state, server.base_url, delay=0.0, page_size=10).from_cache

        other = {**kept, "api_base": "https://app.underline.io"}
        (state / "events.json").write_text(json.dumps(other))
        answer = catalogue.events(state, server.base_url, delay=0.0, page_size=10)
        assert not answer.from_cache
    assert {e.event_id: e.lectures for e in answer.catalogue.events} == small_counts(small_site)
    assert catalogue.load_catalogue(state / "events.json") == answer.catalogue


def test_the_replica_answers_the_library_listing_with_every_event_and_its_dates(
    small_site: ReplicaSite,
) -> None:
    router = Router(small_site, "http://replica.test")
    library = (
        "/api/v1/thin_lectures?filter[library]=true&filter[scope]=published&include=event&page[size]=500"
    )
    whole = json.loads(router.respond(library, {}).body)
    assert sorted(d["id"] for d in whole["data"]) == sorted(small_site.lectures)
    assert whole["meta"] == {"total_pages": 1, "total_count": len(small_site.lectures)}
    events = {r["id"]: r["attributes"] for r in whole["included"] if r["type"] == "thin_events"}
    assert {i: (a["start_date"], a["end_date"]) for i, a in events.items()} == {
        e.id: (e.start_date.isoformat(), e.end_date.isoformat()) for e in small_site.events.values()
    }
    # The other filters still narrow it; an unfiltered listing answers the same lectures.
    narrowed = json.loads(router.respond(library + "&filter[event_id]=469", {}).body)
    assert {d["attributes"]["event_id"] for d in narrowed["data"]} == {469}
    assert len(narrowed["data"]) == small_counts(small_site)["469"]
    unfiltered = router.respond("/api/v1/thin_lectures?include=event&page[size]=500", {}).body
    assert json.loads(unfiltered)["data"] == whole["data"]


def test_an_empty_library_fails_and_many_problems_are_said_briefly(small_site: ReplicaSite) -> None:
    empty = json.dumps({"data": [], "meta": {"total_pages": 0}}).encode()
    with (
        serve_listing(small_site, {1: (empty, "application/json")}) as server,
        pytest.raises(catalogue.CatalogueError, match="the library listing lists no lecture"),
    ):
        catalogue.read_catalogue(server.base_url, delay=0.0)
    # 30 lectures without an event, a problem each, on one page.
    doc = {
        "data": [{"type": "thin_lectures", "id": str(i)} for i in range(1, 31)],
        "meta": {"total_pages": 1},
    }
    with serve_listing(small_site, {1: (json.dumps(doc).encode(), "application/json")}) as server:
        read = catalogue.read_catalogue(server.base_url, delay=0.0)
    assert read.lectures == 30 and read.events == []
    assert len(read.notes) == catalogue.MAX_NOTES
    assert read.notes[0] == "page 1: lecture 1 names no event (or one whose id is not a number)"
    assert read.notes[-1] == f"and {30 - catalogue.MAX_NOTES + 1} more problems like these"


def test_a_walk_keeps_no_page_it_has_read(small_site: ReplicaSite) -> None:
    fetchers: list[PoliteFetcher] = []

    class Kept(PoliteFetcher):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            fetchers.append(self)

    with ReplicaServer(small_site) as server, pytest.MonkeyPatch.context() as patch:
        patch.setattr(catalogue, "PoliteFetcher", Kept)
        read = catalogue.read_catalogue(server.base_url, delay=0.0, page_size=5)
    assert read.pages == 6
    assert [len(f.log) for f in fetchers] == [0]


class RedirectPage2:
    """Listing page 2 redirects to the same server under another host name (another origin)."""

    def __init__(self, base: str) -> None:
        self.target = base.replace("127.0.0.1", "localhost") + "/api/v1/thin_lectures?page[number]=3"

    def lecture_page(self, lecture: Any, query: Any) -> None:
        return None

    def listing(self, lectures: Any, size: int, number: int) -> Override | None:
        return Override(302, b"", None, [("Location", self.target)]) if number == 2 else None


def test_a_listing_page_redirected_off_the_site_fails_the_read(small_site: ReplicaSite) -> None:
    with (
        ReplicaServer(small_site, overrides=lambda s, base: RedirectPage2(base)) as server,
        pytest.raises(catalogue.CatalogueError, match=r"listing page 2 failed \(redirected off the site to "),
    ):
        catalogue.read_catalogue(server.base_url, delay=0.0, page_size=10)


@pytest.mark.parametrize(
    ("number", "claimed", "delay", "line"),
    [
        (1, 1235, 1.0, "reading 1235 listing pages, one every 1 s (about 21 min)"),
        (1, 1, 1.0, None),
        (1, None, 1.0, None),
        (2, 1235, 1.0, None),
        (200, 1235, 2.5, "listing page 200 of 1235"),
        (300, None, 1.0, "listing page 300"),
    ],
)
def test_a_long_walk_says_how_long_it_takes(
    number: int, claimed: int | None, delay: float, line: str | None
) -> None:
    assert catalogue.progress_line(number, claimed, delay) == line


def test_a_count_other_than_meta_says_is_noted(small_site: ReplicaSite) -> None:
    doc = {
        "data": [{"type": "thin_lectures", "id": "7", "attributes": {"event_id": 502}}],
        "included": [{"type": "thin_events", "id": "502", "attributes": {"name": "EMNLP 2025"}}],
        "meta": {"total_pages": 1, "total_count": 99},
    }
    with serve_listing(small_site, {1: (json.dumps(doc).encode(), "application/json")}) as server:
        read = catalogue.read_catalogue(server.base_url, delay=0.0)
    assert read.notes == ["the listing said 99 lectures; 1 were read"]
    assert [(e.event_id, e.name, e.lectures) for e in read.events] == [("502", "EMNLP 2025", 1)]
