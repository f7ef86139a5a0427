"""A talk under two ids, over real HTTP: the replica's event 502 with one lecture's talk once more under a
new id (another session's listing of the same paper) that lists the original's subtitle files and one of
its own. ``run --subtitles`` merges the two into the lower id, and its ``transcripts`` rows are both
records' tracks, each file once, with the texts the replica's truth says were spoken. A second night
that changes a lecture without tracks publishes the same transcripts file: the very file, not written
again."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crawler.replica.layout import MAIN_EVENT_ID, Lecture, ReplicaSite, Subtitle, build_site, load_records
from crawler.replica.server import ReplicaServer
from crawler.replica.subtitles import KIND_CLEAN, file_path
from crawler.replica.tracks import transcripts_truth
from tests.support.replica import eventcrawl, loopback_crawl_args
from tests.support.sites import EDIT_SUFFIX, with_edit, without_lectures

TRANSCRIPTS = Path("data/transcripts/event-502.parquet")
# Lectures of event 502 the nights crawl besides the talk's two records and the one edited.
SITE_LECTURES = 40


def with_the_talk_twice(site: ReplicaSite) -> tuple[ReplicaSite, Lecture, Lecture]:
    """``site`` with the first lecture of the event whose tracks are all clean files listed once more
    under a new id, which lists a French track of its own besides the original's tracks."""
    original = next(
        lec
        for lec in sorted(site.event_lectures(MAIN_EVENT_ID), key=lambda lec: int(lec.id))
        if lec.subtitles
        and all(s.kind == KIND_CLEAN and s.path for s in lec.subtitles)
        and "fr" not in {s.locale for s in lec.subtitles}
    )
    new_id = str(max(int(i) for i in site.lectures) + 1)
    token = "0badc0ffee00"
    own = Subtitle(
        str(int(new_id) * 10), "fr", "Français", False, file_path(new_id, "fr", token, KIND_CLEAN), None,
        KIND_CLEAN, token,
    )  # fmt: skip
    copy = dataclasses.replace(original, id=new_id, underline_doi=None, subtitles=(*original.subtitles, own))
    return dataclasses.replace(site, lectures={**site.lectures, new_id: copy}), original, copy


def run(server: ReplicaServer, work: Path) -> tuple[int, str]:
    result = eventcrawl(
        "run", "--event-id", MAIN_EVENT_ID, "--web-base", server.base_url, "--api-base", server.base_url,
        "--state", str(work / "state"), "--out", str(work / "out"), "--name", "talks", "--subtitles",
        *loopback_crawl_args(),
    )  # fmt: skip
    return result.returncode, result.stderr[-3000:]


def file_state(path: Path) -> tuple[int, int, int]:
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("merged")
    site, original, copy = with_the_talk_twice(build_site(load_records()))
    # The second night edits the abstract of a lecture without tracks: its transcripts rows are none.
    edited = next(
        lec
        for lec in sorted(site.event_lectures(MAIN_EVENT_ID), key=lambda lec: int(lec.id))
        if not lec.subtitles and lec.id not in (original.id, copy.id)
    )
    # The whole site's tracks (the talk's two clean files), but only its first lectures crawled: the
    # event's 40 lowest ids, the talk's two and the one edited.
    by_id = sorted((lec.id for lec in site.event_lectures(MAIN_EVENT_ID)), key=int)
    kept = {*by_id[:SITE_LECTURES], original.id, copy.id, edited.id}
    site = without_lectures(site, [i for i in by_id if i not in kept])
    with ReplicaServer(site) as server:
        assert server.assets_url is not None
        first = run(server, work)
        truth = transcripts_truth(site, server.assets_url)
        rows = pq.read_table(work / "out" / TRANSCRIPTS).to_pylist()
        lectures = pq.read_table(work / "out" / "data" / "lectures").to_pylist()
        manifest = json.loads((work / "out" / "manifest.json").read_text(encoding="utf-8"))
        before = file_state(work / "out" / TRANSCRIPTS)
        ports = {"port": server.port, "assets_port": server.assets_port}
        assets_url = server.assets_url
    # The same ports: the stage's URLs name them.
    with ReplicaServer(with_edit(site, edited.id, abstract=edited.abstract + EDIT_SUFFIX), **ports) as server:
        second = run(server, work)
    return {
        "assets_url": assets_url,
        "first": first,
        "second": second,
        "original": original,
        "copy": copy,
        "truth": truth,
        "rows": rows,
        "lectures": {lec["lecture_id"]: lec for lec in lectures},
        "manifest": manifest,
        "before": before,
        "after": file_state(work / "out" / TRANSCRIPTS),
        "second_manifest": json.loads((work / "out" / "manifest.json").read_text(encoding="utf-8")),
    }


def test_both_nights_publish(nights: dict[str, Any]) -> None:
    assert nights["first"][0] == 0, nights["first"][1]
    assert nights["second"][0] == 0, nights["second"][1]


def test_the_talk_is_one_record_listing_both_records_tracks(nights: dict[str, Any]) -> None:
    original, copy = nights["original"], nights["copy"]
    assert copy.id not in nights["lectures"]
    kept = nights["lectures"][original.id]
    assert kept["alternate_ids"] == [copy.id]
    # The kept record's own tracks, then the one only the merged record lists.
    assert [s["url"] for s in kept["subtitles"]] == [s.url(nights["assets_url"]) for s in copy.subtitles]


def test_the_merged_records_tracks_are_rows_of_the_kept_id_with_what_was_said(
    nights: dict[str, Any],
) -> None:
    original, copy = nights["original"], nights["copy"]
    truth = {t["subtitle_url"]: t for t in nights["truth"] if t["lecture_id"] in (original.id, copy.id)}
    rows = [r for r in nights["rows"] if r["lecture_id"] in (original.id, copy.id)]
    # Every file of the talk once, under the kept id, in transcript order (locale, then file).
    assert [(r["lecture_id"], r["locale"], r["subtitle_url"]) for r in rows] == sorted(
        (original.id, t["locale"], url) for url, t in truth.items()
    )
    assert len(rows) == len(original.subtitles) + 1
    for row in rows:
        said = truth[row["subtitle_url"]]
        assert (row["text"], row["problem"], row["locale"], row["language"], row["event_id"]) == (
            said["text"],
            said["problem"],
            said["locale"],
            said["language"],
            said["event_id"],
        ), f"case {row['subtitle_url']}"
        assert [s["start_ms"] for s in row["segments"]] == said["segment_starts_ms"], row["subtitle_url"]
    assert any(row["locale"] == "fr" and row["text"] for row in rows)


def test_a_night_with_the_same_tracks_keeps_the_transcripts_file_as_it_was(nights: dict[str, Any]) -> None:
    first, second = nights["manifest"], nights["second_manifest"]
    assert second["version"] != first["version"]
    path = TRANSCRIPTS.as_posix()
    # The very file: neither written again nor touched.
    assert nights["after"] == nights["before"]
    assert second["files"][path] == first["files"][path]
    assert second["transcript_shards"] == first["transcript_shards"]
    assert path in second["configs"]["transcripts"]["files"]
