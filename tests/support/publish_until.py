"""``python -m tests.support.publish_until OUT STAGE EXCHANGE``: publish five records to OUT and, at the
release step STAGE, say so on stdout and wait to be killed; EXCHANGE ``off`` makes the swap take its two
renames. The crash tests of tests/test_publish_release.py kill it there."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from crawler.publish import release, swap
from tests.test_publish_parquet import PROVENANCE, make_records


def main(out: Path, stop_at: str, exchange: str) -> None:
    if exchange == "off":
        swap._rename_exchange = lambda a, b: False  # type: ignore[assignment]

    def on_step(stage: str, path: Path) -> None:
        if stage == stop_at:
            print(stage, flush=True)
            time.sleep(300)

    release.publish_release(make_records(5), out, name="emnlp-2025", provenance=PROVENANCE, on_step=on_step)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
