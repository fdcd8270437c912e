"""This checkout's wheel built compiled (setup.py's modules, by mypyc), unpacked into a folder
to import the packages from: for tests/test_compiled.py and the benchmarks' --compiled. Built
with this environment's setuptools and mypy (no build isolation: nothing is downloaded), from
a copy of the sources, since a build writes build/ and *.egg-info beside them."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

#: What the wheel is built from
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md")
PACKAGES = ("build_support", "crawler", "sitemap_out")


class BuildFailed(RuntimeError):
    """The compiled wheel could not be built: pip's output says why."""


def digest(repo: Path) -> str:
    """A digest of everything the wheel is built from, to tell a build of these sources."""
    sha = hashlib.sha256()
    files = [repo / name for name in SOURCES]
    for package in PACKAGES:
        files += sorted((repo / package).rglob("*.py"))
    for path in files:
        sha.update(str(path.relative_to(repo)).encode() + b"\0" + path.read_bytes() + b"\0")
    return sha.hexdigest()[:16]


def build_unpacked(repo: Path, work: Path) -> Path:
    """Build the compiled wheel of `repo` in `work` (emptied first) and unpack it there; the
    folder to put first on PYTHONPATH."""
    shutil.rmtree(work, ignore_errors=True)
    src, wheels, unpacked = work / "src", work / "wheels", work / "build"
    src.mkdir(parents=True)
    for name in SOURCES:
        shutil.copy2(repo / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.so")  # an in-place build's leftovers
    for name in PACKAGES:
        shutil.copytree(repo / name, src / name, ignore=skip)
    made = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-cache-dir", "-q", "-w", str(wheels), str(src)],
        env={**os.environ, "SITEMAP_CRAWLER_COMPILE": "1"},
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    if made.returncode != 0:
        why = f"{made.stdout}{made.stderr}"
        raise BuildFailed(f"pip wheel of {repo}: exit {made.returncode}\n{why}")
    (wheel,) = wheels.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    return unpacked
