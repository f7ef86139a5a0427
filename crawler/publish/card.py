"""The dataset card: YAML metadata derived from the schema and the written files, a body rendered from
the maintainers' Jinja template, and the maintainers' own sections carried over from the last card.

Scraped text only ever reaches the body, and only through :func:`escape_text`; the YAML holds values
this code computes. A title such as ``---`` or ``<b>|</b>`` therefore renders as text and can neither end
the front matter nor break a table.
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import pyarrow as pa
import pyarrow.compute as pc

from crawler.json_types import JsonObject, JsonValue
from crawler.publish import changes as change_files
from crawler.publish.changes import Change, file_counts
from crawler.publish.diff import DiffSummary
from crawler.publish.email_like import email_like_values
from crawler.publish.tables import DEFAULT_CONFIG, SPECS, EventConfig, TableSpec, page_derived, type_label
from crawler.schema import format_timestamp, has_value

if TYPE_CHECKING:
    from crawler.publish.charts import ChartRow

DEFAULT_TEMPLATE = Path(__file__).resolve().parents[2] / "dataset_card" / "README.template.md"
# A lecture table may carry its abstracts' lengths instead of their texts (see :func:`abstract_lengths`).
ABSTRACT_LENGTH = "abstract_length"
TOP = 20
EXAMPLE_ROWS = 5

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
_MARKER = re.compile(
    r"<!-- maintainer:start (?P<name>[\w.-]+) -->(?P<body>.*?)<!-- maintainer:end (?P=name) -->", re.DOTALL
)
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~$#+!{}])")


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
    description: str = ""

    @property
    def config_name(self) -> str:
        return self.name or self.spec.name

    @property
    def config_description(self) -> str:
        return self.description or self.spec.description


@dataclass(frozen=True)
class Changes:
    """The card's account of the release's diff: lectures added, changed (another content hash) and
    removed since ``previous_version``."""

    previous_version: str | None
    added: int
    changed: int
    removed: int

    @classmethod
    def of(cls, diff: DiffSummary, previous_version: str | None) -> Changes:
        return cls(
            previous_version=previous_version,
            added=diff.counts["added"],
            changed=diff.content_changed,
            removed=diff.counts["removed"],
        )


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


def size_category(num_rows: int) -> str:
    for bound, label in SIZE_CATEGORIES:
        if num_rows < bound:
            return label
    return "n>1T"


def escape_text(value: Any, *, limit: int | None = None, empty: str = "(none)") -> str:
    """Scraped text as inert inline markdown: one line, HTML and markdown syntax escaped, ``|`` safe."""
    if value is None:
        return empty
    text = " ".join(_CONTROL.sub("", str(value)).split())
    if not text:
        return empty
    if limit is not None and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))


def table_cell(markdown: str) -> str:
    """Our own markdown (e.g. a field description) made safe for one table cell."""
    return " ".join(markdown.split()).replace("|", "\\|")


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


class Share(TypedDict):
    label: str
    count: int
    share: str


class LabelCount(TypedDict):
    label: str
    count: int


class SessionCount(TypedDict):
    name: str
    id: str
    count: int


class KeywordCount(TypedDict):
    keyword: str
    count: int


class AbstractLength(TypedDict):
    min: int | str
    median: str
    max: int | str


class Example(TypedDict):
    lecture_id: str
    title: str
    presentation_type: str
    session_name: str


class LectureStatistics(TypedDict):
    """Escaped, template-ready statistics of the lectures table (``stats`` in the template)."""

    presentation_types: list[Share]
    sessions: list[SessionCount]
    without_session: int
    keywords: list[KeywordCount]
    abstract_length: AbstractLength
    premium: int
    with_doi: int
    first_held_at: str
    last_held_at: str
    examples: list[Example]


class DayCount(TypedDict):
    day: str
    count: int


class CoverageRow(TypedDict):
    field: str
    share: str


class AnthologyShare(TypedDict):
    linked: int
    lectures: int
    share: str


class ExtractionCounts(TypedDict):
    page: int
    listing_only: int


class EventStatistics(TypedDict):
    """One event's statistics (``per_event`` in the template)."""

    id: str
    name: str
    config: str
    lectures: int
    sessions: int
    presentation_types: list[LabelCount]
    days: list[DayCount]
    more_days: int
    without_day: int
    coverage: list[CoverageRow]
    anthology: AnthologyShare
    sources: ExtractionCounts


