"""The card's charts: SVG a reader and a screen reader can read, the same bytes for the same figures, in
the release and its manifest, and the release history they draw kept in the manifest."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from huggingface_hub import DatasetCard

from crawler.publish import charts
from crawler.publish.charts import EventFigures, HistoryEntry
from crawler.publish.release import publish_release
from crawler.schema import FIELDS, has_value
from tests.test_publish_parquet import PROVENANCE, make_record, make_records

SVG = "{http://www.w3.org/2000/svg}"
NOW = datetime(2025, 11, 12, 9, 0, tzinfo=UTC)
CHART_FILES = [
    "assets/anthology-share.svg",
    "assets/field-coverage.svg",
    "assets/lectures-per-event.svg",
    "assets/release-history.svg",
]


def parsed(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg"
    return root


def texts(root: ET.Element) -> list[str]:
    """The visible labels: text elements, not the titles of shapes."""
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def figures(n: int, name: str = "Event") -> list[EventFigures]:
    return [
        EventFigures(
            name=f"{name} {i}",
            page=10 + i,
            listing_only=i % 3,
            linked=i,
            live=10 + i + i % 3,
            coverage={"title": 1.0, "abstract": 0.5},
        )
        for i in range(n)
    ]


def history(n: int) -> list[HistoryEntry]:
    return [
        {
            "version": f"2025-11-{i + 1:02d}",
            "lectures": 100 + i,
            "added": i,
            "changed": 1,
            "withdrawn": 0,
            "removed": 0,
        }
        for i in range(n)
    ]


def test_every_chart_is_titled_described_and_of_fixed_width() -> None:
    drawn = charts.charts(figures(3), history(2))
    assert [c.path for c in drawn] == [
        "assets/lectures-per-event.svg",
        "assets/field-coverage.svg",
        "assets/anthology-share.svg",
        "assets/release-history.svg",
    ]
    for chart in drawn:
        root = parsed(chart.svg)
        assert root.get("width") == "720", f"case {chart.path}"
        assert root.get("viewBox") == f"0 0 720 {root.get('height')}", f"case {chart.path}"
        assert root.get("role") == "img", f"case {chart.path}"
        title, desc = root.find(f"{SVG}title"), root.find(f"{SVG}desc")
        assert title is not None and title.text, f"case {chart.path}"
        assert desc is not None and desc.text is not None, f"case {chart.path}"
        # The description ends with the numbers the card prints under the chart.
        assert desc.text.endswith(chart.summary), f"case {chart.path}"


def test_summaries_say_the_numbers() -> None:
    events = figures(3)
    assert (
        charts.lectures_summary(events)
        == "36 lectures in 3 event(s): 33 from their own page, 3 from the listing only."
    )
    assert (
        charts.anthology_summary(events)
        == "3 of 36 lectures on the site linked to their Anthology paper (8.3%)."
    )
    assert charts.coverage_summary(events, ("title", "abstract", "doi")) == (
        "3 fields in 3 event(s): 3 of 6 cells at 100%; lowest abstract in Event 0 (50.0%)."
    )
    assert charts.history_summary(history(2)) == (
        "2 release(s); this one: 101 lectures, 1 added, 1 changed, 0 withdrawn, 0 removed."
    )


def test_event_names_are_escaped_cut_and_stripped_of_control_characters() -> None:
    nasty = '<script>&amp;"AI"</script>\x00\x1b Ünïcödé]]> a very long name indeed'
    events = [EventFigures(nasty, 3, 1, 1, 4, {"title": 0.25})]
    for chart in charts.charts(events, history(1))[:3]:
        # Parses as XML at all: no raw `<`, `&` or control character got through.
        labels = [t for t in texts(parsed(chart.svg)) if t.startswith("<script>")]
        assert labels == ['<script>&amp;"AI"</script> Ün…'], f"case {chart.path}"
        assert len(labels[0]) == charts.LABEL_CHARS, f"case {chart.path}"


@pytest.mark.parametrize("n", [1, 32])
def test_one_bar_per_event_however_many(n: int) -> None:
    events = figures(n, name="A rather long conference name that goes on")
    for chart in charts.charts(events, history(1))[:3]:
        root = parsed(chart.svg)
        names = [t for t in texts(root) if t.startswith("A rather")]
        assert names == ["A rather long conference name…"] * n, f"case {chart.path} {n}"
        assert float(root.get("height") or 0) >= 18 * n, f"case {chart.path} {n}"
    grid = parsed(charts.coverage_chart(events))
    cells = [r for r in grid.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert len(cells) == n * len(charts.MONITORED), f"case {n}"
    tips = sorted({(r.find(f"{SVG}title").text or "").rsplit(": ", 1)[1] for r in cells})  # type: ignore[union-attr]
    assert tips == ["100.0%", "50.0%", "not measured"], f"case {n}"


def test_the_history_chart_shows_the_last_releases() -> None:
    many = history(charts.HISTORY_SHOWN + 5)
    root = parsed(charts.history_chart(many))
    bars = [r for r in root.iter(f"{SVG}rect") if (r.find(f"{SVG}title") is not None)]
    versions = sorted({(r.find(f"{SVG}title").text or "").split(":")[0] for r in bars})  # type: ignore[union-attr]
    assert versions == sorted(h["version"] for h in many[5:])
    assert charts.history_summary(many).startswith(
        f"{charts.HISTORY_SHOWN + 5} release(s) (the last 60 shown);"
    )


def test_the_history_starts_from_a_manifest_that_kept_none() -> None:
    older = {
        "version": "2025-11-10",
        "row_counts": {"lectures": 7},
        "change_rows": {"added": 7, "changed": 0},
    }
    found = charts.release_history(
        older, "2025-11-11", 8, {"added": 1, "changed": 2, "withdrawn": 3, "removed": 0}
    )
    assert found == [
        {"version": "2025-11-10", "lectures": 7, "added": 7, "changed": 0, "withdrawn": 0, "removed": 0},
        {"version": "2025-11-11", "lectures": 8, "added": 1, "changed": 2, "withdrawn": 3, "removed": 0},
    ]
    kept = {**older, "history": found}
    assert charts.release_history(kept, "2025-11-12", 8, {})[:2] == found
    assert charts.history_problem(found) is None
    assert charts.history_problem([{"version": "x"}]) is not None
    assert charts.history_problem([{**found[0], "lectures": -1}]) is not None


def digests(out: Path) -> dict[str, str]:
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((out / "assets").iterdir())
    }


# The records the two releases below are published from: 12 in EMNLP 2025, one in EMNLP 2024.
RELEASED = [*make_records(), make_record(20, extraction="api_listing", anthology_id="2025.emnlp-main.1")]


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same state published twice, into two folders."""
    base = tmp_path_factory.mktemp("charts")
    for name in ("a", "b"):
        publish_release(RELEASED, base / name, name="emnlp-2025", provenance=PROVENANCE, now=NOW)
    return base / "a", base / "b"


