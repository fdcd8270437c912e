"""Which sitemap group a listed URL is in (the `groups` setting). Pure: no I/O.

Search Console reports indexing per submitted sitemap, so users split the sitemap by section
or content type to see which part of a site is not indexed. A group is a name and include
patterns (crawler.core.patterns: matched against the path and query as the sitemap lists
it); the groups are tried in the order given, the first whose pattern matches takes the
URL, and a URL no group claims is in the default group (sitemap_out.groups.DEFAULT_GROUP),
whose parts keep the plain sitemap-N names.

The setting is a list of `NAME=PATTERN` items (the flag and the environment variable give
one a line; `[[groups]]` tables in the config file become the same items), so that every
way of giving it says the same thing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from crawler.core.patterns import Patterns, path_and_query
from crawler.errors import ConfigError
from sitemap_out.groups import DEFAULT_GROUP, MAX_GROUPS, name_problem

__all__ = ["DEFAULT_GROUP", "NO_GROUPS", "Groups", "group_items"]

# a comma then what starts a pattern or an item (/x, re:, name=): a list written on one line,
# which would silently become one pattern no URL matches (a comma in a path is kept)
_LISTED = re.compile(r",\s*(?:/|re:|[a-z][a-z0-9_-]*=)")


@dataclass(slots=True, frozen=True)
class Groups:
    """The configured groups in order, each with its compiled patterns. Empty: no groups
    (the sitemap is not grouped at all)."""

    items: tuple[tuple[str, Patterns], ...] = ()

    @classmethod
    def parse(cls, specs: Iterable[str]) -> Groups:
        """Groups from `NAME=PATTERN` items, in the order of each name's first item;
        ConfigError naming the bad group or item."""
        patterns: dict[str, list[str]] = {}
        for spec in specs:
            name, equals, pattern = spec.partition("=")
            name = name.strip()
            if not equals:
                raise ConfigError(f"groups: {spec!r} is not NAME=PATTERN (e.g. blog=/blog/*)")
            problem = name_problem(name)
            if problem is not None:
                raise ConfigError(f"groups: the group name {name!r} {problem}")
            pattern = pattern.strip()
            if _LISTED.search(pattern):
                raise ConfigError(
                    f"groups: {spec!r} holds a comma before another pattern: a comma is part of"
                    " the pattern (as in include); give one NAME=PATTERN per --groups, or one a"
                    " line in SITEMAP_CRAWLER_GROUPS"
                )
            patterns.setdefault(name, []).append(pattern)
        if len(patterns) >= MAX_GROUPS:  # the default group is one more
            raise ConfigError(f"groups: {len(patterns)} groups, at most {MAX_GROUPS - 1}")
        return cls(
            tuple(
                (name, Patterns.compile(texts, f"groups: group {name!r}"))
                for name, texts in patterns.items()
            )
        )

    def __bool__(self) -> bool:
        return bool(self.items)

    @property
    def names(self) -> tuple[str, ...]:
        """Every group in the index's order, the default group last."""
        return (*(name for name, _ in self.items), DEFAULT_GROUP)

    def group_of(self, url: str) -> str:
        """The group of `url` (as the sitemap lists it): the first group with a pattern
        matching its path and query, else DEFAULT_GROUP."""
        if not self.items:
            return DEFAULT_GROUP
        path = path_and_query(url)
        for name, patterns in self.items:
            if patterns.match(path) is not None:
                return name
        return DEFAULT_GROUP


NO_GROUPS = Groups()


def group_items(tables: object) -> tuple[str, ...]:
    """The `NAME=PATTERN` items of the config file's `[[groups]]` tables (each: `name`
    and `include`, a list of patterns); ConfigError naming the bad table."""
    if not isinstance(tables, list):
        raise ConfigError(
            'groups must be [[groups]] tables (name = "blog", include = ["/blog/*"]), '
            f"got {tables!r}"
        )
    items: list[str] = []
    named: set[str] = set()
    for number, table in enumerate(tables, 1):
        if not isinstance(table, dict):
            raise ConfigError(f"[[groups]] number {number} is not a table: {table!r}")
        name = table.get("name")
        which = f"[[groups]] {name!r}" if isinstance(name, str) else f"[[groups]] number {number}"
        unknown = sorted(set(table) - {"name", "include"})
        if unknown:
            raise ConfigError(f"{which}: unknown key {unknown[0]!r} (known: name, include)")
        if not isinstance(name, str):
            raise ConfigError(f"{which} needs name, a string")
        problem = name_problem(name)
        if problem is not None:
            raise ConfigError(f"groups: the group name {name!r} {problem}")
        if name in named:
            raise ConfigError(
                f"{which} is given twice: put all of its patterns in one table's include"
            )
        named.add(name)
        include = table.get("include")
        if isinstance(include, str):
            include = [include]
        if not isinstance(include, list) or not include:
            raise ConfigError(f"{which} needs include, a list of patterns such as ['/blog/*']")
        for pattern in include:
            if not isinstance(pattern, str):
                raise ConfigError(f"{which}: include pattern {pattern!r} is not a string")
            items.append(f"{name}={pattern}")
    return tuple(items)
