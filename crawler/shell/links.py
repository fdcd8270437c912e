"""Where a crawl's URLs go once met: screened and queued, or recorded at once with why not;
the links of a judged page followed; each decision recorded once (crawler.shell.journal)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from crawler.core.decide import (
    REDIRECT,
    Decision,
    PageFacts,
    Policy,
    follows_links,
    nofollow_links,
)
from crawler.core.frontier import Frontier, Task
from crawler.core.page import PageResult
from crawler.core.report import DecisionRecord, Tally
from crawler.core.screen import Plan, Screen
from crawler.core.urls import resolve
from crawler.shell.journal import Journal
from crawler.shell.referrers import EarlyReferrers
from crawler.shell.settled import SettledIds, SettledNames
from crawler.shell.state import CrawlState


class Links:
    """The frontier's door: discover, refer, follow a page's links, record decisions.
    `active`: the loop's URLs being worked on (a link to one may bring it closer)."""

    def __init__(
        self,
        plan: Plan,
        screen: Screen,
        policy: Policy,
        frontier: Frontier,
        journal: Journal,
        tally: Tally,
        active: dict[str, int],
        queued: Callable[[], None],
        strip_params: tuple[str, ...] = (),
    ) -> None:
        self.plan = plan
        self.screen = screen
        self.policy = policy
        self.frontier = frontier
        self.seen = frontier.seen  # every URL met: the frontier's own dict (a property call)
        self.journal = journal
        self.tally = tally
        self.active = active
        self.queued = queued  # tells the loop a URL was added
        self.strip_params = strip_params
        self.state: CrawlState | None = None
        self.identity = plan.identity
        # a URL as the sitemap names it, and in crawl space: the plan's own, bound (asked
        # for twice a judged page and for each redirect hop: a layer a call, #26)
        self.public: Callable[[str], str] = plan.public
        self.to_crawl: Callable[[str], str] = plan.to_crawl
        # settled URLs (crawler.shell.settled): by id, with a history to revive pages from
        # (the engine sets it then), else by name while links are in the space the journal
        # settles URLs in; the journal tells them (and the workers, crawler.shell.settled.told)
        self.settled: SettledIds | SettledNames | None = None
        if self.identity:
            self.settled = SettledNames(frontier)
            journal.settle = self.settled.settle
        # on a night with a history: the follow order, the early referrers read back from it
        # (crawler.shell.referrers), set by the engine with `settled`, by id
        self.early: EarlyReferrers | None = None
        # the start URL's decisions, each hop of its redirects: why nothing was listed
        self.start_chain: list[DecisionRecord] = []

    def resolve(self, url: str, location: str) -> str | None:
        """A redirect's target, in crawl space; None when it is no usable URL."""
        target = resolve(url, location, self.strip_params)
        return None if target is None else self.plan.to_crawl(target)

    def record(self, url: str, status: int | None, decision: Decision, task: Task) -> None:
        self._record(task.url, url, status, decision, task.depth, task.referrer)

    def _record(
        self,
        asked: str,
        url: str,
        status: int | None,
        decision: Decision,
        depth: int,
        referrer: str | None,
    ) -> None:
        """url's decision, of the task for `asked` (crawl space: as requested; url may be a
        hop of its redirects)."""
        if referrer is None and asked == self.plan.start:
            self.start_chain.append(
                DecisionRecord(url, status, decision.reason, decision.detail, 0, None)
            )
        self.journal.record(url, status, decision, depth, referrer)

    def follow_page(
        self, task: Task, url: str, facts: PageFacts, page: PageResult, decision: Decision
    ) -> None:
        """Follow where a judged page leads: its canonical (when it is not listed itself)
        and its links (unless its directives say not to)."""
        self.active.pop(task.url, None)  # judged: a link to it from its own page is no news
        public = facts.public or self.public(url)  # the judge named it (PageJudge._facts)
        if facts.canonical and not decision.listed and facts.canonical_in_scope:
            self.discover(facts.canonical, task.depth + 1, public)
        if page.targets and follows_links(facts, self.policy):
            if self.early is not None:
                self.early.followed(url)
            self.follow_targets(page.targets, task.depth + 1, public)
        if page.moved_to is not None and decision.reason == REDIRECT:  # #24: a stub's target
            self.discover(page.moved_to, task.depth, public)
        unfollowed = nofollow_links(facts, page.targets, page.nofollow, self.policy)  # #24
        if unfollowed:
            # in crawl space, as the frontier knows them (links may name the public origin)
            met = [u for u in map(self.to_crawl, unfollowed) if u not in self.frontier]
            self.journal.nofollow_links(met, public, task.depth + 1)

    def follow_targets(self, targets: Sequence[str], depth: int, referrer: str) -> None:
        """Discover the links of a page: the crawl's hottest loop. Most lead to URLs met
        before (navigation repeats on every page): those cost a lookup, and a note only
        while the URL waits to be judged, or when broken URLs are known. In a crawl without
        a history, the page's early referrers (links to URLs waiting) are kept in one call
        to the journal, in their order among the page's other notes of referrers (before a
        refer(), which notes one): the journal's and state's call a link were a fifth of
        one's cost (#26). With one, a URL waiting is hushed as it is queued, and its early
        referrers are read back at the end if it is broken (crawler.shell.referrers)."""
        if self.settled is not None:  # only the links that may change something
            targets = self.settled.unsettled(targets, depth)
        new, refer, met = self._new, self.refer, self.seen.get
        active, broken = self.active, self.tally.broken
        depths = self.journal.depths  # listings that may have twins: a closer link counts
        to_crawl = None if self.identity else self.plan.origins.to_crawl
        waiting: list[str] = []  # URLs waiting at their depth or closer: early referrers
        for target in targets:
            url = target if to_crawl is None else to_crawl(target)
            queued = met(url)
            if queued is None:
                new(url, depth, referrer)
            elif type(queued) is range:  # waiting (at its start): refer()'s usual case, one
                if depth >= queued.start:  # append instead of four calls
                    waiting.append(url)
                else:
                    if waiting:  # the rows in order: before refer()'s
                        self._early(waiting, referrer)
                    refer(url, referrer, depth, True)  # moves it up
            elif broken or url in active:
                if waiting:
                    self._early(waiting, referrer)
                refer(url, referrer, depth, True)  # which also brings a listed twin closer
            elif depth < depths.get(url, depth):
                self.journal.closer(url, depth)
        if waiting:
            self._early(waiting, referrer)

    def _early(self, waiting: list[str], referrer: str) -> None:
        """referrer links to the URLs `waiting` (never in flight: DONE): kept as early
        referrers; one whose referrers are then all kept is hushed (a link to it at its
        depth or deeper skips it) until it is judged. `waiting` is emptied. Called before
        any refer() of the page, so that the state's referrer rows keep the order a call a
        link gave them (each URL's own referrers are in order either way). On a night with
        a history they are read back at the end instead (crawler.shell.referrers), and a
        URL is hushed as it is queued: one reached here is not hushed at the depth it waits
        at (queued before a resume, moved up by a referral that is no link, or deeper than
        a byte holds), and is hushed now."""
        early = self.early
        if early is not None:
            met = self.seen
            for url in waiting:
                early.waiting(url, met[url].start)  # type: ignore[union-attr]  # a range
            waiting.clear()
            return
        full = self.journal.early_referrers(waiting, referrer)
        waiting.clear()
        # (SettledIds comes with `early`: here it is SettledNames, or none)
        hush = self.settled.hush if isinstance(self.settled, SettledNames) else None
        if full and hush is not None:
            met = self.seen
            for url in full:
                hush(url, met[url].start)  # type: ignore[union-attr]  # waiting: a range

    def discover(self, url: str, depth: int, referrer: str | None) -> None:
        """A link to url was found: queue it, or record at once why it won't be fetched."""
        url = self.to_crawl(url)
        if url in self.frontier:
            if referrer is not None:
                self.refer(url, referrer, depth)
            return
        self._new(url, depth, referrer)

    def _new(self, url: str, depth: int, referrer: str | None) -> None:
        """url (crawl space) is met for the first time: queued, or recorded as screened."""
        screened = self.screen(url, depth)
        if screened is not None:  # recorded at once, with no Task made for it
            self.frontier.mark_seen(url)
            self._record(url, url, None, screened, depth, referrer)
            return
        self.frontier.add(url, depth, referrer)
        if self.state is not None:
            uid = self.state.queued(url, depth, referrer)
            if self.early is not None:  # by the id the state gave it: not looked up again
                self.early.queued(uid, depth)
        self.queued()

    def met(self, url: str) -> bool:
        return url in self.seen

    def late_seed(self, url: str, sitemap: str) -> None:
        """A seed sitemap lists a URL met already: noted when it is broken."""
        if self.tally.broken and not self.frontier.is_queued(url) and url not in self.active:
            self.journal.late_referrer(url, sitemap)

    def refer(self, url: str, referrer: str, depth: int, linked: bool = False) -> None:
        """Another page links to url: a queued url may move closer to the start (so may one
        being fetched, and a listing: twins are ranked by it), and pages linking to URLs not
        yet judged or judged broken are kept for the broken-links report. `linked`: by a
        link of its page (Links.follow_targets), which a night with a history reads back
        at the end (crawler.shell.referrers) instead of keeping it now."""
        active = self.active.get(url)
        if active is not None or self.frontier.is_queued(url):
            if active is not None and depth < active:
                self.active[url] = active = depth
            if self.frontier.lower(url, depth, referrer) and self.state is not None:
                self.state.lowered(url, depth, referrer)
            early = self.early
            if early is None:
                self.journal.early_referrer(url, referrer)
            elif linked:  # hushed again, at the depth it waits at now
                early.waiting(url, active if active is not None else self.seen[url].start)  # type: ignore[union-attr]  # queued: a range
            else:
                early.referred(url, referrer)
            return
        if self.tally.broken:
            self.journal.late_referrer(url, referrer)
        if depth < self.journal.depths.get(url, depth):
            self.journal.closer(url, depth)
