"""The ``transcripts`` config of a release, published from a stage written with StageWriter: which rows,
their files read back with pyarrow and datasets, carried from the previous release, scrubbed, the card's
section, byte-identical when nothing changed, row groups bounded."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawler.app.next_release import next_release, read_staged
from crawler.app.runner import Published, PublishRequest, publish_staged
from crawler.privacy.emails import PLACEHOLDER
from crawler.privacy.spoken import TRANSCRIPT_PRIVACY_RULE
from crawler.publish import transcripts as publish_transcripts
from crawler.publish.card import columns_markdown
from crawler.publish.previous import read_previous_release
from crawler.publish.removals import RemovalRequests
from crawler.publish.tables import TRANSCRIPTS, event_configs
from crawler.publish.transcripts import TranscriptsTable
from crawler.schema import TRANSCRIPT_FIELDS, Lecture, Transcript
from crawler.state.stage import StageWriter
from crawler.state.stage_rows import PRIVACY_RULE_KEY, TRANSCRIPT_ROWS, StagedTranscript
from docsgen.columns import render_page
from tests.test_publish_parquet import make_record

NAME = "demo"
SUBS = "https://assets.underline.io/subtitles"
ADDRESS = "jane.doe@example.org"
HOUR = 3_600_000


def sub(lecture_id: str, locale: str, name: str, *, auto: bool, url: bool = True) -> dict[str, Any]:
    return {
        "locale": locale,
        "name": name,
        "auto_generated": auto,
        "url": f"{SUBS}/{lecture_id}/{locale}.vtt" if url else None,
    }


def track(lecture_id: str, event_id: str, locale: str, **changes: Any) -> Transcript:
    end = changes.pop("end_ms", HOUR // 2)
    values: dict[str, Any] = {
        "lecture_id": lecture_id,
        "event_id": event_id,
        "locale": locale,
        "language": {"en": "English", "de": "Deutsch", "es": "Español", "fr": "Français"}[locale],
        "auto_generated": locale == "en",
        "subtitle_url": f"{SUBS}/{lecture_id}/{locale}.vtt",
        "text": f"Talk {lecture_id} in {locale}. The end",
        "segments": [
            {"start_ms": 0, "end_ms": 4000, "text": f"Talk {lecture_id} in {locale}."},
            {"start_ms": 4000, "end_ms": end, "text": "The end"},
        ],
        "cues_skipped": 0,
        "fetched_at": "2025-11-12T09:00:00Z",
    }
    values.update(changes)
    return Transcript.from_json(values)


# Lecture 130100 lists en (auto), de and a track without a URL; 130101 en (not found on the site);
# 130102 en, never staged; 130109 (event 469) es. 130100's staged fr track is listed by nobody.
LECTURES = {
    0: [
        sub("130100", "en", "English", auto=True),
        sub("130100", "de", "Deutsch", auto=False),
        sub("130100", "it", "Italiano", auto=False, url=False),
    ],
    1: [sub("130101", "en", "English", auto=True)],
    2: [sub("130102", "en", "English", auto=True)],
    9: [sub("130109", "es", "Español", auto=False)],
}
TRACKS = [
    track(
        "130100",
        "502",
        "en",
        text=f"Welcome. Write to {ADDRESS}",
        segments=[
            {"start_ms": 0, "end_ms": 4000, "text": "Welcome."},
            {"start_ms": 4000, "end_ms": HOUR // 2, "text": f"Write to {ADDRESS}"},
        ],
    ),
    track("130100", "502", "de"),
    track("130100", "502", "fr"),
    track("130101", "502", "en", text=None, segments=[], problem="not_found"),
    track("130109", "999", "es", end_ms=HOUR),
]


def records(changes: dict[int, dict[str, Any]] | None = None, *, without: Sequence[int] = ()) -> list[dict]:
    changes = changes or {}
    return [
        make_record(i, **{"subtitles": LECTURES.get(i), **changes.get(i, {})})
        for i in range(12)
        if i not in without
    ]


def write_stage(state: Path, lectures: list[dict], tracks: Sequence[Transcript], *raw: str) -> Path:
    writer = StageWriter(state)
    writer.open()
    for record in lectures:
        writer.write_lecture(Lecture.from_json(record))
    for transcript in tracks:
        writer.write_row(TRANSCRIPT_ROWS, transcript, {"etag": f'"{transcript.subtitle_url}"'})
    writer.close(complete=True)
    with writer.path.open("a", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in raw)
    return writer.path


def publish(state: Path, out: Path) -> Published:
    return publish_staged(PublishRequest(state, out, NAME, force=True))


def rows_of(out: Path, event: str) -> list[dict[str, Any]]:
    rows = pq.read_table(out / f"data/transcripts/event-{event}.parquet").to_pylist()
    for row in rows:
        row["fetched_at"] = row["fetched_at"].isoformat() if row["fetched_at"] else None
    return rows


def expected(transcript: Transcript, **changes: Any) -> dict[str, Any]:
    row = {**transcript.values(), **changes}
    row["fetched_at"] = row["fetched_at"].isoformat()
    return row


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first night, made once: ``records()`` and ``TRACKS`` staged in ``state`` and published to
    ``out``; a test that goes on from it works on :func:`first_night`'s copy."""
    work = tmp_path_factory.mktemp("transcripts")
    write_stage(work / "state", records(), TRACKS)
    publish(work / "state", work / "out")
    return work


