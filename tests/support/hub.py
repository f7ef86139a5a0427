"""A stand-in for the Hugging Face Hub on 127.0.0.1, spoken to by huggingface_hub itself.

It serves the endpoints a dataset upload takes, in the shapes huggingface_hub's ``_commit_api`` and ``lfs``
modules read: repository and branch creation, ``preupload`` (Parquet and large or binary files answer
``uploadMode: "lfs"``, as on the Hub), the Git LFS batch endpoint with an upload and a verify action, the
upload itself (to a storage path that stands for the presigned storage URL, outside the Hub API), the
verify call, the NDJSON commit with ``file`` and ``lfsFile`` entries, tags, refs, and reading a revision's
commit, a tree and a file at a branch, tag or commit (with the ``ETag`` and ``X-Repo-Commit`` headers a
download reads, so that ``hf download`` restores a repository from it). Faults can be scripted per
request.

The Xet upload protocol is not served: the fixture turns huggingface_hub's Xet path off, so uploads take
the LFS path that the Hub still accepts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

_REPO_PATH = r"/api/datasets/(?P<repo>[^/]+/[^/]+)"
_LFS_BATCH = re.compile(r"/datasets/(?P<repo>[^/]+/[^/]+)\.git/info/lfs/objects/batch")
_RESOLVE = re.compile(r"/datasets/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)")
# The Hub stores these as LFS objects whatever their size (its default .gitattributes), and any file of
# 10 MB or more.
LFS_SUFFIXES = (".parquet", ".arrow", ".bin", ".zip", ".gz", ".zst")
LFS_MIN_SIZE = 10 * 1024 * 1024


class StandIn:
    """Repositories as branch -> {path: bytes}, plus commits, tags and an LFS object store."""

    def __init__(self) -> None:
        self.repos: dict[str, dict[str, dict[str, bytes]]] = {}
        self.heads: dict[str, dict[str, str]] = {}  # repo -> branch -> commit oid
        self.snapshots: dict[str, dict[str, dict[str, bytes]]] = {}  # repo -> commit oid -> files
        self.tags: dict[str, dict[str, str]] = {}  # repo -> tag -> commit oid
        self.lfs_objects: dict[str, bytes] = {}  # sha256 -> bytes
        self.requests: list[dict[str, Any]] = []  # calls to the Hub itself
        self.storage: list[dict[str, Any]] = []  # uploads to the storage URLs the batch endpoint hands out
        self.commits: list[dict[str, Any]] = []
        self.faults: list[tuple[str, str, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def fault(self, method: str, pattern: str, **action: Any) -> None:
        self.faults.append((method, pattern, action))

    def take_fault(self, method: str, path: str) -> dict[str, Any] | None:
        with self.lock:
            for i, (m, pattern, action) in enumerate(self.faults):
                if m == method and re.search(pattern, path):
                    del self.faults[i]
                    return action
        return None

    def files_at(self, repo: str, revision: str) -> dict[str, bytes] | None:
        """The files of ``repo`` at a branch, a tag or a commit oid; None when there is no such revision."""
        if revision in self.repos.get(repo, {}):
            return self.repos[repo][revision]
        oid = self.tags.get(repo, {}).get(revision, revision)
        return self.snapshots.get(repo, {}).get(oid)

    def _commit_oid(self, repo: str, revision: str) -> str | None:
        if revision in self.heads.get(repo, {}):
            return self.heads[repo][revision]
        if revision in self.tags.get(repo, {}):
            return self.tags[repo][revision]
        return revision if revision in self.snapshots.get(repo, {}) else None

    @staticmethod
    def upload_mode(path: str, size: int, sample: bytes) -> str:
        if path.endswith(LFS_SUFFIXES) or size >= LFS_MIN_SIZE or b"\x00" in sample:
            return "lfs"
        return "regular"

    def handle(
        self, method: str, base: str, path: str, body: bytes, headers: Any
    ) -> tuple[int, dict[str, str], Any]:
        if method == "PUT" and path.startswith("/storage/"):
            return self._store(path.rsplit("/", 1)[1], body)
        batch = _LFS_BATCH.fullmatch(path)
        if batch is not None:
            return self._lfs_batch(base, batch["repo"], json.loads(body), headers)
        if method == "POST" and path.startswith("/api/lfs-verify/"):
            data = json.loads(body)
            stored = self.lfs_objects.get(data["oid"])
            if stored is None or len(stored) != data["size"]:
                return 422, {}, {"error": "Object not found or size differs"}
            return 200, {}, {}
        resolve = _RESOLVE.fullmatch(path)
        if resolve is not None:
            files = self.files_at(resolve["repo"], unquote(resolve["rev"]))
            wanted = unquote(resolve["path"])
            if files is None or wanted not in files:
                return 404, {"X-Error-Code": "EntryNotFound"}, {"error": "Entry not found"}
            oid = self._commit_oid(resolve["repo"], unquote(resolve["rev"])) or ""
            found = files[wanted]
            return 200, {"X-Raw-Bytes": "1", "ETag": f'"{_blob_id(found)}"', "X-Repo-Commit": oid}, found
        if method == "POST" and path == "/api/repos/create":
            data = json.loads(body)
            repo = f"{data['organization']}/{data['name']}"
            if repo in self.repos:
                return (
                    409,
                    {},
                    {"error": "You already created this dataset repo", "url": f"{base}/datasets/{repo}"},
                )
            self.repos[repo] = {"main": {}}
            return 200, {}, {"url": f"{base}/datasets/{repo}"}
        if method == "POST" and path == "/api/validate-yaml":
            return 200, {}, {"errors": [], "warnings": []}
        refs = re.fullmatch(_REPO_PATH + r"/refs", path)
        if refs is not None:
            return self._refs(refs["repo"])
        match = re.fullmatch(
            _REPO_PATH + r"/(?P<verb>branch|tree|preupload|commit|tag|revision)/(?P<rev>[^/]+)(?P<rest>/.*)?",
            path,
        )
        if match is None or match["repo"] not in self.repos:
            return 404, {"X-Error-Code": "RepoNotFound"}, {"error": "Repository not found"}
        repo = match["repo"]
        branches = self.repos[repo]
        revision = unquote(match["rev"])
        if match["verb"] == "branch":
            if revision in branches:
                return 409, {}, {"error": "Reference already exists"}
            branches[revision] = dict(branches["main"])
            if "main" in self.heads.get(repo, {}):
                self.heads[repo][revision] = self.heads[repo]["main"]
            return 200, {}, {}
        if match["verb"] == "tag":
            return self._tag(repo, revision, json.loads(body))
        if match["verb"] in ("tree", "revision"):
            files = self.files_at(repo, revision)
            if files is None:
                return 404, {"X-Error-Code": "RevisionNotFound"}, {"error": "Invalid rev id"}
            if match["verb"] == "revision":
                siblings = [{"rfilename": p} for p in sorted(files)]
                return 200, {}, {"id": repo, "sha": self._commit_oid(repo, revision), "siblings": siblings}
            return (
                200,
                {},
                [
                    {"type": "file", "path": p, "size": len(b), "oid": _blob_id(b)}
                    for p, b in sorted(files.items())
                ],
            )
        if revision not in branches:
            return 404, {"X-Error-Code": "RevisionNotFound"}, {"error": "Invalid rev id"}
        if match["verb"] == "preupload":
            asked = json.loads(body)["files"]
            modes = [
                {
                    "path": f["path"],
                    "uploadMode": self.upload_mode(f["path"], f["size"], base64.b64decode(f["sample"])),
                    "shouldIgnore": False,
                }
                for f in asked
            ]
            return 200, {}, {"files": modes}
        return self._commit(base, repo, revision, body)

    def _lfs_batch(
        self, base: str, repo: str, data: dict[str, Any], headers: Any
    ) -> tuple[int, dict[str, str], Any]:
        if repo not in self.repos:
            return 404, {}, {"message": "Repository not found"}
        if data.get("operation") != "upload" or "basic" not in data.get("transfers", []):
            return 422, {}, {"message": "only basic uploads are served"}
        objects = []
        for obj in data["objects"]:
            entry: dict[str, Any] = {"oid": obj["oid"], "size": obj["size"]}
            if obj["oid"] not in self.lfs_objects:
                entry["actions"] = {
                    "upload": {"href": f"{base}/storage/{obj['oid']}", "header": {}},
                    "verify": {"href": f"{base}/api/lfs-verify/{obj['oid']}", "header": {}},
                }
            objects.append(entry)
        return (
            200,
            {"Content-Type": "application/vnd.git-lfs+json"},
            {"transfer": "basic", "objects": objects},
        )

    def _store(self, oid: str, body: bytes) -> tuple[int, dict[str, str], Any]:
        if hashlib.sha256(body).hexdigest() != oid:
            return 400, {}, {"error": "content does not match its oid"}
        self.lfs_objects[oid] = body
        return 200, {"ETag": f'"{hashlib.md5(body).hexdigest()}"'}, {}

    def _commit(self, base: str, repo: str, revision: str, body: bytes) -> tuple[int, dict[str, str], Any]:
        files = self.repos[repo][revision]
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        commit: dict[str, Any] = {"revision": revision, "added": {}, "deleted": [], "lfs": [], "inline": []}
        for line in lines:
            value = line["value"]
            if line["key"] == "header":
                commit["summary"] = value["summary"]
            elif line["key"] == "file":
                commit["added"][value["path"]] = base64.b64decode(value["content"])
                commit["inline"].append(value["path"])
            elif line["key"] == "lfsFile":
                stored = self.lfs_objects.get(value["oid"])
                if stored is None or value.get("algo") != "sha256":
                    return 422, {}, {"error": f"LFS object {value['oid']} was never uploaded"}
                commit["added"][value["path"]] = stored
                commit["lfs"].append(value["path"])
            elif line["key"] == "deletedFile":
                commit["deleted"].append(value["path"])
        files.update(commit["added"])
        for gone in commit["deleted"]:
            files.pop(gone, None)
        oid = hashlib.sha1(body).hexdigest()
        commit["oid"] = oid
        self.snapshots.setdefault(repo, {})[oid] = dict(files)
        self.heads.setdefault(repo, {})[revision] = oid
        self.commits.append(commit)
        return 200, {}, {"commitUrl": f"{base}/datasets/{repo}/commit/{oid}", "commitOid": oid}

    def _tag(self, repo: str, revision: str, data: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        oid = self._commit_oid(repo, revision)
        if oid is None:
            return 404, {"X-Error-Code": "RevisionNotFound"}, {"error": "Invalid rev id"}
        tags = self.tags.setdefault(repo, {})
        if data["tag"] in tags:
            return 409, {}, {"error": "Tag already exists"}
        tags[data["tag"]] = oid
        return 200, {}, {}

    def _refs(self, repo: str) -> tuple[int, dict[str, str], Any]:
        if repo not in self.repos:
            return 404, {"X-Error-Code": "RepoNotFound"}, {"error": "Repository not found"}
        heads = self.heads.get(repo, {})
        return (
            200,
            {},
            {
                "branches": [
                    {"name": b, "ref": f"refs/heads/{b}", "targetCommit": heads.get(b, "0" * 40)}
                    for b in sorted(self.repos[repo])
                ],
                "tags": [
                    {"name": t, "ref": f"refs/tags/{t}", "targetCommit": oid}
                    for t, oid in sorted(self.tags.get(repo, {}).items())
                ],
                "converts": [],
            },
        )


def _blob_id(data: bytes) -> str:
    """A file's git blob id, as the Hub names a file's version."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                handler.rfile.readline()
                return b"".join(chunks)
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def make_handler(hub: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def serve(self) -> None:
            body = _read_body(self)
            url = urlsplit(self.path)
            seen = {"method": self.command, "path": url.path, "auth": self.headers["Authorization"]}
            (hub.storage if url.path.startswith("/storage/") else hub.requests).append(seen)
            action = hub.take_fault(self.command, url.path)
            if action and action.get("drop"):
                self.close_connection = True
                return
            if action:
                status, headers, payload = action["status"], action.get("headers", {}), action.get("body", {})
            else:
                base = f"http://{self.headers['Host']}"
                status, headers, payload = hub.handle(self.command, base, url.path, body, self.headers)
            raw = headers.pop("X-Raw-Bytes", None) is not None
            data = payload if raw else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream" if raw else "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_HEAD = serve

    return Handler


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[StandIn, str]]:
    import huggingface_hub.constants

    # Tests talk to the stand-in only: no user-agent look-ups at the real Hub.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_TELEMETRY", True)
    # The stand-in speaks Git LFS, not Xet (see the module's docstring).
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)
    stand_in = StandIn()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(stand_in))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield stand_in, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
