"""Uploading a release directory to a Hugging Face dataset repository in one commit, tagged with the
release's version so that ``load_dataset(repo, revision="<version>")`` gives that release.

Rate limits (429), server errors (5xx) and dropped connections are retried with exponential backoff and
full jitter, waiting what ``Retry-After`` asks for (seconds or an HTTP date) when the Hub sends it. The
token never reaches a log record or an exception message: both are scrubbed while a push runs.

:func:`push_owed` is the push both ``publish`` and ``run`` make: it pushes the release a folder holds
unless the state directory records that the Hub has it (``hub-push.json``: repository and branch ->
version), and records it once pushed, so a push that failed is made by the next command that pushes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import email.utils
import json
import logging
import math
import os
import random
import re
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import tenacity
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, get_token
from huggingface_hub.errors import HfHubHTTPError

from crawler.publish.manifest import CARD, MANIFEST, read_manifest
from crawler.publish.verify import verify_files
from crawler.state.fsutil import read_json_file, write_json_atomic
from crawler.state.layout import StateDir

log = logging.getLogger(__name__)
REPO_TYPE = "dataset"
_TOKEN_SHAPE = re.compile(r"\bhf_[A-Za-z0-9]{8,}")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\",}]+")


class HubPushError(RuntimeError):
    """The push failed; the message is free of credentials."""


# The environment variables that set a push's retries (docs/commands.md): tries per call to the Hub, and
# the ceiling of the first wait in seconds (it doubles after each failure, up to ``max_wait``).
ATTEMPTS_VARIABLE = "EVENTCRAWL_HUB_ATTEMPTS"
FIRST_WAIT_VARIABLE = "EVENTCRAWL_HUB_FIRST_WAIT"


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6
    base_wait: float = 1.0
    max_wait: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> RetryPolicy:
        """The policy a push uses: these defaults, but for what ``EVENTCRAWL_HUB_ATTEMPTS`` (a whole
        number, at least 1) and ``EVENTCRAWL_HUB_FIRST_WAIT`` (seconds, at least 0) set. HubPushError
        for a value that is neither."""
        environ = os.environ if environ is None else environ
        attempts = environ.get(ATTEMPTS_VARIABLE, "").strip()
        if attempts and (not attempts.isdigit() or int(attempts) < 1):
            raise HubPushError(f"{ATTEMPTS_VARIABLE} must be a whole number of at least 1, not {attempts!r}")
        first_wait = environ.get(FIRST_WAIT_VARIABLE, "").strip()
        try:
            seconds = float(first_wait) if first_wait else cls.base_wait
        except ValueError:
            seconds = -1.0
        if not math.isfinite(seconds) or seconds < 0:
            raise HubPushError(
                f"{FIRST_WAIT_VARIABLE} must be a number of seconds of at least 0, not {first_wait!r}"
            )
        return cls(attempts=int(attempts) if attempts else cls.attempts, base_wait=seconds)


@dataclass(frozen=True)
class PushResult:
    repo_id: str
    revision: str
    commit_oid: str
    commit_url: str
    uploaded: tuple[str, ...]
    deleted: tuple[str, ...]
    tag: str | None = None


@dataclass(frozen=True)
class OwedPush:
    """What :func:`push_owed` found and did for one repository and branch (``where``, as
    ``org/name@branch``): the version of the local release (None without one), the version the Hub holds
    as far as the state directory knows (after this push when it succeeded), and the push made (None when
    none was owed or it failed, ``error`` then saying why, on one line)."""

    where: str
    local_version: str | None
    hub_version: str | None
    result: PushResult | None = None
    error: str | None = None


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` without the given secrets, token-shaped strings or bearer credentials."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return _BEARER.sub(r"\1***", _TOKEN_SHAPE.sub("hf_***", text))


@contextlib.contextmanager
def scrubbed_logs(secrets: Sequence[str]) -> Iterator[None]:
    """While active, every log record created in the process has the secrets removed."""
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        message = record.getMessage()
        clean = scrub(message, secrets)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = scrub("".join(traceback.format_exception(*record.exc_info)), secrets).rstrip()
        return record

    logging.setLogRecordFactory(factory)
    try:
        yield
    finally:
        logging.setLogRecordFactory(previous)


def retry_after_seconds(headers: Any, now: datetime | None = None) -> float | None:
    """The wait a ``Retry-After`` header asks for: delay-seconds or an HTTP date; None when absent."""
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None) if response is not None else None


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, HfHubHTTPError):
        status = _status(exc)
        return status is not None and (status == 429 or status >= 500)
    return isinstance(exc, httpx2.TransportError | ConnectionError | TimeoutError)


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    status = _status(exc)
    head = f"HTTP {status}" if status is not None else type(exc).__name__
    return f"{head}: {exc}"


def resolve_token(token: str | None) -> str:
    """The token argument, else ``HF_TOKEN``, else huggingface_hub's stored login."""
    found = token or get_token()
    if not found:
        raise HubPushError("no Hugging Face token: pass token=, set HF_TOKEN or log in with `hf auth login`")
    return found


