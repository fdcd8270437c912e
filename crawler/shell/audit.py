"""`sitemap-crawler audit`: find a site's sitemaps, read them politely and boundedly, and
gather the findings. The checks themselves are pure (crawler.core.sitemap_checks for the
files; crawler.shell.audit_urls for the URLs they list); this module does the I/O.

Every request goes through a Crawl built from the audit's Config (its transport, throttle,
retries and robots.txt), so an audit is exactly as polite as a crawl. Bounds: 50 MiB
decompressed per file (the reader's max_bytes), MAX_SITEMAP_FILES files per audit, an index
followed one level down, and no request off the audited origin.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from crawler.config import Config
from crawler.core.botwall import Walls, bot_wall, how_to_allow
from crawler.core.decide import walled_detail
from crawler.core.findings import AuditSummary, Finding
from crawler.core.hosts import AllowedHosts
from crawler.core.robots import RobotsTxt
from crawler.core.screen import Plan
from crawler.core.seeds import MAX_SITEMAP_REDIRECTS, where
from crawler.core.sitemap_checks import (
    SitemapFile,
    duplicates,
    file_findings,
    hreflang_return_links,
    index_problem,
    listed_urls,
    news_findings,
    not_in_robots,
    tracking_findings,
)
from crawler.core.urls import normalize, resolve, url_folder
from crawler.errors import AuditInputError, ConfigError, InvalidURLError
from crawler.shell.audit_spool import Listed
from crawler.shell.audit_urls import check_urls, compare_with_crawl
from crawler.shell.engine import Crawl, Robots
from crawler.shell.fetch import REDIRECT_STATUSES, Response
from crawler.shell.pool import Spare
from crawler.shell.progress import ProgressLine
from sitemap_out.reader import ReadResult, looks_like_sitemap, read_sitemap
from sitemap_out.writer import MAX_BYTES

__all__ = ["GUESSES", "MAX_SITEMAP_FILES", "Audit", "Reading", "audit", "is_url", "read_sitemaps"]

#: Sitemap files read at most in one audit, index children included: an index may name
#: 50,000, each up to 50 MiB; a thousand is already hours of a polite crawler's time.
MAX_SITEMAP_FILES: Final = 1_000
#: Where a site's sitemap is looked for, under the audited folder, when robots.txt names none.
GUESSES: Final = ("sitemap.xml", "sitemap_index.xml", "sitemap.xml.gz", "sitemap.txt")

#: (crawl-space folder URL, public sitemap URL or None) -> the validated Config of the audit.
Configure = Callable[[str, str | None], Config]
Get = Callable[[str, int | None], Awaitable[Response]]
Log = Callable[[str], None]


@dataclass(slots=True)
class Audit:
    """An audit's result: what the CLI prints, reports and decides the exit code from."""

    summary: AuditSummary
    findings: list[Finding]
    why_nothing: str | None = None  # set: no sitemap file could be read (exit 3)
    entries: tuple[str, ...] = ()  # the sitemap URLs read first (not an index's children)


@dataclass(frozen=True, slots=True)
class _Source:
    """A sitemap file to read."""

    name: str  # public URL (or local path): the `sitemap` of its findings
    fetch: str  # crawl-space URL (or local path)
    parent: str | None = None  # the index that lists it
    line: int | None = None  # its entry's line in that index


