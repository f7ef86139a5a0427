"""Every setting a component reads has exactly one default, and no component repeats it as a fallback.

The project's defaults live in ``crawler/settings.py``, the fleet's (``FRONTIER_*``) among them; Scrapy's
own settings keep Scrapy's defaults. The package is read as source (``ast``), so a read added anywhere is
checked.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from scrapy.settings import default_settings

import crawler.settings
from crawler.frontier import frontier_settings
from tests.support.settings import project_crawler

PACKAGE = Path(crawler.settings.__file__).parent
PROJECT_SETTINGS = PACKAGE / "settings.py"
READERS = frozenset(
    {"get", "getbool", "getint", "getfloat", "getlist", "getdict", "getdictorlist", "getwithbase"}
)


@dataclass(frozen=True)
class Read:
    where: str
    name: str | None  # None: the name is computed, not written in the call
    fallback: bool


def _is_settings(node: ast.expr) -> bool:
    """``settings``, ``crawler.settings``, ``self.settings``: any expression that names the settings."""
    return (isinstance(node, ast.Name) and node.id == "settings") or (
        isinstance(node, ast.Attribute) and node.attr == "settings"
    )


def _name(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def settings_reads(source: str, filename: str = "<source>") -> list[Read]:
    """The settings reads in *source*: ``settings.get*("NAME", ...)`` and ``settings["NAME"]``.

    A read has a fallback when it passes a default argument, or when its value is ``or``-ed with another
    (``settings.get("X") or "main"``).
    """
    tree = ast.parse(source, filename)
    or_ed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            or_ed.update(id(value) for value in node.values[:-1])
    reads = []
    for node in ast.walk(tree):
        where = f"{filename}:{getattr(node, 'lineno', 0)}"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in READERS
            and _is_settings(node.func.value)
        ):
            first = node.args[0] if node.args else None
            fallback = len(node.args) > 1 or any(k.arg == "default" for k in node.keywords)
            reads.append(Read(where, _name(first), fallback or id(node) in or_ed))
        elif isinstance(node, ast.Subscript) and _is_settings(node.value):
            reads.append(Read(where, _name(node.slice), id(node) in or_ed))
    return reads


def package_reads() -> list[Read]:
    return [
        read
        for path in sorted(PACKAGE.rglob("*.py"))
        for read in settings_reads(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)))
    ]


def written_defaults() -> dict[str, list[str]]:
    """Every place a default is written: the module-level assignments of settings.py."""
    places: dict[str, list[str]] = {}
    for node in ast.parse(PROJECT_SETTINGS.read_text(encoding="utf-8")).body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        for target in targets:
            if isinstance(target, ast.Name) and target.id.isupper():
                places.setdefault(target.id, []).append(f"crawler/settings.py:{node.lineno}")
    return places


def test_the_scan_sees_reads_fallbacks_and_computed_names() -> None:
    source = """
def build(crawler, settings, key):
    settings.getint("A")
    crawler.settings.getfloat("B", 2.0)
    self.settings.getlist("C", default=[])
    settings.get("D") or "main"
    settings["E"]
    settings.getbool(key)
    stats.get("not/a/setting", 0)
    response.meta.get("download_slot")
