"""No answer is no evidence, crawled: a lecture leaves the release only when its own resource says it is
gone, a subtitle file is asked only on the site's or an asset host, and a subtitle file that does not
answer leaves the text the last stage read. Each is a real crawl of the replica over HTTP on loopback,
the replica's resource or file answering (or not) the way the case says.

One healthy first night (subtitles on) is crawled once; each scenario of a second night starts from a
copy of its state and release, on the same ports (lecture and subtitle URLs hold them). A crawl that
meets subtitle files on another host is a first crawl of its own.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import shutil
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow.parquet as pq
import pytest

from crawler import stats_keys as keys
from crawler.replica.assets import KIND_SUBTITLE
from crawler.replica.faults import (
    RESOURCE_GONE,
    RESOURCE_LOGIN,
    RESOURCE_OTHER,
    RESOURCE_UNAVAILABLE,
    UNANSWERED_REFUSED,
    UNANSWERED_RESET,
    UNANSWERED_TIMEOUT,
    SiteFaults,
)
from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.replica.server import KIND_LECTURE_API, ORIGIN_ASSETS, ReplicaServer, RequestRecord
from crawler.replica.tracks import transcripts_truth
from crawler.schema import Transcript
from crawler.state.stage_index import index_stage
from tests.support.commands import eventcrawl, run_command
from tests.support.replica import QUICK_GIVE_UP, crawl_args, fast_crawl_settings, run_args, run_report
from tests.support.sites import without_lectures

EVENT = "502"
# The side event: six lectures, one of them with two subtitle tracks.
SMALL_EVENT = "469"
PAGE_SIZE = 5
# A request that gets no answer is given up on after this many seconds (and one retry).
NO_ANSWER_TIMEOUT = ("-s", "DOWNLOAD_TIMEOUT=2")
# A loopback address that is not the site's (the site is on 127.0.0.1): a host of its own.
OTHER_HOST = "127.0.0.2"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def small_site() -> ReplicaSite:
    return build_site(load_records(), seed=11, lectures=24, side_event_every=4)


def nightly(
    server: ReplicaServer, work: Path, *extra: str, event: str = EVENT
) -> subprocess.CompletedProcess[str]:
    command = run_args(
        server.base_url, work, "evidence", "--event-id", event, "--subtitles",
        "-s", f"UNDERLINE_PAGE_SIZE={PAGE_SIZE}", *QUICK_GIVE_UP, *extra,
    )  # fmt: skip
    return run_command(command, timeout=120)


def rows(work: Path) -> dict[str, dict[str, Any]]:
    return {r["lecture_id"]: r for r in pq.read_table(work / "out" / "data" / "lectures").to_pylist()}


def transcripts(work: Path) -> dict[tuple[str, str], dict[str, Any]]:
    table = pq.read_table(work / "out" / "data" / "transcripts")
    return {(r["lecture_id"], r["subtitle_url"]): r for r in table.to_pylist()}


def stats(work: Path) -> dict[str, Any]:
    return run_report(work)["crawl"]["stats"]


def resource_path(lecture_id: str) -> str:
    return f"/api/v1/thin_lectures/{lecture_id}"


def asked(server: ReplicaServer, kind: str) -> list[tuple[str, int, str | None]]:
    """Each request of ``kind``: its path (no query), its status (0: unanswered) and its fault."""
    return [(urlsplit(r.path).path, r.status, r.fault) for r in server.requests if r.kind == kind]


@dataclasses.dataclass(frozen=True)
class Base:
    site: ReplicaSite
    port: int
    assets_port: int
    work: Path
    # The event's lectures, by id, and the subtitle files of its tracks (path on the assets origin).
    lecture_ids: list[str]
    track_paths: list[str]

    def copy(self, to: Path) -> Path:
        shutil.copytree(self.work, to)
        return to

    def server(self, site: ReplicaSite | None = None, faults: SiteFaults | None = None) -> ReplicaServer:
        return ReplicaServer(
            site or self.site, port=self.port, assets_port=self.assets_port, site_faults=faults
        )


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    site = small_site()
    work = tmp_path_factory.mktemp("first-night")
    port, assets_port = free_port(), free_port()
    with ReplicaServer(site, port=port, assets_port=assets_port) as server:
        first = nightly(server, work)
    assert first.returncode == 0, first.stderr[-3000:]
    ids = sorted((i for i, lec in site.lectures.items() if lec.event_id == EVENT), key=int)
    assert sorted(rows(work), key=int) == ids
    paths = [s.path for i in ids for s in site.lectures[i].subtitles if s.path is not None]
    # Every track was read whole the first night: the text a later night must not lose.
    read = transcripts(work)
    assert len(paths) >= 4 and len(read) == len(paths)
    assert all(r["text"] and r["problem"] is None for r in read.values()), read
    return Base(site, port, assets_port, work, ids, paths)


# -- a lecture leaves only on its own resource's word ------------------------------------------------

# How the own resource of a lecture that left its listing gives no clear answer: no answer at all, or an
# answer that says neither that the lecture is there nor that it is gone.
UNANSWERED = {"timeout": UNANSWERED_TIMEOUT, "reset": UNANSWERED_RESET}
UNCLEAR = {
    "server error": RESOURCE_UNAVAILABLE,
    "login page": RESOURCE_LOGIN,
    "another lecture": RESOURCE_OTHER,
}


def test_a_lecture_leaves_only_when_its_own_resource_answers_that_it_is_gone(
    base: Base, tmp_path: Path
) -> None:
    work = base.copy(tmp_path / "night")
    before = rows(work)
    # Each case its own lecture, left out of the listing; two more the site says are gone: one it no
    # longer serves (404), one whose resource answers 410.
    cases = dict(zip([*UNANSWERED, *UNCLEAR], base.lecture_ids[1:], strict=False))
    not_served, gone = base.lecture_ids[7], base.lecture_ids[8]
    assert base.site.lectures[cases["another lecture"]].next.lecture_id != cases["another lecture"]
    faults = SiteFaults(
        unlisted_lectures=frozenset([*cases.values(), gone]),
        unanswered={resource_path(cases[case]): how for case, how in UNANSWERED.items()},
        resource_answers={**{cases[case]: answer for case, answer in UNCLEAR.items()}, gone: RESOURCE_GONE},
    )
    with base.server(site=without_lectures(base.site, [not_served]), faults=faults) as server:
        # Forced: the quality gate refuses a night whose requests gave up this often (its own safety
        # net); published, the release shows what the answers alone withdraw.
        night = nightly(server, work, *NO_ANSWER_TIMEOUT, "--force")
        resources = asked(server, KIND_LECTURE_API)
    assert night.returncode == 0, night.stderr[-3000:]
    # Each was asked; what did not answer, or answered an error, was asked again before it was given up.
    answers = {
        path: {(status, fault) for p, status, fault in resources if p == path} for path, _, _ in resources
    }
    assert answers == {
        resource_path(cases["timeout"]): {(0, UNANSWERED_TIMEOUT)},
        resource_path(cases["reset"]): {(0, UNANSWERED_RESET)},
        resource_path(cases["server error"]): {(503, None)},
        resource_path(cases["login page"]): {(200, None)},
        resource_path(cases["another lecture"]): {(200, None)},
        resource_path(not_served): {(404, None)},
        resource_path(gone): {(410, None)},
    }
    tries = {case: sum(1 for p, _, _ in resources if p == resource_path(i)) for case, i in cases.items()}
    assert all(tries[case] >= 2 for case in ("timeout", "reset", "server error")), tries
    after = rows(work)
    assert {case: after[i]["withdrawn"] for case, i in cases.items()} == dict.fromkeys(cases, False)
    for case, lecture_id in cases.items():
        assert after[lecture_id] == before[lecture_id], f"case {case}"
    assert (after[not_served]["withdrawn"], after[gone]["withdrawn"]) == (True, True)
    counts = stats(work)
    presence = (keys.PRESENCE_ASKED, keys.PRESENCE_GONE, keys.PRESENCE_UNKNOWN, keys.PRESENCE_LIVE)
    assert [counts.get(key) for key in presence] == [7, 2, 5, None]
    assert sorted(run_report(work)["changes"]["gone"], key=int) == sorted([not_served, gone], key=int)


def test_a_lecture_whose_resource_refuses_the_connection_stays(base: Base, tmp_path: Path) -> None:
    work = base.copy(tmp_path / "night")
    before = rows(work)
    left = base.lecture_ids[4]
    # The site goes down when the lecture's resource is asked: the retry's connection is refused.
    faults = SiteFaults(
        unlisted_lectures=frozenset({left}), unanswered={resource_path(left): UNANSWERED_REFUSED}
    )
    with base.server(faults=faults) as server:
        night = nightly(server, work)
        resources = asked(server, KIND_LECTURE_API)
    assert night.returncode in (0, 3), night.stderr[-3000:]
    assert resources == [(resource_path(left), 0, UNANSWERED_REFUSED)]
    assert rows(work)[left]["withdrawn"] is False
    assert rows(work) == before
    counts = stats(work)
    assert any("ConnectionRefused" in key for key in counts), sorted(counts)
    presence = (keys.PRESENCE_ASKED, keys.PRESENCE_UNKNOWN, keys.PRESENCE_GONE)
    assert [counts.get(key) for key in presence] == [1, 1, None]
    assert night.returncode == 3, night.stderr[-3000:]


# -- a subtitle file is asked only on the site's hosts or an asset host -------------------------------


@dataclasses.dataclass(frozen=True)
class FilesElsewhere:
    """A first crawl of the small event whose subtitle files are on a host that is not the site's."""

    requests: list[RequestRecord]
    truth: list[dict[str, Any]]
    state: Path

    def staged(self) -> dict[tuple[str, str], Transcript]:
        """The transcripts the crawl staged (what a release publishes), by lecture and file."""
        index = index_stage(self.state)
        return {
            (t.record.lecture_id, t.record.subtitle_url): t.record
            for lecture_id in index.lecture_ids()
            for t in index.transcripts.rows_of(lecture_id)
        }

    def listed_files(self) -> list[str]:
        """The subtitle URLs the lectures' track lists named, as the staged lectures hold them."""
        index = index_stage(self.state)
        return sorted(s["url"] for i in index.lecture_ids() for s in index.lecture(i).subtitles or [])

    def expected_keys(self) -> list[tuple[str, str]]:
        return sorted((t["lecture_id"], t["subtitle_url"]) for t in self.truth)


