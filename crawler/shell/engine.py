"""The crawl engine: the components of a run composed, and its crawl and check drivers.

Data flows one way: sources (robots.txt, start URLs, seed sitemaps) -> frontier -> loop ->
page judge (fetch or revive, render, analyse, decide) -> journal -> writer. Each driver
composes the loop (crawler.shell.loop) with the page judge (crawler.shell.judge) and says what
a judged page leads to: `run` crawls and publishes, `check` judges the audit's URLs and keeps
their facts (crawler.shell.explain, the third, judges one URL). Nothing here knows how a page
is fetched (crawler.shell.client, pages), revalidated (revalidation) or rendered (rendered).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from crawler.config import Config, fingerprint, settings
from crawler.core.decide import (
    LIMIT,
    Decision,
    Policy,
    TrapBudgets,
)
from crawler.core.frontier import Frontier, Task
from crawler.core.groups import Groups
from crawler.core.lastmod import AUTO, CONTENT
from crawler.core.page import PagePolicy
from crawler.core.patterns import Patterns
from crawler.core.report import Tally
from crawler.core.robots import product_token
from crawler.core.screen import Plan, Screen
from crawler.core.urls import join_parts, known
from crawler.core.words import plural
from crawler.errors import (
    BlockedByBotProtection,
    InterruptedCrawl,
    NothingListedError,
    OutputError,
    PublishRefused,
)
from crawler.shell.client import SPACING_MARGIN, PoliteClient
from crawler.shell.extensions import Extensions, NewsPolicy
from crawler.shell.fetch import Response, Transport
from crawler.shell.guard import blocked_message, check_publish, outage_message
from crawler.shell.host_output import open_output
from crawler.shell.hosts import HostRules
from crawler.shell.journal import Dating, Journal
from crawler.shell.judge import PageJudge
from crawler.shell.links import Links
from crawler.shell.listings import Spool
from crawler.shell.loop import STOP_GRACE_SECONDS, CrawlLoop, fewer_gc_pauses
from crawler.shell.outputs import change_log, held_outputs, report_changes
from crawler.shell.pages import Pages
from crawler.shell.pool import Spare
from crawler.shell.progress import ProgressLine
from crawler.shell.referrers import EarlyReferrers
from crawler.shell.rendered import PageRenderer
from crawler.shell.replay import replay
from crawler.shell.revalidation import Revalidation, history_key
from crawler.shell.settled import SettledIds, told
from crawler.shell.sources import Robots, SeedSource, read_robots
from crawler.shell.state import CrawlState, StateError
from crawler.shell.throttle import MAX_TIME, ThrottleClosed
from sitemap_out import PublishResult

if TYPE_CHECKING:
    from crawler.core.llms import LlmsFile
    from crawler.core.url_checks import Checked

__all__ = ["SPACING_MARGIN", "STOP_GRACE_SECONDS", "Crawl", "CrawlResult", "Robots"]


@dataclass(slots=True)
class CrawlResult:
    """What a finished crawl hands the CLI: its tally, the published files, robots.txt lines."""

    tally: Tally
    published: PublishResult
    sitemap_url: str
    # (origin, sitemap URL) for each robots.txt line: a host each (allowed_hosts)
    robots_lines: tuple[tuple[str, str], ...] = ()


class Crawl:
    def __init__(
        self,
        config: Config,
        log: Callable[[str], None] = lambda _: None,
        progress: ProgressLine | None = None,
        transport: Transport | None = None,
        robots: Robots | None = None,
    ) -> None:
        """`transport`: where requests go; by default HTTP (an in-memory one for tests).
        `robots`: the site's robots.txt as another Crawl of the same origin read it (the
        audit's stages), so that it is asked for once."""
        self.config = config
        self.robots: Robots | None = robots  # as read by this crawl, or given
        self.log = log
        self.progress = progress
        assert config.url is not None
        self.plan = plan = Plan.make(
            config.url, config.public_url, config.sitemap_url, config.seeds,
            config.strip_params, config.allowed_hosts,
        )  # fmt: skip
        self.identity = plan.identity
        self.policy = _policy(config)
        self.agent = product_token(config.user_agent)
        self.page_policy = _page_policy(config, self.agent)
        self.frontier = frontier = Frontier()
        screen = _screen(config, plan, self.policy)
        self.tally = tally = Tally()
        self.journal = Journal(plan.public, tally)
        self.journal.dating = Dating(config.lastmod, None)  # with the state's, once open
        self.client = PoliteClient(config, plan.start, self.page_policy, transport=transport)
        self.throttle = self.client.throttle
        self.loop = loop = CrawlLoop(
            frontier,
            tally,
            self.throttle,
            concurrency=config.concurrency,
            max_pages=config.max_pages,
            max_time=config.max_time,
            log=log,
        )
        self.client.on_outage = loop.down
        self.links = Links(
            plan, screen, self.policy, frontier, self.journal, tally, loop.active, loop.queued,
            config.strip_params,
        )  # fmt: skip
        self.revalidation = Revalidation(conditional=config.render == "never")
        self.renderer = PageRenderer(config, self.page_policy, frontier.seen, self._in_scope, log)
        hosts = None
        if plan.hosts is not None:  # allowed_hosts: each host's robots.txt, before its pages
            hosts = HostRules(lambda: self.links.screen, self.client, config.user_agent, log)
        self.page_judge = PageJudge(
            config, self.policy, self.client, self.links, loop, self.revalidation,
            self.renderer, hosts=hosts,
        )  # fmt: skip
        self.seeds = SeedSource(config, plan, log)
        self.state: CrawlState | None = None
        self._site_answered = False  # any HTTP answer to the robots.txt requests
        self._pages: Pages | None = None  # the run's Pages strategy, once open

    # -- the crawl driver: crawl, then publish -------------------------------------------

    async def run(self, workers: list[Spare] | None = None) -> CrawlResult:
        """Crawl and publish. `workers`: pool.worker_processes(), forked before the event
        loop (or spawned later), to fetch and parse pages once the crawl is big and its
        requests are not spaced. Not with rendering: workers send back a page's facts, not
        its body, which the browser (in this process) needs."""
        if workers and self.config.render != "never":
            raise ValueError("a rendered crawl renders in this process: give it no workers")
        started = time.monotonic()
        try:
            with held_outputs(self.config):  # every output path checked before any request
                return await self._run(workers)
        finally:
            self.tally.seconds = time.monotonic() - started  # however the run ended

    async def _run(self, workers: list[Spare] | None) -> CrawlResult:
        config, plan, journal, loop = self.config, self.plan, self.journal, self.loop
        started = time.monotonic()
        changes = change_log(config)
        groups = Groups.parse(config.groups)
        writer = open_output(config, plan, changes, groups)
        self.page_judge.check_entry = writer.plain_checker()
        try:
            journal.spool = Spool(config.output)
            journal.sink = writer
            journal.extensions = Extensions(self.tally.extensions, self._news(), datetime.now(UTC))
            if config.llms_txt:
                journal.llms = _llms_file(config, plan, groups)
            journal.decisions_path = config.decisions  # opened at the first decision
            if config.state is not None:
                self._use_state(
                    CrawlState.open(
                        config.state,
                        fingerprint=fingerprint(config),
                        start_url=plan.start,
                        resume=config.resume,
                        settings=settings(config),
                        fresh=config.fresh,
                        history_key=history_key(self.page_policy, config),
                    )
                )
            # Signals are ours until the end: a signal during publish() is noted and the
            # publish completes (the new set is whole), rather than racing an abort.
            # max_time counts from here: robots.txt and the seed sitemaps are the run's
            with loop.signals(), contextlib.ExitStack() as clock:
                clock.enter_context(loop.timed())
                async with self.opened(workers):
                    with contextlib.suppress(ThrottleClosed):  # up before robots.txt came
                        await loop.cuttable(self.read_robots_at(plan.start))
                    if (walled := self.robots_walled()) is not None:
                        raise BlockedByBotProtection(
                            blocked_message(walled, writer.published_count)
                        )
                    self._take_workers()
                    if config.resume:
                        self._replay()
                    # met already when resumed, but for a crawl stopped before its first
                    # checkpoint: it saved nothing, and starts again as it first did
                    for url in (plan.start, *plan.seeds):
                        self.links.discover(url, 0, None)
                    if config.seed_sitemaps and not self.seeds.done and not loop.timed_out:
                        await loop.cuttable(self._read_seed_sitemaps())
                    # (the state's own, no layer a page: #26)
                    after = self.state.maybe_checkpoint if self.state is not None else _nothing
                    # a judged page's links followed by the judge itself (no layer a page),
                    # for this loop only: a check follows as it says (check())
                    self.page_judge.follow = self.links.follow_page
                    try:
                        with loop.showing(self.progress, started), fewer_gc_pauses():
                            await loop.run(self.page_judge.judge, self._release_seeds, after)
                    finally:
                        self.page_judge.follow = None
                clock.close()  # the crawl is over: publishing is not cut by max_time
                walled = loop.blocked or self.page_judge.walls.verdict(self.tally.fetched)
                if loop.stop_signal is not None or loop.outage is not None or walled:
                    if self.state is not None:  # the counters too (before_checkpoint)
                        journal.name_early()  # for the report
                        if loop.outage is not None:  # its failures are no result to resume
                            self.state.counter("outage", 1)
                        if walled:  # nor are a bot wall's answers
                            self.state.counter("blocked", 1)
                        self.state.checkpoint()
                    before = writer.published_count
                    raise _stopped(loop, walled, self.tally.fetched, before, config.state)
                limit = MAX_TIME if loop.timed_out else "max_pages reached"
                if self.seeds.waiting:  # a limit ended the crawl first: they are `limit`
                    self._release_seeds(limit)
                cut = 0
                for task in self.frontier.drain():
                    self.links.record(task.url, None, Decision(LIMIT, limit), task)
                    cut += 1
                budgets = self.links.screen.budgets
                for line in budgets.warnings() + _limit_warning(config, limit, cut):
                    self.log(f"warning: {line}")
                journal.settle_nofollow(self.frontier.seen)  # #24: met, never followed
                journal.name_early()  # a night with a history: read back if needed
                await journal.publish_listings()
                if self.state is not None:
                    self.state.checkpoint()  # a refused publish can be resumed with --force
                self.tally.seconds = time.monotonic() - started
                if writer.count == 0:
                    raise NothingListedError(self._why_nothing())
                if not config.force:
                    check_publish(
                        config, self.tally, writer.published_count, writer.count,
                        writer.layout_note, self.log,
                    )  # fmt: skip
                published = await writer.publish()
                report_changes(published, changes, self.tally, config.changes, self.log)
                if config.news_name and published.news is None:  # said, not a silent 404
                    self.log(_no_news(self.tally.extensions.news_left_out))
                if self.state is not None:
                    try:
                        self.state.finish(journal.template)
                    except StateError as exc:
                        raise OutputError(f"the sitemap is published, but {exc}") from None
        except BaseException:
            await writer.abort()
            raise
        finally:
            changes.close()
            try:
                journal.close()
            finally:
                if self.state is not None:
                    self.state.close()
            pages = self._pages
            self.tally.requests = {
                **self.throttle.stats,
                "workers": pages.worker_count if pages is not None else 0,
                "by_workers": pages.worker_requests if pages is not None else 0,
            }
        # the file actually published: sitemap.txt for a text sitemap in one file
        lines = writer.robots_lines(published, plan.sitemap_url)
        return CrawlResult(self.tally, published, published.sitemap_url or plan.sitemap_url, lines)

    def _use_state(self, state: CrawlState) -> None:
        self.state = self.journal.state = self.links.state = self.revalidation.state = state
        state.before_checkpoint = self._save_counters
        self.journal.dating = Dating(self.config.lastmod, state)
        if (settled := SettledIds.of(state, self.identity)) is not None:  # links by id
            self.links.settled, self.journal.settle = settled, settled.settle
            self.links.early = self.journal.early = EarlyReferrers(state.url_ids, settled)

    def _take_workers(self) -> None:
        """Let worker processes take pages, when there are some and requests are not spaced."""
        pages = self._pages
        assert pages is not None
        if self.client.take_workers():
            self.loop.on_cut = pages.abort
            # workers that leave out links to settled URLs (a crawl without a state) are told
            # them, in the space those are in (then `settled` is set); those of a crawl with
            # a state send every link back and filter none (#26)
            settled = self.links.settled
            if settled is not None and self.state is None:
                self.journal.settle = told(settled, pages.settle)

    def _save_counters(self) -> None:
        """The figures a resumed crawl goes on from: max_pages' and the publish guard's,
        and a night with a history's follow log (Journal.save_early)."""
        assert self.state is not None
        self.journal.save_early()
        self.state.counter("fetched", self.loop.done_requests)
        for name, value in self.tally.counters().items():
            self.state.counter(name, value)

    def _news(self) -> NewsPolicy | None:
        config = self.config
        if not (config.news_name and config.news_language and config.news_articles):
            return None
        articles = Patterns.compile(config.news_articles, "news_articles")
        return NewsPolicy(config.news_name, config.news_language, articles)

    # -- sources -----------------------------------------------------------------------------

    async def read_robots_at(self, url: str) -> None:
        """Read (or take the given) robots.txt and set the screen and throttle by it."""
        if self.robots is None:
            self.robots = await read_robots(self.config, self.client, url)
            self.log(f"robots.txt: {self.robots.note}")
        robots = self.robots.rules
        self.tally.robots_note = self.robots.note
        self._site_answered = self.robots.status is not None
        self.links.screen.robots = robots
        self.throttle.set_crawl_delay(robots.crawl_delay(self.config.user_agent))
        for warning in self.throttle.warnings:
            self.log(f"warning: {warning}")

    async def read_robots(self) -> Robots:
        """The start URL's robots.txt, read as a crawl reads it: for work beside a crawl
        (the audit), inside requests(); later Crawls of the origin can be given it."""
        await self.read_robots_at(self.plan.start)
        assert self.robots is not None
        return self.robots

    async def _read_seed_sitemaps(self) -> None:
        """--seed-sitemaps: read the site's sitemaps now, with robots.txt known."""
        loop = self.loop
        robots = self.links.screen.robots
        self.tally.seed_notes = await self.seeds.read(self.client, robots, lambda: loop.stopped)
        if self.seeds.done and self.state is not None:
            self.state.counter("seeded", 1)

    def _release_seeds(self, limit: str | None = None) -> bool:
        """The links have run out: the seed sitemaps' URLs no link led to are queued (to be
        recorded as `limit`, when a limit ended the crawl first). False: none waited."""
        if not self.seeds.waiting:
            return False
        links = self.links
        self.seeds.release(links.met, links.discover, links.late_seed, limit)
        if self.state is not None:
            self.state.counter("seeded", 1)
        return True

    def _replay(self) -> None:
        assert self.state is not None
        budgets = self.links.screen.budgets
        done = replay(self.state, self.frontier, budgets, self.journal, self.tally, self.log)
        self.loop.requested = self.loop.done_requests = done.fetched
        self.seeds.done = done.seeded

    # -- the check driver: judge, publish nothing -----------------------------------------

    @contextlib.asynccontextmanager
    async def requests(self) -> AsyncIterator[Callable[[str, int | None], Awaitable[Response]]]:
        """Polite GETs for work beside a crawl (the audit's sitemaps and robots.txt): the
        crawl's transport, throttle and retries; one hop per call, redirects not followed."""
        async with self.opened():
            yield self.client.request

    async def check(
        self, urls: Sequence[str], workers: list[Spare] | None = None, *, follow: bool = False
    ) -> Checked:
        """Judge `urls` (crawl space) exactly as a crawl would, politely, by the same
        fetcher and workers, and publish nothing: the service behind `audit`.

        Without `follow` (the URLs a sitemap lists), no link or canonical is followed, and
        the URLs are screened for scope and robots.txt only: the sitemap names them, so no
        trap, depth or pattern rule applies (a redirect's hops are screened alike). With
        `follow` (audit --crawl), the URLs are start URLs and the crawl is run()'s, its
        listings kept in memory rather than published. Every decision reaches the journal's
        `echo` as in a crawl; the result keeps the last per URL, and each final page's facts.
        """
        from crawler.core.url_checks import Checked, PageSeen  # audit's, not a crawl's

        checked = Checked()
        decisions = checked.decisions
        self.journal.echo = lambda record: decisions.__setitem__(record.url, record)
        if not follow:  # the sitemap names them: scope and robots.txt only
            self.links.screen = _lenient_screen(self.config, self.plan)

        async def seen(task: Task) -> None:
            judged = await self.page_judge.judge(task)
            if judged is None:
                return
            url, facts, page, _ = judged
            found = PageSeen(facts.status, facts.mime, facts.last_modified, page.body_key)
            checked.pages[facts.public or url] = found
            if follow:
                self.links.follow_page(task, *judged)
            elif task.depth == 0 and facts.canonical and facts.canonical_in_scope:
                self.links.discover(facts.canonical, 1, self.plan.public(url))  # #24: usable?

        loop = self.loop
        started = time.monotonic()
        try:
            async with self.opened(workers):
                await self.read_robots_at(self.plan.start)
                self._take_workers()
                for url in urls:
                    self.links.discover(url, 0, None)
                with loop.signals(), loop.showing(self.progress, started), loop.timed():
                    await loop.run(seen)
        finally:
            self.tally.seconds = time.monotonic() - started
        if loop.stop_signal is not None:
            raise InterruptedCrawl(loop.stopped_message(None))
        self.journal.settle_canonicals()  # #24: every URL is judged
        if follow:
            self.journal.settle_nofollow(self.frontier.seen)
        checked.canonical_broken = {b.url: b for b in self.tally.canonical_broken}
        checked.outage = loop.outage
        checked.blocked = loop.blocked or self.page_judge.walls.verdict(self.tally.fetched)
        if follow:
            starts = set(urls)
            checked.reached = {self.plan.public(u) for u in self.frontier.seen if u not in starts}
        return checked

    def known_as(self, url: str) -> str:
        """The URL as the crawl would know it from a link: normalised, with strip_params'
        parameters removed (explain judges that URL, and says so when it differs)."""
        return known(url, self.config.strip_params)

    # -- what every driver opens -------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def opened(self, workers: list[Spare] | None = None) -> AsyncIterator[None]:
        """The client's Pages (worker processes too, when given) and the browser, when
        pages are rendered."""
        client = self.client
        async with client.opened(  # all_links with a state: a page's links are its history
            self.frontier.seen, workers, log=self.log, all_links=self.state is not None,
            set_depth=self.loop.set_depth,
        ):  # fmt: skip
            self._pages = client.pages
            origin = join_parts(self.plan.start)[1]
            links = self.links  # the screen's robots.txt, as read by then
            async with self.renderer.opened(
                origin, lambda: links.screen.robots, client.asset, self.tally
            ):
                yield

    def _in_scope(self, targets: Sequence[str]) -> set[str]:
        contains, plan = self.plan.in_scope, self.plan
        return {t for t in targets if contains(plan.public(plan.to_crawl(t)))}

    def robots_walled(self) -> str | None:
        """The line that stops a crawl whose robots.txt a bot wall answered: its pages
        would be walled too, and a 503 challenge would read as "disallow everything"."""
        wall = self.robots.wall if self.robots is not None else None
        if wall is None:
            return None
        service, url = wall
        return self.page_judge.walls.answered(service, self.plan.public(url))

    def _why_nothing(self) -> str:
        from crawler.core.nothing import NothingFacts, why_nothing  # only when nothing listed

        plan, config = self.plan, self.config
        start = plan.start
        if not self.identity:  # a message names the host that answered, and the sitemap's
            start = f"{start} ({plan.origins.to_public(start)} in the sitemap)"
        facts = NothingFacts(
            self.tally, self.links.screen.robots, self._site_answered,
            config.robots_from is not None, bool(config.auth), start, plan.scope.root,
            self.links.start_chain,
        )  # fmt: skip
        hint = self.tally.foreign.hint()  # #24: a crawl of a copy of a site
        return why_nothing(facts) + (f"; {hint}" if hint else "")


