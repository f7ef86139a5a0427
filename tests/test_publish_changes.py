"""Changes per release: compute_changes, changes/<version>.parquet, and the card's recipe to apply them."""

from __future__ import annotations

import collections
import hashlib
import json
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawler import schema
from crawler.publish import changes as change_files
from crawler.publish.changes import compute_changes
from crawler.publish.manifest import ReleaseError
from crawler.publish.release import publish_release
from crawler.publish.verify import verify_release
from tests.test_publish_parquet import PROVENANCE, make_record, make_records


def rows(records: list[dict[str, Any]]) -> list[schema.Lecture]:
    return [schema.Lecture.from_json(r) for r in records]


def test_compute_changes() -> None:
    before = rows([make_record(i) for i in range(5)])
    later = datetime(2025, 12, 1, tzinfo=UTC)
    after = rows(
        [
            make_record(0, fetched_at=later),  # only fetched_at: not a change
            make_record(1, title="A New Title", source_urls=["https://underline.io/lecture/130101"]),
            make_record(2, withdrawn=True),
            make_record(3, authors=[{"name": "Ada Lovelace", "affiliations": [], "orcid": None}]),
            make_record(7),
        ]
    )
    found = compute_changes(before, after)
    assert [(c["lecture_id"], c["change"], c["changed_fields"]) for c in found] == [
        ("130101", "changed", ["source_urls", "title", "content_sha256"]),
        ("130102", "withdrawn", ["withdrawn"]),
        ("130103", "changed", ["authors", "content_sha256"]),
        ("130104", "removed", []),
        ("130107", "added", []),
    ]
    assert found[0]["lecture"] == after[1]
    assert found[3]["lecture"] is None and found[3]["event_id"] == "502"
    assert compute_changes(after, after) == []
    assert [c["change"] for c in compute_changes([], before)] == ["added"] * 5


@pytest.fixture(scope="module")
def first_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first release of ``make_records()`` (2025-11-12), made once; a test that goes on from it
    works on :func:`copy_of_first`'s copy."""
    out = tmp_path_factory.mktemp("first") / "release"
    publish_release(make_records(), out, name="emnlp", provenance=PROVENANCE)
    return out


def copy_of_first(first_release: Path, work: Path) -> Path:
    """``work / "release"`` as ``publish_release(make_records(), ...)`` leaves it: the first release."""
    shutil.copytree(first_release, work / "release", symlinks=True)
    return work / "release"


def card_snippet(card: str) -> str:
    match = re.search(r"```python\n(import pyarrow as pa\n.*?def apply_changes.*?)```", card, re.DOTALL)
    assert match is not None
    return match.group(1)


