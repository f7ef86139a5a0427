"""Every command that talks to a remote, run as a user runs it with that remote down: the site on a
loopback port nothing listens on, the Hub likewise, and a disk that is full. Each ends with one line
saying what failed, never a traceback, and the exit status docs/commands.md documents for it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.replica.server import ReplicaServer
from tests.support.commands import eventcrawl, run_command
from tests.support.hub import StandIn, hub
from tests.support.replica import QUICK_GIVE_UP, crawl_args, fast_crawl_settings, run_args, run_report

__all__ = ["hub"]  # the Hub stand-in fixture

HUB_TOKEN = "hf_StandInSecretToken0123456789abcdef"
REPO = "acl-archive/emnlp"
# A crawl of a site that does not answer gives up after one retry, at loopback speed.
GIVE_UP_FAST = [*fast_crawl_settings(), *QUICK_GIVE_UP, "-s", "PROGRESS_ENABLED=False"]
# check-site, record and events wait no politeness delay and at most a few seconds for an answer.
SITE_TOOL_PACE = ["--delay", "0", "--timeout", "5"]


def closed_port() -> int:
    """A loopback port nothing listens on (one the system just handed out and took back)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def site_down() -> str:
    return f"http://127.0.0.1:{closed_port()}"


def hub_environment(endpoint: str) -> dict[str, str]:
    """The environment a push to the Hub at ``endpoint`` runs in (the stand-in speaks Git LFS, not Xet).
    A call to the Hub is tried twice, the second time at most 50 ms after the first: a Hub that does not
    answer fails the push at once instead of after the default tries' half a minute of waiting."""
    return {
        **os.environ,
        "HF_ENDPOINT": endpoint,
        "HF_TOKEN": HUB_TOKEN,
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "EVENTCRAWL_HUB_ATTEMPTS": "2",
        "EVENTCRAWL_HUB_FIRST_WAIT": "0.05",
    }


def ends_in_one_line(result: subprocess.CompletedProcess[str], stream: str = "stderr") -> str:
    """The last line the command wrote to ``stream``, once it is known that no traceback was written."""
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    lines = getattr(result, stream).strip().splitlines()
    assert lines, f"nothing on {stream}"
    return lines[-1]


# -- the site unreachable ----------------------------------------------------------------------------


def test_crawl_with_the_site_down_is_exit_5_on_one_line(site_down: str, tmp_path: Path) -> None:
    result = eventcrawl(*crawl_args(site_down, tmp_path / "state", *GIVE_UP_FAST), timeout=300)
    assert result.returncode == 5, result.stderr[-3000:]
    assert ends_in_one_line(result) == (
        "eventcrawl: the crawl could not read the whole lecture listing of event 502; nothing may be "
        "published from it, and the next crawl resumes it"
    )


def test_run_with_the_site_down_is_exit_5_on_one_line(site_down: str, tmp_path: Path) -> None:
    result = run_command(run_args(site_down, tmp_path, "emnlp", *QUICK_GIVE_UP), timeout=300)
    assert result.returncode == 5, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert ends_in_one_line(result) == f"report: {tmp_path / 'state' / 'run-report.json'}"
    assert lines[-2] == (
        "the crawl could not read the whole lecture listing of event 502; nothing may be published from "
        "it, and the next crawl resumes it; the release is untouched"
    )
    assert run_report(tmp_path)["status"] == "crawl_failed"
    assert not (tmp_path / "out").exists()


