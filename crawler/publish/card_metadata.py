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


@dataclass(frozen=True)
class ChangesConfig:
    """The ``changes`` config: every release's change file, one row per lecture and release. Declared only
    while the files hold a row (datasets cannot load a split without rows)."""

    num_rows: int
    num_bytes: int  # uncompressed Parquet size, from the files' footers
    download_size: int

    @classmethod
    def of(cls, root: Path, paths: Sequence[str]) -> ChangesConfig | None:
        """The change files' rows and sizes, read from their footers; None while they hold no row."""
        import pyarrow.parquet as pq

        footers = [pq.read_metadata(root / path) for path in paths]
        rows = sum(f.num_rows for f in footers)
        if not rows:
            return None
        return cls(
            num_rows=rows,
            num_bytes=sum(f.row_group(i).total_byte_size for f in footers for i in range(f.num_row_groups)),
            download_size=sum((root / path).stat().st_size for path in paths),
        )


def changes_info(changes: ChangesConfig) -> Any:
    """The ``changes`` config's ``DatasetInfo``: the change files' features, rows and sizes."""
    from datasets import Features
    from datasets.info import DatasetInfo
    from datasets.splits import SplitDict, SplitInfo

    from crawler.publish.parquet import SPLIT

    return DatasetInfo(
        features=Features.from_arrow_schema(change_files.arrow_schema()),
        splits=SplitDict(
            {SPLIT: SplitInfo(name=SPLIT, num_bytes=changes.num_bytes, num_examples=changes.num_rows)}
        ),
        download_size=changes.download_size,
        dataset_size=changes.num_bytes,
    )


def card_data(
    *, pretty_name: str, configs: Sequence[ConfigFiles], changes: ChangesConfig | None = None
) -> Any:
    """The card's YAML: every count, path and feature comes from the written files and the schema. Every
    config's files are Parquet files under ``data/`` or ``changes/``: the charts under ``assets/`` are in
    none."""
    from datasets.info import DatasetInfo, DatasetInfosDict
    from datasets.splits import SplitDict, SplitInfo
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
        {
            c.config_name: DatasetInfo(
                features=c.spec.features(),
                splits=SplitDict(
                    {SPLIT: SplitInfo(name=SPLIT, num_bytes=c.num_bytes, num_examples=c.num_rows)}
                ),
                download_size=c.download_size,
                dataset_size=c.num_bytes,
            )
            for c in configs
        }
        | ({} if changes is None else {change_files.CONFIG: changes_info(changes)})
    ).to_dataset_card_data(data)
    return data
