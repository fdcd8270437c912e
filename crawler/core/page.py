"""One fetched response, analysed: the facts the crawl decides a page on. Pure.

`analyse` is the one way from a response to those facts, called by the crawl's own process and
by its worker processes alike (crawler.shell.pages), so a new per-page fact is added here once:
the directives of the header and of the page, the canonical, the links to follow (resolved
and normalised), and the key that finds byte-identical twins.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Final, Protocol
from urllib.parse import urljoin

from crawler.core.decide import HTML_TYPES
from crawler.core.directives import (
    NO_DIRECTIVES,
    Directives,
    header_directives,
    link_header_alternates,
    link_header_canonical,
)
from crawler.core.media import (
    MAX_IMAGES,
    PageExtras,
    host_accepted,
    host_of,
    valid_hreflang,
)
from crawler.core.mime import parse_content_type
from crawler.core.urls import join_parts, resolve, resolve_links

if TYPE_CHECKING:
    from crawler.core.extract import PageDigest

__all__ = ["PagePolicy", "PageResult", "analyse"]


class Headers(Protocol):
    """A response's headers as the core reads them: any case-insensitive multi-mapping with
    these two methods (the shell's transport gives aiohttp's; tests, a plain one of theirs).
    The core names no I/O library's type."""

    def get(self, key: str, /) -> str | None: ...

    def getall(self, key: str, default: tuple[()], /) -> list[str] | tuple[()]: ...


@dataclass(slots=True, frozen=True)
class PagePolicy:
    """The settings that change what a page says (the crawl's config, in short)."""

    agent: str  # the robots.txt product token: meta and header directives for us
    follow_nofollow: bool = False
    strip_params: tuple[str, ...] = ()
    images: bool = True  # collect the images each page shows (image sitemap)
    image_hosts: tuple[str, ...] = ()  # hosts images may live on; () = the page's and below
    content: bool = False  # the content blocks too (a crawl keeping a history, for lastmods)
    # the search engines reading the sitemap (lower-case product tokens): the meta and header
    # directives addressed to them by name are read too (Directives.engines)
    engines: tuple[str, ...] = ()
    about: bool = False  # the page's title and description too (llms.txt)


@dataclass(slots=True)
class PageResult:
    """What a final (not redirecting) response says about its page."""

    mime: str  # the Content-Type's type/subtype, lower-cased; "" when there is none
    header: Directives = NO_DIRECTIVES  # X-Robots-Tag (a 200 answer's only)
    meta: Directives = NO_DIRECTIVES  # robots <meta> (HTML only)
    canonical: str | None = None  # resolved and normalised: the HTML link, else the header's
    # links to follow, resolved and normalised, each once, in document order (hreflang last)
    # (a revived page's: crawler.core.history.HistoryLinks, named when asked)
    targets: Sequence[str] = field(default_factory=list)
    body_key: int | None = None  # 64 bits of the body's sha256 (HTML only): finds twins
    # images, hreflang alternates, videos, publication time: the sitemap extensions' facts
    extras: PageExtras | None = None
    # the main content's text blocks, 32-bit hashes packed (HTML only): the content
    # fingerprint behind honest lastmods (crawler.core.lastmod)
    blocks: bytes | None = None
    # a 304 to a conditional request: no body, so the engine fills in the page from the
    # crawl's history; header and canonical hold what the 304's own headers say, if anything
    not_modified: bool = False
    # a redirect stub (crawler.core.stubs): where it sends the browser (resolved and
    # normalised, another URL than the page's) and how, e.g. "meta refresh (0 s)"
    moved_to: str | None = None
    moved_by: str = ""
    # the URLs only its rel=nofollow links lead to (resolved and normalised, each once; none
    # of them among targets): not followed, but met (the decision `nofollow`)
    nofollow: Sequence[str] = field(default_factory=list)
    # the canonical is the HTML link's (a 304 cannot override it; its Link header can the
    # header's): the precedence a revived page keeps (crawler.core.history.revive)
    canonical_in_html: bool = False


