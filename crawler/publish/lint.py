"""Checks of a dataset card against what the Hugging Face Hub accepts, and against the files it declares.

The lists below are copied from the Hub's documentation (license identifiers) and from the task
taxonomy the Hub filters datasets by; update them when the Hub adds entries.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import pyarrow.parquet as pq
import yaml

# The Hub's size categories, each with the row count it stays under.
SIZE_CATEGORIES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
    (1_000_000_000, "100M<n<1B"),
    (10_000_000_000, "1B<n<10B"),
    (100_000_000_000, "10B<n<100B"),
    (1_000_000_000_000, "100B<n<1T"),
)


def size_category(num_rows: int) -> str:
    """The Hub's size category of a config of ``num_rows`` rows."""
    for bound, label in SIZE_CATEGORIES:
        if num_rows < bound:
            return label
    return "n>1T"


Severity = Literal["error", "warning"]

# PyYAML's safe loader in C (libyaml) where PyYAML was built with it: the same documents for the same
# text, some ten times faster than the pure Python loader, which spent more than a second on a card.
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@contextlib.contextmanager
def card_yaml_read_in_c() -> Iterator[None]:
    """Within this block, ``yaml.safe_load`` reads with :data:`SAFE_LOADER`: ``huggingface_hub`` reads a
    card's front matter with it (a ``DatasetCard``, and ``datasets`` resolving a release's configs), and
    a release is read several times before it is swapped in."""
    safe_load = yaml.safe_load
    yaml.safe_load = functools.partial(yaml.load, Loader=SAFE_LOADER)
    try:
        yield
    finally:
        yaml.safe_load = safe_load


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


HUB_LICENSES = _words(
    """apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m bigscience-bloom-rail-1.0
    bigcode-openrail-m afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause bsd-3-clause bsd-3-clause-clear c-uda cc
    cc0-1.0 cc-by-2.0 cc-by-2.5 cc-by-3.0 cc-by-4.0 cc-by-sa-3.0 cc-by-sa-4.0 cc-by-nc-2.0 cc-by-nc-3.0
    cc-by-nc-4.0 cc-by-nd-4.0 cc-by-nc-nd-3.0 cc-by-nc-nd-4.0 cc-by-nc-sa-2.0 cc-by-nc-sa-3.0
    cc-by-nc-sa-4.0 cdla-sharing-1.0 cdla-permissive-1.0 cdla-permissive-2.0 wtfpl ecl-2.0 epl-1.0 epl-2.0
    etalab-2.0 eupl-1.1 agpl-3.0 gfdl gpl gpl-2.0 gpl-3.0 lgpl lgpl-2.1 lgpl-3.0 isc lppl-1.3c ms-pl mpl-2.0
    odc-by odbl openrail++ osl-3.0 postgresql ofl-1.1 ncsa unlicense zlib pddl lgpl-lr
    deepfloyd-if-license llama2 gemma unknown
    other"""
)
HUB_TASK_CATEGORIES = _words(
    """text-classification token-classification table-question-answering question-answering
    zero-shot-classification translation summarization feature-extraction text-generation text2text-generation
    fill-mask sentence-similarity text-to-speech text-to-audio automatic-speech-recognition audio-to-audio
    audio-classification voice-activity-detection depth-estimation image-classification object-detection
    image-segmentation text-to-image image-to-text image-to-image image-to-video
    unconditional-image-generation video-classification reinforcement-learning robotics
    tabular-classification tabular-regression
    tabular-to-text table-to-text multiple-choice text-ranking text-retrieval time-series-forecasting
    text-to-video visual-question-answering zero-shot-image-classification graph-ml mask-generation
    zero-shot-object-detection text-to-3d image-to-3d image-feature-extraction video-text-to-text
    other"""
)
HUB_TASK_IDS = _words(
    """acceptability-classification entity-linking-classification fact-checking intent-classification
    language-identification multi-class-classification multi-label-classification
    multi-input-text-classification natural-language-inference semantic-similarity-classification
    sentiment-classification topic-classification semantic-similarity-scoring sentiment-scoring
    sentiment-analysis hate-speech-detection text-scoring named-entity-recognition part-of-speech parsing
    lemmatization word-sense-disambiguation coreference-resolution extractive-qa open-domain-qa
    closed-domain-qa news-articles-summarization news-articles-headline-generation dialogue-modeling
    dialogue-generation
    conversational language-modeling text-simplification explanation-generation abstractive-qa
    open-domain-abstractive-qa open-book-qa closed-book-qa slot-filling masked-language-modeling
    keyword-spotting speaker-identification audio-intent-classification audio-emotion-recognition
    audio-language-identification multi-label-image-classification multi-class-image-classification
    face-detection vehicle-detection instance-segmentation semantic-segmentation panoptic-segmentation
    image-captioning image-inpainting image-colorization super-resolution grasping task-planning
    tabular-multi-class-classification tabular-multi-label-classification tabular-single-column-regression
    rdf-to-text multiple-choice-qa multiple-choice-coreference-resolution document-retrieval
    utterance-retrieval entity-linking-retrieval fact-checking-retrieval univariate-time-series-forecasting
    multivariate-time-series-forecasting visual-question-answering document-question-answering
    pose-estimation"""
)
SIZE_CATEGORY_VALUES = frozenset([*(label for _, label in SIZE_CATEGORIES), "n>1T", "unknown", "other"])
# The dataset card metadata specification; anything else is a typo the Hub would not act on.
KNOWN_KEYS = _words(
    """language license license_name license_link license_details tags annotations_creators language_creators
    language_details pretty_name size_categories source_datasets task_categories task_ids paperswithcode_id
    configs dataset_info extra_gated_fields extra_gated_prompt extra_gated_heading extra_gated_description
    extra_gated_button_content train-eval-index multilinguality viewer thumbnail"""
)
LICENSE_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
LANGUAGE = re.compile(r"^([a-z]{2,3}(-[A-Za-z0-9]{2,8})*|code|multilingual)$")