"""
    assert sorted(settings_reads(source, "x.py"), key=lambda read: read.where) == [
        Read("x.py:3", "A", False),
        Read("x.py:4", "B", True),
        Read("x.py:5", "C", True),
        Read("x.py:6", "D", True),
        Read("x.py:7", "E", False),
        Read("x.py:8", None, False),
    ]


def test_the_package_is_scanned() -> None:
    names = {read.name for read in package_reads()}
    # One read of each kind of component: a middleware, the cache, a pipeline, the spider, the fleet.
    assert {"BACKOFF_MAX_RETRIES", "HTTPCACHE_MAX_AGE_DAYS", "STAGE_WORKER", "UNDERLINE_WEB_BASE"} <= names
    assert "FRONTIER_HEARTBEAT_TTL" in names


def test_no_component_repeats_a_default_as_a_fallback() -> None:
    assert [read.where for read in package_reads() if read.fallback] == []


def test_every_setting_read_has_exactly_one_default() -> None:
    written = written_defaults()
    problems = []
    for read in package_reads():
        if read.name is None or hasattr(default_settings, read.name):
            continue
        places = written.get(read.name, [])
        if len(places) != 1:
            problems.append(
                f"{read.where} reads {read.name}, whose default is written at {places or 'no place'}"
            )
    assert problems == []


def test_no_default_is_written_twice() -> None:
    assert {name: places for name, places in written_defaults().items() if len(places) > 1} == {}


def test_a_fleet_worker_keeps_the_project_defaults_and_joins_the_frontier() -> None:
    fleet = {
        name: getattr(crawler.settings, name)
        for name in dir(crawler.settings)
        if name.startswith("FRONTIER_")
    }
    assert len(fleet) == 10
    worker = project_crawler(settings_dict=frontier_settings("redis://127.0.0.1:1/0", "w-1")).settings
    assert {name: worker[name] for name in fleet if name != "FRONTIER_URL"} == {
        name: value for name, value in fleet.items() if name != "FRONTIER_URL"
    }
    assert worker["FRONTIER_URL"] == "redis://127.0.0.1:1/0"
    assert worker["STAGE_FLEET"] == "crawler.frontier.fleet_stage.FleetStage"
    assert worker["SCHEDULER"] == "crawler.frontier.scheduler.FrontierScheduler"
    alone = project_crawler().settings
    assert alone["FRONTIER_URL"] is None
    assert alone["STAGE_FLEET"] is None
    assert alone["SCHEDULER"] != worker["SCHEDULER"]


def test_the_site_is_named_once() -> None:
    sites = {crawler.settings.UNDERLINE_WEB_BASE, crawler.settings.UNDERLINE_API_BASE}
    named = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "replica" not in path.parts
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.rstrip("/") in sites
    ]
    assert named == ["crawler/settings.py:15", "crawler/settings.py:16"]


def test_the_pipelines_docstring_follows_the_order_settings_run_them() -> None:
    import crawler.pipelines

    ordered = sorted(crawler.settings.ITEM_PIPELINES.items(), key=lambda kv: kv[1])
    modules = [path.split(".")[-2] for path, _ in ordered]
    assert modules == ["normalize", "privacy", "boilerplate", "dedup", "stage"]
    assert crawler.pipelines.__doc__ is not None
    assert " -> ".join(modules) in " ".join(crawler.pipelines.__doc__.split())


def test_the_remote_control_is_not_loaded_while_it_is_off(tmp_path: Path) -> None:
    from crawler.app.crawling import REMOTE_CONTROL, crawl_settings

    off = crawl_settings(tmp_path)
    assert REMOTE_CONTROL not in off.getwithbase("EXTENSIONS")
    # The project's own extensions are still there.
    assert off.getwithbase("EXTENSIONS")["crawler.extensions.workers.WorkerProcesses"] == 100
    on = crawl_settings(tmp_path, overrides={"REMOTE_CONTROL_ENABLED": "True"})
    assert on.getwithbase("EXTENSIONS")[REMOTE_CONTROL] == 0


def test_a_crawl_with_the_remote_control_off_never_imports_it(tmp_path: Path) -> None:
    # In a fresh interpreter: Scrapy's extension manager reads its list as below, which imports every
    # extension the list names.
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from crawler.app.crawling import crawl_settings\n"
        "crawl_settings(Path(sys.argv[1])).get_component_priority_dict_with_base('EXTENSIONS')\n"
        "print(sorted(m for m in sys.modules if m.startswith(('aiohttp', 'scrapy.extensions.remote'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"


# The command line's and the flows' own defaults (crawler/app/): each is a name, written once where it
# belongs (crawler/settings.py, a configuration's RunConfig, the module that uses it), never a literal that
# repeats it, and a help text formats the named value rather than writing it out again.
APP = PACKAGE / "app"
HELP_DEFAULT = re.compile(r"\(default:?\s*([^)]*)")


def _literals(node: ast.AST) -> list[object]:
    """The number and string literals written in *node* (an option's own name, ``--x``, is a label)."""
    return [
        sub.value
        for sub in ast.walk(node)
        if isinstance(sub, ast.Constant)
        and not isinstance(sub.value, bool)
        and isinstance(sub.value, int | float | str)
        and sub.value != ""
        and not (isinstance(sub.value, str) and sub.value.startswith("--"))
    ]


def _written_values() -> set[str]:
    """Every default value as text: the project's settings and a configuration's, as a help would write
    them."""
    from crawler.schedule.config import RunConfig

    values: list[object] = [
        getattr(crawler.settings, name) for name in dir(crawler.settings) if name.isupper()
    ]
    values += [getattr(RunConfig(), f.name) for f in dataclasses.fields(RunConfig)]
    texts = set()
    for value in values:
        if isinstance(value, bool) or not isinstance(value, str | int | float | Path):
            continue
        texts.add(format(value, "g") if isinstance(value, float) else str(value))
    return texts


def defaults_written_out(source: str, filename: str, written: set[str]) -> list[str]:
    """Where *source* writes a default out: a literal ``default=`` of an option, a literal default of a
    function's parameter, a help's ``(default: ...)`` that writes a value some default already holds."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        where = f"{filename}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            given = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
            found += [f"{where} {node.name}() defaults to {value!r}" for d in given for value in _literals(d)]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            for keyword in node.keywords:
                if keyword.arg == "default":
                    found += [
                        f"{where} an option defaults to {value!r}" for value in _literals(keyword.value)
                    ]
                elif keyword.arg == "help":
                    pieces = (
                        keyword.value.values if isinstance(keyword.value, ast.JoinedStr) else [keyword.value]
                    )
                    for piece in pieces:
                        if not (isinstance(piece, ast.Constant) and isinstance(piece.value, str)):
                            continue
                        for said in HELP_DEFAULT.findall(piece.value):
                            words = {w.rstrip("/.,;:") for w in re.split(r"[\s,;]+", said)}
                            if words & written or re.search(r"\d", said):
                                found.append(f"{where} a help writes out its default: {said!r}")
    return found


def test_no_default_is_written_out_twice_in_the_command_line_or_the_flows() -> None:
    written = _written_values()
    found = [
        problem
        for path in sorted(APP.glob("*.py"))
        for problem in defaults_written_out(
            path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)), written
        )
    ]
    assert found == []


def test_a_default_written_out_again_is_found() -> None:
    source = """
def flow(out, *, seed=0, what="--out", state=Path("state"), name=None, items=()):
    pass

def build(parser):
    parser.add_argument("--max-age-days", type=float, default=30.0)
    parser.add_argument("--delay", default=DELAY, help="seconds between requests (default: 1)")
    parser.add_argument("--state", default=STATE, help="state directory (default: state)")
    parser.add_argument("--lectures", default=LECTURES, help=f"pages (default: {LECTURES})")
    parser.add_argument("--state", help="state directory (default: a fresh temporary one)")
"""
    assert defaults_written_out(source, "x.py", {"1", "state", "30"}) == [
        "x.py:2 flow() defaults to 0",
        "x.py:2 flow() defaults to 'state'",
        "x.py:6 an option defaults to 30.0",
        "x.py:7 a help writes out its default: '1'",
        "x.py:8 a help writes out its default: 'state'",
    ]
