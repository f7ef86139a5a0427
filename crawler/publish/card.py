"""The dataset card: the context its template is rendered with (the release's names and provenance,
its tables, configs, statistics and changes, every string from outside already escaped), the body
rendered from the maintainers' Jinja template beside the YAML metadata, and the maintainers' own sections
carried over from the last card.

The template is rendered strictly: every name it uses must be one the card defines. A name the card does
not define (``{{ no_such_thing }}``, ``{{ x.y }}`` on an undefined ``x``) would render as nothing and leave
a hole in the published card, so it is refused twice: by :func:`undefined_names` before anything is read
or written (the names are known from the template's text alone), and while rendering (an attribute or key
a value lacks, ``{{ stats.no_such_field }}``, shows only then), with :class:`CardTemplateError` naming the
template, the name and its line.

The YAML is :mod:`crawler.publish.card_metadata`'s, the statistics :mod:`crawler.publish.card_statistics`'s;
scraped text only ever reaches the body through :func:`crawler.publish.card_statistics.escape_text`.
"""

from __future__ import annotations

import functools
import json
import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, TypedDict

import jinja2
import pyarrow as pa
from jinja2 import meta, nodes

from crawler.app.arguments import ArgumentError
from crawler.json_types import JsonObject, JsonValue
from crawler.privacy.email_like import email_like_values
from crawler.publish.card_metadata import LICENSE_DETAILS, ConfigFiles
from crawler.publish.card_statistics import (
    STATISTICS_COLUMNS,
    EventStatistics,
    anthology_share,
    author_statistics,
    escape_text,
    event_name,
    event_statistics,
    lecture_statistics,
    slides_statistics,
    table_cell,
    transcript_statistics,
)
from crawler.publish.changes import Change, file_counts
from crawler.publish.charts import HistoryEntry
from crawler.publish.diff import DiffSummary
from crawler.publish.lint import card_yaml_read_in_c
from crawler.publish.slides import SlidesTable
from crawler.publish.tables import (
    DEFAULT_CONFIG,
    SLIDES,
    SPECS,
    TRANSCRIPTS,
    EventConfig,
    TableSpec,
    type_label,
)
from crawler.publish.transcripts import TranscriptsTable
from crawler.schema import format_timestamp

DEFAULT_TEMPLATE = Path(__file__).resolve().parents[2] / "dataset_card" / "README.template.md"
_MARKER = re.compile(
    r"<!-- maintainer:start (?P<name>[\w.-]+) -->(?P<body>.*?)<!-- maintainer:end (?P=name) -->", re.DOTALL
)


def release_changes(diff: DiffSummary, previous_version: str | None) -> dict[str, Any]:
    """The card's account of the release's diff: lectures added, changed (another content hash) and
    removed since ``previous_version``."""
    return {
        "previous_version": previous_version,
        "added": diff.counts["added"],
        "changed": diff.content_changed,
        "removed": diff.counts["removed"],
    }


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


def _provenance_rows(provenance: Mapping[str, object]) -> list[dict[str, str]]:
    def show(value: JsonValue) -> str:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        return escape_text(text, limit=200, empty="(empty)")

    return [{"key": escape_text(k), "value": show(v)} for k, v in sorted(json_safe(provenance).items())]


def bibtex(release: CardRelease) -> str:
    """The release's BibTeX entry, keyed by its name and version, its year the version's."""

    def clean(text: str) -> str:
        return re.sub(r"[{}\\`@]", "", " ".join(text.split()))

    url = f"https://huggingface.co/datasets/{release.repo_id}"
    return "\n".join(
        [
            f"@misc{{{re.sub(r'[^A-Za-z0-9_:-]', '_', f'{release.name}_{release.version}')},",
            f"  title        = {{{clean(release.pretty_name)}}},",
            "  author       = {{eventcrawl maintainers}},",
            f"  year         = {{{clean(release.version[:4])}}},",
            f"  version      = {{{clean(release.version)}}},",
            f"  howpublished = {{\\url{{{clean(url)}}}}},",
            "  note         = {Lecture pages crawled from Underline;"
            " abstracts and titles are their authors' work}",
            "}",
        ]
    )


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
    provenance: list[dict[str, str]]
    settings: list[dict[str, str]]


