"""Grouped sitemaps: the part files of each group named after it, under the one index.

Search Console reports indexing per submitted sitemap, so a site split into groups (the
blog, the docs, the shop) shows which section is not indexed. Group ``blog`` publishes
``sitemap-blog-1.xml``, ``sitemap-blog-2.xml``, ...; the default group (the URLs no group
claims) keeps the plain ``sitemap-N`` names, so a set published before groups were
configured keeps its parts. Which group a URL is in is the caller's rule (a
:class:`Grouping`); this module owns how a group's name becomes file names and back. It
imports nothing above it: the manifest, the previous set and the parts read it.
"""

from __future__ import annotations

import re
from typing import Final, Protocol

__all__ = [
    "DEFAULT_GROUP",
    "MAX_GROUPS",
    "NAME_RULE",
    "PART_RE",
    "Grouping",
    "name_problem",
    "part_prefix",
]

#: The group of the URLs no configured group claims; its parts are ``sitemap-N``.
DEFAULT_GROUP: Final = "default"
#: Groups one writer takes (each holds an open part while the crawl is written).
MAX_GROUPS: Final = 100
_NAME: Final = r"[a-z][a-z0-9_]*(?:-[a-z0-9_]+)*"
_NAME_RE: Final = re.compile(_NAME)
_MAX_NAME: Final = 40
NAME_RULE: Final = (
    f"a lowercase letter, then lowercase letters, digits, '_' and single '-' (at most "
    f"{_MAX_NAME} characters)"
)
#: A part file's name: group ("" for the default group), number, extension; a number is
#: never a group's last segment's own (a part number has no '-'), so the parse is unique.
PART_RE: Final = re.compile(
    rf"sitemap-(?:(?P<group>{_NAME})-)?(?P<number>[1-9][0-9]*)(?P<ext>\.(?:xml|txt)(?:\.gz)?)"
)


class Grouping(Protocol):
    """Which group each URL goes in: ``names``, every group in the index's order (the
    default group included), and ``group_of(loc)``, one of them. Pure and cheap: the writer
    asks it once per entry."""

    @property
    def names(self) -> tuple[str, ...]: ...

    def group_of(self, loc: str) -> str: ...


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a group's files, or None: it becomes part of file names and
    URLs, so it is a plain token, and not the default group's (whose parts have no name)."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name) or len(name) > _MAX_NAME:
        return f"must be {NAME_RULE}"
    if name == DEFAULT_GROUP:
        return f"is the group of the URLs no group claims ({DEFAULT_GROUP!r}): choose another"
    return None


def part_prefix(group: str) -> str:
    """``sitemap-<group>-`` of a group's parts, ``sitemap-`` of the default group's."""
    return "sitemap-" if group == DEFAULT_GROUP else f"sitemap-{group}-"
