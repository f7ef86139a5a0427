"""The rules every published table keeps, walked over the declarations (``DECLARED_TABLES``):

- each table is declared with a source, and the source is one a night can break here;
- a night on which that source answers with no evidence (an HTML page, 503, a robots refusal, an empty
  file) keeps every row and every content value the release published;
- the source's own 404 takes the content away (a release that loses that much is refused by the gate,
  exit 4, and published with ``--force``);
- the gate judges every table: a table that loses rows or content is refused even when every lecture
  is fine.

The nights run ``eventcrawl run`` against the replica over HTTP on loopback; one healthy first night,
then each bad night from a copy of its state and release (the replica keeps its ports: lecture URLs and
subtitle URLs hold them).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crawler.coverage import ALL_EVENTS
from crawler.publish.events import GroupedEvents, PublishOptions
from crawler.publish.manifest import read_manifest
from crawler.publish.records import lecture_rows
from crawler.publish.release import publish_events, publish_release
from crawler.publish.tables import DECLARED_TABLES, TableSpec
from crawler.replica.assets import OUTAGES
from crawler.replica.faults import RESOURCE_GONE, SiteFaults
from crawler.replica.layout import build_site, load_records
from crawler.replica.server import ReplicaServer
from crawler.schedule.gate import GateRefused, GateThresholds, GateVerdict
from crawler.schedule.tables_gate import LeftOnRequest, TableProfile, judge_tables, profile_release
from crawler.schema import content_sha256
from crawler.schema.sources import RowSource
from tests.support.commands import eventcrawl
from tests.support.replica import QUICK_GIVE_UP, fast_crawl_settings

# Enough lectures for every night to cost little and still show each rule: the three lectures gone in
# one test stay within the gate's 10% drop (3 of the main event's 39), and the first night publishes 11
# transcript texts and 25 documents with pages where the tests ask for at least 5 of each.
LECTURES = 40
# Real ACL Anthology files: the first night links its talks to their papers.
ANTHOLOGY = Path(__file__).resolve().parent / "fixtures" / "anthology"


@dataclass
class Night:
    code: int
    stderr: str
    work: Path

    @property
    def out(self) -> Path:
        return self.work / "out"

    def profiles(self) -> dict[str, TableProfile]:
        return profile_release(self.out)

    def transcripts(self) -> dict[tuple[str, str], dict[str, Any]]:
        rows = pq.read_table(self.out / "data" / "transcripts").to_pylist()
        return {(r["lecture_id"], r["subtitle_url"]): r for r in rows}

    def slides(self) -> dict[tuple[str, str], dict[str, Any]]:
        rows = pq.read_table(self.out / "data" / "slides").to_pylist()
        return {(r["lecture_id"], r["document"]): r for r in rows}

    def report(self) -> dict[str, Any]:
        return json.loads((self.work / "state" / "run-report.json").read_text(encoding="utf-8"))


def run_night(server: ReplicaServer, work: Path, *extra: str) -> Night:
    result = eventcrawl(
        "run", "--web-base", server.base_url, "--api-base", server.base_url,
        "--state", str(work / "state"), "--out", str(work / "out"), "--name", "talks",
        "--subtitles", "--slides", *fast_crawl_settings(), *QUICK_GIVE_UP,
        "-s", "PROGRESS_ENABLED=False", *extra,
        timeout=300,
    )  # fmt: skip
    return Night(result.returncode, result.stderr[-3000:], work)


class Nights:
    """A first night's state and release, and bad nights each run on a copy of them."""

    def __init__(self, server: ReplicaServer, root: Path) -> None:
        self.server = server
        self.root = root
        self.first = run_night(server, root / "first", "--anthology", str(ANTHOLOGY))
        assert self.first.code == 0, self.first.stderr
        self._done: dict[tuple[str, ...], Night] = {}

    def after(
        self,
        outage: str | None,
        *extra: str,
        track_lists: str | None = None,
        pages: str | None = None,
        site_faults: SiteFaults | None = None,
    ) -> Night:
        """The night after the first one (every lecture page asked again, so every subtitle file is asked
        again), the assets host having ``outage``, the track lists answering as ``track_lists`` says, the
        lecture pages as ``pages`` says and the site broken as ``site_faults`` says."""
        key = (str(outage), str(track_lists), str(pages), repr(site_faults), *extra)
        if key not in self._done:
            work = self.root / f"night-{len(self._done) + 2}"
            shutil.copytree(self.first.work, work)
            router = self.server.router
            kept_faults = router.site_faults
            self.server.assets_router.outage = outage
            router.track_lists, router.pages_outage = track_lists, pages
            router.site_faults = site_faults or kept_faults
            try:
                self._done[key] = run_night(self.server, work, "-s", "UNDERLINE_REFRESH=False", *extra)
            finally:
                self.server.assets_router.outage = None
                router.track_lists = router.pages_outage = None
                router.site_faults = kept_faults
        return self._done[key]


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("table-rules")
    with ReplicaServer(build_site(load_records()[:LECTURES]), documents=True) as server:
        yield Nights(server, root)


