"""One crawl of the hostile replica over HTTP: every broken page at once, every other lecture intact.

The replica (``--hostile``) serves one broken variant of the page for each of 21 lectures and a lecture
list that lies about ``meta.total_pages`` and never runs out. The crawl must finish, give up on what
cannot be fetched with a clear, counted error, read everything else right, store no e-mail address,
and leave every other lecture exactly as the replica's ground truth says.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from crawler import settings as project_settings
from crawler.privacy.emails import PLACEHOLDER, contains_email
from crawler.replica.layout import build_site, load_records, page_links
from crawler.schema import content_sha256
from crawler.text.normalize import nfc_collapsed, normalize_line
from tests.scenarios import hostile
from tests.support.replica import crawl_args, eventcrawl, fast_crawl_settings, running_replica
from tests.support.staged import read_stage

LECTURES = 90
PAGE_SIZE = 16
PRIVACY = "crawler.pipelines.privacy.PrivacyPipeline"
# The project's pipelines with the privacy step between normalize (100) and boilerplate (200).
PIPELINES = {**project_settings.ITEM_PIPELINES, PRIVACY: 150}
E2E_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")


def crawl_settings(*extra: str) -> list[str]:
    return [
        *fast_crawl_settings(),
        "-s", f"UNDERLINE_PAGE_SIZE={PAGE_SIZE}",
        "-s", f"ITEM_PIPELINES={json.dumps(PIPELINES)}",
        *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("hostile")
    plan_path = work / "plan.json"
    replica_args = ["--lectures", str(LECTURES), "--hostile", "--hostile-plan", str(plan_path)]
    with running_replica(work / "replica", *replica_args) as replica:
        base = replica.base_url
        result = eventcrawl(
            "crawl", "--event-id", "502", "--web-base", base, "--api-base", base,
            "--state", str(work / "state"), *crawl_settings(),
        )  # fmt: skip
        truth = replica.ground_truth()
        requests = replica.requests()
    assert result.returncode == 0, result.stderr[-5000:]
    # A hostile site's crawl fails pages and falls back on purpose: the quality gate refuses it, and the
    # tests read what it would publish.
    out = str(work / "out")
    publish = eventcrawl("publish", "--state", str(work / "state"), "--out", out, "--name", "h", "--force")
    assert publish.returncode == 0, publish.stderr[-5000:]
    site = build_site(load_records(), seed=0, lectures=LECTURES)
    staged = read_stage(work / "state")
    return {
        "base": base,
        "site": site,
        "plan": json.loads(plan_path.read_text(encoding="utf-8")),
        "truth": {t["lecture_id"]: t for t in truth},
        "records": {r.lecture_id: r.to_json() for r in staged.records},
        "staged": staged,
        "stats": json.loads((work / "state" / "crawl-report.json").read_text(encoding="utf-8"))["stats"],
        "stderr": result.stderr,
        "requests": requests,
        "rows": pq.read_table(work / "out" / "data" / "lectures").to_pylist(),
    }


def variant_ids(crawl: dict[str, Any], *variants: str) -> list[str]:
    return sorted(i for i, v in crawl["plan"].items() if v in variants)


def expected_source_urls(crawl: dict[str, Any], lecture_id: str) -> list[str]:
    """The truth's URLs less the links only pages that could not be read carried."""
    site, base, plan = crawl["site"], crawl["base"], crawl["plan"]
    urls = {crawl["truth"][lecture_id]["url"]}
    for lecture in site.event_lectures("502"):
        if plan.get(lecture.id) in hostile.LINKLESS:
            continue
        urls |= {base + link.href for link in page_links(lecture) if link.lecture_id == lecture_id}
    return sorted(urls)


def expected(crawl: dict[str, Any], lecture_id: str, **changes: Any) -> dict[str, Any]:
    record = {**crawl["truth"][lecture_id], "source_urls": expected_source_urls(crawl, lecture_id)}
    record.update(changes)
    record["content_sha256"] = content_sha256(record)
    return record


def edited_text(
    truth: dict[str, Any],
    *,
    around_abstract: tuple[str, str] = ("", ""),
    after_title: str = "",
    keyword: str | None = None,
) -> str:
    """The truth's ``text`` with plain text added to its abstract, title and keywords paragraphs
    (abstract, event, title, keywords, type), however the pipeline cleans the rest."""
    paragraphs = truth["text"].split("\n\n")
    title_at = 2 if normalize_line(truth["abstract"]) else 1
    if title_at == 2:
        paragraphs[0] = around_abstract[0] + paragraphs[0] + around_abstract[1]
    paragraphs[title_at] += after_title
    if keyword is not None:
        paragraphs.insert(len(paragraphs) - 1, keyword)
    return "\n\n".join(paragraphs)


