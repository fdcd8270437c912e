"""Canonicals that point nowhere a search engine can use, which it ignores. Pure.

Google takes rel=canonical as a hint, and drops it when its target cannot be the canonical:
a target answering 4xx or 5xx, blocked by robots.txt, or itself noindex. The page is then
indexed on its own, so a sitemap that leaves it out for its canonical loses an indexable
page, and the broken canonical is worth reporting (`canonical_broken`). Whether a target is
such depends on its own decision, which may come after the page's (it is fetched later), so
a page that would be listed but for its canonical waits here for its target's decision until
every URL is judged (crawler.shell.journal), and the decision is made then.

Whether the target has its decision is known from the decisions themselves (they all pass
through here), never inferred from the frontier: a URL that is marked seen but not queued may
be a redirect hop in flight, whose final answer is still to come, so that inference made a
page's fate depend on timing.

Memory: one entry per URL decided (a second set of the URLs the frontier holds, its strings
mostly shared: some 40 bytes a URL), one per URL judged broken as a target could be
(4xx/5xx, robots.txt, noindex), and one per page waiting.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from crawler.core.decide import (
    HEADER_NOINDEX,
    HTTP_ERROR,
    META_NOINDEX,
    ROBOTS_TXT,
    canonical_ignored_parts,
)
from crawler.core.urls import join_parts

__all__ = [
    "BrokenCanonical",
    "Canonicals",
    "ForeignCanonicals",
    "broken_target",
    "same_path_elsewhere",
]

T = TypeVar("T")


_ANSWERS = "it answers HTTP "


def broken_target(reason: str, status: int | None) -> str | None:
    """Why a URL judged so cannot be a page's canonical (as Google ignores it), or None."""
    if reason == HTTP_ERROR and status is not None and status >= 400:
        return f"{_ANSWERS}{status}"
    if reason == ROBOTS_TXT:
        return "robots.txt blocks it"
    if reason in (META_NOINDEX, HEADER_NOINDEX):
        return "it is noindex"
    return None


@dataclass(slots=True, frozen=True)
class BrokenCanonical:
    """A page whose canonical was ignored: the crawl report's `canonical_broken` line."""

    url: str  # the page, public
    canonical: str  # its target, public
    status: int | None  # the target's HTTP status (None: not fetched, robots.txt)
    why: str

    @classmethod
    def from_detail(cls, url: str, detail: str) -> BrokenCanonical | None:
        """The entry a listing's detail names (a resumed crawl's listings: the detail is all
        that is saved of it), or None when its canonical was not ignored."""
        parts = canonical_ignored_parts(detail)
        if parts is None:
            return None
        canonical, why = parts
        status = int(why[len(_ANSWERS) :]) if why.startswith(_ANSWERS) else None
        return cls(url, canonical, status, why)

    def to_json(self) -> dict[str, object]:
        return {
            "url": self.url,
            "canonical": self.canonical,
            "status": self.status,
            "why": self.why,
        }


class Canonicals(Generic[T]):
    """The targets judged unusable as canonicals, and the pages waiting for their targets'
    decisions (each with what would list it, `T`)."""

    __slots__ = ("_broken", "_decided", "_waiting")

    def __init__(self) -> None:
        self._broken: dict[str, tuple[str, int | None]] = {}  # url -> why, status
        self._decided: set[str] = set()  # every URL with its final decision
        self._waiting: dict[str, list[T]] = {}  # target -> pages naming it

    def __len__(self) -> int:
        return sum(map(len, self._waiting.values()))

    def judged(self, url: str, reason: str, status: int | None) -> None:
        """Any URL's final decision (crawl space; a listing counts, being no broken
        target whatever else it loses to): remembered, and whether it breaks a canonical."""
        self._decided.add(url)
        why = broken_target(reason, status)
        if why is not None:
            self._broken[url] = (why, status)

    def listed(self, url: str) -> None:
        """``judged(url, LISTED, status)``: a listing is never a broken target (whatever
        else it loses to, broken_target says None for it), so only its decision is kept:
        one call a listed page, not two (#26)."""
        self._decided.add(url)

    def decided(self, url: str) -> bool:
        """Whether url (crawl space) has its final decision: a page naming it need not wait."""
        return url in self._decided

    def broken(self, target: str) -> tuple[str, int | None] | None:
        """(why, status) when target (crawl space) is judged unusable as a canonical."""
        return self._broken.get(target)

    def wait(self, target: str, page: T) -> None:
        """A page that would be listed but for its canonical, target, not judged broken yet."""
        self._waiting.setdefault(target, []).append(page)

    def settle(self) -> Iterator[tuple[str, T, tuple[str, int | None] | None]]:
        """Every URL is judged: each waiting page with its target and (why, status) if the
        target is broken (then the canonical is ignored), else None (the page is
        canonicalised as it says). Empties the waiting list."""
        waiting, self._waiting = self._waiting, {}
        for target, pages in waiting.items():
            broken = self._broken.get(target)
            for page in pages:
                yield target, page, broken


