"""Whether the per-page modules run compiled (a wheel built by mypyc: setup.py) or as Python
(an editable install, or a wheel built where there was no C compiler). `--version` says, so
that a slow night can be told from a build without them."""

from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES

from crawler.core import urls


def compiled() -> bool:
    """True when crawler.core.urls, one of setup.py's COMPILED, was loaded as an extension
    module: a wheel compiles them all or none."""
    return (urls.__file__ or "").endswith(tuple(EXTENSION_SUFFIXES))
