"""A throwaway ``redis-server`` on a free loopback port: no persistence, gone when the block ends."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

REDIS_SERVER = "redis-server"


def redis_server_available() -> bool:
    return shutil.which(REDIS_SERVER) is not None


def _free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ping(port: int, timeout: float = 0.5) -> bool:
    """PING in the inline protocol, without a client library."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class RunningRedis:
    port: int
    process: subprocess.Popen[bytes]

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"


@contextmanager
def running_redis(workdir: Path, start_timeout: float = 10.0) -> Iterator[RunningRedis]:
    """Start ``redis-server`` on 127.0.0.1 (no RDB, no AOF) and stop it afterwards."""
    workdir.mkdir(parents=True, exist_ok=True)
    # A port taken between the probe and the bind makes redis-server exit; try a few.
    for _ in range(5):
        port = _free_port()
        cmd = [
            REDIS_SERVER,
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(workdir),
            "--logfile", str(workdir / "redis.log"),
            "--daemonize", "no",
        ]  # fmt: skip
        process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + start_timeout
        while time.monotonic() < deadline and process.poll() is None and not _ping(port):
            time.sleep(0.02)
        if process.poll() is None and _ping(port):
            break
        _stop(process)
    else:
        raise RuntimeError(f"redis-server did not start; see {workdir / 'redis.log'}")
    try:
        yield RunningRedis(port, process)
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