@dataclass(slots=True)
class Reading:
    """What the files read so far gave."""

    findings: list[Finding] = field(default_factory=list)
    listed: Listed = field(default_factory=Listed)  # on disk: memory stays flat
    read: list[_Source] = field(default_factory=list)
    robots: Robots | None = None  # the site's, once read
    hosts: AllowedHosts | None = None  # allowed_hosts: the sitemaps may list their URLs
    now: datetime = field(default_factory=lambda: datetime.now(UTC))  # news' two days

    def take(self, source: _Source, sitemap: SitemapFile, result: ReadResult) -> list[_Source]:
        """Record one file read; returns an index's children to read next (none from an
        index inside an index: one level is followed, the nesting is a finding)."""
        self.read.append(source)
        self.findings += file_findings(sitemap, result, self.hosts)
        if result.kind != "sitemapindex":
            self.listed.add(listed_urls(sitemap, result))
            self.findings += news_findings(sitemap, result, self.now)
            self.listed.add_clusters(sitemap.name, result.entries)
            return []
        if source.parent is not None:
            back = any(_same(entry.loc, source.parent) for entry in result.entries)
            loop = f"; it lists {source.parent} back: a loop" if back else ""
            self.findings.append(
                Finding(
                    "nested_index",
                    source.parent,
                    None,
                    f"lists {source.name}, itself a sitemap index; the sitemaps it lists "
                    f"are not read (an index is followed one level only){loop}",
                    source.line,
                )
            )
            return []
        children: list[_Source] = []
        for entry in result.entries:
            if not entry.loc:
                continue
            if _same(entry.loc, source.name):
                detail = "lists itself: an index may list sitemaps only, and this is a loop"
                self.findings.append(Finding("nested_index", source.name, None, detail, entry.line))
                continue
            children.append(_Source(entry.loc, entry.loc, source.name, entry.line))
        return children


def _same(loc: str, name: str) -> bool:
    """loc names the sitemap called `name` (its public URL), as the protocol reads URLs."""
    try:
        return normalize(loc) == normalize(name)
    except InvalidURLError:
        return loc == name


def is_url(target: str) -> bool:
    return target.lower().startswith(("http://", "https://"))


def is_site(url: str) -> bool:
    """A URL named like a site or folder, not a sitemap file: its path ends with / or its last
    segment has no sitemap-like name (sitemap*, *.xml, *.txt, *.gz). Only a first guess: what
    the URL answers decides (_answers_sitemap)."""
    last = urlsplit(url).path.rsplit("/", 1)[-1].lower()
    if not last:
        return True
    return "sitemap" not in last and not last.endswith((".xml", ".txt", ".gz"))


async def audit(
    target: str,
    configure: Configure,
    *,
    fetch_urls: bool,
    crawl: bool,
    log: Log,
    progress: ProgressLine | None,
    workers: list[Spare] | None = None,
) -> Audit:
    """Audit TARGET (a local file, a sitemap URL or a site URL). `workers`: forked before
    the event loop (pool.worker_processes), for checking the listed URLs as a crawl uses them."""
    reading = Reading()
    try:
        return await _audit(target, configure, reading, fetch_urls, crawl, log, progress, workers)
    finally:
        reading.listed.close()


async def _audit(
    target: str,
    configure: Configure,
    reading: Reading,
    fetch_urls: bool,
    crawl: bool,
    log: Log,
    progress: ProgressLine | None,
    workers: list[Spare] | None,
) -> Audit:
    started = time.monotonic()
    summary = AuditSummary(target=target)
    config, why_nothing = await read_sitemaps(target, configure, reading, log)
    reading.findings += reading.listed.duplicates(duplicates)
    if config is not None:
        reading.findings += reading.listed.tracking(config.strip_params, tracking_findings)
    clusters = reading.listed.clusters()
    if clusters is not None:
        reading.findings += hreflang_return_links(clusters, reading.listed)
    summary.sitemaps_read = len(reading.read)
    summary.urls_listed = len(reading.listed)
    if why_nothing is None and config is not None and reading.listed:
        if fetch_urls:
            checks = await check_urls(
                config, reading.listed, log=log, progress=progress, workers=workers,
                robots=reading.robots,
            )  # fmt: skip
            reading.findings += checks.findings
            summary.urls_checked = checks.checked
        if crawl:
            reading.findings += await compare_with_crawl(
                config, reading.listed, log=log, progress=progress, robots=reading.robots
            )
    summary.count(reading.findings)
    summary.seconds = time.monotonic() - started
    entries = tuple(s.name for s in reading.read if s.parent is None and is_url(s.name))
    return Audit(summary, reading.findings, why_nothing, entries)


async def read_sitemaps(
    target: str, configure: Configure, reading: Reading, log: Log
) -> tuple[Config | None, str | None]:
    """Read TARGET's sitemaps into `reading` (its listed URLs spooled): the Config the URLs
    are checked with and, when no file could be read, why (the audit's exit 3). `diff`
    reads each of its sets this way, so both commands read a site, an index or a file alike."""
    if is_url(target):
        return await _remote(target, configure, reading, log)
    return _local(target, configure, reading)


