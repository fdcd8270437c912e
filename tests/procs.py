"""Child processes in tests run this checkout's code.

A child Python process imports the packages of the checkout under test (PYTHONPATH is the repo
root), never an installed copy, and the CLI is run by the interpreter running the tests
(`sys.executable -m crawler.cli`), so no test depends on the `sitemap-crawler` script being on
PATH.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLI = (sys.executable, "-m", "crawler.cli")


def child_env(**extra: str) -> dict[str, str]:
    """os.environ for a child process that imports this checkout's code, plus `extra`."""
    path = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path), **extra}


def cli_shim(directory: Path) -> Path:
    """A `sitemap-crawler` script in `directory` that runs this checkout's CLI with the
    interpreter running the tests: put `directory` first on a child's PATH for scripts (such as
    docker/entrypoint.sh) that call the console script by name. Returns `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    shim = directory / "sitemap-crawler"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m crawler.cli "$@"\n')
    shim.chmod(0o755)
    return directory
