"""Many events in one release: per-event configs, the authors config, session details, coverage, removals."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq
import pytest

from crawler import schema
from crawler.publish.changes import read_changes
from crawler.publish.release import publish_release
from crawler.publish.removals import apply_removals
from crawler.publish.tables import AUTHORS, LECTURES, SESSIONS, event_configs
from crawler.schema import check as schema_check
from tests.test_publish_parquet import PROVENANCE, make_record

ADA = {"name": "Ada Lovelace", "affiliations": ["University of London"], "orcid": "0000-0002-1825-0097"}
ALAN = {"name": "Alan Turing", "affiliations": ["Bletchley Park"], "orcid": None}
ALAN_MANCHESTER = {"name": "Alan Turing", "affiliations": ["University of Manchester"], "orcid": None}
GRACE = {"name": "Grace Hopper", "affiliations": [], "orcid": "0000-0001-5109-3700"}
SESSION_DETAILS = [
    {
        "session_id": "9001",
        "event_id": "502",
        "name": "Oral: Dialogue",
        "description": "Talks on dialogue systems.",
        "start": "2025-11-05T09:00:00Z",
        "end": "2025-11-05T10:30:00+00:00",
    },
    {"session_id": "9002", "description": None},
]


def records() -> list[dict[str, Any]]:
    """12 lectures of events 502 and 469 (index 9), some with authors, media and subtitles."""
    authors = {0: [ADA, ALAN], 1: [ALAN_MANCHESTER], 9: [GRACE, ADA], 4: [ALAN]}
    out = []
    for i in range(12):
        changes: dict[str, Any] = {"authors": authors.get(i, [])}
        if i == 0:
            changes["text"] = "Title\n\nAda Lovelace, Alan Turing\n\nEMNLP 2025"
            changes["slides_url"] = "https://assets.underline.io/slides/0.pdf"
            changes["is_poster"] = False
            changes["subtitles"] = [
                {"locale": "en", "name": "English", "auto_generated": True, "url": "https://x.test/0.vtt"}
            ]
        out.append(make_record(i, **changes))
    return out


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("events") / "release"
    coverage = {"502": {"title": 1.0, "keywords": 0.75}, "469": {"title": 1.0, "keywords": 0.0}}
    publish_release(
        records(),
        out,
        name="emnlp",
        provenance={**PROVENANCE, "coverage": coverage},
        sessions=SESSION_DETAILS,
    )
    return out


def test_event_config_names() -> None:
    named = event_configs(
        [
            {"event_id": "502", "event_name": "EMNLP 2025"},
            {"event_id": "469", "event_name": "EMNLP 2024"},
            {"event_id": "77", "event_name": None},
            {"event_id": "80", "event_name": "Workshop"},
            {"event_id": "81", "event_name": "workshop!"},
            {"event_id": "90", "event_name": "Sessions"},
            {"event_id": "a/b", "event_name": "Ünïcode Conf"},
        ]
    )
    assert [(e.event_id, e.config_name, e.directory) for e in named] == [
        ("469", "emnlp-2024", "event-469"),
        ("502", "emnlp-2025", "event-502"),
        ("77", "event-77", "event-77"),
        ("80", "workshop-80", "event-80"),
        ("81", "workshop-81", "event-81"),
        ("90", "sessions-90", "event-90"),
        ("a/b", "unicode-conf", "event-a_b-" + named[-1].directory.rsplit("-", 1)[1]),
    ]
    assert len(named[-1].directory.rsplit("-", 1)[1]) == 8


def test_every_config_loads_with_its_declared_features(release: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")

    def load(config: str) -> Any:
        return datasets.load_dataset(str(release), config, split="train", cache_dir=cache)

    by_event = {"emnlp-2025": "502", "emnlp-2024": "469"}
    everything = load("lectures")
    assert sorted(everything["lecture_id"]) == [str(130100 + i) for i in range(12)]
    for config, event_id in by_event.items():
        part = load(config)
        assert part.features == LECTURES.features(), f"{config=}, {event_id=}"
        expected = sorted(str(130100 + i) for i in range(12) if (i % 10 == 9) == (event_id == "469"))
        assert part["lecture_id"] == expected, f"{config=}, {event_id=}"
        assert set(part["event_id"]) == {event_id}, f"{config=}, {event_id=}"
    first = everything.filter(lambda r: r["lecture_id"] == "130100")[0]
    assert first["authors"] == [ADA, ALAN]
    assert first["slides_url"] == "https://assets.underline.io/slides/0.pdf"
    assert first["is_poster"] is False and first["video_url"] is None
    assert first["subtitles"][0]["locale"] == "en"
    assert everything.filter(lambda r: r["lecture_id"] == "130102")[0]["subtitles"] is None

    authors = load("authors")
    assert authors.features == AUTHORS.features()
    assert authors.to_list() == [
        {
            "author_key": "name:Alan Turing",
            "name": "Alan Turing",
            "orcid": None,
            "affiliations": ["Bletchley Park", "University of Manchester"],
            "lecture_ids": ["130100", "130101", "130104"],
            "event_ids": ["502"],
            "lecture_count": 3,
        },
        {
            "author_key": "orcid:0000-0001-5109-3700",
            "name": "Grace Hopper",
            "orcid": "0000-0001-5109-3700",
            "affiliations": [],
            "lecture_ids": ["130109"],
            "event_ids": ["469"],
            "lecture_count": 1,
        },
        {
            "author_key": "orcid:0000-0002-1825-0097",
            "name": "Ada Lovelace",
            "orcid": "0000-0002-1825-0097",
            "affiliations": ["University of London"],
            "lecture_ids": ["130100", "130109"],
            "event_ids": ["469", "502"],
            "lecture_count": 2,
        },
    ]
    sessions = load("sessions")
    assert sessions.features == SESSIONS.features()
    first_session = sessions[0]
    assert first_session["session_id"] == "9001"
    assert first_session["session_name"] == "Oral: Dialogue | Interactive Systems"  # the lectures' own name
    assert first_session["description"] == "Talks on dialogue systems."
    assert first_session["starts_at"] == datetime(2025, 11, 5, 9, tzinfo=UTC)
    assert first_session["ends_at"] == datetime(2025, 11, 5, 10, 30, tzinfo=UTC)
    assert sessions[2]["description"] is None and sessions[2]["starts_at"] is None


def test_manifest_lists_event_configs_over_the_lecture_files(release: Path) -> None:
    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    configs = manifest["configs"]
    assert configs["emnlp-2024"] == {
        "rows": 1,
        "files": ["data/lectures/event-469/train-00000-of-00001.parquet"],
        "event_id": "469",
    }
    assert configs["emnlp-2025"]["files"] == ["data/lectures/event-502/train-00000-of-00001.parquet"]
    assert configs["lectures"]["files"] == configs["emnlp-2024"]["files"] + configs["emnlp-2025"]["files"]
    assert configs["authors"]["rows"] == 3


def test_card_sections_per_event_coverage_and_personal_data(release: Path) -> None:
    text = (release / "README.md").read_text(encoding="utf-8")
    assert "### EMNLP 2024 (config `emnlp-2024`)" in text
    assert "| Presentation types | poster: 6; oral: 3; (none): 2 |" in text
    assert "| Lectures per day | 2025-11-05: 1; 2025-11-06: 4; 2025-11-07: 4; without a date: 2 |" in text
    assert "| keywords | 75.0% |\n| title | 100.0% |" in text
    assert "| keywords | 0.0% |\n| title | 100.0% |" in text
    assert '"coverage"' not in text  # shown as tables, not dumped into the provenance table
    assert "3 author row(s), 2\nwith an ORCID iD" in text
    assert 'remove_lectures = ["<lecture id>", ...]' in text and "redact_authors" in text
    assert 'emnlp_2025 = load_dataset("<namespace>/emnlp", "emnlp-2025", split="train")' in text
    # No per-lecture content: the card's size does not depend on the number of lectures.
    assert "Ada Lovelace" not in text and "University of London" not in text


def test_bad_session_details_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"sessions\[0\]: unknown keys \['room'\]"):
        publish_release(
            records(),
            tmp_path / "r",
            name="emnlp",
            provenance=PROVENANCE,
            sessions=[{"session_id": "1", "room": "A"}],
        )
    with pytest.raises(ValueError, match=r"sessions\[0\]: start/end must be ISO 8601"):
        publish_release(
            records(),
            tmp_path / "r",
            name="emnlp",
            provenance=PROVENANCE,
            sessions=[{"session_id": "1", "start": "noon"}],
        )
    assert not (tmp_path / "r").exists()


def test_apply_removals() -> None:
    source = records()
    kept = apply_removals(
        source,
        remove_lectures=["130103"],
        redact_authors=["https://orcid.org/0000-0002-1825-0097", "  alan   TURING "],
    )
    assert "130103" not in {r["lecture_id"] for r in kept} and len(kept) == 11
    by_id = {r["lecture_id"]: r for r in kept}
    assert by_id["130100"]["authors"] == []
    assert by_id["130100"]["text"] == "Title\n\nEMNLP 2025"
    assert by_id["130109"]["authors"] == [GRACE]
    assert by_id["130101"]["authors"] == []
    for record in kept:
        assert record["content_sha256"] == schema.content_sha256(record), f"{record=}"
        assert schema_check.validate_record(record) == [], f"{record=}"
    untouched = {r["lecture_id"]: r for r in source}
    assert by_id["130102"] == untouched["130102"]
    assert apply_removals(source) == source
    with pytest.raises(ValueError, match="names or ORCID iDs"):
        apply_removals(source, redact_authors=[""])


def test_removals_reach_the_release_and_the_earlier_change_files(tmp_path: Path) -> None:
    out = tmp_path / "release"
    publish_release(records(), out, name="emnlp", provenance=PROVENANCE)
    first_changes = out / "changes" / "2025-11-12.parquet"
    assert "Ada Lovelace" in json.dumps([r["lecture"].authors for r in read_changes(first_changes)])
    result = publish_release(
        records(),
        out,
        name="emnlp",
        provenance={**PROVENANCE, "crawl_date": "2025-11-20"},
        remove_lectures=["130104"],
        redact_authors=["Ada Lovelace"],
    )
    lectures = pq.read_table(out / "data" / "lectures").to_pylist()
    assert "130104" not in {r["lecture_id"] for r in lectures}
    everything = "\n".join(str(p.read_bytes()) for p in out.rglob("*.parquet"))
    assert "Ada Lovelace" not in everything and "0000-0002-1825-0097" not in everything
    changes = {r["lecture_id"]: r for r in read_changes(out / result.change_file)}  # type: ignore[operator]
    assert changes["130104"]["change"] == "removed" and changes["130104"]["lecture"] is None
    assert changes["130100"]["change"] == "changed"
    assert changes["130100"]["changed_fields"] == ["authors", "text", "content_sha256"]
    earlier = {r["lecture_id"]: r for r in read_changes(first_changes.parent / "2025-11-12.parquet")}
    assert "130104" not in earlier and earlier["130100"]["lecture"].authors == [ALAN]