# -- local files ----------------------------------------------------------------------------


def _local(target: str, configure: Configure, reading: Reading) -> tuple[Config | None, str | None]:
    """A sitemap file on disk, read in chunks; an index's sitemaps are looked for beside it
    by file name (what `crawl` publishes: sitemap.xml and its sitemap-N.xml parts)."""
    path = Path(target)
    result = _read_file(path, target)
    children = reading.take(_Source(target, target), _local_file(path, target), result)
    for child in children[:MAX_SITEMAP_FILES]:
        name = urlsplit(child.fetch).path.rsplit("/", 1)[-1]
        beside = path.parent / name
        if not name or not beside.is_file():
            reading.findings.append(
                Finding(
                    "sitemap_unreachable",
                    child.name,
                    None,
                    f"listed by {target}, not found as {beside} (the sitemaps of a local "
                    "index are read from its folder)",
                )
            )
            continue
        local = _Source(str(beside), str(beside), target, child.line)
        reading.take(local, _local_file(beside, local.name), _read_file(beside, local.name))
    loc = reading.listed.first_loc()
    if loc is None:
        return None, None
    first = normalize(loc)
    parts = urlsplit(first)
    return configure(f"{parts.scheme}://{parts.netloc}/", None), None


def _read_file(path: Path, name: str) -> ReadResult:
    try:
        return read_sitemap(path)
    except OSError as exc:
        raise AuditInputError(f"cannot read {name}: {exc.strerror or exc}") from None


def _local_file(path: Path, name: str) -> SitemapFile:
    """A local file has no location: the location rule is not checked (what URL the file
    will be served at is not known), every other rule is."""
    try:
        with path.open("rb") as file:
            gzipped = file.read(2) == b"\x1f\x8b"
    except OSError as exc:
        raise AuditInputError(f"cannot read {name}: {exc.strerror or exc}") from None
    return SitemapFile(name, None, path.name.endswith(".gz"), gzipped)


# -- over HTTP ------------------------------------------------------------------------------


async def _remote(
    target: str, configure: Configure, reading: Reading, log: Log
) -> tuple[Config | None, str | None]:

    url = normalize(target)
    folder = url_folder(url)
    config = configure(folder, None)
    crawl = Crawl(config, log)
    plan, agent = crawl.plan, config.user_agent
    reading.hosts = plan.hosts
    async with crawl.requests() as get:
        reading.robots = await crawl.read_robots()  # the URL checks are given it, not refetch
        robots, robots_read = reading.robots.rules, reading.robots.status == 200
        if (walled := crawl.robots_walled()) is not None:  # not the site's robots.txt
            robots_url = _robots_url(plan)
            reading.findings.append(Finding("blocked_by_bot_protection", None, robots_url, walled))
        fetched: dict[str, Response] = {}
        if is_site(url) and not await _answers_sitemap(url, plan, robots, agent, get, fetched):
            walls = crawl.page_judge.walls
            queue, why_nothing = await _discover(plan, robots, walls, get, reading, fetched)
            if why_nothing is not None and walled is not None:  # the wall is why, said once
                return None, f"nothing audited: {walled}"
            if why_nothing is not None:
                return None, why_nothing
        else:
            queue = [_Source(plan.public(url), url)]
        planned = {source.fetch for source in queue}
        while queue:
            source = queue.pop(0)
            children = await _read_remote(source, plan, robots, agent, get, reading, fetched)
            for child in children:
                crawl_url, why = where(child.name, plan)
                if crawl_url is None:
                    if index_problem(child.name, source.name) is None:  # not said already
                        reading.findings.append(
                            Finding("sitemap_unreachable", child.name, None, f"not fetched: {why}")
                        )
                    continue
                if crawl_url in planned:
                    continue
                if len(planned) >= MAX_SITEMAP_FILES:
                    log(
                        f"warning: {source.name} lists more sitemaps than are read: at most "
                        f"{MAX_SITEMAP_FILES} files per audit"
                    )
                    break
                planned.add(crawl_url)
                queue.append(_Source(plan.public(crawl_url), crawl_url, source.name, child.line))
    if robots_read:
        named = tuple(u for raw in robots.sitemaps if (u := _named(raw, plan)) is not None)
        for source in reading.read:
            parents = (source.parent,) if source.parent else ()
            finding = not_in_robots(source.name, parents, named)
            if finding is not None:
                reading.findings.append(finding)
    if not reading.read:
        unreachable = [f.detail for f in reading.findings if f.code == "sitemap_unreachable"]
        blocked = [
            f.detail
            for f in reading.findings
            if f.code == "sitemap_blocked"
            or (f.code == "blocked_by_bot_protection" and f.sitemap is not None)
        ]
        why = "; ".join(unreachable + blocked) or "nothing to read"
        return None, f"no sitemap could be read ({why})"
    top = reading.read[0].name
    try:
        return configure(folder, top), None
    except ConfigError:  # the sitemap's folder does not hold the audited one: its default
        return config, None


