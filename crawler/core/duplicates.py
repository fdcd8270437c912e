"""Which of several byte-identical pages is listed: a pure policy, no I/O.

A sitemap should name one URL per page, so pages whose bodies are byte-identical compete.
Only pages that would otherwise be listed compete: a page left out for another reason
(canonicalised to its twin, noindex, a print view) must never hide its indexable twin. The
winner is the URL a person would pick, whatever order the pages were fetched in, by how
many workers or across a resume: the shallowest, then the shortest, then the smallest.

Separately, a body met before under another URL means the page's links are its twin's:
they are not followed again (the defence against soft-404 spaces, where every made-up URL
answers the same page and relative links multiply).
"""

from __future__ import annotations

__all__ = ["Twins", "rank"]


def rank(depth: int, url: str) -> tuple[int, int, str]:
    """The order in which twins are preferred: smaller first."""
    return depth, len(url), url


class Twins:
    """Body keys (64-bit hashes) met during a crawl, and the best listed URL for each."""

    __slots__ = ("_best", "_seen")

    def __init__(self) -> None:
        # One entry per body met: the first URL that answered it (links followed from there)
        self._seen: dict[int, str] = {}
        # One entry per body some listed page answered: (depth, url) of the best such page
        self._best: dict[int, tuple[int, str]] = {}

    def __len__(self) -> int:
        return len(self._seen)

    def met(self, key: int, url: str) -> str | None:
        """Note that url answered the body `key`; the URL that answered it first, when that
        is another URL (url's links are then that page's links), else None."""
        first = self._seen.setdefault(key, url)
        return None if first == url else first

    def claim(self, key: int, depth: int, url: str) -> None:
        """A page that would be listed answered body `key`: it competes for the listing."""
        best = self._best.get(key)
        if best is None or rank(depth, url) < rank(*best):
            self._best[key] = (depth, url)

    def winner(self, key: int) -> str | None:
        """The URL listed for body `key`, once every page has claimed; None if none did."""
        best = self._best.get(key)
        return None if best is None else best[1]
