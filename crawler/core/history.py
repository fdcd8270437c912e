"""A URL's history from the crawl's previous runs, and what a 304 answer makes of it. Pure.

A crawl with a state file (``--state``) keeps, per URL, what its last finished run learnt of
the page: the validators to ask again with (ETag, Last-Modified), the facts its decision was
made on (type, directives, canonical and where it came from, links followed and rel=nofollow
targets, body key) and its content blocks and dates. The next run asks with
``If-None-Match`` / ``If-Modified-Since``; a ``304`` then has no body, and the page is
rebuilt from the history here (revive), so that it is judged, and its links followed,
exactly as the full answer would have been. crawler.shell.revalidation owns when: which
answers keep validators, and the history key; the state (crawler.shell.state_history)
only stores rows, and crawler.core.lastmod alone dates the content.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter
from typing import Any, overload

from crawler.core.directives import NO_DIRECTIVES, Directives
from crawler.core.media import PageExtras
from crawler.core.page import PageResult
from crawler.core.validators import Validators
from crawler.core.wire import unpack

__all__ = ["HistoryLinks", "HistoryRow", "Prior", "revive"]


@dataclass(slots=True)
class HistoryRow:
    """A URL's row of the history as a run writes it (crawler.shell.state): the table's
    columns are these fields, by name. Only a 200 (or a 304 revived) has more than the
    status and reason: a page gone has no validators to ask with."""

    url: int  # its id in the state's URL table
    etag: str | None = None
    modified: str | None = None  # the Last-Modified header as sent
    mime: str | None = None
    meta: bytes | None = None  # robots meta directives, packed
    header: bytes | None = None  # X-Robots-Tag directives, packed
    canonical: str | None = None
    canonical_in_html: bool = False  # the canonical is the HTML link's, not the header's
    targets: bytes | None = None  # its links: packed 32-bit URL ids, in order
    nofollow: bytes | None = None  # the URLs only its rel=nofollow links reach: packed ids
    body: int | None = None  # the body key (duplicates)
    blocks: bytes | None = None  # content blocks: packed 32-bit hashes
    status: int | None = None
    reason: str | None = None  # its decision
    first_seen: int | None = None  # microseconds since the epoch: a run's start
    changed: int | None = None  # the start of the run that saw its text change, if any
    lastmod: int | None = None  # published, once the run is over
    source: str | None = None  # the published lastmod's source
    extras: bytes | None = None  # images, alternates, videos: a packed PageExtras
    stamped: bool = False  # its Last-Modified was its response's Date


class HistoryLinks(Sequence[str]):
    """A revived page's links as the history holds them: `ids`, the packed 32-bit URL ids,
    in order, named from `names` (the state's id -> URL table, every one of these ids
    named) only when a rule asks for the URLs. A sequence like any page's list of links, so
    the rules judge it as they would the full answer's; the ids let its row be stored again
    as read, and links to URLs the crawl has settled be skipped by id
    (crawler.shell.settled, `pick`): a revived page follows only the few links (none, on
    most pages of a night) that may still change something, and naming all of its links
    first cost about as much as the rest of their walk (#26)."""

    __slots__ = ("_gather", "_named", "_names", "_uids", "ids")

    def __init__(self, ids: bytes, names: Sequence[str | None]) -> None:
        self.ids = ids
        self._names = names
        self._gather: Callable[[Sequence[Any]], tuple[Any, ...]] | None = None
        self._named: list[str] | None = None
        self._uids: array[int] | None = None

    def __len__(self) -> int:
        return len(self.ids) // 4

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        return self.named()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self.named())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HistoryLinks):
            other = other.named()
        return isinstance(other, list) and self.named() == other

    __hash__ = None  # type: ignore[assignment]  # equal to a list: unhashable as one

    def __repr__(self) -> str:
        return f"HistoryLinks({self.named()!r})"

    def gather(self) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
        """What each link's id indexes in a table by id (a byte array, the names), gathered
        in C: made once a page, for its names and the settled depths alike."""
        gather = self._gather
        if gather is None:
            ids = self.uids()
            if len(ids) > 1:
                self._gather = gather = itemgetter(*ids)
            else:  # itemgetter of one item gives no tuple, of none fails
                self._gather = gather = lambda table: tuple(table[uid] for uid in ids)
        return gather

    def uids(self) -> array[int]:
        """The ids, unpacked once a page (for gather and pick alike)."""
        uids = self._uids
        if uids is None:
            self._uids = uids = array("I")
            uids.frombytes(self.ids)
        return uids

    def named(self) -> list[str]:
        """The URLs, in order (named once)."""
        named = self._named
        if named is None:
            self._named = named = list(self.gather()(self._names))  # type: ignore[arg-type]
        return named

    def pick(self, keep: bytes) -> list[str]:
        """The URLs of the links whose byte in `keep` (one a link, 0 or 1) is 1, in order:
        only those are named, unless all were already. Found by `find` in C: a revived page
        keeps about 5 of its 78 links (none on 28% to 68% of the pages of the bench's nights),
        and a walk over all of them made an int of every id (#26)."""
        find = keep.find
        at = find(1)
        if at < 0:
            return []
        if self._named is not None:
            return list(compress(self._named, keep))
        names, uids = self._names, self.uids()
        picked: list[str | None] = []
        while at >= 0:
            picked.append(names[uids[at]])
            at = find(1, at + 1)
        return picked  # type: ignore[return-value]