@dataclass(frozen=True)
class StatisticsRow:
    """What the per-event statistics read of a lecture: a few columns of the lectures table."""

    event_id: str | None
    session_id: str | None
    presentation_type: str | None
    held_at: datetime | None
    anthology_id: str | None
    withdrawn: bool
    extraction: str | None

    @classmethod
    def rows_of(cls, lectures: pa.Table) -> list[StatisticsRow]:
        names = [f.name for f in dataclasses.fields(cls)]
        return [cls(**row) for row in lectures.select(names).to_pylist()]


def _counted(values: Iterable[Any], *, limit: int | None = None) -> list[tuple[Any, int]]:
    counts = Counter(values)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], "" if item[0] is None else str(item[0])))
    return ranked[:limit] if limit is not None else ranked


def _share(count: int, total: int) -> str:
    return f"{100 * count / total:.1f}%" if total else "n/a"


def abstract_lengths(lectures: pa.Table) -> pa.ChunkedArray:
    """Each lecture's abstract length in characters: the ``abstract_length`` column when the table has
    one (a release's card reads the lengths, not the texts, of all its lectures), else counted."""
    if ABSTRACT_LENGTH in lectures.column_names:
        return lectures.column(ABSTRACT_LENGTH)
    return pc.utf8_length(lectures.column("abstract"))


def lecture_statistics(lectures: pa.Table) -> LectureStatistics:
    """Escaped, template-ready statistics of the lectures table."""
    rows = lectures.select(
        ["keywords", "presentation_type", "session_id", "session_name", "is_premium", "doi", "held_at"]
    ).to_pylist()
    total = len(rows)
    lengths = abstract_lengths(lectures)
    held = [r["held_at"] for r in rows if r["held_at"] is not None]
    session_names = {r["session_id"]: r["session_name"] for r in rows if r["session_id"] is not None}
    return {
        "presentation_types": [
            {"label": escape_text(k), "count": n, "share": _share(n, total)}
            for k, n in _counted(r["presentation_type"] for r in rows)
        ],
        "sessions": [
            {
                "name": escape_text(session_names.get(k), limit=100),
                "id": escape_text(k, limit=40),
                "count": n,
            }
            for k, n in _counted((r["session_id"] for r in rows if r["session_id"] is not None), limit=TOP)
        ],
        "without_session": sum(1 for r in rows if r["session_id"] is None),
        "keywords": [
            {"keyword": escape_text(k, limit=80), "count": n}
            for k, n in _counted((k for r in rows for k in dict.fromkeys(r["keywords"])), limit=TOP)
        ],
        "abstract_length": {
            "min": pc.min(lengths).as_py() if total else "n/a",
            "median": _number(statistics.median(lengths.to_pylist())) if total else "n/a",
            "max": pc.max(lengths).as_py() if total else "n/a",
        },
        "premium": sum(1 for r in rows if r["is_premium"]),
        "with_doi": sum(1 for r in rows if has_value(r["doi"])),
        "first_held_at": (format_timestamp(min(held)) or "n/a") if held else "n/a",
        "last_held_at": (format_timestamp(max(held)) or "n/a") if held else "n/a",
        "examples": _examples(lectures),
    }


def _examples(lectures: pa.Table) -> list[Example]:
    examples = lectures.slice(0, EXAMPLE_ROWS).select(
        ["lecture_id", "title", "presentation_type", "session_name"]
    )
    return [
        {
            "lecture_id": escape_text(r["lecture_id"], limit=40),
            "title": escape_text(r["title"], limit=100),
            "presentation_type": escape_text(r["presentation_type"]),
            "session_name": escape_text(r["session_name"], limit=60),
        }
        for r in examples.to_pylist()
    ]


def event_statistics(
    lectures: pa.Table, events: Sequence[EventConfig], coverage: object = None
) -> list[EventStatistics]:
    """Per event: its config, lecture and session counts, presentation types, lectures per day and, when
    the caller measured it, each field's coverage. Sizes are bounded (top entries only): the card does
    not grow with the number of lectures."""
    by_event: dict[str | None, list[StatisticsRow]] = {}
    for row in StatisticsRow.rows_of(lectures):
        by_event.setdefault(row.event_id, []).append(row)
    measured = coverage if isinstance(coverage, Mapping) else {}
    return [_event_statistics(e, by_event.get(e.event_id, []), measured.get(e.event_id)) for e in events]


