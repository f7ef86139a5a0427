"""What was shown, crawled: the replica's slide decks and posters (real PDFs over HTTP on loopback, each
kind with its ground truth written apart from the reader) read into the ``slides`` table by
``eventcrawl run --slides``.

- the first night: one row per listed document, every page's text the truth's (the planted addresses and
  phone numbers redacted), each broken kind a row without text naming its problem, each PDF asked once,
  no planted address and no PDF in any file of the state or the export, ``load_dataset(OUT, "slides")``;
- the next night on the same site asks no document and leaves the table as it was;
- a PDF past the size bound, one on a host not allowed, one whose answer redirects off the allowed hosts,
  a reader that hangs past the job timeout, and a night's byte budget (what waits is staged, and asked
  the night after), each on a small site of its own.
"""

from __future__ import annotations

import http.server
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq
import pytest

from crawler.privacy.emails import PLACEHOLDER as EMAIL_PLACEHOLDER
from crawler.replica import documents_truth
from crawler.replica.assets import KIND_DOCUMENT
from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.replica.server import ReplicaServer
from crawler.state.stage_index import index_stage
from tests.support.commands import run_command
from tests.support.replica import QUICK_GIVE_UP, run_args, run_report
from tests.support.sites import with_edit

EVENTS = ("--event-id", "502", "--event-id", "469")
PHONE_PLACEHOLDER = "[phone removed]"
# A loopback address that is not the site's (the site is on 127.0.0.1): a host of its own.
OTHER_HOST = "127.0.0.2"


def night(server: ReplicaServer, work: Path, *extra: str) -> dict[str, Any]:
    """``eventcrawl run --slides`` of the replica into ``work``; its report (exit status under ``code``)."""
    result = run_command(
        run_args(server.base_url, work, "talks", *EVENTS, "--slides", *QUICK_GIVE_UP, *extra), timeout=300
    )
    assert result.returncode in (0, 3), result.stderr[-3000:]
    return {**run_report(work), "code": result.returncode}


def slides_rows(work: Path) -> dict[tuple[str, str], dict[str, Any]]:
    rows = pq.read_table(work / "out" / "data" / "slides").to_pylist()
    return {(r["lecture_id"], r["document"]): r for r in rows}


def document_requests(server: ReplicaServer, since: int = 0) -> Counter[str]:
    return Counter(r.path for r in server.requests[since:] if r.kind == KIND_DOCUMENT)


def redacted(pages: list[str], personal: dict[str, str] | None) -> list[str]:
    """The truth's pages as a release holds them: the planted address and number replaced."""
    if not personal:
        return pages
    return [
        p.replace(personal["email"], EMAIL_PLACEHOLDER).replace(personal["phone"], PHONE_PLACEHOLDER)
        for p in pages
    ]


def files_under(*roots: Path) -> Iterator[Path]:
    for root in roots:
        yield from (p for p in root.rglob("*") if p.is_file())


@dataclass
class Crawled:
    server: ReplicaServer
    site: ReplicaSite
    work: Path
    first: dict[str, Any]
    first_requests: Counter[str]
    second: dict[str, Any]
    second_requests: list[Any]
    first_rows: dict[tuple[str, str], dict[str, Any]]
    # A third night that fetches every page again (UNDERLINE_REFRESH off): each document revalidated.
    third_requests: list[Any]
    third_rows: dict[tuple[str, str], dict[str, Any]]

    @property
    def truth(self) -> list[dict[str, Any]]:
        return documents_truth(self.site, self.server.assets_url)


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawled]:
    # 52 documents: every kind the replica serves, two of them with planted personal data.
    site = build_site(load_records(), seed=0, lectures=80)
    work = tmp_path_factory.mktemp("slides") / "work"
    with ReplicaServer(site, documents=True) as server:
        first = night(server, work)
        first_requests = document_requests(server)
        first_rows = slides_rows(work)
        mark = len(server.requests)
        second = night(server, work)
        second_requests = server.requests[mark:]
        mark = len(server.requests)
        night(server, work, "-s", "UNDERLINE_REFRESH=False")
        yield Crawled(
            server,
            site,
            work,
            first,
            first_requests,
            second,
            second_requests,
            first_rows,
            server.requests[mark:],
            slides_rows(work),
        )


