"""A new listing attribute takes three files: its declaration in the schema (``crawler/schema/lecture.py``),
the replica's serving of it (``crawler/replica/attributes.py``) and one test.

A copy of the project gets one attribute of each kind that way (a text, a bool, a 64- and a 32-bit
integer, a timestamp, a list of strings, a number, and a view count that changes every night without the
lecture changing: a ``volatile`` one), and nothing else. The files that differ between the copy and the
project are counted, and the project's own tests of what a new attribute reaches (the copy's test of the
replica's pages and the parsers among them) pass in the copy. Then the copy's replica is crawled on two
nights, in two states. In the first, the copy's crawler starts from nothing: it reads every value from
the lecture pages and publishes it (Parquet, the card's column table, the documentation's). In the
second, the project's crawler publishes a release without the attributes, and the copy's crawler, on top
of it, fills them from the listing alone. On the next night, in both, the copy's crawler asks no lecture
page and publishes the new view counts without naming a lecture changed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawler import schema
from crawler import stats_keys as keys
from crawler.replica.layout import build_site, load_records
from crawler.replica.server import KIND_LECTURE_PAGE
from tests.support.commands import CHECKOUT, run_command
from tests.support.process import stop
from tests.support.replica import run_args, run_report

# What the copy is made of: what its tests, its crawler and its documentation need.
COPIED = ("crawler", "tests", "docs", "docsgen", "dataset_card", "mkdocs.yml", "pyproject.toml")
CACHES = ("__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".hypothesis")

# 1. What a contributor declares in ``Lecture`` (crawler/schema/lecture.py).
DECLARATION = """
    track: str | None = column("The lecture's track.", attribute=("track",), default=None)
    is_keynote: bool | None = column(
        "True for a keynote.", attribute=("is_keynote", "isKeynote"), default=None
    )
    recording_bytes: int | None = column(
        "Size of the recording in bytes.", attribute=("recording_bytes", "recordingBytes"), default=None
    )
    slot: Int32 | None = column("The lecture's slot in its session.", attribute=("slot",), default=None)
    recorded_at: datetime | None = column(
        "When the talk was recorded (UTC).", attribute=("recorded_at", "recordedAt"), default=None
    )
    languages: list[str] = column("Languages spoken.", attribute=("languages",), factory=list)
    rating: float | None = column("The talk's rating.", attribute=("rating",), default=None)
    view_count: int | None = column(
        "Views so far.", attribute=("view_count", "viewCount"), volatile=True, default=None
    )"""
ANCHOR = "\n    # Set at publish time from the ACL Anthology"

# 2. What the replica serves of them (crawler/replica/attributes.py): every third lecture has none but its
# view count, which grows every night.
REGISTRY = """def _partly(value: AttributeValue) -> AttributeValue:
    \"\"\"``value``, but none for every third lecture (by id), as the site sends it.\"\"\"
    return lambda lecture, night: value(lecture, night) if int(lecture.id) % 3 else None


