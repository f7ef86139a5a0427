"""Removals on request as pure steps: names compared in one normal form, a redacted ORCID iD takes its
names with it, the ledger that keeps removals once applied, carrying the previous release forward and
the manifest's shape."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from huggingface_hub import HfApi

from crawler import schema
from crawler.app.next_release import StagedCrawl, next_release
from crawler.app.runner import PublishRequest, publish, publish_staged
from crawler.pages import profiles
from crawler.publish.events import GroupedEvents
from crawler.publish.hub import RetryPolicy, push_to_hub
from crawler.publish.manifest import manifest_problem, read_manifest
from crawler.publish.previous import carry_forward
from crawler.publish.release import publish_release
from crawler.publish.removals import (
    RemovalRequests,
    apply_removals,
    load_removals,
    name_digest,
    orcid_digest,
    record_removals,
)
from crawler.schema import Lecture
from crawler.state.fsutil import DamagedFile
from crawler.state.stage import StageWriter
from crawler.state.withdrawals import Withdrawals
from crawler.text.normalize import person_name
from tests.support.hub import StandIn, hub
from tests.test_publish_parquet import PROVENANCE, make_record

__all__ = ["hub"]  # the Hub stand-in fixture

ORCID = "0000-0002-1825-0097"


def author(name: str, orcid: str | None = None) -> dict[str, Any]:
    return {"name": name, "affiliations": [], "orcid": orcid}


def test_a_name_is_published_and_compared_without_invisible_characters() -> None:
    assert person_name("Ja\u200bne\u00a0 Doe\u200d ") == "Jane Doe"
    decomposed = unicodedata.normalize("NFD", "Zo\u00eb Ch\u00e2telet")
    assert person_name(decomposed) == "Zo\u00eb Ch\u00e2telet"
    assert person_name("\u2066Jane Doe\u2069\ufeff") == "Jane Doe"
    # The parser publishes names in that form.
    profile = {"type": "profiles", "id": "1", "attributes": {"full_name": "Ja\u200bne  Doe"}}
    assert profiles.author(profile, []) == {"name": "Jane Doe", "affiliations": [], "orcid": None}
    parts = {"type": "profiles", "id": "2", "attributes": {"first_name": "\u200b", "last_name": "Doe\u200b"}}
    assert profiles.author(parts, []) == {"name": "Doe", "affiliations": [], "orcid": None}


def test_a_redaction_matches_a_name_whatever_invisible_characters_it_holds() -> None:
    hidden = make_record(1, authors=[author("Ja\u200bne Doe"), author("Alan Turing")], text="By Jane Doe.")
    spaced = make_record(2, authors=[author(unicodedata.normalize("NFD", "Jane\u00a0DOE"))])
    kept = apply_removals([hidden, spaced], redact_authors=["jane doe"])
    assert [a["name"] for a in kept[0]["authors"]] == ["Alan Turing"]
    assert kept[0]["text"] == "By ."
    assert kept[1]["authors"] == []
    assert all(r["content_sha256"] == schema.content_sha256(r) for r in kept)


def test_a_redaction_by_orcid_takes_the_names_it_carries_wherever_they_appear() -> None:
    with_orcid = make_record(1, authors=[author("Ada Lovelace", ORCID), author("Alan Turing")])
    name_only = make_record(2, authors=[author("Ada  Lovelace"), author("Grace Hopper")], text="Ada Lovelace")
    unrelated = make_record(3, authors=[author("Grace Hopper")])
    kept = apply_removals([with_orcid, name_only, unrelated], redact_authors=[f"https://orcid.org/{ORCID}"])
    assert [[a["name"] for a in r["authors"]] for r in kept] == [
        ["Alan Turing"],
        ["Grace Hopper"],
        ["Grace Hopper"],
    ]
    assert kept[1]["text"] == ""
    assert kept[2] == unrelated


def test_an_orcid_redaction_reaches_name_only_rows_in_the_change_files_kept(tmp_path: Path) -> None:
    out, state = tmp_path / "release", tmp_path / "state"
    first = [make_record(1, authors=[author("Ada Lovelace")]), make_record(2)]
    publish_release(first, out, name="emnlp", provenance=PROVENANCE)
    # The next release as every command builds it: the runner redacts before publishing.
    ada = author("Ada Lovelace", ORCID)
    later = [make_record(1, authors=[author("Ada Lovelace")]), make_record(2, authors=[ada])]
    lectures = GroupedEvents(Lecture.from_json(r) for r in later)
    staged = StagedCrawl(lectures, {**PROVENANCE, "crawl_date": "2025-11-20"}, [], ("502", "469"), True)
    release = next_release(staged, out_dir=out, state_dir=state, removals=RemovalRequests((), (ORCID,)))
    assert all(r.authors == [] for r in release.records if r.lecture_id in ("130101", "130102"))
    publish(release, staged.provenance, out_dir=out, name="emnlp", state_dir=state)
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".parquet", ".md", ".json"):
            data = path.read_bytes()
            if path.suffix == ".parquet":
                data += json.dumps(pq.read_table(path).to_pylist(), default=str).encode()
            assert b"Ada Lovelace" not in data, path
            assert ORCID.encode() not in data, path
    assert load_removals(state) == RemovalRequests((), (ORCID,))


def test_the_ledger_keeps_every_removal_once_and_names_itself_when_damaged(tmp_path: Path) -> None:
    assert load_removals(tmp_path) == RemovalRequests()
    record_removals(tmp_path, RemovalRequests(("130101",), ("Jane Doe",)))
    record_removals(tmp_path, RemovalRequests(("130101", "130102"), ()))
    assert load_removals(tmp_path) == RemovalRequests(("130101", "130102"), ("Jane Doe",))
    (tmp_path / "removals.json").write_text('{"lectures": "130101"}', encoding="utf-8")
    with pytest.raises(DamagedFile, match=r"removals\.json is damaged \(`lectures` and `authors` must be"):
        load_removals(tmp_path)


def row(lecture_id: str, event: str, *, withdrawn: bool = False) -> Lecture:
    return Lecture(
        lecture_id=lecture_id,
        url="",
        event_id=event,
        withdrawn=withdrawn,
        content_sha256=lecture_id,
        extraction="",
    )


def test_carrying_the_previous_release_forward() -> None:
    previous = [
        row("1", "502"),
        row("2", "502"),
        row("3", "502", withdrawn=True),
        row("4", "469"),
        row("5", "9"),
    ]
    staged = [row("1", "502"), row("6", "502"), row("7", "9")]
    said = Withdrawals(gone={"502": ["2"]})
    done = carry_forward(previous, staged, crawled_events=["502", "9"], withdrawals=said, retire_events=["9"])
    assert {r.lecture_id: r.withdrawn for r in done.records} == {
        "1": False,
        "6": False,
        "2": True,  # the site said it is gone
        "3": True,  # withdrawn before, kept
        "4": False,  # its event was not crawled: kept as it was
    }
    assert (done.carried_events, done.retired_events, done.withdrawn) == ({"469": 1}, {"9": 2}, ["2"])
    # No longer listed, but the site was not asked (or did not say): an absence withdraws nothing.
    unasked = carry_forward(previous, staged, crawled_events=["502"], withdrawals=Withdrawals())
    assert {r.lecture_id: r.withdrawn for r in unasked.records}["2"] is False
    # The event kept back: nothing of it is withdrawn, whatever was said of its lectures.
    kept = Withdrawals(gone={"502": ["2"]}, kept_back={"502": "listing page 2 of 2 came back empty"})
    held = carry_forward(previous, staged, crawled_events=["502"], withdrawals=kept)
    assert {r.lecture_id: r.withdrawn for r in held.records}["2"] is False
    # An event whose own resource is gone: every lecture of it leaves.
    whole = carry_forward(previous, [], crawled_events=["469"], withdrawals=Withdrawals(events_gone=["469"]))
    assert [r.lecture_id for r in whole.records if r.withdrawn] == ["3", "4"]


GOOD = {
    "format": 1,
    "name": "emnlp",
    "version": "2025-11-20",
    "previous_version": "2025-11-12",
    "versions": ["2025-11-12", "2025-11-20"],
    "configs": {"lectures": {"rows": 1, "files": ["data/lectures/x.parquet"]}},
    "change_files": ["changes/2025-11-20.parquet"],
    "files": {"README.md": {"size": 1, "sha256": "0"}},
}


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"versions": []}, "`versions` does not hold the release's own version '2025-11-20'"),
        ({"versions": "2025-11-20"}, "`versions` is not a list of release versions"),
        ({"version": None}, "`version` is None, not a release version"),
        ({"configs": {}}, "`configs` does not list the `lectures` config"),
        ({"configs": {"lectures": {"files": "x"}}}, "`configs.lectures.files` is not a list of paths"),
        ({"change_files": None}, "`change_files` is not a list of paths"),
        ({"files": []}, "`files` is not a table of files with their size and sha256"),
        ({"format": 99}, "`format` is 99, not a format up to 1"),
    ],
)
def test_a_manifest_that_lost_its_shape_is_named(
    tmp_path: Path, changes: dict[str, Any], problem: str
) -> None:
    assert manifest_problem(GOOD) is None
    assert manifest_problem({**GOOD, **changes}) == problem
    (tmp_path / "manifest.json").write_text(json.dumps({**GOOD, **changes}), encoding="utf-8")
    with pytest.raises(DamagedFile) as raised:
        read_manifest(tmp_path)
    assert str(raised.value).startswith(f"{tmp_path / 'manifest.json'} is damaged ({problem}); restore")
    assert manifest_problem([GOOD]) == "not a JSON object but list"


# -- the release's ledger: removals outlive the state directory ----------------------------------------

REPO = "acl-archive/emnlp-removals"
TOKEN = "hf_StandInSecretToken0123456789abcdef"
GONE = ("Ada Lovelace", "Grace Hopper", ORCID)


def crawl_records() -> list[dict[str, Any]]:
    """A crawl that lists Ada Lovelace (with her ORCID iD, and once without it), Grace Hopper, and
    lecture 130103, each time."""
    return [
        make_record(0),
        make_record(1, authors=[author("Ada Lovelace", ORCID), author("Alan Turing")], text="Ada Lovelace."),
        make_record(2, authors=[author("Grace  Hopper")], text="Joint work of Grace Hopper and A. Turing."),
        make_record(3, authors=[author("Alan Turing")]),
        make_record(4, authors=[author("Ada Lovelace")], text="As (Ada LOVELACE) said."),
        make_record(5, text="Thanks to grace hopper, who is not an author here."),
    ]


def stage_crawl(state: Path, records: list[dict[str, Any]]) -> None:
    writer = StageWriter(state)
    writer.open()
    for record in records:
        writer.write_lecture(Lecture.from_json(record))
    writer.close(complete=True, summary={"event_ids": ["502", "469"]})


def publish_crawl(state: Path, out: Path, removals: RemovalRequests | None = None) -> None:
    stage_crawl(state, crawl_records())
    # Records made for the ledger (no authors, no pages): the gate would refuse them, forced past it.
    publish_staged(PublishRequest(state_dir=state, out_dir=out, name=REPO, removals=removals, force=True))


def published_text(root: Path) -> bytes:
    """Every byte of every file under ``root``, Parquet files' rows decoded too."""
    out = b""
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        out += path.read_bytes()
        if path.suffix == ".parquet":
            out += json.dumps(pq.read_table(path).to_pylist(), default=str).encode()
    return out


