"""Suite-wide test configuration: the order modules run in, and how many cases generated tests try.

Modules run heaviest first. pytest-xdist (``--dist loadfile``) hands whole modules to its workers in
collection order, a new one to whichever worker runs out first; with the modules that crawl the replica
for a minute or more at the end of that queue, one worker would still be crawling long after the other
ran out of work. Started first, the long modules overlap each other and the many quick modules fill
the gaps. The order changes nothing else: each module still runs whole, in one process.

``-n auto`` starts two workers more than the machine has cores: some modules mostly wait (politeness
delays, retries' backoff, a crawl's timeouts), and the two extra workers keep the cores busy meanwhile
(on 2 idle cores: 6 min 10 s with 3 workers, 5 min 43 s with 4, 5 min 55 s with 5, the cores then
busy 99% of the time).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

# A ``datasets`` cache of the suite's own, in each test process, removed when it exits (set before any
# module imports ``datasets``, which reads it then). ``datasets`` names the cache of a local folder by the
# folder's name and a config, so a test's ``load_dataset`` of a release named ``out`` could read what
# another run (or a user's session) cached of another ``out``; and the user's cache gets none of the
# suite's releases.
_DATASETS_CACHE = tempfile.mkdtemp(prefix="eventcrawl-tests-datasets-")
os.environ["HF_DATASETS_CACHE"] = _DATASETS_CACHE
atexit.register(shutil.rmtree, _DATASETS_CACHE, True)

# Test modules by the time they took (the CPU of their own process and of the crawl subprocesses they
# start, or the politeness tests' waits where those are longer), most first; a module not listed runs
# after these, in collection order. The list only orders: a module renamed or removed costs balance,
# never a test. test_new_attribute runs its copy's commands under a fork server of the copy's, which
# outlives its parent and so escapes the count of the module's CPU: it is placed by the time it takes.
HEAVIEST_FIRST = (
    "test_table_rules.py",
    "test_refresh.py",
    "test_anthology_end_to_end.py",
    "test_schedule_run.py",
    "test_end_to_end_planted.py",
    "test_new_attribute.py",
    "test_extension_workers.py",
    "test_end_to_end.py",
    "test_publish_transcripts.py",
    "test_remote_down.py",
    "test_privacy_emails.py",
    "test_polite_replica.py",
    "test_middleware_backoff.py",
    "test_frontier_redis.py",
    "test_publish_gate.py",
    "test_slides_crawl.py",
    "test_withdrawal_evidence.py",
    "test_hostile_properties.py",
    "test_refresh_faults.py",
    "test_httpcache.py",
    "test_page_budget_catalogue.py",
    "test_evidence_crawls.py",
    "test_cli_demo.py",
    "test_replica_layout.py",
    "test_publish_charts.py",
    "test_publish_release.py",
    "test_transcripts_end_to_end.py",
    "test_next_release.py",
    "test_privacy_scrub.py",
    "test_hostile_crawl.py",
    "test_replica_subtitles.py",
    "test_anthology_run.py",
    "test_spider_guards.py",
    "test_page_budget.py",
    "test_spider_events.py",
    "test_middleware_robots_delay.py",
    "test_replica_documents.py",
    "test_settings_defaults.py",
    "test_personal_data.py",
    "test_support_commands.py",
    "test_publish_removals.py",
    "test_publish_memory.py",
    "test_replica_catalogue.py",
    "test_stage_bad_lines.py",
    "test_catalogue.py",
    "test_sitecheck.py",
    "test_dedup_near.py",
    "test_code_shape.py",
    "test_publish_shards.py",
    "test_transcripts_merged.py",
    "test_replica_content.py",
    "test_hostile_secrets.py",
    "test_hostile_pages.py",
    "test_publish_changes.py",
    "test_page_budget_run.py",
    "test_publish_privacy.py",
    "test_architecture.py",
    "test_publish_hub.py",
    "test_publish_lint.py",
    "test_runner_flows.py",
    "test_publish_events.py",
    "test_text_visible_only.py",
    "test_replica_server.py",
    "test_transcript_properties.py",
    "test_publish_card.py",
    "test_privacy_phones.py",
    "test_text_normalize.py",
    "test_cli_usage.py",
    "test_slides_reader.py",
    "test_pipeline_dedup.py",
    "test_replica_planted.py",
    "test_publish_diff.py",
    "test_extension_progress.py",
    "test_text_template.py",
    "test_transcript_parse.py",
    "test_slides_rows.py",
)
_RANK = {name: rank for rank, name in enumerate(HEAVIEST_FIRST)}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A stable sort keeps each module's tests in their own order.
    items.sort(key=lambda item: _RANK.get(item.path.name, len(_RANK)))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return len(os.sched_getaffinity(0)) + 2


@pytest.fixture(scope="session", autouse=True)
def _fork_server() -> None:
    """The environment the suite's fork server starts with, kept before any test changes it; the server
    itself starts when a test first runs a command (a command in another environment runs in a fresh
    interpreter)."""
    from tests.support.commands import remember_environment

    remember_environment()
