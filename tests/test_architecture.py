"""The import rules of the architecture (README, "How it works"), each a test over every import statement
of the package, those inside functions included:

- ``pages/`` is pure parsing: it takes text and returns data, so it imports neither Scrapy, Twisted nor
  anything that reaches the network;
- ``pipelines/`` imports neither ``publish/`` nor the CLI;
- ``publish/`` never imports a spider;
- what a worker process imports (``extensions/worker_side.py``, ``extensions/worker_process.py`` and its
  jobs' modules outside ``pages/``) imports neither Scrapy nor Twisted: a fresh worker starts sooner;
- the replica is a neighbour, not a dependency: only the CLI and the demo flow load it (the runner never);
- no private name (``_x``) is imported from another module of the package.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "crawler"
NETWORK = ("scrapy", "twisted", "socket", "http.client", "urllib.request", "requests", "httpx")
WORKER_MODULES = (
    "crawler.extensions.worker_side",
    "crawler.extensions.worker_process",
    "crawler.cache.entry",
    "crawler.dedup.near",
)


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the module imported from
    names: tuple[str, ...]  # the names imported (empty for ``import x``)
    line: int

    def __str__(self) -> str:
        names = f" ({', '.join(self.names)})" if self.names else ""
        return f"{self.module}:{self.line} imports {self.target}{names}"


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(root: Path = PACKAGE) -> Iterator[Import]:
    """Every import statement under ``root``, relative ones resolved."""
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(module, alias.name, (), node.lineno)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                yield Import(module, base, tuple(a.name for a in node.names), node.lineno)


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def broken(rule: str, found: list[Import]) -> list[str]:
    """The imports of ``found`` that break ``rule``."""
    out = []
    for imp in found:
        if rule == "pages" and within(imp.module, "crawler.pages"):
            bad = any(within(imp.target, n) for n in NETWORK)
        elif rule == "pipelines" and within(imp.module, "crawler.pipelines"):
            bad = within(imp.target, "crawler.publish") or within(imp.target, "crawler.app.cli")
        elif rule == "publish" and within(imp.module, "crawler.publish"):
            bad = within(imp.target, "crawler.spiders")
        elif rule == "worker" and imp.module in WORKER_MODULES:
            bad = within(imp.target, "scrapy") or within(imp.target, "twisted")
        elif rule == "replica" and not within(imp.module, "crawler.replica"):
            bad = within(imp.target, "crawler.replica") and imp.module not in (
                "crawler.app.cli",
                "crawler.app.demo",
            )
        elif rule == "private" and within(imp.target, "crawler") and imp.target != imp.module:
            bad = any(n.startswith("_") and not n.startswith("__") for n in imp.names)
        else:
            bad = False
        if bad:
            out.append(str(imp))
    return out


RULES = ("pages", "pipelines", "publish", "worker", "replica", "private")


@pytest.mark.parametrize("rule", RULES)
def test_every_import_of_the_package_keeps_the_rule(rule: str) -> None:
    assert broken(rule, list(imports())) == [], f"rule {rule}"


@pytest.mark.parametrize("module", ["crawler.app.crawling", "crawler.app.release", "crawler.app.runner"])
def test_the_flows_never_import_the_replica(module: str) -> None:
    found = [str(i) for i in imports() if i.module == module and within(i.target, "crawler.replica")]
    assert found == [], f"module {module}"


@pytest.mark.parametrize(
    ("rule", "where", "source"),
    [
        ("pages", "crawler/pages/x.py", "import scrapy\n"),
        ("pages", "crawler/pages/x.py", "def f():\n    from urllib.request import urlopen\n"),
        ("pipelines", "crawler/pipelines/x.py", "from crawler.publish import card\n"),
        ("publish", "crawler/publish/x.py", "from ..spiders.underline import UnderlineSpider\n"),
        ("worker", "crawler/extensions/worker_side.py", "def f():\n    from scrapy import Request\n"),
        ("replica", "crawler/app/runner.py", "def f():\n    from crawler.replica.layout import build_site\n"),
        ("private", "crawler/a.py", "from crawler.b import _hidden\n"),
    ],
)
def test_a_broken_rule_is_found(rule: str, where: str, source: str, tmp_path: Path) -> None:
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    found = broken(rule, list(imports(tmp_path / "crawler")))
    assert len(found) == 1, f"rule {rule}: {found}"
