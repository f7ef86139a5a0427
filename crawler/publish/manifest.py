"""A release's manifest: its shape (the typed entries of ``manifest.json``), reading it back checked, and
what every file entry holds (size and sha256). The lowest part of a release: the previous release, the
build, its checks and the Hub upload all read a manifest through here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

from crawler.json_types import JsonObject, JsonValue
from crawler.publish import charts
from crawler.publish.tables import DEFAULT_CONFIG
from crawler.state.fsutil import DamagedFile, read_json_file

MANIFEST = "manifest.json"
CARD = "README.md"
MANIFEST_FORMAT = 1


class ReleaseError(RuntimeError):
    """The release could not be built, failed its checks, or out_dir is not a release."""


class FileEntry(TypedDict):
    size: int
    sha256: str


class ConfigEntry(TypedDict, total=False):
    rows: int
    files: list[str]
    event_id: str  # an event's own config only


class EventShardEntry(TypedDict):
    """What an event's files were made of, so that the next release keeps them when nothing changed."""

    fingerprint: str
    files: list[str]
    rows: int
    num_bytes: int
    email_like: int
    # The card's detector the count was made with (``email_like.EMAIL_LIKE_RULE``); absent before it was kept.
    email_like_rule: NotRequired[str]


class Manifest(TypedDict):
    format: int
    name: str
    version: str
    previous_version: str | None
    versions: list[str]
    created: str | None
    row_counts: dict[str, int]
    configs: dict[str, ConfigEntry]
    event_shards: dict[str, EventShardEntry]
    # Each event's ``transcripts`` file, kept the same way (absent before it was kept).
    transcript_shards: NotRequired[dict[str, EventShardEntry]]
    # The privacy rules the ``transcripts`` rows were redacted under (rows under others are redacted again).
    transcripts_privacy_rule: NotRequired[str]
    # The same for the ``slides`` rows.
    slides_privacy_rule: NotRequired[str]
    changes: dict[str, int]
    change_files: list[str]
    change_rows: dict[str, int]
    history: list[charts.HistoryEntry]
    anthology_links: dict[str, JsonValue]
    provenance: JsonObject
    files: dict[str, FileEntry]


def recovery(out_dir: Path) -> str:
    return (
        f"restore {out_dir} from the Hub (hf download --repo-type dataset ... --local-dir DIR) or a backup, "
        "or move it aside to publish a first release again"
    )


def manifest_problem(manifest: Any) -> str | None:
    """What makes ``manifest`` (parsed JSON) not a release manifest this code can build on; None when it
    is one. A manifest that reads as JSON but lost its history or its files would otherwise start the
    release history again, silently."""
    if not isinstance(manifest, dict):
        return f"not a JSON object but {type(manifest).__name__}"
    fmt = manifest.get("format")
    if not isinstance(fmt, int) or isinstance(fmt, bool) or not 1 <= fmt <= MANIFEST_FORMAT:
        return f"`format` is {fmt!r}, not a format up to {MANIFEST_FORMAT}"
    version = manifest.get("version")
    if not isinstance(version, str) or not version:
        return f"`version` is {version!r}, not a release version"
    versions = manifest.get("versions")
    if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        return "`versions` is not a list of release versions"
    if version not in versions:
        return f"`versions` does not hold the release's own version {version!r}"
    if not isinstance(manifest.get("previous_version"), str | None):
        return "`previous_version` is neither a version nor null"
    return charts.history_problem(manifest.get("history")) or _files_problem(manifest)


def _files_problem(manifest: JsonObject) -> str | None:
    configs = manifest.get("configs")
    if not isinstance(configs, dict) or DEFAULT_CONFIG not in configs:
        return f"`configs` does not list the `{DEFAULT_CONFIG}` config"
    for config_name, config in configs.items():
        files = config.get("files") if isinstance(config, dict) else None
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            return f"`configs.{config_name}.files` is not a list of paths"
    listed = manifest.get("change_files")
    if not isinstance(listed, list) or not all(isinstance(f, str) for f in listed):
        return "`change_files` is not a list of paths"
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(isinstance(e, dict) for e in files.values()):
        return "`files` is not a table of files with their size and sha256"
    return None


def read_manifest(out_dir: Path) -> Manifest | None:
    """The manifest of the release in ``out_dir``, checked (None when there is no manifest).

    :class:`DamagedFile` names the file when it is not JSON or not shaped like a manifest."""
    path = Path(out_dir) / MANIFEST
    if not path.is_file():
        return None
    manifest = read_json_file(path, recovery=recovery(out_dir))
    problem = manifest_problem(manifest)
    if problem is not None:
        raise DamagedFile(path, problem, recovery(out_dir))
    return cast(Manifest, manifest)


def file_entry(path: Path) -> FileEntry:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return {"size": path.stat().st_size, "sha256": digest.hexdigest()}
