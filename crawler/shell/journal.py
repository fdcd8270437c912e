"""Where every decision goes: the tally, the decisions file, the broken-link referrers, the
state file, and the listings waiting for the end of the crawl.

The engine decides; the journal records, in one place for every path a URL can take (a link
screened out, a redirect hop, a fetched page, a page parsed by a worker, a resumed crawl).
A decision is written once and never revised, except a listing: a page that would be listed
waits in the spool until every page is judged, because a byte-identical twin fetched later
may be the one to list (crawler.core.duplicates).

Order. The sitemap lists its URLs sorted by loc, whatever the order they were fetched in, so
that identical crawls publish identical files: the listings reach the writer only at the end
of the crawl, out of the spool's merge sort. The decisions file ends with the listings' lines
(`listed` and `duplicate_of`), in the same loc order; every other line is written when its
decision is made, so those come in crawl order, which depends on timing (and, after a resume,
the replayed lines come first). Sorting those too would take a second sort of every URL met.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Container, Iterable, Iterator
from datetime import UTC, datetime
from itertools import islice, repeat
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

from crawler.core.canonicals import BrokenCanonical, Canonicals
from crawler.core.decide import (
    DUPLICATE_OF,
    LISTED,
    NOFOLLOW,
    OUT_OF_SCOPE,
    Decision,
    canonical_ignored,
    nofollow_detail,
)
from crawler.core.duplicates import Twins
from crawler.core.lastmod import (
    AUTO,
    HeavyHitters,
    LastRun,
    NightTemplate,
    SiteDates,
    common_blocks,
    count_candidates,
    date_page,
    has_bit,
    set_bit,
)
from crawler.core.report import MAX_REFERRERS, DecisionRecord, Tally, is_broken
from crawler.core.urls import UNSETTLED
from crawler.errors import OutputError
from crawler.shell.extensions import Extensions
from crawler.shell.listings import Listing, Spool
from crawler.shell.referrers import EARLY_REFERRERS, EarlyReferrers
from crawler.shell.state import CrawlState
from crawler.shell.state_history import WARM_CHUNK
from sitemap_out import Entry, EntryError

if TYPE_CHECKING:  # made by the engine with llms_txt only: a crawl without it never loads it
    from crawler.core.llms import LlmsFile

__all__ = ["EARLY_REFERRERS", "Journal"]

_BLOCKS = operator.attrgetter("blocks")


class EntrySink(Protocol):
    async def add_many(self, entries: list[Entry]) -> None: ...

    async def add_news(self, entries: list[Entry]) -> None: ...

    def add_llms_txt(self, render: Callable[[str], str]) -> None: ...


class Journal:
    """The record of one crawl (or of one `explain`)."""

    def __init__(self, public: Callable[[str], str], tally: Tally) -> None:
        self.public = public  # a crawl-space URL as the sitemap would name it
        self.tally = tally
        self.twins = Twins()
        self.state: CrawlState | None = None
        # the --decisions file: opened (replacing the old one) at the first decision written,
        # so that a run refused before deciding anything leaves the last run's file as it was
        self.decisions_path: Path | None = None
        self._decisions: IO[str] | None = None
        self.spool: Spool | None = None  # None when judging one URL: a listing is final at once
        self.sink: EntrySink | None = None  # the writer: listings go there at the end
        # tells workers a URL is judged, and the depth below which a link to it still counts
        self.settle: Callable[[str, int], None] | None = None
        self.echo: Callable[[DecisionRecord], None] | None = None  # also gets every record
        self.refs: dict[str, tuple[str, ...]] = {}  # URL not yet judged -> more linking pages
        # on a night with a history, the early referrers are not kept in `refs` as links
        # are followed but named at the end for the URLs judged broken (set by the engine)
        self.early: EarlyReferrers | None = None
        # listing that may have twins -> its depth: the fewest links from the start found to
        # it, which a link found after it was fetched can lower (pages in flight at a smaller
        # depth finish late), so that twins are ranked the same whatever the timing
        self.depths: dict[str, int] = {}
        # whether a listing answered a body met before: without one there are no twins to
        # rank, and the end of the crawl takes one pass over the listings instead of two
        self.contested = False
        # images, videos, hreflang clusters and news: set for a crawl (not for `explain`)
        self.extensions: Extensions | None = None
        # llms.txt, made of the listed pages as they are written: with llms_txt only
        self.llms: LlmsFile | None = None
        # decides each listing's lastmod when the crawl is over (set by the engine)
        self.dating = Dating(AUTO, None)
        # pages listed but for their canonical, waiting for its target's decision (#24)
        # (with its canonical, public: ForeignCanonicals counts it once it is decided, so that
        # the figures saved for --resume hold only the pages a resumed crawl does not fetch)
        self.canonicals: Canonicals[tuple[Listing, Decision, str]] = Canonicals()
        # URLs met only through nofollow links so far -> (a page linking so, its depth + 1)
        self.nofollowed: dict[str, tuple[str, int]] = {}

    # -- decisions -------------------------------------------------------------------------

    def record(
        self,
        url: str,
        status: int | None,
        decision: Decision,
        depth: int,
        referrer: str | None,
    ) -> None:
        """The decision for url (crawl space) is final: save it and report it."""
        if self.state is not None:
            self.state.decided(url, status, decision.reason, decision.detail, depth, referrer)
        self.emit(url, status, decision, depth, referrer)

    def emit(
        self,
        url: str,
        status: int | None,
        decision: Decision,
        depth: int,
        referrer: str | None,
        *,
        counted: bool = False,
        lastmod_source: str | None = None,
    ) -> None:
        """Count a decision, note a broken link, and write its line in the decisions file.
        `counted`: the tally has it already (a listing, counted when it was made);
        `lastmod_source`: a listed page's (crawler.core.lastmod)."""
        # (a screened-out URL's, status None, is the commonest: more URLs are screened out
        # than listed on most sites, so each step is taken only where it applies, #26)
        reason = decision.reason
        public = self.public(url) if reason != OUT_OF_SCOPE else url
        self.canonicals.judged(url, reason, status)
        if not counted:
            self.tally.count(reason)
        if status is not None and is_broken(reason, status):
            refs = [referrer] if referrer else []
            kept = self.refs.pop(url, ())  # with a history: a resumed night's late ones only
            refs += kept
            if self.early is not None:  # named at the end (name_early); it was hushed as it
                self.early.broken(url, referrer)  # was queued: its late links count
                if self.settle is not None:
                    self.settle(url, UNSETTLED)
            elif len(kept) >= EARLY_REFERRERS and self.settle is not None:
                self.settle(url, UNSETTLED)  # hushed, maybe (Links.follow_targets)
            self.tally.add_broken(public, status, list(dict.fromkeys(refs)))
        else:
            if self.refs:
                self.refs.pop(url, None)
            if self.early is not None:
                self.early.judged(url)
            if self.settle is not None:
                self.settle(url, 0)  # a link to url changes nothing now
        if self.extensions is not None and reason != LISTED:
            self.extensions.decided(public, reason, decision.detail)
        if self.decisions_path is None and self.echo is None:
            return  # nobody reads the record: none made
        record = DecisionRecord(public, status, reason, decision.detail, depth, referrer)
        if self.decisions_path is not None:
            self._write_decision(record.to_json(lastmod_source) + "\n")
        if self.echo is not None:
            self.echo(record)

    def _write_decision(self, line: str) -> None:
        path = self.decisions_path
        assert path is not None
        try:
            if self._decisions is None:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._decisions = path.open("w", encoding="utf-8")
            self._decisions.write(line)
        except OSError as exc:
            raise OutputError(
                f"cannot write the decisions file {path}: {exc.strerror or exc}; the "
                "previously published sitemap is untouched"
            ) from None

    # -- pages linking to a URL ------------------------------------------------------------

    def early_referrer(self, url: str, referrer: str) -> bool:
        """Another page links to url, not yet judged: kept in case it turns out broken.
        True when that makes all the early referrers kept: until url is judged, another
        link to it is news only if it is closer to the start."""
        return bool(self.early_referrers((url,), referrer))

    def early_referrers(self, urls: Iterable[str], referrer: str) -> list[str]:
        """One page, `referrer`, links to each of urls, not yet judged: each kept as
        early_referrer() says, in order, the state's rows in one call (two calls a link
        were a fifth of an early referrer's cost, #26). The URLs whose early referrers
        that makes all kept, in order. A crawl without a history only: one with a history
        reads them back at the end for the URLs judged broken (crawler.shell.referrers)."""
        refs_of, kept, full = self.refs, [], []
        for url in urls:
            refs = refs_of.get(url, ())
            if len(refs) < EARLY_REFERRERS and referrer not in refs:
                refs_of[url] = refs = refs + (referrer,)  # noqa: RUF005 - no list first
                kept.append(url)
                if len(refs) == EARLY_REFERRERS:
                    full.append(url)
        if kept and self.state is not None:
            self.state.referred_by(kept, referrer)
        return full

    def name_early(self) -> None:
        """The crawl is over (or stopped): the early referrers of each URL judged broken
        are named (crawler.shell.referrers) on a night with a history, between the page its
        task named and the pages that linked to it later, as a crawl that kept them as it
        went names them."""
        early, state = self.early, self.state
        if early is None or state is None:
            return
        for url, found in early.named(state.targets_by_id, self.public):
            entry = self.tally.broken.get(self.public(url))
            if entry is not None:
                refs = entry[1]
                refs[:] = list(dict.fromkeys([*found, *refs]))[:MAX_REFERRERS]

    def save_early(self) -> None:
        """A checkpoint: the follow log's new part goes with it (crawler.shell.state_follows),
        so that a resumed night names the early referrers an uninterrupted one names."""
        if self.early is not None and self.state is not None:
            row = self.early.unsaved(self.state.run_started)
            if row is not None:
                self.state.log_follows(row)

    def late_referrer(self, url: str, referrer: str) -> None:
        """Another page links to url, judged already: noted if url is broken."""
        if self.tally.refer_broken(self.public(url), referrer) and self.state is not None:
            self.state.referred(url, referrer)

    # -- nofollow links --------------------------------------------------------------------

    def nofollow_links(self, urls: Iterable[str], referrer: str, depth: int) -> None:
        """urls (crawl space, not met otherwise yet) are linked from referrer (public) only
        by nofollow links: each gets the decision `nofollow` at the end unless met then."""
        nofollowed, state = self.nofollowed, self.state
        for url in urls:
            if url not in nofollowed:
                nofollowed[url] = (referrer, depth)
                if state is not None:  # a page linking to a URL never queued (replay.py)
                    state.referred(url, referrer)

    def settle_nofollow(self, met: Container[str]) -> None:
        """The crawl is over: every URL only nofollow links lead to, and not `met` otherwise
        (the frontier's URLs), is decided `nofollow`, naming one page linking to it."""
        nofollowed, self.nofollowed = self.nofollowed, {}
        for url, (referrer, depth) in nofollowed.items():
            if url not in met:
                self.record(
                    url, None, Decision(NOFOLLOW, nofollow_detail(referrer)), depth, referrer
                )

    # -- canonicals -----------------------------------------------------------------------

    def canonicalised(self, listing: Listing, target: str, public: str, decision: Decision) -> None:
        """A page that would be listed but for its canonical, `target` (crawl space; `public`
        as the page names it), which the crawl judges: `decision` (canonicalised) stands
        unless the target turns out unusable as a canonical (crawler.core.canonicals). Known
        now when the target has its decision already (the usual case: canonicals name
        shallower pages), else once every URL is judged (settle_canonicals): only those pages
        wait, in memory (and a resumed crawl fetches them again: the state has no decision)."""
        if self.canonicals.decided(target):
            self._canonical_decided(
                target, (listing, decision, public), self.canonicals.broken(target)
            )
        else:
            self.canonicals.wait(target, (listing, decision, public))

    def settle_canonicals(self) -> None:
        """Every URL is judged: each waiting page is listed if its canonical is broken, else
        recorded as canonicalised."""
        for target, page, broken in self.canonicals.settle():
            self._canonical_decided(target, page, broken)

    def _canonical_decided(
        self,
        target: str,
        page: tuple[Listing, Decision, str],
        broken: tuple[str, int | None] | None,
    ) -> None:
        listing, decision, public = page
        self.tally.foreign.saw(listing.loc, public)
        if broken is not None:
            self._canonical_broken(listing, target, broken)
        else:
            self.record(listing.url, listing.status, decision, listing.depth, listing.referrer)

    def _canonical_broken(
        self, listing: Listing, target: str, broken: tuple[str, int | None]
    ) -> None:
        why, status = broken
        public = self.public(target)
        self.tally.add_canonical_broken(BrokenCanonical(listing.loc, public, status, why))
        detail = canonical_ignored(public, why)
        if listing.detail:
            detail = f"{detail}; {listing.detail}"
        if listing.body is not None:
            self.contested = True  # it may have twins, met before it was listed
        self.listing(dataclasses.replace(listing, detail=detail))

    # -- listings --------------------------------------------------------------------------

    def closer(self, url: str, depth: int) -> None:
        """A listing that may have twins was found fewer links from the start."""
        if depth < self.depths[url]:
            self.depths[url] = depth
            if self.state is not None:
                self.state.lowered(url, depth)

    def listing(self, listing: Listing, *, replayed: bool = False) -> None:
        """A page that would be listed: it waits for the end of the crawl, for its twins if
        any and for its place in loc order (see module doc). `replayed`: read back from the
        state file by a resumed crawl."""
        if self.spool is None:  # judging one URL: no twins to wait for
            self.emit(
                listing.url, listing.status, _listed(listing), listing.depth, listing.referrer
            )
            return
        self.spool.add(listing)
        self.canonicals.listed(listing.url)
        if self.extensions is not None:
            self.extensions.noted(listing)
        self.dating.saw(listing)
        if listing.body is not None:
            self.depths[listing.url] = listing.depth
        if replayed:
            self.contested = True  # whether its body was met before is not saved
        elif self.state is not None:
            self.state.listed(listing)
        self.tally.reasons[LISTED] += 1
        if self.refs:
            self.refs.pop(listing.url, None)
        if self.early is not None:
            self.early.judged(listing.url)
        if self.settle is not None:  # a closer link to a listing with twins still counts
            self.settle(listing.url, listing.depth if listing.body is not None else 0)

    async def publish_listings(self) -> None:
        """Every page is judged: list each listing that has no better twin, in loc order,
        and record the others as duplicates of the one listed."""
        assert self.spool is not None and self.sink is not None
        self.settle = None  # the workers are gone
        self.settle_canonicals()  # before the twins compete: a page listed now may win
        twins, state, depths, sink = self.twins, self.state, self.depths, self.sink
        dating, llms = self.dating, self.llms
        dating.settle(self.spool)
        if self.contested:
            for listing in self.spool:
                if listing.body is not None:
                    twins.claim(listing.body, depths.get(listing.url, listing.depth), listing.url)
        # a listed page's decision goes nowhere but the tally (counted already) without these
        recorded = self.decisions_path is not None or self.echo is not None
        ext = self.extensions
        if ext is not None:
            ext.now = datetime.now(UTC)  # news: the last two days are the publish's
        if ext is not None and ext.hreflang:  # which alternates are listed: all must be known
            spool = self.spool

            def winners() -> Iterator[Listing]:
                for listing in spool:
                    best = None if listing.body is None else twins.winner(listing.body)
                    if best in (None, listing.url):
                        yield listing
                    else:  # an alternate naming it is told why it is not listed
                        ext.decided(listing.loc, DUPLICATE_OF, self.public(best))

            ext.prepare(winners())
        contested = self.contested  # (settled above: no claim is made past this point)
        entries: list[Entry] = []  # handed to the sink a chunk at a time (one await, #26)
        for listing, uid in dating.warmed(self.spool):
            url = listing.url
            # uncontested, nothing was claimed: every listing is its own body's winner
            # (twins.winner would say None for each, a call a listing for nothing, #26)
            winner = url if listing.body is None or not contested else twins.winner(listing.body)
            if winner is None or winner == url:
                lastmod, source = dating.date(listing, uid)
                self.tally.lastmods[source] += 1
                entry = listing.dated(lastmod)
                if ext is not None:
                    # (not contextlib.suppress: an object and two calls a listing)
                    try:  # noqa: SIM105
                        entry = ext.entry(listing, entry)
                    except EntryError:  # too big for max_bytes with them: listed without
                        pass
                entries.append(entry)
                if len(entries) >= WARM_CHUNK:
                    await sink.add_many(entries)
                    entries = []
                if llms is not None:
                    extras = listing.page_extras()
                    llms.add(listing.loc, None if extras is None else extras.about)
                if recorded:
                    self._final(listing, _listed(listing), counted=True, lastmod_source=source)
                continue
            dating.passed(listing)
            decision = Decision(DUPLICATE_OF, self.public(winner))
            self.tally.reasons[LISTED] -= 1
            if state is not None:
                state.unlisted(url)
                state.decided(
                    url, listing.status, decision.reason, decision.detail, listing.depth,
                    listing.referrer,
                )  # fmt: skip
            self._final(listing, decision, counted=False)
        await sink.add_many(entries)
        dating.finish()
        if ext is not None:
            articles = ext.articles()
            if articles:
                await sink.add_news(articles)
            ext.close()
        if llms is not None:
            sink.add_llms_txt(llms.render)

    @property
    def template(self) -> frozenset[int]:
        """The blocks common to most pages of this crawl, once published (the next run's
        template_before)."""
        return self.dating.template

    def _final(
        self,
        listing: Listing,
        decision: Decision,
        *,
        counted: bool,
        lastmod_source: str | None = None,
    ) -> None:
        self.refs.pop(listing.url, None)
        self.emit(
            listing.url, listing.status, decision, listing.depth, listing.referrer,
            counted=counted, lastmod_source=lastmod_source,
        )  # fmt: skip

    def close(self) -> None:
        if self._decisions is not None:
            try:
                self._decisions.close()
            except OSError as exc:
                raise OutputError(
                    f"cannot write the decisions file {self.decisions_path}: {exc.strerror or exc}"
                ) from None
        if self.spool is not None:
            self.spool.close()
        if self.extensions is not None:
            self.extensions.close()


