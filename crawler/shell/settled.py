"""Links to settled URLs, skipped by id: the workers' rule (crawler.core.urls.LinkResolver)
for the pages the crawl itself makes on a night with a history: the pages a 304 revives, and
the changed pages, whose links' ids are looked up by name.

A revived page follows all its links (about 83 on the bench site), nearly all to URLs judged
already: each cost two or three lookups by name (the seen set, the listings' depths, the
URLs in flight) for nothing, a tenth of a 304 night. A URL is settled when its decision is
final and not broken (a link to it changes nothing) or, for a listing that may have twins,
from its depth on (a closer link still ranks its twins): the journal says so
(Journal.settle), as it tells the workers of a crawl without a state (those of a crawl
with one send every link back, and are told nothing). Here only (#26), a URL waiting in
the queue is hushed from its queued depth on as soon as it is queued (its early referrers
are read back at the end if it turns out broken: crawler.shell.referrers), until it is
judged: settled then, or UNSETTLED again when broken (its late referrers count). Kept
by the state's URL id in a byte array (a byte a URL), a revived page's links
(crawler.core.history.HistoryLinks, which carry their ids) are checked in C, and only
those that may change something are named; a changed page's links by the ids of their
names (a URL without one is new, and kept). Only those reach Links.follow_targets' loop.
A depth kept is never below the one that matters (a closer link may lower a listing's
depth later, never raise it), so a link is never left out that the loop would act on.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from typing import Final

from crawler.core.frontier import Frontier
from crawler.core.history import HistoryLinks
from crawler.core.urls import UNSETTLED, link_matters
from crawler.shell.state import CrawlState

__all__ = ["SettledIds", "SettledNames", "grow", "told"]

#: A URL not settled, and the depth kept for any settled deeper than a byte can say: every
#: link to it matters (kept so, a link is looked at, never wrongly skipped)
_UNSETTLED: Final = 255


class SettledIds:
    """By URL id, the depth from which a link to the URL is no news, in a byte (a byte
    array: 1 byte a URL). `ids`: the state's URL ids (crawler.shell.state)."""

    def __init__(self, ids: Callable[[], dict[str, int]]) -> None:
        self._ids = ids
        # the state's ids, asked once: it keeps one dict for the run (ResumeQueue.ids), and
        # asking again cost two calls of the four a URL settled or hushed takes (#26)
        self._table: dict[str, int] | None = None
        self._depths = bytearray()
        # per depth of a page's links: settled depth -> 1 when a link at it matters
        self._matters: dict[int, bytes] = {}

    @classmethod
    def of(cls, state: CrawlState, identity: bool) -> SettledIds | None:
        """For a crawl whose history may revive pages, with links in the space the journal
        settles URLs in (crawler.shell.engine); else None."""
        return cls(state.url_ids) if state.has_history and identity else None

    def id_of(self, url: str) -> int | None:
        """url's id in the state (None or 0: it has none; id 0 is never kept, it stands
        for URLs without an id in _named). Three calls a page: _id_table only the first
        time (#26)."""
        return (self._table or self._id_table()).get(url)

    def _id_table(self) -> dict[str, int]:
        table = self._table
        if table is None:
            table = self._table = self._ids()
        return table

    def settle(self, url: str, depth: int = 0) -> None:
        """url is judged for good: a link to it at `depth` or deeper changes nothing
        (UNSETTLED: judged broken, every link counts again). Kept when url has an id:
        UNSETTLED, -1, and any depth a byte cannot hold as _UNSETTLED."""
        uid = self.id_of(url)
        if uid:
            self.at(uid, depth)

    def at(self, uid: int, depth: int) -> None:
        """settle() by id (not 0); also a URL *hushed*: it waits at `depth`, and its early
        referrers are read back at the end if it turns out broken (crawler.shell.referrers),
        so until it is judged a link to it at that depth or deeper changes nothing. Here
        only, not told to the workers: judged broken, it is settled UNSETTLED (the journal
        says so), and its late referrers count."""
        if not 0 <= depth < _UNSETTLED:
            depth = _UNSETTLED
        try:
            self._depths[uid] = depth
        except IndexError:
            grow(self._depths, uid + 1, bytes([_UNSETTLED]))
            self._depths[uid] = depth

    def unsettled(self, links: Sequence[str], depth: int) -> Sequence[str]:
        """The links a link at `depth` may still matter to, in their order: the settled
        depth of each gathered in C by id, mapped to 1 or 0 by a table (translate). A
        revived page's links carry their ids (HistoryLinks.gather) and are named only then;
        a changed page's are names, their ids looked up in the state's table (a URL without
        one is new: kept). Before (#26) a changed page's links were all kept, and on a
        night whose every page changed Links.follow_targets' loop over them was 5% of it."""
        depth = min(depth, _UNSETTLED)
        matters = self._matters.get(depth)
        if matters is None:
            matters = self._matters[depth] = bytes(
                link_matters(UNSETTLED if settled == _UNSETTLED else settled, depth)
                for settled in range(256)
            )
        if not isinstance(links, HistoryLinks):
            return self._named(links, matters)
        gather = links.gather()
        try:
            settled = bytes(gather(self._depths))
        except IndexError:  # an id past those settled so far: not settled either
            self._grow(max(links.uids()) + 1)
            settled = bytes(gather(self._depths))
        return links.pick(settled.translate(matters))

    def _named(self, links: Sequence[str], matters: bytes) -> Sequence[str]:
        """unsettled() for links by name: id 0 (ids start at 1, and settle() never keeps
        0) stands for a URL without one, never settled."""
        if not links:
            return links
        uids = list(map(self._id_table().get, links, repeat(0)))
        depths, top = self._depths, max(uids)
        if top >= len(depths):  # an id past those settled so far: not settled either
            self._grow(top + 1)
        keep = bytes(map(depths.__getitem__, uids)).translate(matters)
        return list(compress(links, keep))

    def _grow(self, size: int) -> None:
        grow(self._depths, size, bytes([_UNSETTLED]))


