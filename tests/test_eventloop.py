"""Every run's loop comes from crawler.shell.eventloop: uvloop's where it is installed,
asyncio's where it is not, and no other module makes a loop of its own (a forked worker on
another loop than its crawl's would be measured on one and run on the other)."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawler.shell import eventloop
from tests.procs import missing

ROOT = Path(__file__).resolve().parent.parent


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


@pytest.fixture
def fresh_factory() -> Iterator[None]:
    eventloop.loop_factory.cache_clear()
    yield
    eventloop.loop_factory.cache_clear()


def test_a_run_is_on_uvloop_where_it_is_installed(fresh_factory: None) -> None:
    if importlib.util.find_spec("uvloop") is None:  # pyproject's marker: Windows, PyPy
        missing("uvloop is not installed: pip install -e '.[dev]' (or pip install uvloop)")
    assert eventloop.run(_loop_module()).startswith("uvloop")


def test_a_run_is_on_asyncios_loop_where_uvloop_is_missing(
    fresh_factory: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    assert eventloop.run(_loop_module()).startswith("asyncio")


def test_the_interrupts_and_the_cli_run_on_the_same_loop(fresh_factory: None) -> None:
    from crawler.cli import _run
    from crawler.shell import interrupts

    assert interrupts.run(_loop_module()) == _run(_loop_module()) == eventloop.run(_loop_module())


def _loop_makers(path: Path) -> list[str]:
    """Calls of asyncio.run, asyncio.Runner or asyncio.new_event_loop in `path`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "asyncio"
            and node.func.attr in {"run", "Runner", "new_event_loop"}
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} asyncio.{node.func.attr}")
    return found


def test_no_module_but_eventloop_makes_a_loop() -> None:
    owner = ROOT / "crawler/shell/eventloop.py"
    found = [
        where
        for folder in ("crawler", "sitemap_out")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != owner
        for where in _loop_makers(path)
    ]
    assert not found, found
