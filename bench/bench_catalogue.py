"""Publishing a catalogue: peak memory and time per lecture against its size, and what a night rewrites.

    python -m bench.bench_catalogue --lectures 30740 --events 32 --work DIR

The suite compares 3,740 lectures over 4 events with 30,740 over 32 (events of about the same size): a
publish that holds one event at a time peaks at about the same memory for both.

Writes a synthetic finished stage of ``--lectures`` lectures over ``--events`` events straight into a state
directory (the stage files a crawl writes, no crawl), publishes it with ``eventcrawl publish`` in a child
process (peak RSS and wall time measured from outside), then stages a second night in which one percent
of the lectures changed their title, publishes that, and counts the bytes of the files whose sha256
changed against the release's total. The changed lectures are those of the last events (the events being
held are the ones that change), so most events keep their files. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import procs
from bench.bench_publish import synthetic_records
from crawler import schema
from crawler.state.stage import StageWriter

CHANGED_SHARE = 0.01


def catalogue_records(lectures: int, events: int, changed: int = 0) -> Iterator[dict[str, Any]]:
    """``lectures`` synthetic lectures spread evenly over ``events`` events; the last ``changed`` of them
    (in lecture order: the last events' lectures) get a new title."""
    for index, record in enumerate(synthetic_records(lectures)):
        event = index * events // lectures
        record["event_id"] = str(600 + event)
        record["event_name"] = f"Conference {2000 + event}"
        if index >= lectures - changed:
            record["title"] = f"{record['title']} (revised)"
        record["content_sha256"] = schema.content_sha256(record)
        yield record


def stage(state: Path, lectures: int, events: int, changed: int = 0) -> None:
    """A finished stage of the catalogue in ``state`` (a second call moves the first aside, as a crawl
    does)."""
    writer = StageWriter(state, fsync_every=10_000)
    writer.open()
    try:
        for record in catalogue_records(lectures, events, changed):
            writer.write_lecture(schema.Lecture.from_json(record))
    finally:
        summary = {"event_ids": [str(600 + e) for e in range(events)], "finished_at": "2025-11-12T06:00:00Z"}
        if changed:
            summary["finished_at"] = "2025-11-13T06:00:00Z"
        writer.close(complete=True, summary=summary)


def _files(out: Path) -> dict[str, dict[str, Any]]:
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    files: dict[str, dict[str, Any]] = manifest["files"]
    return files


def publish(work: Path, state: Path, out: Path, name: str) -> dict[str, Any]:
    cmd = procs.eventcrawl_cmd("publish", "--state", str(state), "--out", str(out), "--name", "bench")
    measured = procs.measure(cmd, workdir=work, name=name, timeout=1800)
    return {
        "returncode": measured.returncode,
        "wall_s": measured.wall_s,
        "cpu_s": measured.cpu_s,
        "max_rss_mib": measured.max_rss_mib,
        "error": measured.stderr[-800:] if measured.returncode else None,
    }


def run(work: Path, lectures: int, events: int) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    state, out = work / "state", work / "release"
    stage(state, lectures, events)
    first = publish(work, state, out, "publish-1")
    before = _files(out) if first["returncode"] == 0 else {}
    changed = max(1, round(lectures * CHANGED_SHARE))
    stage(state, lectures, events, changed)
    second = publish(work, state, out, "publish-2")
    after = _files(out) if second["returncode"] == 0 else {}
    rewritten = {p: e for p, e in after.items() if before.get(p, {}).get("sha256") != e["sha256"]}
    total = sum(int(e["size"]) for e in after.values())
    return {
        "lectures": lectures,
        "events": events,
        "first": first,
        "second": second,
        "seconds_per_lecture": first["wall_s"] / lectures,
        "cpu_per_lecture": first["cpu_s"] / lectures,
        "second_seconds_per_lecture": second["wall_s"] / lectures,
        "second_cpu_per_lecture": second["cpu_s"] / lectures,
        "changed_lectures": changed,
        "release_bytes": total,
        "rewritten_bytes": sum(int(e["size"]) for e in rewritten.values()),
        "rewritten_files": len(rewritten),
        "files": len(after),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lectures", type=int, default=30_740)
    parser.add_argument("--events", type=int, default=32)
    parser.add_argument("--work", type=Path, required=True, help="an empty working directory")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.work, args.lectures, args.events), indent=2))


if __name__ == "__main__":
    main()