def restore_from_hub(endpoint: str, out: Path, home: Path) -> None:
    """What the recovery messages say: ``hf download --repo-type dataset <repo> --local-dir <out>``."""
    env = {
        **os.environ,
        "HF_ENDPOINT": endpoint,
        "HF_TOKEN": TOKEN,
        "HF_HOME": str(home),
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
    }
    hf = Path(sys.executable).with_name("hf")
    done = subprocess.run(
        [str(hf), "download", "--repo-type", "dataset", REPO, "--local-dir", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture
def pushed(hub: tuple[StandIn, str], tmp_path: Path) -> tuple[StandIn, str, Path]:
    """A release that removed lecture 130103 and redacted Ada Lovelace (by ORCID iD) and Grace Hopper,
    pushed to the stand-in Hub; then the state directory and the release folder are lost."""
    stand_in, endpoint = hub
    state, out = tmp_path / "state", tmp_path / "out"
    publish_crawl(state, out, RemovalRequests(("130103",), (ORCID, "grace hopper")))
    push_to_hub(out, REPO, token=TOKEN, api=HfApi(endpoint=endpoint), retry=RetryPolicy(sleep=lambda _: None))
    shutil.rmtree(state)
    shutil.rmtree(out)
    return stand_in, endpoint, tmp_path


def test_the_hub_commit_carries_the_ledger_and_never_who(pushed: tuple[StandIn, str, Path]) -> None:
    stand_in, _, _ = pushed
    (commit,) = stand_in.commits
    ledger = json.loads(commit["added"]["removals.json"])
    assert ledger == {
        "format": 1,
        "lectures": ["130103"],
        "redactions": sorted([orcid_digest(ORCID), name_digest("ada lovelace"), name_digest("grace hopper")]),
    }
    manifest = json.loads(commit["added"]["manifest.json"])
    entry = manifest["files"]["removals.json"]
    assert entry == {
        "size": len(commit["added"]["removals.json"]),
        "sha256": hashlib.sha256(commit["added"]["removals.json"]).hexdigest(),
    }
    for path, data in commit["added"].items():
        for who in GONE:
            assert who.encode() not in data, f"case {path}: {who}"


def test_a_state_lost_and_restored_from_the_hub_brings_nothing_back(
    pushed: tuple[StandIn, str, Path],
) -> None:
    _, endpoint, work = pushed
    state, out = work / "state", work / "out"
    restore_from_hub(endpoint, out, work / "hf-home")
    # A new crawl lists the removed lecture and the redacted authors again; nobody asks for removals.
    publish_crawl(state, out)
    rows = {r["lecture_id"]: r for r in pq.read_table(out / "data" / "lectures").to_pylist()}
    assert sorted(rows) == ["130100", "130101", "130102", "130104", "130105"]
    assert {i: [a["name"] for a in r["authors"]] for i, r in rows.items()} == {
        "130100": [],
        "130101": ["Alan Turing"],
        "130102": [],
        "130104": [],
        "130105": [],
    }
    assert [rows[i]["text"] for i in ("130101", "130102", "130104", "130105")] == [
        ".",
        "Joint work of and A. Turing.",
        "As () said.",
        "Thanks to, who is not an author here.",
    ]
    everything = published_text(out)
    for who in GONE:
        assert who.encode() not in everything, f"case {who}"
        assert who.casefold().encode() not in everything.lower(), f"case {who}"
    # The state keeps the release's removals again, as digests.
    assert load_removals(state) == RemovalRequests(
        ("130103",),
        tuple(sorted([orcid_digest(ORCID), name_digest("ada lovelace"), name_digest("grace hopper")])),
    )


def test_a_ledger_the_manifest_lists_but_nobody_holds_is_refused(pushed: tuple[StandIn, str, Path]) -> None:
    _, endpoint, work = pushed
    state, out = work / "state", work / "out"
    restore_from_hub(endpoint, out, work / "hf-home")
    (out / "removals.json").unlink()
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(DamagedFile) as refused:
        publish_crawl(state, out)
    assert str(refused.value) == (
        f"{out / 'removals.json'} is damaged (the release's manifest lists it but it is missing, and "
        f"{state / 'removals.json'} does not exist either: the removals the release applied are known "
        f"nowhere); restore the release from the Hub (hf download --repo-type dataset <repo> --local-dir "
        f"{out}), or {state / 'removals.json'} from a backup"
    )
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_a_ledger_that_differs_from_the_manifest_is_named(tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "out"
    publish_crawl(state, out, RemovalRequests(("130103",), ()))
    ledger = out / "removals.json"
    ledger.write_text(ledger.read_text(encoding="utf-8").replace('"130103"', '"130104"'), encoding="utf-8")
    with pytest.raises(DamagedFile, match=r"removals\.json is damaged \(its size or sha256 differs from"):
        publish_crawl(state, out)


def test_a_redaction_kept_as_a_digest_matches_what_its_name_or_orcid_matches() -> None:
    records = crawl_records()
    by_name = apply_removals(records, redact_authors=["Ada Lovelace", "Grace Hopper"])
    by_digest = apply_removals(
        records, redact_authors=[name_digest("ada lovelace"), name_digest("grace hopper")]
    )
    assert by_digest == by_name
    by_orcid = apply_removals(records, redact_authors=[ORCID])
    assert apply_removals(records, redact_authors=[orcid_digest(ORCID)]) == by_orcid
    assert [a["name"] for a in by_orcid[4]["authors"]] == []
    assert by_digest[2]["text"] == "Joint work of and A. Turing."
    assert by_digest[5]["text"] == "Thanks to, who is not an author here."
