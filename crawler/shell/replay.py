"""--resume: the crawl saved in the state file rebuilt (frontier, decisions, listings, twins,
the tally's figures, #24's nofollow links and canonical_broken pages) before the loop goes on
from it. Pages that waited for their canonical's target have no decision saved: they are
queued still, and fetched again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from crawler.core.canonicals import BrokenCanonical
from crawler.core.decide import (
    EXCLUDED_BY_PATTERN,
    LIMIT,
    OUT_OF_SCOPE,
    ROBOTS_TXT,
    TOO_LONG,
    TRAP,
    Decision,
    TrapBudgets,
)
from crawler.core.frontier import Frontier
from crawler.core.report import Tally
from crawler.shell.journal import Journal
from crawler.shell.state import CrawlState, StateError
from crawler.shell.state_file import unresumable
from sitemap_out import EntryError

#: Reasons given before a fetch; replayed decisions with these spent no trap budget (unless
#: fetched: a page an exclude_listing_only or include pattern leaves out has a status).
_SCREEN_REASONS = frozenset({OUT_OF_SCOPE, TOO_LONG, TRAP, ROBOTS_TXT, LIMIT, EXCLUDED_BY_PATTERN})


@dataclass(slots=True)  # plain, not frozen: nothing hashes or changes it (#26)
class Replayed:
    """What the loop goes on from: requests made before, and whether the seed sitemaps were
    read and handed to the frontier already."""

    fetched: int
    seeded: bool


def replay(
    state: CrawlState,
    frontier: Frontier,
    budgets: TrapBudgets,
    journal: Journal,
    tally: Tally,
    log: Callable[[str], None],
) -> Replayed:
    """Rebuild the crawl saved in the state file: frontier, decisions, listings."""
    snap = state.load()
    if (why := unresumable(snap.counters)) is not None:
        raise StateError(
            f"the crawl saved in {state.path} {why}: it can't be resumed; a crawl without "
            "--resume starts afresh (the nightly job does so by itself)"
        )
    for row in snap.queued:
        frontier.add(row.url, row.depth, row.referrer)
        budgets.spend(row.url)
    for url in snap.seen:
        frontier.mark_seen(url)
    # A URL linked to but never queued nor decided is one only nofollow links lead to
    # (journal.nofollow_links saves its first linking page): it gets its decision at the end
    # as in a crawl never stopped. Its depth is that page's, plus one, read off the page's
    # decision below; one still queued is fetched again and finds it again.
    nofollowed = {url: refs[0] for url, refs in snap.referrers.items() if url not in frontier}
    journal.refs = {
        url: tuple(refs) for url, refs in snap.referrers.items() if url not in nofollowed
    }
    if journal.early is not None:  # a night with a history: before its broken URLs' replay
        journal.early.restore(state.follows())
    depths: dict[str, int] = dict.fromkeys(nofollowed.values(), -1)  # linking page -> depth
    for d in snap.decisions:
        if d.reason not in _SCREEN_REASONS or d.status is not None:
            budgets.spend(d.url)
        if depths and d.status is not None:
            public = journal.public(d.url)
            if public in depths:
                depths[public] = d.depth
        journal.emit(d.url, d.status, Decision(d.reason, d.detail), d.depth, d.referrer)
    listed = 0
    for listing in snap.listings:
        try:  # the publish trusts what entry() checked (Listing.dated): so is a replayed one
            listing.entry()
        except EntryError as exc:
            raise StateError(
                f"the crawl saved in {state.path} holds a listing the sitemap cannot hold "
                f"({exc}): it can't be resumed; a crawl without --resume starts afresh (the "
                "nightly job does so by itself)"
            ) from None
        budgets.spend(listing.url)
        journal.listing(listing, replayed=True)
        if listing.loc in depths:
            depths[listing.loc] = listing.depth
        broken = BrokenCanonical.from_detail(listing.loc, listing.detail)
        if broken is not None:  # #24: a page listed as its canonical is ignored
            tally.add_canonical_broken(broken)
        listed += 1
    for url, referrer in nofollowed.items():
        if depths[referrer] >= 0:
            journal.nofollowed[url] = (referrer, depths[referrer] + 1)
    for key, url in snap.bodies.items():
        journal.twins.met(key, url)
    tally.restore(snap.counters)
    if snap.queued or snap.seen:
        log(
            f"resuming: {len(snap.queued)} URLs queued, {listed} listed, "
            f"{tally.fetched} pages fetched before"
        )
    else:  # stopped before its first checkpoint: the engine starts it as it first did
        log("resuming: the stopped crawl saved nothing; starting from the start URL")
    return Replayed(tally.fetched, bool(snap.counters.get("seeded")))
