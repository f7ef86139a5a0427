"""The README is a front door of at most 300 lines whose first two commands are the demo and the tests; the
reference is in ``docs/`` (MkDocs): every page in the navigation, every link resolving, every command and
option documented in its section, and the columns tables generated from the tables' declarations."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from crawler.app.parser import build_parser
from crawler.publish.card_statistics import table_cell
from crawler.publish.tables import DECLARED_TABLES, type_label
from crawler.replica.server import build_parser as replica_parser
from docsgen import columns

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
DEMO = 'python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && .venv/bin/eventcrawl demo'
TESTS = 'python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && .venv/bin/python -m pytest'
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def anchor(heading: str) -> str:
    """The id MkDocs gives a heading (Python-Markdown's ``toc`` slug)."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[-\s]+", "-", text).strip("-")


def headings(markdown: str) -> list[str]:
    """The page's headings, code blocks left out (a shell comment is no heading)."""
    prose = FENCE.sub("", markdown)
    return [m.group(1) for m in re.finditer(r"^#{1,6} (.+)$", prose, re.MULTILINE)]


def section(markdown: str, heading: str) -> str:
    """From the ``## `` heading that holds ``heading`` to the next ``## `` heading."""
    starts = [m.start() for m in re.finditer(r"^## ", markdown, re.MULTILINE)]
    for i, start in enumerate(starts):
        line = markdown[start : markdown.index("\n", start)]
        if heading in line:
            return markdown[start : starts[i + 1] if i + 1 < len(starts) else len(markdown)]
    raise AssertionError(f"no section {heading!r}")


def test_the_readme_is_at_most_300_lines() -> None:
    lines = read(README).splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move the reference into docs/"


def test_the_readme_s_first_two_commands_run_the_demo_then_the_tests() -> None:
    blocks = FENCE.findall(read(README))
    assert [b.strip() for b in blocks[:2]] == [DEMO, TESTS]


def test_ci_runs_the_readme_s_test_command_and_builds_the_docs_strictly() -> None:
    ci = read(ROOT / ".ci" / "run")
    install, _, pytest_command = TESTS.partition(" && ")[2].partition(" && ")
    assert f"python3 -m venv .venv && {install} && {pytest_command}" in ci
    assert re.search(r'pip install -q -e "\.\[docs\]"', ci)
    build = [line for line in ci.splitlines() if "mkdocs build" in line and not line.lstrip().startswith("#")]
    assert len(build) == 1 and "mkdocs build --strict" in build[0], build
    # --quiet hides the warnings, and --strict then counts none.
    assert not re.search(r"\s(--quiet|-q)\b", build[0].split("mkdocs build")[1]), build[0]
    # The docs extra installs what mkdocs.yml asks for.
    pyproject = read(ROOT / "pyproject.toml")
    extra = pyproject[pyproject.index("\ndocs = [") :]
    extra = extra[: extra.index("]")]
    assert '"mkdocs>=' in extra and '"mkdocs-material>=' in extra


def test_every_link_of_the_readme_and_the_docs_resolves() -> None:
    for page in [README, *pages()]:
        for target in LINK.findall(read(page)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, fragment = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            assert file.is_file(), f"{page.name}: {target}: no such file"
            if fragment:
                ids = {anchor(h) for h in headings(read(file))}
                assert fragment in ids, f"{page.name}: {target}: no such heading"


def test_the_navigation_holds_every_page_and_the_hook() -> None:
    config = yaml.safe_load(read(ROOT / "mkdocs.yml"))
    listed = [next(iter(entry.values())) for entry in config["nav"]]
    assert sorted(listed) == sorted(p.name for p in pages())
    assert listed[0] == "index.md"
    assert config["theme"]["name"] == "material"
    assert config["strict"] is True
    assert config["hooks"] == ["docsgen/hook.py"]


def test_the_readme_links_to_every_page() -> None:
    linked = {Path(t.partition("#")[0]).name for t in LINK.findall(read(README)) if t.startswith("docs/")}
    assert linked == {p.name for p in pages()}


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def long_options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"]


def test_every_command_and_option_is_documented_in_its_section() -> None:
    commands = read(DOCS / "commands.md")
    found = subcommands(build_parser())
    assert found, "no commands"
    for name, parser in found.items():
        text = section(commands, f"`eventcrawl {name}`")
        if name == "serve-replica":  # it parses its own options
            parser = replica_parser()
        options = long_options(parser)
        for sub_name, sub in subcommands(parser).items():
            assert f"eventcrawl {name} {sub_name}" in text, f"eventcrawl {name} {sub_name}"
            options += long_options(sub)
        for option in options:
            assert option in text, f"eventcrawl {name} {option}: not in its section of docs/commands.md"
        # ... and in the README's one line a command.
        assert f"`eventcrawl {name}" in read(README), f"eventcrawl {name}: not in the README"


def test_each_declared_table_has_one_generated_columns_table() -> None:
    source = read(DOCS / "columns.md")
    assert sorted(columns.markers(source)) == sorted(columns.DOCUMENTED)
    assert {spec.name for spec in DECLARED_TABLES} - set(columns.DOCUMENTED) == {"changes"}
    page = columns.render_page(source)
    assert "<!-- columns:" not in page
    for spec in columns.DOCUMENTED.values():
        text = section(page, f"`{spec.name}` columns")
        rows = [line for line in text.splitlines() if line.startswith("| `")]
        assert len(rows) == len(spec.columns), spec.name
        for column, arrow, row in zip(spec.columns, spec.arrow_schema(), rows, strict=True):
            nullable = "yes" if column.nullable else "no"
            meaning = table_cell(column.description)
            expected = f"| `{column.name}` | `{type_label(arrow.type)}` | {nullable} | {meaning} |"
            assert row == expected, f"{spec.name}.{column.name}"


def test_a_marker_that_names_no_table_stops_the_build() -> None:
    with pytest.raises(columns.UnknownTable, match="no_such_table"):
        columns.render_page("# Page\n\n<!-- columns: no_such_table -->\n")
    assert columns.main([str(DOCS / "no-such-page.md")]) == 1


def test_the_mkdocs_hook_renders_the_markers() -> None:
    spec = importlib.util.spec_from_file_location("docs_hook", ROOT / "docsgen" / "hook.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    source = read(DOCS / "columns.md")
    assert hook.on_page_markdown(source, page=None, config=None, files=None) == columns.render_page(source)
    assert "| `author_key` |" in hook.on_page_markdown("<!-- columns: authors -->", page=None)