async def _discover(
    plan: Plan,
    robots: RobotsTxt,
    walls: Walls,
    get: Get,
    reading: Reading,
    fetched: dict[str, Response],
) -> tuple[list[_Source], str | None]:
    """The sitemaps of a site: those robots.txt names, else the first of GUESSES under the
    audited folder that answers (its answer kept in `fetched`: not requested twice). When
    a bot wall answered a guess and none was found, the wall is why: said once, as one
    blocked_by_bot_protection finding (robots.txt's, when the wall answered it too)."""
    agent = walls.user_agent
    queue: list[_Source] = []
    for raw in robots.sitemaps[:MAX_SITEMAP_FILES]:
        named = _named(raw, plan)
        if not urlsplit(raw).scheme:
            reading.findings.append(_relative(raw, named))
        crawl_url, why = where(named, plan) if named else (None, "not a URL")
        if crawl_url is None:
            detail = f"named in robots.txt (Sitemap: {raw}), not fetched: {why}"
            reading.findings.append(Finding("sitemap_unreachable", raw, None, detail))
        elif all(source.fetch != crawl_url for source in queue):
            queue.append(_Source(plan.public(crawl_url), crawl_url))
    if queue:  # nothing usable named: the usual guesses, as when robots.txt names none
        return queue, None
    tried: list[str] = []
    walled: tuple[str, str] | None = None  # the first guess a wall answered, its service
    for guess in GUESSES:
        url = plan.origins.crawl.root + guess
        verdict = robots.verdict(url, agent)
        if not verdict.allowed and robots.denial is not None:  # no robots.txt: no site
            return [], f"nothing audited: the site could not be read ({verdict.rule})"
        if not verdict.allowed:
            tried.append(f"{guess}: robots.txt forbids it ({verdict.rule})")
            continue
        resp, why, service = await _fetch(url, plan, robots, agent, get)
        if resp is None:
            tried.append(f"{guess}: {why}")
            if service is not None and walled is None:
                walled = (plan.public(url), service)
            continue
        fetched[url] = resp
        return [_Source(plan.public(url), url)], None
    if walled is not None:
        url, service = walled
        line = walls.answered(service, url)
        if not any(f.code == "blocked_by_bot_protection" for f in reading.findings):
            reading.findings.append(Finding("blocked_by_bot_protection", url, None, line))
        return [], f"nothing audited: {line}"
    where_ = plan.origins.public.root
    return [], (
        f"no sitemap found: robots.txt names none, and none was found under {where_} "
        f"({'; '.join(tried)})"
    )


async def _answers_sitemap(
    url: str, plan: Plan, robots: RobotsTxt, agent: str, get: Get, fetched: dict[str, Response]
) -> bool:
    """Whether a URL named like a site or folder answers a sitemap or feed (WordPress serves
    its feed at /feed/): one request, kept in `fetched` when it is one. An origin's root is
    taken as a site unasked."""
    if urlsplit(url).path in ("", "/") or not robots.verdict(url, agent).allowed:
        return False
    resp, _, _ = await _fetch(url, plan, robots, agent, get)
    if resp is None or not looks_like_sitemap(resp.body, resp.headers.get("Content-Type", "")):
        return False
    fetched[url] = resp
    return True