def _kept(table: str, before: TableProfile, after: TableProfile) -> None:
    assert after.rows[ALL_EVENTS] == before.rows[ALL_EVENTS], table
    for name, filled in before.filled.items():
        assert after.filled[name][ALL_EVENTS] == filled[ALL_EVENTS], f"{table}.{name}"


def _source_of(spec: TableSpec) -> RowSource:
    by_name = {s.name: s for s in DECLARED_TABLES}
    source = spec.source
    assert source is not None, f"table {spec.name} is declared without a source"
    while source.derived_from is not None:
        parent = by_name[source.derived_from].source
        assert parent is not None, f"table {source.derived_from} is declared without a source"
        source = parent
    return source


# The nights here that answer for a source with no evidence, by the request the declarations name: each
# a bad night's knobs (see Nights.after). A table whose source no night breaks fails the walk: the rules
# would reach it untested.
NO_EVIDENCE: dict[str, dict[str, dict[str, Any]]] = {
    "the event's lecture listing, then the lecture's own page and API resource": {
        "pages-maintenance": {"pages": "html"},
        "pages-503": {"pages": "unavailable"},
    },
    "the subtitle file the lecture's track list names (one request a track)": {
        "files-maintenance": {"outage": "html"},
        "files-503": {"outage": "unavailable"},
        "robots-disallow": {"outage": "disallow"},
        "files-empty": {"outage": "empty"},
        "track-list-errors": {"track_lists": "errors"},
    },
    "the PDF the lecture's record names (one request a document)": {
        "files-maintenance": {"outage": "html"},
        "files-503": {"outage": "unavailable"},
        "robots-disallow": {"outage": "disallow"},
        "files-empty": {"outage": "empty"},
    },
    # A night built without the Anthology's files has no answer from them: every link stands.
    "the ACL Anthology's collection files (--anthology)": {"no-anthology-files": {}},
    # History: whatever the night, what earlier releases changed stays.
    "the diff of each release against the one before it": {"files-maintenance": {"outage": "html"}},
}


def _walk() -> list[Any]:
    cases = []
    by_name = {s.name: s for s in DECLARED_TABLES}
    for spec in DECLARED_TABLES:
        source = spec.source
        while source is not None and source.derived_from is not None:
            source = by_name[source.derived_from].source
        nights = NO_EVIDENCE.get(source.request if source is not None else "", {"unbroken": {}})
        for name, knobs in nights.items():
            cases.append(pytest.param(spec, knobs, id=f"{spec.name}-{name}"))
    return cases


@pytest.mark.parametrize(("spec", "knobs"), _walk())
def test_an_answer_that_is_no_evidence_keeps_every_table_as_published(
    nights: Nights, spec: TableSpec, knobs: dict[str, Any]
) -> None:
    source = _source_of(spec)
    assert source.request in NO_EVIDENCE, f"no night here breaks the source of {spec.name}: {source.request}"
    night = nights.after(knobs.get("outage"), track_lists=knobs.get("track_lists"), pages=knobs.get("pages"))
    # A night on which every request of a kind failed may be refused by the failure checks (the release
    # untouched); every other answer that is no evidence publishes, keeping the rows.
    failing = knobs.get("outage") == "unavailable" or knobs.get("pages") is not None
    assert night.code in ((0, 3, 4) if failing else (0, 3)), night.stderr
    before, after = nights.first.profiles(), night.profiles()
    assert before[spec.name].rows[ALL_EVENTS], f"the first night published no {spec.name}"
    _kept(spec.name, before[spec.name], after[spec.name])


def test_a_lecture_gone_from_the_site_leaves_on_its_resource_s_word(nights: Nights) -> None:
    """The lectures' own 404 (410 here): out of the listing and gone, each is withdrawn; the others stand."""
    first = {r["lecture_id"]: r for r in _published_lectures(nights.first.out)}
    gone = sorted(first)[:3]
    faults = SiteFaults(
        unlisted_lectures=frozenset(gone), resource_answers=dict.fromkeys(gone, RESOURCE_GONE)
    )
    night = nights.after(None, site_faults=faults)
    assert night.code == 0, night.stderr
    now = {r["lecture_id"]: r for r in _published_lectures(night.out)}
    assert sorted(i for i, r in now.items() if r["withdrawn"]) == gone
    assert {i: r["title"] for i, r in now.items()} == {i: r["title"] for i, r in first.items()}