def _event_statistics(
    event: EventConfig, group: Sequence[StatisticsRow], measured: object
) -> EventStatistics:
    days = _counted(r.held_at.date().isoformat() for r in group if r.held_at is not None)
    days.sort(key=lambda item: item[0])
    return {
        "id": escape_text(event.event_id, limit=40),
        "name": escape_text(event.event_name or event.event_id, limit=100),
        "config": event.config_name,
        "lectures": len(group),
        "sessions": len({r.session_id for r in group if r.session_id is not None}),
        "presentation_types": [
            {"label": escape_text(k, limit=60), "count": n}
            for k, n in _counted((r.presentation_type for r in group), limit=TOP)
        ],
        "days": [{"day": d, "count": n} for d, n in days[:TOP]],
        "more_days": max(0, len(days) - TOP),
        "without_day": sum(1 for r in group if r.held_at is None),
        "coverage": _coverage_rows(measured),
        "anthology": anthology_share(group),
        "sources": extraction_counts(group),
    }


def extraction_counts(rows: Iterable[StatisticsRow]) -> ExtractionCounts:
    """How many lectures carry fields read from their own page (text, related lectures...) and how many
    only what the event's listing said (``extraction`` ``api_listing``)."""
    page = listing = 0
    for row in rows:
        if page_derived(row.extraction):
            page += 1
        else:
            listing += 1
    return {"page": page, "listing_only": listing}


def anthology_share(rows: Iterable[StatisticsRow]) -> AnthologyShare:
    """How many of the lectures still on the site are linked to an Anthology paper, and their share."""
    live = [r for r in rows if not r.withdrawn]
    linked = sum(1 for r in live if has_value(r.anthology_id))
    return {"linked": linked, "lectures": len(live), "share": _share(linked, len(live))}


def _coverage_rows(measured: object) -> list[CoverageRow]:
    if not isinstance(measured, Mapping):
        return []
    out: list[CoverageRow] = []
    for field_name, share in sorted(measured.items(), key=lambda item: str(item[0])):
        if isinstance(share, int | float) and not isinstance(share, bool) and 0 <= share <= 1:
            shown = f"{100 * share:.1f}%"
        else:
            shown = escape_text(share, limit=40)
        out.append({"field": escape_text(field_name, limit=60), "share": shown})
    return out


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def _plain(value: object) -> JsonValue:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def json_safe(provenance: Mapping[str, object]) -> JsonObject:
    """Provenance as JSON-able values (dates as ISO 8601, paths and others as text)."""
    return {str(k): _plain(v) for k, v in provenance.items()}


# Provenance keys shown in their own sections rather than in the provenance table.
SECTION_KEYS = frozenset({"settings", "coverage", "sessions"})


class ProvenanceRow(TypedDict):
    key: str
    value: str


def _provenance_rows(provenance: Mapping[str, object]) -> list[ProvenanceRow]:
    def show(value: JsonValue) -> str:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        return escape_text(text, limit=200, empty="(empty)")

    return [{"key": escape_text(k), "value": show(v)} for k, v in sorted(json_safe(provenance).items())]


def bibtex(*, key: str, pretty_name: str, version: str, year: str, url: str) -> str:
    def clean(text: str) -> str:
        return re.sub(r"[{}\\`@]", "", " ".join(text.split()))

    return "\n".join(
        [
            f"@misc{{{re.sub(r'[^A-Za-z0-9_:-]', '_', key)},",
            f"  title        = {{{clean(pretty_name)}}},",
            "  author       = {{eventcrawl maintainers}},",
            f"  year         = {{{clean(year)}}},",
            f"  version      = {{{clean(version)}}},",
            f"  howpublished = {{\\url{{{clean(url)}}}}},",
            "  note         = {Lecture pages crawled from Underline;"
            " abstracts and titles are their authors' work}",
            "}",
        ]
    )


class EventSummary(TypedDict):
    id: str
    name: str
    count: int
    page: int
    listing_only: int
    first: str
    last: str


class FieldRow(TypedDict):
    name: str
    type: str
    nullable: str
    description: str


class ConfigRow(TypedDict):
    name: str
    description: str
    rows: int
    pattern: str | tuple[str, ...]
    paths: list[str]
    download_size: int
    default: bool
    fields: list[FieldRow]


class EventConfigRow(TypedDict):
    name: str
    event_id: str
    event_name: str
    rows: int
    paths: list[str]


