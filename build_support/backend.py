"""The build backend: setuptools', with the crawl's per-page modules compiled by mypyc in a
wheel (#26: the unchanged night's CPU is mostly the interpreter running them).

A wheel (`pip install .`, the container image) is compiled; an editable install
(`pip install -e .`, a developer's) is not, so that an edited module is the one that runs.
SITEMAP_CRAWLER_COMPILE chooses: `auto` (the default: a wheel tries, and a build that cannot
compile, without a C compiler or Python's headers, holds the same modules as Python; pip shows
why only with -v, `sitemap-crawler --version` says which), `1` (a wheel must compile: the
build fails otherwise), `0` (never; also for an offline install without mypy at hand). mypy,
which holds mypyc, is asked for only by a build that compiles. setup.py lists the modules.
"""

from __future__ import annotations

import os

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  # every other hook is setuptools' own

#: mypyc's version: the one the compiled modules were measured and tested with
MYPYC = "mypy==2.4.1"
#: set for setup.py by build_wheel: this build makes a wheel, not an editable install
WHEEL_VARIABLE = "_SITEMAP_CRAWLER_WHEEL"


def _compiles() -> bool:
    return os.environ.get("SITEMAP_CRAWLER_COMPILE", "auto") != "0"


Settings = dict[str, str | list[str]] | None  # PEP 517's config_settings


def get_requires_for_build_wheel(config_settings: Settings = None) -> list[str]:
    more = [MYPYC] if _compiles() else []
    return [*_setuptools.get_requires_for_build_wheel(config_settings), *more]


def build_wheel(
    wheel_directory: str, config_settings: Settings = None, metadata_directory: str | None = None
) -> str:
    os.environ[WHEEL_VARIABLE] = "1"
    try:
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    finally:
        del os.environ[WHEEL_VARIABLE]
