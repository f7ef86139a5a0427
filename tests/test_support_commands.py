"""The suite's way of running ``eventcrawl``: a forked command answers as a fresh interpreter does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import commands
from tests.support.commands import eventcrawl, run_command


def fresh(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crawler.app.cli", *args], capture_output=True, text=True, cwd=cwd, check=False
    )


@pytest.mark.parametrize(
    "args",
    [("--version",), ("crawl", "--no-such-option"), ("publish", "--state", "missing-state", "--out", "out")],
)
def test_a_forked_command_exits_and_writes_as_a_fresh_interpreter_does(
    args: tuple[str, ...], tmp_path: Path
) -> None:
    forked, started = eventcrawl(*args, cwd=tmp_path), fresh(*args, cwd=tmp_path)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        started.returncode,
        started.stdout,
        started.stderr,
    )
    assert forked.returncode == (0 if args[0] == "--version" else 2)
    # A relative path is the command's working directory's.
    assert args[0] != "publish" or f"{tmp_path}/missing-state/stage" in forked.stderr


def test_a_command_past_its_timeout_is_killed(tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        eventcrawl("serve-replica", "--port", "0", "--lectures", "5", cwd=tmp_path, timeout=3)


def test_a_changed_environment_gets_a_fresh_interpreter() -> None:
    # Modules read some variables once, when the fork server imported them.
    environment = dict(os.environ)
    # Tests run before this one (in-process crawls among them) left the environment as they found it.
    assert commands._SERVER.context_for(environment) is not None, commands._SERVER.differences(environment)
    assert commands._SERVER.context_for({**environment, "HF_ENDPOINT": "http://127.0.0.1:9"}) is None
    assert commands._SERVER.context_for({**environment, "PYTEST_CURRENT_TEST": "another"}) is not None
    assert (
        commands._SERVER.context_for({**environment, "SCRAPY_SETTINGS_MODULE": "crawler.settings"})
        is not None
    )


def test_other_commands_run_as_given(tmp_path: Path) -> None:
    result = run_command([sys.executable, "-c", "import os; print(os.getcwd())"], cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, f"{tmp_path}\n")


def test_the_fork_server_keeps_the_workers_environment_whatever_the_first_command_asks() -> None:
    # The fork server is started by the first command but inherits this process's environment.
    server = commands._ForkServer()
    assert server.context_for({**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9"}) is None
    assert server.context_for(dict(os.environ)) is not None


def test_a_started_command_runs_forked_until_it_is_killed(tmp_path: Path) -> None:
    out, err = tmp_path / "out", tmp_path / "err"
    command = [sys.executable, "-m", "crawler.app.cli", "serve-replica", "--port", "0", "--lectures", "5"]
    started = commands.start_command(command, cwd=tmp_path, stdout=out, stderr=err)
    try:
        assert isinstance(started, commands.Started)
        deadline = time.monotonic() + 60
        while not out.read_text().startswith("http://127.0.0.1:") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert out.read_text().startswith("http://127.0.0.1:"), err.read_text()[-2000:]
        assert started.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            started.wait(timeout=0.1)
        started.send_signal(signal.SIGKILL)
        assert started.wait(timeout=10) == -signal.SIGKILL
    finally:
        started.kill()


def test_a_command_of_the_suite_runs_in_a_changed_environment_from_any_directory(tmp_path: Path) -> None:
    # A fresh interpreter started in tmp_path still imports the ``tests`` package, as a forked child does.
    command = [sys.executable, "-m", "tests.support.commands"]
    environment = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9"}
    assert commands._SERVER.context_for(environment) is None
    for env in (None, environment):
        result = run_command(command, cwd=tmp_path, env=env)
        assert (result.returncode, result.stderr) == (0, ""), f"{env=}"
