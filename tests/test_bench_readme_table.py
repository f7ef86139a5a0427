"""The benchmark page's figures table is rendered from the results file, and a check finds any difference."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench import readme_table

RESULTS = {
    "machine": {
        "cores": 2,
        "python": "3.11.7",
        "scrapy": "2.19.0",
        "commit": "abc1234",
        "date": "2026-12-03T10:00:00+00:00",
        "load_average_at_start": [2.5, 2.0, 1.0],
    },
    "figures": [
        {
            "figure": "crawl cost: first crawl, 686 lecture pages, no politeness, wall (best of 3)",
            "value": 5.123,
            "unit": "s",
            "baseline": 3.5,
            "baseline_label": "bare Scrapy spider + stock HTTP cache",
            "ratio": 1.4637,
            "target": "<= 1.50",
            "met": True,
        },
        {
            "figure": "crawl peak RSS at 10,000 (vs 1,000)",
            "value": 250.0,
            "unit": "MiB",
            "baseline": 190.4,
            "baseline_label": "at 1,000",
            "ratio": 1.313,
            "target": "<= 1.30",
            "met": False,
        },
        {"figure": "cleaned text equal to the ground truth", "value": "726/726", "unit": "", "baseline": None,
         "baseline_label": "", "ratio": None, "target": "all", "met": True},
    ],
}  # fmt: skip

EXPECTED = """Taken on 2026-12-03 at commit `abc1234` on 2 cores (Python 3.11.7, Scrapy 2.19.0, load average 2.5 at the start):

| figure | value | baseline | ratio | target | met |
|---|---|---|---|---|---|
| crawl cost: first crawl, 686 lecture pages, no politeness, wall (best of 3) | 5.12 s | 3.50 s (bare Scrapy spider + stock HTTP cache) | 1.464 | <= 1.50 | yes |
| crawl peak RSS at 10,000 (vs 1,000) | 250 MiB | 190 MiB (at 1,000) | 1.313 | <= 1.30 | **no** |
| cleaned text equal to the ground truth | 726/726 |  |  | all | yes |
"""  # noqa: E501

README = """# Project

Some text.

<!-- bench:begin -->
| figure | value |
|---|---|
| typed by hand | 42 |
<!-- bench:end -->

## Development
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    results, readme = tmp_path / "latest.json", tmp_path / "README.md"
    results.write_text(json.dumps(RESULTS), encoding="utf-8")
    readme.write_text(README, encoding="utf-8")
    return results, readme


def run(*args: str | Path) -> int:
    return readme_table.main([str(a) for a in args])


def test_render_gives_the_table_from_the_results() -> None:
    assert readme_table.render(RESULTS) == EXPECTED