def got(crawl: dict[str, Any], lecture_id: str) -> dict[str, Any]:
    record = dict(crawl["records"][lecture_id])
    del record["fetched_at"]
    return record


def test_the_plan_is_the_one_the_test_computes(crawl: dict[str, Any]) -> None:
    assert crawl["plan"] == hostile.plan(crawl["site"])
    assert sorted(crawl["plan"].values()) == sorted(hostile.VARIANTS)


def test_every_normal_lecture_is_exactly_the_ground_truth(crawl: dict[str, Any]) -> None:
    normal = sorted(set(crawl["truth"]) - set(crawl["plan"]))
    assert len(normal) == len(crawl["truth"]) - len(hostile.VARIANTS) == 68
    mismatches = [i for i in normal if got(crawl, i) != expected(crawl, i)]
    assert mismatches == []


@pytest.mark.parametrize(
    "variant", [*hostile.CHARSET, "wrong_types", "malformed", "huge_page", "foreign_links"]
)
def test_broken_but_complete_pages_read_exactly_right(crawl: dict[str, Any], variant: str) -> None:
    (lecture_id,) = variant_ids(crawl, variant)
    assert got(crawl, lecture_id) == expected(crawl, lecture_id)


def test_invisible_characters_and_lone_surrogates_are_dropped(crawl: dict[str, Any]) -> None:
    (lecture_id,) = variant_ids(crawl, "invisible_chars")
    assert got(crawl, lecture_id) == expected(crawl, lecture_id)


def test_email_addresses_are_scrubbed_from_every_field(crawl: dict[str, Any]) -> None:
    (lecture_id,) = variant_ids(crawl, "emails")
    truth = crawl["truth"][lecture_id]
    record = got(crawl, lecture_id)
    around = (f"Correspondence: {PLACEHOLDER}. ", f" Questions to {PLACEHOLDER} or {PLACEHOLDER}.")
    assert record == expected(
        crawl,
        lecture_id,
        title=truth["title"] + f" (contact: {PLACEHOLDER})",
        abstract=around[0] + truth["abstract"] + around[1],
        keywords=[*truth["keywords"], PLACEHOLDER],
        session_name=truth["session_name"] + f" (chair: {PLACEHOLDER})",
        text=edited_text(
            truth, around_abstract=around, after_title=f" (contact: {PLACEHOLDER})", keyword=PLACEHOLDER
        ),
    )
    stats = crawl["stats"]
    assert stats["privacy/emails_scrubbed"] == 6
    assert stats["privacy/items_scrubbed"] == 1
    assert (stats["privacy/fields/title"], stats["privacy/fields/abstract"]) == (1, 3)
    assert (stats["privacy/fields/keywords"], stats["privacy/fields/session_name"]) == (1, 1)


def test_a_one_megabyte_title_is_kept_whole(crawl: dict[str, Any]) -> None:
    (lecture_id,) = variant_ids(crawl, "huge_title")
    lecture = crawl["site"].lectures[lecture_id]
    huge = hostile.huge_title(lecture.title)
    title = nfc_collapsed(huge)
    assert len(title) > 1_000_000
    added = " " + normalize_line(huge[len(lecture.title) :])
    text = edited_text(crawl["truth"][lecture_id], after_title=added)
    assert got(crawl, lecture_id) == expected(crawl, lecture_id, title=title, text=text)


@pytest.mark.parametrize("variant", hostile.FALLBACK)
def test_pages_without_usable_json_fall_back_to_the_visible_page(crawl: dict[str, Any], variant: str) -> None:
    (lecture_id,) = variant_ids(crawl, variant)
    truth = crawl["truth"][lecture_id]
    record = got(crawl, lecture_id)
    # Without the page's JSON the API listing's fields lead; the page shows no related lectures' ids.
    # An empty page shows nothing of its lecture: its text is rebuilt from the API's fields, and says so.
    extraction = "visible_text+text_from_fields" if variant == "empty" else "visible_text"
    want = expected(crawl, lecture_id, extraction=extraction, related_lecture_ids=[])
    # Which of a visible page's blocks are the lecture's is the boilerplate step's judgement; whatever
    # it keeps must be the lecture's own text, abstract and title first among it.
    paragraphs = record.pop("text").split("\n\n")
    assert set(paragraphs) <= set(want.pop("text").split("\n\n"))
    assert paragraphs[0] == normalize_line(truth["abstract"])
    assert normalize_line(truth["title"]) in paragraphs
    del record["content_sha256"], want["content_sha256"]
    assert record == want


