"""The quality gate over every declared table: rows and content against the previous release.

The lectures have checks of their own (:mod:`crawler.schedule.gate`); this one reads the declarations
(:data:`crawler.publish.tables.DECLARED_TABLES`) and judges every table alike, whatever its name: a
release built aside (before it is swapped in) is read from its Parquet files, a few narrow columns at a
time, and compared with the release it would replace. For each table, whole and event by event:

- its rows may not fall by more than ``max_drop`` of the previous release's (one row at least may go);
- each content column's share of rows with a value may not fall by more than ``max_coverage_drop``.

Rows that left on request (a retired event, a removed lecture) are not counted in the previous release:
their absence is asked for. A table new in this release, or empty before, is not judged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from crawler.coverage import ALL_EVENTS
from crawler.publish.manifest import Manifest, read_manifest
from crawler.publish.tables import DECLARED_TABLES, LECTURES, TableSpec
from crawler.schedule.gate import CheckResult, GateThresholds, few_failed
from crawler.schema import lecture_order

# The columns that tie a row to its lectures and events, by the names every table uses for them.
LECTURE_COLUMNS = ("lecture_id", "lecture_ids")
EVENT_COLUMNS = ("event_id", "event_ids")
# The lectures' columns a summary table may be keyed by (its rows leave when all their lectures do).
LECTURE_KEY_COLUMNS = ("session_id", "event_id")


@dataclass
class TableProfile:
    """How many rows a table holds, and how many of them hold a value in each content column, per event
    (``ALL_EVENTS`` for the whole table)."""

    rows: Counter[str] = field(default_factory=Counter)
    filled: dict[str, Counter[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class LeftOnRequest:
    """What the next release leaves out, or changes, on request: no loss. ``lectures`` removed,
    ``events`` retired, ``changed`` the lectures whose rows change on request (their authors redacted):
    a row tied to those only is judged on neither side; ``keys``, the values of other columns whose every
    lecture left (a session of removed lectures only), read off the previous release's lectures."""

    lectures: frozenset[str] = frozenset()
    events: frozenset[str] = frozenset()
    changed: frozenset[str] = frozenset()
    keys: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def asked(self, *, previous: bool) -> dict[str, frozenset[str]]:
        """The values, by column, whose rows are not judged on the previous release's side or this one's."""
        if not previous:
            return dict.fromkeys(LECTURE_COLUMNS, self.changed)
        out = {name: self.lectures | self.changed for name in LECTURE_COLUMNS}
        out.update(dict.fromkeys(EVENT_COLUMNS, self.events))
        out.update(self.keys)
        return out


def table_files(manifest: Manifest | None, spec: TableSpec) -> list[str]:
    """The files of a release that hold ``spec``'s rows (none when the release has none)."""
    if manifest is None:
        return []
    if spec.source is not None and spec.source.history:
        return list(manifest.get("change_files", []))
    name = spec.stored_in or spec.name
    config = manifest.get("configs", {}).get(name)
    return list(config.get("files", [])) if config else []


def filled_mask(column: pa.Array) -> pa.Array:
    """True where a value is there: not null, and a string or list not empty (blank text is none)."""
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pc.fill_null(pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(column)), 0), False)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return pc.fill_null(pc.greater(pc.list_value_length(column), 0), False)
    return pc.is_valid(column)


def _left_mask(batch: pa.RecordBatch, asked: Mapping[str, frozenset[str]]) -> list[bool]:
    """Per row: whether it left on request (every value it holds in an asked column was asked out)."""
    out = [False] * batch.num_rows
    for name, values_out in asked.items():
        if not values_out or name not in batch.schema.names:
            continue
        for row, value in enumerate(batch.column(name).to_pylist()):
            values = value if isinstance(value, list) else [value]
            if values and all(str(v) in values_out for v in values):
                out[row] = True
    return out


# Rows read at once: a table's content columns (a transcript's text) are read a batch at a time.
PROFILE_BATCH_ROWS = 2048


def profile_table(
    root: Path, paths: Sequence[str], spec: TableSpec, asked: Mapping[str, frozenset[str]]
) -> TableProfile:
    """The profile of ``spec``'s rows in ``paths`` under ``root``, read a batch of rows at a time (the
    rows that left on request not counted)."""
    profile = TableProfile(filled={name: Counter() for name in spec.content})
    for path in paths:
        reader = pq.ParquetFile(root / path)
        available = set(reader.schema_arrow.names)
        tied = [n for n in (*asked, "event_id") if n in available]
        content = [n for n in spec.content if n in available]
        columns = list(dict.fromkeys([*tied, *content]))
        for batch in reader.iter_batches(batch_size=PROFILE_BATCH_ROWS, columns=columns):
            gone = _left_mask(batch, asked)
            if "event_id" in batch.schema.names:
                events = [str(v or "") for v in batch.column("event_id").to_pylist()]
            else:
                events = [ALL_EVENTS] * batch.num_rows
            masks = {name: filled_mask(batch.column(name)).to_pylist() for name in content}
            for row in range(batch.num_rows):
                if gone[row]:
                    continue
                for event in {ALL_EVENTS, events[row]}:
                    profile.rows[event] += 1
                    for name, mask in masks.items():
                        profile.filled[name][event] += bool(mask[row])
    return profile


