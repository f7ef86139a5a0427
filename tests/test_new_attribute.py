"""A new listing attribute of each kind (text, bool, 64- and 32-bit integer, timestamp, list of strings,
number) needs its declaration in the schema and nothing else: a copy of the crawler whose ``Lecture`` declares
seven more attributes, and no other change, reads them from a listing, carries them through a page
request's JSON, stages and publishes them (Parquet and the card's column table), keeps the content hash
of a lecture that has none of them, and the night after asks no lecture page for them; the documentation
built with it describes them, its pages unedited.

The site is the replica with the seven attributes added to its listing (its pages do not know them, so
what is published comes from the listing, through the page request's round trip).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crawler import schema
from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.replica.server import ReplicaServer
from tests.support.commands import CHECKOUT, run_command
from tests.support.extra_attributes import with_extra_attributes
from tests.support.replica import crawl_args, eventcrawl, fast_crawl_settings, run_args, run_report

# What a developer adds to ``Lecture`` (crawler/schema/lecture.py), and all they add to the crawler.
DECLARED = """
    track: str | None = column("The lecture's track.", attribute=("track",), default=None)
    is_keynote: bool | None = column(
        "True for a keynote.", attribute=("is_keynote", "isKeynote"), default=None
    )
    view_count: int | None = column("Views so far.", attribute=("view_count", "viewCount"), default=None)
    slot: Int32 | None = column("The lecture's slot in its session.", attribute=("slot",), default=None)
    recorded_at: datetime | None = column(
        "When the talk was recorded (UTC).", attribute=("recorded_at", "recordedAt"), default=None
    )
    languages: list[str] = column("Languages spoken.", attribute=("languages",), factory=list)
    rating: float | None = column("The talk's rating.", attribute=("rating",), default=None)
"""
ADDED = ("track", "is_keynote", "view_count", "slot", "recorded_at", "languages", "rating")


def sent(lecture_id: str) -> dict[str, Any]:
    """The extra attributes the listing sends for a lecture; every third lecture has none."""
    n = int(lecture_id)
    if n % 3 == 0:
        return {}
    return {
        "track": f"Track {n % 4}",
        "isKeynote": n % 2 == 0,  # the second spelling; False is a value
        "view_count": 2**40 + n,  # beyond 32 bits
        "slot": -(n % 1000) - 1,
        "recorded_at": f"2025-11-0{n % 9 + 1}T08:30:00Z",
        "languages": ["en", f"x{n % 10}"],
        "rating": n % 7 if n % 2 else n % 7 + 0.25,  # an integer is a number too
    }


def published(lecture_id: str) -> dict[str, Any]:
    """What the release holds for them (pyarrow's Python values)."""
    values = sent(lecture_id)
    if not values:
        return {name: [] if name == "languages" else None for name in ADDED}
    n = int(lecture_id)
    return {
        "track": values["track"],
        "is_keynote": values["isKeynote"],
        "view_count": values["view_count"],
        "slot": values["slot"],
        "recorded_at": datetime(2025, 11, n % 9 + 1, 8, 30, tzinfo=UTC),
        "languages": values["languages"],
        "rating": float(values["rating"]),
    }


def as_json(lecture_id: str) -> dict[str, Any]:
    """What a JSON form (a page request's, a stage line's) holds for them."""
    values = published(lecture_id)
    stamp = values["recorded_at"]
    return {**values, "recorded_at": stamp.isoformat().replace("+00:00", "Z") if stamp else None}


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records(), seed=5, lectures=12)