@dataclass(frozen=True)
class LintProblem:
    code: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"{self.severity}: {self.code}: {self.message}"


def _duplicate_keys(node: Any) -> list[str]:
    """Keys repeated in any mapping of a composed YAML tree (the Hub's parser refuses them)."""
    found: list[str] = []
    if isinstance(node, yaml.MappingNode):
        keys = [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
        found += sorted({k for k in keys if keys.count(k) > 1})
        for key, value in node.value:
            found += _duplicate_keys(key) + _duplicate_keys(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            found += _duplicate_keys(item)
    return found


def split_front_matter(card_text: str) -> tuple[str, str] | None:
    """(YAML, body) the way the Hub splits a card, or None when it has no front matter."""
    from huggingface_hub.repocard import REGEX_YAML_BLOCK

    if not card_text.startswith("---\n"):
        return None
    match = REGEX_YAML_BLOCK.search(card_text)
    if match is None:
        return None
    return match.group(2), card_text[match.end() :]


def errors(problems: Iterable[LintProblem]) -> list[LintProblem]:
    return [p for p in problems if p.severity == "error"]


def lint_card(card_text: str, data_dir: Path) -> list[LintProblem]:
    """Problems the Hub would reject, plus mismatches between the metadata and the files in ``data_dir``.

    ``data_dir`` is the release root: the directory ``configs`` paths are relative to.
    """
    parts = split_front_matter(card_text)
    if parts is None:
        return [LintProblem("front-matter", "the card does not start with a `---` delimited YAML block")]
    try:
        duplicates = _duplicate_keys(yaml.compose(parts[0], Loader=SAFE_LOADER))
        meta = yaml.load(parts[0], Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        return [LintProblem("yaml-invalid", f"the front matter is not valid YAML: {exc}")]
    if duplicates:
        return [LintProblem("yaml-invalid", f"duplicate keys in the front matter: {duplicates}")]
    if not isinstance(meta, dict):
        return [LintProblem("yaml-not-mapping", "the front matter is not a YAML mapping")]
    problems = [
        *_check_keys(meta),
        *_check_license(meta),
        *_check_vocabulary(meta, "task_categories", HUB_TASK_CATEGORIES),
        *_check_vocabulary(meta, "task_ids", HUB_TASK_IDS),
        *_check_language(meta),
        *_check_pretty_name(meta),
    ]
    configs = _check_configs(meta, data_dir, problems)
    if configs is not None:
        _check_dataset_info(meta, configs, data_dir, problems)
        _check_size(meta, configs, problems)
    if not parts[1].strip():
        problems.append(LintProblem("empty-body", "the card has no text after the metadata", "warning"))
    problems.extend(_check_images(parts[1], data_dir))
    return problems


_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<path>[^)\s]+)\)")


