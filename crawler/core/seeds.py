"""Seeds from the site's own sitemaps (--seed-sitemaps): which sitemaps to read, and which
URLs one names. Pure: robots.txt and bytes in, URLs out; crawler.shell.seeds fetches.

A site's sitemap names pages no link leads to (on tcpdump.org, /linktypes/), so its URLs
start the crawl too. The sitemaps are someone else's input, maybe hostile, so everything is
bounded: how many are read, how many bytes each (the protocol's 50 MiB, decompressed), how
many URLs are taken, and an index is followed one level down, no deeper.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from crawler.core.robots import RobotsTxt
from crawler.core.screen import Plan
from crawler.core.urls import normalize
from crawler.errors import InvalidURLError
from sitemap_out.limits import MAX_BYTES

__all__ = [
    "MAX_SEED_SITEMAPS",
    "MAX_SEED_URLS",
    "MAX_SITEMAP_BYTES",
    "MAX_SITEMAP_REDIRECTS",
    "SitemapRead",
    "SitemapToRead",
    "read_body",
    "sources",
    "where",
]

#: Sitemaps read at most, index children included: a site's index may name thousands.
MAX_SEED_SITEMAPS: Final = 100
#: URLs taken from seed sitemaps at most when --max-pages sets no lower bound: each one is
#: kept in memory until the links run out, then costs a request.
MAX_SEED_URLS: Final = 1_000_000
#: The protocol's limit for one sitemap file, uncompressed (a gzip bomb stops there).
MAX_SITEMAP_BYTES: Final = MAX_BYTES
#: Same-origin redirects followed to a sitemap (/sitemap.xml -> /sitemap_index.xml is common).
MAX_SITEMAP_REDIRECTS: Final = 5

#: Reader findings that leave nothing to trust in a sitemap: it is skipped whole.
_FATAL: Final = ("too_large", "bad_gzip", "not_well_formed", "wrong_root")


@dataclass(slots=True, frozen=True)
class SitemapToRead:
    """A sitemap to read."""

    url: str  # crawl space: where it is fetched
    named: bool  # named by the site (robots.txt, an index); False: a guess, whose 404 is news
    level: int = 0  # 1: named by an index, whose own children are not read


@dataclass(slots=True)
class SitemapRead:
    """What one sitemap file says: the URLs of a urlset or text sitemap, or the sitemaps of
    an index (as written), or why it is skipped whole."""

    kind: str  # "urlset", "sitemapindex", "text" or "unknown"
    locs: list[str] = field(default_factory=list)
    problem: str | None = None  # set: skipped
    invalid: int = 0  # locs that are not absolute http(s) URLs, left out


def where(raw: str, plan: Plan) -> tuple[str | None, str]:
    """The crawl-space URL of a sitemap named by the site, or None and why it is not read: only
    sitemaps on the crawled origin are (one under --public-url's folder is fetched from the
    crawled server), as the crawl sends no request anywhere else."""
    try:
        url = plan.to_crawl(normalize(raw))
    except InvalidURLError as exc:
        return None, str(exc)
    origin = _crawled_origin(plan)
    if not url.startswith(origin + "/"):
        if plan.identity:
            return None, f"not on the crawled origin {origin}"
        return None, f"neither under {plan.origins.public.root} nor on the crawled server"
    return url, ""


def _crawled_origin(plan: Plan) -> str:
    """scheme://host[:port] of the crawled server, without a slash."""
    crawl = plan.origins.crawl
    return crawl.root[: len(crawl.root) - len(crawl.prefix)]


def sources(
    named: tuple[str, ...], plan: Plan, robots: RobotsTxt, user_agent: str
) -> tuple[list[SitemapToRead], list[str]]:
    """The sitemaps to read, and a note for each one left out. The robots.txt `Sitemap:`
    lines, else the guesses: /sitemap.xml, and the start folder's when that is another.
    Each obeys robots.txt like a page: the crawl requests nothing robots.txt forbids it."""
    found: list[SitemapToRead] = []
    notes: list[str] = []
    if named:
        candidates = [(raw, True) for raw in named]
    else:
        origin = _crawled_origin(plan)
        guesses = dict.fromkeys((origin + "/sitemap.xml", plan.origins.crawl.root + "sitemap.xml"))
        candidates = [(guess, False) for guess in guesses]
    for raw, is_named in candidates:
        url, why = where(raw, plan)
        if url is None:
            notes.append(f"seed sitemap {raw}: {why}: skipped")
            continue
        verdict = robots.verdict(url, user_agent)
        if not verdict.allowed:
            line = f" (line {verdict.line})" if verdict.line else ""
            rule = f"{verdict.rule}{line}"
            notes.append(f"seed sitemap {plan.public(url)}: robots.txt forbids it ({rule})")
            continue
        if all(source.url != url for source in found):
            found.append(SitemapToRead(url, is_named))
    return found, notes


def read_body(
    body: bytes, content_type: str = "", max_bytes: int = MAX_SITEMAP_BYTES
) -> SitemapRead:
    """Read one sitemap's bytes (urlset, index or text; gzipped or not) with sitemap_out's
    bounded reader. Its locs are normalized; an entry that is no URL is counted, not kept."""
    from sitemap_out.reader import read_sitemap  # here: most crawls read no sitemap

    result = read_sitemap(body, max_bytes=max_bytes)
    read = SitemapRead(result.kind)
    fatal = next((p for p in result.problems if p.code in _FATAL), None)
    if fatal is not None:
        read.problem = _why(fatal.code, fatal.message, fatal.line, content_type, max_bytes)
        return read
    seen: set[str] = set()
    for entry in result.entries:
        try:
            loc = normalize(entry.loc)
        except InvalidURLError:
            read.invalid += 1
            continue
        if loc not in seen:
            seen.add(loc)
            read.locs.append(loc)
    if not read.locs:
        read.problem = (
            f"none of its {read.invalid} entries is an absolute http(s) URL"
            if read.invalid
            else "it lists nothing"
        )
    return read


def _why(code: str, message: str, line: int | None, content_type: str, max_bytes: int) -> str:
    at = f" (line {line})" if line else ""
    if code == "too_large":
        return f"more than {max_bytes} bytes uncompressed, the protocol's limit"
    if code == "bad_gzip":
        return message
    if content_type.split(";", 1)[0].strip().lower() in ("text/html", "application/xhtml+xml"):
        return "an HTML page, not a sitemap"
    if code == "wrong_root":
        return f"not a sitemap: its {message}{at}"
    return f"not XML{at}"