def crawl_with_files_elsewhere(state: Path, *extra: str) -> FilesElsewhere:
    """A first crawl (no release: the stage holds every row) of the small event on a replica whose
    assets origin listens on another loopback address, counting every request it gets."""
    site = small_site()
    with ReplicaServer(site, assets_host=OTHER_HOST) as server:
        assets = server.assets_url
        assert assets is not None and urlsplit(assets).hostname == OTHER_HOST
        crawl = eventcrawl(
            *crawl_args(server.base_url, state, "--event-id", SMALL_EVENT, "--subtitles"),
            *fast_crawl_settings(), *QUICK_GIVE_UP, *extra,
        )  # fmt: skip
        requests = server.requests
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    truth = transcripts_truth(site, assets, (SMALL_EVENT,))
    assert truth and all(urlsplit(t["subtitle_url"]).hostname == OTHER_HOST for t in truth)
    return FilesElsewhere(requests, truth, state)


def crawl_stats(state: Path) -> dict[str, Any]:
    return json.loads((state / "crawl-report.json").read_text(encoding="utf-8"))["stats"]


def test_a_track_list_naming_a_file_on_another_host_leaves_it_unasked(tmp_path: Path) -> None:
    crawl = crawl_with_files_elsewhere(tmp_path / "state")
    # The track lists named the files; not one request went to their host, robots.txt included.
    assert crawl.listed_files() == sorted(t["subtitle_url"] for t in crawl.truth)
    assert [r.path for r in crawl.requests if r.origin == ORIGIN_ASSETS] == []
    staged = crawl.staged()
    assert sorted(staged) == crawl.expected_keys()
    for key, row in staged.items():
        assert (row.problem, row.text, row.segments) == ("off_host", None, []), key
    assert crawl_stats(crawl.state)[keys.SUBTITLES_OFF_HOST] == len(crawl.truth)