class CardContext(ReleaseText):
    """Everything the template may use; every string that came from outside is already escaped."""

    counts: dict[str, int]
    events: list[dict[str, Any]]
    event_names: str
    configs: list[dict[str, Any]]
    stats: dict[str, Any]
    event_configs: list[dict[str, Any]]
    per_event: list[EventStatistics]
    authors: dict[str, Any]
    anthology: dict[str, Any]
    change_file: str
    change_files: list[str]
    changes: dict[str, Any]
    change_counts: dict[Change, int]
    email_like: int
    # The ``transcripts`` table's section (tracks per event and language, hours, tracks without text).
    transcripts: dict[str, Any]
    # The ``slides`` table's section (lectures with slide and poster text, documents without text).
    slides: dict[str, Any]
    # The charts of the release (crawler/publish/charts.py), drawn once its files are written.
    charts: list[dict[str, str]]


@dataclass(frozen=True)
class CardRelease:
    """What the card and the manifest tell of a release: its names, version and provenance, what it was
    compared with, its configs (the tables' and then the events') and its change files."""

    name: str
    repo_id: str
    pretty_name: str
    version: str
    created: datetime
    provenance: Mapping[str, object]
    previous_version: str | None
    configs: list[ConfigFiles]
    event_files: list[ConfigFiles]
    per_event: list[EventConfig]
    change_files: list[str]
    changes: dict[str, Any]
    history: list[HistoryEntry]


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
        "bibtex": bibtex(release),
        "provenance": _provenance_rows(other),
        "settings": _provenance_rows(settings) if isinstance(settings, Mapping) else [],
    }


def event_summaries(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
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
        for e in events
    ]


def field_rows(spec: TableSpec) -> list[dict[str, str]]:
    """A table's columns as the card and the docs' columns page show them: name, type, nullable,
    meaning, read off its declaration."""
    return [
        {
            "name": column.name,
            "type": type_label(arrow.type),
            "nullable": "yes" if column.nullable else "no",
            "description": table_cell(column.description),
        }
        for column, arrow in zip(spec.columns, spec.arrow_schema(), strict=True)
    ]


def columns_markdown(spec: TableSpec) -> str:
    """A table's columns (:func:`field_rows`) as a markdown table."""
    lines = ["| column | type | nullable | meaning |", "|---|---|---|---|"]
    for f in field_rows(spec):
        lines.append(f"| `{f['name']}` | `{f['type']}` | {f['nullable']} | {f['description']} |")
    return "\n".join(lines)


def config_rows(by_name: Mapping[str, ConfigFiles]) -> list[dict[str, Any]]:
    """The table configs written (``transcripts`` and ``slides`` last), with their files and their
    fields' types and descriptions."""
    return [
        {
            "name": spec.name,
            "description": table_cell(spec.description),
            "rows": by_name[spec.name].num_rows,
            "pattern": by_name[spec.name].pattern,
            "paths": list(by_name[spec.name].paths),
            "download_size": by_name[spec.name].download_size,
            "default": spec.name == DEFAULT_CONFIG,
            "fields": field_rows(spec),
        }
        for spec in (*SPECS, TRANSCRIPTS, SLIDES)
        if spec.name in by_name
    ]


def card_context(
    *,
    release: CardRelease,
    tables: Mapping[str, pa.Table],
    diff: DiffSummary,
    lecture_email_like: int,
    transcripts: TranscriptsTable,
    slides: SlidesTable,
) -> CardContext:
    """Everything the template may use; every string that came from outside is already escaped.

    ``diff`` is the release's against ``release.previous_version``, the one the last of its change files
    holds. ``tables["lectures"]`` holds only the columns the statistics read (and the abstracts' lengths);
    ``lecture_email_like`` is the count of e-mail-like values in the whole lectures table (counted as it
    was written). ``transcripts`` and ``slides`` are those tables as written, their files and counts."""
    lectures = tables[DEFAULT_CONFIG]
    rows = lectures.select(STATISTICS_COLUMNS).to_pylist()
    configs = [*release.configs, *release.event_files]
    by_name = {c.config_name: c for c in configs}
    events = tables["events"].to_pylist()
    event_names = ", ".join(event_name(e["event_name"], e["event_id"]) for e in events)
    return {
        **release_text(release),
        # A table left out of the release while empty still has its count: 0.
        "counts": {**dict.fromkeys(tables, 0), **{c.config_name: c.num_rows for c in configs}},
        "events": event_summaries(events),
        "event_names": event_names or "no event",
        "configs": config_rows(by_name),
        "stats": lecture_statistics(lectures),
        "event_configs": [
            {
                "name": e.config_name,
                "event_id": escape_text(e.event_id, limit=40),
                "event_name": event_name(e.event_name, e.event_id),
                "rows": by_name[e.config_name].num_rows,
                "paths": list(by_name[e.config_name].paths),
            }
            for e in release.per_event
        ],
        "per_event": event_statistics(rows, release.per_event, release.provenance.get("coverage")),
        "authors": author_statistics(tables, config="authors" in by_name),
        "anthology": anthology_share(rows),
        "change_file": release.change_files[-1],
        "change_files": list(release.change_files),
        "changes": release.changes,
        "change_counts": file_counts(diff),
        "email_like": sum(email_like_values(t) for config, t in tables.items() if config != DEFAULT_CONFIG)
        + lecture_email_like
        + transcripts.email_like
        + slides.email_like,
        "transcripts": transcript_statistics(
            transcripts.stats, {str(e["event_id"]): e["event_name"] for e in events}
        ),
        "slides": slides_statistics(slides.stats),
        "charts": [],
    }


