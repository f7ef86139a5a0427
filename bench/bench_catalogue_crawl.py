"""Crawling a catalogue at a page budget: the crawl's peak memory and time per lecture against its size.

    python -m bench.bench_catalogue_crawl --events 32 --lectures 30740 --budget 2500 --work DIR

Serves a replica catalogue (``--events`` events sharing ``--lectures`` lectures) in its own process and
runs two nights on one state directory, each ``eventcrawl crawl --page-budget B`` (every event given with
``--event-id``, loopback speed settings) then ``eventcrawl publish``; each command's peak RSS (its own
high-water mark) and wall time are measured from outside. The replica's request log says which lecture
pages (and subtitles) each night asked for. Night 1's release is read back (in a child process, after
the crawls) and compared with the replica's ground truth on the listing's fields. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import procs
from tests.support.replica import LISTING_FIELDS

PAGE_KINDS = ("lecture_page", "transcripts")
_LECTURE_ID = re.compile(r"^/lecture/(\d+)")
_TRANSCRIPT_ID = re.compile(r"filter\[lecture_id\]=(\d+)")


def pages_asked(log: Path, skip: int) -> tuple[int, set[str], int]:
    """How many lecture-page and subtitle requests the replica's log holds after its first ``skip`` lines,
    the lectures they were for, and the log's length (read line by line: see :func:`run`)."""
    count, lectures, lines = 0, set(), 0
    with log.open(encoding="utf-8") as fh:
        for lines, line in enumerate(fh, start=1):
            if lines <= skip or not line.strip():
                continue
            record = json.loads(line)
            if record.get("kind") not in PAGE_KINDS:
                continue
            count += 1
            path = str(record.get("path") or "").replace("%5B", "[").replace("%5D", "]")
            found = _LECTURE_ID.match(path) or _TRANSCRIPT_ID.search(path)
            if found:
                lectures.add(found.group(1))
    return count, lectures, lines


def truth_events(path: Path) -> tuple[list[str], int]:
    """The events of the replica's ground truth in the order they first appear, and its lectures."""
    events: dict[str, None] = {}
    lectures = 0
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                events.setdefault(json.loads(line)["event_id"])
                lectures += 1
    return list(events), lectures


def _normal(value: Any) -> Any:
    """A parquet value as the ground truth writes it (timestamps as ISO strings with ``Z``)."""
    if hasattr(value, "isoformat"):
        return value.isoformat().replace("+00:00", "Z")
    return value


def release_check(out: Path, truth_path: Path) -> dict[str, Any]:
    """Night 1's release against the ground truth: rows, distinct lectures, listing-only rows, and the
    share of (lecture, listing field) pairs equal to the truth."""
    import pyarrow.parquet as pq

    with truth_path.open(encoding="utf-8") as fh:
        truth = {r["lecture_id"]: r for r in (json.loads(line) for line in fh if line.strip())}
    rows = pq.read_table(out / "data" / "lectures").to_pylist()
    ids = Counter(str(r["lecture_id"]) for r in rows)
    compared = equal = 0
    wrong: Counter[str] = Counter()
    for row in rows:
        expected = truth.get(str(row["lecture_id"]))
        if expected is None:
            continue
        for name in LISTING_FIELDS:
            compared += 1
            if _normal(row.get(name)) == expected.get(name):
                equal += 1
            else:
                wrong[name] += 1
    return {
        "rows": len(rows),
        "distinct": len(ids),
        "repeated": sum(1 for n in ids.values() if n > 1),
        "unknown": sum(1 for i in ids if i not in truth),
        "api_listing": sum(1 for r in rows if str(r.get("extraction") or "").startswith("api_listing")),
        "listing_fields_right": equal / compared if compared else None,
        "fields_wrong": dict(wrong.most_common(5)),
    }


def crawl_command(base: str, state: Path, event_ids: Sequence[str], *extra: str) -> list[str]:
    """``eventcrawl crawl`` of these events of a replica at ``base`` into ``state``: loopback speed, no
    progress line, then ``extra``."""
    return procs.eventcrawl_cmd(
        "crawl", "--web-base", base, "--api-base", base, "--state", str(state),
        *(a for e in event_ids for a in ("--event-id", e)),
        *procs.fast_settings(), "-s", "PROGRESS_ENABLED=False", *extra,
    )  # fmt: skip


