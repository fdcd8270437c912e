"""Where a crawl may go, and the checks a URL passes before it is fetched. Pure: no I/O.

URLs live in two spaces: the *crawl* space (the server we fetch from) and the *public* space
(what the sitemap lists, --public-url); they are the same unless --public-url is given. Scope
and locs are judged in public space, fetching and robots.txt in crawl space.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from crawler.core.decide import (
    EXCLUDED_BY_PATTERN,
    LIMIT,
    OUT_OF_SCOPE,
    ROBOTS_TXT,
    TOO_LONG,
    TRAP,
    Decision,
    SegmentRepeats,
    TrapBudgets,
    engine_detail,
    included,
    not_included,
)
from crawler.core.hosts import AllowedHosts
from crawler.core.patterns import NO_PATTERNS, Patterns, path_and_query
from crawler.core.robots import RobotsTxt, Verdict
from crawler.core.urls import OriginMap, Scope, join_parts, known, normalize, url_folder
from crawler.errors import ConfigError, InvalidURLError

__all__ = ["Plan", "Screen"]

_UNREAD = RobotsTxt.allow_all()  # another host's rules before they are read


@dataclass(slots=True, frozen=True)
class Plan:
    """Where the crawl starts, what it may list and where the sitemap goes."""

    start: str  # crawl space
    scope: Scope  # public space: the sitemap's folder
    origins: OriginMap
    sitemap_url: str
    base_url: str  # public folder the sitemap files are published under
    seeds: tuple[str, ...] = ()  # crawl space: more start URLs, each once, the start not among them
    hosts: AllowedHosts | None = None  # allowed_hosts: more hosts in scope, from their root
    # the crawl and public spaces are one (no --public-url): asked for every URL met (public,
    # to_crawl, the screen), so kept, not a property computed each time (#26)
    identity: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "identity", self.origins.is_identity)

    @classmethod
    def make(
        cls,
        url: str,
        public_url: str | None,
        sitemap_url: str | None,
        seeds: tuple[str, ...] = (),
        strip: tuple[str, ...] = (),
        allowed_hosts: tuple[str, ...] = (),
    ) -> Plan:
        """The plan of a crawl from its start URL, --public-url, --sitemap-url and more
        start URLs (`seeds`, crawl space like the start; one under --public-url's folder is
        taken as the page it names on the crawled server). Start URLs are known as links
        are: without the strip_params parameters (`strip`). `allowed_hosts`: more hosts
        whose URLs are in scope (crawler.core.hosts); not with --public-url, which maps one
        origin only."""
        start = known(url, strip)
        crawl_root = Scope.from_url(start)
        hosts = AllowedHosts.parse(allowed_hosts, crawl_root) if allowed_hosts else None
        if hosts is not None and public_url:
            raise ConfigError(
                "allowed_hosts cannot be combined with public_url: each host is crawled and "
                "listed under its own name"
            )
        public_root = Scope.from_url(normalize(public_url)) if public_url else crawl_root
        origins = OriginMap(crawl_root, public_root)
        sitemap_url = normalize(sitemap_url) if sitemap_url else public_root.root + "sitemap.xml"
        scope = Scope.from_url(sitemap_url)
        public_start = origins.to_public(start)
        if not scope.contains(public_start):
            raise ConfigError(
                f"start URL {public_start} is outside the sitemap's scope "
                f"{scope.root} (see --sitemap-url)"
            )
        plan = cls(start, scope, origins, sitemap_url, url_folder(sitemap_url), (), hosts)
        more = dict.fromkeys(_seed(seed, origins, plan, strip) for seed in seeds)
        more.pop(start, None)
        return dataclasses.replace(plan, seeds=tuple(more))

    def in_scope(self, public: str) -> bool:
        """Whether a URL (public space) may be listed: in the sitemap's folder, or on an
        allowed host."""
        if self.scope.contains(public):
            return True
        return self.hosts is not None and self.hosts.covers(public)

    def scope_text(self) -> str:
        """The scope in words, for an out-of-scope decision."""
        if self.hosts is None:
            return self.scope.root
        names = sorted(self.hosts.exact) + [f"*{s}" for s in self.hosts.suffixes]
        return f"{self.scope.root} and allowed_hosts {', '.join(names)}"

    def public(self, url: str) -> str:
        """The URL as the sitemap would list it; URLs outside the crawl root stay as they are
        (and so fail the scope check: nothing outside the mapped folder is published)."""
        if self.identity or not url.startswith(self.origins.crawl.root):
            return url
        return self.origins.to_public(url)

    def to_crawl(self, url: str) -> str:
        return url if self.identity else self.origins.to_crawl(url)


def _seed(seed: str, origins: OriginMap, plan: Plan, strip: tuple[str, ...]) -> str:
    """A start URL beyond the first, in crawl space; a ConfigError naming it when the crawl
    could not list it, before anything is fetched."""
    try:
        url = origins.to_crawl(known(seed, strip))
    except InvalidURLError as exc:
        raise ConfigError(f"seed URL: {exc}") from None
    public = url
    if not origins.is_identity:
        if not url.startswith(origins.crawl.root):
            raise ConfigError(
                f"seed URL {seed} is outside the crawled folder {origins.crawl.root} "
                f"(see --public-url)"
            )
        public = origins.to_public(url)
    if not plan.in_scope(public):
        raise ConfigError(
            f"seed URL {seed} is outside the sitemap's scope {plan.scope_text()} "
            f"(see --sitemap-url)"
        )
    return url


class Screen:
    """The checks made before a URL is fetched, in order: scope, length, the user's exclude
    and include patterns, traps, robots.txt, depth, then the trap budgets (which count every
    URL that passes them: an excluded URL spends none).

    `seeds` (crawl space): the URLs the user starts from, fetched whatever `include` says, so
    the crawl can reach the included pages from them (decide_page then leaves them out of
    the sitemap unless they match); `exclude` applies to them as to any URL. So are the URLs
    `listing_only` (exclude_listing_only) matches: hubs, fetched and followed, never listed."""

    __slots__ = (
        "_agent",
        "_chooses",
        "_depth",
        "_engines",
        "_length",
        "_outside",
        "_refusals",
        "_repeats",
        "_unmapped",
        "budgets",
        "exclude",
        "host_robots",
        "include",
        "listing_only",
        "plan",
        "robots",
        "seeds",
    )

    def __init__(
        self,
        plan: Plan,
        *,
        user_agent: str,
        max_url_length: int,
        max_segment_repeats: int,
        max_depth: int,
        budgets: TrapBudgets,
        include: Patterns = NO_PATTERNS,
        exclude: Patterns = NO_PATTERNS,
        seeds: frozenset[str] = frozenset(),
        listing_only: Patterns = NO_PATTERNS,
        engines: tuple[str, ...] = (),
    ) -> None:
        self.plan = plan
        self._engines = engines
        self.include = include
        self.listing_only = listing_only
        self.exclude = exclude
        # whether the user's patterns choose at all: asked of every URL in scope, where
        # each Patterns' truth is a call (#26)
        self._chooses = bool(include or exclude)
        self.seeds = seeds
        self.robots = RobotsTxt.allow_all()  # until the crawl has read the site's
        # allowed_hosts: each other host's robots.txt, by origin, once read (before its first
        # request: crawler.shell.hosts); until then its URLs pass here
        self.host_robots: dict[str, RobotsTxt] = {}
        self.budgets = budgets
        self._agent = user_agent
        self._length = max_url_length
        self._repeats = SegmentRepeats(max_segment_repeats)
        self._depth = max_depth
        # An out-of-scope verdict's text is the plan's, the same for every URL: one frozen
        # Decision each, not one made a URL (most sites link out more than they list, #26);
        # so is a robots.txt refusal's, by the rule that refuses (a Verdict per rule).
        self._outside = Decision(OUT_OF_SCOPE, f"outside {plan.scope_text()}")
        self._unmapped = Decision(OUT_OF_SCOPE, f"outside {plan.origins.public.root}")
        self._refusals: dict[Verdict, Decision] = {}

    def __call__(self, url: str, depth: int) -> Decision | None:
        """Why url (crawl space), found `depth` links from the start, is not fetched; None
        when it may be."""
        plan = self.plan
        public = url if plan.identity else plan.public(url)  # (as Links does: a call a URL)
        if not plan.in_scope(public):
            return self._outside
        if not plan.identity and not url.startswith(plan.origins.crawl.root):
            # in the sitemap's scope but not under --public-url: it has no page on the server
            # being crawled, and the public host is never fetched
            return self._unmapped
        if len(public) > self._length or len(url) > self._length:
            return Decision(TOO_LONG, f"{len(public)} characters")
        if self._chooses:
            chosen = self._chosen(url, public)
            if chosen is not None:
                return chosen
        path = url.split("?", 1)[0]
        if self._repeats(path):
            return Decision(TRAP, f"a path segment repeats more than {self._repeats.limit} times")
        denied = self.robots_denial(url)
        if denied is not None:
            return denied
        if 0 <= self._depth < depth:
            return Decision(LIMIT, f"deeper than max_depth {self._depth}")
        spent = self.budgets.spend(url)
        if spent is not None:
            return Decision(TRAP, spent)
        return None

    def engine_denial(self, url: str, *, allowed_to_us: bool = False) -> str | None:
        """Why a search engine reading the sitemap (search_engines) may not crawl url (crawl
        space), which we may fetch: its robots.txt group (else ``*``) disallows it, so it
        would report the listed URL as blocked. Our own group governs only what we request.

        `allowed_to_us`: the caller knows that our own agent was allowed url by the rules
        robots_for(url) gives now (the judge: every URL it fetches passed this screen, or
        on another host HostGate.admit, in this run). When the engines are judged by our
        agent's groups, their verdict is that one: allowed, known without matching (#26)."""
        if not self._engines:
            return None
        robots = self.robots_for(url)
        if allowed_to_us and robots.shares_rules(self._engines, self._agent):
            return None
        verdicts = robots.verdicts(url, self._engines)  # one pass for all
        for engine, verdict in zip(self._engines, verdicts, strict=True):
            if not verdict.allowed:
                return engine_detail(engine, _why(verdict))
        return None

    def robots_for(self, url: str) -> RobotsTxt:
        """The robots.txt that governs url (crawl space): its host's."""
        plan = self.plan
        if plan.hosts is None or url.startswith(plan.origins.crawl.root):
            return self.robots
        return self.host_robots.get(join_parts(url)[1], _UNREAD)

    def robots_denial(self, url: str) -> Decision | None:
        """The robots.txt decision alone (also for a URL on a host whose rules came late)."""
        verdict = self.robots_for(url).verdict(url, self._agent)
        if verdict.allowed:
            return None
        refusal = self._refusals.get(verdict)
        if refusal is None:
            refusal = self._refusals[verdict] = Decision(ROBOTS_TXT, _why(verdict))
        return refusal

    def _chosen(self, url: str, public: str) -> Decision | None:
        """Why the user's patterns keep url (crawl space; `public`: as listed) from being
        fetched, or None."""
        path = path_and_query(public)
        pattern = self.exclude.match(path)
        if pattern is not None:
            return Decision(EXCLUDED_BY_PATTERN, f"exclude {pattern}")
        if (
            self.include
            and url not in self.seeds
            and not included(path, self.include, self.listing_only)
        ):
            return Decision(EXCLUDED_BY_PATTERN, not_included(self.include))
        return None


def _why(verdict: Verdict) -> str:
    """A refusal's detail: the robots.txt rule and the line it is on."""
    where = f" (line {verdict.line})" if verdict.line else ""
    return f"{verdict.rule}{where}"