def _llms_file(config: Config, plan: Plan, groups: Groups) -> LlmsFile:
    """The llms.txt of the run (llms_txt): its module is imported here, so that a crawl
    without llms.txt does not load it at start (#26)."""
    from crawler.core.llms import LlmsFile

    grouping = (groups.names, groups.group_of) if groups else None
    return LlmsFile(plan.scope.root, plan.public(plan.start), config.llms_txt_max_links, grouping)


def _stopped(
    loop: CrawlLoop, walled: str | None, fetched: int, published: int | None, state: object
) -> Exception:
    """Why a crawl that did not run to its end publishes nothing: a bot wall, an outage, a
    signal (then it can be resumed)."""
    if walled:
        return BlockedByBotProtection(blocked_message(walled, published))
    if loop.outage is not None:
        return PublishRefused(outage_message(loop.outage, fetched, published))
    return InterruptedCrawl(loop.stopped_message(state))


def _no_news(left: dict[str, int]) -> str:
    why = ", ".join(f"{n} {reason}" for reason, n in sorted(left.items()))
    return (
        "warning: no article published in the last two days matched "
        f"news_articles{f' ({why})' if why else ''}: sitemap-news.xml is not "
        "published this time (a news sitemap lists recent articles only)"
    )


def _nothing() -> None:
    pass


