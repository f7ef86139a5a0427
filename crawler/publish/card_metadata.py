"""The dataset card's YAML metadata: license, task and size categories, each config's data files and
its ``DatasetInfo`` (features, rows, sizes), all derived from the schema and the written files. The YAML
holds only values this code computes, never scraped text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawler.publish import changes as change_files
from crawler.publish.lint import size_category
from crawler.publish.tables import DEFAULT_CONFIG, TableSpec

LICENSE = "other"
LICENSE_NAME = "mixed-rights-compilation"
LICENSE_DETAILS = (
    "Titles, abstracts and keywords remain the copyright of their authors and publishers and are"
    " reproduced as published on Underline; the compilation (selection, structure, derived fields) is"
    " the dataset maintainers'. Check the rights of the original works before reuse."
)
TASK_CATEGORIES = ("text-retrieval", "text-classification")
TASK_IDS = ("document-retrieval", "topic-classification")
TAGS = ("conference-talks", "scientific-abstracts", "underline", "web-crawl")


@dataclass(frozen=True)
class ConfigFiles:
    """What was written for one config: enough to declare it in the card and the manifest.

    An event's config has the ``lectures`` spec, its own ``name`` and, as ``pattern``, its files' paths.
    """

    spec: TableSpec
    paths: tuple[str, ...]
    num_rows: int
    num_bytes: int  # Arrow size in memory, as datasets reports it
    download_size: int  # Parquet bytes on disk
    pattern: str | tuple[str, ...]
    name: str = ""

    @property
    def config_name(self) -> str:
        return self.name or self.spec.name


def _info(features: Any, num_rows: int, num_bytes: int, download_size: int) -> Any:
    """A config's ``DatasetInfo``: its features, its one split's rows and its sizes."""
    from datasets.info import DatasetInfo
    from datasets.splits import SplitDict, SplitInfo

    from crawler.publish.parquet import SPLIT

    splits = SplitDict({SPLIT: SplitInfo(name=SPLIT, num_bytes=num_bytes, num_examples=num_rows)})
    return DatasetInfo(features=features, splits=splits, download_size=download_size, dataset_size=num_bytes)


def changes_info(root: Path, paths: Sequence[str]) -> Any:
    """The ``changes`` config's ``DatasetInfo``: every release's change file, one row per lecture and
    release, its features, rows and sizes read from the files' footers. None while the files hold no row:
    the config is declared only then (datasets cannot load a split without rows)."""
    import pyarrow.parquet as pq
    from datasets import Features

    footers = [pq.read_metadata(root / path) for path in paths]
    rows = sum(f.num_rows for f in footers)
    if not rows:
        return None
    # Uncompressed Parquet size, from the footers.
    num_bytes = sum(f.row_group(i).total_byte_size for f in footers for i in range(f.num_row_groups))
    features = Features.from_arrow_schema(change_files.arrow_schema())
    return _info(features, rows, num_bytes, sum((root / path).stat().st_size for path in paths))


def card_data(*, pretty_name: str, configs: Sequence[ConfigFiles], changes: Any = None) -> Any:
    """The card's YAML: every count, path and feature comes from the written files and the schema. Every
    config's files are Parquet files under ``data/`` or ``changes/``: the charts under ``assets/`` are in
    none. ``changes`` is the ``changes`` config's ``DatasetInfo`` (:func:`changes_info`), None while it
    is not declared."""
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    from crawler.publish.parquet import SPLIT

    default_rows = next(c.num_rows for c in configs if c.spec.name == DEFAULT_CONFIG)
    data = DatasetCardData(
        pretty_name=pretty_name,
        language=["en"],
        license=LICENSE,
        license_name=LICENSE_NAME,
        license_details=LICENSE_DETAILS,
        annotations_creators=["no-annotation"],
        language_creators=["found"],
        multilinguality=["monolingual"],
        size_categories=[size_category(default_rows)],
        source_datasets=["original"],
        task_categories=list(TASK_CATEGORIES),
        task_ids=list(TASK_IDS),
        tags=list(TAGS),
    )
    MetadataConfigs(
        {
            c.config_name: {
                "data_files": [
                    {"split": SPLIT, "path": c.pattern if isinstance(c.pattern, str) else list(c.pattern)}
                ],
                **({"default": True} if c.config_name == DEFAULT_CONFIG else {}),
            }
            for c in configs
        }
        | (
            {}
            if changes is None
            else {change_files.CONFIG: {"data_files": [{"split": SPLIT, "path": change_files.PATTERN}]}}
        )
    ).to_dataset_card_data(data)
    DatasetInfosDict(
        {c.config_name: _info(c.spec.features(), c.num_rows, c.num_bytes, c.download_size) for c in configs}
        | ({} if changes is None else {change_files.CONFIG: changes})
    ).to_dataset_card_data(data)
    return data