def _check_images(body: str, data_dir: Path) -> list[LintProblem]:
    """Every image the card shows by relative path is a file of the release, with alt text."""
    problems = []
    for match in _IMAGE.finditer(body):
        path = match.group("path")
        if "://" in path:
            continue
        posix = PurePosixPath(path)
        if posix.is_absolute() or ".." in posix.parts or not (data_dir / path).is_file():
            problems.append(
                LintProblem("image-missing", f"the card shows {path!r}, not a file of the release")
            )
        if not match.group("alt").strip():
            problems.append(LintProblem("image-alt", f"the card shows {path!r} without alt text"))
    return problems


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _check_keys(meta: Mapping[str, Any]) -> list[LintProblem]:
    return [
        LintProblem("unknown-key", f"top-level key {key!r} is not in the dataset card metadata specification")
        for key in meta
        if key not in KNOWN_KEYS
    ]


def _check_license(meta: Mapping[str, Any]) -> list[LintProblem]:
    if "license" not in meta:
        return [LintProblem("license-missing", "no `license`")]
    problems = [
        LintProblem("license-unknown", f"license {value!r} is not a Hub license identifier")
        for value in _as_list(meta["license"])
        if value not in HUB_LICENSES
    ]
    if "other" in _as_list(meta["license"]):
        name = meta.get("license_name")
        if not isinstance(name, str) or not LICENSE_NAME.match(name) or name == "other":
            problems.append(
                LintProblem("license-name", "license `other` needs a `license_name` like `my-license-1.0`")
            )
        if not meta.get("license_link") and not meta.get("license_details"):
            problems.append(
                LintProblem(
                    "license-text", "license `other` needs `license_link` or `license_details`", "warning"
                )
            )
    return problems


def _check_vocabulary(meta: Mapping[str, Any], key: str, allowed: frozenset[str]) -> list[LintProblem]:
    return [
        LintProblem(f"{key.replace('_', '-')}-unknown", f"{key} value {value!r} is not one the Hub knows")
        for value in _as_list(meta.get(key, []))
        if value not in allowed
    ]


def _check_language(meta: Mapping[str, Any]) -> list[LintProblem]:
    return [
        LintProblem("language-invalid", f"language {value!r} is not an ISO 639 code")
        for value in _as_list(meta.get("language", []))
        if not isinstance(value, str) or not LANGUAGE.match(value)
    ]


def _check_pretty_name(meta: Mapping[str, Any]) -> list[LintProblem]:
    name = meta.get("pretty_name")
    if name is None:
        return [LintProblem("pretty-name", "no `pretty_name`", "warning")]
    if not isinstance(name, str) or not name.strip() or "\n" in name:
        return [LintProblem("pretty-name", "`pretty_name` must be one line of text")]
    return []


def _resolve(data_dir: Path, pattern: str) -> list[Path] | None:
    """Files matching a data_files pattern inside data_dir; None for a path escaping it."""
    posix = PurePosixPath(pattern)
    if posix.is_absolute() or ".." in posix.parts or "://" in pattern:
        return None
    return sorted(p for p in data_dir.glob(pattern) if p.is_file())


def _config_paths(config: Mapping[str, Any]) -> dict[str, list[str]] | None:
    files = config.get("data_files")
    if isinstance(files, str):
        return {"train": [files]}
    if isinstance(files, list) and all(isinstance(f, str) for f in files):
        return {"train": list(files)}
    if isinstance(files, list) and all(isinstance(f, dict) for f in files):
        out: dict[str, list[str]] = {}
        for entry in files:
            split, path = entry.get("split"), entry.get("path")
            if not isinstance(split, str) or not isinstance(path, str | list):
                return None
            out.setdefault(split, []).extend(_as_list(path))
        return out
    return None


def _check_configs(
    meta: Mapping[str, Any], data_dir: Path, problems: list[LintProblem]
) -> dict[str, dict[str, list[Path]]] | None:
    """Config name -> split -> files; problems for malformed configs and patterns matching nothing.

    None when ``configs`` is not a list of mappings: nothing can be checked against the files then.
    """
    raw = meta.get("configs")
    if raw is None:
        return {}
    if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
        problems.append(LintProblem("configs-invalid", "`configs` must be a list of mappings"))
        return None
    resolved: dict[str, dict[str, list[Path]]] = {}
    defaults = [
        c.get("config_name") for c in raw if c.get("default") is True or c.get("config_name") == "default"
    ]
    if len(raw) > 1 and len(defaults) != 1:
        problems.append(
            LintProblem("configs-default", f"expected exactly one default config, found {defaults}")
        )
    for config in raw:
        name = config.get("config_name")
        if not isinstance(name, str) or not name:
            problems.append(LintProblem("configs-invalid", "a config has no `config_name`"))
            continue
        if name in resolved:
            problems.append(LintProblem("configs-invalid", f"config {name!r} is declared twice"))
            continue
        splits = _config_paths(config)
        if splits is None:
            problems.append(LintProblem("configs-invalid", f"config {name!r} has malformed `data_files`"))
            continue
        resolved[name] = {}
        for split, patterns in splits.items():
            files: list[Path] = []
            for pattern in patterns:
                matched = _resolve(data_dir, pattern)
                if matched is None:
                    problems.append(
                        LintProblem("data-files-outside", f"{name}/{split}: {pattern!r} leaves the repo")
                    )
                elif not matched:
                    problems.append(
                        LintProblem("data-files-missing", f"{name}/{split}: nothing matches {pattern!r}")
                    )
                else:
                    files.extend(matched)
            other = [f.relative_to(data_dir).as_posix() for f in files if f.suffix != ".parquet"]
            if other:
                problems.append(
                    LintProblem("data-files-not-parquet", f"{name}/{split}: {patterns!r} reach {other[:3]}")
                )
            resolved[name][split] = [f for f in files if f.suffix == ".parquet"]
    return resolved


