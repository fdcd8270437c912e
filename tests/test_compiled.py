"""The compiled wheel: setup.py's modules built by mypyc, as `pip install .` and the container
image build them (#26), behave as the checkout's Python does.

mypyc changes how a module runs, not what it says: calls between compiled functions are bound
when compiled, every annotation is checked at run time (a value its annotation does not allow
raises TypeError), and a compiled class takes no new attribute. So the wheel is built here
(build_support/local.py: with this venv's setuptools and mypy, nothing downloaded), and the
suite runs again against it, in a pytest of its own whose children import it too
(tests/procs.py's BUILD_VARIABLE).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from build_support.local import BuildFailed, build_unpacked
from tests.procs import BUILD_VARIABLE, REPO, missing

#: The suite runs again against the compiled modules, but for these files: this one, the
#: static checks (of the sources, not the build) and the container image's (which builds its
#: own wheel, compiled). Tests marked `interpreted` are skipped there (tests/conftest.py).
NOT_RUN_COMPILED = ("test_compiled.py", "test_static.py", "test_container_image.py")


def _compiler() -> None:
    """A C compiler and Python's headers, as mypyc's build needs (skipped without, failed in
    CI)."""
    include = Path(sysconfig.get_path("include"))
    if not (shutil.which("cc") or shutil.which("gcc")):
        missing(
            "no C compiler (cc, gcc) to build the compiled wheel: install gcc"
            " (Debian: apt install gcc libc6-dev)"
        )
    if not (include / "Python.h").is_file():
        missing(
            f"no Python.h in {include} to build the compiled wheel: install Python's headers"
            " (Debian's python3: apt install python3-dev)"
        )


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The compiled wheel, unpacked: a folder to import the packages from."""
    _compiler()
    try:
        return build_unpacked(REPO, tmp_path_factory.mktemp("compiled"))
    except BuildFailed as failed:
        pytest.fail(str(failed), pytrace=False)


pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def test_wheel_compiles_every_module_listed(build: Path):
    sys.path.insert(0, str(REPO))  # setup.py's list, read as data
    try:
        from setup import COMPILED  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(REPO))
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for module in COMPILED:
        assert (build / module).with_suffix("").with_suffix(suffix).is_file(), module
    version = subprocess.run(
        [sys.executable, "-P", "-m", "crawler.cli", "--version"],
        env={**os.environ, "PYTHONPATH": str(build)},
        cwd=build, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert version.stdout.strip().endswith("(compiled)"), version.stdout + version.stderr


def test_the_suite_passes_compiled(build: Path):
    """The suite but NOT_RUN_COMPILED, in a pytest of its own that imports the compiled
    packages first: PYTHONSAFEPATH, so that neither it nor a child Python started in the
    checkout (`python -m crawler.cli`, `python -c ...`) puts the current folder before
    PYTHONPATH; --import-mode=append, so that pytest puts the checkout's root after it.
    tests/conftest.py checks both, before any test runs."""
    ignored = [f"--ignore=tests/{name}" for name in NOT_RUN_COMPILED]
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--import-mode=append", *ignored],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(build), str(REPO)]),
             "PYTHONSAFEPATH": "1", BUILD_VARIABLE: str(build)},
        cwd=REPO, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    tail = "\n".join(ran.stdout.splitlines()[-40:])
    assert ran.returncode == 0, tail + ran.stderr[-2000:]