# The names the card's YAML metadata gives the template (``DatasetCardData.to_dict()`` of
# ``card.card_data``, which sets these), besides the YAML itself as ``card_data``.
CARD_DATA_NAMES = frozenset(
    {
        "card_data",
        "pretty_name",
        "language",
        "license",
        "license_name",
        "license_details",
        "annotations_creators",
        "language_creators",
        "multilinguality",
        "size_categories",
        "source_datasets",
        "task_categories",
        "task_ids",
        "tags",
        "configs",
        "dataset_info",
    }
)


class CardTemplateError(ArgumentError):
    """A card template uses a name the card does not define; the message names it and its line."""


def _environment() -> jinja2.Environment:
    # ``jinja2.Template(text)`` renders with a default environment: the same settings, strict.
    return jinja2.Environment(undefined=jinja2.StrictUndefined)


def template_names() -> frozenset[str]:
    """Every top-level name a card template may use."""
    context_names = CardContext.__required_keys__ | CardContext.__optional_keys__
    return frozenset(context_names) | CARD_DATA_NAMES | frozenset(_environment().globals)


# A template's text is parsed and compiled once per process (and kept for a few texts): a process that
# publishes again, a test or a loop of runs, renders the same text, and each costs a third of a second.
@functools.lru_cache(maxsize=8)
def undefined_names(source: str) -> tuple[tuple[str, int], ...]:
    """The names ``source`` (a template's text, which must parse) reads that the card does not define,
    each with the line it is first read on, in the order of the text."""
    tree = _environment().parse(source)
    missing = meta.find_undeclared_variables(tree) - template_names()
    first: dict[str, int] = {}
    for node in tree.find_all(nodes.Name):
        if node.ctx == "load" and node.name in missing:
            first.setdefault(node.name, node.lineno)
    return tuple(sorted(first.items(), key=lambda item: (item[1], item[0])))


@functools.lru_cache(maxsize=8)
def _compiled(source: str) -> jinja2.Template:
    return _environment().from_string(source)


def check_names(source: str, *, where: str) -> None:
    """:class:`CardTemplateError` when ``source`` reads a name the card does not define; ``where``
    names the template in the message (``--card-template 'card.md'``)."""
    missing = undefined_names(source)
    if missing:
        names = ", ".join(f"{name!r} (line {line})" for name, line in missing)
        raise CardTemplateError(
            f"{where} uses what the card does not define: {names}; the names it defines are"
            " CardContext's in crawler/publish/card.py and the metadata's fields"
        )


def _template_line(error: BaseException) -> int | None:
    """The template line an error was raised on: jinja2 puts the template's frames in the traceback."""
    line = None
    trace: types.TracebackType | None = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == "<template>":
            line = trace.tb_lineno
        trace = trace.tb_next
    return line


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
    :class:`CardTemplateError`, not an empty string. Then carry the maintainer sections over."""
    from huggingface_hub import DatasetCard

    values = {**data.to_dict(), **context, "card_data": data.to_yaml()}
    source = template.read_text(encoding="utf-8")
    where = f"card template {str(template)!r}"
    check_names(source, where=where)
    try:
        rendered = _compiled(source).render(**values)
    except jinja2.UndefinedError as exc:
        line = _template_line(exc)
        line_note = f" (line {line})" if line is not None else ""
        raise CardTemplateError(
            f"{where} uses what the card does not define: {exc.message}{line_note}"
        ) from None
    with card_yaml_read_in_c():
        card = DatasetCard(rendered)
    text = str(card)
    if previous_card:
        text = merge_maintainer_sections(text, maintainer_sections(previous_card))
    return text if text.endswith("\n") else text + "\n"
