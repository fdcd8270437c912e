"""What a stable run changed against the set published before it: URLs added, removed and
changed (listed before and now, with another ``<lastmod>``: the page says it changed).

A nightly crawl of a large site can add or remove millions of URLs (a first run adds them
all), so the lists are streamed to unnamed temporary files and written out as JSON by
streaming them back; memory holds the counts and, for the feed, the ``keep`` newest URLs
added or changed. A run that writes no changes file keeps no lists (``urls=False``): only
the counts, which its report gives, and the feed's newest (a crawl without ``--changes``
spent half of its writer's time making JSON lines nobody read, #26).
"""

from __future__ import annotations

import heapq
import json
import os
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Final

__all__ = ["KINDS", "ChangeLog"]

KINDS: Final = ("added", "removed", "changed")


class ChangeLog:
    """Filled by a stable SitemapWriter; read by whoever reports the changes."""

    def __init__(self, keep: int = 0, *, urls: bool = True) -> None:
        self.keep = keep  # how many of the newest added or changed URLs to hold (the feed)
        self.urls = urls  # the lists of URLs are kept, for write_json; else the counts only
        self.counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.previous = False  # a previous set was read (else every URL is added)
        #: counts per group when the writer publishes groups (sitemap_out.groups), each
        #: URL in the group it is now in (a removed one: the group that listed it); a URL
        #: moving between groups is in none of the lists, as the set still lists it
        self.groups: dict[str, dict[str, int]] | None = None
        self._files: dict[str, IO[str]] = {}
        self._newest: list[tuple[datetime, str, str, str]] = []  # min-heap: when, loc, kind, title

    def open(self, folder: Path) -> None:
        """Scratch files in folder, unnamed (closed with the process, never left behind)."""
        if not self._files and self.urls:
            for kind in KINDS:
                self._files[kind] = tempfile.TemporaryFile(  # noqa: SIM115
                    "w+", encoding="utf-8", dir=folder, prefix=".changes-"
                )

    def record(
        self,
        kind: str,
        loc: str,
        lastmod: str | None,
        before: str | None = None,
        when: datetime | None = None,
        title: str = "",
        group: str = "",
    ) -> None:
        """One URL added, removed or changed; `when`: its date in a feed (added, changed),
        `title`: the page's title there, when the crawl knows it (""); `group`: its group."""
        self.count(kind, group)
        if self.urls:
            row: dict[str, str | None] = {"loc": loc, "lastmod": lastmod}
            if kind == "changed":
                row["previous_lastmod"] = before
            if self.groups is not None:
                row["group"] = group
            self._files[kind].write(json.dumps(row, ensure_ascii=False) + "\n")
        if when is not None and self.keep:
            item = (when, loc, kind, title)
            if len(self._newest) < self.keep:
                heapq.heappush(self._newest, item)
            elif item > self._newest[0]:
                heapq.heapreplace(self._newest, item)

    def count(self, kind: str, group: str = "", n: int = 1) -> None:
        """`n` URLs added, removed or changed, counted only: for a caller that learnt from
        `details` that nothing more of them is read."""
        self.counts[kind] += n
        if self.groups is not None:
            counts = self.groups.get(group)
            if counts is None:
                counts = self.groups[group] = dict.fromkeys(KINDS, 0)
            counts[kind] += n

    @property
    def details(self) -> bool:
        """Whether record() reads more of a URL than its kind and group (the lists for a
        changes file, the feed's newest): else count() says all that is kept."""
        return self.urls or self.keep > 0

    def newest(self) -> list[tuple[datetime, str, str, str]]:
        """(when, loc, kind, title) of the `keep` newest URLs added or changed, newest first."""
        return sorted(self._newest, reverse=True)

    def rows(self, kind: str) -> Iterator[str]:
        """The JSON objects of one list, one per line, as recorded (loc order)."""
        fh = self._files.get(kind)
        if fh is None:
            return
        fh.flush()
        fh.seek(0)
        for line in fh:
            yield line.rstrip("\n")
        fh.seek(0, os.SEEK_END)

    def write_json(self, path: Path, extra: dict[str, object], *, in_place: bool = False) -> None:
        """{extra..., previous, counts, [groups,] added: [...], removed: [...], changed: [...]},
        streamed to path through a temporary file renamed over it (`in_place`: to path
        itself, a FIFO or a device that a rename would replace)."""
        if not self.urls:
            raise ValueError("this ChangeLog keeps the counts only (urls=False): no lists to write")
        tmp = path if in_place else path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as out:
            head = {**extra, "previous": self.previous, "counts": self.counts}
            if self.groups is not None:
                head["groups"] = self.groups
            out.write(json.dumps(head, ensure_ascii=False)[:-1])
            for kind in KINDS:
                out.write(f', "{kind}": [')
                for i, row in enumerate(self.rows(kind)):
                    out.write(("," if i else "") + "\n  " + row)
                out.write("\n]" if self.counts[kind] else "]")
            out.write("}\n")
            out.flush()
            if not in_place:
                os.fsync(out.fileno())
        if not in_place:
            os.replace(tmp, path)

    def close(self) -> None:
        for fh in self._files.values():
            fh.close()
        self._files = {}
