"""The table of ``docs/benchmarks.md`` and the figure README.md quotes, rendered from
``bench/results/latest.json``: no figure typed by hand.

``python -m bench.readme_table --write`` puts the table between the page's markers
``<!-- bench:begin -->`` and ``<!-- bench:end -->``, and the README's sentence between its
``<!-- bench:quote:begin -->`` and ``<!-- bench:quote:end -->``; ``--check`` exits 1 with a diff when
either is not the one the results file gives (CI runs it), or when the markers are missing.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "benchmarks.md"
README = REPO / "README.md"
QUOTE_BEGIN = "<!-- bench:quote:begin -->"
QUOTE_END = "<!-- bench:quote:end -->"
# The figures the README quotes: the crawl's CPU against the spider a user would write for the same job,
# and its user CPU alone (the stock HTTP cache's disk writes are system time).
QUOTED = "crawl cost: CPU against a hand-written same-job spider"
QUOTED_USER = "crawl cost: user CPU against a hand-written same-job spider"
RESULTS = REPO / "bench" / "results" / "latest.json"
BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"


class MarkersMissing(ValueError):
    pass


def number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, int) or abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3f}" if abs(value) < 1.5 else f"{value:.2f}"


def _with_unit(value: Any, unit: str) -> str:
    return number(value) if isinstance(value, str) or not unit else f"{number(value)} {unit}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _earlier_runs(results: dict[str, Any]) -> list[str]:
    """``sections a, b at commit `x` on <date>`` for the sections a run with ``--only`` kept from an
    earlier run (measured at another commit than the run that wrote the file)."""
    commit = results.get("machine", {}).get("commit")
    runs: dict[tuple[str, str], list[str]] = {}
    for name, section in results.get("sections", {}).items():
        measured = section.get("measured") if isinstance(section, dict) else None
        if measured and measured.get("commit") != commit:
            key = (str(measured.get("commit", "?")), str(measured.get("date", "?"))[:10])
            runs.setdefault(key, []).append(name)
    return [
        f"{'section' if len(names) == 1 else 'sections'} {', '.join(names)} at commit `{c}` on {date}"
        for (c, date), names in runs.items()
    ]


def render(results: dict[str, Any]) -> str:
    """The block between the markers: where and when the figures were taken, then one row per figure."""
    info = results.get("machine", {})
    load = info.get("load_average_at_start")
    taken = (
        f"Taken on {str(info.get('date', '?'))[:10]} at commit `{info.get('commit', '?')}` on "
        f"{info.get('cores', '?')} cores (Python {info.get('python', '?')}, Scrapy {info.get('scrapy', '?')}"
    )
    taken += f", load average {load[0]:g} at the start)" if load else ")"
    earlier = _earlier_runs(results)
    taken += "; " + "; ".join(earlier) + ":" if earlier else ":"
    lines = [taken, "", "| figure | value | baseline | ratio | target | met |", "|---|---|---|---|---|---|"]
    for f in results.get("figures", []):
        unit = f.get("unit") or ""
        baseline = f.get("baseline")
        base = "" if baseline is None else _with_unit(baseline, unit)
        if f.get("baseline_label") and baseline is not None:
            base += f" ({f['baseline_label']})"
        ratio = f.get("ratio")
        target = f.get("target")
        met = f.get("met")
        cells = [
            f["figure"],
            _with_unit(f.get("value"), unit),
            base,
            "" if ratio is None else number(ratio),
            "" if target in (None, "-") else str(target),
            "" if met is None else ("yes" if met else "**no**"),
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def render_quote(results: dict[str, Any]) -> str:
    """The README's sentence: the quoted figures' ratios, the target, and the commit they were measured at."""
    for name, section in results.get("sections", {}).items():
        figures = section.get("figures", [])
        cpu = next((f for f in figures if f["figure"].startswith(QUOTED)), None)
        user = next((f for f in figures if f["figure"].startswith(QUOTED_USER)), None)
        if cpu is None:
            continue
        commit = section.get("measured", {}).get("commit", "?")
        alone = (
            f"; its user CPU alone, the disk's system time left out: {user['ratio']:.2f} times"
            if user
            else ""
        )
        return (
            f"A crawl costs {cpu['ratio']:.2f} times the CPU of a hand-written Scrapy spider doing the same "
            f"job on the same pages (median of the pairs; target {cpu['target']}{alone}; `bench/run`, "
            f"section `{name}`, commit `{commit}`).\n"
        )
    return "No crawl cost against a hand-written spider has been measured yet.\n"


def current_block(readme: str, begin: str = BEGIN, end_marker: str = END) -> str:
    """What the page holds between the markers (from the line after ``begin`` up to ``end_marker``)."""
    start, end = readme.find(begin), readme.find(end_marker)
    if start < 0 or end < 0 or end < start:
        raise MarkersMissing(f"no {begin} ... {end_marker} markers")
    return readme[start + len(begin) : end].removeprefix("\n")


def with_block(readme: str, block: str, begin: str = BEGIN, end_marker: str = END) -> str:
    current_block(readme, begin, end_marker)  # raises without the markers
    start, end = readme.find(begin) + len(begin), readme.find(end_marker)
    return readme[:start] + "\n" + block + readme[end:]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.readme_table", description=__doc__.split("\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--write", action="store_true", help="render the table and the quote into their pages"
    )
    action.add_argument("--check", action="store_true", help="exit 1 with a diff when a page differs")
    # --readme: the option's former name, kept for the scripts that use it.
    parser.add_argument("--page", "--readme", dest="readme", type=Path, default=PAGE)
    # The README's quote is checked with the project's own page (a --page of another is checked alone).
    parser.add_argument(
        "--quote-page", type=Path, help="the page quoting the crawl's cost (default: README.md)"
    )
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    try:
        results = json.loads(args.results.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"bench.readme_table: {exc}", file=sys.stderr)
        return 2
    quote_page = args.quote_page or (README if args.readme == PAGE else None)
    targets = [(args.readme, render(results), BEGIN, END)]
    if quote_page is not None:
        targets.append((quote_page, render_quote(results), QUOTE_BEGIN, QUOTE_END))
    return max(
        _one_page(page, block, begin, end, args.write, args.results) for page, block, begin, end in targets
    )


def _one_page(page: Path, block: str, begin: str, end: str, write: bool, results: Path) -> int:
    """Write or check one page's block; the exit status for it."""
    try:
        text = page.read_text(encoding="utf-8")
        current = current_block(text, begin, end)
    except OSError as exc:
        print(f"bench.readme_table: {exc}", file=sys.stderr)
        return 2
    except MarkersMissing as exc:
        print(f"bench.readme_table: {page} has {exc}: put them where the figures go", file=sys.stderr)
        return 1
    if write:
        if current == block:
            print(f"{page}: up to date")
        else:
            page.write_text(with_block(text, block, begin, end), encoding="utf-8")
            print(f"{page}: written from {results}")
        return 0
    if current == block:
        print(f"{page}: matches {results}")
        return 0
    sys.stdout.writelines(
        difflib.unified_diff(
            current.splitlines(keepends=True),
            block.splitlines(keepends=True),
            fromfile=f"{page} (figures)",
            tofile=f"rendered from {results}",
        )
    )
    print(f"{page}: differs from {results}; run python -m bench.readme_table --write")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