def test_every_transcript_and_slide_text_is_kept_word_for_word(nights: Nights) -> None:
    """Not only the counts: each track's text and segments, each document's pages, are night 1's."""
    first, shown = nights.first.transcripts(), nights.first.slides()
    assert sum(1 for r in first.values() if r["text"]) >= 5
    assert sum(1 for r in shown.values() if r["pages"]) >= 5
    for outage in ("html", "unavailable", "disallow", "empty"):
        night = nights.after(outage)
        kept = night.transcripts()
        assert {k: (r["text"], r["segments"]) for k, r in kept.items()} == {
            k: (r["text"], r["segments"]) for k, r in first.items()
        }, outage
        assert {k: (r["pages"], r["text"]) for k, r in night.slides().items()} == {
            k: (r["pages"], r["text"]) for k, r in shown.items()
        }, outage
        stats = night.report()["crawl"]["stats"]
        if outage != "disallow":
            assert stats.get("underline/subtitles/kept_unreadable", 0) >= 5, outage
            assert stats.get("underline/slides/kept_unreadable", 0) >= 5, outage


def test_the_outages_are_what_a_bad_night_serves() -> None:
    assert set(OUTAGES) >= {"html", "unavailable", "disallow", "empty", "gone"}


def test_a_real_404_takes_the_texts_away_and_the_gate_asks_for_force(nights: Nights) -> None:
    first = nights.first.transcripts()
    refused = nights.after("gone")
    # Every text lost at once: the gate over the tables refuses, the release stands.
    assert refused.code == 4, refused.stderr
    assert refused.transcripts() == first
    failed = [c["name"] for c in refused.report()["gate"]["checks"] if not c["passed"]]
    assert "table:transcripts:text" in failed
    assert read_manifest(refused.out) == read_manifest(nights.first.out)
    forced = nights.after("gone", "--force")
    assert forced.code == 0, forced.stderr
    rows = forced.transcripts()
    assert set(rows) == set(first)
    # Every text the files' 404 took away; the tracks never asked (off the hosts) stay as they were.
    had_text = {k for k, r in first.items() if r["text"]}
    assert {k for k, r in rows.items() if r["problem"] == "not_found" and r["text"] is None} >= had_text
    assert not any(r["text"] for r in rows.values())
    # And so it is for the documents: the 404 of each PDF takes its pages away.
    shown = forced.slides()
    assert set(shown) == set(nights.first.slides())
    assert {r["problem"] for r in shown.values()} == {"not_found"}
    assert not any(r["pages"] for r in shown.values())


def test_a_table_declared_without_a_source_fails_the_walk() -> None:
    orphan = TableSpec("orphans", "A table nobody answers for.", (), "lecture_id")
    with pytest.raises(AssertionError, match="declared without a source"):
        _source_of(orphan)
    unknown = TableSpec("rumours", "", (), "lecture_id", source=RowSource("what someone said"))
    assert _source_of(unknown).request not in NO_EVIDENCE


def rehashed(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "content_sha256": content_sha256(record)}


def _published_lectures(out: Path) -> list[dict[str, Any]]:
    return pq.read_table(out / "data" / "lectures").to_pylist()


