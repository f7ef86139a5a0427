"""``python -m crawler.replica``: serve the replica until SIGTERM or SIGINT."""

from __future__ import annotations

import sys

from crawler.replica.server import main

if __name__ == "__main__":
    sys.exit(main())