#: A 304 whose headers name no type, X-Robots-Tag nor Link canonical (every 304 of a usual
#: unchanged night): one record for them all, not one made a page (about 3,900 instructions
#: each, #26). A bodiless answer's record is only read: revive() takes its three facts into
#: a page of its own, and a page judged from it (a 304 with no history to revive it from)
#: is read, never changed (fields are set only on records made for the purpose: analyse's
#: own, a render's, a worker's links when there are some). Held equal to the record the
#: constructor makes by tests/test_revalidation.py.
_NOT_MODIFIED: Final = PageResult(
    "", NO_DIRECTIVES, NO_DIRECTIVES, None, [], None, None, None, True
)


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
    content_type = headers.get("Content-Type")  # read once: each look-up folds the name anew
    mime, _ = parse_content_type(content_type)
    if status == 304:  # RFC 9110 15.4.5: a 304 may repeat the headers a 200 would carry
        header = _header(headers, policy)
        raw = link_header_canonical(headers.getall("Link", ()))
        canonical = resolve(url, raw, policy.strip_params) if raw else None
        if not mime and header is NO_DIRECTIVES and canonical is None:
            return _NOT_MODIFIED  # the usual 304 (nginx's): its headers say nothing of these
        # (positional, the lists given: keywords and default factories made this
        # bodiless answer's record twice as dear, and every 304 makes one, #26)
        return PageResult(mime, header, NO_DIRECTIVES, canonical, [], None, None, None, True)
    if status != 200 or truncated:
        return PageResult(mime)
    header = _header(headers, policy)
    links = headers.getall("Link", ())
    header_alternates = link_header_alternates(links) if links else []
    if mime not in HTML_TYPES:
        extras = _extras(url, url, None, header_alternates, policy)
        # a Link header's alternates are links to follow, like the <link>s of a page
        targets = [href for _, href in extras.alternates] if extras is not None else []
        return PageResult(mime, header, targets=targets, extras=extras)
    # the HTML parser is imported at the first HTML page (a night of 304s parses none: #26);
    # a worker forked before the crawl has it (crawler.shell.pool.worker_processes)
    from crawler.core.extract import digest_page

    strip = policy.strip_params
    page = digest_page(
        body,
        content_type,
        url,
        policy.agent,
        policy.follow_nofollow,
        policy.images,
        policy.content,
        policy.engines,
        policy.about,
    )
    canonical = resolve(page.base, page.canonical, strip) if page.canonical else None
    in_html = canonical is not None
    if canonical is None and links:
        raw = link_header_canonical(links)
        canonical = resolve(url, raw, strip) if raw else None
    hrefs = page.hrefs
    if header_alternates:
        hrefs = hrefs + [urljoin(url, href) for _, href in header_alternates]
    targets = resolve_links(page.base, hrefs, strip, known or {})
    extras = _extras(url, page.base, page, header_alternates, policy)
    blocks = page.blocks if policy.content else None
    result = PageResult(
        mime, header, page.directives, canonical, targets, page.body_key, extras, blocks
    )
    result.canonical_in_html = in_html
    if page.nofollow:
        followed = set(targets)
        nofollow = resolve_links(page.base, page.nofollow, strip, known or {})
        result.nofollow = [u for u in nofollow if u not in followed and u != url]
    if page.moved is not None:
        moved_to = resolve(page.base, page.moved[0], strip)
        if moved_to is not None and moved_to != url:  # a refresh of itself reloads it
            result.moved_to, result.moved_by = moved_to, page.moved[1]
    return result


def _header(headers: Headers, policy: PagePolicy) -> Directives:
    """The X-Robots-Tag directives for us and for the search engines (a 200's, or a 304's).
    Most answers send none: then what header_directives gives for none, without its
    per-call set-up (every page, and every 304, asks)."""
    values = headers.getall("X-Robots-Tag", ())
    if not values:
        return NO_DIRECTIVES
    return header_directives(values, policy.agent, policy.engines)