@pytest.fixture(scope="module")
def extended(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the crawler whose schema declares the seven attributes: the directory to import it from."""
    root = tmp_path_factory.mktemp("extended")
    for part in ("crawler", "dataset_card"):  # the card's template lives beside the package
        shutil.copytree(CHECKOUT / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    lecture = root / "crawler" / "schema" / "lecture.py"
    source = lecture.read_text(encoding="utf-8")
    anchor = "\n    # Set at publish time from the ACL Anthology"
    assert source.count(anchor) == 1 and source.count("from crawler.schema.columns import ") == 1
    source = source.replace(anchor, DECLARED.rstrip("\n") + anchor)
    source = source.replace(
        "from crawler.schema.columns import ", "from crawler.schema.columns import Int32, "
    )
    lecture.write_text(source, encoding="utf-8")
    return root


def run_extended(root: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    """``command`` (a ``python`` command line) importing the extended crawler: run in its directory,
    which ``-c`` and ``-m`` put first on the path."""
    path = os.pathsep.join([str(root), str(CHECKOUT)])
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=root, timeout=300, check=False
    )


# Run with the extended crawler: one listing page read, each lecture's fields sent through JSON text
# (as a crawl fleet's request carries them) and read back.
ROUND_TRIP = """
import json, sys, urllib.request
import crawler.schema
from crawler.pages import read_listing
from crawler.pages.fields import LectureFields
from crawler.spiders.refresh import listing_hashes
from crawler.urls import listing_url
base, names = sys.argv[1], sys.argv[2].split(",")
text = urllib.request.urlopen(listing_url(base, "502", 1, 100)).read().decode("utf-8")
out = {"schema": crawler.schema.__file__, "lectures": {}}
for fields in read_listing(text, base).listing.records:
    carried = json.loads(json.dumps(fields.to_json()))
    back = LectureFields.read_json(carried)
    out["lectures"][fields.lecture_id] = {
        "problems": fields.problems,
        "carried": {name: carried[name] for name in names},
        "equal": back == fields and all(getattr(back, n) == getattr(fields, n) for n in names),
        "hashed": sorted(set(names) & set(listing_hashes(fields))),
    }
print(json.dumps(out))
"""


def test_the_extended_listing_is_read_and_carried_in_json(site: ReplicaSite, extended: Path) -> None:
    with ReplicaServer(site, overrides=with_extra_attributes(sent)) as server:
        result = run_extended(extended, [sys.executable, "-c", ROUND_TRIP, server.base_url, ",".join(ADDED)])
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout)
    assert out["schema"].startswith(str(extended)), out["schema"]
    listed = out["lectures"]
    assert sorted(listed, key=int) == sorted(
        (i for i, lec in site.lectures.items() if lec.event_id == "502"), key=int
    )
    for lecture_id, got in listed.items():
        assert got["problems"] == [], f"lecture {lecture_id}"
        assert got["carried"] == as_json(lecture_id), f"lecture {lecture_id}"
        assert got["equal"] is True, f"lecture {lecture_id}"
        # Each is compared from one night to the next.
        assert got["hashed"] == sorted(ADDED), f"lecture {lecture_id}"


def nightly(root: Path, server: ReplicaServer, work: Path) -> subprocess.CompletedProcess[str]:
    return run_extended(root, run_args(server.base_url, work, "extended"))


def staged_records(state: Path) -> dict[str, dict[str, Any]]:
    """The lecture records of the last crawl's stage lines."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(state.glob("stage*/*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            record = entry.get("record") if isinstance(entry, dict) else None
            if isinstance(record, dict) and "lecture_id" in record:
                out[record["lecture_id"]] = record
    return out


def test_the_extended_lectures_are_staged_published_described_and_not_fetched_again(
    site: ReplicaSite, extended: Path, tmp_path: Path
) -> None:
    overrides = with_extra_attributes(sent)
    with ReplicaServer(site, overrides=overrides) as server:
        first = nightly(extended, server, tmp_path)
        port = int(server.base_url.rsplit(":", 1)[1])
    assert first.returncode == 0, first.stderr[-3000:]
    listed = sorted((i for i, lec in site.lectures.items() if lec.event_id == "502"), key=int)

    staged = staged_records(tmp_path / "state")
    assert sorted(staged, key=int) == listed
    for lecture_id, record in staged.items():
        assert {n: record[n] for n in ADDED} == as_json(lecture_id), f"lecture {lecture_id}"

    table = pq.read_table(tmp_path / "out" / "data" / "lectures")
    assert str(table.schema.field("view_count").type) == "int64"
    assert str(table.schema.field("slot").type) == "int32"
    rows = {r["lecture_id"]: r for r in table.to_pylist()}
    assert sorted(rows, key=int) == listed
    for lecture_id, row in rows.items():
        assert {n: row[n] for n in ADDED} == published(lecture_id), f"lecture {lecture_id}"
        # The content hash of a lecture without them is the one the schema without them gives.
        without = {k: v for k, v in row.items() if k not in ADDED}
        same = schema.content_sha256(without) == row["content_sha256"]
        assert same is (not sent(lecture_id)), f"lecture {lecture_id}"

    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    for name in ADDED:
        assert f"`{name}`" in card, f"{name}: not in the card"

    with ReplicaServer(site, port=port, overrides=overrides) as server:
        second = nightly(extended, server, tmp_path)
        asked = {record.kind for record in server.requests}
    assert second.returncode == 3, second.stderr[-3000:]
    assert asked == {"robots", "listing"}
    stats = run_report(tmp_path)["crawl"]["stats"]
    disagreed = sorted(
        k for k in stats if k.startswith(("underline/api_mismatch/", "underline/filled_from_api/"))
    )
    assert disagreed == []


def test_the_night_the_crawler_learns_them_fills_them_from_the_listing_alone(
    site: ReplicaSite, extended: Path, tmp_path: Path
) -> None:
    """A stage the crawler without them wrote: the extended crawler fills them from the listing, asks no
    lecture page, and changes the hash of exactly the lectures that have a value for one of them."""
    overrides = with_extra_attributes(sent)
    with ReplicaServer(site, overrides=overrides) as server:
        command = crawl_args(server.base_url, tmp_path / "state", *fast_crawl_settings())
        before = eventcrawl(*command, timeout=300)
        port = int(server.base_url.rsplit(":", 1)[1])
    assert before.returncode == 0, before.stderr[-3000:]
    hashes = {i: r["content_sha256"] for i, r in staged_records(tmp_path / "state").items()}
    assert hashes and all(hashes.values())

    with ReplicaServer(site, port=port, overrides=overrides) as server:
        learned = nightly(extended, server, tmp_path)
        asked = {record.kind for record in server.requests}
    assert learned.returncode == 0, learned.stderr[-3000:]
    assert asked == {"robots", "listing"}
    rows = {r["lecture_id"]: r for r in pq.read_table(tmp_path / "out" / "data" / "lectures").to_pylist()}
    assert sorted(rows, key=int) == sorted(hashes, key=int)
    for lecture_id, row in rows.items():
        assert {n: row[n] for n in ADDED} == published(lecture_id), f"lecture {lecture_id}"
        kept = row["content_sha256"] == hashes[lecture_id]
        assert kept is (not sent(lecture_id)), f"lecture {lecture_id}"


def test_a_release_takes_them_on_top_of_one_published_without_them(
    site: ReplicaSite, extended: Path, tmp_path: Path
) -> None:
    """A release published by the crawler without them: the next, by the extended crawler, publishes
    them, asks no lecture page, and names as changed exactly the lectures that have a value for one."""
    overrides = with_extra_attributes(sent)
    with ReplicaServer(site, overrides=overrides) as server:
        before = run_command(run_args(server.base_url, tmp_path, "extended"), timeout=300)
        port = int(server.base_url.rsplit(":", 1)[1])
    assert before.returncode == 0, before.stderr[-3000:]

    with ReplicaServer(site, port=port, overrides=overrides) as server:
        learned = nightly(extended, server, tmp_path)
        asked = {record.kind for record in server.requests}
    assert learned.returncode == 0, learned.stderr[-3000:]
    assert asked == {"robots", "listing"}
    changed = run_report(tmp_path)["changes"]["changed"]
    listed = sorted((i for i, lec in site.lectures.items() if lec.event_id == "502"), key=int)
    assert sorted(changed, key=int) == [i for i in listed if sent(i)]
    for lecture_id, fields in changed.items():
        assert sorted(fields) == sorted(ADDED), f"lecture {lecture_id}"


def test_the_docs_built_with_the_extended_crawler_describe_them(extended: Path) -> None:
    """The documentation's ``lectures`` columns are generated from the schema: built against the extended
    crawler, ``docs/columns.md`` (not edited) has a row for each, with its type and its description."""
    page = CHECKOUT / "docs" / "columns.md"
    result = run_extended(extended, [sys.executable, "-m", "docsgen.columns", str(page)])
    assert result.returncode == 0, result.stderr[-3000:]
    table = result.stdout[result.stdout.index("## The `lectures` columns") :]
    table = table[: table.index("\n## ", 1)]
    types = {
        "track": "string",
        "is_keynote": "bool",
        "view_count": "int64",
        "slot": "int32",
        "recorded_at": "timestamp[us, tz=UTC]",
        "languages": "list<string>",
        "rating": "double",
    }
    declared = {
        "track": "The lecture's track.",
        "is_keynote": "True for a keynote.",
        "view_count": "Views so far.",
        "slot": "The lecture's slot in its session.",
        "recorded_at": "When the talk was recorded (UTC).",
        "languages": "Languages spoken.",
        "rating": "The talk's rating.",
    }
    for name in ADDED:
        rows = [line for line in table.splitlines() if line.startswith(f"| `{name}` |")]
        assert len(rows) == 1, f"{name}: not in the docs"
        assert f"| `{types[name]}` |" in rows[0], rows[0]
        assert rows[0].endswith(f"| {declared[name]} |"), rows[0]
