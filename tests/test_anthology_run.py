"""`eventcrawl run --anthology`: links made before the changelog and the gate judge the crawl."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crawler.anthology.reader import MAX_TEXT
from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.replica.server import ReplicaServer
from tests.support.commands import run_command
from tests.support.replica import run_args, run_report

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "anthology"


def run(server: ReplicaServer, work: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = run_args(server.base_url, work, "emnlp-test", *extra)
    return run_command(cmd, timeout=300)


report = run_report


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records(), seed=5, lectures=120)


def expected_links(site: ReplicaSite) -> dict[str, str]:
    """Lecture id -> Anthology id of the main event's lectures built from Anthology papers."""
    by_title = {str(r["title"]): str(r["anthology_id"]) for r in load_records() if r.get("anthology_id")}
    return {
        lec.id: by_title[lec.title]
        for lec in site.lectures.values()
        if lec.event_id == "502" and lec.title in by_title
    }


def test_run_links_and_a_changed_link_is_in_the_changelog(site: ReplicaSite, tmp_path: Path) -> None:
    wanted = expected_links(site)
    assert len(wanted) >= 10
    # The Anthology's files without the paper of one of the site's lectures.
    dropped_lecture, dropped_paper = min(wanted.items())
    fewer = tmp_path / "fewer"
    fewer.mkdir()
    text = (FIXTURES / "2025.emnlp.xml").read_text(encoding="utf-8")
    volume, number = dropped_paper.rsplit(".", 1)[0].rsplit("-", 1)[1], dropped_paper.rsplit(".", 1)[1]
    head = text.index(f'<volume id="{volume}"')
    body = re.sub(rf'\n    <paper id="{number}">.*?</paper>', "", text[head:], count=1, flags=re.DOTALL)
    (fewer / "2025.emnlp.xml").write_text(text[:head] + body, encoding="utf-8")
    # And a collection no lecture is from: an abstract past the reader's cap, an id not the Anthology's.
    extra = (
        '<collection id="2025.extra"><volume id="main">'
        f'<paper id="1"><title>Long</title><abstract>{"x" * (MAX_TEXT + 1)}</abstract></paper>'
        '<paper id="=2"><title>Formula</title></paper></volume></collection>'
    )
    (fewer / "2025.extra.xml").write_text(extra, encoding="utf-8")
    with ReplicaServer(site) as server:
        first = run(server, tmp_path, "--anthology", str(FIXTURES))
        assert first.returncode == 0, first.stderr[-3000:]
        linked = report(tmp_path)["anthology"]
        assert linked["linked"] == len(wanted) and linked["ambiguous"] == 0
        assert linked["by_event"]["502"]["linked"] == len(wanted)
        assert f"anthology: {len(wanted)} of" in first.stdout
        # The same site and the same files: nothing changed, nothing published.
        again = run(server, tmp_path, "--anthology", str(FIXTURES))
        assert again.returncode == 3, again.stderr[-3000:]
        relinked = run(server, tmp_path, "--anthology", str(fewer))
        assert relinked.returncode == 0, relinked.stderr[-3000:]
        left_out = {k: report(tmp_path)["anthology"][k] for k in ("capped", "invalid_ids", "read_notes")}
        assert left_out == {
            "capped": 1,
            "invalid_ids": 1,
            "read_notes": [
                f"{fewer / '2025.extra.xml'}: paper '1' of volume 'main': its abstract is longer than "
                f"{MAX_TEXT} characters, left out",
                f"{fewer / '2025.extra.xml'}: paper '=2' of volume 'main': not an Anthology id, left out",
            ],
        }
        assert report(tmp_path)["changes"] == {
            "added": [],
            "changed": {dropped_lecture: ["anthology_id", "anthology_url"]},
            "gone": [],
            "retired_events": {},
        }
        # Without the Anthology's files every lecture keeps the link it last had: nothing changes.
        bare = run(server, tmp_path)
        assert bare.returncode == 3, bare.stderr[-3000:]
        assert report(tmp_path)["changes"]["changed"] == {}
        kept = pq.read_table(tmp_path / "out" / "data" / "lectures").to_pylist()
        assert sum(1 for r in kept if r["anthology_id"]) == len(wanted) - 1
