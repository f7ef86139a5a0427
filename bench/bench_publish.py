"""Publishing cost against a bare Parquet write of the same table, and the load time of the result.

    python bench/bench_publish.py --records 20000
    python bench/bench_publish.py --jsonl state/lectures.jsonl

Figures are ratios against a baseline measured in the same run: ``publish_release`` (rows, three
tables, sharded zstd Parquet with page index and content-defined chunking, card, manifest, checks
including a ``datasets.load_dataset`` round trip of every config, atomic swap) over
``pyarrow.parquet.write_table`` of the lectures table with default options.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawler import schema
from crawler.publish.records import lecture_rows
from crawler.publish.release import publish_release
from crawler.publish.summary_tables import build_tables

WORDS = [
    "language",
    "model",
    "retrieval",
    "evaluation",
    "dialogue",
    "translation",
    "benchmark",
    "reasoning",
    "multilingual",
    "alignment",
    "instruction",
    "tuning",
    "summarization",
    "generation",
    "agents",
    "knowledge",
    "graph",
    "entity",
    "efficient",
    "sparse",
    "robust",
    "adversarial",
    "factuality",
    "hallucination",
    "speech",
    "vision",
    "grounding",
    "low-resource",
    "annotation",
    "corpus",
]
TYPES = ["poster", "oral", "findings poster", "demo", "industry", None]


def synthetic_records(n: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    """Schema-valid lectures with EMNLP-like sizes: ~150-word abstracts, 1-5 keywords, 200 sessions."""
    rng = random.Random(seed)
    start = datetime(2025, 11, 5, 1, 0, tzinfo=UTC)
    for i in range(n):
        lecture_id = str(100_000 + i)
        title = " ".join(rng.choices(WORDS, k=rng.randint(5, 14))).capitalize()
        abstract = " ".join(rng.choices(WORDS, k=rng.randint(80, 250))) + "."
        session = rng.randrange(200)
        url = f"https://underline.io/lecture/{lecture_id}-lecture-{lecture_id}"
        record: dict[str, Any] = {
            "lecture_id": lecture_id,
            "url": url,
            "source_urls": sorted({url, f"https://underline.io/lecture/{lecture_id}"}),
            "title": title,
            "abstract": abstract,
            "keywords": rng.sample(WORDS, k=rng.randint(1, 5)),
            "presentation_type": rng.choice(TYPES),
            "event_id": "502",
            "event_name": "EMNLP 2025",
            "session_id": str(9000 + session),
            "session_name": f"Session {session}: {rng.choice(WORDS)}",
            "held_at": start + timedelta(minutes=15 * rng.randrange(400)),
            "published_at": start - timedelta(days=7),
            "doi": f"10.48448/{i:04x}-{i % 9973:04x}" if rng.random() < 0.8 else None,
            "is_premium": rng.random() < 0.1,
            "related_lecture_ids": [str(100_000 + rng.randrange(n)) for _ in range(rng.randint(0, 6))],
            "text": f"{abstract}\n\nEMNLP 2025\n\n{title}",
            "extraction": "next_data",
            "withdrawn": False,
            "fetched_at": start + timedelta(days=7, seconds=i),
        }
        record["content_sha256"] = schema.content_sha256(record)
        yield record


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def best_of(repeat: int, run: Callable[[int], None]) -> float:
    times = []
    for attempt in range(repeat):
        began = time.perf_counter()
        run(attempt)
        times.append(time.perf_counter() - began)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=20_000, help="synthetic lectures (default 20000)")
    parser.add_argument("--jsonl", type=Path, help="read records from this JSON lines file instead")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs (default 3)")
    args = parser.parse_args(argv)

    import datasets
    import pyarrow.parquet as pq

    records = read_jsonl(args.jsonl) if args.jsonl else list(synthetic_records(args.records))
    provenance = {"crawl_date": "2025-11-12", "crawler_version": "bench", "web_base": "https://underline.io"}
    began = time.perf_counter()
    rows = lecture_rows(records)
    validate_s = time.perf_counter() - began
    table = build_tables(rows)["lectures"]
    datasets.disable_progress_bars()

    with tempfile.TemporaryDirectory(prefix="bench-publish-") as tmp:
        root = Path(tmp)
        stages: dict[str, float] = {}

        def publish(attempt: int) -> None:
            began = time.perf_counter()

            def mark(stage: str, _path: Path) -> None:
                stages[stage] = time.perf_counter() - began

            publish_release(
                records, root / f"release-{attempt}", name="bench", provenance=provenance, on_step=mark
            )

        def bare(attempt: int) -> None:
            pq.write_table(table, root / f"bare-{attempt}.parquet")

        def load(attempt: int) -> None:
            loaded = datasets.load_dataset(
                str(root / "release-0"), split="train", cache_dir=str(root / f"c{attempt}")
            )
            assert loaded.num_rows == len(records)

        publish_s = best_of(args.repeat, publish)
        bare_s = best_of(args.repeat, bare)
        load_s = best_of(args.repeat, load)
        release_bytes = sum(p.stat().st_size for p in (root / "release-0" / "data").rglob("*.parquet"))
        bare_bytes = (root / "bare-0.parquet").stat().st_size

    built, checked = stages["built"], stages["checked"] - stages["built"]
    print(f"records                      {len(records):>10}")
    print(f"publish_release (best of {args.repeat})   {publish_s:>9.3f}s")
    print(f"  build (tables, parquet, card, manifest) {built:.3f}s, checks {checked:.3f}s (last run)")
    print(f"  validating records and their hashes alone (measured apart) {validate_s:.3f}s")
    print(f"bare pq.write_table          {bare_s:>9.3f}s")
    print(f"ratio publish / bare write   {publish_s / bare_s:>9.1f}x")
    print(f"load_dataset (fresh cache)   {load_s:>9.3f}s")
    print(f"parquet bytes: release data  {release_bytes:>10} (3 configs, zstd)")
    print(f"parquet bytes: bare write    {bare_bytes:>10} (lectures, default snappy)")


if __name__ == "__main__":
    main()
