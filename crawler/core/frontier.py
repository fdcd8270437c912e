"""The crawl frontier: which URLs are still to fetch, breadth-first, each at most once.

Memory is the constraint at millions of URLs, so there is one dict for everything met
(url -> the depth it is queued at, or DONE) and one FIFO per depth holding only references
to those same strings. Popping always takes the shallowest level, so with many workers
finishing out of order a page's depth is still its link distance from the start; a URL found
again at a smaller depth while still queued moves up (its old entry is skipped when reached).
Measured by bench/frontier_bench.py.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

DONE = -1  # the value of a met URL that is not (or no longer) queued


@dataclass(slots=True, frozen=True)
class Task:
    url: str
    depth: int
    referrer: str | None


class Frontier:
    def __init__(self) -> None:
        self._met: dict[str, int] = {}
        self._urls: list[deque[str]] = []  # per depth, in the order found
        self._referrers: list[deque[str | None]] = []  # parallel to _urls
        self._queued = 0
        self._level = 0  # no queued URL is shallower than this

    def __len__(self) -> int:
        return self._queued

    def __contains__(self, url: str) -> bool:
        return url in self._met

    @property
    def seen(self) -> dict[str, int]:
        """Every URL met (membership tests only), for the engine's hot loop."""
        return self._met

    @property
    def seen_count(self) -> int:
        return len(self._met)

    def is_queued(self, url: str) -> bool:
        return self._met.get(url, DONE) != DONE

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
        queued = self._met.get(url, DONE)
        if queued == DONE or depth >= queued:
            return False
        self._push(url, depth, referrer)  # the entry at the old depth is now stale
        return True

    def _push(self, url: str, depth: int, referrer: str | None) -> None:
        self._met[url] = depth
        while len(self._urls) <= depth:
            self._urls.append(deque())
            self._referrers.append(deque())
        self._urls[depth].append(url)
        self._referrers[depth].append(referrer)
        self._level = min(self._level, depth)

    def pop(self) -> Task | None:
        """The shallowest queued URL (first found first), or None when empty."""
        met, urls, referrers = self._met, self._urls, self._referrers
        while self._level < len(urls):
            level = self._level
            queue = urls[level]
            while queue:
                url = queue.popleft()
                referrer = referrers[level].popleft()
                if met.get(url) == level:  # else superseded by a shallower find, or done
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
