"""The code is ruff-clean and type-checks: run as tests so CI enforces both."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed")
def test_ruff_check():
    result = _run("ruff", "check", "crawler", "sitemap_out", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy():
    pytest.importorskip("mypy")
    result = _run(
        sys.executable, "-m", "mypy", "--ignore-missing-imports", "crawler", "sitemap_out"
    )
    assert result.returncode == 0, result.stdout + result.stderr
