"""The page judge: one URL from its fetch to its decision, the same for every mode (crawl,
check, explain). Redirects are followed hop by hop, each hop screened like a link; the final
answer is revived (a 304, crawler.shell.revalidation) or rendered when asked
(crawler.shell.rendered), analysed, decided (crawler.core.decide) and listed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from datetime import datetime
from functools import lru_cache

from crawler.config import Config
from crawler.core.botwall import Walls
from crawler.core.decide import (
    BLOCKED_BY_BOT_PROTECTION,
    FETCH_ERROR,
    HTTP_ERROR,
    LIMIT,
    REDIRECT,
    Decision,
    PageFacts,
    Policy,
    awaits_canonical,
    decide_page,
    depth_priority,
    walled_detail,
)
from crawler.core.frontier import Task
from crawler.core.media import PageExtras
from crawler.core.page import PageResult
from crawler.core.wire import pack
from crawler.shell.client import PoliteClient
from crawler.shell.fetch import REDIRECT_STATUSES, Response
from crawler.shell.hosts import HostGate
from crawler.shell.links import Links
from crawler.shell.listings import Listing, to_micros
from crawler.shell.loop import CrawlLoop
from crawler.shell.pages import Fetched
from crawler.shell.rendered import PageRenderer
from crawler.shell.revalidation import Answer, Revalidation
from crawler.shell.throttle import ThrottleClosed
from sitemap_out import Entry, EntryError

#: A day in microseconds: a Last-Modified later than a day from now is a clock error.
_DAY_MICROS = 86_400_000_000

#: to_micros of a parsed Last-Modified, memoised (#26): parse_http_date hands back one
#: object per date, and a site's pages share the few dates its files were written at, so
#: the datetime arithmetic ran again for nearly every listed page. Keyed by the datetime's
#: value (its hash is cached in it): the same instant, the same microseconds.
_header_micros = lru_cache(maxsize=1024)(to_micros)

#: A judged page: its final URL, facts, analysis and decision.
Judged = tuple[str, PageFacts, PageResult, Decision]


class PageJudge:
    """Fetch (or revive), render when asked, analyse, decide, list. `check_entry`: raises
    EntryError for a listing the sitemap cannot hold, given its entry's loc, lastmod,
    changefreq and priority (the writer's check_plain when publishing, else the entry's
    own rules)."""

    def __init__(
        self,
        config: Config,
        policy: Policy,
        client: PoliteClient,
        links: Links,
        loop: CrawlLoop,
        revalidation: Revalidation,
        renderer: PageRenderer,
        check_entry: Callable[
            [str, datetime | None, str | None, float | None], None
        ] = Entry.check_values,
        hosts: HostGate | None = None,
    ) -> None:
        self.config = config
        self.policy = policy
        self.client = client
        self.links = links
        self.loop = loop
        self.revalidation = revalidation
        self.renderer = renderer
        self.check_entry = check_entry
        self.hosts = hosts  # allowed_hosts: their robots.txt (None: one host, read already)
        self.journal = links.journal
        self.tally = links.tally
        self.walls = Walls(config.max_bot_blocked, config.user_agent)
        #: what follows a page judged (its final URL, facts, page and decision): a crawl's
        #: Links.follow_page, set by the engine, so that the crawl loop runs judge() itself,
        #: not a coroutine around it (every await of a page passes each layer, #26); None
        #: where the caller follows, or not, from what judge() returns (check, explain)
        self.follow: Callable[[Task, str, PageFacts, PageResult, Decision], None] | None = None

    async def judge(self, task: Task) -> Judged | None:
        """Fetch task.url, following its redirects one hop at a time, decide and record
        each decision; then `follow` the page, when set. The final page's URL, facts,
        analysis and decision; None when there was no page.

        Each hop is screened like a link (scope, robots.txt, traps; `_hop`), and a URL
        with a history is asked with its validators (a 304 may answer). The hops are
        made here, not in a coroutine of their own: every await of a page passes each
        layer (#26)."""
        url, chain, hosts = task.url, [task.url], self.hosts
        links, loop = self.links, self.loop
        for _ in range(self.config.max_redirects + 1):
            if hosts is not None:  # another host's robots.txt, once read
                try:
                    denied = await hosts.admit(url)
                except ThrottleClosed:
                    denied = Decision(LIMIT, "max_time reached")
                if denied is not None:
                    links.record(url, None, denied, task)
                    return None
            loop.requested += 1  # before the await: max_pages counts requests in flight
            prior, validators = self.revalidation.ask(url)
            try:
                fetched = await self.client.fetch(url, task.depth + 1, validators)
            except ThrottleClosed as closed:  # never sent: what stopped the crawl is its limit
                links.record(url, None, Decision(LIMIT, str(closed)), task)
                return None
            self._count(fetched)
            if fetched.response.status not in REDIRECT_STATUSES:
                break
            hop = self._hop(task, url, fetched.response, chain)
            if hop is None:
                return None
            url = hop
        else:
            why = f"more than {self.config.max_redirects} redirects from {chain[0]}"
            links.record(url, None, Decision(REDIRECT, why), task)
            return None
        if fetched.walled is not None:
            loop.done_requests += 1
            self._walled(task, url, fetched.walled, fetched.response)
            return None
        rendering = None
        if self.renderer.browser is not None:
            fetched, rendering = await self.renderer.render(url, fetched)
        resp, page = fetched.response, fetched.page
        loop.done_requests += 1  # recorded below, before the next await
        answer = None
        if page is not None:
            answer = self.revalidation.answer(url, prior, resp, page)
            if answer is None:  # a 304 with no history to revive: ask for the whole page
                whole = await self._get(url, task)
                if whole is None:
                    return None
                fetched = whole
                if fetched.walled is not None:
                    self._walled(task, url, fetched.walled, fetched.response)
                    return None
                resp, page, prior = fetched.response, fetched.page, None
                if page is not None:
                    answer = self.revalidation.answer(url, None, resp, page, asked_whole=True)
        if page is None or answer is None:  # no answer, or none we could read
            error = resp.error or fetched.unreadable or "no answer"
            self.links.record(url, None, Decision(FETCH_ERROR, _with_notes(error, resp)), task)
            return None
        if answer.revived:
            self.tally.not_modified += 1
        page = answer.page
        facts = self._facts(url, answer)
        decision = decide_page(facts, self.policy)
        # #24: canonicalised, but listed if its canonical turns out broken (journal decides)
        awaits = awaits_canonical(facts, decision, self.policy)
        if answer.status == 200 and not awaits:  # #24: most canonicals elsewhere: a copy?
            self.tally.foreign.saw(facts.public or url, facts.canonical_public)
        if rendering:
            detail = f"{decision.detail} ({rendering})" if decision.detail else rendering
            decision = Decision(decision.reason, detail)
        if resp.notes:
            decision = Decision(decision.reason, _with_notes(decision.detail, resp))
        self.revalidation.record(url, prior, answer, decision.reason)
        listed = decision.listed
        if listed or awaits:
            made = self._listing(url, facts, task, answer, "" if awaits else decision.detail)
            if awaits:
                if isinstance(made, Listing):  # the journal counts it as foreign or not
                    self._canonicalised(made, facts, decision)
                    return self._judged(task, url, facts, page, decision)
                self.tally.foreign.saw(facts.public or url, facts.canonical_public)
            elif isinstance(made, Decision):
                decision = made
                listed = decision.listed
            else:
                if facts.twin_of is not None:
                    self.journal.contested = True
                self.journal.listing(made)
        if not listed:
            self.links.record(url, answer.status, decision, task)  # a 304's: the page's, 200
        llms = self.journal.llms
        if llms is not None and task.url == self.links.plan.start and task.referrer is None:
            llms.start_page(None if page.extras is None else page.extras.about)
        return self._judged(task, url, facts, page, decision)

    def _judged(
        self, task: Task, url: str, facts: PageFacts, page: PageResult, decision: Decision
    ) -> Judged:
        """A page judged: followed when `follow` is set, and handed back."""
        if self.follow is not None:
            self.follow(task, url, facts, page, decision)
        return url, facts, page, decision

    def _walled(self, task: Task, url: str, service: str, resp: Response) -> None:
        """A bot wall answered, not the site: recorded as such, and never analysed, listed,
        compared for duplicates nor kept as the page's history. The run stops when it
        answered the start URL (no page to crawl from) or too many requests (Walls)."""
        detail = _with_notes(walled_detail(service, resp.status), resp)
        self.links.record(url, resp.status, Decision(BLOCKED_BY_BOT_PROTECTION, detail), task)
        walls = self.walls
        walls.met(service)
        if task.url == self.links.plan.start and task.referrer is None:
            self.loop.walled(walls.at_start(service, self.links.public(task.url)))
        elif (why := walls.verdict(self.tally.fetched)) is not None:
            self.loop.walled(why)

    def _facts(self, url: str, answer: Answer) -> PageFacts:
        page, links = answer.page, self.links
        facts = PageFacts(url, answer.status, page.mime, page.meta, page.header)
        facts.too_large = answer.too_large
        facts.last_modified = answer.modified
        facts.public = links.public(url)
        # #24: may they crawl it. Every URL judged was allowed to us by the rules in the
        # screen in this run (screened when met, or HostGate.admit), but on a --resume: the
        # queue's URLs were screened by the run before, by the robots.txt it read (#26)
        facts.engine_denial = links.screen.engine_denial(url, allowed_to_us=not self.config.resume)
        if page.moved_to is not None:  # #24: a redirect stub, followed like a redirect
            facts.moved_to = links.public(links.to_crawl(page.moved_to))
            facts.moved_by = page.moved_by
        if page.canonical is not None:
            canonical = links.to_crawl(page.canonical)
            facts.canonical = canonical
            facts.canonical_public = links.public(canonical)
            facts.canonical_in_scope = links.plan.in_scope(facts.canonical_public)
        if page.body_key is not None and self.policy.skip_duplicates:
            facts.twin_of = first = self.journal.twins.met(page.body_key, url)
            state = self.revalidation.state
            if first is None and state is not None:
                state.body(page.body_key, url)
        return facts

    def _canonicalised(self, listing: Listing, facts: PageFacts, decision: Decision) -> None:
        """#24: the journal decides once its canonical's target has its decision (at once,
        when it has)."""
        assert facts.canonical is not None and facts.canonical_public is not None
        self.journal.canonicalised(listing, facts.canonical, facts.canonical_public, decision)

    async def _get(self, url: str, task: Task) -> Fetched | None:
        """url asked for whole, without validators; None when max_time closed the throttle."""
        self.loop.requested += 1
        try:
            fetched = await self.client.fetch(url, task.depth + 1)
        except ThrottleClosed as closed:  # never sent: what stopped the crawl is its limit
            self.links.record(url, None, Decision(LIMIT, str(closed)), task)
            return None
        self._count(fetched)
        return fetched

    def _count(self, fetched: Fetched) -> None:
        self.tally.fetched += 1
        resp = fetched.response
        if (resp.error or resp.status >= 500) and fetched.walled is None:
            self.tally.failed += 1  # the publish guard's max_error_rate: the site's failures

    def _hop(self, task: Task, url: str, resp: Response, chain: list[str]) -> str | None:
        """A redirect from url: recorded as `redirect`, and its target screened like a link;
        the URL to ask next, or None when the chain ends here without a page to judge (a
        loop, a target handled on its own, one screened out)."""
        links, loop, frontier = self.links, self.loop, self.links.frontier
        location = (resp.location or "").strip()
        target = links.resolve(url, location) if location else None
        if target is None:
            decision = Decision(HTTP_ERROR, f"HTTP {resp.status} without a usable Location")
        elif target in chain:
            decision = Decision(REDIRECT, f"redirect loop: {' -> '.join([*chain, target])}")
        else:
            decision = Decision(REDIRECT, links.public(target))
        links.record(url, resp.status, decision, task)
        loop.done_requests += 1
        if target is None or target in chain:
            return None
        if target in frontier:
            links.refer(target, links.public(url), task.depth)
            return None  # handled, or to be handled, on its own
        frontier.mark_seen(target)
        if links.state is not None:
            links.state.queued(target, task.depth, task.referrer)
        screened = links.screen(target, task.depth)
        max_pages = self.config.max_pages
        if screened is None and max_pages and loop.requested >= max_pages:
            screened = Decision(LIMIT, "max_pages reached")
        if screened is not None:
            links.record(target, None, screened, task)
            return None
        chain.append(target)
        return target

    def _listing(
        self, url: str, facts: PageFacts, task: Task, answer: Answer, detail: str
    ) -> Listing | Decision:
        """The listing of a page judged listable, or why the protocol cannot list it. Its
        lastmod is the Last-Modified header's for now; the one published is decided when
        the crawl is over (journal.Dating), from what the whole site says."""
        config, page = self.config, answer.page
        when = answer.modified_at
        lastmod = _header_micros(when)
        if lastmod is not None and lastmod > time.time_ns() // 1000 + _DAY_MICROS:
            lastmod = when = None  # a date in the future is a server clock error, not a lastmod
        # links found to it while it was fetched may have brought it closer to the start
        depth = min(task.depth, self.loop.active.get(url, task.depth))
        body = page.body_key if self.policy.skip_duplicates else None
        listing = Listing(
            url,
            facts.public or self.links.public(url),
            answer.status,
            detail,
            depth,
            task.referrer,
            lastmod,
            config.changefreq,
            depth_priority(depth) if config.priority_by_depth else None,
            body,
            None if page.extras is None else pack(self._public_extras(page.extras)),
            page.blocks,
            answer.stamped,
        )
        try:  # checked now, so the decision says it (the entry is made at the publish)
            self.check_entry(listing.loc, when, listing.changefreq, listing.priority)
        except EntryError as exc:  # a URL the protocol cannot hold (e.g. under 12 chars)
            return Decision(FETCH_ERROR, f"cannot be listed: {exc}")
        return listing

    def _public_extras(self, extras: PageExtras) -> PageExtras:
        """The page's extension facts with its URLs as the sitemap names them: images, videos
        and alternates on the crawled origin get the public one (public_url). A copy: the
        page's own facts (kept in the history) stay in the crawl's space."""
        if self.links.identity:
            return extras
        public, to_crawl = self.links.public, self.links.to_crawl

        def named(url: str) -> str:
            return public(to_crawl(url))

        return dataclasses.replace(
            extras,
            images=tuple(map(named, extras.images)),
            alternates=tuple((lang, named(url)) for lang, url in extras.alternates),
            videos=tuple(video.with_urls(named) for video in extras.videos),
        )


def _with_notes(detail: str, resp: Response) -> str:
    """A decision's detail with the retries that led to it, so retries show in the report."""
    if not resp.notes:
        return detail
    return f"{detail} (after {len(resp.notes)} retries: {'; '.join(resp.notes)})"
