"""llms.txt (llmstxt.org) from a crawl's listed pages. Pure.

The file: ``# <site title>``, ``> <site description>``, then one ``## <section>`` per
section, each a list of ``- [title](url): description`` lines. The site's title and
description are the start page's; the pages are the listed ones (what the sitemap lists,
nothing else), in the sitemap's order, grouped by section (:func:`section_of`: the first
path segment below the sitemap's folder; the folder's own pages first).

Memory is bounded whatever the site's size: the first `max_links` pages in sitemap order
keep their line (each clipped, :func:`about_of`), every later page only adds one to its
section's count, and at most MAX_SECTIONS sections are counted by name (later ones share
one count). So a million-page site costs `max_links` lines and a few counters.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import unquote

__all__ = [
    "MAX_DESCRIPTION",
    "MAX_SECTIONS",
    "MAX_TITLE",
    "LlmsFile",
    "about_of",
    "escape",
    "section_of",
]

#: Characters kept of a title and of a description: enough for any real one, and a page
#: with a megabyte in its <title> costs no more than that in the history and the file.
MAX_TITLE: Final = 200
MAX_DESCRIPTION: Final = 500
#: Sections counted by name; the pages of any later section are counted together.
MAX_SECTIONS: Final = 1000

# control characters and every Unicode space become one space (a title on three lines is
# one line of the file)
_SPACES: Final = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")
# what would end or open Markdown syntax inside a link text or a description
_MARKDOWN: Final = re.compile(r"([\\`*_\[\]<>|])")
# what would end a link destination for a reader (or the reference parser's regular
# expression): its percent-encoded form names the same resource
_DESTINATION: Final = {ord("("): "%28", ord(")"): "%29", ord(" "): "%20", ord("<"): "%3C",
                       ord(">"): "%3E"}  # fmt: skip


def _tidy(text: str | None, limit: int) -> str | None:
    """text on one line, its whitespace collapsed, clipped at a word to at most limit
    characters (an ellipsis marks the cut); None when nothing is left."""
    if not text:
        return None
    text = _SPACES.sub(" ", text).strip()
    if len(text) > limit:
        cut = text[: limit - 1]
        space = cut.rfind(" ")
        text = (cut[:space] if space > limit // 2 else cut).rstrip() + "\u2026"
    return text or None


def about_of(title: str | None, description: str | None) -> tuple[str | None, str | None] | None:
    """A page's title and description as llms.txt keeps them (one line each, clipped), or
    None when it has neither."""
    pair = _tidy(title, MAX_TITLE), _tidy(description, MAX_DESCRIPTION)
    return None if pair == (None, None) else pair


def escape(text: str) -> str:
    """Markdown-escaped: brackets, pipes and the other characters that would open
    emphasis, code, HTML or a link are backslash-escaped (CommonMark)."""
    return _MARKDOWN.sub(r"\\\1", text)


def section_of(loc: str, root: str) -> str:
    """loc's section: the first path segment below root (the sitemap's folder), or "" for
    the pages in root itself (``/about`` and ``/`` alike; ``/blog/`` and ``/blog/post`` are
    in ``blog``); a page of another host (allowed_hosts) is in that host's section, named by
    its origin. The one rule for grouping, kept here alone so another can replace it."""
    if not loc.startswith(root):
        start = loc.find("//") + 2
        end = loc.find("/", start)
        return loc if end < 0 else loc[:end]
    rest = loc[len(root) :]
    end = len(rest)
    for mark in "?#":
        at = rest.find(mark)
        if at >= 0:
            end = min(end, at)
    slash = rest.find("/", 0, end)
    return rest[:slash] if slash > 0 else ""


def _line(title: str, url: str, description: str | None) -> str:
    line = f"- [{escape(title)}]({url.translate(_DESTINATION)})"
    return f"{line}: {escape(description)}" if description else line


@dataclass(slots=True)
class _Section:
    """One group's lines of llms.txt, and how many past the cap were not written."""

    lines: list[str] = field(default_factory=list)
    more: int = 0  # its listed pages past the cap