def test_a_file_on_an_asset_host_is_asked_and_read(tmp_path: Path) -> None:
    crawl = crawl_with_files_elsewhere(tmp_path / "state", "-s", f"UNDERLINE_ASSET_HOSTS={OTHER_HOST}")
    assert crawl.listed_files() == sorted(t["subtitle_url"] for t in crawl.truth)
    files = sorted(urlsplit(r.path).path for r in crawl.requests if r.kind == KIND_SUBTITLE)
    assert files == sorted(urlsplit(t["subtitle_url"]).path for t in crawl.truth)
    staged = crawl.staged()
    assert sorted(staged) == crawl.expected_keys()
    for t in crawl.truth:
        row = staged[t["lecture_id"], t["subtitle_url"]]
        assert (row.text, row.problem) == (t["text"], t["problem"]), t["subtitle_url"]
        assert row.text, t["subtitle_url"]


# -- a subtitle file with no answer keeps the text the last stage read ---------------------------------


@pytest.mark.parametrize(
    "unanswered",
    [
        # Two files, each its own way: the connection reset, and no answer before the timeout.
        (UNANSWERED_RESET, UNANSWERED_TIMEOUT),
        # The assets origin goes down when the file is asked: the retry's connection is refused.
        (UNANSWERED_REFUSED,),
    ],
    ids=["reset-and-timeout", "refused"],
)
def test_a_subtitle_file_with_no_answer_keeps_the_text_read_before(
    base: Base, tmp_path: Path, unanswered: tuple[str, ...]
) -> None:
    work = base.copy(tmp_path / "night")
    before = transcripts(work)
    silent = dict(zip(base.track_paths, unanswered, strict=False))
    with base.server(faults=SiteFaults(unanswered=silent)) as server:
        # Every page fetched again: each track is asked again. Forced: the gate refuses a night whose
        # requests gave up this often; published, the release shows what the crawl kept.
        night = nightly(server, work, "-s", "UNDERLINE_REFRESH=False", *NO_ANSWER_TIMEOUT, "--force")
        files = asked(server, KIND_SUBTITLE)
    assert night.returncode in (0, 3), night.stderr[-3000:]
    for path, how in silent.items():
        tries = [(status, fault) for p, status, fault in files if p == path]
        assert tries and set(tries) == {(0, how)}, (path, files)
    counts = stats(work)
    if UNANSWERED_REFUSED in unanswered:
        # Files asked after the origin went down are refused too (and keep theirs as well).
        assert any("ConnectionRefused" in key for key in counts), sorted(counts)
        assert counts[keys.SUBTITLES_PROBLEM_PREFIX + "failed"] >= 1
    else:
        # The others were asked again with the validators of the first night, and had not changed.
        assert {p for p, _, _ in files} == set(base.track_paths)
        assert {(s, f) for p, s, f in files if p not in silent} == {(304, None)}
        assert counts[keys.SUBTITLES_PROBLEM_PREFIX + "failed"] == len(silent)
    # Nothing the replica said changed a track: every transcript stands as the first night read it, and
    # the night has nothing to publish.
    after = transcripts(work)
    assert {key: row["text"] for key, row in after.items()} == {key: r["text"] for key, r in before.items()}
    assert after == before
    assert night.returncode == 3, night.stderr[-3000:]