def profile_release(
    root: Path | None, left: LeftOnRequest = LeftOnRequest(), *, previous: bool = True
) -> dict[str, TableProfile]:
    """Every declared table's profile in the release in ``root`` (none when there is no release), the
    rows that left on request not counted: as the previous release (``previous``) or the next one."""
    manifest = read_manifest(root) if root is not None and root.is_dir() else None
    if root is None or manifest is None:
        return {}
    if previous:
        left = with_emptied_keys(root, manifest, left)
    asked = left.asked(previous=previous)
    return {
        spec.name: profile_table(root, table_files(manifest, spec), spec, asked) for spec in DECLARED_TABLES
    }


def with_emptied_keys(root: Path, manifest: Manifest, left: LeftOnRequest) -> LeftOnRequest:
    """``left`` with the key values of the summary tables (a session, an event) every lecture of which
    left on request, read off the release's lectures: such a row leaves with them."""
    if not left.lectures and not left.events:
        return left
    wanted = [
        s.key
        for s in DECLARED_TABLES
        if s.source is not None and s.source.derived_from == LECTURES.name and s.key in LECTURE_KEY_COLUMNS
    ]
    kept: dict[str, set[str]] = {name: set() for name in wanted}
    emptied: dict[str, set[str]] = {name: set() for name in wanted}
    for path in table_files(manifest, LECTURES):
        table = pq.read_table(root / path, columns=list(dict.fromkeys(["lecture_id", "event_id", *wanted])))
        ids = [str(v) for v in table.column("lecture_id").to_pylist()]
        events = [str(v) for v in table.column("event_id").to_pylist()]
        for name in wanted:
            for lecture_id, event_id, value in zip(ids, events, table.column(name).to_pylist(), strict=True):
                gone = lecture_id in left.lectures or event_id in left.events
                (emptied if gone else kept)[name].add(str(value))
    keys = {name: frozenset(emptied[name] - kept[name]) for name in wanted}
    return replace(left, keys={**left.keys, **keys})


def _checks_of(
    spec: TableSpec, now: TableProfile, then: TableProfile, t: GateThresholds
) -> Iterator[CheckResult]:
    events = sorted(then.rows, key=lambda e: (e != ALL_EVENTS, lecture_order(e)))
    for event in events:
        before, after = then.rows[event], now.rows[event]
        if not before:
            continue
        # The whole table's results are named and told without an event.
        one = None if event == ALL_EVENTS else event
        suffix, where = ("", "") if one is None else (f":{one}", f" of event {one}")
        lost = max(0, before - after)
        yield CheckResult(
            f"table:{spec.name}:rows{suffix}",
            # Within the share, allowing one at least: a small table is not refused for one row.
            few_failed(lost, before, t.max_drop),
            round(lost / before, 4),
            t.max_drop,
            f"`{spec.name}`{where}: {after} rows against {before} in the previous release"
            f" ({lost} lost; at most {t.max_drop:.0%}, or one row)",
            event=one,
        )
        for name in spec.content:
            had = then.filled[name][event]
            if not had:
                continue
            share_then, share_now = had / before, now.filled[name][event] / after if after else 0.0
            fell = share_then - share_now
            lost_values = max(0, had - now.filled[name][event])
            yield CheckResult(
                f"table:{spec.name}:{name}{suffix}",
                fell <= t.max_coverage_drop + 1e-9 or lost_values <= 1,
                round(share_now, 4),
                round(share_then - t.max_coverage_drop, 4),
                f"`{spec.name}.{name}`{where}: {share_now:.1%} of rows hold a value against"
                f" {share_then:.1%} in the previous release (at most {t.max_coverage_drop:.0%} points lost)",
                event=one,
                field=name,
                previous=round(share_then, 4),
            )


def judge_tables(
    built: Path, previous: Path | None, thresholds: GateThresholds, left: LeftOnRequest = LeftOnRequest()
) -> list[CheckResult]:
    """The gate's checks of every declared table of the release built in ``built`` against the release in
    ``previous``: the failed ones each, and one passing result per table that holds. The lectures' own
    rows and fields are the lecture checks' (:mod:`crawler.schedule.gate`); here they are judged again
    as a table like the others, which costs little and keeps the rule one for all."""
    then = profile_release(previous, left)
    if not then:
        return []
    now = profile_release(built, left, previous=False)
    results: list[CheckResult] = []
    for spec in DECLARED_TABLES:
        if spec.name not in then or not then[spec.name].rows[ALL_EVENTS]:
            continue
        checks = list(_checks_of(spec, now[spec.name], then[spec.name], thresholds))
        failed = [c for c in checks if not c.passed]
        if failed:
            results.extend(failed)
            continue
        rows, before = now[spec.name].rows[ALL_EVENTS], then[spec.name].rows[ALL_EVENTS]
        results.append(
            CheckResult(
                f"table:{spec.name}",
                True,
                float(rows),
                thresholds.max_drop,
                f"`{spec.name}` holds its rows and content ({rows} rows, {before} in the previous release"
                + (f"; {', '.join(spec.content)} kept" if spec.content else "")
                + ")",
                previous=float(before),
            )
        )
    return results