def grow(items: bytearray | array[int], size: int, fill: bytes | array[int]) -> None:
    """Extend a table by id to at least `size` items, each `fill` (one item), amortised:
    an eighth more at least, 1,024 at least."""
    more = max(size, len(items) + len(items) // 8, 1024) - len(items)
    items.extend(fill * more)  # type: ignore[arg-type]  # bytes to a bytearray, array to array


class SettledNames:
    """By URL name, for a crawl without a history to revive pages from (#26): the depth
    from which a link to the URL is no news, told as SettledIds is told, and kept in the
    frontier's own value for the URL (crawler.core.frontier: a second table of names cost
    about 2 MB at 20,000 pages). Of a page's about 80 links, all but a few lead to URLs
    judged already, or queued with every early referrer kept: each went through
    Links.follow_targets' loop (two or three look-ups by name) for nothing. Here they are
    left out in C, and only the links that may change something are looped over, as a
    worker's LinkResolver sends back only those. A URL the frontier has not met, or still
    queues, keeps no settled depth: its links are looked at (never wrongly left out). The
    frontier's own methods, with no call between: one runs for every URL judged, one for
    every page's links."""

    def __init__(self, frontier: Frontier) -> None:
        #: as SettledIds.settle: url is judged for good (UNSETTLED: broken)
        self.settle: Callable[[str, int], None] = frontier.settle
        #: url waits at its queued depth with every early referrer the journal keeps
        #: (Links.follow_targets): here only, not told to the workers
        self.hush: Callable[[str, int], None] = frontier.hush
        #: the links a link at a depth may still matter to, in their order (link_matters)
        self.unsettled: Callable[[Sequence[str], int], Sequence[str]] = frontier.unsettled


def told(
    settled: SettledIds | SettledNames, workers: Callable[[str, int], None]
) -> Callable[[str, int], None]:
    """Who the journal tells that a URL is settled once workers that leave links out take
    pages (a crawl without a state, crawler.shell.engine): the URLs kept here first, then
    the workers."""
    keep = settled.settle

    def both(url: str, depth: int) -> None:
        keep(url, depth)
        workers(url, depth)

    return both