def test_applying_a_release_s_changes_to_the_previous_release_gives_it(
    first_release: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    out = copy_of_first(first_release, tmp_path)
    first = pq.read_table(out / "data" / "lectures")
    second_records = [r for r in make_records() if r["lecture_id"] not in {"130105"}]
    second_records = [
        make_record(3, title="A Corrected Title")
        if r["lecture_id"] == "130103"
        else make_record(6, withdrawn=True)
        if r["lecture_id"] == "130106"
        else make_record(8, slides_url="https://assets.underline.io/s/8.pdf")
        if r["lecture_id"] == "130108"
        else r
        for r in second_records
    ]
    second_records += [make_record(40), make_record(41, event_id="431", event_name="EMNLP 2023")]
    result = publish_release(
        second_records, out, name="emnlp", provenance={**PROVENANCE, "crawl_date": "2025-11-20"}
    )
    assert result.change_file == "changes/2025-11-20.parquet"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["change_files"] == ["changes/2025-11-12.parquet", "changes/2025-11-20.parquet"]
    assert manifest["change_rows"] == {"added": 2, "changed": 2, "withdrawn": 1, "removed": 1}
    assert set(manifest["change_files"]) <= set(manifest["files"])
    changes = pq.read_table(out / result.change_file)
    assert changes.column("change").to_pylist() == [
        "changed",
        "removed",
        "withdrawn",
        "changed",
        "added",
        "added",
    ]
    assert changes.column("lecture_id").to_pylist() == [
        "130103",
        "130105",
        "130106",
        "130108",
        "130140",
        "130141",
    ]

    # Run the card's own recipe on a local copy of the first release.
    pq.write_table(first, tmp_path / "lectures.parquet")
    (tmp_path / "changes").mkdir()
    (tmp_path / result.change_file).write_bytes((out / result.change_file).read_bytes())
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(card_snippet((out / "README.md").read_text(encoding="utf-8")), namespace)
    updated: pa.Table = namespace["lectures"]
    second = pq.read_table(out / "data" / "lectures").sort_by("lecture_id")
    assert updated.schema.remove_metadata().equals(second.schema.remove_metadata())
    assert updated.num_rows == second.num_rows == 13
    for mine, theirs in zip(updated.to_pylist(), second.to_pylist(), strict=True):
        assert mine == theirs, f"{mine=}, {theirs=}"
    assert first.num_rows == 12  # the first release itself was different


def test_the_changes_config_loads_every_release_s_rows(first_release: Path, tmp_path: Path) -> None:
    import datasets

    out = copy_of_first(first_release, tmp_path)
    first = datasets.load_dataset(str(out), "changes", split="train", cache_dir=str(tmp_path / "cache1"))
    # A first release: one row per lecture, all added, all of this release.
    assert first.num_rows == 12
    assert sorted(first["lecture_id"]) == [str(130100 + i) for i in range(12)]
    assert set(first["change"]) == {"added"}
    assert set(first["release"]) == {"2025-11-12"}
    assert first.features == datasets.Features.from_arrow_schema(change_files.arrow_schema())
    second_records = [
        make_record(3, title="A Corrected Title") if r["lecture_id"] == "130103" else r
        for r in make_records()
    ]
    publish_release(second_records, out, name="emnlp", provenance={**PROVENANCE, "crawl_date": "2025-11-20"})
    both = datasets.load_dataset(str(out), "changes", split="train", cache_dir=str(tmp_path / "cache2"))
    assert both.num_rows == 13
    latest = [(r["release"], r["lecture_id"], r["change"]) for r in both if r["release"] == "2025-11-20"]
    assert latest == [("2025-11-20", "130103", "changed")]


def _as_written_before_the_release_column(out: Path, path: str) -> None:
    """Rewrite a release's change file without its ``release`` column, as releases wrote it before, and
    its manifest entry with it."""
    table = pq.read_table(out / path).drop_columns(["release"])
    pq.write_table(table, out / path, compression="zstd")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    data = (out / path).read_bytes()
    manifest["files"][path] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (out / "manifest.json").write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


def test_a_change_file_written_before_the_release_column_gets_it_when_carried(
    first_release: Path, tmp_path: Path
) -> None:
    import datasets

    out = copy_of_first(first_release, tmp_path)
    _as_written_before_the_release_column(out, "changes/2025-11-12.parquet")
    assert "release" not in pq.read_schema(out / "changes/2025-11-12.parquet").names
    records = [*make_records(), make_record(40)]
    publish_release(records, out, name="emnlp", provenance={**PROVENANCE, "crawl_date": "2025-11-20"})
    carried = pq.read_table(out / "changes/2025-11-12.parquet")
    assert carried.schema.remove_metadata().equals(change_files.arrow_schema().remove_metadata())
    assert set(carried.column("release").to_pylist()) == {"2025-11-12"}
    assert carried.num_rows == 12
    loaded = datasets.load_dataset(str(out), "changes", split="train", cache_dir=str(tmp_path / "cache"))
    assert sorted(collections.Counter(loaded["release"]).items()) == [("2025-11-12", 12), ("2025-11-20", 1)]


def _with_card(out: Path, text: str) -> None:
    """Replace a release's card, and its manifest entry with it."""
    (out / "README.md").write_text(text, encoding="utf-8")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    data = (out / "README.md").read_bytes()
    manifest["files"]["README.md"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (out / "manifest.json").write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


def test_the_release_s_check_refuses_a_changes_config_that_misses_change_files(
    first_release: Path, tmp_path: Path
) -> None:
    out = copy_of_first(first_release, tmp_path)
    result = publish_release(
        [*make_records(), make_record(40)],
        out,
        name="emnlp",
        provenance={**PROVENANCE, "crawl_date": "2025-11-20"},
    )
    card = (out / "README.md").read_text(encoding="utf-8")
    pattern = "path: changes/*.parquet"
    assert card.count(pattern) == 1
    _with_card(out, card.replace(pattern, "path: changes/2025-11-20.parquet"))
    with pytest.raises(ReleaseError, match=re.escape("changes: datasets resolves 1 of the 2 change file(s)")):
        verify_release(out, result.row_counts)
    _with_card(out, card.replace("config_name: changes", "config_name: nightly"))
    with pytest.raises(ReleaseError, match=r"^changes: BuilderConfig 'changes' not found"):
        verify_release(out, result.row_counts)
