"""Run ``python -m crawler.app.cli ...`` as its own process, forked from one that has imported the crawler.

A fresh interpreter spends about a second of CPU importing Scrapy, Twisted, pyarrow and ``datasets``
before a command does anything, and the suite runs a few hundred commands. Here each command still runs
in a process of its own, with its own working directory, environment, exit status, output and memory, and
a timeout that kills it; only the imports are done once per test worker, by a ``multiprocessing``
fork server that loads the modules below and forks a child per command.

The child runs ``crawler.app.cli`` as ``__main__`` (as ``-m`` does) and the interpreter's exit handlers
before it exits, so what a command writes, flushes and cleans up at exit is what it does when started by
hand. The fork server starts with the suite, before any test changes the environment. A command is
started as a fresh interpreter instead when its environment differs from the fork server's (modules read
some variables once, when imported) or when it is not a ``python -m`` command line; that interpreter
finds the ``tests`` package on ``PYTHONPATH``, as a forked child finds it on the inherited ``sys.path``.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import runpy
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from multiprocessing import forkserver
from multiprocessing.context import ForkServerContext
from pathlib import Path

CLI_MODULE = "crawler.app.cli"
# The directory that holds the ``tests`` package.
CHECKOUT = Path(__file__).resolve().parents[2]
# Scrapy's component lists whose modules a crawl imports when it builds its engine.
_COMPONENT_LISTS = (
    "DOWNLOAD_HANDLERS",
    "DOWNLOADER_MIDDLEWARES",
    "SPIDER_MIDDLEWARES",
    "ITEM_PIPELINES",
    "EXTENSIONS",
    "ADDONS",
)


def _component_modules() -> tuple[str, ...]:
    """The modules of every component the crawl's settings name (Scrapy's and the project's), but the
    remote control's, which a crawl leaves out while it is off."""
    from scrapy.settings import default_settings

    from crawler import settings as project
    from crawler.app.crawling import REMOTE_CONTROL

    names: set[str] = set()
    for setting in _COMPONENT_LISTS:
        for source in (getattr(default_settings, f"{setting}_BASE", {}), getattr(project, setting, {})):
            names.update(str(path) for path in source.values() if isinstance(path, str))
            names.update(key for key in source if isinstance(key, str) and key != REMOTE_CONTROL)
    return tuple(sorted({name.rpartition(".")[0] for name in names if "." in name}))


# What a command imports before it starts, and that the fork server imports once.
PRELOAD = (
    CLI_MODULE,
    "crawler.publish.release",
    "crawler.publish.card",
    "crawler.spiders.underline",
    "datasets",
    # What ``datasets`` imports each time a release is verified (its streaming patches name
    # ``scipy.io.loadmat``): about 0.15 s of CPU in every command that publishes.
    "scipy.io",
    "scrapy.core.engine",
    "tests.support.serve",
    *_component_modules(),
    __name__,
    "tests.support.fork_ready",
)
# Variables the test process changes as it runs that no preloaded module reads when imported: pytest's
# name for the running test; the settings module a crawl in the test process sets (Scrapy reads it when a
# crawl starts, in the command's own environment); the allocator settings polars sets when a test imports
# it (read when polars loads, and the fork server does not preload it); the lectures whose jobs
# test_extension_workers stalls (its job wrapper reads the variable in each job).
_READ_WHEN_USED = frozenset(
    {"PYTEST_CURRENT_TEST", "SCRAPY_SETTINGS_MODULE", "_RJEM_MALLOC_CONF", "EVENTCRAWL_TEST_STALL_LECTURES"}
)


class _ForkServer:
    """The fork server of this test worker, started when a test first runs a command (a module of pure
    tests never pays for its imports), with the environment the worker started with."""

    def __init__(self) -> None:
        self._context: ForkServerContext | None = None
        self._environment: dict[str, str] = {}
        self._original: dict[str, str] | None = None

    def remember_environment(self) -> None:
        """Keep the environment of this moment, before any test changes it: the fork server's, whenever
        it starts."""
        if self._original is None:
            self._original = dict(os.environ)

    def start(self) -> None:
        """Start the fork server now (at once), in the environment remembered."""
        if self._context is not None:
            return
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(PRELOAD))
        original = self._original if self._original is not None else dict(os.environ)
        current = dict(os.environ)
        # The fork server inherits the environment of the moment it starts: the remembered one.
        os.environ.clear()
        os.environ.update(original)
        try:
            forkserver.ensure_running()
        finally:
            os.environ.clear()
            os.environ.update(current)
        self._context, self._environment = context, _comparable(original)

    def context_for(self, environment: Mapping[str, str]) -> ForkServerContext | None:
        """The fork server to start a command in ``environment`` from, or None when it would differ."""
        self.start()
        return None if self.differences(environment) else self._context

    def differences(self, environment: Mapping[str, str]) -> list[str]:
        """The variables whose values in ``environment`` are not the fork server's."""
        theirs = _comparable(environment)
        return sorted(k for k in {*theirs, *self._environment} if theirs.get(k) != self._environment.get(k))