def push_to_hub(
    release_dir: Path,
    repo_id: str,
    *,
    private: bool = False,
    revision: str | None = None,
    token: str | None = None,
    api: Any = None,
    commit_message: str | None = None,
    endpoint: str | None = None,
    retry: RetryPolicy | None = None,
    tag: bool = True,
) -> PushResult:
    """Upload a release (card, manifest and every file it lists: data, change files, the ledger of the
    removals it applied) to ``repo_id`` in one commit on ``revision`` (default main), then tag that
    commit with the release's version (``tag=False`` skips the tag).

    Creates the dataset repository (and the branch) when missing, and deletes data files a previous
    release left that this one does not have, in the same commit. A tag that already exists is accepted
    when it names this very commit (a repeated push), and refused when it names another.
    """
    release_dir = Path(release_dir)
    secrets = [token or ""]
    failure: str | None = None
    with scrubbed_logs(secrets):
        try:
            manifest = json.loads((release_dir / MANIFEST).read_text(encoding="utf-8"))
            verify_files(release_dir, manifest)
            local = [CARD, MANIFEST, *sorted(p for p in manifest["files"] if p != CARD)]
            token = resolve_token(token)
            secrets.append(token)
            hub = api if api is not None else HfApi(endpoint=endpoint, token=token)
            message = commit_message or f"Release {manifest['version']}"
            repo = _HubRepo(hub, repo_id, token, retry or RetryPolicy.from_environment(), secrets)
            result = repo.push(release_dir, local, private, revision, message)
            if tag:
                version = str(manifest["version"])
                repo.tag(version, result.commit_oid)
                result = dataclasses.replace(result, tag=version)
            return result
        except HubPushError as exc:
            failure = scrub(str(exc), secrets)
        except Exception as exc:
            failure = scrub(f"pushing {release_dir} to {repo_id} failed: {_describe(exc)}", secrets)
    # Raised outside the handler so that the original exception, which may hold the token, is not chained;
    # on one line, as the commands print it (the Hub's client writes some errors over several).
    raise HubPushError(" ".join(failure.split()))


def pushed_versions(state_dir: Path) -> dict[str, str]:
    """``hub-push.json``: the version each repository and branch holds as far as pushes from this state
    directory know (empty when none was recorded)."""
    path = StateDir(state_dir).hub_push
    if not path.is_file():
        return {}
    data = read_json_file(path, recovery="remove it; the next push sends the local release again")
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def push_owed(
    release_dir: Path,
    repo_id: str,
    *,
    state_dir: Path,
    private: bool = False,
    revision: str | None = None,
    token: str | None = None,
    api: Any = None,
    retry: RetryPolicy | None = None,
) -> OwedPush:
    """Push the release in ``release_dir`` to ``repo_id`` (branch ``revision``) with :func:`push_to_hub`
    (``token``, ``api`` and ``retry`` as it takes them) unless the state directory records that the Hub
    holds its version, and record it there once pushed. A failed push is not recorded, so the next call
    pushes it again; its error is in the answer, never raised. ``DamagedFile`` for a damaged manifest or
    ``hub-push.json``."""
    manifest = read_manifest(release_dir)
    local = str(manifest["version"]) if manifest is not None else None
    pushed = pushed_versions(state_dir)
    # The repository and branch the push goes to, as ``hub-push.json`` and the run report name them.
    where = f"{repo_id}@{revision or 'main'}"
    if local is None or pushed.get(where) == local:
        return OwedPush(where, local, pushed.get(where))
    try:
        result = push_to_hub(
            release_dir, repo_id, private=private, revision=revision, token=token, api=api, retry=retry
        )
    except HubPushError as exc:
        return OwedPush(where, local, pushed.get(where), error=str(exc))
    # Read again: another repository's entry may have been written while this push ran.
    recorded = {**pushed_versions(state_dir), where: local}
    write_json_atomic(StateDir(state_dir).hub_push, recorded, sort_keys=True)
    return OwedPush(where, local, local, result=result)