def _extras(
    url: str,
    base: str,
    page: PageDigest | None,
    header_alternates: list[tuple[str, str]],
    policy: PagePolicy,
) -> PageExtras | None:
    """The page's facts for the sitemap extensions, resolved against its base: images on
    accepted hosts (each once, at most MAX_IMAGES), alternates with a valid hreflang (each
    pair once; the others' values kept to be reported), videos, publication time. Header
    alternates resolve against the URL, the page's against its base."""
    if not header_alternates and (page is None or _plain(page)):
        return None  # the PageExtras would be empty (most pages): not built
    strip = policy.strip_params
    alternates: dict[tuple[str, str], str] = {}  # the first spelling of each value
    bad: list[str] = []
    raw_alternates = [(url, pair) for pair in header_alternates]
    if page is not None:
        raw_alternates += [(base, pair) for pair in page.alternates]
    joins = join_parts(base)
    for against, (hreflang, href) in raw_alternates:
        if not valid_hreflang(hreflang):
            bad.append(hreflang[:64])
            continue
        target = None
        if against is base and not strip:
            target = _same_origin(href, base, *joins)
        if target is None:
            target = resolve(against, href, strip)
        if target is not None:
            alternates.setdefault((hreflang.lower(), target), hreflang)
    pairs = tuple((hreflang, target) for (_, target), hreflang in alternates.items())
    extras = PageExtras(alternates=pairs, bad_hreflang=tuple(bad))
    if page is not None:
        if page.images:
            page_host = host_of(url)
            hosts = policy.image_hosts
            accepted: dict[str, bool] = {}  # host -> accepted: a page's images share a few
            images: dict[str, None] = {}
            scheme, origin, folder = joins
            own = host_of(origin + "/")  # the base's host: a <base href> may name another
            own_ok = accepted[own] = host_accepted(own, page_host, hosts)
            plain = _plain_images(page.images, origin)
            if plain is not None:  # every one on the origin: the host is the base's
                images = dict.fromkeys(plain) if own_ok else {}
                if len(images) > MAX_IMAGES:
                    images = dict.fromkeys(list(images)[:MAX_IMAGES])
            for raw in page.images if plain is None else ():
                image = _same_origin(raw, base, scheme, origin, folder)
                if image is not None:
                    ok = own_ok
                else:
                    image = resolve(base, raw)
                    if image is None:
                        continue
                    host = host_of(image)
                    known = accepted.get(host)
                    if known is None:
                        known = accepted[host] = host_accepted(host, page_host, hosts)
                    ok = known
                if ok:
                    images[image] = None
                    if len(images) >= MAX_IMAGES:
                        break
            extras.images = tuple(images)
        if page.videos:
            extras.videos = tuple(video.with_urls(partial(resolve, base)) for video in page.videos)
        extras.published = page.published
        extras.title = page.title
        if page.about is not None:  # llms_txt only: a crawl without it never loads llms
            from crawler.core.llms import about_of  # (#26: 1% of a crawl's imports)

            extras.about = about_of(*page.about)
    return extras if extras else None


def _plain(page: PageDigest) -> bool:
    """Whether a page gives the sitemap extensions nothing at all."""
    if page.alternates or page.images or page.videos:
        return False
    return page.published is None and page.about is None


# what a path and query made of these is already in normal form, given no dot segment
_PLAIN_TAIL = re.compile(r"[A-Za-z0-9\-_~!$&'()*+,;=:@/?]*(?:\.[A-Za-z0-9\-_~!$&'()*+,;=:@/?]+)*")


@lru_cache(maxsize=64)
def _plain_lines(origin: str) -> re.Pattern[str]:
    """Lines each an image _same_origin joins to the origin: root-relative, or absolute on
    the origin as normalised, with a plain tail."""
    line = rf"(?:{re.escape(origin)})?/{_PLAIN_TAIL.pattern}"
    return re.compile(rf"(?:{line}\n)*{line}")


def _plain_images(raws: list[str], origin: str) -> list[str] | None:
    """What _same_origin makes of each of a page's images, tested in one match of them all
    when every one is written root-relative or absolute on the origin, plainly (a page's
    own images mostly are); None when any is not, for _same_origin and resolve() to take
    one at a time. A dozen images a page: one expression over them all costs a fraction
    of a dozen calls."""
    joined = "\n".join(raws)
    if (
        "/." in joined
        or "\n//" in joined
        or joined[:2] == "//"
        or joined.count("\n") != len(raws) - 1
        or _plain_lines(origin).fullmatch(joined) is None
    ):
        return None
    return [origin + raw if raw[:1] == "/" else raw for raw in raws]


def _same_origin(raw: str, base: str, scheme: str, origin: str, folder: str) -> str | None:
    """An image on the page's own origin, joined by string operations when the result is
    already a normalised URL (a plain path: no dot segment, escape, fragment or odd
    character); None for the others, which take resolve(). Images are many per page and
    most are written plainly; resolve() normalises each unique URL from scratch. An absolute
    URL that starts with the origin exactly as normalised is joined the same way (og:image
    and hreflang links are written absolute)."""
    if raw[:1] == "/":
        if raw[1:2] == "/":
            return None  # another host, maybe
        tail = raw
    elif raw.startswith(origin) and raw[len(origin) : len(origin) + 1] == "/":
        tail = raw[len(origin) :]  # absolute, on the origin as normalised (og:image, hreflang)
    elif ":" in raw or raw[:1] in ".?#":
        return None
    else:
        tail = folder[len(origin) :] + raw
    if "/." in tail or _PLAIN_TAIL.fullmatch(tail) is None:
        return None
    return origin + tail
