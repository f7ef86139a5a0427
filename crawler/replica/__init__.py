"""A local replica of the Underline site: lecture pages, the JSON:API backend, robots.txt and faults.

It is a neighbour of the crawler, not a dependency: only the command line, tests and benchmarks use it.
Test scenarios built on it (hostile pages, planted cases) live with the tests.
"""

from __future__ import annotations

from crawler.replica.faults import FaultProfile, SiteFaults, named_profile
from crawler.replica.layout import (
    ReplicaSite,
    build_catalogue,
    build_site,
    ground_truth,
    load_records,
    sessions_truth,
    write_ground_truth,
)
from crawler.replica.server import ReplicaServer, RequestRecord, main

__all__ = [
    "FaultProfile",
    "ReplicaServer",
    "ReplicaSite",
    "RequestRecord",
    "SiteFaults",
    "build_catalogue",
    "build_site",
    "ground_truth",
    "load_records",
    "main",
    "named_profile",
    "sessions_truth",
    "write_ground_truth",
]