@dataclass
class _HubRepo:
    """One dataset repository on the Hub, as a push talks to it: every call retried by one policy, and
    every message it raises scrubbed of the token."""

    hub: Any
    repo_id: str
    token: str
    policy: RetryPolicy
    secrets: Sequence[str]

    def call(self, what: str, **arguments: Any) -> Any:
        """The Hub's method ``what`` on the repository, retried by the policy: after a retryable error
        (:func:`is_retryable`) it waits what ``Retry-After`` asks for, else a full-jitter exponential
        backoff, and logs the failure scrubbed. An argument given as a function is made anew for each
        attempt (``create_commit`` marks its operations as used)."""
        policy = self.policy

        def attempt() -> Any:
            made = {name: value() if callable(value) else value for name, value in arguments.items()}
            return getattr(self.hub, what)(self.repo_id, repo_type=REPO_TYPE, token=self.token, **made)

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            asked = retry_after_seconds(getattr(getattr(exc, "response", None), "headers", None))
            if asked is not None:
                return min(asked, policy.max_wait)
            ceiling = min(policy.max_wait, policy.base_wait * 2 ** (state.attempt_number - 1))
            return random.uniform(0, ceiling)

        def before_sleep(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            wait = state.next_action.sleep if state.next_action else 0.0
            log.warning(
                "%s failed (attempt %d of %d: %s); retrying in %.1fs",
                what,
                state.attempt_number,
                policy.attempts,
                scrub(_describe(exc), self.secrets),
                wait,
            )

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(policy.attempts),
            wait=wait,
            retry=tenacity.retry_if_exception(is_retryable),
            sleep=policy.sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        return retrying(attempt)

    def push(
        self, release_dir: Path, local: list[str], private: bool, revision: str | None, message: str
    ) -> PushResult:
        """The release's files in one commit on ``revision``, the data files it no longer has deleted."""
        self.call("create_repo", private=private, exist_ok=True)
        if revision and revision != "main":
            self.call("create_branch", branch=revision, exist_ok=True)
        remote = self.call("list_repo_files", revision=revision)
        stale = sorted(p for p in remote if p.startswith("data/") and p not in local)

        def operations() -> list[Any]:
            added = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=release_dir / p) for p in local]
            return [*added, *(CommitOperationDelete(path_in_repo=p) for p in stale)]

        info = self.call("create_commit", operations=operations, commit_message=message, revision=revision)
        if not getattr(info, "oid", None):
            raise HubPushError("the Hub answered the commit without a commit id")
        return PushResult(
            repo_id=self.repo_id,
            revision=revision or "main",
            commit_oid=str(getattr(info, "oid", "")),
            commit_url=str(getattr(info, "commit_url", "")),
            uploaded=tuple(local),
            deleted=tuple(stale),
        )

    def tag(self, version: str, commit_oid: str) -> None:
        """Tag ``commit_oid`` with the release's version; an existing tag on that very commit is fine."""
        try:
            self.call("create_tag", tag=version, tag_message=f"Release {version}", revision=commit_oid)
            return
        except HfHubHTTPError as exc:
            if _status(exc) != 409:
                raise
        # The tag exists: fine if a lost answer or a repeated push made it on this commit, not otherwise.
        refs = self.call("list_repo_refs")
        target = next((t.target_commit for t in refs.tags if t.name == version), None)
        if target != commit_oid:
            raise HubPushError(
                f"tag {version!r} already names commit {target} in {self.repo_id}, not this release's commit"
                f" {commit_oid}; the files are pushed but the tag was left as it was"
            )