_SERVER = _ForkServer()
start_fork_server = _SERVER.start
remember_environment = _SERVER.remember_environment


def _comparable(environment: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in environment.items() if k not in _READ_WHEN_USED}


def eventcrawl(
    *args: str, cwd: Path | None = None, timeout: float = 600, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m crawler.app.cli *args``, its output captured as text; as ``subprocess.run`` would."""
    return run_command([sys.executable, "-m", CLI_MODULE, *args], cwd=cwd, timeout=timeout, env=env)


def run_command(
    command: Sequence[str],
    *,
    cwd: Path | None = None,
    timeout: float = 600,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(command, capture_output=True, text=True, timeout=timeout)``, the crawler's commands
    forked from the fork server (raises ``subprocess.TimeoutExpired`` after killing it, as that does)."""
    command = [str(part) for part in command]
    environment = dict(os.environ if env is None else env)
    with tempfile.TemporaryDirectory(prefix="eventcrawl-command-") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        child = _fork(command, cwd or Path.cwd(), environment, (out, err))
        if child is None:
            return subprocess.run(
                command,
                capture_output=True,
                text=True,
                cwd=cwd,
                timeout=timeout,
                env=_fresh(environment),
                check=False,
            )
        child.join(timeout)
        if child.is_alive():
            child.kill()
            child.join()
            raise subprocess.TimeoutExpired(command, timeout, _read(out), _read(err))
        assert child.exitcode is not None
        return subprocess.CompletedProcess(command, child.exitcode, _read(out), _read(err))


class Started:
    """A command forked from the fork server and still running: the part of ``subprocess.Popen`` the
    tests use (its output goes to the files it was started with). A test kills what it started: the test
    process waits for a child still running when it exits, as multiprocessing does."""

    def __init__(self, command: Sequence[str], process: multiprocessing.process.BaseProcess) -> None:
        self.args = list(command)
        self._process = process

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self._process.exitcode

    def send_signal(self, signum: int) -> None:
        if self._process.exitcode is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self._process.kill()


def start_command(
    command: Sequence[str], *, cwd: Path, stdout: Path, stderr: Path
) -> Started | subprocess.Popen[str]:
    """``subprocess.Popen(command, cwd=cwd)`` with its output written to two files, a ``python -m``
    command forked from the fork server."""
    command = [str(part) for part in command]
    environment = dict(os.environ)
    # Both files exist when this returns, as Popen's do.
    with stdout.open("w") as out, stderr.open("w") as err:
        child = _fork(command, cwd, environment, (stdout, stderr))
        if child is None:
            return subprocess.Popen(
                command, cwd=cwd, stdout=out, stderr=err, text=True, env=_fresh(environment)
            )
    return Started(command, child)


def _fork(
    command: list[str], cwd: Path, environment: dict[str, str], output: tuple[Path, Path]
) -> multiprocessing.process.BaseProcess | None:
    """``command`` started as a child of the fork server, writing to the two ``output`` files; None when
    it is not a ``python -m`` command line or its environment is not the fork server's."""
    forkable = len(command) > 2 and command[:2] == [sys.executable, "-m"]
    context = _SERVER.context_for(environment) if forkable else None
    if context is None:
        return None
    child = context.Process(
        target=_run_module,
        args=(command[2], command[3:], str(cwd), environment, (str(output[0]), str(output[1]))),
        name="eventcrawl",
    )
    child.start()
    return child


def _fresh(environment: dict[str, str]) -> dict[str, str]:
    """``environment`` for a fresh interpreter, which then finds the ``tests`` package from any working
    directory, as a child of the fork server (which has the test worker's ``sys.path``) does."""
    paths = [str(CHECKOUT), *filter(None, environment.get("PYTHONPATH", "").split(os.pathsep))]
    return {**environment, "PYTHONPATH": os.pathsep.join(paths)}


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def _run_module(
    module: str, args: list[str], cwd: str, environment: dict[str, str], output: tuple[str, str]
) -> None:
    """In the forked child: the command's directory, environment and output files, then the command."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(environment)
    for fd, path in zip((1, 2), output, strict=True):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    sys.argv = [module, *args]
    # ``-m`` executes the module's file as ``__main__``; the fork server's import of it is not that module.
    sys.modules.pop(module, None)
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        # An interpreter runs these on its way out (logging's flush, temporary directories' cleanup);
        # multiprocessing's child ends with os._exit, which would skip them.
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