# -- the replica answers (or not) as told ----------------------------------------------------------


def fetch(url: str, timeout: float = 5) -> tuple[int, str, bytes]:
    """Status, content type and body of a GET (an error status is an answer too)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


def test_the_replica_answers_a_lecture_resource_as_told() -> None:
    site = small_site()
    ids = sorted(site.lectures, key=int)
    told = dict(zip(ids, (RESOURCE_GONE, RESOURCE_UNAVAILABLE, RESOURCE_LOGIN, RESOURCE_OTHER), strict=False))
    silent = {resource_path(ids[4]): UNANSWERED_RESET, resource_path(ids[5]): UNANSWERED_TIMEOUT}
    down = resource_path(ids[6])
    faults = SiteFaults(resource_answers=told, unanswered={**silent, down: UNANSWERED_REFUSED})
    with ReplicaServer(site, site_faults=faults) as server:
        answers = {i: fetch(server.base_url + resource_path(i)) for i in ids[:4]}
        assert [answers[i][0] for i in ids[:4]] == [410, 503, 200, 200]
        assert answers[ids[2]][1].startswith("text/html") and b"<title>Log in" in answers[ids[2]][2]
        other = json.loads(answers[ids[3]][2])["data"]
        assert (other["type"], other["id"]) == ("thin_lectures", site.lectures[ids[3]].next.lecture_id)
        # The rest of the lecture's resources, and the other lectures', answer as the site does.
        assert fetch(f"{server.base_url}{resource_path(ids[0])}/related")[0] == 200
        assert json.loads(fetch(server.base_url + resource_path(ids[7]))[2])["data"]["id"] == ids[7]
        with pytest.raises(ConnectionResetError):
            fetch(server.base_url + resource_path(ids[4]))
        with pytest.raises(TimeoutError):
            fetch(server.base_url + resource_path(ids[5]), timeout=0.5)
        # The origin goes down: this request is dropped, and the next connection refused.
        with pytest.raises((ConnectionError, urllib.error.URLError, http.client.HTTPException)):
            fetch(server.base_url + down)
        # A connection the closing socket had taken into its backlog is reset; the next one is refused.
        reasons: list[BaseException] = []
        for _ in range(3):
            with pytest.raises((urllib.error.URLError, ConnectionResetError)) as failed:
                fetch(server.base_url + resource_path(ids[7]))
            reasons.append(getattr(failed.value, "reason", failed.value))
            if isinstance(reasons[-1], ConnectionRefusedError):
                break
        assert isinstance(reasons[-1], ConnectionRefusedError), reasons
        # The assets origin is another server: it still answers.
        assert server.assets_url is not None
        assert fetch(server.assets_url + "/robots.txt")[0] == 200
        log = [(urlsplit(r.path).path, r.status, r.fault) for r in server.requests if r.status == 0]
    assert log == [
        (resource_path(ids[4]), 0, UNANSWERED_RESET),
        (resource_path(ids[5]), 0, UNANSWERED_TIMEOUT),
        (down, 0, UNANSWERED_REFUSED),
    ]
