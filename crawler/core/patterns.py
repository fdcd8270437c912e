"""Include and exclude patterns: which URLs a user wants crawled and listed. Pure: no I/O.

A pattern is matched against a URL's path and query (`/search?q=x`) as the sitemap would list
it (public space: under --public-url, the public path), normalised and percent-encoded as in
the sitemap and the decisions file, case-sensitive. Two kinds:

- a glob: `*` matches any run of characters, `/` and `?` included; every other character is
  literal, so the `?` of `/search?*` is the query's. It must match the whole path and query:
  `/tag/*`, `/search?*`, `*/print/*`, `*.pdf`. Globs are what people write for these, and a
  glob with no special character but `*` cannot surprise anyone.
- `re:` then a Python regular expression, searched anywhere in the path and query
  (`re:^/search\\?`, `re:/page/[0-9]+$`), for what a glob cannot say.

A pattern that cannot work (empty, a regex that does not compile, a glob that cannot match a
path) is a ConfigError naming it, raised before any request is sent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from crawler.errors import ConfigError

__all__ = ["NO_PATTERNS", "Patterns", "glob_regex", "path_and_query"]

REGEX_PREFIX = "re:"


@dataclass(slots=True, frozen=True)
class _Pattern:
    """One --include/--exclude pattern: its text names it in a decision's detail."""

    text: str  # as the user wrote it: what a decision's detail names
    regex: re.Pattern[str]


@dataclass(slots=True, frozen=True)
class Patterns:
    """A compiled set of patterns, in the order given (the first that matches is named)."""

    items: tuple[_Pattern, ...] = ()

    @classmethod
    def compile(cls, texts: Iterable[str], key: str = "pattern") -> Patterns:
        """Compile the patterns of config key `key`; ConfigError naming a bad one."""
        return cls(tuple(_Pattern(text, _compile(text, key)) for text in texts))

    def __bool__(self) -> bool:
        return bool(self.items)

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(p.text for p in self.items)

    def match(self, path: str) -> str | None:
        """The text of the first pattern matching `path` (a path and query), else None."""
        for pattern in self.items:
            if pattern.regex.search(path) is not None:
                return pattern.text
        return None


NO_PATTERNS = Patterns()


def glob_regex(glob: str) -> str:
    """The regular expression (for re.search) matching exactly what `glob` matches: `*` is
    any run of characters, the rest literal, anchored at both ends of the path and query."""
    return r"\A" + ".*".join(re.escape(part) for part in glob.split("*")) + r"\Z"


def path_and_query(url: str) -> str:
    """`/a/b?q=1` of `https://host/a/b?q=1`: what patterns match. A URL here is normalised
    (scheme://authority/path[?query], no fragment), so its path starts at the first `/` after
    the `//` of the authority."""
    start = url.find("//")
    slash = url.find("/", start + 2 if start >= 0 else 0)
    return url[slash:] if slash >= 0 else "/"


def _compile(text: str, key: str) -> re.Pattern[str]:
    if not text:
        raise ConfigError(f"{key} pattern is empty: give a glob such as /tag/* or re:REGEX")
    if text.startswith(REGEX_PREFIX):
        source = text[len(REGEX_PREFIX) :]
        if not source:
            raise ConfigError(f"{key} pattern {text!r} has no regular expression after re:")
        try:
            return re.compile(source)
        except re.error as exc:
            raise ConfigError(
                f"{key} pattern {text!r} is not a valid regular expression: {exc}"
            ) from None
    if not text.startswith(("/", "*")):
        raise ConfigError(
            f"{key} pattern {text!r} can never match: a glob matches the whole path and "
            f"query, which starts with / (write /{text} or */{text})"
        )
    return re.compile(glob_regex(text), re.DOTALL)