def test_pages_that_cannot_be_fetched_are_counted_and_kept_from_the_listing(crawl: dict[str, Any]) -> None:
    failing = variant_ids(crawl, *hostile.FAILING)
    # Still listed, so not withdrawn: a first crawl has no earlier record, so the listing's fields stand
    # in. A redirect loop is dropped by the scheduler itself and only counted.
    (looping,) = variant_ids(crawl, "redirect_loop")
    kept = sorted(set(failing) - {looping})
    assert set(crawl["records"]) == set(crawl["truth"]) - {looping}
    for lecture_id in kept:
        record, truth = crawl["records"][lecture_id], crawl["truth"][lecture_id]
        assert record["extraction"] == "api_listing+text_from_fields", f"{lecture_id=}"
        assert (record["title"], record["abstract"], record["authors"]) == (
            truth["title"],
            truth["abstract"],
            truth["authors"],
        ), f"{lecture_id=}"
    stats = crawl["stats"]
    assert stats["underline/fetch_failed"] == len(hostile.FAILING)
    assert stats["underline/page_failed_kept"] == len(kept)
    stderr = crawl["stderr"]
    site = crawl["site"]
    for variant, message in [
        ("oversize", "larger than download max size"),
        ("gzip_bomb", "exceeded DOWNLOAD_MAXSIZE"),
        ("redirect_loop", "redirected to a URL already requested"),
        ("endless_redirect", "max redirections reached"),
    ]:
        (lecture_id,) = variant_ids(crawl, variant)
        lines = [
            line for line in stderr.splitlines() if f"/lecture/{lecture_id}-" in line and message in line
        ]
        assert lines, (variant, message, site.lectures[lecture_id].path)


def test_the_gzip_bomb_is_never_inflated(crawl: dict[str, Any]) -> None:
    stats = crawl["stats"]
    # The bomb inflates to 1 GiB; the crawl stops reading it at DOWNLOAD_MAXSIZE (16 MiB).
    assert stats["memusage/max"] - stats["memusage/startup"] < 300 * 1024 * 1024
    (lecture_id,) = variant_ids(crawl, "gzip_bomb")
    fetched = [r for r in crawl["requests"] if r["path"].startswith(f"/lecture/{lecture_id}-")]
    assert [r["status"] for r in fetched] == [200]


def test_redirects_stop(crawl: dict[str, Any]) -> None:
    def hops(variant: str) -> list[int]:
        (lecture_id,) = variant_ids(crawl, variant)
        return [r["status"] for r in crawl["requests"] if r["path"].startswith(f"/lecture/{lecture_id}-")]

    # A loop ends where it comes back to a URL already requested; an endless chain after the first
    # request and REDIRECT_MAX_TIMES (5) redirects.
    assert hops("redirect_loop") == [302, 302]
    assert hops("endless_redirect") == [302] * 6
    assert crawl["stats"]["underline/redirect_loop"] == 1


def test_a_lying_lecture_list_is_read_to_its_real_end(crawl: dict[str, Any]) -> None:
    listing = [r["path"] for r in crawl["requests"] if r["path"].startswith("/api/v1/thin_lectures?")]
    # 89 lectures in pages of 16: six real pages, then one that repeats the sixth and brings nothing new.
    assert [int(re.search(r"page%5Bnumber%5D=(\d+)", p)[1]) for p in listing] == [1, 2, 3, 4, 5, 6, 7]  # type: ignore[index]
    stats = crawl["stats"]
    assert stats["underline/listed"] == len(crawl["truth"]) == 89
    assert stats["underline/listing_repeated"] == 9
    assert stats["underline/listing_problems"] == 6


def test_links_to_other_hosts_and_schemes_never_become_source_urls(crawl: dict[str, Any]) -> None:
    urls = [u for r in crawl["records"].values() for u in r["source_urls"]]
    assert all(u.startswith(crawl["base"] + "/") for u in urls)
    assert crawl["stats"]["underline/foreign_links"] == 3 * 3
    assert not any("evil.example" in r["path"] or "javascript" in r["path"] for r in crawl["requests"])


