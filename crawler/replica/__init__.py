"""A local replica of the Underline site: lecture pages, the JSON:API backend, robots.txt and faults, and
an assets origin that serves the lectures' subtitle files, slide decks and posters (every broken kind a
crawl meets among them).

It is a neighbour of the crawler, not a dependency: only the command line, tests and benchmarks use it.
Test scenarios built on it (hostile pages, planted cases) live with the tests.
"""

from __future__ import annotations

from crawler.replica.faults import FaultProfile, SiteFaults, named_profile
from crawler.replica.gold import documents_truth
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
from crawler.replica.subtitles import SPOKEN_EMAIL, SPOKEN_PHONE
from crawler.replica.tracks import transcripts_truth

__all__ = [
    "SPOKEN_EMAIL",
    "SPOKEN_PHONE",
    "FaultProfile",
    "ReplicaServer",
    "ReplicaSite",
    "RequestRecord",
    "SiteFaults",
    "build_catalogue",
    "build_site",
    "documents_truth",
    "ground_truth",
    "load_records",
    "main",
    "named_profile",
    "sessions_truth",
    "transcripts_truth",
    "write_ground_truth",
]
