"""The Hub token never shows: not in a log record at any level, an exception or its chain, a
warning, or a file the release writes; also when the Hub echoes it back in every answer."""

from __future__ import annotations

import logging
import re
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import HfApi

from crawler.publish.hub import HubPushError, push_to_hub, scrub
from crawler.publish.release import publish_release
from tests.support.hub import StandIn, hub
from tests.test_publish_hub import REPO, TOKEN, Captured, no_sleep
from tests.test_publish_parquet import PROVENANCE, make_records

__all__ = ["hub"]  # the Hub stand-in fixture of the upload tests

# The token as the Hub writes it back in different shapes: plain, in a header, inside JSON.
ECHOES = [TOKEN, f"Authorization: Bearer {TOKEN}", f'{{"token": "{TOKEN}"}}', f"bearer\t{TOKEN}"]
TOKEN_SHAPED = re.compile(r"hf_[A-Za-z0-9]{8,}")


@pytest.fixture
def every_log() -> Iterator[Captured]:
    """Every logger of the process at DEBUG, third-party HTTP clients included."""
    handler = Captured()
    names = ["", "huggingface_hub", "httpx", "httpcore", "urllib3", "filelock", "fsspec"]
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
    logging.getLogger().addHandler(handler)
    try:
        yield handler
    finally:
        logging.getLogger().removeHandler(handler)
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("secrets") / "release"
    publish_release(make_records(3), out, name=REPO, provenance=PROVENANCE)
    return out


def leaks(text: str) -> bool:
    return TOKEN in text or TOKEN[3:] in text


@pytest.mark.parametrize("status", [401, 403, 409, 500, 503])
@pytest.mark.parametrize("echo", ECHOES)
def test_a_hub_that_echoes_the_token_never_gets_it_shown(
    hub: tuple[StandIn, str],
    release: Path,
    every_log: Captured,
    status: int,
    echo: str,
) -> None:
    stand_in, endpoint = hub
    for _ in range(4):
        stand_in.fault("POST", "/commit/", status=status, body={"error": f"rejected: {echo}"})
    with warnings.catch_warnings(record=True) as caught_warnings, pytest.raises(HubPushError) as caught:
        warnings.simplefilter("always")
        push_to_hub(release, REPO, token=TOKEN, api=HfApi(endpoint=endpoint), retry=no_sleep([]))
    error = caught.value
    assert not leaks(str(error))
    assert not leaks(repr(error))
    assert error.__cause__ is None and error.__context__ is None
    assert not leaks("".join(traceback.format_exception(error)))
    assert not leaks("\n".join(every_log.lines))
    assert not leaks("\n".join(str(w.message) for w in caught_warnings))
    assert {r["auth"] for r in stand_in.requests} == {f"Bearer {TOKEN}"}


def test_a_token_from_the_environment_is_scrubbed_too(
    hub: tuple[StandIn, str],
    release: Path,
    every_log: Captured,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stand_in, endpoint = hub
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    stand_in.fault("POST", "/api/repos/create", status=403, body={"error": f"no rights for {TOKEN}"})
    with pytest.raises(HubPushError) as caught:
        push_to_hub(release, REPO, api=HfApi(endpoint=endpoint), retry=no_sleep([]))
    assert not leaks(str(caught.value))
    assert not leaks("\n".join(every_log.lines))


def test_an_unrelated_token_shaped_string_is_scrubbed() -> None:
    other = "hf_" + "Z" * 30
    assert scrub(f"saw {other} and Bearer abc.def.ghi", []) == "saw hf_*** and Bearer ***"


def test_the_release_files_hold_no_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    out = tmp_path / "release"
    publish_release(make_records(2), out, name=REPO, provenance={**PROVENANCE, "repo_id": REPO})
    for path in out.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


def test_credentials_in_the_web_base_never_reach_the_card(tmp_path: Path) -> None:
    out = tmp_path / "release"
    provenance = {**PROVENANCE, "web_base": f"https://crawler:{TOKEN}@underline.io"}
    publish_release(make_records(2), out, name=REPO, provenance=provenance)
    card = (out / "README.md").read_text(encoding="utf-8").replace("\\", "")
    assert not TOKEN_SHAPED.search(card)
    assert "crawler:" not in card
