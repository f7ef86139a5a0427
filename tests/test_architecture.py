"""The import rules of the architecture (docs/architecture.md), each a test over every import statement
of the package, those inside functions included:

- ``pages/`` is pure parsing: it takes text and returns data, so it imports neither Scrapy, Twisted nor
  anything that reaches the network;
- ``pipelines/`` imports neither ``publish/`` nor the CLI;
- ``publish/`` never imports a spider;
- what a worker process imports (``extensions/worker_side.py``, ``extensions/worker_process.py`` and its
  jobs' modules outside ``pages/``) imports neither Scrapy nor Twisted: a fresh worker starts sooner;
- the replica is a neighbour, not a dependency: only the CLI and the demo flow load it (the runner never);
- no private name (``_x``) is imported from another module of the package;
- only ``privacy/`` looks for e-mail addresses or phone numbers (an expression that finds one, an import
  of ``phonenumbers``).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator
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


@functools.cache
def package_imports() -> tuple[Import, ...]:
    """Every import statement of the package, read once for the tests that read the package as it is."""
    return tuple(imports(PACKAGE))


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
    assert broken(rule, list(package_imports())) == [], f"rule {rule}"


@pytest.mark.parametrize("module", ["crawler.app.crawling", "crawler.app.next_release", "crawler.app.runner"])
def test_the_flows_never_import_the_replica(module: str) -> None:
    found = [str(i) for i in package_imports() if i.module == module and within(i.target, "crawler.replica")]
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


# Looking for personal data is crawler/privacy/'s alone: no other module may hold an expression that finds
# an e-mail address or a phone number, nor import phonenumbers. An expression is every pattern handed to
# ``re`` (or ``regex``) or to pyarrow's ``*_regex`` kernels, its f-string parts and names read from the
# module's constants. It looks for personal data when it finds one of these whole in a sentence but
# finds nothing there once the datum is disarmed ("@" and "at" made other characters, digits letters):
# a general pattern (``\S+``, ``.*``, ``\d+(\.\d+)?``) finds something in both and is innocent.
PRIVACY_PACKAGE = "crawler.privacy"
REGEX_FUNCTIONS = frozenset(
    ["compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"]
)
# (sentence before, datum, sentence after): the datum's "@" or "at" between a name and a domain.
ADDRESS_PROBES = [
    "jane.doe@example.org",
    "jane＠example.org",
    "jane [at] example [dot] org",
    "jane (at) example.org",
    "jane%40example.org",
    "jane&#64;example.org",
    "jane dot doe at example dot com",
    "carol.x at gmail.com",
    "d a v e @ example . com",
]
PHONE_PROBES = [
    "+44 20 7946 0958",
    "+14155552671",
    "0049 30 1234567",
    "030 1234567",
    "(555) 123-4567",
    "555-123-4567",
    "555.123.4567",
]
AT_FORMS_DISARMED = [("@", "~"), ("＠", "~"), ("%40", "~~~"), ("&#64;", "~~~~~"), ("at", "an")]


def _constant_text(node: ast.expr | None, constants: dict[str, ast.expr], depth: int = 0) -> str:
    """The text of a pattern expression: string constants, f-strings and ``+`` of them, names read from
    the module's assignments; what cannot be read stands as nothing."""
    if node is None or depth > 20:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_constant_text(part, constants, depth + 1) for part in node.values)
    if isinstance(node, ast.FormattedValue):
        return _constant_text(node.value, constants, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _constant_text(node.left, constants, depth + 1) + _constant_text(
            node.right, constants, depth + 1
        )
    if isinstance(node, ast.Name) and node.id in constants:
        return _constant_text(constants[node.id], constants, depth + 1)
    return ""


def regex_patterns(source: str) -> Iterator[tuple[int, str]]:
    """Every pattern a module hands to an expression engine, with its line."""
    tree = ast.parse(source)
    constants: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            constants[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            constants[node.target.id] = node.value
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name, owner = node.func.attr, node.func.value
        engine = isinstance(owner, ast.Name) and owner.id in ("re", "regex") and name in REGEX_FUNCTIONS
        if engine or name.endswith("_regex"):
            # re takes the pattern first, pyarrow's kernels second (after the values).
            at = 0 if engine else 1
            pattern = node.args[at] if len(node.args) > at else None
            for keyword in node.keywords:
                if keyword.arg == "pattern":
                    pattern = keyword.value
            yield node.lineno, _constant_text(pattern, constants)


def _finds(expression: re.Pattern[str], datum: str, disarmed: str, covers: Callable[[str], bool]) -> bool:
    text, control = f"write to {datum} today", f"write to {disarmed} today"
    start, end = 9, 9 + len(datum)
    found = any(covers(m.group()) for m in expression.finditer(text) if m.start() < end and m.end() > start)
    if not found:
        return False
    return not any(
        m.start() < end and m.end() > start and m.end() > m.start() for m in expression.finditer(control)
    )


def _disarmed_address(datum: str) -> str:
    for form, other in AT_FORMS_DISARMED:
        datum = datum.replace(form, other)
    return datum


def _covers_address(found: str) -> bool:
    """Whether what an expression found holds an address's "@" (or "at") between a name and a domain."""
    return re.search(r"\w\W{0,3}(?:@|＠|%40|&#64;|\bat\b)\W{0,3}\w", found) is not None


def _covers_number(found: str) -> bool:
    """Whether what an expression found is a phone number's worth: seven digits or more, across a
    separator or after a "+" (a run of digits alone is what any number's expression finds)."""
    digits = sum(char.isdigit() for char in found)
    return digits >= 7 and (re.search(r"\d[ ().\-]+\d", found) is not None or found.startswith("+"))


def looks_for_personal_data(pattern: str) -> bool:
    """Whether an expression finds an e-mail address or a phone number (see above)."""
    if re.search(r"phone|e-?mail|\bfax\b", pattern, re.IGNORECASE):
        return True
    try:
        expression = re.compile(pattern, re.IGNORECASE)
    except (re.error, OverflowError):
        # Another engine's syntax (RE2's \p{..}, \x{..}): read as text, an "@" in any form is enough.
        return re.search(r"@|\\x\{?0*ff20|\\uff20|%40|&#0*64|commat", pattern, re.IGNORECASE) is not None
    addresses = any(
        _finds(expression, datum, _disarmed_address(datum), _covers_address) for datum in ADDRESS_PROBES
    )
    return addresses or any(
        _finds(expression, datum, re.sub(r"\d", "x", datum), _covers_number) for datum in PHONE_PROBES
    )


def personal_data_lookups(root: Path = PACKAGE) -> list[str]:
    """Where a module outside crawler/privacy/ looks for personal data: an expression that finds some, or
    an import of phonenumbers."""
    found = [
        str(imp)
        for imp in (package_imports() if root == PACKAGE else imports(root))
        if within(imp.target, "phonenumbers") and not within(imp.module, PRIVACY_PACKAGE)
    ]
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        if within(module, PRIVACY_PACKAGE):
            continue
        for line, pattern in regex_patterns(path.read_text(encoding="utf-8")):
            if looks_for_personal_data(pattern):
                found.append(f"{module}:{line} looks for personal data: {pattern[:80]!r}")
    return found


def test_only_the_privacy_package_looks_for_personal_data() -> None:
    assert personal_data_lookups() == []


def test_the_privacy_package_is_found_looking_for_it() -> None:
    # The rule reads expressions as they are written there, f-strings of constants, RE2's syntax too.
    found = [
        line
        for path in sorted((PACKAGE / "privacy").rglob("*.py"))
        for line, pattern in regex_patterns(path.read_text(encoding="utf-8"))
        if looks_for_personal_data(pattern)
    ]
    assert len(found) >= 3, found


@pytest.mark.parametrize(
    "source",
    [
        'import re\nEMAIL = re.compile(r"[\\w.+-]+@[\\w-]+\\.[\\w.-]+")\n',
        'import re\n_AT = r"\\s*(?:@|\\[at\\])\\s*"\n_EMAIL = re.compile(rf"\\w+{_AT}\\w+(?:\\.\\w+)+")\n',
        'import re\ndef f(text):\n    return re.sub(r"\\b\\w+ at \\w+ dot com\\b", "", text)\n',
        'import re\n_PHONE = re.compile(r"(?:\\+\\d{1,3})?(?:[ .\\-]?\\d{1,5}){2,5}")\n',
        'import re\nPHONE = re.compile(r"\\(\\d{3}\\) ?\\d{3}-\\d{4}")\n',
        'import re\nWORDS = re.compile(r"\\b(?:phone|tel)\\b")\n',
        "import phonenumbers\n",
        "def f():\n    from phonenumbers import parse\n",
        'import pyarrow.compute as pc\nLIKE = r"\\pL+\\x{FF20}\\pL+"\n'
        "def f(v):\n    return pc.match_substring_regex(v, LIKE)\n",
    ],
)
def test_a_detector_put_back_elsewhere_is_found(source: str, tmp_path: Path) -> None:
    path = tmp_path / "crawler" / "transcripts" / "x.py"
    path.parent.mkdir(parents=True)
    path.write_text(source, encoding="utf-8")
    assert len(personal_data_lookups(tmp_path / "crawler")) == 1, source


@pytest.mark.parametrize(
    "pattern",
    [
        r"[{}\\`@]",  # the card's citation key loses its "@"
        r"\d+(\.\d+)?",
        r"^(\d{4})-?(\d{4})-?(\d{4})-?(\d{3}[\dX])$",
        r"\S+",
        r".*",
        r"(\d+)",
        r"(?:\d{1,10}:)?\d{1,2}:\d{2}[.,]\d{3}",
        r"^/api/v1/thin_lectures/(?P<id>\d+)$",
        r"^\s*0*(\d{1,18})(?!\d)",
        r"[\w'-]+[.,;:?!]?",
    ],
)
def test_general_expressions_are_innocent(pattern: str) -> None:
    assert not looks_for_personal_data(pattern)
