"""The crawl frontier: which URLs are still to fetch, breadth-first, each at most once, and
which links to the URLs met are no news any more.

Memory is the constraint at millions of URLs, so there is one dict for everything met
(url -> what the crawl knows of it, below) and one FIFO per depth holding only references
to those same strings. Popping always takes the shallowest level, so with many workers
finishing out of order a page's depth is still its link distance from the start; a URL found
again at a smaller depth while still queued moves up (its old entry is skipped when reached).
Measured by bench/frontier_bench.py.

The dict's value also says from which depth a link to the URL is no news (#26, in a crawl
without a history: crawler.shell.settled.SettledNames), so that a page's links to URLs no
link can change are left out in C by the value's truth alone (`unsettled`), with no second
table of URLs beside this one (it cost about 2 MB at 20,000 pages). Every value is a shared
object (a small int, or a range from a table per depth), so a URL costs its dict slot only:

- `range(d, d)`, empty, false: queued at depth d; a link to it may change something;
- `range(d, d + 1)`, true: queued at d and *hushed* (every early referrer the journal keeps
  is kept): a link at d or deeper is no news;
- DONE (0), false: met and not queued: in flight, screened or judged and not settled, or
  judged broken (every link counts: its late referrers);
- n >= 1, true: judged and settled: a link at depth n - 1 or deeper is no news.

Two facts of Python's ranges this leans on: an empty range is false, and every empty range
equals every other (range(2, 2) == range(5, 5)); so `pop` and `hush` tell a level's value
by identity (`is`), never by `==`, and a queued URL's depth is read as its value's `start`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, filterfalse, repeat
from typing import Final

from crawler.core.urls import link_matters

DONE: Final = 0  # the value of a met URL that is not (or no longer) queued, nor settled

#: a settled depth kept as itself only below this: its value (depth + 1) is then one of the
#: interpreter's shared small ints, never an int object per URL; deeper is kept DONE (every
#: link looked at, never wrongly left out)
_SETTLED_BELOW: Final = 256


@dataclass(slots=True)
class Task:
    """A URL to fetch: its depth limits the crawl, its referrer names where it was found.
    Plain, not frozen (#26), as the other records made for every URL: a frozen class's
    __init__ sets each field through object.__setattr__, and nothing hashes or changes a
    Task once popped."""

    url: str
    depth: int
    referrer: str | None


class Frontier:
    def __init__(self) -> None:
        self._met: dict[str, int | range] = {}
        self._urls: list[deque[str]] = []  # per depth, in the order found
        self._referrers: list[deque[str | None]] = []  # parallel to _urls
        # per depth: the value of a URL queued there, and of one hushed there (shared)
        self._waiting: list[range] = []
        self._hushed: list[range] = []
        self._queued = 0
        self._level = 0  # no queued URL is shallower than this
        # no settled or hushed depth is above it: a link at it or deeper is no news to any
        # URL whose value is true
        self._deepest = 0
        # per depth below _deepest: the values to which a link there is no news -> False
        self._matters: dict[int, dict[int | range | None, bool]] = {}

    def __len__(self) -> int:
        return self._queued

    def __contains__(self, url: str) -> bool:
        return url in self._met

    @property
    def seen(self) -> dict[str, int | range]:
        """Every URL met, for the engine's hot loops: membership tests, and Links'
        follow_targets, which reads a queued URL's depth (its value's start, the module's
        docstring)."""
        return self._met

    @property
    def seen_count(self) -> int:
        return len(self._met)

    def is_queued(self, url: str) -> bool:
        return type(self._met.get(url)) is range

    def mark_seen(self, url: str) -> bool:
        """Record url as met without queueing it; False when it was already met."""
        if url in self._met:
            return False
        self._met[url] = DONE
        return True

    def add(self, url: str, depth: int, referrer: str | None) -> bool:
        """Queue url unless already met; True when it is new."""
        if url in self._met:
            return False
        self._push(url, depth, referrer)
        self._queued += 1
        return True

    def lower(self, url: str, depth: int, referrer: str | None) -> bool:
        """A queued url was found again closer to the start: move it up. True if it moved."""
        queued = self._met.get(url)
        if type(queued) is not range or depth >= queued.start:
            return False
        self._push(url, depth, referrer)  # the entry at the old depth is now stale
        return True

    def _push(self, url: str, depth: int, referrer: str | None) -> None:
        while len(self._urls) <= depth:
            level = len(self._urls)
            self._urls.append(deque())
            self._referrers.append(deque())
            self._waiting.append(range(level, level))
            self._hushed.append(range(level, level + 1))
        self._met[url] = self._waiting[depth]  # not hushed (any more) at its new depth
        self._urls[depth].append(url)
        self._referrers[depth].append(referrer)
        self._level = min(self._level, depth)

    def pop(self) -> Task | None:
        """The shallowest queued URL (first found first), or None when empty."""
        met, urls, referrers = self._met, self._urls, self._referrers
        while self._level < len(urls):
            level = self._level
            queue = urls[level]
            waiting, hushed = self._waiting[level], self._hushed[level]
            while queue:
                url = queue.popleft()
                referrer = referrers[level].popleft()
                queued = met.get(url)
                if queued is waiting or queued is hushed:  # else moved up, or done
                    met[url] = DONE
                    self._queued -= 1
                    return Task(url, level, referrer)
            self._level += 1
        return None

    def drain(self) -> list[Task]:
        """Everything still queued, emptying the frontier (for the `limit` decisions)."""
        tasks = []
        while (task := self.pop()) is not None:
            tasks.append(task)
        return tasks

    # -- links that are no news (#26) ------------------------------------------------------

    def settle(self, url: str, depth: int) -> None:
        """url, judged, is settled: a link to it at `depth` or deeper changes nothing
        (UNSETTLED: judged broken, every link counts). A URL not met or still queued is left
        as it is (its links are looked at): the queue is never changed by it."""
        met = self._met
        value = met.get(url)
        if value is None or type(value) is range:
            return
        if 0 <= depth < _SETTLED_BELOW:
            met[url] = depth + 1
            if depth > self._deepest:
                self._deepest = depth
        else:  # UNSETTLED, or deeper than kept: every link looked at
            met[url] = DONE

    def hush(self, url: str, depth: int) -> None:
        """url waits in the queue at `depth` with every early referrer the journal keeps:
        until it is moved up or taken, a link to it at that depth or deeper changes nothing."""
        if depth < len(self._waiting) and self._met.get(url) is self._waiting[depth]:
            self._met[url] = self._hushed[depth]
            if depth > self._deepest:
                self._deepest = depth

    def unsettled(self, links: Sequence[str], depth: int) -> Sequence[str]:
        """The links a link at `depth` may still matter to, in their order (link_matters,
        whose rule the values follow). The crawl goes breadth first, so a page's links are
        nearly always at least as deep as every depth settled or hushed: then a link is
        left out when its URL's value is true, in C (a dict look-up a link, as a
        membership test costs); else by a table of the values that are no news at `depth`."""
        met = self._met
        if depth >= self._deepest:
            return list(filterfalse(met.get, links))
        matters = self._matters.get(depth)
        if matters is None:  # the values to which a link at `depth` is no news, False
            matters = self._matters[depth] = dict.fromkeys(
                [s + 1 for s in range(_SETTLED_BELOW) if not link_matters(s, depth)]
                + [range(q, q + 1) for q in range(len(self._hushed)) if not link_matters(q, depth)],
                False,
            )
        return list(compress(links, map(matters.get, map(met.get, links), repeat(True))))