def test_check_fails_with_a_diff_then_write_makes_it_pass(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    results, readme = files
    assert run("--check", "--page", readme, "--results", results) == 1
    out = capsys.readouterr().out
    assert "-| typed by hand | 42 |" in out
    assert (
        "+| crawl peak RSS at 10,000 (vs 1,000) | 250 MiB | 190 MiB (at 1,000) | 1.313 | <= 1.30 | **no** |"
        in out
    )
    assert readme.read_text(encoding="utf-8") == README  # a check writes nothing
    assert run("--write", "--page", readme, "--results", results) == 0
    assert readme.read_text(encoding="utf-8") == README.replace(
        "| figure | value |\n|---|---|\n| typed by hand | 42 |\n", EXPECTED
    )
    assert run("--check", "--page", readme, "--results", results) == 0
    # A figure edited by hand is found.
    readme.write_text(readme.read_text(encoding="utf-8").replace("5.12 s", "4.00 s"), encoding="utf-8")
    assert run("--check", "--page", readme, "--results", results) == 1
    assert "+| crawl cost" in capsys.readouterr().out


def test_missing_markers_fail_the_check(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    results, readme = files
    readme.write_text(README.replace("<!-- bench:end -->\n", ""), encoding="utf-8")
    assert run("--check", "--page", readme, "--results", results) == 1
    assert "no <!-- bench:begin --> ... <!-- bench:end --> markers" in capsys.readouterr().err
    assert run("--write", "--page", readme, "--results", results) == 1
    # --readme, the option's former name, still names the file.
    assert run("--check", "--readme", readme, "--results", results) == 1


def test_the_project_page_copy_can_be_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The real benchmark page and results file, on a copy: the command runs and says what it found."""
    readme = tmp_path / "benchmarks.md"
    shutil.copy(readme_table.PAGE, readme)
    code = run("--check", "--page", readme, "--results", readme_table.RESULTS)
    text = capsys.readouterr()
    if readme_table.BEGIN in readme.read_text(encoding="utf-8"):
        assert code in (0, 1)
        assert run("--write", "--page", readme, "--results", readme_table.RESULTS) == 0
        assert run("--check", "--page", readme, "--results", readme_table.RESULTS) == 0
    else:
        assert code == 1
        assert "markers" in text.err


def test_the_benchmarks_page_holds_the_results_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The table CI checks is the one ``docs/benchmarks.md`` shows, and it is the results file's."""
    assert readme_table.PAGE == readme_table.REPO / "docs" / "benchmarks.md"
    assert readme_table.BEGIN in readme_table.PAGE.read_text(encoding="utf-8")
    assert readme_table.BEGIN not in (readme_table.REPO / "README.md").read_text(encoding="utf-8")
    assert run("--check") == 0, capsys.readouterr().out


def test_sections_kept_from_an_earlier_run_name_their_commit_and_date() -> None:
    results = json.loads(json.dumps(RESULTS))
    earlier = {"commit": "0ld0001", "date": "2026-12-01T08:00:00+00:00"}
    results["sections"] = {
        "cost": {"figures": [], "measured": {"commit": "abc1234", "date": "2026-12-03T10:00:00+00:00"}},
        "scale": {"figures": [], "measured": earlier},
        "polite": {"figures": [], "measured": earlier},
    }
    first_line = readme_table.render(results).splitlines()[0]
    assert first_line == (
        "Taken on 2026-12-03 at commit `abc1234` on 2 cores (Python 3.11.7, Scrapy 2.19.0, load average 2.5"
        " at the start); sections scale, polite at commit `0ld0001` on 2026-12-01:"
    )


def test_the_readme_quotes_the_crawl_cost_against_the_same_job_spider(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, page = files
    figure = {
        "figure": "crawl cost: CPU against a hand-written same-job spider, 686 lecture pages (median of 6)",
        "ratio": 1.2468,
        "target": "<= 1.30",
    }
    user = {
        "figure": "crawl cost: user CPU against a hand-written same-job spider, the same window",
        "ratio": 1.9812,
        "target": "-",
    }
    results.write_text(
        json.dumps(
            {**RESULTS, "sections": {"cost": {"figures": [figure, user], "measured": {"commit": "f00d123"}}}}
        ),
        encoding="utf-8",
    )
    quote = tmp_path / "front.md"
    quote.write_text(
        "# x\n\n<!-- bench:quote:begin -->\ntyped by hand\n<!-- bench:quote:end -->\n", encoding="utf-8"
    )
    run("--write", "--page", page, "--results", results)
    assert run("--check", "--page", page, "--quote-page", quote, "--results", results) == 1
    assert "-typed by hand" in capsys.readouterr().out
    assert run("--write", "--page", page, "--quote-page", quote, "--results", results) == 0
    assert quote.read_text(encoding="utf-8") == (
        "# x\n\n<!-- bench:quote:begin -->\n"
        "A crawl costs 1.25 times the CPU of a hand-written Scrapy spider doing the same job on the same "
        "pages (median of the pairs; target <= 1.30; its user CPU alone, the disk's system time left out: "
        "1.98 times; `bench/run`, section `cost`, commit `f00d123`).\n"
        "<!-- bench:quote:end -->\n"
    )
    assert run("--check", "--page", page, "--quote-page", quote, "--results", results) == 0


def test_the_project_readme_quotes_what_the_results_file_says() -> None:
    readme = readme_table.README.read_text(encoding="utf-8")
    results = json.loads(readme_table.RESULTS.read_text(encoding="utf-8"))
    assert readme_table.current_block(readme, readme_table.QUOTE_BEGIN, readme_table.QUOTE_END) == (
        readme_table.render_quote(results)
    )
