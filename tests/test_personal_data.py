"""No e-mail address anywhere on disk after a crawl and a publish: not in the export, the stage, the
reports, the logs' files or the HTTP cache; and every author is published in order.

The replica gives every author profile an e-mail address, as the real API is reported to.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pyarrow.parquet as pq

from tests.support.replica import eventcrawl, fast_crawl_settings, running_replica

EMAIL = re.compile(rb"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")


def readable_bytes(path: Path) -> bytes:
    """The file's bytes, and for compressed formats what they hold once opened."""
    raw = path.read_bytes()
    if path.suffix == ".parquet":
        rows = pq.read_table(path).to_pylist()
        return raw + json.dumps(rows, default=str, ensure_ascii=False).encode("utf-8")
    if raw[:2] == b"\x1f\x8b":
        return raw + gzip.decompress(raw)
    return raw


def test_no_email_address_reaches_any_file_and_authors_are_published_in_order(tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "out"
    with running_replica(tmp_path / "replica", "--lectures", "80") as replica:
        command = [
            "run", "--web-base", replica.base_url, "--api-base", replica.base_url,
            "--state", str(state), "--out", str(out), *fast_crawl_settings(),
        ]  # fmt: skip
        first = eventcrawl(*command)
        assert first.returncode == 0, first.stderr[-3000:]
        # A second night revalidates through the cache: what it stores must be clean too.
        second = eventcrawl(*command)
        assert second.returncode == 3, second.stderr[-3000:]
        truth = {r["lecture_id"]: r for r in replica.full_ground_truth()}
        served_emails = sum(1 for r in replica.requests() if r.get("kind") == "listing")
    assert served_emails > 0
    assert any((state / "httpcache").rglob("*")), "the crawl cached nothing: the check would prove nothing"
    leaks = {}
    for path in [*state.rglob("*"), *out.rglob("*")]:
        if path.is_file():
            found = EMAIL.findall(readable_bytes(path))
            if found:
                leaks[str(path.relative_to(tmp_path))] = found[:3]
    assert leaks == {}
    assert EMAIL.search(first.stdout.encode() + first.stderr.encode()) is None
    rows = {r["lecture_id"]: r for r in pq.read_table(out / "data" / "lectures").to_pylist()}
    assert sorted(rows) == sorted(truth)
    wrong = [i for i, row in rows.items() if row["authors"] != truth[i]["authors"]]
    assert wrong == []
    assert sum(1 for r in rows.values() for a in r["authors"] if a["orcid"]) > 0