def _policy(config: Config) -> Policy:
    return Policy(
        frozenset(config.listed_types),
        config.respect_noindex,
        config.respect_canonical,
        config.skip_duplicates,
        config.follow_nofollow,
        Patterns.compile(config.include, "include"),
        Patterns.compile(config.exclude_listing_only, "exclude_listing_only"),
    )


def _limit_warning(config: Config, limit: str, cut: int) -> list[str]:
    """The line saying a crawl limit left URLs unfetched (recorded as `limit`)."""
    if not cut:
        return []
    key = f"max_pages {config.max_pages}" if limit == "max_pages reached" else "max_time"
    return [f"limit: {limit} ({key}): {plural(cut, 'URL')} met, not fetched"]


def _page_policy(config: Config, agent: str) -> PagePolicy:
    return PagePolicy(
        agent,
        config.follow_nofollow,
        config.strip_params,
        config.images,
        tuple(host.lower() for host in config.image_hosts),
        content=config.state is not None and config.lastmod in (AUTO, CONTENT),
        engines=config.search_engines,
        about=config.llms_txt,
    )


def _screen(config: Config, plan: Plan, policy: Policy) -> Screen:
    return Screen(
        plan,
        user_agent=config.user_agent,
        max_url_length=config.max_url_length,
        max_segment_repeats=config.max_segment_repeats,
        max_depth=config.max_depth,
        budgets=TrapBudgets(config.max_pages_per_folder, config.max_pages_per_param),
        include=policy.include,
        exclude=Patterns.compile(config.exclude, "exclude"),
        seeds=frozenset({plan.start, *plan.seeds}),
        listing_only=policy.exclude_listing_only,
        engines=config.search_engines,
    )


def _lenient_screen(config: Config, plan: Plan) -> Screen:
    """For URLs a sitemap names: no trap, depth or pattern rule applies to them."""
    return Screen(
        plan,
        user_agent=config.user_agent,
        max_url_length=1 << 30,
        max_segment_repeats=1 << 30,
        max_depth=-1,
        budgets=TrapBudgets(),
        engines=config.search_engines,
    )