def test_nothing_crashed(crawl: dict[str, Any]) -> None:
    stats = crawl["stats"]
    assert "Traceback" not in crawl["stderr"]
    assert not [k for k in stats if k.startswith("spider_exceptions/")]
    assert stats.get("log_count/ERROR", 0) == 0
    assert stats.get("stage/invalid", 0) == 0
    assert stats.get("underline/page_unparsable", 0) == 0
    assert crawl["staged"].bad_lines == 0
    assert crawl["staged"].complete


def test_no_email_address_anywhere_in_the_published_dataset(crawl: dict[str, Any]) -> None:
    assert len(crawl["rows"]) == len(crawl["records"])
    for row in crawl["rows"]:
        for name, value in row.items():
            values = value if isinstance(value, list) else [value]
            strings = [v for v in values if isinstance(v, str)]
            assert not any(E2E_EMAIL.search(v) or contains_email(v) for v in strings), (
                row["lecture_id"],
                name,
            )


def test_request_and_memory_limits_stop_cleanly_and_the_crawl_resumes(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with running_replica(tmp_path / "replica", "--lectures", "40") as replica:
        base = replica.base_url

        def run(*extra: str) -> tuple[int, dict[str, Any]]:
            result = eventcrawl(*crawl_args(base, state, *crawl_settings(*extra)))
            assert "Traceback" not in result.stderr, result.stderr[-3000:]
            report = json.loads((state / "crawl-report.json").read_text(encoding="utf-8"))
            return result.returncode, report

        code, report = run("-s", "CLOSESPIDER_PAGECOUNT=10")
        assert (code, report["finish_reason"]) == (5, "closespider_pagecount")
        first = read_stage(state)
        assert not first.complete and first.bad_lines == 0
        assert 0 < len(first.records) < 40

        code, report = run("-s", "MEMUSAGE_LIMIT_MB=1", "-s", "MEMUSAGE_CHECK_INTERVAL_SECONDS=0.5")
        assert (code, report["finish_reason"]) == (5, "memusage_exceeded")
        assert report["stats"]["memusage/limit_reached"] == 1
        second = read_stage(state)
        assert not second.complete and second.bad_lines == 0
        assert {r.lecture_id for r in first.records} <= {r.lecture_id for r in second.records}

        code, report = run()
        truth = {t["lecture_id"]: t for t in replica.ground_truth()}
    assert (code, report["finish_reason"]) == (0, "finished")
    assert report["stats"]["underline/resume_skipped"] >= len(second.records)
    final = read_stage(state)
    assert final.complete and final.bad_lines == 0
    records = {r.lecture_id: r.to_json() for r in final.records}
    assert sorted(records) == sorted(truth)
    for lecture_id, record in records.items():
        del record["fetched_at"]
        assert record == truth[lecture_id], f"{lecture_id=}, {record=}"


def test_a_page_that_trickles_out_is_cut_at_the_download_timeout(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    limits = ["-s", "DOWNLOAD_TIMEOUT=2", "-s", "BACKOFF_MAX_RETRIES=0", "-s", "BACKOFF_MIN_DELAY=0.01"]
    replica_args = ["--lectures", "20", "--hostile-only", "slow_drip", "--hostile-plan", str(plan)]
    with running_replica(tmp_path / "replica", *replica_args) as replica:
        base = replica.base_url
        started = time.monotonic()
        result = eventcrawl(
            "crawl", "--web-base", base, "--api-base", base, "--state", str(tmp_path / "state"),
            *crawl_settings(*limits),
        )  # fmt: skip
        elapsed = time.monotonic() - started
        truth = {t["lecture_id"]: t for t in replica.ground_truth()}
    (slow,) = json.loads(plan.read_text(encoding="utf-8"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert elapsed < 30
    assert [
        line
        for line in result.stderr.splitlines()
        if f"/lecture/{slow}-" in line and "took longer than 2" in line
    ]
    report = json.loads((tmp_path / "state" / "crawl-report.json").read_text(encoding="utf-8"))
    assert report["stats"]["underline/fetch_failed"] == 1
    staged = read_stage(tmp_path / "state")
    assert sorted(r.lecture_id for r in staged.records) == sorted(truth)
    (kept,) = [r for r in staged.records if r.lecture_id == slow]
    assert kept.extraction == "api_listing+text_from_fields"
