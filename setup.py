"""The compiled modules of a wheel (build_support/backend.py says when; pyproject.toml holds
everything else). They are the modules every page passes through, whose Python a profile of
the unchanged night names (#26; bench/README.md, "Where #26 stands (end of the session that
compiled the per-page modules)"). Each compiles as it is; none holds a class an interpreted
module's class inherits from (mypyc refuses), nor a record crawler.core.wire packs (it reads
their annotations, which mypyc erases: wire fails loudly if it meets one). A module added
here is measured first, and the suite passes with it compiled (tests/test_compiled.py)."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import BaseError, CCompilerError

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


def _mode() -> str:
    mode = os.environ.get("SITEMAP_CRAWLER_COMPILE", "auto")
    if mode not in ("auto", "1", "0"):
        sys.exit(f"SITEMAP_CRAWLER_COMPILE={mode!r}: expected auto, 1 or 0")
    return mode


class AllOrNone(build_ext):
    """The compiled modules, all of them or (`auto`) none: each module's own extension is a
    shim that imports the group's library (sitemap_crawler__mypyc), so one that compiled
    beside a library that did not fails at import. In `auto` a failure (no compiler, no
    Python.h, a warning of a newer compiler under mypyc's -Werror, cc1 killed) removes what
    was built, and the wheel holds the modules as Python."""

    def run(self) -> None:
        # an earlier build's extension of a module since taken off COMPILED: a shim the
        # group's library no longer initialises (pip builds a local folder in place)
        wanted = {Path(output).resolve() for output in self.get_outputs()}
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        for built in Path(self.build_lib).rglob(f"*{suffix}"):
            if built.resolve() not in wanted:
                built.unlink()
        try:
            super().run()
        except (BaseError, CCompilerError) as exc:
            if _mode() != "auto":
                raise
            for output in self.get_outputs():
                Path(output).unlink(missing_ok=True)
            print(
                f"sitemap-crawler: not compiled ({exc}): the modules stay Python", file=sys.stderr
            )


def _extensions() -> list[Extension]:
    # build_support/backend.py's WHEEL_VARIABLE: set by a wheel's build, not an editable one
    if _mode() == "0" or not os.environ.get("_SITEMAP_CRAWLER_WHEEL"):
        return []
    from mypyc.build import mypycify

    # The options tests/test_static.py type-checks with (a dependency without types is Any),
    # and no installed package read: the same C whether the build sees the dependencies
    # (tests/test_compiled.py's, without isolation) or not (pip's isolated build, a user's)
    return mypycify(
        ["--ignore-missing-imports", "--no-site-packages", *COMPILED],
        opt_level="3",
        group_name="sitemap_crawler",
    )


if __name__ == "__main__":  # as setuptools runs it; tests/test_compiled.py reads COMPILED
    setup(ext_modules=_extensions(), cmdclass={"build_ext": AllOrNone})
