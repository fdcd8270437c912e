"""--resume: the crawl saved in the state file rebuilt (frontier, decisions, listings, twins)
before the loop goes on from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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

#: Reasons given before a fetch; replayed decisions with these spent no trap budget (unless
#: fetched: a page an exclude_listing_only or include pattern leaves out has a status).
_SCREEN_REASONS = frozenset({OUT_OF_SCOPE, TOO_LONG, TRAP, ROBOTS_TXT, LIMIT, EXCLUDED_BY_PATTERN})


@dataclass(slots=True, frozen=True)
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
    if snap.counters.get("outage"):
        raise StateError(
            f"the crawl saved in {state.path} stopped because the site looked down; "
            "its failed pages would be kept as they failed: start a fresh crawl without "
            "--resume"
        )
    for row in snap.queued:
        frontier.add(row.url, row.depth, row.referrer)
        budgets.spend(row.url)
    for url in snap.seen:
        frontier.mark_seen(url)
    journal.refs = {url: tuple(refs) for url, refs in snap.referrers.items()}
    for d in snap.decisions:
        if d.reason not in _SCREEN_REASONS or d.status is not None:
            budgets.spend(d.url)
        journal.emit(d.url, d.status, Decision(d.reason, d.detail), d.depth, d.referrer)
    listed = 0
    for listing in snap.listings:
        budgets.spend(listing.url)
        journal.listing(listing, replayed=True)
        listed += 1
    for key, url in snap.bodies.items():
        journal.twins.met(int.from_bytes(key, "little", signed=True), url)
    tally.fetched = tally.fetched_before = snap.counters.get("fetched", 0)  # not in pages/s
    tally.failed = snap.counters.get("failed", 0)
    log(
        f"resuming: {len(snap.queued)} URLs queued, {listed} listed, "
        f"{tally.fetched} pages fetched before"
    )
    return Replayed(tally.fetched, bool(snap.counters.get("seeded")))
