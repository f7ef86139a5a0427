"""The crawl-cost yardstick (``bench/same_job_spider.py``) does the job it is set against: one JSON line
per lecture page, with the lecture's id and title from the page's JSON and the page's visible text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scrapy.http import HtmlResponse

from bench.procs import REPO
from bench.same_job_spider import SameJobSpider, lecture_of
from bench.suite import lecture_urls_file
from crawler.replica.layout import build_site, ground_truth, load_records
from crawler.replica.server import ReplicaServer
from tests.support.process import loopback_crawl_args


def test_same_job_spider_writes_a_line_per_lecture_page(tmp_path: Path) -> None:
    site = build_site(load_records(), seed=3, lectures=6)
    with ReplicaServer(site, assets=False) as server:
        truth = ground_truth(site, server.base_url)
        urls = lecture_urls_file(server.base_url, tmp_path, truth)
        out, state = tmp_path / "result.json", tmp_path / "state"
        cmd = [sys.executable, "-m", "bench.crawl_child", "--spider", "same-job", "--base", server.base_url]
        cmd += ["--state", str(state), "--out", str(out), "--urls", str(urls), *loopback_crawl_args()]
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    # The same CPU window as the crawler's spider is measured over: the suite's ratio needs both.
    assert result["steady_cpu_ms_per_page"] >= result["steady_user_cpu_ms_per_page"] >= 0
    lines = (state / "lectures.jsonl").read_text(encoding="utf-8").splitlines()
    rows = {row["url"]: row for row in map(json.loads, lines)}
    assert len(lines) == len(rows) == len(truth)
    for expected in truth:
        row = rows[expected["url"]]
        case = f"lecture {expected['lecture_id']}"
        assert (row["id"], row["title"]) == (expected["lecture_id"], expected["title"]), case
        assert expected["title"] in row["text"].splitlines(), case
        assert expected["abstract"].split()[0] in row["text"], case
        assert "__NEXT_DATA__" not in row["text"] and "pageProps" not in row["text"], case


def test_visible_text_leaves_out_scripts_styles_and_noscript(tmp_path: Path) -> None:
    next_data = {
        "query": {"lectureSlug": "42-a-talk"},
        "props": {
            "pageProps": {"fallback": {"/x": {"data": {"id": "42", "attributes": {"title": "A talk"}}}}}
        },
    }
    page = (
        "<html><head><title>Tab</title><style>h1 {color: red}</style></head><body>"
        "<h1> A talk </h1>\n<p>First <b>line</b></p><noscript>Enable JavaScript</noscript>"
        '<script>var x = 1;</script><script id="__NEXT_DATA__" type="application/json">'
        f"{json.dumps(next_data)}</script></body></html>"
    )
    urls = tmp_path / "urls.txt"
    urls.write_text("")
    response = HtmlResponse("http://127.0.0.1/lecture/42-a-talk", body=page.encode(), encoding="utf-8")
    (item,) = SameJobSpider(urls_file=str(urls)).parse_lecture(response)
    assert item == {"url": response.url, "id": "42", "title": "A talk", "text": "A talk\nFirst\nline"}


def test_a_page_without_the_lecture_document_gives_its_id_alone() -> None:
    assert lecture_of({"query": {"lectureSlug": "7-slug"}}) == ("7", None)
    assert lecture_of({}) == (None, None)