@dataclass(slots=True)
class LlmsFile:
    """llms.txt as the listed pages come, in sitemap order (:meth:`add`), then as text
    (:meth:`render`). `root`: the sitemap's folder; `start`: the start page, public;
    `max_links`: the pages given a line, the first in sitemap order; `groups`: the
    configured groups in index order and the rule naming a URL's (``Groups.group_of``),
    when the sitemap is grouped: its sections are then the groups, as Search Console sees
    them, instead of the first path segments."""

    root: str
    start: str
    max_links: int
    groups: tuple[tuple[str, ...], Callable[[str], str]] | None = None
    _sections: dict[str, _Section] = field(default_factory=dict)
    _others: int = 0  # pages of sections past MAX_SECTIONS
    _links: int = 0
    _site: tuple[str | None, str | None] | None = None  # the start page's
    _stand_in: tuple[int, str, tuple[str | None, str | None]] | None = None

    def start_page(self, about: tuple[str | None, str | None] | None) -> None:
        """The page the start URL lands on, listed or not (a noindex home page still names
        the site): its title and description are the file's."""
        self._site = about or (None, None)

    def add(self, loc: str, about: tuple[str | None, str | None] | None) -> None:
        """A listed page (loc public), with its title and description (about_of)."""
        if loc == self.start:
            self._site = about or (None, None)
        elif (
            about is not None
            and about[0]
            and self._site is None
            and (self._stand_in is None or len(loc) < self._stand_in[0])
        ):  # no start page fetched (a resumed crawl): the shortest URL with a title stands in
            self._stand_in = len(loc), loc, about
        name = self.groups[1](loc) if self.groups is not None else section_of(loc, self.root)
        section = self._sections.get(name)
        if section is None:
            if len(self._sections) >= MAX_SECTIONS:
                self._others += 1
                return
            section = self._sections[name] = _Section()
        if self._links >= self.max_links:
            section.more += 1
            return
        self._links += 1
        title, description = about if about is not None else (None, None)
        title = title or _tidy(unquote(loc, errors="replace"), len(loc)) or loc
        section.lines.append(_line(title, loc, description))

    def render(self, sitemap_url: str) -> str:
        """The file's text; the pages past the cap are counted per section, each count a
        link to the sitemap (`sitemap_url`), which lists them all."""
        site = self._site
        if site is None and self._stand_in is not None:
            site = self._stand_in[2]
        title, description = site if site is not None else (None, None)
        out = [f"# {escape(title or self._host())}", ""]
        if description:
            out += [f"> {escape(description)}", ""]
        for name, heading in self._headings():
            section = self._sections[name]
            out += [f"## {escape(heading)}", "", *section.lines]
            if section.more:
                out.append(_more(section.more, sitemap_url))
            out.append("")
        if self._others:
            out += ["## Other sections", "", _more(self._others, sitemap_url), ""]
        return "\n".join(out)

    def _headings(self) -> list[tuple[str, str]]:
        """Each section met and its heading: a group's name, in the index's order, the
        default group last as "Other pages"; else the folder's own pages first (``/``), then
        each first path segment as met (``/blog/``)."""
        if self.groups is not None:
            names, _ = self.groups
            default = names[-1]
            return [
                (name, "Other pages" if name == default else name)
                for name in names
                if name in self._sections
            ]
        folder = unquote(self.root[self.root.find("/", self.root.find("//") + 2) :])
        headings = []
        for name in sorted(self._sections, key=lambda name: (bool(name), "://" in name)):
            if "://" in name:  # another host's pages: its origin
                heading = name + "/"
            else:
                heading = folder + unquote(name, errors="replace") + "/" if name else folder
            headings.append((name, _tidy(heading, len(heading)) or "/"))
        return headings

    def _host(self) -> str:
        start = self.root.find("//") + 2
        return self.root[start : self.root.find("/", start)]


def _more(count: int, sitemap_url: str) -> str:
    pages = "page" if count == 1 else "pages"
    return _line(f"and {count:,} more {pages}", sitemap_url, "see the sitemap")