class AuthorStatistics(TypedDict):
    rows: int
    config: bool
    with_orcid: int
    lectures_with_authors: int
    with_affiliation: int


class ReleaseText(TypedDict):
    """The release's names and provenance, escaped (part of :class:`CardContext`)."""

    name: str
    repo_id: str
    pretty_name: str
    version: str
    created: str | None
    crawl_date: str
    crawler_version: str
    web_base: str
    license_details: str
    bibtex: str
    provenance: list[ProvenanceRow]
    settings: list[ProvenanceRow]


class CardContext(ReleaseText):
    """Everything the template may use; every string that came from outside is already escaped."""

    counts: dict[str, int]
    events: list[EventSummary]
    event_names: str
    configs: list[ConfigRow]
    stats: LectureStatistics
    event_configs: list[EventConfigRow]
    per_event: list[EventStatistics]
    authors: AuthorStatistics
    anthology: AnthologyShare
    change_file: str | None
    change_files: list[str]
    changes: Changes
    change_counts: dict[Change, int]
    email_like: int
    # The charts of the release (crawler/publish/charts.py), drawn once its files are written.
    charts: list[ChartRow]


@dataclass(frozen=True)
class CardRelease:
    """What the card tells of a release: its names, version, provenance and what it was compared with."""

    name: str
    repo_id: str
    pretty_name: str
    version: str
    created: datetime
    provenance: Mapping[str, object]
    previous_version: str | None = None


def release_text(release: CardRelease) -> ReleaseText:
    """The release's names, dates and provenance, escaped for the template."""
    provenance = release.provenance
    settings = provenance.get("settings") or {}
    other = {k: v for k, v in provenance.items() if k not in SECTION_KEYS}
    return {
        "name": escape_text(release.name),
        "repo_id": release.repo_id,
        "pretty_name": escape_text(release.pretty_name),
        "version": escape_text(release.version),
        "created": format_timestamp(release.created),
        "crawl_date": escape_text(provenance.get("crawl_date"), empty="(date not recorded)"),
        "crawler_version": escape_text(provenance.get("crawler_version"), empty="(version not recorded)"),
        "web_base": escape_text(provenance.get("web_base"), empty="(site not recorded)"),
        "license_details": LICENSE_DETAILS,
        "bibtex": bibtex(
            key=f"{release.name}_{release.version}",
            pretty_name=release.pretty_name,
            version=release.version,
            year=release.version[:4],
            url=f"https://huggingface.co/datasets/{release.repo_id}",
        ),
        "provenance": _provenance_rows(other),
        "settings": _provenance_rows(settings) if isinstance(settings, Mapping) else [],
    }


def event_summaries(events: pa.Table) -> list[EventSummary]:
    """The ``events`` table's rows, escaped, dates as days."""
    return [
        {
            "id": escape_text(e["event_id"]),
            "name": escape_text(e["event_name"], limit=100),
            "count": e["lecture_count"],
            "page": e["page_lectures"],
            "listing_only": e["listing_only_lectures"],
            "first": e["first_held_at"].date().isoformat() if e["first_held_at"] else "n/a",
            "last": e["last_held_at"].date().isoformat() if e["last_held_at"] else "n/a",
        }
        for e in events.to_pylist()
    ]


def config_rows(by_name: Mapping[str, ConfigFiles]) -> list[ConfigRow]:
    """The table configs written, with their files and their fields' types and descriptions."""
    return [
        {
            "name": spec.name,
            "description": table_cell(spec.description),
            "rows": by_name[spec.name].num_rows,
            "pattern": by_name[spec.name].pattern,
            "paths": list(by_name[spec.name].paths),
            "download_size": by_name[spec.name].download_size,
            "default": spec.name == DEFAULT_CONFIG,
            "fields": [
                {
                    "name": column.name,
                    "type": type_label(arrow.type),
                    "nullable": "yes" if column.nullable else "no",
                    "description": table_cell(column.description),
                }
                for column, arrow in zip(spec.columns, spec.arrow_schema(), strict=True)
            ],
        }
        for spec in SPECS
        if spec.name in by_name
    ]


def event_config_rows(
    event_configs: Sequence[EventConfig], by_name: Mapping[str, ConfigFiles]
) -> list[EventConfigRow]:
    return [
        {
            "name": e.config_name,
            "event_id": escape_text(e.event_id, limit=40),
            "event_name": escape_text(e.event_name or e.event_id, limit=100),
            "rows": by_name[e.config_name].num_rows,
            "paths": list(by_name[e.config_name].paths),
        }
        for e in event_configs
    ]