SERVED_ATTRIBUTES: Mapping[str, AttributeValue] = {
    "track": _partly(lambda lecture, night: f"Track {int(lecture.id) % 4}"),
    "is_keynote": _partly(lambda lecture, night: int(lecture.id) % 2 == 0),
    "recording_bytes": _partly(lambda lecture, night: 2**40 + int(lecture.id)),
    "slot": _partly(lambda lecture, night: -(int(lecture.id) % 1000) - 1),
    "recorded_at": _partly(lambda lecture, night: f"2025-11-0{int(lecture.id) % 9 + 1}T08:30:00Z"),
    "languages": _partly(lambda lecture, night: ["en", f"x{int(lecture.id) % 10}"]),
    # An integer is a number too.
    "rating": _partly(lambda lecture, night: int(lecture.id) % 7 + (0 if int(lecture.id) % 2 else 0.25)),
    "view_count": lambda lecture, night: 1000 * night + int(lecture.id) % 97,
}
"""
EMPTY_REGISTRY = "SERVED_ATTRIBUTES: Mapping[str, AttributeValue] = {}\n"

# 3. The one test the contributor writes: the replica serves them, the parsers read them.
ADDED_TEST = '''"""The attributes added to the lecture: the replica serves them on the listing and the page
(the view count anew every night), the parsers read them from both, and a page request carries them."""

from __future__ import annotations

import json
import urllib.request
from datetime import UTC, datetime
from typing import Any

import pytest

from crawler.pages import LectureItem, parse_lecture_page, read_listing
from crawler.replica.layout import build_site, load_records
from crawler.replica.server import ReplicaServer
from crawler.spiders.refresh import listing_hashes
from crawler.urls import listing_url

ADDED = ("track", "is_keynote", "recording_bytes", "slot", "recorded_at", "languages", "rating", "view_count")


def expected(lecture_id: str, night: int) -> dict[str, Any]:
    n = int(lecture_id)
    views = n % 97 + 1000 * night
    if n % 3 == 0:
        return {**{name: [] if name == "languages" else None for name in ADDED}, "view_count": views}
    return {
        "track": f"Track {n % 4}",
        "is_keynote": n % 2 == 0,
        "recording_bytes": 2**40 + n,
        "slot": -(n % 1000) - 1,
        "recorded_at": datetime(2025, 11, n % 9 + 1, 8, 30, tzinfo=UTC),
        "languages": ["en", f"x{n % 10}"],
        "rating": float(n % 7) if n % 2 else n % 7 + 0.25,
        "view_count": views,
    }


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return answer.read().decode("utf-8")


@pytest.mark.parametrize("night", [0, 1])
def test_the_listing_and_the_page_give_them(night: int) -> None:
    site = build_site(load_records(), seed=5, lectures=12)
    lectures = site.event_lectures("502")
    with ReplicaServer(site, night=night, assets=False) as server:
        base = server.base_url
        answer = read_listing(fetch(listing_url(base, "502", 1, 100)), base)
        pages = {lec.id: parse_lecture_page(fetch(base + lec.path), base + lec.path) for lec in lectures}
    assert answer is not None
    listing, _, unmapped = answer
    assert unmapped == {}
    listed = {fields.lecture_id: fields for fields in listing.records}
    assert sorted(listed) == sorted(lec.id for lec in lectures)
    for lecture_id, fields in listed.items():
        assert fields.problems == [], lecture_id
        assert {name: getattr(fields, name) for name in ADDED} == expected(lecture_id, night)
        page = pages[lecture_id].fields
        assert page is not None and pages[lecture_id].extraction == "next_data", lecture_id
        assert {name: getattr(page, name) for name in ADDED} == expected(lecture_id, night)
        assert LectureItem.read_json(json.loads(json.dumps(fields.to_json()))) == fields, lecture_id
        # Compared from one night to the next, but for the view count.
        assert sorted(set(ADDED) & set(listing_hashes(fields))) == sorted(set(ADDED) - {"view_count"})
'''
ADDED_TEST_PATH = "tests/test_added_attributes.py"

ADDED = ("track", "is_keynote", "recording_bytes", "slot", "recorded_at", "languages", "rating", "view_count")
HASHED = tuple(name for name in ADDED if name != "view_count")
# Each column's Arrow type in the published Parquet.
ARROW_TYPES = {
    "track": pa.string(),
    "is_keynote": pa.bool_(),
    "recording_bytes": pa.int64(),
    "slot": pa.int32(),
    "recorded_at": pa.timestamp("us", tz="UTC"),
    "languages": pa.list_(pa.string()),
    "rating": pa.float64(),
    "view_count": pa.int64(),
}
# Each column's type and meaning in the card and the documentation.
COLUMNS = {
    "track": ("string", "The lecture's track."),
    "is_keynote": ("bool", "True for a keynote."),
    "recording_bytes": ("int64", "Size of the recording in bytes."),
    "slot": ("int32", "The lecture's slot in its session."),
    "recorded_at": ("timestamp[us, tz=UTC]", "When the talk was recorded (UTC)."),
    "languages": ("list<string>", "Languages spoken."),
    "rating": ("double", "The talk's rating."),
    "view_count": (
        "int64",
        "Views so far. Refreshed from the listing every night: a new value is no change.",
    ),
}

# The project's own tests of what a new attribute reaches, run in the copy: the schema; the attribute
# table and the parsers' sources; the replica's ground truth and its pages; the Parquet, a release's diff,
# the card and its charts; the documentation's columns. Left out: what takes most of their time and tests
# nothing a column changes (a full demo crawl, a second release's history, the card's template names, a
# row group past its bound, records synthesized for large sites).
AFFECTED = (
    ADDED_TEST_PATH,
    "tests/test_schema.py",
    "tests/test_pages_attributes.py",
    "tests/test_pages_lecture.py",
    "tests/test_pages_fields.py",
    "tests/test_replica_gold.py",
    "tests/test_replica_layout.py",
    "tests/test_replica_server.py::test_next_data_documents",
    "tests/test_replica_server.py::test_every_page_agrees_with_the_ground_truth",
    "tests/test_publish_parquet.py",
    "tests/test_publish_diff.py::test_a_diff_names_each_kind_once",
    "tests/test_publish_diff.py::test_a_new_value_of_a_volatile_field_is_no_change",
    "tests/test_publish_card.py",
    "tests/test_publish_charts.py",
)
LEFT_OUT = (
    "tests/test_publish_charts.py::test_a_site_never_seen_gets_a_card_with_its_charts_and_loadable_changes",
    "tests/test_publish_charts.py::test_a_second_release_of_the_same_state_redraws_only_its_history",
    "tests/test_publish_card.py::test_every_name_the_card_defines_renders_and_no_other_does",
    "tests/test_publish_card.py::test_a_table_left_out_while_empty_is_counted_as_0",
    "tests/test_publish_parquet.py::test_the_release_s_verification_refuses_a_row_group_past_the_bound",
    "tests/test_replica_layout.py::test_ten_thousand_lectures",
    "tests/test_replica_layout.py::test_synthesis_is_deterministic",
    "tests/test_replica_layout.py::test_synthesized_site_sizes",
)
SEED, LECTURES = 5, 12


def published(lecture_id: str, night: int) -> dict[str, Any]:
    """What a release holds for them on ``night`` (pyarrow's Python values)."""
    n = int(lecture_id)
    views = n % 97 + 1000 * night
    if n % 3 == 0:
        return {**{name: [] if name == "languages" else None for name in ADDED}, "view_count": views}
    return {
        "track": f"Track {n % 4}",
        "is_keynote": n % 2 == 0,
        "recording_bytes": 2**40 + n,
        "slot": -(n % 1000) - 1,
        "recorded_at": datetime(2025, 11, n % 9 + 1, 8, 30, tzinfo=UTC),
        "languages": ["en", f"x{n % 10}"],
        "rating": float(n % 7) if n % 2 else n % 7 + 0.25,
        "view_count": views,
    }


def as_json(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` as JSON holds them (a ground truth record): the timestamp as ISO 8601 text."""
    stamp = values["recorded_at"]
    return {**values, "recorded_at": stamp.isoformat().replace("+00:00", "Z") if stamp else None}


def has_values(lecture_id: str) -> bool:
    """Whether the lecture has a value for an attribute the content hash covers."""
    return int(lecture_id) % 3 != 0


# The copy ---------------------------------------------------------------------------------------------


def _files(root: Path) -> dict[str, bytes]:
    """Every file of the copied parts under ``root``, by path, caches left out."""
    out: dict[str, bytes] = {}
    for part in COPIED:
        top = root / part
        paths = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in paths:
            relative = path.relative_to(root)
            if not set(relative.parts) & set(CACHES) and path.suffix != ".pyc":
                out[relative.as_posix()] = path.read_bytes()
    return out


def changed_files(before: Path, after: Path) -> list[str]:
    """The files that differ between two trees: changed, added or removed."""
    old, new = _files(before), _files(after)
    return sorted(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path}: {old!r} is not there once"
    path.write_text(text.replace(old, new), encoding="utf-8")


@dataclass
class Contribution:
    root: Path
    changed: list[str]


@pytest.fixture(scope="module")
def contribution(tmp_path_factory: pytest.TempPathFactory) -> Contribution:
    """A copy of the project with the three files of the addition written, and what differs from the
    project (measured before anything runs in it)."""
    root = tmp_path_factory.mktemp("contributor")
    for part in COPIED:
        if (CHECKOUT / part).is_dir():
            shutil.copytree(CHECKOUT / part, root / part, ignore=shutil.ignore_patterns(*CACHES, "*.pyc"))
        else:
            shutil.copy2(CHECKOUT / part, root / part)
    lecture = root / "crawler" / "schema" / "lecture.py"
    _edit(lecture, ANCHOR, DECLARATION + ANCHOR)
    _edit(lecture, "from crawler.schema.columns import ", "from crawler.schema.columns import Int32, ")
    _edit(root / "crawler" / "replica" / "attributes.py", EMPTY_REGISTRY, REGISTRY)
    (root / ADDED_TEST_PATH).write_text(ADDED_TEST, encoding="utf-8")
    return Contribution(root, changed_files(CHECKOUT, root))


def copy_env(root: Path) -> dict[str, str]:
    """The environment of a command of the copy: its crawler and its tests first on the path, nothing of
    the project's."""
    return {**os.environ, "PYTHONPATH": str(root)}


# The copy's commands are forked from a fork server that imported the copy's crawler once, as the suite's
# are from one that imported the project's (tests.support.commands): this driver, run in the copy, starts
# the copy's own fork server and then starts and waits for commands as it is told, one JSON line each.
DRIVER = """
import json, sys
from pathlib import Path
import crawler, tests
from tests.support.commands import remember_environment, start_command, start_fork_server

remember_environment()
start_fork_server()
print(json.dumps({"crawler": crawler.__file__, "tests": tests.__file__}), flush=True)
started = []
for line in sys.stdin:
    asked = json.loads(line)
    if "start" in asked:
        out = Path(asked["out"])
        out.mkdir(parents=True, exist_ok=True)
        cwd, stdout, stderr = Path(asked["cwd"]), out / "stdout", out / "stderr"
        started.append(start_command(asked["start"], cwd=cwd, stdout=stdout, stderr=stderr))
        print(json.dumps(len(started) - 1), flush=True)
    else:
        print(json.dumps(started[asked["wait"]].wait(asked["timeout"])), flush=True)
"""


@dataclass(frozen=True)
class Started:
    """A command of the copy under way: its number with the driver, its command line and output folder."""

    number: int
    command: list[str]
    out: Path


class CopyCommands:
    """The copy's commands, each forked from the copy's fork server (see ``DRIVER``)."""

    def __init__(self, root: Path, work: Path) -> None:
        self.root, self.work = root, work
        work.mkdir(parents=True, exist_ok=True)
        with (work / "driver.err").open("w", encoding="utf-8") as err:
            self.driver = subprocess.Popen(
                [sys.executable, "-c", DRIVER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=copy_env(root),
                cwd=root,
            )
        # The driver's first line: where it imported the crawler and the tests from.
        self.imported: dict[str, str] = self._answer()

    def _answer(self) -> Any:
        assert self.driver.stdout is not None
        line = self.driver.stdout.readline()
        if not line:
            raise RuntimeError(f"the copy's command driver stopped; see {self.work / 'driver.err'}")
        return json.loads(line)

    def _ask(self, request: dict[str, Any]) -> Any:
        assert self.driver.stdin is not None
        self.driver.stdin.write(json.dumps(request) + "\n")
        self.driver.stdin.flush()
        return self._answer()

    def start(self, command: list[str], name: str) -> Started:
        """``command`` (``python -m ...``) started in the copy's directory; its output kept under ``name``."""
        out = self.work / name
        return Started(self._ask({"start": command, "cwd": str(self.root), "out": str(out)}), command, out)

    def wait(self, started: Started, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        code = self._ask({"wait": started.number, "timeout": timeout})
        out, err = ((started.out / name).read_text(encoding="utf-8") for name in ("stdout", "stderr"))
        return subprocess.CompletedProcess(started.command, code, out, err)

    def close(self) -> None:
        assert self.driver.stdin is not None
        self.driver.stdin.close()
        try:
            self.driver.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.driver.kill()
            self.driver.wait()


@dataclass
class Background:
    commands: CopyCommands
    tests: Started
    docs: Started


@pytest.fixture(scope="module")
def background(contribution: Contribution, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Background]:
    """The copy's commands, and two of them started at once to run while the replica is crawled: the
    project's affected tests and the documentation's columns page."""
    commands = CopyCommands(contribution.root, tmp_path_factory.mktemp("commands"))
    try:
        # The fork server imported the plugin that pytest would rewrite the asserts of; it has none.
        quiet = ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
        inner = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *quiet, "-n", "0", "-q", "-x"]
        inner += [*AFFECTED, *(arg for test in LEFT_OUT for arg in ("--deselect", test))]
        tests = commands.start(inner, "tests")
        docs = commands.start([sys.executable, "-m", "docsgen.columns", "docs/columns.md"], "docs")
        yield Background(commands, tests, docs)
    finally:
        commands.close()


# The replica of the copy, and its crawls ------------------------------------------------------------


@dataclass
class Replica:
    base_url: str
    requests: Path
    truth: Path

    def requests_since(self, since: int = 0) -> list[dict[str, Any]]:
        """The requests answered, from the ``since``-th on, as the request log holds them."""
        lines = self.requests.read_text(encoding="utf-8").splitlines() if self.requests.exists() else []
        return [json.loads(line) for line in lines[since:]]

    def asked(self, since: int = 0) -> list[str]:
        """The kinds of the requests answered, from the ``since``-th on."""
        return [request["kind"] for request in self.requests_since(since)]


@contextmanager
def copy_replica(root: Path, work: Path, *, night: int, port: int = 0) -> Iterator[Replica]:
    """The copy's replica on ``night`` (``python -m crawler.replica``), its request log and ground truth in
    ``work``; a later night is served on the port the first was."""
    work.mkdir(parents=True, exist_ok=True)
    log, truth = work / f"requests-{night}.jsonl", work / f"truth-{night}.jsonl"
    command = [sys.executable, "-m", "crawler.replica", "--port", str(port), "--no-assets"]
    command += ["--seed", str(SEED), "--lectures", str(LECTURES), "--night", str(night)]
    command += ["--request-log", str(log), "--ground-truth", str(truth)]
    with (work / f"replica-{night}.err").open("w", encoding="utf-8") as err:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=err, text=True, env=copy_env(root), cwd=root
        )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        if not base_url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the copy's replica did not start: {base_url!r}; see {work}")
        yield Replica(base_url, log, truth)
    finally:
        stop(process)


@dataclass
class Night:
    """One crawl's outcome: its exit status and output, its statistics, what it published, and what the
    replica's ground truth says it must have."""

    result: subprocess.CompletedProcess[str]
    rows: dict[str, dict[str, Any]]
    types: dict[str, pa.DataType]
    card: str
    report: dict[str, Any]
    truth: dict[str, dict[str, Any]]

    @property
    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = self.report["crawl"]["stats"]
        return stats


def night_of(work: Path, replica: Replica, result: subprocess.CompletedProcess[str]) -> Night:
    assert result.returncode == 0, result.stderr[-3000:]
    table = pq.read_table(work / "out" / "data" / "lectures")
    truth = [json.loads(line) for line in replica.truth.read_text(encoding="utf-8").splitlines()]
    return Night(
        result,
        {row["lecture_id"]: row for row in table.to_pylist()},
        {name: table.schema.field(name).type for name in ADDED},
        (work / "out" / "README.md").read_text(encoding="utf-8"),
        run_report(work),
        {record["lecture_id"]: record for record in truth},
    )


@dataclass
class Crawls:
    listed: list[str]  # the lectures the replica lists, by id
    paths: dict[str, str]  # their pages' paths, by id
    read: Night  # the copy's crawler on a state of its own, the first night: every page read
    read_asked: list[dict[str, Any]]  # the requests the replica answered it
    read_next: Night  # the copy's crawler on that state, the next night
    read_next_asked: set[str]
    without: dict[str, str]  # the content hashes of the project's crawler's release, the first night
    learned: Night  # the copy's crawler on top of it, the same night
    learned_asked: set[str]  # what the replica was asked by it
    next: Night  # the copy's crawler the next night
    next_asked: set[str]


@pytest.fixture(scope="module")
def crawls(
    contribution: Contribution, background: Background, tmp_path_factory: pytest.TempPathFactory
) -> Crawls:
    """Two nights of the copy's replica and two states on it. On the first night the copy's crawler
    crawls it from nothing (``fresh``: every page read), and, in the other state, the project's crawler
    crawls it (a release without the attributes), then the copy's crawler on top of that; on the next
    night, the copy's crawler again in each state."""
    root, commands = contribution.root, background.commands
    site = build_site(load_records(), seed=SEED, lectures=LECTURES)
    lectures = site.event_lectures("502")
    listed = sorted((lec.id for lec in lectures), key=int)
    paths = {lec.id: lec.path for lec in lectures}
    base = tmp_path_factory.mktemp("nights")
    work, fresh = base / "work", base / "fresh"

    def copy_crawl(replica: Replica, state: Path, name: str) -> Night:
        done = commands.wait(commands.start(run_args(replica.base_url, state, "extended"), name))
        return night_of(state, replica, done)

    with copy_replica(root, base / "replica", night=0) as replica:
        read = copy_crawl(replica, fresh, "read")
        read_asked = replica.requests_since()
        without = run_command(run_args(replica.base_url, work, "extended"), timeout=300)
        assert without.returncode == 0, without.stderr[-3000:]
        table = pq.read_table(work / "out" / "data" / "lectures", columns=["lecture_id", "content_sha256"])
        hashes = dict(zip(*(table.column(i).to_pylist() for i in range(2)), strict=True))
        since = len(replica.asked())
        learned = copy_crawl(replica, work, "learned")
        learned_asked = set(replica.asked(since))
        port = int(replica.base_url.rsplit(":", 1)[1])
    with copy_replica(root, base / "replica", night=1, port=port) as replica:
        read_next = copy_crawl(replica, fresh, "read-next")
        since = len(replica.asked())
        read_next_asked = set(replica.asked())
        following = copy_crawl(replica, work, "next")
        next_asked = set(replica.asked(since))
    return Crawls(
        listed, paths, read, read_asked, read_next, read_next_asked, hashes, learned, learned_asked,
        following, next_asked,
    )  # fmt: skip


# The tests --------------------------------------------------------------------------------------------


def test_the_addition_is_three_files(contribution: Contribution) -> None:
    assert contribution.changed == [
        "crawler/replica/attributes.py",
        "crawler/schema/lecture.py",
        ADDED_TEST_PATH,
    ]
    assert len(contribution.changed) <= 3


def test_a_first_crawl_reads_every_value_from_the_pages_and_the_next_asks_none(crawls: Crawls) -> None:
    """The copy's crawler, from nothing, asks every lecture's page once and publishes each value as the
    page gives it: no attribute is filled from the listing for a page without it, and none differs
    between the two. The next night it asks no page, and publishes the new view counts with no lecture
    named changed."""
    read, following = crawls.read, crawls.read_next
    pages = [r["path"] for r in crawls.read_asked if r["kind"] == KIND_LECTURE_PAGE]
    assert sorted(pages) == sorted(crawls.paths.values())
    assert (read.stats[keys.PAGES_FETCHED], read.stats.get(keys.PAGES_CARRIED)) == (len(crawls.listed), None)
    prefixes = (keys.FILLED_FROM_API_PREFIX, keys.API_MISMATCH_PREFIX)
    from_listing = {prefix + name for prefix in prefixes for name in ADDED}
    assert sorted(from_listing & set(read.stats)) == []
    assert read.types == ARROW_TYPES
    assert {i: {name: row[name] for name in ADDED} for i, row in read.rows.items()} == {
        lecture_id: published(lecture_id, 0) for lecture_id in crawls.listed
    }
    for lecture_id, record in read.truth.items():
        assert {name: record[name] for name in ADDED} == as_json(published(lecture_id, 0)), lecture_id
    for name, (kind, meaning) in COLUMNS.items():
        assert f"| `{name}` | `{kind}` | yes | {meaning} |" in read.card.splitlines(), name

    assert KIND_LECTURE_PAGE not in crawls.read_next_asked
    assert (following.stats.get(keys.PAGES_FETCHED), following.stats[keys.PAGES_CARRIED]) == (
        None,
        len(crawls.listed),
    )
    assert {i: {name: row[name] for name in ADDED} for i, row in following.rows.items()} == {
        lecture_id: published(lecture_id, 1) for lecture_id in crawls.listed
    }
    assert {i: row["content_sha256"] for i, row in following.rows.items()} == {
        i: row["content_sha256"] for i, row in read.rows.items()
    }
    assert following.report["changes"]["changed"] == {}


def test_the_night_that_learns_them_publishes_every_value_from_the_listing_alone(crawls: Crawls) -> None:
    """On top of the release the project's crawler published the same night without them, the copy's
    crawler asks no lecture page: it fills each attribute from the listing, keeps the content hash of
    each lecture without one, and names as changed exactly the lectures with one, for the attributes the
    content hash covers (not the view count)."""
    learned = crawls.learned
    assert crawls.learned_asked == {"robots", "listing"}
    assert (learned.stats.get(keys.PAGES_FETCHED), learned.stats[keys.PAGES_CARRIED]) == (
        None,
        len(crawls.listed),
    )
    assert sorted(learned.rows, key=int) == crawls.listed
    assert learned.types == ARROW_TYPES
    for lecture_id, row in learned.rows.items():
        assert {name: row[name] for name in ADDED} == published(lecture_id, 0), f"lecture {lecture_id}"
        kept = row["content_sha256"] == crawls.without[lecture_id]
        assert kept is not has_values(lecture_id), f"lecture {lecture_id}"
        # The project's schema, without them, hashes the row without them to that same hash.
        without = {k: v for k, v in row.items() if k not in ADDED}
        assert (schema.content_sha256(without) == row["content_sha256"]) is kept, f"lecture {lecture_id}"
    changed = learned.report["changes"]["changed"]
    assert sorted(changed, key=int) == [i for i in crawls.listed if has_values(i)]
    for lecture_id, fields in changed.items():
        assert sorted(fields) == sorted(HASHED), f"lecture {lecture_id}"
    # The replica's ground truth is what was published.
    assert sorted(learned.truth, key=int) == crawls.listed
    for lecture_id, record in learned.truth.items():
        assert {name: record[name] for name in ADDED} == as_json(published(lecture_id, 0)), (
            f"lecture {lecture_id}"
        )
        assert record["content_sha256"] == learned.rows[lecture_id]["content_sha256"], f"lecture {lecture_id}"


def test_the_card_and_the_docs_describe_them(crawls: Crawls, background: Background) -> None:
    built = background.commands.wait(background.docs)
    assert built.returncode == 0, built.stderr[-3000:]
    docs = built.stdout
    table = docs[docs.index("## The `lectures` columns") :]
    table = table[: table.index("\n## ", 1)]
    for name, (kind, meaning) in COLUMNS.items():
        row = f"| `{name}` | `{kind}` | yes | {meaning} |"
        assert row in crawls.learned.card.splitlines(), f"{name}: not in the card"
        assert row in table.splitlines(), f"{name}: not in the docs"


def test_the_next_night_asks_no_page_and_publishes_the_new_view_counts(crawls: Crawls) -> None:
    """The view counts are new (the replica serves its next night): a release is published with them,
    without a page request and without a lecture named changed."""
    following, learned = crawls.next, crawls.learned
    assert crawls.next_asked == {"robots", "listing"}
    assert (following.stats.get(keys.PAGES_FETCHED), following.stats[keys.PAGES_CARRIED]) == (
        None,
        len(crawls.listed),
    )
    assert sorted(following.rows, key=int) == crawls.listed
    for lecture_id, row in following.rows.items():
        assert {name: row[name] for name in ADDED} == published(lecture_id, 1), f"lecture {lecture_id}"
        assert row["view_count"] != learned.rows[lecture_id]["view_count"], f"lecture {lecture_id}"
        assert row["content_sha256"] == learned.rows[lecture_id]["content_sha256"], f"lecture {lecture_id}"
    assert following.report["release"]["version"] != learned.report["release"]["version"]
    assert following.report["changes"]["changed"] == {}
    assert {lecture_id: record["view_count"] for lecture_id, record in following.truth.items()} == {
        lecture_id: published(lecture_id, 1)["view_count"] for lecture_id in crawls.listed
    }


def test_the_projects_tests_of_what_it_reaches_pass_in_the_copy(
    contribution: Contribution, background: Background
) -> None:
    # The copy's commands import its crawler and its tests, none of the project's.
    root = contribution.root
    imported = background.commands.imported
    assert imported == {
        "crawler": str(root / "crawler" / "__init__.py"),
        "tests": str(root / "tests" / "__init__.py"),
    }
    ran = background.commands.wait(background.tests, timeout=600)
    assert ran.returncode == 0, ran.stdout[-5000:] + ran.stderr[-3000:]
    counts = ran.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ passed, \d+ deselected in [\d.]+s( \([\d:]+\))?", counts), counts
