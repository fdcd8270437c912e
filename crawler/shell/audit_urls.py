"""The URL checks of `sitemap-crawler audit`: each listed URL judged by the crawl engine.

A search engine fetches what a sitemap lists the way a crawler does, so the audit asks the
crawl engine itself (Crawl.check): the same fetcher and worker processes, robots.txt,
Crawl-delay, throttle, retries, --public-url and access options, and the same decisions.
Only URLs under the audited sitemap's folder on the audited site are fetched (mapped to the
staging server with --public-url): another host never is. A listed page's canonical target
in that scope is judged too, once, whether listed or not: whether it answers is what makes
the page canonicalised or canonical_broken (#24). What the engine decided becomes
findings in crawler.core.url_checks.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from crawler.config import Config
from crawler.core.decide import OUT_OF_SCOPE
from crawler.core.findings import Finding, ListedUrl
from crawler.core.url_checks import (
    crawl_findings,
    lastmod_findings,
    soft_404_finding,
    url_findings,
)
from crawler.core.urls import normalize, url_folder
from crawler.errors import InvalidURLError, SitemapCrawlerError
from crawler.shell.engine import Crawl, Robots
from crawler.shell.pool import Spare
from crawler.shell.progress import ProgressLine

__all__ = ["SOFT_404_SUFFIX", "SiteDown", "UrlChecks", "check_urls", "compare_with_crawl"]

#: The made-up page asked for once per audit: named so a server log says who asked, and why.
SOFT_404_SUFFIX = "-sitemap-crawler-soft-404-check"


class SiteDown(SitemapCrawlerError):
    """The site stopped answering while its URLs were checked: nothing sound to report."""

    exit_code = 3


@dataclass(slots=True)
class UrlChecks:
    """The listed URLs' checks: findings, and which URLs were judged (diff's "not checked")."""

    findings: list[Finding]
    checked: int  # listed URLs judged (fetched, or refused by robots.txt)
    judged: frozenset[str] = frozenset()  # those URLs, as listed (diff's "not checked")


async def check_urls(
    config: Config,
    listed: Iterable[ListedUrl],
    *,
    log: Callable[[str], None],
    progress: ProgressLine | None,
    workers: list[Spare] | None = None,
    robots: Robots | None = None,
) -> UrlChecks:
    """Judge every listed URL once, as a crawl would, and say what a search engine would
    complain about. `workers`: forked with pool.worker_processes() before the event loop, as the
    crawl command does (none: pages are fetched and analysed in this process)."""
    # the URLs as written: a search engine strips no parameter (tracking_parameter says
    # what a crawl would strip); `robots`: as the audit read it
    crawl = Crawl(dataclasses.replace(config, strip_params=()), log, progress, robots=robots)
    keys, urls = _in_scope(crawl, listed, normalize)
    probe = _soft_404_probe(crawl, config)
    checked = await crawl.check([*urls, *([probe] if probe else [])], workers)
    if checked.outage is not None:
        raise SiteDown(
            f"the site looks down ({checked.outage}): stopped after {crawl.tally.fetched} "
            f"requests, {len(checked.decisions)} of {len(urls)} listed URLs judged"
        )
    findings = url_findings(listed, keys, checked)
    if checked.blocked is not None:  # the crawler is blocked: said once, not as broken pages
        findings.append(_blocked(checked.blocked, "the listed URLs"))
    findings += lastmod_findings(listed, keys, checked, now=datetime.now(UTC))
    if probe is not None:
        soft = soft_404_finding(crawl.plan.public(probe), checked, crawl.plan.sitemap_url)
        if soft is not None:
            findings.append(soft)
    judged = {
        loc
        for loc, key in keys.items()
        if (record := checked.decisions.get(key)) is not None and record.reason != OUT_OF_SCOPE
    }
    return UrlChecks(findings, len({keys[loc] for loc in judged}), frozenset(judged))


async def compare_with_crawl(
    config: Config,
    listed: Iterable[ListedUrl],
    *,
    log: Callable[[str], None],
    progress: ProgressLine | None,
    workers: list[Spare] | None = None,
    robots: Robots | None = None,
) -> list[Finding]:
    """Crawl the site from config.url as `crawl` would, publishing nothing, and compare:
    the pages it would list that no sitemap lists, and the listed URLs no link reaches.
    A crawl of its own: the listed URLs a link reaches are fetched again (simple, and a
    listed URL no link reaches must not be fetched by it, or it would seem reached)."""
    crawl = Crawl(config, log, progress, robots=robots)
    keys, _ = _in_scope(crawl, listed, crawl.known_as)  # as the crawl's links know them
    crawled = await crawl.check([crawl.plan.start, *crawl.plan.seeds], workers, follow=True)
    if crawled.outage is not None:
        raise SiteDown(
            f"the site looks down ({crawled.outage}): the crawl stopped after "
            f"{crawl.tally.fetched} requests"
        )
    if crawled.blocked is not None:  # what it reached is no measure of what links reach
        return [_blocked(crawled.blocked, "the crawl (--crawl)")]
    start = crawl.plan.public(crawl.plan.start)
    return crawl_findings(listed, keys, crawled, start=start)


def _blocked(why: str, what: str) -> Finding:
    """The one finding of checks a bot wall stopped (crawler.core.botwall)."""
    return Finding("blocked_by_bot_protection", None, None, f"{why}; {what} stopped there")


def _in_scope(
    crawl: Crawl, listed: Iterable[ListedUrl], identity: Callable[[str], str]
) -> tuple[dict[str, str], list[str]]:
    """Each listed loc the audit may fetch -> the public URL the engine judges it as
    (`identity` of the loc), and the URLs to fetch (crawl space), each once. A loc that is
    not a URL, or lies outside the sitemap's folder on the audited site, is the file
    checks' (invalid_url, url_not_allowed) and is never fetched."""
    plan = crawl.plan
    keys: dict[str, str] = {}
    urls: dict[str, None] = {}
    for item in listed:
        if item.loc in keys:
            continue
        try:
            url = plan.to_crawl(identity(item.loc))
        except (InvalidURLError, ValueError):
            continue
        on_host = plan.hosts is not None and plan.hosts.covers(url)  # allowed_hosts
        if not (url.startswith(plan.origins.crawl.root) or on_host):
            continue
        public = plan.public(url)
        if not plan.in_scope(public):
            continue
        keys[item.loc] = public
        urls[url] = None
    return keys, list(urls)


def _soft_404_probe(crawl: Crawl, config: Config) -> str | None:
    """A made-up URL under the sitemap's folder (crawl space), random so no cache or real
    page answers it; None when that folder is not on the audited server."""
    plan = crawl.plan
    folder = plan.to_crawl(url_folder(plan.sitemap_url))
    if not folder.startswith(plan.origins.crawl.root):
        return None
    return f"{folder}{secrets.token_hex(6)}{SOFT_404_SUFFIX}"