def test_every_listed_document_is_one_row_with_the_truth_s_pages(crawled: Crawled) -> None:
    truth = crawled.truth
    rows = crawled.first_rows
    assert crawled.first["code"] == 0
    assert set(rows) == {(t["lecture_id"], t["document"]) for t in truth}
    kinds = Counter(t["kind"] for t in truth)
    assert {"text", "scanned", "personal_data", "cut_short", "encrypted", "not_a_pdf", "not_found"} <= set(
        kinds
    )
    right = 0
    readable = [t for t in truth if t["pages"] is not None]
    for t in readable:
        row = rows[(t["lecture_id"], t["document"])]
        assert row["problem"] is None, (t["url"], row["problem"])
        assert row["url"] == t["url"], t["url"]
        expected = redacted(t["pages"], t["personal_data"])
        right += row["pages"] == expected
        assert row["page_count"] == len(expected), t["url"]
        assert row["text"] == "\n\n".join(row["pages"]), t["url"]
        assert row["bytes"] > 0 and len(row["sha256"]) == 64, t["url"]
    # Every page right (the bound is 99% of readable documents; the replica's are all read right).
    assert right == len(readable)
    # A scanned page has no text layer: "" and no OCR.
    scanned = [t for t in readable if t["kind"] == "scanned"]
    assert scanned and all("" in rows[(t["lecture_id"], t["document"])]["pages"] for t in scanned)
    # Each broken kind is a row without text naming why.
    for t in (t for t in truth if t["pages"] is None):
        row = rows[(t["lecture_id"], t["document"])]
        assert (row["pages"], row["text"], row["problem"]) == (None, None, t["problem"]), t["kind"]


def test_each_pdf_is_asked_once_and_none_is_kept_anywhere(crawled: Crawled) -> None:
    assert set(crawled.first_requests.values()) == {1}
    assert len(crawled.first_requests) == len(crawled.truth)
    planted = [v for t in crawled.truth if t["personal_data"] for v in t["personal_data"].values()]
    assert len(planted) >= 2
    found = []
    for path in files_under(crawled.work / "state", crawled.work / "out"):
        data = path.read_bytes()
        if b"%PDF-" in data:
            found.append(f"{path}: a PDF")
        found.extend(f"{path}: {p}" for p in planted if p.encode() in data)
    assert found == []


def test_the_slides_config_loads_and_the_card_counts_it(crawled: Crawled, tmp_path: Path) -> None:
    out = crawled.work / "out"
    loaded = datasets.load_dataset(str(out), "slides", split="train", cache_dir=str(tmp_path / "cache"))
    assert loaded.num_rows == len(crawled.first_rows)
    with_slides = sum(1 for r in crawled.first_rows.values() if r["document"] == "slides" and r["pages"])
    card = (out / "README.md").read_text(encoding="utf-8")
    assert re.search(rf"\| Lectures with slide text \| {with_slides} \|", card)
    # Its config among the card's configs, with its fields' table, as every other table's.
    assert re.search(rf"^\| `slides` \| .* \| {loaded.num_rows} \| `data/slides/\*\.parquet` \|$", card, re.M)
    assert "### Fields of `slides`" in card
    assert (out / "assets" / "slides-per-event.svg").is_file()