def test_the_gate_refuses_a_release_that_loses_authors_and_leaves_the_release_untouched(
    nights: Nights, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    records = _published_lectures(nights.first.out)
    publish_release(records, out, name="talks", provenance={"crawl_date": "2026-12-01"})
    before = read_manifest(out)
    assert before is not None
    authors = before["row_counts"]["authors"]
    # The same lectures, each with its first author only: every lecture keeps a title, an abstract and
    # authors (the lecture checks would pass), but most rows of the authors table are gone.
    fewer = [rehashed({**r, "authors": r["authors"][:1]}) for r in records]
    found: list[list[str]] = []

    def check(built: Path, previous: Path) -> None:
        results = judge_tables(built, previous, GateThresholds())
        found.append([c.name for c in results if not c.passed])
        if found[-1]:
            raise GateRefused(GateVerdict(False, tuple(results)))

    options = PublishOptions("talks", {"crawl_date": "2026-12-02"}, check_built=check)
    with pytest.raises(GateRefused):
        publish_events(GroupedEvents(lecture_rows(fewer), validated=True), out, options)
    assert found == [["table:authors:rows", "table:authors:rows:502"]] or "table:authors:rows" in found[0]
    assert read_manifest(out) == before
    # The same lectures with every author kept pass the same check, and are published.
    publish_events(GroupedEvents(lecture_rows(records), validated=True), out, options)
    assert found[1] == []
    assert authors == read_manifest(out)["row_counts"]["authors"]  # type: ignore[index]


def test_every_declared_table_is_profiled_and_judged(nights: Nights) -> None:
    profiles = nights.first.profiles()
    assert set(profiles) == {s.name for s in DECLARED_TABLES}
    results = judge_tables(nights.first.out, nights.first.out, GateThresholds(), LeftOnRequest())
    assert {r.name for r in results} == {
        f"table:{s.name}" for s in DECLARED_TABLES if profiles[s.name].rows[ALL_EVENTS]
    }
    assert all(r.passed for r in results)


def test_a_track_list_answered_with_an_errors_document_keeps_every_track(nights: Nights) -> None:
    first = nights.first
    night = nights.after(None, track_lists="errors")
    assert night.code in (0, 3), night.stderr
    assert night.transcripts() == first.transcripts()
    lectures = {r["lecture_id"]: r["subtitles"] for r in _published_lectures(night.out)}
    assert lectures == {r["lecture_id"]: r["subtitles"] for r in _published_lectures(first.out)}
    stats = night.report()["crawl"]["stats"]
    assert stats["underline/transcripts_unreadable"] == len(lectures)


def test_a_lecture_naming_too_many_tracks_is_asked_and_published_up_to_the_bound(nights: Nights) -> None:
    night = nights.after(None, "-s", "UNDERLINE_MAX_TRACKS_PER_LECTURE=4", track_lists="copies:30")
    assert night.code in (0, 3), night.stderr
    rows = night.transcripts()
    per_lecture: dict[str, int] = {}
    for lecture_id, _ in rows:
        per_lecture[lecture_id] = per_lecture.get(lecture_id, 0) + 1
    with_tracks = {r["lecture_id"] for r in _published_lectures(night.out) if r["subtitles"]}
    assert with_tracks and set(per_lecture) == with_tracks
    assert max(per_lecture.values()) == 4
    listed = {r["lecture_id"]: len(r["subtitles"]) for r in _published_lectures(night.out) if r["subtitles"]}
    assert max(listed.values()) == 4
    stats = night.report()["crawl"]["stats"]
    asked = sum(1 for r in nights.server.requests if "copy=" in r.path)
    assert stats["underline/subtitles/over_limit"] > 0
    assert asked <= 3 * len(with_tracks)


def _judged_against(
    first: Path, tmp_path: Path, next_records: list[dict[str, Any]], left: LeftOnRequest
) -> list[str]:
    """The failed table checks of a release of ``next_records`` against a copy of ``first`` (a release
    published alone), with ``left`` on request (the release is built aside and never swapped in)."""
    out = tmp_path / "out"
    shutil.copytree(first, out)
    failed: list[str] = []

    class Judged(Exception):
        pass

    def check(built: Path, previous: Path) -> None:
        failed.extend(c.name for c in judge_tables(built, previous, GateThresholds(), left) if not c.passed)
        raise Judged

    options = PublishOptions("talks", {"crawl_date": "2026-12-02"}, check_built=check)
    with pytest.raises(Judged):
        publish_events(GroupedEvents(lecture_rows(next_records), validated=True), out, options)
    return failed


def test_what_leaves_or_changes_on_request_is_no_loss_for_any_table(nights: Nights, tmp_path: Path) -> None:
    # Each lecture in a session of its own: a session's row leaves when its lecture does.
    records = [
        rehashed({**r, "session_id": f"9{i:03d}", "session_name": f"Session {i}"})
        for i, r in enumerate(_published_lectures(nights.first.out))
    ]
    # Each judgement starts from its own copy of one release of them published alone.
    first = tmp_path / "first"
    publish_release(records, first, name="talks", provenance={"crawl_date": "2026-12-01"})
    removed = {r["lecture_id"] for r in records[:8]}
    kept = [r for r in records if r["lecture_id"] not in removed]
    assert "table:sessions:rows" in _judged_against(first, tmp_path / "a", kept, LeftOnRequest())
    assert _judged_against(first, tmp_path / "b", kept, LeftOnRequest(lectures=frozenset(removed))) == []
    # A fifth of the lectures' authors redacted on request: their rows change, no loss.
    redacted = {r["lecture_id"] for r in records[: len(records) // 5]}
    fewer = [rehashed({**r, "authors": []}) if r["lecture_id"] in redacted else r for r in records]
    assert "table:lectures:authors" in _judged_against(first, tmp_path / "c", fewer, LeftOnRequest())
    assert _judged_against(first, tmp_path / "d", fewer, LeftOnRequest(changed=frozenset(redacted))) == []