def test_publish_of_a_crawl_of_a_site_that_was_down_is_exit_2_on_one_line(
    site_down: str, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    crawled = eventcrawl(*crawl_args(site_down, state, *GIVE_UP_FAST), timeout=300)
    assert crawled.returncode == 5, crawled.stderr[-3000:]
    result = eventcrawl("publish", "--state", str(state), "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr[-3000:]
    assert ends_in_one_line(result) == (
        f"eventcrawl: the crawl staged in {state} did not finish; resume it with `eventcrawl crawl --state "
        f"{state}` or publish it anyway with --allow-partial"
    )
    assert not (tmp_path / "out").exists()


def test_events_with_the_site_down_is_exit_1_on_one_line(site_down: str, tmp_path: Path) -> None:
    result = eventcrawl("events", "--state", str(tmp_path / "state"), "--api-base", site_down, "--delay", "0")
    assert result.returncode == 1, result.stderr[-3000:]
    assert ends_in_one_line(result) == (
        f"eventcrawl: the site cannot be reached: {site_down}/robots.txt: [Errno 111] Connection refused"
    )
    assert not (tmp_path / "state" / "events.json").exists()


def test_check_site_with_the_site_down_is_exit_1_with_its_verdict_on_one_line(site_down: str) -> None:
    result = eventcrawl("check-site", "--web-base", site_down, "--api-base", site_down, *SITE_TOOL_PACE)
    assert result.returncode == 1, result.stdout[-3000:]
    assert ends_in_one_line(result, "stdout") == (
        f"verdict: FAIL, robots.txt {site_down}/robots.txt could not be read ([Errno 111] Connection "
        "refused); nothing else was asked of the site"
    )


def test_record_with_the_site_down_is_exit_1_on_one_line(site_down: str, tmp_path: Path) -> None:
    out = tmp_path / "recording"
    result = eventcrawl(
        "record", "--out", str(out), "--web-base", site_down, "--api-base", site_down, *SITE_TOOL_PACE
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert ends_in_one_line(result) == (
        f"eventcrawl: nothing recorded: robots.txt {site_down}/robots.txt could not be read ([Errno 111] "
        "Connection refused); nothing else was asked of the site"
    )
    assert not out.exists() or list(out.iterdir()) == []


# -- the Hub unreachable -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records(), seed=3, lectures=30)


@pytest.fixture(scope="module")
def staged(site: ReplicaSite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    """A state directory holding a finished crawl of ``site``, made once, and the port it was crawled
    on (the state's URLs name it); a test crawls or publishes from a copy."""
    work = tmp_path_factory.mktemp("staged")
    with ReplicaServer(site) as server:
        crawled = eventcrawl(*crawl_args(server.base_url, work / "state", *GIVE_UP_FAST), timeout=300)
        port = int(server.base_url.rsplit(":", 1)[1])
    assert crawled.returncode == 0, crawled.stderr[-3000:]
    yield work / "state", port


def copy_of(staged: tuple[Path, int], work: Path) -> Path:
    shutil.copytree(staged[0], work / "state", symlinks=True)
    return work / "state"


def hub_record(state: Path) -> dict[str, str]:
    path = state / "hub-push.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def release_version(out: Path) -> str:
    return str(json.loads((out / "manifest.json").read_text(encoding="utf-8"))["version"])


def test_publish_with_the_hub_down_is_exit_7_and_the_next_run_pushes_the_release(
    site: ReplicaSite,
    staged: tuple[Path, int],
    tmp_path: Path,
    hub: tuple[StandIn, str],
) -> None:
    state, out = copy_of(staged, tmp_path), tmp_path / "out"
    publish = ["publish", "--state", str(state), "--out", str(out), "--push-to-hub", REPO]
    down = eventcrawl(*publish, env=hub_environment(f"http://127.0.0.1:{closed_port()}"), timeout=300)
    assert down.returncode == 7, down.stderr[-3000:]
    version = release_version(out)
    assert ends_in_one_line(down) == (
        f"eventcrawl: release {version} is published in {out} but the push to {REPO}@main failed; the next "
        f"`run` or `publish --push-to-hub` pushes it: pushing {out} to {REPO} failed: ConnectError: "
        "[Errno 111] Connection refused"
    )
    assert f"lectures to {out} (version {version})" in down.stdout
    assert hub_record(state) == {}

    stand_in, endpoint = hub
    with ReplicaServer(site, port=staged[1]) as server:
        command = run_args(server.base_url, tmp_path, "emnlp", "--push-to-hub", REPO)
        retried = run_command(command, env=hub_environment(endpoint), timeout=300)
    # Nothing changed on the site: the run owes the Hub the release publish could not push, and pays it.
    assert retried.returncode == 0, retried.stderr[-3000:]
    assert f"pushed release {version}, which an earlier run could not push, to {REPO}@main" in retried.stdout
    assert hub_record(state) == {f"{REPO}@main": version}
    on_hub = stand_in.files_at(REPO, "main") or {}
    assert json.loads(on_hub["manifest.json"])["version"] == version
    assert stand_in.tags[REPO] == {version: stand_in.heads[REPO]["main"]}


def test_a_release_publish_pushed_is_not_pushed_again_by_the_next_run(
    site: ReplicaSite, staged: tuple[Path, int], tmp_path: Path, hub: tuple[StandIn, str]
) -> None:
    stand_in, endpoint = hub
    state, out = copy_of(staged, tmp_path), tmp_path / "out"
    publish = ["publish", "--state", str(state), "--out", str(out), "--push-to-hub", REPO]
    pushed = eventcrawl(*publish, env=hub_environment(endpoint), timeout=300)
    assert pushed.returncode == 0, pushed.stderr[-3000:]
    version = release_version(out)
    assert hub_record(state) == {f"{REPO}@main": version}
    assert len(stand_in.commits) == 1
    with ReplicaServer(site, port=staged[1]) as server:
        command = run_args(server.base_url, tmp_path, "emnlp", "--push-to-hub", REPO)
        settled = run_command(command, env=hub_environment(endpoint), timeout=300)
    assert settled.returncode == 3, settled.stderr[-3000:]
    assert run_report(tmp_path)["hub"] == {
        "repo": f"{REPO}@main",
        "local_version": version,
        "hub_version": version,
    }
    assert len(stand_in.commits) == 1


def test_run_with_the_hub_down_is_exit_7_on_one_line(
    site: ReplicaSite, staged: tuple[Path, int], tmp_path: Path
) -> None:
    state = copy_of(staged, tmp_path)
    with ReplicaServer(site, port=staged[1]) as server:
        command = run_args(server.base_url, tmp_path, "emnlp", "--push-to-hub", REPO)
        result = run_command(command, env=hub_environment(f"http://127.0.0.1:{closed_port()}"), timeout=300)
    assert result.returncode == 7, result.stderr[-3000:]
    version = release_version(tmp_path / "out")
    assert ends_in_one_line(result) == f"report: {state / 'run-report.json'}"
    assert result.stderr.strip().splitlines()[-2] == (
        f"release {version} is published locally but the push to {REPO}@main failed; the next run pushes "
        f"it: pushing {tmp_path / 'out'} to {REPO} failed: ConnectError: [Errno 111] Connection refused"
    )
    assert run_report(tmp_path)["hub"]["hub_version"] is None
    assert hub_record(state) == {}


# -- a full disk -------------------------------------------------------------------------------------


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a file system of 100 KiB, too small for a release of 29 lectures (mounted for the
    test, which needs root; skipped where it cannot be mounted)."""
    folder = tmp_path / "small-disk"
    folder.mkdir()
    mount = shutil.which("mount")
    if mount is None:
        pytest.skip("no mount command to make a small file system with")
    made = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=100k", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"a small tmpfs could not be mounted (it needs root): {made.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_publish_to_a_full_disk_is_exit_10_on_one_line(
    staged: tuple[Path, int], tmp_path: Path, full_disk: Path
) -> None:
    state, out = copy_of(staged, tmp_path), full_disk / "release"
    result = eventcrawl("publish", "--state", str(state), "--out", str(out))
    assert result.returncode == 10, result.stderr[-3000:]
    line = ends_in_one_line(result)
    assert line.startswith("eventcrawl: [Errno 28] ") and "No space left on device" in line, line
    assert line.endswith("; free some space and run it again")
    # The release is built beside --out and swapped in once checked: nothing half-written is left.
    assert sorted(p.name for p in full_disk.iterdir() if p.name != ".release.lock") == []
