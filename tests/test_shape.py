"""The brief's measurable shape rules (#22), checked on the source so that a change breaking
one fails here rather than in a review: no class over 400 lines, the engine small, the core
free of I/O and event-loop types, every third-party import declared."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("crawler", "sitemap_out")
MAX_CLASS_LINES = 400
MAX_ENGINE_LINES = 600

# what the functional core may not touch: the network and its types, the event loop, files
# and databases, processes, the browser (crawler/core is pure functions on dataclasses)
CORE_FORBIDDEN = frozenset(
    {
        "aiohttp", "multidict", "yarl", "asyncio", "uvloop", "sqlite3", "socket", "ssl",
        "http", "subprocess", "multiprocessing", "threading", "os", "shutil", "tempfile",
        "signal", "tenacity", "playwright", "lxml",
    }
)  # fmt: skip

# import name -> distribution, where the two differ
DISTRIBUTION = {
    "yaml": "pyyaml",
    "prometheus_client": "prometheus-client",
    "google": "google-auth",
}


def _sources(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _imported(path: Path) -> set[str]:
    """Top-level module names imported anywhere in the file (in functions too: a lazy
    import is still a dependency)."""
    names: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = list(project.get("dependencies", []))
    for extra, listed in project.get("optional-dependencies", {}).items():
        if extra != "dev":  # a runtime import may not lean on the test tools
            specs += listed
    return {_normal(re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0]) for spec in specs}


def test_no_class_is_over_400_lines():
    over = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)"
        for path in _sources(*PACKAGES)
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.ClassDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > MAX_CLASS_LINES
    ]
    assert not over, over


def test_the_engine_stays_under_600_lines():
    lines = len((ROOT / "crawler/shell/engine.py").read_text(encoding="utf-8").splitlines())
    assert lines < MAX_ENGINE_LINES


def test_the_core_imports_no_io_or_event_loop_module():
    found = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in _sources("crawler/core")
        for name in _imported(path) & CORE_FORBIDDEN
    }
    assert not found, sorted(found)


def test_every_third_party_import_is_declared():
    ours = set(PACKAGES)
    imported = {
        name
        for path in _sources(*PACKAGES)
        for name in _imported(path)
        if name not in sys.stdlib_module_names and name not in ours
    }
    assert imported  # the walk found the imports at all
    declared = _declared()
    missing = sorted(n for n in imported if _normal(DISTRIBUTION.get(n, n)) not in declared)
    assert not missing, f"imported but not in pyproject.toml: {missing}"
