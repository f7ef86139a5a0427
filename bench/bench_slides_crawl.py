"""The requests and bytes a crawl asks per lecture with its slides on, against the same crawl without:
the ``slides_crawl`` figures.

    python -m bench.bench_slides_crawl [--lectures 300] [--work DIR]
    bench/run --only slides_crawl                  # as a section of the suite (section())

Serves a replica of ``--lectures`` lectures (its decks and posters real PDFs on its assets origin) in a
process of its own and crawls it three times in that one run, each ``eventcrawl crawl`` at loopback speed:
without ``--slides`` into one state, with ``--slides`` into another, then with ``--slides`` again on that
state, as a second night with nothing changed does (every lecture and its documents carried: no document
may be asked again). For each crawl the replica's request log says what was asked, by kind, and the
crawl's stats what came back (``downloader/response_bytes``: every answer's bytes as received, both
origins; ``underline/slides/bytes``: the documents'). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import procs
from bench.bench_catalogue_crawl import crawl_command, truth_events
from crawler import stats_keys as keys
from crawler.replica.assets import KIND_DOCUMENT
from crawler.schema.slides import DOCUMENT_COLUMNS

# The crawls of one run, in order: (name, with --slides); the last one is the second night of the one
# before it, on the same state.
CRAWLS = (("without", False), ("with", True), ("again", True))
LECTURES, QUICK_LECTURES = 300, 100


def documents_named(records: Sequence[dict[str, Any]]) -> int:
    """The slide decks and posters the ground truth's lectures name."""
    return sum(1 for r in records for _, column in DOCUMENT_COLUMNS if r.get(column))


def crawl(rep: Any, work: Path, name: str, slides: bool, event_ids: Sequence[str]) -> dict[str, Any]:
    """One crawl of the replica: how it ran, what the replica was asked (by kind) and what came back."""
    before = len(rep.requests())
    state = work / ("state-slides" if slides else "state")
    command = crawl_command(rep.base_url, state, event_ids, *(["--slides"] if slides else []))
    measured = procs.measure(command, workdir=work, name=f"crawl-{name}", timeout=1800)
    kinds = Counter(str(r.get("kind")) for r in rep.requests()[before:])
    report = state / "crawl-report.json"
    stats = json.loads(report.read_text())["stats"] if report.exists() else {}
    return {
        "slides": slides,
        "returncode": measured.returncode,
        "error": measured.stderr[-800:] if measured.returncode else None,
        "wall_s": measured.wall_s,
        "requests": sum(kinds.values()),
        "by_kind": dict(kinds.most_common()),
        "document_requests": kinds[KIND_DOCUMENT],
        "request_count": int(stats.get("downloader/request_count", 0)),
        "response_bytes": int(stats.get("downloader/response_bytes", 0)),
        "slides_asked": int(stats.get(keys.SLIDES_ASKED, 0)),
        "slides_bytes": int(stats.get(keys.SLIDES_BYTES, 0)),
        "slides_read": int(stats.get(keys.SLIDES_READ, 0)),
        "slides_carried": int(stats.get(keys.SLIDES_CARRIED, 0)),
    }


def run(work: Path, lectures: int) -> dict[str, Any]:
    """The three crawls on one replica, with each one's requests and bytes per lecture."""
    work.mkdir(parents=True, exist_ok=True)
    with procs.replica(work / "replica", "--lectures", str(lectures)) as rep:
        event_ids, listed = truth_events(rep.ground_truth_path)
        named = documents_named(rep.full_ground_truth())
        crawls = {name: crawl(rep, work, name, slides, event_ids) for name, slides in CRAWLS}
    for figures in crawls.values():
        figures["requests_per_lecture"] = figures["requests"] / listed
        figures["kib_per_lecture"] = figures["response_bytes"] / 1024 / listed
    return {"lectures": listed, "documents_named": named, "crawls": crawls}


def section(work: Path, quick: bool) -> Any:
    """The ``slides_crawl`` section of ``bench/run``."""
    from bench.suite import Figure, Section

    point = run(work, QUICK_LECTURES if quick else LECTURES)
    crawls, n = point["crawls"], point["lectures"]
    result = Section(details=point)
    failed = [
        f"crawl {name} exited {c['returncode']}: {c['error']}" for name, c in crawls.items() if c["error"]
    ]
    if failed:
        result.notes += failed
        return result
    without, with_, again = crawls["without"], crawls["with"], crawls["again"]
    label = f"crawl of {n} replica lectures with --slides"
    result.figures += [
        Figure(
            f"{label}: requests per lecture, both origins (vs without, same run)",
            with_["requests_per_lecture"],
            "requests",
            without["requests_per_lecture"],
            "without --slides",
            with_["requests_per_lecture"] / without["requests_per_lecture"],
        ),
        Figure(
            f"{label}: bytes received per lecture (vs without, same run)",
            with_["kib_per_lecture"],
            "KiB",
            without["kib_per_lecture"],
            "without --slides",
            with_["kib_per_lecture"] / without["kib_per_lecture"],
        ),
        Figure(
            f"{label}: documents asked / documents the lectures name",
            f"{with_['document_requests']}/{point['documents_named']}",
            target="each once",
            met=with_["document_requests"] == with_["slides_asked"] == point["documents_named"],
        ),
        Figure(
            f"{label}: document requests of a second night with nothing changed",
            again["document_requests"],
            target="0",
            met=again["document_requests"] == 0 and again["slides_asked"] == 0,
        ),
    ]
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_slides_crawl",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--lectures", type=int, default=LECTURES)
    parser.add_argument(
        "--work", type=Path, help="where the replica and the states go (kept); else a temporary one"
    )
    args = parser.parse_args(argv)
    if args.work is not None:
        print(json.dumps(run(args.work, args.lectures), indent=2))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-slides-crawl-") as tmp:
        print(json.dumps(run(Path(tmp), args.lectures), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
