"""push_to_hub against a stand-in for the Hub on 127.0.0.1, spoken to by huggingface_hub itself."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx2
import pytest
from huggingface_hub import HfApi

from crawler.publish.hub import (
    HubPushError,
    OwedPush,
    RetryPolicy,
    is_retryable,
    push_owed,
    push_to_hub,
    retry_after_seconds,
    scrub,
    scrubbed_logs,
)
from crawler.publish.release import publish_release
from tests.support.hub import StandIn, hub
from tests.test_publish_parquet import PROVENANCE, make_records

__all__ = ["hub"]  # the Hub stand-in fixture

TOKEN = "hf_StandInSecretToken0123456789abcdef"
REPO = "acl-archive/emnlp-2025"
RELEASE_FILES = [
    "README.md",
    "manifest.json",
    "anthology-links.csv",
    "assets/anthology-share.svg",
    "assets/field-coverage.svg",
    "assets/lectures-per-event.svg",
    "assets/release-history.svg",
    "changes/2025-11-12.parquet",
    "data/events/train-00000-of-00001.parquet",
    "data/lectures/event-469/train-00000-of-00001.parquet",
    "data/lectures/event-502/train-00000-of-00001.parquet",
    "data/sessions/train-00000-of-00001.parquet",
]


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hub") / "release"
    publish_release(make_records(), out, name=REPO, provenance=PROVENANCE)
    return out


class Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def logs() -> Iterator[Captured]:
    handler = Captured()
    loggers = [logging.getLogger(), logging.getLogger("huggingface_hub")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)


def no_sleep(sleeps: list[float]) -> RetryPolicy:
    return RetryPolicy(attempts=4, base_wait=0.01, max_wait=60.0, sleep=sleeps.append)


def test_one_commit_with_every_file(hub: tuple[StandIn, str], release: Path, logs: Captured) -> None:
    stand_in, endpoint = hub
    result = push_to_hub(release, REPO, token=TOKEN, api=HfApi(endpoint=endpoint), retry=no_sleep([]))
    assert len(stand_in.commits) == 1
    commit = stand_in.commits[0]
    assert commit["summary"] == "Release 2025-11-12"
    assert commit["revision"] == "main"
    assert sorted(commit["added"]) == sorted(RELEASE_FILES)
    assert all(commit["added"][p] == (release / p).read_bytes() for p in RELEASE_FILES)
    assert commit["deleted"] == []
    assert result.uploaded == tuple(RELEASE_FILES) and result.deleted == ()
    assert result.commit_url.endswith(result.commit_oid)
    assert {r["auth"] for r in stand_in.requests} == {f"Bearer {TOKEN}"}
    assert [(r["method"], r["path"]) for r in stand_in.requests if "commit" in r["path"]] == [
        ("POST", f"/api/datasets/{REPO}/commit/main")
    ]
    assert TOKEN not in "\n".join(logs.lines)


def test_retries_429_and_503_honouring_retry_after(
    hub: tuple[StandIn, str], release: Path, logs: Captured
) -> None:
    stand_in, endpoint = hub
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    stand_in.fault("POST", "/api/repos/create", drop=True)
    stand_in.fault(
        "POST", "/commit/", status=429, headers={"Retry-After": "7"}, body={"error": f"slow down {TOKEN}"}
    )
    stand_in.fault(
        "POST", "/commit/", status=503, headers={"Retry-After": when}, body={"error": "maintenance"}
    )
    sleeps: list[float] = []
    push_to_hub(release, REPO, token=TOKEN, api=HfApi(endpoint=endpoint), retry=no_sleep(sleeps))
    assert len(stand_in.commits) == 1
    commit_posts = [r for r in stand_in.requests if r["path"].endswith("/commit/main")]
    assert len(commit_posts) == 3
    assert len(sleeps) == 3
    assert 0 <= sleeps[0] <= 0.01  # the dropped connection: jittered backoff, no Retry-After
    assert sleeps[1] == 7.0
    assert 27.0 <= sleeps[2] <= 30.0
    text = "\n".join(logs.lines)
    assert "create_commit failed (attempt 1 of 4: HTTP 429" in text
    assert "retrying in 7.0s" in text
    assert TOKEN not in text


def test_gives_up_after_bounded_attempts_without_leaking_the_token(
    hub: tuple[StandIn, str], release: Path, logs: Captured
) -> None:
    stand_in, endpoint = hub
    for _ in range(4):
        stand_in.fault("POST", "/commit/", status=502, body={"error": f"upstream rejected Bearer {TOKEN}"})
    sleeps: list[float] = []
    with pytest.raises(HubPushError) as caught:
        push_to_hub(release, REPO, token=TOKEN, api=HfApi(endpoint=endpoint), retry=no_sleep(sleeps))
    assert len(sleeps) == 3
    assert stand_in.commits == []
    message = str(caught.value)
    assert "HTTP 502" in message and "upstream rejected" in message
    assert TOKEN not in message
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert TOKEN not in "\n".join(logs.lines)


def test_a_refusal_is_not_retried(hub: tuple[StandIn, str], release: Path, logs: Captured) -> None:
    stand_in, endpoint = hub
    stand_in.fault("POST", "/commit/", status=403, body={"error": f"token {TOKEN} may not write here"})
    sleeps: list[float] = []
    with pytest.raises(HubPushError, match="HTTP 403") as caught:
        push_to_hub(release, REPO, token=TOKEN, api=HfApi(endpoint=endpoint), retry=no_sleep(sleeps))
    assert sleeps == []
    assert TOKEN not in str(caught.value)
    assert TOKEN not in "\n".join(logs.lines)


def test_stale_data_files_are_deleted_in_the_same_commit_on_a_branch(
    hub: tuple[StandIn, str], release: Path
) -> None:
    stand_in, endpoint = hub
    stand_in.repos[REPO] = {
        "main": {
            "data/lectures/train-00000-of-00002.parquet": b"old",
            "data/lectures/train-00001-of-00002.parquet": b"old",
            "notes.txt": b"kept",
        }
    }
    result = push_to_hub(
        release,
        REPO,
        token=TOKEN,
        api=HfApi(endpoint=endpoint),
        revision="v2025-11-12",
        commit_message="Publish the November crawl",
        retry=no_sleep([]),
    )
    assert result.revision == "v2025-11-12"
    assert ("POST", f"/api/datasets/{REPO}/branch/v2025-11-12") in [
        (r["method"], r["path"]) for r in stand_in.requests
    ]
    (commit,) = stand_in.commits
    assert commit["revision"] == "v2025-11-12" and commit["summary"] == "Publish the November crawl"
    assert commit["deleted"] == [
        "data/lectures/train-00000-of-00002.parquet",
        "data/lectures/train-00001-of-00002.parquet",
    ]
    assert sorted(stand_in.repos[REPO]["v2025-11-12"]) == sorted([*RELEASE_FILES, "notes.txt"])
    assert len(stand_in.repos[REPO]["main"]) == 3


def test_token_from_the_environment_and_endpoint_argument(
    hub: tuple[StandIn, str], release: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in, endpoint = hub
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    push_to_hub(release, REPO, endpoint=endpoint, retry=no_sleep([]))
    assert len(stand_in.commits) == 1
    assert {r["auth"] for r in stand_in.requests} == {f"Bearer {TOKEN}"}


def test_no_token_anywhere(tmp_path: Path, release: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "none"))
    with pytest.raises(HubPushError, match="no Hugging Face token"):
        push_to_hub(release, REPO, endpoint="http://127.0.0.1:9", retry=no_sleep([]))


def test_a_damaged_release_is_not_pushed(hub: tuple[StandIn, str], tmp_path: Path) -> None:
    stand_in, endpoint = hub
    out = tmp_path / "release"
    publish_release(make_records(4), out, name=REPO, provenance=PROVENANCE)
    (out / "README.md").write_text("edited by hand\n", encoding="utf-8")
    with pytest.raises(HubPushError, match=r"README\.md: size or sha256 differs"):
        push_to_hub(out, REPO, token=TOKEN, api=HfApi(endpoint=endpoint), retry=no_sleep([]))
    assert stand_in.requests == []


def test_scrubbing() -> None:
    assert scrub(f"Authorization: Bearer {TOKEN} failed", [TOKEN]) == "Authorization: Bearer *** failed"
    assert scrub("saw hf_abcdefghijklmnop in a body", []) == "saw hf_*** in a body"
    assert scrub('{"authorization": "Bearer abc.def"}', []) == '{"authorization": "Bearer ***"}'
    handler = Captured()
    logger = logging.getLogger("eventcrawl.test.scrub")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        with scrubbed_logs([TOKEN]):
            logger.warning("using %s", TOKEN)
            try:
                raise ValueError(f"bad {TOKEN}")
            except ValueError:
                logger.exception("failed")
        logger.warning("after: %s", "plain")
    finally:
        logger.removeHandler(handler)
    assert handler.lines[0] == "using ***"
    assert handler.lines[1].startswith("failed\nTraceback") and "ValueError: bad ***" in handler.lines[1]
    assert handler.lines[2] == "after: plain"
    assert TOKEN not in "\n".join(handler.lines)


def test_the_environment_sets_a_push_s_tries_and_first_wait() -> None:
    assert RetryPolicy.from_environment({}) == RetryPolicy()
    blank = {"EVENTCRAWL_HUB_ATTEMPTS": "", "EVENTCRAWL_HUB_FIRST_WAIT": " "}
    assert RetryPolicy.from_environment(blank) == RetryPolicy()
    set_both = {"EVENTCRAWL_HUB_ATTEMPTS": "2", "EVENTCRAWL_HUB_FIRST_WAIT": "0.25"}
    assert RetryPolicy.from_environment(set_both) == RetryPolicy(attempts=2, base_wait=0.25)
    for name, value in [
        ("EVENTCRAWL_HUB_ATTEMPTS", "0"),
        ("EVENTCRAWL_HUB_ATTEMPTS", "two"),
        ("EVENTCRAWL_HUB_ATTEMPTS", "-1"),
        ("EVENTCRAWL_HUB_FIRST_WAIT", "-0.5"),
        ("EVENTCRAWL_HUB_FIRST_WAIT", "nan"),
        ("EVENTCRAWL_HUB_FIRST_WAIT", "soon"),
    ]:
        with pytest.raises(HubPushError, match=f"^{name} must be .*, not {value!r}$"):
            RetryPolicy.from_environment({name: value})


def test_retry_after_parsing() -> None:
    now = datetime(2025, 11, 12, 8, 0, 0, tzinfo=UTC)
    assert retry_after_seconds({"retry-after": "12"}, now) == 12.0
    assert retry_after_seconds({"retry-after": "Wed, 12 Nov 2025 08:00:45 GMT"}, now) == 45.0
    assert retry_after_seconds({"retry-after": "Wed, 12 Nov 2025 07:00:00 GMT"}, now) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}, now) is None
    assert retry_after_seconds({}, now) is None


def test_a_push_is_owed_until_made_and_made_once(
    hub: tuple[StandIn, str], release: Path, tmp_path: Path
) -> None:
    stand_in, endpoint = hub
    state = tmp_path / "state"
    record = state / "hub-push.json"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    unreachable = HfApi(endpoint=closed)
    down = push_owed(release, REPO, state_dir=state, token=TOKEN, api=unreachable, retry=no_sleep([]))
    assert down == OwedPush(
        where=f"{REPO}@main",
        local_version="2025-11-12",
        hub_version=None,
        error=f"pushing {release} to {REPO} failed: ConnectError: [Errno 111] Connection refused",
    )
    assert not record.exists()
    api = HfApi(endpoint=endpoint)
    made = push_owed(release, REPO, state_dir=state, token=TOKEN, api=api, retry=no_sleep([]))
    assert made.error is None and made.result is not None and made.hub_version == "2025-11-12"
    assert json.loads(record.read_text(encoding="utf-8")) == {f"{REPO}@main": "2025-11-12"}
    asked = len(stand_in.requests)
    again = push_owed(release, REPO, state_dir=state, token=TOKEN, api=api, retry=no_sleep([]))
    assert again == OwedPush(f"{REPO}@main", "2025-11-12", "2025-11-12")
    assert len(stand_in.requests) == asked and len(stand_in.commits) == 1
    # Another branch is owed the release of its own.
    branch = push_owed(release, REPO, state_dir=state, revision="v2", token=TOKEN, api=api)
    assert branch.result is not None and branch.result.revision == "v2"
    assert json.loads(record.read_text(encoding="utf-8")) == {
        f"{REPO}@main": "2025-11-12",
        f"{REPO}@v2": "2025-11-12",
    }


def test_a_failure_is_told_on_one_line(hub: tuple[StandIn, str], release: Path) -> None:
    stand_in, endpoint = hub
    stand_in.fault("POST", "/commit/", status=403, body={"error": "you may not write here:\nask the owner"})
    with pytest.raises(HubPushError) as caught:
        push_to_hub(release, REPO, token=TOKEN, api=HfApi(endpoint=endpoint), retry=no_sleep([]))
    assert "HTTP 403" in str(caught.value) and "ask the owner" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_what_is_retried() -> None:
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError

    def http_error(status: int) -> HfHubHTTPError:
        request = httpx2.Request("POST", "http://127.0.0.1/x")
        return HfHubHTTPError("failed", response=httpx2.Response(status, request=request))

    assert [is_retryable(http_error(s)) for s in (429, 500, 503, 400, 401, 404, 409)] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    assert is_retryable(httpx2.RemoteProtocolError("Server disconnected")) is True
    assert is_retryable(ConnectionResetError()) is True
    assert is_retryable(ValueError("bad yaml")) is False


def test_parquet_goes_through_lfs_and_text_inline(hub: tuple[StandIn, str], release: Path) -> None:
    stand_in, endpoint = hub
    push_to_hub(release, REPO, token=TOKEN, api=HfApi(endpoint=endpoint), retry=no_sleep([]))
    parquet_files = sorted(p for p in RELEASE_FILES if p.endswith(".parquet"))
    (commit,) = stand_in.commits
    assert sorted(commit["lfs"]) == parquet_files
    # The charts are small text files: inline too.
    charts = sorted(p for p in RELEASE_FILES if p.endswith(".svg"))
    assert sorted(commit["inline"]) == ["README.md", "anthology-links.csv", *charts, "manifest.json"]
    oids = {p: hashlib.sha256((release / p).read_bytes()).hexdigest() for p in parquet_files}
    assert {oid: stand_in.lfs_objects[oid] for oid in oids.values()} == {
        oids[p]: (release / p).read_bytes() for p in parquet_files
    }
    calls = [(r["method"], r["path"]) for r in stand_in.requests]
    assert ("POST", f"/datasets/{REPO}.git/info/lfs/objects/batch") in calls
    assert sorted(path for method, path in calls if path.startswith("/api/lfs-verify/")) == sorted(
        f"/api/lfs-verify/{oid}" for oid in oids.values()
    )
    assert sorted((s["method"], s["path"]) for s in stand_in.storage) == sorted(
        ("PUT", f"/storage/{oid}") for oid in oids.values()
    )
    # The storage URL is presigned: the token goes to the Hub only.
    assert {s["auth"] for s in stand_in.storage} == {None}
    assert stand_in.repos[REPO]["main"] == {p: (release / p).read_bytes() for p in RELEASE_FILES}


def test_the_tag_keeps_the_release_s_files(hub: tuple[StandIn, str], release: Path, tmp_path: Path) -> None:
    _, endpoint = hub
    api = HfApi(endpoint=endpoint)
    first = push_to_hub(release, REPO, token=TOKEN, api=api, retry=no_sleep([]))
    assert first.tag == "2025-11-12"
    later = tmp_path / "later"
    shutil.copytree(release, later)
    publish_release(make_records(5), later, name=REPO, provenance={**PROVENANCE, "crawl_date": "2025-11-20"})
    second = push_to_hub(later, REPO, token=TOKEN, api=api, retry=no_sleep([]))
    assert second.tag == "2025-11-20" and second.commit_oid != first.commit_oid
    refs = api.list_repo_refs(REPO, repo_type="dataset", token=TOKEN)
    assert {t.name: t.target_commit for t in refs.tags} == {
        "2025-11-12": first.commit_oid,
        "2025-11-20": second.commit_oid,
    }
    at_tag = api.list_repo_files(REPO, repo_type="dataset", revision="2025-11-12", token=TOKEN)
    assert sorted(at_tag) == sorted(RELEASE_FILES)
    for path in RELEASE_FILES:
        answer = httpx2.get(
            f"{endpoint}/datasets/{REPO}/resolve/2025-11-12/{path}",
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert answer.status_code == 200 and answer.content == (release / path).read_bytes(), f"{path=}"
    main = api.list_repo_files(REPO, repo_type="dataset", token=TOKEN)
    assert "changes/2025-11-20.parquet" in main and "changes/2025-11-20.parquet" not in at_tag


def test_a_repeated_push_keeps_the_tag_and_a_foreign_tag_is_refused(
    hub: tuple[StandIn, str], release: Path
) -> None:
    stand_in, endpoint = hub
    api = HfApi(endpoint=endpoint)
    first = push_to_hub(release, REPO, token=TOKEN, api=api, retry=no_sleep([]))
    again = push_to_hub(release, REPO, token=TOKEN, api=api, retry=no_sleep([]))
    assert again.commit_oid == first.commit_oid and again.tag == "2025-11-12"
    stand_in.tags[REPO]["2025-11-12"] = "f" * 40
    with pytest.raises(HubPushError, match=r"tag '2025-11-12' already names commit f{40}"):
        push_to_hub(release, REPO, token=TOKEN, api=api, retry=no_sleep([]))
    untagged = push_to_hub(release, REPO, token=TOKEN, api=api, retry=no_sleep([]), tag=False)
    assert untagged.tag is None
