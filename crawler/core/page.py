"""One fetched response, analysed: the facts the crawl decides a page on. Pure.

`analyse` is the one way from a response to those facts, called by the crawl's own process and
by its worker processes alike (crawler.shell.pages), so a new per-page fact is added here once:
the directives of the header and of the page, the canonical, the links to follow (resolved
and normalised), and the key that finds byte-identical twins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from multidict import CIMultiDict, CIMultiDictProxy

from crawler.core.decide import HTML_TYPES
from crawler.core.directives import (
    NO_DIRECTIVES,
    Directives,
    header_directives,
    link_header_canonical,
)
from crawler.core.extract import digest_page, parse_content_type
from crawler.core.urls import resolve, resolve_links

__all__ = ["PagePolicy", "PageResult", "analyse"]

Headers = CIMultiDictProxy[str] | CIMultiDict[str]


@dataclass(slots=True, frozen=True)
class PagePolicy:
    """The settings that change what a page says (the crawl's config, in short)."""

    agent: str  # the robots.txt product token: meta and header directives for us
    follow_nofollow: bool = False
    strip_params: tuple[str, ...] = ()
    content: bool = False  # the content blocks too (a crawl keeping a history, for lastmods)


@dataclass(slots=True)
class PageResult:
    """What a final (not redirecting) response says about its page."""

    mime: str  # the Content-Type's type/subtype, lower-cased; "" when there is none
    header: Directives = NO_DIRECTIVES  # X-Robots-Tag (a 200 answer's only)
    meta: Directives = NO_DIRECTIVES  # robots <meta> (HTML only)
    canonical: str | None = None  # resolved and normalised: the HTML link, else the header's
    # links to follow, resolved and normalised, each once, in document order (hreflang last)
    targets: list[str] = field(default_factory=list)
    body_key: int | None = None  # 64 bits of the body's sha256 (HTML only): finds twins
    # the main content's text blocks, 32-bit hashes packed (HTML only): the content
    # fingerprint behind honest lastmods (crawler.core.lastmod)
    blocks: bytes | None = None
    # a 304 to a conditional request: no body, so the engine fills in the page from the
    # crawl's history; header and canonical hold what the 304's own headers say, if anything
    not_modified: bool = False


def analyse(
    url: str,
    status: int,
    headers: Headers,
    body: bytes,
    truncated: bool,
    policy: PagePolicy,
    known: Mapping[str, object] | None = None,
) -> PageResult:
    """The facts of the response to url. Only a complete 200 answer has directives, links
    and a body key: a page cut at max_page_bytes is judged too large, not read in part.

    `known`: URLs known to be normalised (the crawl's seen set, or a worker's memory), so
    that a link joining to one of them skips normalisation; the result is the same without.
    """
    mime, _ = parse_content_type(headers.get("Content-Type"))
    if status == 304:  # RFC 9110 15.4.5: a 304 may repeat the headers a 200 would carry
        header = header_directives(headers.getall("X-Robots-Tag", ()), policy.agent)
        raw = link_header_canonical(headers.getall("Link", ()))
        canonical = resolve(url, raw, policy.strip_params) if raw else None
        return PageResult(mime, header, canonical=canonical, not_modified=True)
    if status != 200 or truncated:
        return PageResult(mime)
    header = header_directives(headers.getall("X-Robots-Tag", ()), policy.agent)
    if mime not in HTML_TYPES:
        return PageResult(mime, header)
    strip = policy.strip_params
    page = digest_page(
        body, headers.get("Content-Type"), url, policy.agent, policy.follow_nofollow, policy.content
    )
    canonical = resolve(page.base, page.canonical, strip) if page.canonical else None
    if canonical is None:
        raw = link_header_canonical(headers.getall("Link", ()))
        canonical = resolve(url, raw, strip) if raw else None
    targets = resolve_links(page.base, page.hrefs, strip, known or {})
    return PageResult(
        mime, header, page.directives, canonical, targets, page.body_key,
        page.blocks if policy.content else None,
    )  # fmt: skip
