"""Reading the site's own sitemaps for --seed-sitemaps: the requests, through the engine's
polite path, and the bounds on them. What a sitemap says is crawler.core.seeds's to read.

Nothing a sitemap does stops the crawl: one that cannot be fetched or read is a line in
the log and the crawl goes on from its links.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from crawler.core.robots import RobotsTxt
from crawler.core.screen import Plan
from crawler.core.seeds import (
    MAX_SEED_SITEMAPS,
    MAX_SITEMAP_BYTES,
    MAX_SITEMAP_REDIRECTS,
    SitemapToRead,
    read_body,
    sources,
    where,
)
from crawler.core.urls import resolve
from crawler.shell.fetch import REDIRECT_STATUSES, Response

__all__ = ["SeedSitemap", "Seeds", "read_seed_sitemaps"]

Get = Callable[[str, int], Awaitable[Response]]


@dataclass(slots=True)
class SeedSitemap:
    """The URLs one sitemap names that no other sitemap read before it did."""

    url: str  # public space, as the site names it: the seed mark of its URLs
    locs: list[str]  # normalized, as written (public space)


@dataclass(slots=True)
class Seeds:
    """What the seed sitemaps gave: their URLs, and a line per sitemap for the log and the
    report (`warnings` are the lines worth a `warning:`)."""

    sitemaps: list[SeedSitemap] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    count: int = 0  # URLs taken, over every sitemap


async def read_seed_sitemaps(
    named: tuple[str, ...],
    plan: Plan,
    robots: RobotsTxt,
    user_agent: str,
    get: Get,
    *,
    max_urls: int,
    max_sitemaps: int = MAX_SEED_SITEMAPS,
    max_bytes: int = MAX_SITEMAP_BYTES,
    stopped: Callable[[], bool] = lambda: False,
) -> Seeds:
    """Read the sitemaps robots.txt names (`named`), else the guessed /sitemap.xml, and the
    sitemaps an index among them names, one level down. `get(url, max_bytes)` is one request
    through the crawl's throttle and retries. `stopped`: the crawl is stopping (a signal, an
    outage), so no more sitemaps are asked for."""
    seeds = Seeds()
    queue, skipped = sources(named, plan, robots, user_agent)
    seeds.notes += skipped
    seeds.warnings += skipped
    if len(queue) > max_sitemaps:
        line = f"seed sitemaps: robots.txt names {len(queue)}; the first {max_sitemaps} are read"
        seeds.notes.append(line)
        seeds.warnings.append(line)
        del queue[max_sitemaps:]
    planned = {source.url for source in queue}
    taken: set[str] = set()
    while queue and not stopped():
        source = queue.pop(0)
        if seeds.count >= max_urls:
            line = f"seed sitemap {plan.public(source.url)}: not read ({max_urls} URLs taken)"
            seeds.notes.append(line)
            continue
        url, answer, why = await _fetch(source.url, plan, robots, user_agent, get, max_bytes)
        if answer is None:
            _skip(seeds, plan, source, why, quiet=not source.named and why == "HTTP 404")
            continue
        found = read_body(answer.body, answer.headers.get("Content-Type", ""), max_bytes)
        if found.problem is not None:
            _skip(seeds, plan, source, found.problem)
            continue
        if found.kind == "sitemapindex":
            if source.level > 0:
                _skip(seeds, plan, source, "an index inside an index (one level is read)")
                continue
            children = left = elsewhere = 0
            for loc in found.locs:
                child, _ = where(loc, plan)
                if child is None:
                    elsewhere += 1
                elif child in planned or child == url:
                    continue
                elif len(planned) >= max_sitemaps:
                    left += 1
                else:
                    planned.add(child)
                    queue.append(SitemapToRead(child, True, 1))
                    children += 1
            line = (
                f"seed sitemap {plan.public(source.url)}: an index of {children} sitemaps to read"
            )
            if elsewhere:
                line += f"; {elsewhere} not on the crawled origin are not"
            if left:
                line += f"; {left} more are not (at most {max_sitemaps} sitemaps are read)"
            seeds.notes.append(line)
            if elsewhere or left:
                seeds.warnings.append(line)
            continue
        fresh = [loc for loc in found.locs if loc not in taken]
        room = max_urls - seeds.count
        cut = len(fresh) > room
        fresh = fresh[:room]
        taken.update(fresh)
        seeds.count += len(fresh)
        name = plan.public(source.url)
        seeds.sitemaps.append(SeedSitemap(name, fresh))
        line = f"seed sitemap {name}: {len(fresh)} URLs"
        if found.invalid:
            line += f" ({found.invalid} entries that are not http(s) URLs left out)"
        if cut:
            line += f"; no more taken (at most {max_urls} URLs from the seed sitemaps)"
        seeds.notes.append(line)
    return seeds


def _skip(
    seeds: Seeds, plan: Plan, source: SitemapToRead, why: str, *, quiet: bool = False
) -> None:
    """A line for a sitemap not read, naming it as the sitemap would (--public-url)."""
    line = f"seed sitemap {plan.public(source.url)}: {why}" + ("" if quiet else ": skipped")
    seeds.notes.append(line)
    if not quiet:
        seeds.warnings.append(line)


async def _fetch(
    url: str, plan: Plan, robots: RobotsTxt, user_agent: str, get: Get, max_bytes: int
) -> tuple[str, Response | None, str]:
    """GET a sitemap, following redirects on the crawled origin that robots.txt allows:
    (the final URL, its 200 answer or None, why not)."""
    for _ in range(MAX_SITEMAP_REDIRECTS + 1):
        resp = await get(url, max_bytes)
        if resp.error:
            return url, None, resp.error
        if resp.status not in REDIRECT_STATUSES:
            break
        location = (resp.location or "").strip()
        target = resolve(url, location) if location else None
        if target is None:
            return url, None, f"HTTP {resp.status} without a usable Location"
        moved, why = where(target, plan)
        if moved is None:
            return url, None, f"redirects to {plan.public(target)}, {why}"
        verdict = robots.verdict(moved, user_agent)
        if not verdict.allowed:
            forbidden = f"which robots.txt forbids ({verdict.rule})"
            return url, None, f"redirects to {plan.public(moved)}, {forbidden}"
        url = moved
    else:
        return url, None, f"more than {MAX_SITEMAP_REDIRECTS} redirects"
    if resp.status != 200:
        return url, None, f"HTTP {resp.status}"
    if resp.truncated:
        return url, None, f"more than {max_bytes} bytes, the protocol's limit"
    return url, resp, ""