def test_the_same_state_gives_the_same_chart_bytes(releases: tuple[Path, Path]) -> None:
    a, b = releases
    assert sorted(digests(a)) == CHART_FILES
    assert digests(a) == digests(b)


def test_the_card_shows_each_chart_by_path_with_its_numbers(releases: tuple[Path, Path]) -> None:
    out = releases[0]
    text = (out / "README.md").read_text(encoding="utf-8")
    DatasetCard(text)  # still parses
    shown = re.findall(r"^!\[([^\]]+)\]\((assets/[^)]+)\)\n\n(.+)$", text, flags=re.MULTILINE)
    assert [path for _, path, _ in shown] == [
        "assets/lectures-per-event.svg",
        "assets/field-coverage.svg",
        "assets/anthology-share.svg",
        "assets/release-history.svg",
    ]
    # The coverage chart measures every field but the bookkeeping ones, in both events; the records fill
    # 22 of them in every lecture of each. EMNLP 2024's one lecture has no authors, links, poster flag,
    # Anthology id or subtitles (nor a field added to the schema since the records were written): its
    # empty cells are the lowest, the first by name shown.
    measured = [f.name for f in FIELDS if not f.bookkeeping]
    side = next(r for r in RELEASED if r["event_name"] == "EMNLP 2024")
    lowest = min(name for name in measured if not has_value(side.get(name))).replace("_", "\\_")
    assert [line for _, _, line in shown] == [
        "13 lectures in 2 event(s): 12 from their own page, 1 from the listing only.",
        f"{len(measured)} fields in 2 event(s): 22 of {2 * len(measured)} cells at 100%; lowest {lowest} in"
        " EMNLP 2024 (0.0%).",
        "1 of 13 lectures on the site linked to their Anthology paper (7.7%).",
        "1 release(s); this one: 13 lectures, 13 added, 0 changed, 0 withdrawn, 0 removed.",
    ]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for path in CHART_FILES:
        data = (out / path).read_bytes()
        entry = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        assert manifest["files"][path] == entry, f"case {path}"