def same_path_elsewhere(page: str, canonical: str) -> str | None:
    """The origin of `canonical` when it names the page's own path and query on another
    origin (both normalised): the mark of a copy of a site, whose pages point home."""
    _, origin, _ = join_parts(canonical)
    _, own, _ = join_parts(page)
    if origin == own or canonical[len(origin) :] != page[len(own) :]:
        return None
    return origin


_SAME_PATH = "foreign_same_path "  # + an origin: a counter's name


@dataclass(slots=True)
class ForeignCanonicals:
    """The fetched pages whose canonical names another origin. When most name their own
    path there, the crawl is of a copy (a staging or local build whose canonicals name the
    live site): everything is canonicalised away and the sitemap would hold only what is
    left (redirect stubs, say), so the crawl says so, suggests --public-url, and refuses to
    publish when more than half of the pages are canonicalised elsewhere."""

    pages: int = 0  # final 200 pages judged
    elsewhere: int = 0  # of those, naming a canonical on another origin
    same_path: Counter[str] = field(default_factory=Counter)  # origin -> their own path there

    def saw(self, page: str, canonical: str | None) -> None:
        """A final 200 page (public URL) and its canonical (public), if any."""
        self.pages += 1
        if canonical is None or canonical == page:
            return
        origin = same_path_elsewhere(page, canonical)
        if origin is not None:
            self.same_path[origin] += 1
            self.elsewhere += 1
        elif join_parts(canonical)[1] != join_parts(page)[1]:
            self.elsewhere += 1

    def counters(self) -> dict[str, int]:
        """The figures as named counters, saved in the state for --resume."""
        saved = {"foreign_pages": self.pages, "foreign_elsewhere": self.elsewhere}
        saved.update((_SAME_PATH + origin, n) for origin, n in self.same_path.items())
        return saved

    def restore(self, counters: dict[str, int]) -> None:
        """The figures of the runs a resumed crawl goes on from (counters())."""
        self.pages = counters.get("foreign_pages", 0)
        self.elsewhere = counters.get("foreign_elsewhere", 0)
        self.same_path = Counter(
            {k[len(_SAME_PATH) :]: n for k, n in counters.items() if k.startswith(_SAME_PATH)}
        )

    def hint(self) -> str | None:
        """One line when most pages name their own path on one other origin."""
        if not self.same_path:
            return None
        origin, n = self.same_path.most_common(1)[0]
        if 2 * n <= self.pages:
            return None
        return (
            f"{n} of {self.pages} fetched pages name their canonical at the same path on "
            f"{origin}: a copy of that site? crawl it with --public-url {origin}/"
        )

    def refusal(self) -> str | None:
        """Why the publish guard refuses: more than half the pages canonicalised elsewhere."""
        if 2 * self.elsewhere <= self.pages:
            return None
        why = self.hint() or "search engines index those instead"
        return (
            f"not published: {self.elsewhere} of {self.pages} fetched pages are canonicalised "
            f"to another origin ({why}); a sitemap of what is left is worse than none "
            f"(--force publishes anyway)"
        )
