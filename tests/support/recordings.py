"""Serve a recording made by ``eventcrawl record`` from a local server, as the site answered it."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings"
_BARE_LECTURE = re.compile(r"^/lecture/(\d+)/?$")


@dataclass(frozen=True)
class Recording:
    folder: Path
    index: dict[str, Any]

    @property
    def name(self) -> str:
        return self.folder.name

    def body(self, kind: str) -> list[bytes]:
        return [(self.folder / r["body"]).read_bytes() for r in self.index["responses"] if r["kind"] == kind]

    def files(self) -> list[Path]:
        return sorted(p for p in self.folder.rglob("*") if p.is_file())


def recordings() -> list[Recording]:
    """Every recording under ``tests/recordings/``."""
    found = []
    for index in sorted(RECORDINGS.glob("*/recording.json")):
        found.append(Recording(index.parent, json.loads(index.read_text(encoding="utf-8"))))
    return found


@contextmanager
def serve_recording(recording: Recording) -> Iterator[str]:
    """The recording on a free loopback port; yields its base URL (web and API alike)."""
    by_path = {r["path"]: r for r in recording.index["responses"]}
    listing = next(r for r in recording.index["responses"] if r["kind"] == "listing")
    empty_listing = json.dumps({"data": [], "included": [], "meta": {"total_pages": 1}}).encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            bare = _BARE_LECTURE.match(url.path)
            slugged = [p for p in by_path if bare and p.startswith(f"/lecture/{bare.group(1)}-")]
            if slugged:
                self.send_response(301)
                self.send_header("Location", slugged[0])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            entry = by_path.get(url.path)
            if entry is None:
                self._answer(404, "text/plain", b"not recorded")
            elif entry is listing and parse_qs(url.query).get("page[number]", ["1"]) != ["1"]:
                self._answer(200, entry["content_type"], empty_listing)
            else:
                body = (recording.folder / entry["body"]).read_bytes()
                self._answer(entry["status"], entry["content_type"], body)

        def _answer(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
