"""lint_card: a published card is clean, and each kind of bad card is caught with its own code."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from crawler.publish.lint import LintProblem, errors, lint_card, split_front_matter
from crawler.publish.release import publish_release
from tests.test_publish_parquet import PROVENANCE, make_records


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lint") / "release"
    publish_release(make_records(), out, name="emnlp-2025", provenance=PROVENANCE)
    return out


@pytest.fixture(scope="module")
def good(release: Path) -> tuple[dict[str, Any], str]:
    parts = split_front_matter((release / "README.md").read_text(encoding="utf-8"))
    assert parts is not None
    return yaml.safe_load(parts[0]), parts[1]


def card(meta: dict[str, Any], body: str) -> str:
    return f"---\n{yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)}---\n{body}"


def codes(problems: list[LintProblem]) -> list[str]:
    return sorted(p.code for p in errors(problems))


def info(meta: dict[str, Any], config: str) -> dict[str, Any]:
    found: dict[str, Any] = next(i for i in meta["dataset_info"] if i["config_name"] == config)
    return found


def test_the_published_card_is_clean(release: Path) -> None:
    assert lint_card((release / "README.md").read_text(encoding="utf-8"), release) == []


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("# no metadata\n", "front-matter"),
        ("---\nlicense: mit\n# never closed\n", "front-matter"),
        ("---\nlicense: [mit\n---\nbody\n", "yaml-invalid"),
        ("---\nlicense: mit\nlicense: apache-2.0\n---\nbody\n", "yaml-invalid"),
        ("---\n- a list\n---\nbody\n", "yaml-not-mapping"),
    ],
)
def test_broken_front_matter(release: Path, text: str, code: str) -> None:
    assert codes(lint_card(text, release)) == [code]


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda meta: meta.__setitem__(key, value)


def _first_config_path(path: str) -> Callable[[dict[str, Any]], None]:
    def edit(meta: dict[str, Any]) -> None:
        meta["configs"][0]["data_files"][0]["path"] = path

    return edit


def _feature_dtype(meta: dict[str, Any]) -> None:
    info(meta, "lectures")["features"][0]["dtype"] = "int64"


def _missing_feature(meta: dict[str, Any]) -> None:
    info(meta, "sessions")["features"].pop()


def _num_examples(meta: dict[str, Any]) -> None:
    info(meta, "events")["splits"][0]["num_examples"] = 3


def _two_defaults(meta: dict[str, Any]) -> None:
    meta["configs"][0]["default"] = True


def _unknown_info_config(meta: dict[str, Any]) -> None:
    info(meta, "events")["config_name"] = "speakers"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (_set("license", "cc-by-4.0-ish"), ["license-unknown"]),
        (_set("license_name", "Mixed Rights!"), ["license-name"]),
        (_set("size_categories", ["tiny"]), ["size-categories"]),
        (_set("size_categories", ["1K<n<10K"]), ["size-categories"]),
        (_set("task_categories", ["text-retrieval", "lecture-mining"]), ["task-categories-unknown"]),
        (_set("task_ids", ["document-retrieval", "talk-ranking"]), ["task-ids-unknown"]),
        (_set("language", ["english"]), ["language-invalid"]),
        (_set("licence", "mit"), ["unknown-key"]),
        (_set("pretty_name", "two\nlines"), ["pretty-name"]),
        (_set("configs", {"lectures": "data"}), ["configs-invalid"]),
        (_first_config_path("data/events/missing-*.parquet"), ["data-files-missing", "splits-mismatch"]),
        (_first_config_path("../elsewhere/*.parquet"), ["data-files-outside", "splits-mismatch"]),
        (_feature_dtype, ["features-mismatch"]),
        (_missing_feature, ["features-mismatch"]),
        (_num_examples, ["splits-mismatch"]),
        (_two_defaults, ["configs-default"]),
        (_unknown_info_config, ["dataset-info-config"]),
        (_first_config_path("assets/*"), ["data-files-not-parquet", "splits-mismatch"]),
        (_first_config_path("*"), ["data-files-not-parquet", "splits-mismatch"]),
    ],
)
def test_each_bad_card_kind_is_caught(
    release: Path,
    good: tuple[dict[str, Any], str],
    edit: Callable[[dict[str, Any]], None],
    expected: list[str],
) -> None:
    meta, body = copy.deepcopy(good[0]), good[1]
    edit(meta)
    assert codes(lint_card(card(meta, body), release)) == expected


def test_other_license_without_a_name(release: Path, good: tuple[dict[str, Any], str]) -> None:
    meta, body = copy.deepcopy(good[0]), good[1]
    del meta["license_name"], meta["license_details"]
    problems = lint_card(card(meta, body), release)
    assert codes(problems) == ["license-name"]
    assert [p.code for p in problems if p.severity == "warning"] == ["license-text"]


def test_a_data_file_removed_after_the_card_was_written(tmp_path: Path) -> None:
    out = tmp_path / "release"
    publish_release(make_records(), out, name="emnlp-2025", provenance=PROVENANCE)
    (out / "data" / "sessions" / "train-00000-of-00001.parquet").unlink()
    problems = lint_card((out / "README.md").read_text(encoding="utf-8"), out)
    assert [str(p) for p in errors(problems)] == [
        "error: data-files-missing: sessions/train: nothing matches 'data/sessions/train-*.parquet'",
        "error: splits-mismatch: sessions/train: declares 3 examples, files hold 0",
    ]


def test_problem_text() -> None:
    assert str(LintProblem("x", "y")) == "error: x: y"
    assert str(LintProblem("x", "y", "warning")) == "warning: x: y"


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("![Lectures per event](assets/lectures-per-event.svg)", []),
        ("![Lectures per event](assets/no-such-chart.svg)", ["image-missing"]),
        ("![Lectures per event](../outside.svg)", ["image-missing"]),
        ("![](assets/lectures-per-event.svg)", ["image-alt"]),
        ("![A remote picture](https://example.org/x.svg)", []),
    ],
)
def test_every_image_the_card_shows_is_a_file_of_the_release_with_alt_text(
    release: Path, good: tuple[dict[str, Any], str], image: str, expected: list[str]
) -> None:
    meta, body = good
    assert codes(lint_card(card(meta, body + "\n" + image + "\n"), release)) == expected
