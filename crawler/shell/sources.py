"""Where a crawl's URLs and rules come from before its links: the site's robots.txt (or
--robots-from's), and --seed-sitemaps' URLs, held until the links run out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.config import Config, robots_from_is_url
from crawler.core.botwall import bot_wall
from crawler.core.robots import RobotsTxt, parse_robots
from crawler.core.screen import Plan
from crawler.core.urls import known
from crawler.errors import ConfigError
from crawler.shell.client import PoliteClient
from crawler.shell.fetch import ROBOTS_MAX_BYTES, Response, fetch_robots, fetch_rules
from crawler.shell.throttle import ThrottleClosed

if TYPE_CHECKING:  # --seed-sitemaps' modules are loaded when it reads: few crawls do
    from crawler.shell.seeds import SeedSitemap


@dataclass(slots=True, frozen=True)
class Robots:
    """A site's robots.txt as read: its rules, the note the log and report give, and the
    status of the last answer (None: no answer, or rules from --robots-from); `wall`: the
    bot protection that answered instead (crawler.core.botwall), and its URL."""

    rules: RobotsTxt
    note: str
    status: int | None
    wall: tuple[str, str] | None = None


async def read_robots(config: Config, client: PoliteClient, url: str) -> Robots:
    """The robots.txt of url's origin, through the client; --robots-from's rules instead,
    when given (then the site's own robots.txt is never requested)."""
    source = config.robots_from
    if source is not None:
        note = f"rules from {source} (--robots-from); the site's robots.txt was not used"
        return Robots(await _rules_from(source, client), note, None)
    return await read_own_robots(client, url)


async def read_own_robots(client: PoliteClient, url: str) -> Robots:
    """The robots.txt url's origin serves, through the client (its host's throttle)."""
    answers: list[Response] = []

    async def get(robots_url: str, max_bytes: int) -> Response:
        answers.append(await client.request(robots_url, max_bytes))
        return answers[-1]

    rules, note = await fetch_robots(url, get)
    status = next((a.status for a in reversed(answers) if a.status), None)
    last = answers[-1] if answers else None
    service = None if last is None else bot_wall(last.status, last.headers, last.body)
    wall = None if last is None or service is None else (service, last.url)
    return Robots(rules, note, status, wall)


async def _rules_from(source: str, client: PoliteClient) -> RobotsTxt:
    """--robots-from: production's rules for a staging site that disallows everything.
    A URL is fetched once, with retries but outside the site's throttle (it is another
    host); rules that cannot be read stop the crawl before it starts (ConfigError)."""
    if robots_from_is_url(source):
        return await fetch_rules(source, client.unthrottled)
    try:
        with open(source, "rb") as file:  # once, small: no need to leave the loop
            return parse_robots(file.read(ROBOTS_MAX_BYTES + 1))
    except OSError as exc:
        raise ConfigError(f"robots_from: cannot read {source}: {exc.strerror or exc}") from None


class SeedSource:
    """--seed-sitemaps: the site's sitemaps, read once robots.txt is known; their URLs wait
    until the links run out (release), so that a `seed` mark means exactly that the links
    alone would not have found them, at no cost per link."""

    def __init__(self, config: Config, plan: Plan, log: Callable[[str], None]) -> None:
        self.config = config
        self.plan = plan
        self.log = log
        self.sitemaps: list[SeedSitemap] = []
        self.done = False  # read and handed to the frontier (a resume knows)

    @property
    def waiting(self) -> bool:
        return bool(self.sitemaps)

    async def read(
        self, client: PoliteClient, robots: RobotsTxt, stopped: Callable[[], bool]
    ) -> list[str]:
        """Read the sitemaps robots.txt names (or the usual places); the notes for the
        report. Done at once when none gives a URL."""
        from crawler.core.seeds import MAX_SEED_URLS
        from crawler.shell.seeds import read_seed_sitemaps

        config = self.config

        async def get(url: str, max_bytes: int) -> Response:
            try:
                return await client.request(url, max_bytes)
            except ThrottleClosed as closed:  # never sent, the URLs taken are kept
                return Response(url, error=str(closed))

        seeds = await read_seed_sitemaps(
            robots.sitemaps,
            self.plan,
            robots,
            config.user_agent,
            get,
            max_urls=min(config.max_pages or MAX_SEED_URLS, MAX_SEED_URLS),
            stopped=stopped,
        )
        self.sitemaps = [sitemap for sitemap in seeds.sitemaps if sitemap.locs]
        warnings = set(seeds.warnings)
        for line in seeds.notes:
            self.log(f"warning: {line}" if line in warnings else line)
        if not self.sitemaps:
            self.done = True  # nothing to wait for; a resume need not read them again
        return seeds.notes

    def release(
        self,
        met: Callable[[str], bool],
        discover: Callable[[str, int, str | None], None],
        late: Callable[[str, str], None],
        limit: str | None = None,
    ) -> None:
        """The links have run out: the URLs no link led to are discovered at depth 0, the
        sitemap as their referrer (`seed` in the decisions file); a URL met already is
        told to `late` (a broken URL the sitemap lists). `limit`: a limit ended the crawl
        first, so they are queued to be recorded as `limit`, not crawled."""
        sitemaps, self.sitemaps = self.sitemaps, []
        strip, to_crawl, fresh = self.config.strip_params, self.plan.to_crawl, 0
        for sitemap in sitemaps:
            for loc in sitemap.locs:
                url = to_crawl(known(loc, strip))
                if not met(url):
                    fresh += 1
                    discover(url, 0, sitemap.url)
                else:
                    late(url, sitemap.url)
        self.done = True
        done = f"not crawled ({limit})" if limit else "crawled from the sitemaps"
        self.log(f"seed sitemaps: {fresh} URLs no link led to, {done}")
