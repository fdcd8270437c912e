"""The compiled modules of a wheel (build_support/backend.py says when; pyproject.toml holds
everything else). They are the modules every page passes through, whose Python a profile of
the unchanged night names (#26, bench/README.md "Compiled with mypyc"). Each compiles as it
is; none holds a class an interpreted module's class inherits from (mypyc refuses), nor a
record crawler.core.wire packs (it reads their annotations, which mypyc erases: wire fails
loudly if it meets one). A module added here is measured first, and the suite passes with it
compiled (tests/test_compiled.py)."""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup

COMPILED = [
    "crawler/core/decide.py",
    "crawler/core/frontier.py",
    "crawler/core/history.py",
    "crawler/core/httpdate.py",
    "crawler/core/robots.py",
    "crawler/core/screen.py",
    "crawler/core/urls.py",
    "crawler/shell/http1.py",
    "crawler/shell/journal.py",
    "crawler/shell/links.py",
    "crawler/shell/loop.py",
    "crawler/shell/revalidation.py",
    "crawler/shell/settled.py",
    "crawler/shell/state_history.py",
    "crawler/shell/state_queue.py",
    "crawler/shell/throttle.py",
]


def _extensions() -> list[Extension]:
    mode = os.environ.get("SITEMAP_CRAWLER_COMPILE", "auto")
    if mode not in ("auto", "1", "0"):
        sys.exit(f"SITEMAP_CRAWLER_COMPILE={mode!r}: expected auto, 1 or 0")
    if mode == "0" or not os.environ.get("_SITEMAP_CRAWLER_WHEEL"):  # an editable install
        return []
    from mypyc.build import mypycify

    # the options tests/test_static.py type-checks with: a dependency without types is Any
    extensions = mypycify(
        ["--ignore-missing-imports", *COMPILED], opt_level="3", group_name="sitemap_crawler"
    )
    for extension in extensions:
        extension.optional = mode == "auto"  # no compiler: the same modules, as Python
    return extensions


if __name__ == "__main__":  # as setuptools runs it; tests/test_compiled.py reads COMPILED
    setup(ext_modules=_extensions())
