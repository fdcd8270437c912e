"""The pages linking to a URL while it waits to be judged, named only if it turns out broken:
the early referrers of a night with a history (#26).

The broken-links report names, for a URL judged broken, the page its task names, then the
first EARLY_REFERRERS distinct pages that linked to it while it waited or was in flight, in
the order their links were followed, then the pages linking to it once it was judged
(crawler.shell.journal). A crawl without a history keeps those early referrers as each link
is followed (Journal.early_referrers). On an unchanged night that was the largest part of
the loop left: about 3.7 links a page to URLs still waiting, each a tuple, a state row and a
hush, for a report that on a healthy site names nobody (-11% of the night's CPU).

Here nothing is kept a link. On a night with a history, every page whose links are
followed has them in the state file, by URL id: a revived page in the history's row, a
changed one in this run's (HistoryStore.targets_by_id). So this keeps the order in which
pages' links are followed (an id a page) and, for each URL queued, where in that order it
was queued (its span starts there, and ends where it is judged); a URL is hushed from its
queued depth on as soon as it is queued (SettledIds), so links to it at that depth or
deeper never reach the loop. Only when some URL is judged broken are the pages of its span
read back, once, at the end of the crawl, and the first EARLY_REFERRERS that link to it are
its early referrers: the ones the crawl without a history names. A referral that is no
page's link (a canonical, a redirect, a redirect stub's target) is kept as it comes, with
its place in the order.

What a resume sees: each checkpoint saves what the order, the places and the referrals that
are no link gained since the last (crawler.shell.state_follows: 4 bytes a page, 8 a URL);
a resumed night goes on from them (restore()), so it names the pages an uninterrupted night
names. A file without them (a crash before the first checkpoint: its
resume starts afresh anyway) opens a URL's span where this run first meets it.
"""

from __future__ import annotations

import json
import operator
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from crawler.shell.settled import SettledIds, grow
from crawler.shell.state_follows import FollowRow

__all__ = ["EARLY_REFERRERS", "EarlyReferrers"]

#: Pages linking to a URL kept while it waits to be fetched, besides the first: a tuple per
#: queued URL is the price of naming the pages that link to a broken one (in a crawl without
#: a history). Once a URL is judged broken, pages linking to it are collected up to
#: report.MAX_REFERRERS.
EARLY_REFERRERS: Final = 4

#: A URL's span start when it was never queued here (a redirect's target, met in flight):
#: no page's link counts for it, as none reached the loop's early referrers
_UNKNOWN: Final = 0xFFFFFFFF
#: The followed pages whose links are read at once
_CHUNK: Final = 512
#: A referral's sort key: its place, then a link's after a referral at the same place
_PLACE: Final = operator.itemgetter(0, 1)


@dataclass(slots=True)
class Broken:
    """A URL judged broken: its span in the follow order (`until` is where it was judged),
    and the pages of it found linking to it (their place in the order, the page)."""

    uid: int
    first: str | None  # the page its task named
    since: int
    until: int
    hits: list[tuple[int, int]] = field(default_factory=list)  # (place, page id)