@dataclass(slots=True)
class Prior:
    """A URL's row of the history: its last answer of a finished run."""

    etag: str | None = None
    modified: str | None = None  # the Last-Modified header as sent
    mime: str = ""
    meta: Directives = NO_DIRECTIVES
    header: Directives = NO_DIRECTIVES
    canonical: str | None = None
    canonical_in_html: bool = False  # the HTML link's: a 304's Link header cannot override it
    body_key: int | None = None
    blocks: bytes | None = None
    first_seen: int | None = None  # microseconds since the epoch: the run's start
    changed: int | None = None  # the start of the run in which its content last changed
    extras: bytes | None = None  # its images, alternates, videos (a packed PageExtras)
    stamped: bool = False  # its Last-Modified was its response's Date (core.lastmod.stamped)
    # as the row holds them, for crawler.shell.revalidation.carries: its links (packed ids,
    # as HistoryLinks.ids), its status and decision
    targets: bytes | None = None
    nofollow: bytes | None = None
    status: int | None = None
    reason: str | None = None
    # the lastmod it was published with and that lastmod's source (crawler.core.lastmod),
    # kept with `changed` for the publish when its blocks are tonight's page's
    lastmod: int | None = None
    source: str | None = None
    # the row's URL id in the state that read it (0: not known), which the run's records of
    # the page are kept by: looked up once a page, not again to carry the row (#26)
    uid: int = 0

    @property
    def validators(self) -> Validators | None:
        if self.etag is None and self.modified is None:
            return None
        return Validators(self.etag, self.modified)


def revive(
    prior: Prior,
    answer: PageResult,
    *,
    header_given: bool,
    targets: Sequence[str],
    nofollow: Sequence[str] | None = None,
) -> PageResult:
    """The page a 304 stands for: the history's, with the directives the 304's headers
    give, when it gives any (an X-Robots-Tag, a Link canonical, re-read every time). The
    canonical follows analyse()'s precedence: the HTML link's (the history's) over the
    Link header's, so a 304 gives the canonical its full answer would. `targets` and
    `nofollow`: the history's links, followed and only met, as the full answer's."""
    if prior.canonical_in_html or answer.canonical is None:
        canonical, in_html = prior.canonical, prior.canonical_in_html
    else:
        canonical, in_html = answer.canonical, False
    return PageResult(  # every field by position: keywords cost a third more (#26)
        answer.mime or prior.mime,
        answer.header if header_given else prior.header,
        prior.meta,
        canonical,
        targets,
        prior.body_key,
        None if prior.extras is None else unpack(PageExtras, prior.extras),  # extras
        prior.blocks,
        True,  # not_modified
        None,  # moved_to: a stub keeps no validators, so is never revived
        "",  # moved_by
        nofollow or [],
        in_html,  # canonical_in_html
    )