def test_the_next_night_asks_no_document_and_changes_no_row(crawled: Crawled) -> None:
    assert crawled.second["code"] in (0, 3)
    assert [r.path for r in crawled.second_requests if r.kind == KIND_DOCUMENT] == []
    lectures = len(crawled.site.lectures)
    assert len(crawled.second_requests) <= max(10, lectures // 20)
    assert slides_rows(crawled.work) == crawled.first_rows


# -- small sites: one case each --------------------------------------------------------------------------


def small_site(documents: int | None = None, **edits: dict[str, Any]) -> ReplicaSite:
    """A site of 24 lectures; only the first ``documents`` lectures naming a document keep theirs (a few
    documents keep the cases that cost a worker's job timeout each quick)."""
    site = build_site(load_records(), seed=11, lectures=24, side_event_every=4)
    named = sorted(
        (i for i, lec in site.lectures.items() if lec.slideshow_url or lec.poster_document_url), key=int
    )
    for lecture_id in named[documents:] if documents is not None else []:
        site = with_edit(site, lecture_id, slideshow_url=None, poster_document_url=None)
    for lecture_id, changes in edits.items():
        site = with_edit(site, lecture_id, **changes)
    return site


def with_deck(site: ReplicaSite) -> list[str]:
    """The site's lectures that list a slide deck, in id order."""
    return sorted((i for i, lec in site.lectures.items() if lec.slideshow_url), key=int)


def test_a_pdf_past_the_size_bound_is_cut_short_and_says_so(tmp_path: Path) -> None:
    site = small_site()
    with ReplicaServer(site, documents=True) as server:
        report = night(server, tmp_path, "-s", "UNDERLINE_SLIDES_MAX_BYTES=1000")
        truth = documents_truth(site, server.assets_url)
    rows = slides_rows(tmp_path)
    # Every PDF the replica serves is larger than 1,000 bytes (the one that is no PDF is a short page).
    served = [t for t in truth if t["kind"] not in ("not_found", "not_a_pdf")]
    assert served and all(rows[(t["lecture_id"], t["document"])]["problem"] == "too_large" for t in served)
    assert not any(r["pages"] for r in rows.values())
    assert report["crawl"]["stats"]["underline/slides/problem/too_large"] == len(served)


class CountingServer:
    """A plain HTTP server on ``host`` that counts what it is asked; ``/away.pdf`` redirects to ``target``."""

    def __init__(self, host: str, target: str = "") -> None:
        paths: list[str] = []
        self.paths = paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paths.append(self.path)
                if self.path == "/away.pdf":
                    self.send_response(302)
                    self.send_header("Location", target)
                else:
                    self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_deck_off_the_allowed_hosts_is_never_asked_nor_a_redirect_followed_there(tmp_path: Path) -> None:
    elsewhere = CountingServer(OTHER_HOST)
    # On the site's own host (another port): allowed, but it redirects to the host that is not.
    redirecting = CountingServer("127.0.0.1", target=f"{elsewhere.url}/deck.pdf")
    try:
        ids = with_deck(small_site())[:2]
        site = small_site(
            **{
                ids[0]: {"slideshow_url": f"{elsewhere.url}/deck.pdf"},
                ids[1]: {"slideshow_url": f"{redirecting.url}/away.pdf"},
            }
        )
        with ReplicaServer(site, documents=True) as server:
            night(server, tmp_path)
    finally:
        elsewhere.close()
        redirecting.close()
    rows = slides_rows(tmp_path)
    assert elsewhere.paths == []
    assert "/away.pdf" in redirecting.paths
    for lecture_id in ids:
        row = rows[(lecture_id, "slides")]
        assert (row["problem"], row["pages"]) == ("off_host", None), lecture_id


def stall_on_documents(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """WORKER_JOB_WRAPPER: a document's reading never returns (a PDF that makes a reader loop); every other
    job runs as usual."""
    if fn.__name__ == "read_document":
        time.sleep(3600)
    return fn(*args, **kwargs)


def test_a_reader_that_hangs_past_the_job_timeout_gives_a_row_that_says_so(tmp_path: Path) -> None:
    site = small_site(documents=1)
    with ReplicaServer(site, documents=True) as server:
        report = night(
            server, tmp_path,
            "-s", "WORKER_PROCESSES=1",
            "-s", "WORKER_JOB_TIMEOUT=1",
            "-s", f"WORKER_JOB_WRAPPER={__name__}.stall_on_documents",
        )  # fmt: skip
        truth = documents_truth(site, server.assets_url)
    rows = slides_rows(tmp_path)
    # Every file the reader is handed (an HTML page in place of a PDF never is).
    pdfs = [t for t in truth if t["kind"] not in ("not_found", "not_a_pdf")]
    assert pdfs
    for t in pdfs:
        row = rows[(t["lecture_id"], t["document"])]
        assert (row["problem"], row["pages"]) == ("timed_out", None), t["url"]
    # The lectures themselves were read in the same workers as usual.
    lectures = pq.read_table(tmp_path / "out" / "data" / "lectures", columns=["extraction"]).to_pylist()
    assert all(r["extraction"] != "api_listing" for r in lectures)
    assert report["crawl"]["stats"]["workers/timed_out"] == len(pdfs)


def test_what_the_byte_budget_leaves_is_staged_and_asked_the_next_night(tmp_path: Path) -> None:
    site = small_site(documents=6)
    with ReplicaServer(site, documents=True) as server:
        first = night(server, tmp_path, "-s", "UNDERLINE_SLIDES_BYTE_BUDGET=1", "-s", "CONCURRENT_REQUESTS=1")
        asked_first = document_requests(server)
        waiting = {k for k, r in slides_rows(tmp_path).items() if r["problem"] == "waiting"}
        staged = index_stage(tmp_path / "state")
        staged_waiting = {
            (s.record.lecture_id, s.record.document)
            for i in staged.lecture_ids()
            for s in staged.slides.rows_of(i)
            if s.record.problem == "waiting"
        }
        mark = len(server.requests)
        night(server, tmp_path)
        asked_second = document_requests(server, mark)
        truth = documents_truth(site, server.assets_url)
        assets = server.assets_url
    assert waiting and staged_waiting == waiting
    assert first["crawl"]["stats"]["underline/slides/waiting"] == len(waiting)
    assert len(asked_first) + len(waiting) == len(truth)
    # The night after, exactly the documents that waited are asked, and read.
    urls = {(t["lecture_id"], t["document"]): t["url"] for t in truth}
    assert set(asked_second) == {urls[k].split(assets, 1)[1] for k in waiting}
    rows = slides_rows(tmp_path)
    assert not any(r["problem"] == "waiting" for r in rows.values())
    assert all(rows[k]["problem"] in (None, "not_found", "unreadable", "encrypted") for k in waiting)


def test_a_lecture_fetched_again_revalidates_its_documents_and_a_304_keeps_each_row(crawled: Crawled) -> None:
    asked = [r for r in crawled.third_requests if r.kind == KIND_DOCUMENT]
    served = [t for t in crawled.truth if t["problem"] != "not_found"]
    assert len(asked) == len(crawled.truth)
    # Every file served with validators is asked with them, and answered 304.
    revalidated = [r for r in asked if r.if_none_match or r.if_modified_since]
    assert len(revalidated) == len(served)
    assert {r.status for r in revalidated} == {304}
    # The rows are night 1's, fetched_at included.
    assert crawled.third_rows == crawled.first_rows