def _rows(files: Iterable[Path]) -> int:
    return sum(pq.read_metadata(f).num_rows for f in files)


def _check_dataset_info(
    meta: Mapping[str, Any],
    configs: Mapping[str, Mapping[str, list[Path]]],
    data_dir: Path,
    problems: list[LintProblem],
) -> None:
    from datasets import Features

    raw = meta.get("dataset_info")
    if raw is None:
        return
    infos = _as_list(raw)
    if not all(isinstance(i, dict) for i in infos):
        problems.append(
            LintProblem("dataset-info-invalid", "`dataset_info` must be a mapping or a list of them")
        )
        return
    for info in infos:
        name = info.get("config_name", "default")
        if name not in configs:
            problems.append(LintProblem("dataset-info-config", f"dataset_info for unknown config {name!r}"))
            continue
        try:
            declared = Features._from_yaml_list(info.get("features", []))
        except (TypeError, ValueError, KeyError) as exc:
            problems.append(LintProblem("features-invalid", f"{name}: features do not parse: {exc}"))
            continue
        # One problem per config: a config's files (e.g. one per event) share one writer and one schema.
        mismatched = []
        for path in sorted({f for files in configs[name].values() for f in files}):
            found = Features.from_arrow_schema(pq.read_schema(path).remove_metadata())
            if found != declared:
                mismatched.append((path, found))
        if mismatched:
            path, found = mismatched[0]
            more = f" (and {len(mismatched) - 1} more file(s))" if len(mismatched) > 1 else ""
            problems.append(
                LintProblem(
                    "features-mismatch",
                    f"{name}: {path.relative_to(data_dir).as_posix()}{more} has features {found},"
                    f" declared {declared}",
                )
            )
        for split in info.get("splits") or []:
            split_name = split.get("name")
            if split_name not in configs[name]:
                problems.append(
                    LintProblem("splits-mismatch", f"{name}: split {split_name!r} has no data files")
                )
                continue
            actual = _rows(configs[name][split_name])
            if split.get("num_examples") != actual:
                problems.append(
                    LintProblem(
                        "splits-mismatch",
                        f"{name}/{split_name}: declares {split.get('num_examples')} examples,"
                        f" files hold {actual}",
                    )
                )


def _check_size(
    meta: Mapping[str, Any], configs: Mapping[str, Mapping[str, list[Path]]], problems: list[LintProblem]
) -> None:
    values = _as_list(meta.get("size_categories", []))
    if not values or values == [None]:
        problems.append(LintProblem("size-categories", "no `size_categories`", "warning"))
        return
    bad = [v for v in values if v not in SIZE_CATEGORY_VALUES]
    if bad:
        problems.append(LintProblem("size-categories", f"invalid size_categories {bad}"))
        return
    default = _default_config(meta, configs)
    if default is None:
        return
    rows = _rows(f for files in configs[default].values() for f in files)
    expected = size_category(rows)
    if values != [expected]:
        problems.append(
            LintProblem("size-categories", f"size_categories {values} but config {default!r} has {rows} rows")
        )


def _default_config(meta: Mapping[str, Any], configs: Mapping[str, Mapping[str, list[Path]]]) -> str | None:
    for config in meta.get("configs") or []:
        if (
            isinstance(config, dict)
            and config.get("default") is True
            and config.get("config_name") in configs
        ):
            return str(config["config_name"])
    if len(configs) == 1:
        return next(iter(configs))
    return "default" if "default" in configs else None
