"""The code is ruff-clean and type-checks: run as tests so CI enforces both.

Both tools are run by the interpreter running the tests (`python -m ruff`, `python -m mypy`),
so PATH does not matter; a missing tool is a failure, not a skip, or CI would pass unchecked.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)


def _require(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.fail(
            f"{module} is not installed for {sys.executable}: install the dev extras "
            f"(python3 -m pip install -e '.[dev]', as .ci/run does)",
            pytrace=False,
        )


def test_ruff_check():
    _require("ruff")
    result = _run(
        sys.executable, "-m", "ruff", "check", "crawler", "sitemap_out", "tests", "bench",
        "build_support", "setup.py",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy():
    _require("mypy")
    result = _run(
        sys.executable, "-m", "mypy", "--ignore-missing-imports", "crawler", "sitemap_out",
        "build_support", "setup.py",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