class Dating:
    """Dates the listings when the crawl is over (crawler.core.lastmod): a page's lastmod
    depends on what the whole site says (whether its Last-Modified headers are believable,
    which text blocks are its template), known only then. With a state file, the content
    dates come from the history, and this run's are kept in it for the next."""

    def __init__(self, mode: str, state: CrawlState | None) -> None:
        self.mode = mode
        self.state = state
        self.site = SiteDates()
        self.summary = HeavyHitters()
        self.template: frozenset[int] = frozenset()  # common now
        self._ignored: frozenset[int] = frozenset()  # common now, or in the previous run
        self._night = NightTemplate()
        self._uncounted: Iterable[Listing] | None = None  # the listings, while not counted
        # the pages the summary chose as they arrived, a bit by URL id, fed only if the
        # template is counted: when the last run's pages are known, the night may keep its
        # template (NightTemplate), and feeding them as they came would be work for nothing
        self._fed: bytearray | None = None
        if state is not None and state.counted_before is not None:
            self._fed = bytearray()
        # the state's URL ids, asked once: it keeps one dict for the run (ResumeQueue.ids),
        # and saw() and date() asked for it again for every listing (#26)
        self._table: dict[str, int] | None = None
        self._started = 0  # the run's start, the date a content change is given (settle)
        # whether the site's Last-Modified headers are believable: known once every listing
        # is in (settle), the same for every listing then dated (a property call each, #26)
        self._believable = True

    def _ids(self, state: CrawlState) -> dict[str, int]:
        table = self._table
        if table is None:
            table = self._table = state.url_ids()
        return table

    def saw(self, listing: Listing) -> None:
        """A listing waits in the spool (replayed ones too: the figures are rebuilt)."""
        self.site.add(listing.lastmod is not None, listing.stamped)
        state, fed = self.state, self._fed
        if state is None:
            return
        if fed is None:  # it will be counted: fed now
            self.summary.add_page(listing.blocks)
        elif self.summary.offered() and listing.blocks:
            uid = self._ids(state).get(listing.url)
            if uid is None:  # not interned (never, as listed URLs are): fed now
                self.summary.feed(listing.blocks)
                return
            set_bit(fed, uid)

    def settle(self, listings: Iterable[Listing]) -> None:
        """Every listing is in: the template, the blocks on most pages, is counted once a
        lastmod needs it, or at the end unless it is the last run's (NightTemplate; see
        crawler.core.lastmod). `listings` are read again then."""
        self._believable = self.site.believable
        state = self.state
        if state is None:
            return
        self.template = self._ignored = state.template_before
        self._started = state.run_started  # (a property of the state's: once, not a listing)
        self._uncounted = listings
        if state.counted_before is None:  # the last run's pages are not known: now
            self._count()

    def _count(self) -> None:
        """Count the summary's candidates exactly, in one pass over the listings."""
        listings, self._uncounted = self._uncounted, None
        state, fed = self.state, self._fed
        if listings is None or state is None:
            return
        if fed is not None:  # the pages chosen as they arrived, fed in loc order
            self._fed = None
            ids, feed = self._ids(state), self.summary.feed
            for listing in listings:
                uid, blocks = ids.get(listing.url, -1), listing.blocks
                if blocks and has_bit(fed, uid):
                    feed(blocks)
        counts, pages = count_candidates(self.summary.candidates(), map(_BLOCKS, listings))
        self.template = common_blocks(counts, pages)
        self._ignored = self.template | state.template_before

    def finish(self) -> None:
        """Every listing is dated: the template is counted unless it is the last run's, and
        the pages it is made of are kept for the next run."""
        state = self.state
        if state is None:
            return
        if self._uncounted is not None:
            if self._night.kept(state.counted_before):
                self._uncounted = None  # self.template is the last run's
            else:
                self._count()
        state.counted(self._night.counted())

    def passed(self, listing: Listing) -> None:
        """A listing not dated (a twin's loser): the template is counted on it too."""
        state = self.state
        if state is not None:
            uid = self._ids(state).get(listing.url)
            self._noted(uid, listing, state.last_run_by(uid, listing.url, listing.blocks))

    def _noted(self, uid: int | None, listing: Listing, before: LastRun | None) -> None:
        needed = self._night.page(uid, listing.blocks, None if before is None else before.blocks)
        if needed and self._uncounted is not None:  # a lastmod depends on it: count it now
            self._count()

    def warmed(self, listings: Iterable[Listing]) -> Iterator[tuple[Listing, int | None]]:
        """The listings, each with its URL's id in the state (None: none, or no state), the
        history rows date() reads for them read a chunk at a time by those ids (the id
        looked up once a listing, not again to date it, #26)."""
        state = self.state
        if state is None:
            yield from zip(listings, repeat(None))
            return
        ids = self._ids(state)
        listings = iter(listings)
        while chunk := list(islice(listings, WARM_CHUNK)):
            uids = [ids.get(listing.url) for listing in chunk]
            state.warm_ids(uids)
            yield from zip(chunk, uids, strict=True)

    def date(self, listing: Listing, uid: int | None) -> tuple[int | None, str]:
        """The listing's lastmod (microseconds, or None) and its source: the rule is
        crawler.core.lastmod's; this feeds it the page's facts and the history's row.
        `uid`: its URL's id in the state, as warmed() gives it."""
        state = self.state
        before = None
        if state is not None:  # the state's facts by the id warmed() looked up
            before = state.last_run_by(uid, listing.url, listing.blocks)
            self._noted(uid, listing, before)
        dated = date_page(
            self.mode,
            header=listing.lastmod,
            stamped=listing.stamped,
            blocks=listing.blocks,
            before=before,
            template=self._ignored,
            believable=self._believable,
            started=self._started,
        )
        if state is not None:
            state.published_by(uid, dated.changed, dated.lastmod, dated.source)
        return dated.lastmod, dated.source


def _listed(listing: Listing) -> Decision:
    return Decision(LISTED, listing.detail)