def test_a_second_release_of_the_same_state_redraws_only_its_history(tmp_path: Path) -> None:
    out = tmp_path / "release"
    publish_release(make_records(), out, name="emnlp-2025", provenance=PROVENANCE, now=NOW)
    first = digests(out)
    publish_release(
        make_records(), out, name="emnlp-2025", provenance={**PROVENANCE, "crawl_date": "2025-11-13"}, now=NOW
    )
    second = digests(out)
    assert [p for p in CHART_FILES if first[p] != second[p]] == ["assets/release-history.svg"]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["history"] == [
        {"version": "2025-11-12", "lectures": 12, "added": 12, "changed": 0, "withdrawn": 0, "removed": 0},
        {"version": "2025-11-13", "lectures": 12, "added": 0, "changed": 0, "withdrawn": 0, "removed": 0},
    ]


def test_a_site_never_seen_gets_a_card_with_its_charts_and_loadable_changes(tmp_path: Path) -> None:
    import subprocess
    import sys

    import datasets

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "crawler.app.cli",
            "demo",
            "--lectures",
            "120",
            "--seed",
            "4242",
            "--out",
            "out",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = tmp_path / "out"
    text = (out / "README.md").read_text(encoding="utf-8")
    card = DatasetCard(text)
    assert card.data.configs is not None
    shown = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", text)
    # The demo reads slides and posters: their chart comes last.
    assert shown == [
        "assets/lectures-per-event.svg",
        "assets/field-coverage.svg",
        "assets/anthology-share.svg",
        "assets/release-history.svg",
        "assets/slides-per-event.svg",
    ]
    slides = pq.read_table(out / "data" / "slides").to_pylist()
    with_text = {
        kind: sum(1 for r in slides if r["document"] == kind and r["pages"] and any(r["pages"]))
        for kind in ("slides", "poster")
    }
    assert with_text["slides"] > 0 and with_text["poster"] > 0
    drawn = (out / "assets" / "slides-per-event.svg").read_text(encoding="utf-8")
    assert f"{with_text['slides']} have slide text and {with_text['poster']} have poster text" in drawn
    for path in shown:
        assert parsed((out / path).read_text(encoding="utf-8")).find(f"{SVG}title") is not None, (
            f"case {path}"
        )
    cache = str(tmp_path / "cache")
    assert datasets.load_dataset(str(out), split="train", cache_dir=cache).num_rows == 120
    changes = datasets.load_dataset(str(out), "changes", split="train", cache_dir=cache)
    assert changes.num_rows == 120
    assert sorted(set(changes["change"])) == ["added"]
    assert len(set(changes["lecture_id"])) == 120


@pytest.mark.parametrize("n", [1, 2, 12, 70])
def test_history_labels_stay_apart_and_inside_the_chart(n: int) -> None:
    root = parsed(charts.history_chart(history(n)))
    labels = [t for t in root.iter(f"{SVG}text") if (t.text or "").startswith("2025-")]
    assert labels[-1].text == history(n)[-1]["version"], f"case {n}"
    assert labels[-1].get("text-anchor") == "end" and float(labels[-1].get("x") or 0) <= 720, f"case {n}"
    # Labels are about 70 pixels wide: each starts 80 pixels or more after the one before, and the
    # last (which ends at its bar) 150 or more.
    starts = [float(t.get("x") or 0) for t in labels]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert all(g >= 80 for g in gaps[:-1]), f"case {n}: {gaps}"
    assert not gaps or gaps[-1] >= 150, f"case {n}: {gaps}"


def test_a_zero_count_draws_no_shape() -> None:
    for chart in charts.charts([EventFigures("E", 5, 0, 0, 5, {})], history(1)):
        sizes = [(r.get("width"), r.get("height")) for r in parsed(chart.svg).iter(f"{SVG}rect")]
        assert not [s for s in sizes if "0" in s], f"case {chart.path}"


def test_the_coverage_grid_has_its_key() -> None:
    root = parsed(charts.coverage_chart(figures(2)))
    assert [t for t in texts(root) if t in {"0%", "100%", "not measured"}] == ["0%", "100%", "not measured"]
    fills = [r.get("fill") for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is None][1:]
    # White background aside: five shades from 0% to 100%, then the grey of a cell not measured.
    assert fills == ["#f7fbff", "#bbc8da", "#8096b5", "#446390", "#08306b", "#dddddd"]
