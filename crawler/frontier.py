"""The crawl frontier: which URLs are still to fetch, breadth-first, each at most once.

A heap keyed on depth keeps the crawl breadth-first even with many workers finishing out
of order, so a page's depth is its link distance from the start; a URL found again at a
smaller depth while still queued moves up.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class Task:
    url: str
    depth: int
    referrer: str | None


class Frontier:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, str, str | None]] = []
        self._seq = 0
        self._seen: set[str] = set()
        self._queued: dict[str, int] = {}  # url -> depth, for URLs not yet popped

    def __len__(self) -> int:
        return len(self._queued)

    def __contains__(self, url: str) -> bool:
        return url in self._seen

    @property
    def seen(self) -> set[str]:
        """Every URL met; read-only by convention (for the engine's hot loop)."""
        return self._seen

    @property
    def seen_count(self) -> int:
        return len(self._seen)

    def is_queued(self, url: str) -> bool:
        return url in self._queued

    def mark_seen(self, url: str) -> bool:
        """Record url as met without queueing it; False when it was already met."""
        if url in self._seen:
            return False
        self._seen.add(url)
        return True

    def add(self, url: str, depth: int, referrer: str | None) -> bool:
        """Queue url unless already met; True when it is new."""
        if url in self._seen:
            return False
        self._seen.add(url)
        self._push(url, depth, referrer)
        return True

    def lower(self, url: str, depth: int, referrer: str | None) -> bool:
        """A queued url was found again closer to the start: move it up. True if it moved."""
        queued = self._queued.get(url)
        if queued is None or depth >= queued:
            return False
        self._push(url, depth, referrer)
        return True

    def _push(self, url: str, depth: int, referrer: str | None) -> None:
        self._queued[url] = depth
        self._seq += 1
        heapq.heappush(self._heap, (depth, self._seq, url, referrer))

    def pop(self) -> Task | None:
        """The shallowest queued URL (first found first), or None when empty."""
        while self._heap:
            depth, _, url, referrer = heapq.heappop(self._heap)
            if self._queued.get(url) == depth:  # skip entries superseded by a shallower find
                del self._queued[url]
                return Task(url, depth, referrer)
        return None

    def drain(self) -> list[Task]:
        """Everything still queued, emptying the frontier (for the `limit` decisions)."""
        tasks = []
        while (task := self.pop()) is not None:
            tasks.append(task)
        return tasks