def author_statistics(tables: Mapping[str, pa.Table], *, config: bool) -> AuthorStatistics:
    authors, lectures = tables["authors"], tables[DEFAULT_CONFIG]
    return {
        "rows": authors.num_rows,
        "config": config,
        "with_orcid": sum(1 for o in authors.column("orcid").to_pylist() if has_value(o)),
        "lectures_with_authors": sum(1 for a in lectures.column("authors").to_pylist() if has_value(a)),
        "with_affiliation": sum(1 for a in authors.column("affiliations").to_pylist() if has_value(a)),
    }


def card_context(
    *,
    release: CardRelease,
    configs: Sequence[ConfigFiles],
    tables: Mapping[str, pa.Table],
    diff: DiffSummary,
    event_configs: Sequence[EventConfig] = (),
    change_files: Sequence[str] = (),
    lecture_email_like: int | None = None,
) -> CardContext:
    """Everything the template may use; every string that came from outside is already escaped.

    The changes are the release's ``diff`` against ``release.previous_version``, the one its change file
    holds. ``tables["lectures"]`` may hold only the columns the statistics read; ``lecture_email_like`` is
    then the count of e-mail-like values in the whole lectures table (counted as it was written)."""
    lectures = tables[DEFAULT_CONFIG]
    by_name = {c.config_name: c for c in configs}
    events = tables["events"]
    event_names = ", ".join(
        escape_text(e["event_name"] or e["event_id"], limit=100) for e in events.to_pylist()
    )
    return {
        **release_text(release),
        # A table left out of the release while empty still has its count: 0.
        "counts": {**dict.fromkeys(tables, 0), **{c.config_name: c.num_rows for c in configs}},
        "events": event_summaries(events),
        "event_names": event_names or "no event",
        "configs": config_rows(by_name),
        "stats": lecture_statistics(lectures),
        "event_configs": event_config_rows(event_configs, by_name),
        "per_event": event_statistics(lectures, event_configs, release.provenance.get("coverage")),
        "authors": author_statistics(tables, config="authors" in by_name),
        "anthology": anthology_share(StatisticsRow.rows_of(lectures)),
        "change_file": change_files[-1] if change_files else None,
        "change_files": list(change_files),
        "changes": Changes.of(diff, release.previous_version),
        "change_counts": file_counts(diff),
        "email_like": sum(
            email_like_values(table)
            for config, table in tables.items()
            if config != DEFAULT_CONFIG or lecture_email_like is None
        )
        + (lecture_email_like or 0),
        "charts": [],
    }


def maintainer_sections(card_text: str) -> dict[str, str]:
    """Maintainer-written sections of a card, by name (the text between the markers)."""
    return {m.group("name"): m.group("body") for m in _MARKER.finditer(card_text)}


def merge_maintainer_sections(card_text: str, previous: Mapping[str, str]) -> str:
    """Put the previous card's maintainer sections into the new card; keep ones the template dropped."""
    used: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in previous:
            return match.group(0)
        used.add(name)
        return f"<!-- maintainer:start {name} -->{previous[name]}<!-- maintainer:end {name} -->"

    merged = _MARKER.sub(replace, card_text)
    orphans = [name for name in previous if name not in used]
    for name in orphans:
        merged = merged.rstrip("\n") + (
            f"\n\n<!-- maintainer:start {name} -->{previous[name]}<!-- maintainer:end {name} -->\n"
        )
    return merged


def render_card(
    *,
    template: Path,
    data: Any,
    context: Mapping[str, Any],
    previous_card: str | None = None,
) -> str:
    """Render the template as ``DatasetCard.from_template`` does (the metadata's fields and ``card_data``,
    the YAML, beside ``context``), but strictly: a name, attribute or key the card does not define is a
    :class:`~crawler.publish.card_template.CardTemplateError`, not an empty string. Then carry the
    maintainer sections over."""
    from huggingface_hub import DatasetCard

    from crawler.publish.card_template import render_template

    values = {**data.to_dict(), **context, "card_data": data.to_yaml()}
    card = DatasetCard(render_template(template, values))
    text = str(card)
    if previous_card:
        text = merge_maintainer_sections(text, maintainer_sections(previous_card))
    return text if text.endswith("\n") else text + "\n"
