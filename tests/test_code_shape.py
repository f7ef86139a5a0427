"""No function in crawler/ (the replica aside) longer than 60 lines or with more than 5 positional
parameters: a long function is split by meaning, many positional arguments become keywords or a type.
No module over 600 lines. And no assert inside a test's loop without a message naming the case it failed
on."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

MAX_LINES = 60
MAX_POSITIONAL = 5
ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "crawler"
# The replica is a test double of the site, not the crawler: its shape follows the site's.
EXEMPT = PACKAGE / "replica"

# Functions that still break the rule. This list must stay empty: split a function instead of naming it.
ALLOWED: frozenset[str] = frozenset()

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(tree: ast.AST, prefix: str) -> Iterator[tuple[str, Function]]:
    """Every function in ``tree`` with its qualified name (methods and nested functions included)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}.{node.name}"
            yield name, node
            yield from _functions(node, name)
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}.{node.name}")
        else:
            yield from _functions(node, prefix)


def _positional(function: Function) -> int:
    """Positional parameters, ``self`` or ``cls`` not counted."""
    names = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    return len(names[1:] if names[:1] in (["self"], ["cls"]) else names)


def _module(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root.parent).with_suffix("").parts)


def shape_problems(root: Path = PACKAGE) -> dict[str, str]:
    """Qualified name -> what is wrong, for every function under ``root`` that breaks the rule."""
    problems: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        if EXEMPT in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, function in _functions(tree, _module(path, root)):
            assert function.end_lineno is not None, f"{path=}, {name=}, {function=}"
            lines = function.end_lineno - function.lineno + 1
            positional = _positional(function)
            wrong = []
            if lines > MAX_LINES:
                wrong.append(f"{lines} lines")
            if positional > MAX_POSITIONAL:
                wrong.append(f"{positional} positional parameters")
            if wrong:
                where = f"{path.relative_to(root.parent)}:{function.lineno}"
                problems[name] = f"{name} ({where}): {', '.join(wrong)}"
    return problems


def test_no_function_is_too_long_or_takes_too_many_positional_parameters() -> None:
    problems = shape_problems()
    new = [problems[name] for name in sorted(problems) if name not in ALLOWED]
    assert new == [], "split these functions by meaning, or make their parameters keywords:\n" + "\n".join(
        new
    )


MAX_MODULE_LINES = 600


def long_modules(root: Path = PACKAGE) -> list[str]:
    """Every module under ``root`` (the replica aside) longer than ``MAX_MODULE_LINES``: a module that
    grew past it holds more than one concern."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if EXEMPT not in path.parents and lines > MAX_MODULE_LINES:
            found.append(f"{path.relative_to(root.parent)}: {lines} lines")
    return found


def test_no_module_is_longer_than_the_bound() -> None:
    assert long_modules() == [], "split these modules by concern"


def test_a_long_module_is_found(tmp_path: Path) -> None:
    package = tmp_path / "crawler"
    package.mkdir()
    (package / "short.py").write_text("x = 1\n" * MAX_MODULE_LINES, encoding="utf-8")
    (package / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1), encoding="utf-8")
    assert long_modules(package) == [f"crawler/long.py: {MAX_MODULE_LINES + 1} lines"]


def test_the_allow_list_names_only_functions_that_still_break_the_rule() -> None:
    """A function fixed leaves the list, so the list cannot hide a new one under an old name."""
    assert sorted(ALLOWED - set(shape_problems())) == []


def test_a_long_function_or_one_with_many_positional_parameters_is_found(tmp_path: Path) -> None:
    package = tmp_path / "crawler"
    package.mkdir()
    (package / "shapes.py").write_text(
        f"def long():\n{_body(60)}\n\n"
        f"def longest_allowed():\n{_body(59)}\n\n"
        "class Pages:\n"
        "    def many(self, a, b, c, d, e, f):\n        pass\n\n"
        "    def five(self, a, b, c, d, e, *, f):\n        pass\n\n"
        "    @classmethod\n"
        "    def of(cls, a, b, c, d, e):\n        pass\n",
        encoding="utf-8",
    )
    found = shape_problems(package)
    assert sorted(found) == ["crawler.shapes.Pages.many", "crawler.shapes.long"]
    assert found["crawler.shapes.long"].endswith("61 lines")
    assert found["crawler.shapes.Pages.many"].endswith("6 positional parameters")


def _body(lines: int) -> str:
    return "\n".join(f"    x{i} = {i}" for i in range(lines))


# -- the tests' own shape ----------------------------------------------------------------------------

TESTS = ROOT / "tests"


def loop_asserts_without_a_case(root: Path = TESTS) -> list[str]:
    """Every assert inside a loop of a test (for or while, in the same function) that has no message:
    when it fails, nothing says which case it failed on."""
    found: list[str] = []

    def visit(node: ast.AST, path: Path, in_loop: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                visit(child, path, False)
                continue
            if isinstance(child, ast.Assert) and in_loop and child.msg is None:
                found.append(f"{path.relative_to(root.parent)}:{child.lineno}")
            visit(child, path, in_loop or isinstance(child, ast.For | ast.AsyncFor | ast.While))

    for path in sorted(root.rglob("*.py")):
        visit(ast.parse(path.read_text(encoding="utf-8")), path, False)
    return found


def test_every_assert_inside_a_loop_names_its_case() -> None:
    assert loop_asserts_without_a_case() == [], "give each a message naming the loop's variables"


def test_an_assert_inside_a_loop_without_a_message_is_found(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(
        "def test_a():\n    for x in [1]:\n        assert x\n        assert x, f'{x=}'\n"
        "    while True:\n        assert True\n        break\n    assert 1\n",
        encoding="utf-8",
    )
    assert loop_asserts_without_a_case(tmp_path / "tests") == ["tests/test_x.py:3", "tests/test_x.py:6"]


# A module's name says what it does: no name three times in the package (``__init__.py`` aside), and one
# module of settings and one of release building, so that "where is X" has one answer.
def repeated_names(root: Path) -> dict[str, list[str]]:
    """The module file names used more than twice under *root*, or twice for ``settings.py`` and
    ``release.py``."""
    places: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        if path.name != "__init__.py":
            places.setdefault(path.name, []).append(str(path.relative_to(root)))
    return {
        name: where
        for name, where in places.items()
        if len(where) > 2 or (len(where) > 1 and name in ("settings.py", "release.py"))
    }


def test_no_module_name_is_used_three_times_and_settings_and_release_once() -> None:
    assert repeated_names(PACKAGE) == {}


def test_a_repeated_module_name_is_found(tmp_path: Path) -> None:
    for place in ("a/stage.py", "b/stage.py", "c/stage.py", "a/settings.py", "b/settings.py", "a/x.py"):
        (tmp_path / place).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / place).write_text("", encoding="utf-8")
    assert repeated_names(tmp_path) == {
        "stage.py": ["a/stage.py", "b/stage.py", "c/stage.py"],
        "settings.py": ["a/settings.py", "b/settings.py"],
    }


def test_the_card_is_written_by_four_modules_at_most() -> None:
    # Every module that renders part of the dataset card: its template's context, its statistics, its
    # YAML metadata, its charts.
    card = sorted(p.name for p in (PACKAGE / "publish").glob("*.py") if p.name.startswith(("card", "chart")))
    assert card == ["card.py", "card_metadata.py", "card_statistics.py", "charts.py"]