def _named(raw: str, plan: Plan) -> str | None:
    """The URL a Sitemap: line names: a relative one resolved against robots.txt's URL
    (None if even that gives no http(s) URL)."""
    return raw if urlsplit(raw).scheme else resolve(_robots_url(plan), raw)


def _robots_url(plan: Plan) -> str:
    public = urlsplit(plan.origins.public.root)
    return f"{public.scheme}://{public.netloc}/robots.txt"


def _relative(raw: str, named: str | None) -> Finding:
    """A relative Sitemap: line: read all the same, but the protocol asks for a full URL and
    an engine may ignore the line, so the site owner is told."""
    then = f"read as {named}" if named else "not a URL even against robots.txt's"
    detail = f"robots.txt says 'Sitemap: {raw}', a relative URL; {then}"
    return Finding("robots_sitemap_relative", raw, None, detail)


async def _read_remote(
    source: _Source,
    plan: Plan,
    robots: RobotsTxt,
    agent: str,
    get: Get,
    reading: Reading,
    fetched: dict[str, Response],
) -> list[_Source]:
    verdict = robots.verdict(source.fetch, agent)
    if not verdict.allowed:
        line = f" (line {verdict.line})" if verdict.line else ""
        reading.findings.append(
            Finding(
                "sitemap_blocked",
                source.name,
                None,
                f"robots.txt forbids it: {verdict.rule}{line}; not fetched",
            )
        )
        return []
    resp: Response | None = fetched.pop(source.fetch, None)
    why, walled = "", None
    if resp is None:
        resp, why, walled = await _fetch(source.fetch, plan, robots, agent, get)
    if resp is None:
        listed = f" (listed by {source.parent})" if source.parent else ""
        code = "sitemap_unreachable" if walled is None else "blocked_by_bot_protection"
        reading.findings.append(Finding(code, source.name, None, why + listed))
        return []
    # a body the server sent with Content-Encoding: gzip arrives inflated, and counts as gzip
    encoded = "gzip" in resp.headers.get("Content-Encoding", "").lower()
    named_gz = urlsplit(source.name).path.endswith(".gz")
    sitemap = SitemapFile(
        source.name, source.name, named_gz, encoded or resp.body[:2] == b"\x1f\x8b"
    )
    if resp.truncated:  # only when the server compressed it (Content-Encoding): cut at 50 MiB
        reading.read.append(source)
        reading.findings.append(
            Finding("too_large", source.name, None, f"more than {MAX_BYTES} bytes uncompressed")
        )
        return []
    result = read_sitemap(resp.body)
    resp.body = b""  # up to 50 MiB: not kept while the next file is read
    return reading.take(source, sitemap, result)


async def _fetch(
    url: str, plan: Plan, robots: RobotsTxt, agent: str, get: Get
) -> tuple[Response | None, str, str | None]:
    """GET a sitemap, following redirects on the audited origin that robots.txt allows:
    its 200 answer, or None and why not (for sitemap_unreachable's detail); last, the
    service whose bot wall answered instead of the site (blocked_by_bot_protection: the
    crawler is blocked, the sitemap may well be there), else None."""
    for _ in range(MAX_SITEMAP_REDIRECTS + 1):
        resp = await get(url, MAX_BYTES)
        if resp.error:
            return None, resp.error, None
        if resp.status not in REDIRECT_STATUSES:
            break
        location = (resp.location or "").strip()
        target = resolve(url, location) if location else None
        if target is None:
            return None, f"HTTP {resp.status} without a usable Location", None
        moved, why = where(target, plan)
        if moved is None:
            return None, f"redirects to {plan.public(target)}, {why}", None
        verdict = robots.verdict(moved, agent)
        if not verdict.allowed:
            return None, f"redirects to {plan.public(moved)}, which robots.txt forbids", None
        url = moved
    else:
        return None, f"more than {MAX_SITEMAP_REDIRECTS} redirects", None
    service = bot_wall(resp.status, resp.headers, resp.body)
    if service is not None:
        why = (
            f"{walled_detail(service, resp.status)}, not the sitemap; "
            f"{how_to_allow(service, agent)}"
        )
        return None, why, service
    if resp.status != 200:
        return None, f"HTTP {resp.status}", None
    return resp, "", None
