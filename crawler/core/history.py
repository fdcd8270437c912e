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

from collections.abc import Iterable
from dataclasses import dataclass

from crawler.core.directives import NO_DIRECTIVES, Directives
from crawler.core.media import PageExtras
from crawler.core.page import PageResult
from crawler.core.wire import unpack

__all__ = ["HistoryLinks", "HistoryRow", "Prior", "Validators", "revive"]


@dataclass(slots=True, frozen=True)
class Validators:
    """What a conditional request sends: If-None-Match, If-Modified-Since (either may be
    missing). Crosses to worker processes in their job messages."""

    etag: str | None = None
    modified: str | None = None


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


class HistoryLinks(list[str]):
    """A revived page's links as the history holds them: the URLs, in order, and `ids`,
    the same links as the history's packed 32-bit URL ids (every id named). A list like
    any page's, so the rules judge it as they would the full answer's; the ids let its row
    be stored again as read, and links to URLs the crawl has settled be skipped by id,
    without a lookup by name (crawler.shell.settled)."""

    __slots__ = ("ids",)

    def __init__(self, names: Iterable[str], ids: bytes) -> None:
        super().__init__(names)
        self.ids = ids


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
    targets: list[str],
    nofollow: list[str] | None = None,
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
    return PageResult(
        answer.mime or prior.mime,
        answer.header if header_given else prior.header,
        prior.meta,
        canonical,
        targets,
        prior.body_key,
        extras=None if prior.extras is None else unpack(PageExtras, prior.extras),
        blocks=prior.blocks,
        not_modified=True,
        nofollow=nofollow or [],
        canonical_in_html=in_html,
    )