class EarlyReferrers:
    """The follow order and each URL's place in it, by the state's URL ids.
    `ids`: the state's (crawler.shell.state); `settled`: where a URL is hushed."""

    def __init__(self, ids: Callable[[], dict[str, int]], settled: SettledIds) -> None:
        self._ids = ids
        self._uid = settled.id_of
        self._settled = settled
        self._order = array("I")  # the pages whose links were followed, in that order
        self._since = array("I")  # by URL id: len(_order) when it was queued, or _UNKNOWN
        #: referrals that are no page's link, of URLs waiting or judged broken:
        #: url -> (place, referrer)
        self.others: dict[str, list[tuple[int, str]]] = {}
        self._broken: dict[str, Broken] = {}
        # what the state's follow log has not been given yet (unsaved()): the order from
        # _saved on, (id, place) of the URLs queued and of those judged broken since, the
        # referrals that are no link added and dropped since, in the order they came
        self._saved = 0
        self._queued_new = array("I")
        self._judged_new = array("I")
        self._others_new: list[tuple[str, int, str] | tuple[str]] = []
        # a resumed night's: the places of the URLs judged broken before the stop, and by
        # id the pages in the order saved (one fetched again, a page that waited for its
        # canonical's target, keeps its place: counted twice, it took two of four names)
        self._until_saved: dict[int, int] = {}
        self._restored: bytearray | None = None

    def followed(self, url: str) -> None:
        """url's page has its links followed now."""
        uid = self._uid(url)
        if uid:
            restored = self._restored
            if restored is not None and uid < len(restored) and restored[uid]:
                return  # in the order already, before the stop
            self._order.append(uid)

    def queued(self, uid: int, depth: int) -> None:
        """The URL of id `uid` (the state's, as queued: ResumeQueue.queued, which interns
        it, so never 0) was queued at `depth`: its span starts here, and it is hushed."""
        if uid:
            self._start(uid, len(self._order))
            self._settled.at(uid, depth)

    def waiting(self, url: str, depth: int) -> None:
        """A page's link reached url, waiting (or in flight) at `depth` now: one queued
        before a resume, whose span starts with this run, or one moved up, hushed again."""
        uid = self._uid(url)
        if uid:
            since = self._since
            if uid >= len(since) or since[uid] == _UNKNOWN:
                self._start(uid, 0)
            self._settled.at(uid, depth)

    def _start(self, uid: int, place: int, new: bool = True) -> None:
        since = self._since
        if uid >= len(since):
            grow(since, uid + 1, array("I", (_UNKNOWN,)))
        since[uid] = place
        if new:
            self._queued_new.extend((uid, place))

    def referred(self, url: str, referrer: str) -> None:
        """referrer leads to url, waiting, by no link of its page (a canonical, a redirect,
        a stub's target). EARLY_REFERRERS distinct at most: they come in place order, so a
        later one is never among the first that many distinct names (named())."""
        if self._refer(url, len(self._order), referrer):
            self._others_new.append((url, len(self._order), referrer))

    def _refer(self, url: str, place: int, referrer: str) -> bool:
        others = self.others.setdefault(url, [])
        if len(others) < EARLY_REFERRERS and all(ref != referrer for _, ref in others):
            others.append((place, referrer))
            return True
        return False

    def judged(self, url: str) -> None:
        """url is judged, and not broken: its referrals are no longer needed."""
        if self.others and self.others.pop(url, None) is not None:
            self._others_new.append((url,))

    def broken(self, url: str, first: str | None) -> None:
        """url is judged broken (`first`: the page its task named): its early referrers
        are named at the end (named()). Judged before a resumed night's stop, its place is
        the one saved then (restore())."""
        uid = self._uid(url) or 0
        since = self._since
        start = since[uid] if 0 < uid < len(since) else _UNKNOWN
        until = self._until_saved.pop(uid, None)
        if until is None:
            until = len(self._order)
            if uid:
                self._judged_new.extend((uid, until))
        self._broken[url] = Broken(uid, first, start, until)

    def unsaved(self, run: int) -> FollowRow | None:
        """What this gained since the last call, for the state's next checkpoint of the
        run that started at `run`, or None: a resumed night goes on from the rows
        (restore())."""
        order, saved, others = self._order, self._saved, self._others_new
        if len(order) == saved and not (self._queued_new or self._judged_new or others):
            return None
        row = FollowRow(
            run, order[saved:].tobytes(), self._queued_new.tobytes(),
            self._judged_new.tobytes(), json.dumps(others, ensure_ascii=False),
        )  # fmt: skip
        self._saved = len(order)
        self._queued_new, self._judged_new, self._others_new = array("I"), array("I"), []
        return row

    def restore(self, rows: list[FollowRow]) -> None:
        """A resumed night goes on from the follow log the state file holds (unsaved()):
        the order, the URLs' places, the places of those judged broken before the stop,
        and the referrals that are no link, added and dropped in turn."""
        for row in rows:
            self._order.frombytes(row.pages)
            queued, judged = array("I", row.queued), array("I", row.judged)
            for uid, place in zip(queued[::2], queued[1::2], strict=True):
                self._start(uid, place, new=False)
            self._until_saved.update(zip(judged[::2], judged[1::2], strict=True))
            for url, *referral in json.loads(row.others):  # in the order they came
                if referral:
                    self._refer(url, referral[0], referral[1])
                else:
                    self.others.pop(url, None)
        if self._order:
            restored = self._restored = bytearray(max(self._order) + 1)
            for uid in self._order:
                restored[uid] = 1
        self._saved = len(self._order)

    def named(
        self, targets_of: Callable[[list[int]], dict[int, bytes]], name: Callable[[str], str]
    ) -> Iterator[tuple[str, list[str]]]:
        """Each URL judged broken and the pages to name first for it, in order: the page
        its task named, then its early referrers. `targets_of`: the links of this run's
        pages by id (packed ids); `name`: a page's URL as a referrer."""
        broken = self._broken
        if not broken:
            return
        spans = {b.uid: b for b in broken.values() if b.since < b.until}
        if spans:
            self._scan(spans, targets_of)
        pages = {uid for b in broken.values() for _, uid in b.hits}
        names = {uid: url for url, uid in self._ids().items() if uid in pages} if pages else {}
        for url, b in broken.items():
            found = [(place, 1, name(names[uid])) for place, uid in b.hits if uid in names]
            others = [(place, 0, ref) for place, ref in self.others.get(url, ())]
            # by place only, and stable: referrals at one place (redirects fetched one after
            # another) keep the order they came in, as the journal's tuple keeps them
            early: list[str] = []
            for _, _, ref in sorted(others + found, key=_PLACE):
                if ref not in early:
                    early.append(ref)
                    if len(early) == EARLY_REFERRERS:
                        break
            yield url, [b.first, *early] if b.first else early

    def _scan(
        self, spans: dict[int, Broken], targets_of: Callable[[list[int]], dict[int, bytes]]
    ) -> None:
        """The pages of each span linking to its URL, EARLY_REFERRERS at most a URL: the
        followed pages read once, in order, a chunk at a time."""
        order = self._order
        start = min(b.since for b in spans.values())
        end = max(b.until for b in spans.values())
        wanted = set(spans)
        while start < end and wanted:
            pages: Sequence[int] = order[start : min(end, start + _CHUNK)]
            links = targets_of(sorted(set(pages)))
            for place, page in enumerate(pages, start):
                packed = links.get(page)
                if not packed:
                    continue
                for uid in wanted.intersection(array("I", packed)):
                    b = spans[uid]
                    if b.since <= place < b.until:
                        b.hits.append((place, page))
                        if len(b.hits) == EARLY_REFERRERS:
                            wanted.discard(uid)
            start += _CHUNK