def first_night(published: Path, work: Path) -> tuple[Path, Path]:
    """A copy in ``work`` of the first night's state and release (what ``write_stage(state, records(),
    TRACKS)`` and ``publish(state, out)`` leave): its state and out."""
    for name in ("state", "out"):
        shutil.copytree(published / name, work / name, symlinks=True)
    return work / "state", work / "out"


def test_each_event_gets_the_listed_tracks_in_order(published: Path) -> None:
    out = published / "out"
    en, de, _fr, missing, es = TRACKS
    scrubbed = f"Write to {PLACEHOLDER}"

    assert rows_of(out, "502") == [
        expected(de),
        expected(
            en,
            text=f"Welcome. {scrubbed}",
            segments=[en.segments[0], {"start_ms": 4000, "end_ms": HOUR // 2, "text": scrubbed}],
        ),
        expected(missing),
    ]
    # The row's event is its lecture's, whatever the staged track said.
    assert rows_of(out, "469") == [expected(es, event_id="469")]
    assert sorted(p.name for p in (out / "data/transcripts").iterdir()) == [
        "event-469.parquet",
        "event-502.parquet",
    ]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["configs"]["transcripts"] == {
        "files": ["data/transcripts/event-469.parquet", "data/transcripts/event-502.parquet"],
        "rows": 4,
    }
    assert manifest["row_counts"]["transcripts"] == 4


def test_datasets_loads_every_row_with_the_schemas_features(published: Path) -> None:
    loaded = datasets.load_dataset(str(published / "out"), "transcripts", split="train")

    assert loaded.features == TRANSCRIPTS.features()
    assert sorted((r["lecture_id"], r["locale"]) for r in loaded) == [
        ("130100", "de"),
        ("130100", "en"),
        ("130101", "en"),
        ("130109", "es"),
    ]


def test_the_card_tells_the_transcripts_exact_numbers(published: Path) -> None:
    card = (published / "out/README.md").read_text(encoding="utf-8")
    section = card[card.index("## Transcripts") : card.index("## Statistics")]

    for line in [
        "| Tracks | 4 |",
        "| Generated by speech recognition | 2 (50.0%) |",
        "| Hours of speech (each track's last segment end, summed) | 2.0 |",
        "| Tracks without text | 1: not\\_found: 1 |",
        "| 469 | EMNLP 2024 | 1 |",
        "| 502 | EMNLP 2025 | 3 |",
        "| English | 2 | 50.0% |",
        "| Deutsch | 1 | 25.0% |",
        "| Español | 1 | 25.0% |",
    ]:
        assert line in section, f"case {line}"
    assert (
        "- config_name: transcripts\n  data_files:\n  - split: train\n    path: data/transcripts/*.parquet"
        in card
    )
    assert "### Fields of `transcripts`" in card
    for f in TRANSCRIPT_FIELDS:
        assert f"| `{f.name}` |" in card[card.index("### Fields of `transcripts`") :], f"case {f.name}"
    assert f'transcripts = load_dataset("<namespace>/{NAME}", "transcripts", split="train")' in card


def test_no_address_planted_in_a_track_reaches_any_file(published: Path) -> None:
    out = published / "out"
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":
            text = json.dumps(pq.read_table(path).to_pylist(), default=str, ensure_ascii=False)
        else:
            text = path.read_text(encoding="utf-8")
        assert ADDRESS not in text, f"case {path.relative_to(out)}"
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "that look like an e-mail address in this release:\n0." in card


def test_an_address_the_scrubber_missed_is_counted_by_the_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every scrub at publish missed it: the written one and the redaction under the rules in force.
    monkeypatch.setattr(publish_transcripts, "scrubbed_transcript", lambda t: t)
    monkeypatch.setattr(publish_transcripts, "redacted_again", lambda t: t)
    write_stage(tmp_path / "state", records(), TRACKS)

    publish(tmp_path / "state", tmp_path / "out")

    card = (tmp_path / "out/README.md").read_text(encoding="utf-8")
    # The track's text and its second segment.
    assert "that look like an e-mail address in this release:\n2." in card


def test_a_redacted_authors_name_leaves_the_transcripts_too(tmp_path: Path) -> None:
    said = track(
        "130109",
        "469",
        "es",
        text="Thanks, Jane Roe. Next",
        segments=[
            {"start_ms": 0, "end_ms": 2000, "text": "Thanks, Jane Roe."},
            {"start_ms": 2000, "end_ms": 4000, "text": "Next"},
        ],
    )
    write_stage(tmp_path / "state", records(), [*TRACKS[:-1], said])
    request = PublishRequest(
        tmp_path / "state",
        tmp_path / "out",
        NAME,
        force=True,
        removals=RemovalRequests(authors=("Jane Roe",)),
    )

    publish_staged(request)

    [row] = rows_of(tmp_path / "out", "469")
    # Taken out as from a lecture's text (crawler/publish/removals.py tidies what is left the same way).
    assert (row["text"], [s["text"] for s in row["segments"]]) == ("Thanks, . Next", ["Thanks, .", "Next"])


def test_a_bad_transcript_line_is_counted_and_never_published(tmp_path: Path) -> None:
    bad = track("130102", "502", "en", segments=[{"start_ms": 0, "end_ms": 2**31, "text": "x"}])
    line = json.dumps({"kind": "transcript", "record": bad.to_json()})
    write_stage(tmp_path / "state", records(), TRACKS, line)

    result = publish(tmp_path / "state", tmp_path / "out")

    manifest = json.loads((tmp_path / "out/manifest.json").read_text(encoding="utf-8"))
    assert manifest["provenance"]["bad_lines"] == 1
    assert result.result.row_counts["transcripts"] == 4
    assert "130102" not in {r["lecture_id"] for r in rows_of(tmp_path / "out", "502")}


def test_the_previous_releases_tracks_are_carried_when_the_stage_lacks_them(
    published: Path, tmp_path: Path
) -> None:
    state, out = first_night(published, tmp_path)
    first = {event: rows_of(out, event) for event in ("469", "502")}
    # The next crawl stages no track: 130100 lists only en now, 130101 is withdrawn, 130109 not restaged.
    listed = {0: {"subtitles": LECTURES[0][:1]}, 1: {"withdrawn": True}}
    write_stage(state, records(listed, without=[9]), [])

    publish(state, out)

    assert rows_of(out, "469") == first["469"]
    assert rows_of(out, "502") == [row for row in first["502"] if row["locale"] != "de"]
    lectures = pq.read_table(out / "data/lectures").to_pylist()
    assert [r["withdrawn"] for r in lectures if r["lecture_id"] == "130101"] == [True]


def sha256s(out: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((out / "data/transcripts").iterdir())
    }


def test_an_unchanged_night_publishes_the_same_bytes_and_a_new_track_is_a_change(
    published: Path, tmp_path: Path
) -> None:
    state, out = first_night(published, tmp_path)
    before = sha256s(out)
    write_stage(state, records(), TRACKS)

    assert next_release(read_staged(state), out_dir=out, state_dir=state).unchanged
    publish(state, out)

    assert sha256s(out) == before
    # Only a track differs: the lectures are the same, the release is not.
    write_stage(state, records(), [*TRACKS, track("130102", "502", "en")])
    assert not next_release(read_staged(state), out_dir=out, state_dir=state).unchanged


def test_a_release_without_any_track_has_no_transcripts_config(tmp_path: Path) -> None:
    write_stage(tmp_path / "state", [make_record(i) for i in range(3)], TRACKS)

    result = publish(tmp_path / "state", tmp_path / "out")

    manifest = json.loads((tmp_path / "out/manifest.json").read_text(encoding="utf-8"))
    assert "transcripts" not in manifest["configs"]
    assert "transcripts" not in result.result.row_counts
    assert not (tmp_path / "out/data/transcripts").exists()
    card = (tmp_path / "out/README.md").read_text(encoding="utf-8")
    assert "This release holds no subtitle track, so it has no `transcripts` config." in card
    assert "config_name: transcripts" not in card


class Staged:
    def __init__(self, tracks: Sequence[Transcript]) -> None:
        self.tracks = tracks

    def rows_of(self, lecture_id: str) -> list[StagedTranscript]:
        return [StagedTranscript(t) for t in self.tracks if t.lecture_id == lecture_id]


def test_row_groups_stay_within_a_small_bound(tmp_path: Path) -> None:
    lectures = [
        Lecture.from_json(
            make_record(i, event_id="502", subtitles=[sub(str(130100 + i), "en", "E", auto=True)])
        )
        for i in range(40)
    ]
    words = "word " * 4000  # 20 KB a track
    tracks = [track(lec.lecture_id, "502", "en", text=words) for lec in lectures]
    bound = 200_000
    written = TranscriptsTable(Staged(tracks))

    written.write_event(tmp_path, lectures, bound // 2)

    metadata = pq.read_metadata(tmp_path / "data/transcripts/event-502.parquet")
    sizes = [metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups)]
    assert metadata.num_rows == 40
    assert len(sizes) > 1
    for index, size in enumerate(sizes):
        assert size <= bound, f"case row group {index}: {size} bytes"
    assert written.num_rows == 40


def test_a_transcripts_file_edited_in_place_is_named_by_the_previous_release(
    published: Path, tmp_path: Path
) -> None:
    state, out = first_night(published, tmp_path)
    path = out / "data/transcripts/event-469.parquet"
    table = pq.read_table(path)
    pq.write_table(table.set_column(6, "text", pa.array(["edited"], pa.string())), path)

    previous = read_previous_release(out)

    assert previous.edited_files() == ["data/transcripts/event-469.parquet"]
    assert not next_release(read_staged(state), out_dir=out, state_dir=state).unchanged


def test_the_docs_show_the_columns_table_the_schema_gives() -> None:
    """``docs/columns.md`` as MkDocs builds it shows the card's table of the ``transcripts`` columns."""
    source = (Path(__file__).resolve().parents[1] / "docs" / "columns.md").read_text(encoding="utf-8")
    page = render_page(source)
    section = page[page.index("## The `transcripts` columns") :]
    section = section[: section.index("\n## ", 1)]

    assert columns_markdown(TRANSCRIPTS) in section
    for f in TRANSCRIPT_FIELDS:
        assert f"| `{f.name}` |" in section, f"case {f.name}"


def test_an_event_named_like_the_transcripts_config_gets_a_config_of_its_own() -> None:
    configs = event_configs(
        [{"event_id": "7", "event_name": "Transcripts"}, {"event_id": "8", "event_name": "X"}]
    )

    assert [c.config_name for c in configs] == ["transcripts-7", "x"]


# Lecture 130111 is lecture 130100's talk once more (the same title and abstract): merged into 130100 at
# publish. It lists 130100's de file once more and a fr track of its own.
FIRST = make_record(0)
SAME_TALK = {
    11: {
        "title": FIRST["title"],
        "abstract": FIRST["abstract"],
        "subtitles": [LECTURES[0][1], sub("130111", "fr", "Français", auto=False)],
    }
}
OWN_TRACK = track("130111", "502", "fr", text="Bonjour. Fin", segments=[
    {"start_ms": 0, "end_ms": 2000, "text": "Bonjour."}, {"start_ms": 2000, "end_ms": 4000, "text": "Fin"}
])  # fmt: skip
# The shared de file as staged under the merged id: the kept record's own answer for it stands.
SHARED_AGAIN = track("130111", "502", "de", subtitle_url=f"{SUBS}/130100/de.vtt", text="Other", segments=[])


def test_a_merged_lectures_tracks_are_published_under_the_kept_id(tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "out"
    write_stage(state, records(SAME_TALK), [*TRACKS, OWN_TRACK, SHARED_AGAIN])

    publish(state, out)

    en, de, _fr, missing, _es = TRACKS
    rows = rows_of(out, "502")
    assert [(r["lecture_id"], r["subtitle_url"]) for r in rows] == [
        ("130100", de.subtitle_url),
        ("130100", en.subtitle_url),
        ("130100", OWN_TRACK.subtitle_url),
        ("130101", missing.subtitle_url),
    ]
    assert rows[0] == expected(de)
    assert rows[2] == expected(OWN_TRACK, lecture_id="130100")
    lectures = {r["lecture_id"]: r for r in pq.read_table(out / "data/lectures").to_pylist()}
    assert "130111" not in lectures
    assert lectures["130100"]["alternate_ids"] == ["130111"]
    assert [s["url"] for s in lectures["130100"]["subtitles"]] == [
        en.subtitle_url,
        de.subtitle_url,
        None,
        OWN_TRACK.subtitle_url,
    ]

    # The next night stages no track: the kept record's rows are carried from the release, all of them.
    write_stage(state, records(SAME_TALK), [])
    publish(state, out)

    assert rows_of(out, "502") == rows


def test_a_merged_lectures_published_tracks_follow_it_to_the_kept_id(tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "out"
    # The first night 130111 is a talk of its own, published with its fr track.
    own = {11: {"subtitles": SAME_TALK[11]["subtitles"][1:]}}
    write_stage(state, records(own), [*TRACKS, OWN_TRACK])
    publish(state, out)
    published = [r for r in rows_of(out, "502") if r["lecture_id"] == "130111"]
    assert published == [expected(OWN_TRACK)]
    # Its abstract is then edited to 130100's: one talk, and the stage holds no track.
    write_stage(state, records(SAME_TALK), [])

    publish(state, out)

    kept = [r for r in rows_of(out, "502") if r["lecture_id"] == "130100"]
    assert [(r["locale"], r["subtitle_url"]) for r in kept] == [
        ("de", TRACKS[1].subtitle_url),
        ("en", TRACKS[0].subtitle_url),
        ("fr", OWN_TRACK.subtitle_url),
    ]
    assert kept[2] == {**published[0], "lecture_id": "130100"}


def transcript_files(out: Path) -> dict[str, tuple[str, int, int]]:
    """Each transcripts file: its sha256, inode and mtime (a file written again gets a new inode)."""
    return {
        p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_ino, p.stat().st_mtime_ns)
        for p in sorted((out / "data/transcripts").iterdir())
    }


@pytest.mark.parametrize("chunk_bytes", [TranscriptsTable.chunk_bytes, 1])
def test_a_night_with_the_same_tracks_writes_no_transcripts_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_bytes: int
) -> None:
    # Events whose tracks come in one chunk, and in a chunk a track (made again to be written).
    monkeypatch.setattr(TranscriptsTable, "chunk_bytes", chunk_bytes)
    state, out = tmp_path / "state", tmp_path / "out"
    write_stage(state, records(), TRACKS)
    publish(state, out)
    before = transcript_files(out)
    first = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    first_rows = rows_of(out, "502")
    # A lecture's title changes; no track does.
    write_stage(state, records({5: {"title": "A new title"}}), TRACKS)

    publish(state, out)

    assert transcript_files(out) == before
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["version"] != first["version"]
    assert manifest["transcript_shards"] == first["transcript_shards"]
    assert sorted(manifest["transcript_shards"]) == ["469", "502"]
    for path in ("data/transcripts/event-469.parquet", "data/transcripts/event-502.parquet"):
        assert manifest["files"][path] == first["files"][path], path
    assert manifest["row_counts"]["transcripts"] == 4
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "| Tracks | 4 |" in card and "| 502 | EMNLP 2025 | 3 |" in card

    # One track of event 502 is read anew with other words: only that event's file is written.
    said = track(
        "130100", "502", "de", text="Anders", segments=[{"start_ms": 0, "end_ms": 900, "text": "Anders"}]
    )
    write_stage(state, records({5: {"title": "A new title"}}), [TRACKS[0], said, *TRACKS[2:]])

    publish(state, out)

    after = transcript_files(out)
    assert after["event-469.parquet"] == before["event-469.parquet"]
    assert after["event-502.parquet"][0] != before["event-502.parquet"][0]
    assert after["event-502.parquet"][1] != before["event-502.parquet"][1]
    assert rows_of(out, "502") == [expected(said), *first_rows[1:]]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["transcript_shards"]["469"] == first["transcript_shards"]["469"]
    assert (
        manifest["transcript_shards"]["502"]["fingerprint"]
        != first["transcript_shards"]["502"]["fingerprint"]
    )
    assert manifest["transcript_shards"]["502"]["rows"] == 3


@pytest.mark.parametrize("problem", ["unparsable", "robots", "off_host", "failed", "empty", "too_large"])
def test_a_staged_track_without_text_never_replaces_a_published_text_without_its_files_word(
    published: Path, tmp_path: Path, problem: str
) -> None:
    """A stage that lacks what was published (a lost state, a fresh one) stages a track without text on
    an answer that is no evidence: the published text stands; the file's 404 (`not_found`) takes it."""
    state, out = first_night(published, tmp_path)
    first = {event: rows_of(out, event) for event in ("469", "502")}
    unreadable = [replace(t, text=None, segments=[], problem=problem) for t in TRACKS]
    shutil.rmtree(state)
    write_stage(state, records(), unreadable)

    publish(state, out)

    now = {event: rows_of(out, event) for event in ("469", "502")}
    # Every published text stands; a track that had none says the newer why.
    assert [[r for r in rows if r["text"]] for rows in now.values()] == [
        [r for r in rows if r["text"]] for rows in first.values()
    ]
    assert sum(1 for rows in first.values() for r in rows if r["text"]) >= 3
    assert [len(rows) for rows in now.values()] == [len(rows) for rows in first.values()]
    gone = [replace(t, text=None, segments=[], problem="not_found") for t in TRACKS]
    write_stage(state, records(), gone)
    publish(state, out)
    rows = rows_of(out, "502") + rows_of(out, "469")
    assert rows and all(r["text"] is None and r["problem"] == "not_found" for r in rows)


SAID = [
    {"start_ms": 0, "end_ms": 4000, "text": "Questions? Reach me at"},
    {"start_ms": 4000, "end_ms": 9000, "text": "415-555-2671 or jane dot doe at gmail"},
]
REDACTED_SAID = [
    {"start_ms": 0, "end_ms": 4000, "text": "Questions? Reach me at"},
    {"start_ms": 4000, "end_ms": 9000, "text": "[phone removed] or [email removed]"},
]


def _said(lecture_id: str, event_id: str, locale: str) -> Transcript:
    """A track as rules that found neither the number nor the spoken address left it."""
    return track(lecture_id, event_id, locale, text=" ".join(s["text"] for s in SAID), segments=SAID)


def test_a_track_redacted_under_earlier_rules_is_redacted_again_when_published(tmp_path: Path) -> None:
    """A staged line without the privacy rules' digest (a 304 kept it, or a crawl before the rules
    changed read it) is redacted under the rules in force, and so is a previous release's row carried
    from a release made under others."""
    state, out = tmp_path / "state", tmp_path / "out"
    earlier = [
        _said("130100", "502", "de") if t.locale == "de" and t.lecture_id == "130100" else t for t in TRACKS
    ]
    write_stage(state, records(), earlier)
    publish(state, out)
    de = [r for r in rows_of(out, "502") if r["lecture_id"] == "130100" and r["locale"] == "de"]
    assert [(r["text"], r["segments"]) for r in de] == [
        (" ".join(s["text"] for s in REDACTED_SAID), REDACTED_SAID)
    ]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["transcripts_privacy_rule"] == TRANSCRIPT_PRIVACY_RULE


# Personal data said across cues: no cue's text holds any alone, so only a whole track's redaction finds it.
SAID_ACROSS = [
    {"start_ms": 0, "end_ms": 4000, "text": "Questions? Mail jane dot doe at"},
    {"start_ms": 4000, "end_ms": 9000, "text": "gmail dot com or call +49 30"},
    {"start_ms": 9000, "end_ms": 12000, "text": "1234567 today"},
]
REDACTED_SAID_ACROSS = [
    {"start_ms": 0, "end_ms": 4000, "text": "Questions? Mail [email removed]"},
    {"start_ms": 4000, "end_ms": 9000, "text": "or call [phone removed]"},
    {"start_ms": 9000, "end_ms": 12000, "text": "today"},
]


def test_a_previous_releases_row_from_earlier_rules_is_redacted_again_when_carried(tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "out"
    current = {PRIVACY_RULE_KEY: TRANSCRIPT_PRIVACY_RULE}
    # A release whose rows were made under rules that found neither (stood in for by a staged line that
    # says it is redacted under the rules in force, and a manifest that names no rule). Every text a
    # release writes is scrubbed, a segment's too: what such a row still holds is what was said across
    # cues.
    writer = StageWriter(state)
    writer.open()
    for record in records():
        writer.write_lecture(Lecture.from_json(record))
    said = track("130109", "469", "es", text=" ".join(s["text"] for s in SAID_ACROSS), segments=SAID_ACROSS)
    writer.write_row(TRANSCRIPT_ROWS, said, current)
    writer.close(complete=True)
    publish(state, out)
    assert [r["segments"] for r in rows_of(out, "469")] == [SAID_ACROSS]
    path = out / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    del manifest["transcripts_privacy_rule"]
    path.write_text(json.dumps(manifest), encoding="utf-8")
    # The next night stages no track: the row is carried from the release, redacted under today's rules.
    write_stage(state, records(), [])
    publish(state, out)
    assert [r["segments"] for r in rows_of(out, "469")] == [REDACTED_SAID_ACROSS]