def night(
    work: Path, base: str, state: Path, n: int, budget: int, event_ids: Sequence[str]
) -> tuple[dict[str, Any], procs.Measured]:
    """One night: ``eventcrawl crawl`` at the budget, then ``eventcrawl publish``."""
    crawl_cmd = crawl_command(base, state, event_ids, "--page-budget", str(budget))
    crawl = procs.measure(crawl_cmd, workdir=work, name=f"crawl-{n}", timeout=7200)
    out = work / f"out-{n}"
    publish = procs.measure(
        procs.eventcrawl_cmd("publish", "--state", str(state), "--out", str(out), "--name", "bench"),
        workdir=work,
        name=f"publish-{n}",
        timeout=3600,
    )
    report_path = state / "crawl-report.json"
    stats = json.loads(report_path.read_text())["stats"] if report_path.exists() else {}
    published = re.search(r"published (\d+) lectures", publish.stdout)
    return {
        "crawl_returncode": crawl.returncode,
        "crawl_wall_s": crawl.wall_s,
        "crawl_cpu_s": crawl.cpu_s,
        "crawl_max_rss_mib": crawl.max_rss_mib,
        "crawl_error": crawl.stderr[-800:] if crawl.returncode else None,
        "listed": int(stats.get("underline/listed", 0)),
        "publish_returncode": publish.returncode,
        "published": int(published[1]) if published else None,
        "publish_wall_s": publish.wall_s,
        "publish_max_rss_mib": publish.max_rss_mib,
        "publish_error": publish.stderr[-800:] if publish.returncode else None,
    }, crawl


def run(work: Path, events: int, lectures: int, budget: int) -> dict[str, Any]:
    """Both nights, then the checks. This process stays small while it starts the crawls: a child's peak
    RSS as the kernel reports it (``ru_maxrss``) starts from its parent's at the fork, so the ground
    truth and the release are read only in a child of their own, after the last crawl."""
    work.mkdir(parents=True, exist_ok=True)
    state = work / "state"
    nights: list[dict[str, Any]] = []
    asked: list[set[str]] = []
    with procs.replica(work / "replica", "--events", str(events), "--lectures", str(lectures)) as rep:
        event_ids, lectures_listed = truth_events(rep.ground_truth_path)
        seen = 0
        for n in (1, 2):
            figures, _ = night(work, rep.base_url, state, n, budget, event_ids)
            count, ids, seen = pages_asked(rep.request_log_path, seen)
            figures["pages_requested"] = count
            figures["lectures_asked"] = len(ids)
            nights.append(figures)
            asked.append(ids)
        truth_copy = work / "ground-truth.jsonl"
        shutil.copyfile(rep.ground_truth_path, truth_copy)
    if nights[0]["publish_returncode"] == 0:
        command = [sys.executable, "-m", "bench.bench_catalogue_crawl", "--check", str(work / "out-1")]
        checked = subprocess.run(
            [*command, str(truth_copy)], capture_output=True, text=True, check=True, cwd=procs.REPO
        )
        nights[0]["release"] = json.loads(checked.stdout)
    first = nights[0]
    return {
        "events": events,
        "lectures": lectures_listed,
        "budget": budget,
        "nights": nights,
        "night2_asked_again": len(asked[0] & asked[1]),
        "night1_published_share": (first["published"] or 0) / lectures_listed if lectures_listed else None,
        "crawl_seconds_per_lecture": [n["crawl_wall_s"] / lectures_listed for n in nights],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_catalogue_crawl", description=__doc__)
    parser.add_argument("--events", type=int)
    parser.add_argument("--lectures", type=int)
    parser.add_argument("--budget", type=int, default=2500)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--check", nargs=2, type=Path, metavar=("RELEASE", "TRUTH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check:
        print(json.dumps(release_check(*args.check)))
        return 0
    if args.events is None or args.lectures is None or args.work is None:
        parser.error("--events, --lectures and --work are required")
    print(json.dumps(run(args.work, args.events, args.lectures, args.budget), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
