"""The crawl itself: the loop of the I/O shell around the pure modules.

Data flows one way: frontier -> screen -> pages (fetch, analyse) -> decide -> journal ->
writer. The loop takes URLs from the frontier, screens them (crawler.core.screen), has their
pages fetched and analysed (crawler.shell.pages), decides (crawler.core.decide) and records each
decision once (crawler.shell.journal); the listings reach the writer when every page is judged.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import gc
import json
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from multidict import CIMultiDict, CIMultiDictProxy

from crawler.config import Config, fingerprint, robots_from_is_url, settings
from crawler.core.decide import (
    CREDENTIALS_REFUSED,
    EXCLUDED_BY_PATTERN,
    FETCH_ERROR,
    HTML_TYPES,
    HTTP_ERROR,
    LIMIT,
    OUT_OF_SCOPE,
    REDIRECT,
    ROBOTS_TXT,
    STATUS_HINTS,
    TOO_LONG,
    TRAP,
    Decision,
    PageFacts,
    Policy,
    TrapBudgets,
    awaits_canonical,
    decide_page,
    depth_priority,
    follows_links,
    nofollow_links,
)
from crawler.core.frontier import DONE, Frontier, Task
from crawler.core.history import Prior, Validators, revive
from crawler.core.httpdate import parse_http_date
from crawler.core.lastmod import AUTO, CONTENT, stamped
from crawler.core.media import PageExtras
from crawler.core.page import PagePolicy, PageResult
from crawler.core.patterns import Patterns
from crawler.core.rendering import (
    NAVIGATED,
    AutoRender,
    directives_note,
    is_app_shell,
    navigated_to,
    refused,
)
from crawler.core.report import DecisionRecord, Tally
from crawler.core.robots import RobotsTxt, parse_robots, product_token
from crawler.core.screen import Plan, Screen
from crawler.core.seeds import MAX_SEED_URLS
from crawler.core.url_checks import Checked, PageSeen
from crawler.core.urls import join_parts, known, resolve
from crawler.core.wire import pack
from crawler.errors import (
    ConfigError,
    InterruptedCrawl,
    NothingListedError,
    OutputError,
    PublishRefused,
)
from crawler.shell.extensions import Extensions, NewsPolicy
from crawler.shell.fetch import (
    REDIRECT_STATUSES,
    ROBOTS_MAX_BYTES,
    HttpTransport,
    Response,
    Transport,
    fetch_robots,
    fetch_rules,
)
from crawler.shell.journal import Dating, Journal
from crawler.shell.listings import Listing, Spool, to_micros
from crawler.shell.outputs import held_outputs, written_in_place
from crawler.shell.pages import Fetched, LocalPages, analysed
from crawler.shell.pool import PIPELINE_DEPTH, PoolPages, Spare
from crawler.shell.progress import Renderer, Snapshot
from crawler.shell.render import Renderer as Browser
from crawler.shell.retry import RetryPolicy, fetch_with_retries
from crawler.shell.seeds import SeedSitemap, read_seed_sitemaps
from crawler.shell.state import CrawlState, StateError
from crawler.shell.throttle import Throttle, ThrottleClosed
from sitemap_out import AsyncSitemapWriter, EntryError, PublishResult, count_published
from sitemap_out.changes import ChangeLog

#: Fraction added to any requested spacing between requests: starts are timed here, and a
#: send delayed by a busy machine must not bring two requests closer than --delay at the
#: server (5% of 0.2 s is 10 ms).
SPACING_MARGIN = 0.05

#: After SIGINT/SIGTERM, requests in flight get this long to finish before they are cut.
STOP_GRACE_SECONDS = 10.0


@dataclass(slots=True, frozen=True)
class Robots:
    """A site's robots.txt as read: its rules, the note the log and report give, and the
    status of the last answer (None: no answer, or rules from --robots-from)."""

    rules: RobotsTxt
    note: str
    status: int | None


@dataclass(slots=True)
class CrawlResult:
    tally: Tally
    published: PublishResult
    sitemap_url: str


class Crawl:
    def __init__(
        self,
        config: Config,
        log: Callable[[str], None] = lambda _: None,
        progress: Renderer | None = None,
        transport: Transport | None = None,
        robots: Robots | None = None,
    ) -> None:
        """`transport`: where requests go; by default HTTP (an in-memory one for tests).
        `robots`: the site's robots.txt as another Crawl of the same origin read it (the
        audit's stages), so that it is asked for once."""
        self.config = config
        self.robots: Robots | None = robots  # as read by this crawl, or given
        self._transport = transport
        self.log = log
        self.progress = progress
        assert config.url is not None
        self.plan = Plan.make(
            config.url, config.public_url, config.sitemap_url, config.seeds, config.strip_params
        )
        self.identity = self.plan.identity
        self.policy = Policy(
            frozenset(config.listed_types),
            config.respect_noindex,
            config.respect_canonical,
            config.skip_duplicates,
            config.follow_nofollow,
            Patterns.compile(config.include, "include"),
            Patterns.compile(config.exclude_listing_only, "exclude_listing_only"),
        )
        self.agent = product_token(config.user_agent)
        self.page_policy = PagePolicy(
            self.agent,
            config.follow_nofollow,
            config.strip_params,
            config.images,
            tuple(host.lower() for host in config.image_hosts),
            content=config.state is not None and config.lastmod in (AUTO, CONTENT),
            engines=config.search_engines,
        )
        self.frontier = Frontier()
        self.screen = Screen(
            self.plan,
            user_agent=config.user_agent,
            max_url_length=config.max_url_length,
            max_segment_repeats=config.max_segment_repeats,
            max_depth=config.max_depth,
            budgets=TrapBudgets(config.max_pages_per_folder, config.max_pages_per_param),
            include=self.policy.include,
            exclude=Patterns.compile(config.exclude, "exclude"),
            seeds=frozenset({self.plan.start, *self.plan.seeds}),
            listing_only=self.policy.exclude_listing_only,
            engines=config.search_engines,
        )
        self.tally = Tally()
        self.journal = Journal(self._public, self.tally)
        self.journal.dating = Dating(config.lastmod, None)  # with the state's, once open
        # URLs being fetched now -> the fewest links from the start found to them so far
        self._active: dict[str, int] = {}
        # the start URL's decisions, each hop of its redirects: why nothing was listed
        self._start_chain: list[DecisionRecord] = []
        self._changed = asyncio.Event()
        self._stop_signal: int | None = None
        self._timed_out = False  # max_time is up
        self._outage: str | None = None  # why the site looks down, when it does
        self._site_answered = False  # any HTTP answer to the robots.txt requests
        self._workers: list[asyncio.Task[None]] = []
        self._steps: list[asyncio.Future[None]] = []  # what a stop's cut ends before workers
        self._requested = 0  # page requests started, redirect hops included (max_pages)
        self._done_requests = 0  # requests whose outcome is recorded: the state's "fetched"
        self._pool: PoolPages | None = None  # when worker processes may take pages
        self._pages: LocalPages | None = None  # where pages come from, while crawling
        self._writer: AsyncSitemapWriter | None = None  # None while judging one URL
        self.throttle = Throttle(
            concurrency=config.concurrency,
            delay=config.delay,
            max_rps=config.max_rps or None,
            max_crawl_delay=config.max_crawl_delay,
            margin=SPACING_MARGIN,
        )
        self._retry = RetryPolicy(retries=config.retries, max_retry_after=config.max_retry_after)
        self.state: CrawlState | None = None
        # --seed-sitemaps: URLs the site's sitemaps name, crawled once the links run out
        self._seed_sitemaps: list[SeedSitemap] = []
        self._seeded = False  # they were read and handed to the frontier (a resume knows)
        self._checked: Checked | None = None  # Crawl.check: what the audit reads
        self._following = True  # links and canonicals are followed (not by Crawl.check)
        self._browser: Browser | None = None  # render = auto or always, while crawling
        self._auto = AutoRender() if config.render == "auto" else None

    # -- the run ---------------------------------------------------------------------------

    async def run(self, workers: list[Spare] | None = None) -> CrawlResult:
        """Crawl and publish. `workers`: forked by pool.forked() before the event loop, to
        fetch and parse pages once the crawl is big and its requests are not spaced. Not
        with rendering: workers send back a page's facts, not its body, which the browser
        (in this process) needs."""
        if workers and self.config.render != "never":
            raise ValueError("a rendered crawl renders in this process: give it no workers")
        started = time.monotonic()
        try:
            with held_outputs(self.config):  # every output path checked before any request
                return await self._run(workers)
        finally:
            self.tally.seconds = time.monotonic() - started  # however the run ended

    async def _run(self, workers: list[Spare] | None) -> CrawlResult:
        config, plan, journal = self.config, self.plan, self.journal
        started = time.monotonic()
        guarded = not config.force and config.max_shrink < 1
        previous = count_published(config.output) if guarded else None
        changes = ChangeLog()
        writer = AsyncSitemapWriter(
            config.output,
            plan.base_url,
            gzip=config.gzip,
            fmt="txt" if config.format == "txt" else "xml",
            max_urls=config.max_urls_per_file,
            max_bytes=config.max_bytes_per_file,
            stable=True,  # the listings come out of the spool in loc order
            changes=changes,
            feed_days=config.feed_days if config.feed else None,
        )
        self._writer = writer
        try:
            journal.spool = Spool(config.output)
            journal.sink = writer
            journal.extensions = Extensions(self.tally.extensions, self._news(), datetime.now(UTC))
            journal.decisions_path = config.decisions  # opened at the first decision
            if config.state is not None:
                self.state = journal.state = CrawlState.open(
                    config.state,
                    fingerprint=fingerprint(config),
                    start_url=plan.start,
                    resume=config.resume,
                    settings=settings(config),
                    fresh=config.fresh,
                    history_key=self._history_key(),
                )
                journal.dating = Dating(config.lastmod, self.state)
            # Signals are ours until the end: a signal during publish() is noted and the
            # publish completes (the new set is whole), rather than racing an abort.
            # max_time counts from here: robots.txt and the seed sitemaps are the run's
            with self._signals_stop_the_crawl(), contextlib.ExitStack() as clock:
                clock.enter_context(self._timed())
                async with self._using_pages(workers) as pages:
                    with contextlib.suppress(ThrottleClosed):  # up before robots.txt came
                        await self._cuttable(self._read_robots(plan.start))
                    self._take_workers(pages)
                    if config.resume:
                        await self._replay()
                    else:
                        self._discover(plan.start, 0, None)
                        for seed in plan.seeds:
                            self._discover(seed, 0, None)
                    if config.seed_sitemaps and not self._seeded and not self._timed_out:
                        await self._cuttable(self._read_seed_sitemaps())
                    with self._showing_progress(started), _fewer_gc_pauses():
                        await self._run_workers()
                clock.close()  # the crawl is over: publishing is not cut by max_time
                if self._stop_signal is not None or self._outage is not None:
                    if self.state is not None:
                        self._save_counters()
                        if self._outage is not None:  # its failures are no result to resume
                            self.state.counter("outage", 1)
                        self.state.checkpoint()
                    if self._outage is not None:
                        raise PublishRefused(self._outage_message())
                    raise InterruptedCrawl(self._stopped_message())
                limit = "max_time reached" if self._timed_out else "max_pages reached"
                if self._seed_sitemaps:  # a limit ended the crawl first: they are `limit`
                    self._release_seeds(limit)
                for task in self.frontier.drain():
                    self._record(task.url, None, Decision(LIMIT, limit), task)
                journal.settle_nofollow(self.frontier.seen)  # #24: met, never followed
                await journal.publish_listings()
                if self.state is not None:
                    self._save_counters()
                    self.state.checkpoint()  # a refused publish can be resumed with --force
                self.tally.seconds = time.monotonic() - started
                if writer.count == 0:
                    raise NothingListedError(self._why_nothing())
                if not config.force:
                    self._guard(previous, writer.count)
                published = await writer.publish()
                self._report_changes(published, changes)
                if config.news_name and published.news is None:  # said, not a silent 404
                    left = self.tally.extensions.news_left_out
                    why = ", ".join(f"{n} {reason}" for reason, n in sorted(left.items()))
                    self.log(
                        "warning: no article published in the last two days matched "
                        f"news_articles{f' ({why})' if why else ''}: sitemap-news.xml is not "
                        "published this time (a news sitemap lists recent articles only)"
                    )
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
            pool = self._pool
            self.tally.requests = {
                **self.throttle.stats,
                "workers": pool.worker_count if pool is not None else 0,
                "by_workers": pool.worker_requests if pool is not None else 0,
            }
        # the file actually published: sitemap.txt for a text sitemap in one file
        return CrawlResult(self.tally, published, published.sitemap_url or plan.sitemap_url)

    def _report_changes(self, published: PublishResult, changes: ChangeLog) -> None:
        """The changes into the tally, and into --changes FILE.json when asked for."""
        counts = published.changes
        if counts is not None and counts.layout:
            self.log(counts.layout)
        if counts is not None:
            self.tally.changes = {
                "added": counts.added, "removed": counts.removed, "changed": counts.changed,
            }  # fmt: skip
        self.tally.feed_url = published.feed_url
        path = self.config.changes
        if path is None:
            return
        extra: dict[str, object] = {"sitemap_url": published.sitemap_url}
        if published.feed_url is not None:
            extra["feed_url"] = published.feed_url
        try:
            changes.write_json(path, extra, in_place=written_in_place(path))
        except OSError as exc:
            raise OutputError(
                f"the sitemap is published, but cannot write the changes file {path}: "
                f"{exc.strerror or exc}"
            ) from None

    def _take_workers(self, pages: LocalPages) -> None:
        """Let worker processes take pages, when there are some and requests are not
        spaced (a spaced crawl waits, it does not compute)."""
        if isinstance(pages, PoolPages) and self.throttle.requested_interval == 0:
            pages.allow_workers()
            self._pool = pages
            if self.identity:  # workers' links are in the space settled URLs are
                self.journal.settle = pages.settle

    def _history_key(self) -> str:
        """The settings a page's facts depend on (every PagePolicy field, so a new one
        cannot be forgotten, and rendering): a history read with others is not reused for a
        304 (crawler.shell.state). A run with --no-images must not revive last night's
        images, nor a rendered run last night's raw links."""
        policy = dataclasses.asdict(self.page_policy)
        return json.dumps([policy, self.config.render], sort_keys=True)

    def _save_counters(self) -> None:
        """The figures a resumed crawl goes on from: max_pages' and the publish guard's."""
        assert self.state is not None
        self.state.counter("fetched", self._done_requests)
        self.state.counter("failed", self.tally.failed)

    def _guard(self, previous: int | None, count: int) -> None:
        """Refuse to publish what a failing site or a broken crawl produced: the previous
        sitemap is a better answer to search engines than a gutted one."""
        config, tally = self.config, self.tally
        if (copied := tally.foreign.refusal()) is not None:  # #24
            raise PublishRefused(copied)
        failed = tally.failed
        if tally.fetched and failed / tally.fetched > config.max_error_rate:
            kept = "the previous sitemap is kept" if previous is not None else "nothing written"
            raise PublishRefused(
                f"not published: {failed} of {tally.fetched} requests failed with 5xx or "
                f"network errors ({failed / tally.fetched:.0%}, max_error_rate is "
                f"{config.max_error_rate:.0%}); {kept} (--force publishes anyway)"
            )
        if previous and count < previous * (1 - config.max_shrink):
            raise PublishRefused(
                f"not published: the new sitemap lists {count} URLs, the published one "
                f"{previous} ({(previous - count) / previous:.0%} fewer, max_shrink is "
                f"{config.max_shrink:.0%}); the previous sitemap is kept "
                f"(--force publishes anyway)"
            )

    async def _run_workers(self) -> None:
        """concurrency workers until the frontier is empty; one failing cancels the rest, and
        its error (not an ExceptionGroup) reaches the CLI, which maps it to an exit code."""
        try:
            async with asyncio.TaskGroup() as workers:
                depth = PIPELINE_DEPTH if self._pool is not None else 1
                count = self.config.concurrency * depth
                self._workers = [workers.create_task(self._worker()) for _ in range(count)]
        except BaseExceptionGroup as group:
            raise group.exceptions[0] from None

    async def _read_robots(self, url: str) -> None:
        if self.robots is None:
            self.robots = await self._fetch_robots(url)
            self.log(f"robots.txt: {self.robots.note}")
        robots = self.robots.rules
        self.tally.robots_note = self.robots.note
        self._site_answered = self.robots.status is not None
        self.screen.robots = robots
        self.throttle.set_crawl_delay(robots.crawl_delay(self.config.user_agent))
        for warning in self.throttle.warnings:
            self.log(f"warning: {warning}")

    async def _fetch_robots(self, url: str) -> Robots:
        answers: list[Response] = []

        async def get(robots_url: str, max_bytes: int) -> Response:
            answers.append(await self._request(robots_url, max_bytes))
            return answers[-1]

        source = self.config.robots_from
        if source is not None:  # then the site's own robots.txt is never requested
            note = f"rules from {source} (--robots-from); the site's robots.txt was not used"
            return Robots(await self._rules_from(source), note, None)
        rules, note = await fetch_robots(url, get)
        status = next((a.status for a in reversed(answers) if a.status), None)
        return Robots(rules, note, status)

    async def read_robots(self) -> Robots:
        """The start URL's robots.txt, read as a crawl reads it: for work beside a crawl
        (the audit), inside requests(); later Crawls of the origin can be given it."""
        await self._read_robots(self.plan.start)
        assert self.robots is not None
        return self.robots

    async def _read_seed_sitemaps(self) -> None:
        """--seed-sitemaps: read the site's sitemaps now, with robots.txt known; their URLs
        wait until the links run out (_release_seeds)."""
        config = self.config

        async def get(url: str, max_bytes: int) -> Response:
            try:
                return await self._request(url, max_bytes)
            except ThrottleClosed:  # max_time is up: never sent, the URLs taken are kept
                return Response(url, error="max_time reached")

        seeds = await read_seed_sitemaps(
            self.screen.robots.sitemaps,
            self.plan,
            self.screen.robots,
            config.user_agent,
            get,
            max_urls=config.max_pages or MAX_SEED_URLS,
            stopped=lambda: (
                self._stop_signal is not None or self._outage is not None or self._timed_out
            ),
        )
        self._seed_sitemaps = [sitemap for sitemap in seeds.sitemaps if sitemap.locs]
        self.tally.seed_notes = seeds.notes
        warnings = set(seeds.warnings)
        for line in seeds.notes:
            self.log(f"warning: {line}" if line in warnings else line)
        if not self._seed_sitemaps:
            self._seeded = True  # nothing to wait for; a resume need not read them again
            if self.state is not None:
                self.state.counter("seeded", 1)

    def _release_seeds(self, limit: str | None = None) -> None:
        """The links have run out: the seed sitemaps' URLs that no link led to are queued at
        depth 0, the sitemap as their referrer, which marks them `seed` in the decisions
        file. Queued only now, so that the mark means exactly that the links alone would not
        have found them, at no cost per link; a URL met already only notes, when it is
        broken, that the sitemap lists it. `limit`: a limit ended the crawl first, so they
        are queued to be recorded as `limit`, not crawled."""
        sitemaps, self._seed_sitemaps = self._seed_sitemaps, []
        met, broken, fresh = self.frontier.seen, self.tally.broken, 0
        strip = self.config.strip_params
        for sitemap in sitemaps:
            for loc in sitemap.locs:
                url = self._to_crawl(known(loc, strip))
                if url not in met:
                    fresh += 1
                    self._discover(url, 0, sitemap.url)
                elif broken and not self.frontier.is_queued(url) and url not in self._active:
                    self.journal.late_referrer(url, sitemap.url)
        self._seeded = True
        if self.state is not None:
            self.state.counter("seeded", 1)
        done = f"not crawled ({limit})" if limit else "crawled from the sitemaps"
        self.log(f"seed sitemaps: {fresh} URLs no link led to, {done}")

    async def _rules_from(self, source: str) -> RobotsTxt:
        """--robots-from: production's rules for a staging site that disallows everything.
        A URL is fetched once, with retries but outside the site's throttle (it is another
        host) and without the site's credentials (the transport sends them to the site
        only); rules that cannot be read stop the crawl before it starts (ConfigError)."""
        if robots_from_is_url(source):
            assert self._pages is not None
            pages = self._pages

            async def get(url: str, max_bytes: int) -> Response:
                resp, _ = await fetch_with_retries(
                    lambda: pages.get(url, max_bytes),
                    self._retry,
                    status_of=lambda r: r.status or None,
                    retry_after_of=lambda r: r.headers.get("Retry-After"),
                    error_of=lambda r: r.error,
                )
                return resp

            return await fetch_rules(source, get)
        try:
            with open(source, "rb") as file:  # once, small: no need to leave the loop
                return parse_robots(file.read(ROBOTS_MAX_BYTES + 1))
        except OSError as exc:
            raise ConfigError(f"robots_from: cannot read {source}: {exc.strerror or exc}") from None

    async def _replay(self) -> None:
        """Rebuild the crawl saved in the state file: frontier, decisions, listings."""
        assert self.state is not None
        journal, budgets = self.journal, self.screen.budgets
        snap = self.state.load()
        if snap.counters.get("outage"):
            raise StateError(
                f"the crawl saved in {self.state.path} stopped because the site looked down; "
                "its failed pages would be kept as they failed: start a fresh crawl without "
                "--resume"
            )
        for row in snap.queued:
            self.frontier.add(row.url, row.depth, row.referrer)
            budgets.spend(row.url)
        for url in snap.seen:
            self.frontier.mark_seen(url)
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
        self._seeded = bool(snap.counters.get("seeded"))
        self.tally.fetched = self._requested = self._done_requests = snap.counters.get("fetched", 0)
        self.tally.fetched_before = self.tally.fetched  # not this run's: not in its pages/s
        self.tally.failed = snap.counters.get("failed", 0)
        self.log(
            f"resuming: {len(snap.queued)} URLs queued, {listed} listed, "
            f"{self.tally.fetched} pages fetched before"
        )

    async def judge(self, url: str) -> list[DecisionRecord]:
        """Judge one URL exactly as a crawl would, without following its links: the service
        behind `explain` (and the audit to come).

        Returns its decision records: one per redirect hop, the final one last. A page
        listed here may still lose to a byte-identical twin in a whole crawl.
        """
        records: list[DecisionRecord] = []
        self.journal.echo = records.append
        target = self._to_crawl(self.known_as(url))
        task = Task(target, 0, None)
        async with self._using_pages():
            await self._read_robots(target)
            screened = self.screen(target, 0)
            if screened is not None:
                self._record(target, None, screened, task)
            else:
                self.frontier.mark_seen(target)
                judged = await self._judge(task)
                if judged is not None and self.journal.canonicals:  # #24: is it usable?
                    await self._judge_quietly(judged[1].canonical, judged[0])
            self.journal.settle_canonicals()
        return records

    async def _judge_quietly(self, url: str | None, referrer: str) -> None:
        """Judge url (crawl space) for its decision's effect alone, not recorded in the
        answer: explain's page waits on its canonical's (#24)."""
        if url is None or url in self.frontier:
            return
        echo, self.journal.echo = self.journal.echo, None
        try:
            task = Task(url, 1, self._public(referrer))
            self.frontier.mark_seen(url)
            screened = self.screen(url, 1)
            if screened is not None:
                self._record(url, None, screened, task)
            else:
                await self._judge(task)
        finally:
            self.journal.echo = echo

    @contextlib.asynccontextmanager
    async def requests(self) -> AsyncIterator[Callable[[str, int | None], Awaitable[Response]]]:
        """Polite GETs for work beside a crawl (the audit's sitemaps and robots.txt): the
        crawl's transport, throttle and retries; one hop per call, redirects not followed."""
        async with self._using_pages():
            yield self._request

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
        checked = self._checked = Checked()
        self._following = follow
        decisions = checked.decisions
        self.journal.echo = lambda record: decisions.__setitem__(record.url, record)
        if not follow:
            self.screen = Screen(
                self.plan,
                user_agent=self.config.user_agent,
                max_url_length=1 << 30,
                max_segment_repeats=1 << 30,
                max_depth=-1,
                budgets=TrapBudgets(),
                engines=self.config.search_engines,
            )
        started = time.monotonic()
        try:
            async with self._using_pages(workers) as pages:
                await self._read_robots(self.plan.start)
                self._take_workers(pages)
                for url in urls:
                    self._discover(url, 0, None)
                showing = self._showing_progress(started)
                with self._signals_stop_the_crawl(), showing, self._timed():
                    await self._run_workers()
        finally:
            self.tally.seconds = time.monotonic() - started
        if self._stop_signal is not None:
            raise InterruptedCrawl(self._stopped_message())
        self.journal.settle_canonicals()  # #24: every URL is judged
        if follow:
            self.journal.settle_nofollow(self.frontier.seen)
        checked.canonical_broken = {b.url: b for b in self.tally.canonical_broken}
        checked.outage = self._outage
        if follow:
            starts = set(urls)
            checked.reached = {self._public(u) for u in self.frontier.seen if u not in starts}
        return checked

    def known_as(self, url: str) -> str:
        """The URL as the crawl would know it from a link: normalised, with strip_params'
        parameters removed (explain judges that URL, and says so when it differs)."""
        return known(url, self.config.strip_params)

    @contextlib.contextmanager
    def _showing_progress(self, started: float) -> Iterator[None]:
        """Report progress every renderer.interval seconds while the workers run."""
        renderer = self.progress
        if renderer is None:
            yield
            return

        def snapshot() -> Snapshot:
            throttle = self.throttle
            return Snapshot(
                self.tally.fetched,
                self.tally.listed,
                # not yet judged: workers waiting on the throttle have taken theirs already
                len(self.frontier) + len(self._active),
                self.tally.failed,
                time.monotonic() - started,
                throttle.pace,
                throttle.min_interval,
                self.tally.fetched_before,
            )

        async def tick() -> None:
            while True:
                await asyncio.sleep(renderer.interval)
                renderer(snapshot())

        task = asyncio.get_running_loop().create_task(tick())
        try:
            yield
        finally:
            task.cancel()
            renderer.finish()

    @contextlib.contextmanager
    def _timed(self) -> Iterator[None]:
        """--max-time: once it is up, no new URL is taken; requests in flight finish, and
        what is left in the queue is recorded as a limit reached."""
        if not self.config.max_time:
            yield
            return

        def time_up() -> None:
            self._timed_out = True
            self.throttle.close()  # requests waiting for their turn are not sent
            self.log(f"max_time {self.config.max_time:g} s reached: finishing requests in flight")
            self._changed.set()

        timer = asyncio.get_running_loop().call_later(self.config.max_time, time_up)
        try:
            yield
        finally:
            timer.cancel()

    @contextlib.contextmanager
    def _signals_stop_the_crawl(self) -> Iterator[None]:
        """First SIGINT/SIGTERM: take no new URLs, let requests in flight finish within
        STOP_GRACE_SECONDS. A second signal, or the end of the grace period, cuts them."""
        loop = asyncio.get_running_loop()
        signals = (signal.SIGINT, signal.SIGTERM)
        installed = []
        for sig in signals:
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
                installed.append(sig)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread
                pass
        try:
            yield
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    def _on_signal(self, sig: int) -> None:
        if self._stop_signal is None:
            self._stop_signal = sig
            self.log(
                f"{signal.Signals(sig).name}: finishing requests in flight "
                f"(up to {STOP_GRACE_SECONDS:g} s; signal again to stop at once)"
            )
            self._changed.set()
            asyncio.get_running_loop().call_later(STOP_GRACE_SECONDS, self._cut)
        else:
            self._cut()

    async def _cuttable(self, step: Awaitable[None]) -> None:
        """A step before the workers start (robots.txt, the seed sitemaps), which a stop
        signal's cut must end as it ends the workers: a robots.txt that never answers would
        otherwise hold a SIGTERM for its retries' whole timeouts. Cut, the step is dropped
        and the run stops as after any signal (the workers take nothing)."""
        task = asyncio.ensure_future(step)
        self._steps.append(task)
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._stop_signal is None or (current is not None and current.cancelling()):
                raise  # not ours: the run itself is being cancelled
        finally:
            self._steps.remove(task)

    def _cut(self) -> None:
        for step in self._steps:
            step.cancel()
        for worker in self._workers:
            worker.cancel()
        if self._pool is not None:
            self._pool.abort()

    def _outage_message(self) -> str:
        return (
            f"not published: the site looks down ({self._outage}); stopped after "
            f"{self.tally.fetched} requests, the previous sitemap is kept (try again later: "
            f"--force does not publish a crawl cut short)"
        )

    def _stopped_message(self) -> str:
        name = signal.Signals(self._stop_signal or signal.SIGTERM).name
        return (
            f"stopped by {name} after {self.tally.fetched} pages; "
            f"the previously published sitemap is untouched"
            + (
                f" (--state {self.config.state} --resume goes on from here)"
                if self.config.state is not None
                else ""
            )
        )

    async def _request(self, url: str, max_bytes: int | None = None) -> Response:
        """One plain GET (robots.txt) through the politeness throttle and the retries."""
        assert self._pages is not None
        pages = self._pages
        fetched = await self._retried(lambda: _as_fetched(pages.get(url, max_bytes)))
        return fetched.response

    async def _fetch(self, url: str, depth: int, validators: Validators | None = None) -> Fetched:
        """One page through the politeness throttle and the retries, analysed. `depth`: of
        the links on the page; `validators`: ask conditionally (the URL's history)."""
        assert self._pages is not None
        return await self._retried(functools.partial(self._pages.fetch, url, depth, validators))

    async def _retried(self, fetch: Callable[[], Awaitable[Fetched]]) -> Fetched:
        async def attempt() -> Fetched:
            async with self.throttle.slot():
                started = time.monotonic()
                fetched = await fetch()
            resp = fetched.response
            seconds = resp.seconds if resp.seconds is not None else time.monotonic() - started
            self.throttle.observe(resp.status or None, seconds)
            if self._outage is None and (outage := self.throttle.outage) is not None:
                self._outage = outage
                self.log(f"warning: the site looks down ({outage}): stopping")
                self._changed.set()
            return fetched

        fetched, notes = await fetch_with_retries(
            attempt,
            self._retry,
            status_of=lambda f: f.response.status or None,
            retry_after_of=lambda f: f.response.headers.get("Retry-After"),
            error_of=lambda f: f.response.error,
        )
        if notes:
            fetched.response.notes = tuple(notes)
        return fetched

    @contextlib.asynccontextmanager
    async def _using_pages(self, workers: list[Spare] | None = None) -> AsyncIterator[LocalPages]:
        """The transport and the pages fetched with it (by workers too, when given)."""
        c = self.config
        known = self.frontier.seen
        if self._transport is not None:  # given: its owner opens and closes it
            self._pages = LocalPages(self._transport, self.page_policy, known)
            async with self._rendering():
                yield self._pages
            return
        http = HttpTransport(
            user_agent=c.user_agent,
            concurrency=c.concurrency,
            timeout=c.timeout,
            max_bytes=c.max_page_bytes,
            access=c.access(join_parts(self.plan.start)[1]),  # credentials: the start's origin
        )
        async with http:
            pages = (
                PoolPages(
                    workers,
                    http,
                    self.page_policy,
                    known,
                    log=self.log,
                    set_depth=self.throttle.set_depth,
                    all_links=self.state is not None,  # a page's links are its history
                )
                if workers
                else LocalPages(http, self.page_policy, known)
            )
            self._pages = pages
            try:
                async with self._rendering():
                    yield pages
            finally:
                await pages.close()

    # -- rendering -----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _rendering(self) -> AsyncIterator[None]:
        """The browser, with render = auto or always: started before the first request
        (without Playwright or Chromium the crawl stops here, RenderUnavailable), closed
        at the end, its figures in the report."""
        config = self.config
        if config.render == "never":
            yield
            return
        from crawler.shell.render import find_chromium

        executable = find_chromium(config.chromium_path)
        origin = join_parts(self.plan.start)[1]
        hosts, agent = config.render_hosts, config.user_agent

        def refuse(url: str, method: str, resource_type: str) -> str | None:
            robots = self.screen.robots
            return refused(url, method, resource_type, origin, hosts, robots, agent)

        browser = Browser(
            executable,
            concurrency=config.render_concurrency,
            timeout=config.render_timeout,
            user_agent=agent,
            fetch=self._asset,
            refuse=refuse,
            log=self.log,
        )
        await browser.start()
        self._browser = browser
        try:
            yield
        finally:
            self._browser = None
            await browser.close()
            auto = self._auto
            if auto is not None and auto.seen:
                auto.settle()  # the crawl ended before the sample was full
            self.tally.render = {
                "mode": config.render,
                "decision": auto.why if auto is not None else "rendering every HTML page",
                **dict(sorted(browser.stats.items())),
            }

    async def _asset(self, url: str) -> Response:
        """A request of the browser's, made by the crawl: its transport, its throttle."""
        assert self._pages is not None
        pages = self._pages
        try:
            async with self.throttle.slot():
                return await pages.get(url)
        except ThrottleClosed:
            return Response(url, error="max_time reached")

    async def _render(self, url: str, fetched: Fetched) -> tuple[Fetched, str | None]:
        """The page as the browser renders it, analysed by the same path as raw HTML, and
        notes for its decision; the raw answer, when the page is not to be rendered (not a
        whole HTML 200 answer, or auto's choice). A render that fails is a fetch_error."""
        resp, page = fetched.response, fetched.page
        assert self._browser is not None
        if page is None or resp.status != 200 or resp.truncated or page.mime not in HTML_TYPES:
            return fetched, None
        auto = self._auto
        if (
            auto is not None
            and not auto.sampling
            and not auto.decided
            and not is_app_shell(resp.body, resp.headers.get("Content-Type"))
        ):
            return fetched, None
        out = await self._browser.render(url, resp)
        if out.html is None:
            return Fetched(resp, None, f"cannot render it: {out.error}"), None
        headers = CIMultiDict(resp.headers)
        headers["Content-Type"] = f"{page.mime}; charset=utf-8"  # the DOM, serialised
        shown = Response(
            resp.url, resp.status, CIMultiDictProxy(headers), out.html, notes=resp.notes
        )
        rendered = analysed(url, shown, self.page_policy, self.frontier.seen)
        if rendered.page is None:
            return rendered, None
        moved = navigated_to(url, out.navigated, self.config.strip_params)
        if moved is not None and rendered.page.moved_to is None:  # #24: a redirect, as a stub
            rendered.page.moved_to, rendered.page.moved_by = moved, NAVIGATED
        notes = out.notes
        if (note := directives_note(page.meta, rendered.page.meta)) is not None:
            notes.append(note)
        if auto is not None and auto.sampling:
            raw, seen = self._in_scope(page.targets), self._in_scope(rendered.page.targets)
            if auto.observe(raw, seen):
                self.log(f"render auto: {auto.why}")
        return rendered, "; ".join(notes) or None

    def _in_scope(self, targets: list[str]) -> set[str]:
        contains = self.plan.scope.contains
        return {t for t in targets if contains(self._public(self._to_crawl(t)))}

    def _why_nothing(self) -> str:
        start = self._start_named()
        if self.tally.reasons[ROBOTS_TXT] and not self.tally.fetched:
            note = self.tally.robots_note.removesuffix(", everything disallowed")
            if self.screen.robots.denial is not None and not self._site_answered:
                return (
                    f"nothing crawled: the site could not be reached (robots.txt fetch "
                    f"failed: {note}); RFC 9309 allows no crawl until robots.txt can be read"
                )
            if self.screen.robots.denial is not None:
                return (
                    f"nothing crawled: robots.txt could not be read ({note}); RFC 9309 allows "
                    f"no crawl until it can be"
                )
            if self.config.robots_from is not None:
                return f"nothing listed: robots.txt forbids {start} ({note})"
            return (
                f"nothing listed: robots.txt forbids {start} ({note}; a staging site's "
                f"rules can be replaced by production's: --robots-from URL|FILE)"
            )
        if (why := self._why_not_the_start()) is not None:
            return why
        met = sum(self.tally.reasons.values())
        hint = self.tally.foreign.hint()  # #24
        return (
            f"nothing listed: no indexable page among {met} URLs met from {start} "
            f"({self.tally.summary()})" + (f"; {hint}" if hint else "")
        )

    def _why_not_the_start(self) -> str | None:
        """The start URL's own problem, said plainly: the most common reasons a first crawl
        lists nothing are a start URL that moved (http to https, apex to www) or is gone."""
        chain = self._start_chain
        if not chain:
            return None
        start = self._start_named()
        last = chain[-1]
        if len(chain) > 1 and chain[-2].reason == REDIRECT and last.reason == OUT_OF_SCOPE:
            return (
                f"nothing listed: the start URL {start} redirects to {last.url}, outside the "
                f"sitemap's scope {self.plan.scope.root}: start there"
            )
        where = "" if len(chain) == 1 else f" (redirected to {last.url})"
        if last.reason == HTTP_ERROR and last.status is not None:
            if last.status == 401 and self.config.auth:
                hint = CREDENTIALS_REFUSED
            else:
                hint = STATUS_HINTS.get(last.status, "")
            said = f"HTTP {last.status}" + (f": {hint}" if hint else "")
            return f"nothing listed: the start URL {start}{where} answered {said}"
        if last.reason == EXCLUDED_BY_PATTERN and last.detail.startswith("exclude "):
            return f"nothing listed: the start URL {start}{where} is excluded by --{last.detail}"
        if last.reason == FETCH_ERROR and len(chain) == 1:
            return f"nothing listed: the start URL {start} could not be fetched: {last.detail}"
        return None

    def _start_named(self) -> str:
        """The start URL as requested (crawl space), and as the sitemap names it when that is
        another (--public-url): a message names the host that answered."""
        start = self.plan.start
        if self.identity:
            return start
        return f"{start} ({self.plan.origins.to_public(start)} in the sitemap)"

    async def _worker(self) -> None:
        max_pages = self.config.max_pages
        while self._stop_signal is None and self._outage is None and not self._timed_out:
            if max_pages and self._requested >= max_pages:
                return
            task = self.frontier.pop()
            if task is None:
                if not self._active:
                    if self._seed_sitemaps:
                        self._release_seeds()
                        continue
                    self._changed.set()
                    return
                self._changed.clear()
                await self._changed.wait()
                continue
            self._active[task.url] = task.depth
            try:
                await self._process(task)
            finally:
                self._active.pop(task.url, None)
                self._changed.set()
            if self.state is not None:
                self._save_counters()
                self.state.maybe_checkpoint()

    # -- one URL ---------------------------------------------------------------------------

    async def _process(self, task: Task) -> None:
        """Judge task.url, then follow where its page leads."""
        judged = await self._judge(task)
        if judged is None:
            return
        url, facts, page, decision = judged
        if self._checked is not None:  # Crawl.check: the facts the audit compares
            seen = PageSeen(facts.status, facts.mime, facts.last_modified, page.body_key)
            self._checked.pages[facts.public or url] = seen
            if not self._following:
                return
        self._active.pop(task.url, None)  # judged: a link to it from its own page is no news
        if facts.canonical and not decision.listed and facts.canonical_in_scope:
            self._discover(facts.canonical, task.depth + 1, self._public(url))
        if page.moved_to is not None and decision.reason == REDIRECT:  # #24: a stub's target
            self._discover(page.moved_to, task.depth, self._public(url))
        if page.targets and follows_links(facts, self.policy):
            self._follow_targets(page.targets, task.depth + 1, self._public(url))
        unfollowed = nofollow_links(facts, page.targets, page.nofollow, self.policy)  # #24
        if unfollowed:
            met = [u for u in unfollowed if u not in self.frontier]
            self.journal.nofollow_links(met, self._public(url), task.depth + 1)

    async def _judge(self, task: Task) -> tuple[str, PageFacts, PageResult, Decision] | None:
        """Fetch task.url (its redirects hop by hop), decide and record each decision. The
        final page's URL, facts, analysis and decision; None when there was no page."""
        fetched, url, prior = await self._follow(task)
        if fetched is None:
            return None
        rendering = None
        if self._browser is not None:
            fetched, rendering = await self._render(url, fetched)
        resp, page = fetched.response, fetched.page
        self._done_requests += 1  # recorded below, before the next await
        if page is None:  # no answer, or none we could read
            error = resp.error or fetched.unreadable or "no answer"
            self._record(url, None, Decision(FETCH_ERROR, _with_notes(error, resp)), task)
            return None
        state, status = self.state, resp.status
        headers = resp.headers
        etag, modified = headers.get("ETag"), headers.get("Last-Modified")
        # a 304 need not repeat Last-Modified (RFC 9110 15.4.5): then last night's stamp,
        # compared with tonight's Date, would pass for a believable date
        if modified is not None:
            is_stamped = stamped(parse_http_date(modified), parse_http_date(headers.get("Date")))
        else:
            is_stamped = prior is not None and page.not_modified and prior.stamped
        if page.not_modified and prior is not None and state is not None:
            # no body: the page is the history's, its links followed as the full answer's
            page = revive(
                prior, page, header_given="X-Robots-Tag" in headers,
                targets=state.outlinks(url),
            )  # fmt: skip
            status, etag, modified = 200, etag or prior.etag, modified or prior.modified
            self.tally.not_modified += 1
        facts = PageFacts(url, status, page.mime, page.meta, page.header)
        facts.too_large = resp.truncated
        facts.last_modified = modified
        facts.public = self._public(url)
        facts.engine_denial = self.screen.engine_denial(url)  # #24: may they crawl it
        if page.moved_to is not None:  # #24: a redirect stub, followed like a redirect
            facts.moved_to = self._public(self._to_crawl(page.moved_to))
            facts.moved_by = page.moved_by
            etag = modified = None  # no validators: the history keeps no target for a 304
        if page.canonical is not None:
            canonical = self._to_crawl(page.canonical)
            facts.canonical = canonical
            facts.canonical_public = self._public(canonical)
            facts.canonical_in_scope = self.plan.scope.contains(facts.canonical_public)
        if page.body_key is not None and self.policy.skip_duplicates:
            facts.twin_of = first = self.journal.twins.met(page.body_key, url)
            if first is None and self.state is not None:
                self.state.body(page.body_key.to_bytes(8, "little", signed=True), url)
        decision = decide_page(facts, self.policy)
        if status == 200:  # #24: most canonicals on another origin: a copy of a site?
            self.tally.foreign.saw(facts.public, facts.canonical_public)
        if rendering:
            detail = f"{decision.detail} ({rendering})" if decision.detail else rendering
            decision = Decision(decision.reason, detail)
        if resp.notes:
            decision = Decision(decision.reason, _with_notes(decision.detail, resp))
        if state is not None:
            state.page(
                url, prior, etag=etag, modified=modified, status=status,
                reason=decision.reason, result=page, stamped=is_stamped,
            )  # fmt: skip
        # #24: canonicalised, but listed if its canonical turns out broken (journal decides)
        awaits = awaits_canonical(facts, decision, self.policy)
        if decision.listed or awaits:
            body = page.body_key if self.policy.skip_duplicates else None
            made = self._listing(
                url, task, status, modified, is_stamped, page,
                "" if awaits else decision.detail, body,
            )  # fmt: skip
            if awaits:
                if isinstance(made, Listing):
                    target = facts.canonical
                    assert target is not None
                    judged = (
                        target in self.frontier
                        and not self.frontier.is_queued(target)
                        and target not in self._active
                    )
                    self.journal.canonicalised(made, target, decision, judged=judged)
                    return url, facts, page, decision
            elif isinstance(made, Decision):
                decision = made
            else:
                if facts.twin_of is not None:
                    self.journal.contested = True
                self.journal.listing(made)
        if not decision.listed:
            self._record(url, status, decision, task)  # a 304's: the page's, 200
        return url, facts, page, decision

    async def _follow(self, task: Task) -> tuple[Fetched | None, str, Prior | None]:
        """Fetch task.url, following redirects one hop at a time.

        Each hop is screened like a link (scope, robots.txt, traps); the redirecting URL is
        recorded as `redirect`. Returns (the final answer, its URL, its history if any), or
        (None, url, None) when the chain ended without a page to judge. A URL with a
        history is asked with its validators (a 304 may answer: _judge).
        """
        url = task.url
        chain = [url]
        state = self.state
        for _ in range(self.config.max_redirects + 1):
            self._requested += 1  # before the await: max_pages counts requests in flight
            prior = state.prior(url) if state is not None else None
            # a rendered page is not the document the validators vouch for: an app serves
            # one shell (one ETag) on every route, whatever its scripts load
            ask = prior.validators if prior is not None and self._browser is None else None
            try:
                fetched = await self._fetch(url, task.depth + 1, ask)
            except ThrottleClosed:  # max_time is up: never sent
                self._record(url, None, Decision(LIMIT, "max_time reached"), task)
                return None, url, None
            resp = fetched.response
            self.tally.fetched += 1
            if resp.error or resp.status >= 500:
                self.tally.failed += 1  # the publish guard's max_error_rate
            if resp.status not in REDIRECT_STATUSES:
                return fetched, url, prior
            location = (resp.location or "").strip()
            target = resolve(url, location, self.config.strip_params) if location else None
            if target is not None:
                target = self._to_crawl(target)
            if target is None:
                decision = Decision(HTTP_ERROR, f"HTTP {resp.status} without a usable Location")
            elif target in chain:
                decision = Decision(REDIRECT, f"redirect loop: {' -> '.join([*chain, target])}")
            else:
                decision = Decision(REDIRECT, self._public(target))
            self._record(url, resp.status, decision, task)
            self._done_requests += 1
            if target is None or target in chain:
                return None, url, None
            if target in self.frontier:
                self._refer(target, self._public(url), task.depth)
                return None, url, None  # handled, or to be handled, on its own
            self.frontier.mark_seen(target)
            if self.state is not None:
                self.state.queued(target, task.depth, task.referrer)
            screened = self.screen(target, task.depth)
            max_pages = self.config.max_pages
            if screened is None and max_pages and self._requested >= max_pages:
                screened = Decision(LIMIT, "max_pages reached")
            if screened is not None:
                self._record(target, None, screened, task)
                return None, url, None
            url = target
            chain.append(url)
        self._record(
            url,
            None,
            Decision(REDIRECT, f"more than {self.config.max_redirects} redirects from {chain[0]}"),
            task,
        )
        return None, url, None

    def _listing(
        self,
        url: str,
        task: Task,
        status: int,
        modified: str | None,
        is_stamped: bool,
        page: PageResult,
        detail: str,
        body: int | None,
    ) -> Listing | Decision:
        """The listing of a page judged listable, or why the protocol cannot list it. Its
        lastmod is the Last-Modified header's for now; the one published is decided when
        the crawl is over (journal.Dating), from what the whole site says."""
        lastmod = parse_http_date(modified)
        if lastmod is not None and lastmod > datetime.now(UTC) + timedelta(days=1):
            lastmod = None  # a date in the future is a server clock error, not a lastmod
        # links found to it while it was fetched may have brought it closer to the start
        depth = min(task.depth, self._active.get(url, task.depth))
        listing = Listing(
            url,
            self._public(url),
            status,
            detail,
            depth,
            task.referrer,
            to_micros(lastmod),
            self.config.changefreq,
            depth_priority(depth) if self.config.priority_by_depth else None,
            body,
            None if page.extras is None else pack(self._public_extras(page.extras)),
            page.blocks,
            is_stamped,
        )
        try:
            entry = listing.entry()  # checked now, so the decision says it
            if self._writer is not None:
                self._writer.check(entry)
        except EntryError as exc:  # a URL the protocol cannot hold (e.g. under 12 chars)
            return Decision(FETCH_ERROR, f"cannot be listed: {exc}")
        return listing

    def _news(self) -> NewsPolicy | None:
        config = self.config
        if not (config.news_name and config.news_language and config.news_articles):
            return None
        articles = Patterns.compile(config.news_articles, "news_articles")
        return NewsPolicy(config.news_name, config.news_language, articles)

    def _public_extras(self, extras: PageExtras) -> PageExtras:
        """The page's extension facts with its URLs as the sitemap names them: images, videos
        and alternates on the crawled origin get the public one (public_url). A copy: the
        page's own facts (kept in the history) stay in the crawl's space."""
        if self.identity:
            return extras
        public, to_crawl = self._public, self._to_crawl

        def named(url: str) -> str:
            return public(to_crawl(url))

        return dataclasses.replace(
            extras,
            images=tuple(map(named, extras.images)),
            alternates=tuple((lang, named(url)) for lang, url in extras.alternates),
            videos=tuple(video.with_urls(named) for video in extras.videos),
        )

    # -- links -------------------------------------------------------------------------------

    def _follow_targets(self, targets: list[str], depth: int, referrer: str) -> None:
        """Discover the links of a page: the crawl's hottest loop. Most lead to URLs met
        before (navigation repeats on every page): those cost a lookup, and a note only
        while the URL waits to be judged, or when broken URLs are known."""
        discover, refer, met = self._discover, self._refer, self.frontier.seen.get
        active, broken = self._active, self.tally.broken
        depths = self.journal.depths  # listings that may have twins: a closer link counts
        to_crawl = None if self.identity else self.plan.origins.to_crawl
        for target in targets:
            url = target if to_crawl is None else to_crawl(target)
            queued = met(url)
            if queued is None:
                discover(target, depth, referrer)  # maps to crawl space itself
                continue
            if queued != DONE or broken or url in active:
                refer(url, referrer, depth)  # which also brings a listed twin closer
            elif depth < depths.get(url, depth):
                self.journal.closer(url, depth)

    def _discover(self, url: str, depth: int, referrer: str | None) -> None:
        """A link to url was found: queue it, or record at once why it won't be fetched."""
        url = self._to_crawl(url)
        if url in self.frontier:
            if referrer is not None:
                self._refer(url, referrer, depth)
            return
        task = Task(url, depth, referrer)
        screened = self.screen(url, depth)
        if screened is not None:
            self.frontier.mark_seen(url)
            self._record(url, None, screened, task)
            return
        self.frontier.add(url, depth, referrer)
        if self.state is not None:
            self.state.queued(url, depth, referrer)
        self._changed.set()

    def _refer(self, url: str, referrer: str, depth: int) -> None:
        """Another page links to url: a queued url may move closer to the start (so may one
        being fetched, and a listing: twins are ranked by it), and pages linking to URLs not
        yet judged or judged broken are kept for the broken-links report."""
        active = self._active.get(url)
        if active is not None or self.frontier.is_queued(url):
            if active is not None and depth < active:
                self._active[url] = depth
            if self.frontier.lower(url, depth, referrer) and self.state is not None:
                self.state.lowered(url, depth, referrer)
            self.journal.early_referrer(url, referrer)
            return
        if self.tally.broken:
            self.journal.late_referrer(url, referrer)
        if depth < self.journal.depths.get(url, depth):
            self.journal.closer(url, depth)

    # -- bookkeeping -----------------------------------------------------------------------

    def _record(self, url: str, status: int | None, decision: Decision, task: Task) -> None:
        if task.url == self.plan.start and task.referrer is None:  # crawl space: as requested
            self._start_chain.append(
                DecisionRecord(url, status, decision.reason, decision.detail, 0, None)
            )
        self.journal.record(url, status, decision, task.depth, task.referrer)

    def _public(self, url: str) -> str:
        return self.plan.public(url)

    def _to_crawl(self, url: str) -> str:
        return self.plan.to_crawl(url)


@contextlib.contextmanager
def _fewer_gc_pauses() -> Iterator[None]:
    """A crawl allocates millions of short-lived objects and almost no reference cycles, so
    the cycle collector's youngest generation runs every 50,000 allocations instead of 700,
    over a heap frozen at the start (measured: 5-8% less time for the same memory)."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


#: Reasons given before a fetch; replayed decisions with these spent no trap budget (unless
#: fetched: a page an exclude_listing_only or include pattern leaves out has a status).
_SCREEN_REASONS = frozenset({OUT_OF_SCOPE, TOO_LONG, TRAP, ROBOTS_TXT, LIMIT, EXCLUDED_BY_PATTERN})


async def _as_fetched(response: Awaitable[Response]) -> Fetched:
    return Fetched(await response, None)


def _with_notes(detail: str, resp: Response) -> str:
    """A decision's detail with the retries that led to it, so retries show in the report."""
    if not resp.notes:
        return detail
    return f"{detail} (after {len(resp.notes)} retries: {'; '.join(resp.notes)})"
