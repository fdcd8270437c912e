"""Indexing directives a page gives about itself: robots meta tags, X-Robots-Tag, Link headers.

Pure functions over strings the fetcher already has. The crawler only needs two bits per page
(may it be listed, may its links be followed), plus a human-readable note of *why*, so a sitemap
that silently lost a page can be explained in the crawl report.

Parsing is deliberately lenient in the direction of obeying the site: a directive written a
little wrong (``NOINDEX``, ``noindex nofollow`` without a comma) is still honoured, because
listing a page its owner tried to hide is worse than missing one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from crawler import PRODUCT_TOKEN

__all__ = [
    "Directives",
    "header_directives",
    "link_header_alternates",
    "link_header_canonical",
    "meta_directives",
]

# Directives that carry a value after a colon. Their names must not be read as user agents in
# the ``agent: directive`` form of X-Robots-Tag (``max-snippet: 10`` is not a bot called
# "max-snippet"). Includes the Bing/Yandex spellings seen in the wild.
_VALUE_DIRECTIVES = frozenset(
    {
        "unavailable_after",
        "unavailable-after",
        "max-snippet",
        "max-image-preview",
        "max-video-preview",
    }
)
# Directives without a value. Listed so that ``noindex: ...`` is never taken for an agent.
_FLAG_DIRECTIVES = frozenset(
    {
        "all",
        "index",
        "follow",
        "noindex",
        "nofollow",
        "none",
        "noarchive",
        "nocache",
        "nosnippet",
        "noimageindex",
        "notranslate",
        "indexifembedded",
        "noodp",
        "noydir",
    }
)
_KNOWN_DIRECTIVES = _VALUE_DIRECTIVES | _FLAG_DIRECTIVES

# A user-agent product token: no spaces, so the tail of a date split at a comma
# ("25 Jun 2010 15:00:00 GMT") can never pose as an agent name.
_AGENT_RE = re.compile(r"[A-Za-z0-9_.\-]+")
# Tokens inside one directive list: commas per the spec, whitespace tolerated.
_SPLIT_RE = re.compile(r"[,\s]+")
# ASCII-only lower-casing: directive names are ASCII, and str.lower() would fold look-alikes
# such as U+212A KELVIN SIGN into ASCII letters.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(value: str) -> str:
    """Lower-case ASCII letters only, as HTML and HTTP compare names."""
    return value.lower() if value.isascii() else value.translate(_ASCII_LOWER)


@dataclass(frozen=True, slots=True)
class Directives:
    """What a page says about itself. ``source`` explains the restriction for the crawl report,
    e.g. ``meta robots "noindex, follow"``; it is empty when nothing restricts the page."""

    noindex: bool = False
    nofollow: bool = False
    source: str = ""
    # (engine, source) of each noindex (or none) addressed by name to a search engine that
    # reads the sitemap (search_engines), e.g. ("googlebot", 'meta googlebot "noindex"'):
    # it does not bind us, but that engine will not index the page, so it is not listed
    engines: tuple[tuple[str, str], ...] = ()

    def merge(self, other: Directives) -> Directives:
        """Combine meta and header directives: the most restrictive wins, as Google applies them."""
        if other == NO_DIRECTIVES:
            return self
        if self == NO_DIRECTIVES:
            return other
        source = "; ".join(s for s in (self.source, other.source) if s)
        return Directives(
            self.noindex or other.noindex,
            self.nofollow or other.nofollow,
            source,
            self.engines + other.engines,
        )

    def engine_noindex(self) -> tuple[str, str] | None:
        """The first search engine this says noindex to by name, and where it says so."""
        return self.engines[0] if self.engines else None


NO_DIRECTIVES = Directives()


def _flags(tokens: Iterable[str]) -> tuple[bool, bool]:
    noindex = nofollow = False
    for token in tokens:
        if token == "noindex":
            noindex = True
        elif token == "nofollow":
            nofollow = True
        elif token == "none":
            noindex = nofollow = True
    return noindex, nofollow


def meta_directives(
    tags: Iterable[tuple[str | None, str | None]],
    agent: str = PRODUCT_TOKEN,
    engines: tuple[str, ...] = (),
) -> Directives:
    """Combine ``<meta name content>`` pairs that address robots in general or ``agent``.

    Names of other bots are ignored (they restrict only that bot), but for the search
    `engines` (lower-case product tokens): a noindex addressed to one of them goes in
    ``engines``, since that engine will not index the page.
    """
    ours = _token(agent)
    found: list[tuple[bool, bool, str]] = []
    told: list[tuple[str, str]] = []
    for raw_name, content in tags:
        if not raw_name or not content:
            continue
        name = ascii_lower(raw_name.strip())
        if name != "robots" and name != ours:
            if name in engines:
                noindex, _ = _flags(_SPLIT_RE.split(ascii_lower(content)))
                if noindex:
                    told.append((name, f'meta {name} "{content.strip()}"'))
            continue
        found.append(
            (*_flags(_SPLIT_RE.split(ascii_lower(content))), f'meta {name} "{content.strip()}"')
        )
    if not found and not told:
        return NO_DIRECTIVES  # most pages: their metas (viewport, description) say nothing
    return _combine(found, told)


@functools.lru_cache(maxsize=16)
def _token(agent: str) -> str:
    """The agent's product token as meta names are compared (a crawl has one: every page
    with a <meta name> asks)."""
    return ascii_lower(agent.strip())


def _header_flags(
    value: str, ours: str, engines: tuple[str, ...] = ()
) -> tuple[bool, bool, list[str]]:
    """One X-Robots-Tag value: (noindex, nofollow) for us, and the search `engines` it says
    noindex to by name. ``agent: directives`` switches the agent for the rest of the
    value, so both ``googlebot: noindex, nofollow`` and headers a proxy joined with commas
    (``noindex, googlebot: nofollow``) are read as written."""
    noindex = nofollow = False
    told: list[str] = []
    agent: str | None = None
    for item in value.split(","):
        name, colon, rest = item.partition(":")
        if colon:
            key = ascii_lower(name.strip())
            if key in _KNOWN_DIRECTIVES:
                rest = item  # "max-snippet: 10", "unavailable_after: <date>": a directive
            elif _AGENT_RE.fullmatch(key):
                agent = key
            else:
                continue  # e.g. the time part of a date that contained a comma
        else:
            rest = item
        ni, nf = _flags(_SPLIT_RE.split(ascii_lower(rest)))
        if agent is not None and agent != ours:
            if ni and agent in engines and agent not in told:
                told.append(agent)
            continue
        noindex |= ni
        nofollow |= nf
    return noindex, nofollow, told


def header_directives(
    values: Iterable[str], agent: str = PRODUCT_TOKEN, engines: tuple[str, ...] = ()
) -> Directives:
    """Combine every ``X-Robots-Tag`` header of a response (pass them all, in order).
    `engines`: as for :func:`meta_directives`."""
    ours = ascii_lower(agent.strip())
    found: list[tuple[bool, bool, str]] = []
    told: list[tuple[str, str]] = []
    for value in values:
        if not value:
            continue
        noindex, nofollow, named = _header_flags(value, ours, engines)
        source = f'X-Robots-Tag "{value.strip()}"'
        found.append((noindex, nofollow, source))
        told += [(engine, source) for engine in named]
    return _combine(found, told)


def _combine(
    found: list[tuple[bool, bool, str]], told: Sequence[tuple[str, str]] = ()
) -> Directives:
    """OR the (noindex, nofollow, source) of every tag or header that says anything; `told`:
    the (engine, source) of each noindex addressed to a search engine by name."""
    said = [(ni, nf, source) for ni, nf, source in found if ni or nf]
    if not said and not told:
        return NO_DIRECTIVES
    return Directives(
        any(s[0] for s in said),
        any(s[1] for s in said),
        "; ".join(s[2] for s in said),
        tuple(told),
    )


# RFC 8288 link-value: "<" URI-Reference ">" *( OWS ";" OWS link-param ).
_TARGET_RE = re.compile(r"[ \t]*<([^>]*)>")
_PARAM_RE = re.compile(
    r"""(?:[ \t]*;)+[ \t]*                                # empty parameters are tolerated
        ([^\s;,="<>]+)                                  # parameter name
        (?:[ \t]*=[ \t]*
           (?:"((?:[^"\\]|\\.)*)"                       # quoted-string
             |([^\s;,"]*)))?                            # token (leniently: anything plain)
    """,
    re.VERBOSE | re.DOTALL,
)
_VALUE_END_RE = re.compile(r"(?:[ \t]*;)*[ \t]*(?:,|$)")
_QUOTED_PAIR_RE = re.compile(r"\\(.)", re.DOTALL)
_SKIP_RE = re.compile(r'(?:[^,"]|"(?:[^"\\]|\\.)*"?)*,?', re.DOTALL)


def _link_values(header: str) -> Iterable[tuple[str, dict[str, str]]]:
    """Yield (target, params) for each link-value; skips malformed ones up to the next comma.

    Parameter names are lower-cased; only the first occurrence of a name counts (RFC 8288 3.3
    says later ``rel`` parameters must be ignored).
    """
    pos, end = 0, len(header)
    while pos < end:
        target_match = _TARGET_RE.match(header, pos)
        if target_match is None:
            skip = _SKIP_RE.match(header, pos)
            pos = skip.end() if skip and skip.end() > pos else pos + 1
            continue
        pos = target_match.end()
        params: dict[str, str] = {}
        while (param := _PARAM_RE.match(header, pos)) is not None:
            pos = param.end()
            name = ascii_lower(param.group(1))
            if name.endswith("*"):
                continue  # RFC 8187 extended values are for titles; rel must be plain
            quoted, plain = param.group(2), param.group(3)
            value = _QUOTED_PAIR_RE.sub(r"\1", quoted) if quoted is not None else plain or ""
            params.setdefault(name, value)
        tail = _VALUE_END_RE.match(header, pos)
        if tail is None:
            skip = _SKIP_RE.match(header, pos)
            pos = skip.end() if skip and skip.end() > pos else pos + 1
            continue  # junk after the parameters: the link-value is malformed
        pos = tail.end()
        yield target_match.group(1), params


def link_header_canonical(values: Iterable[str]) -> str | None:
    """Raw target of the first ``rel="canonical"`` link in the response's ``Link`` headers.

    The target is relative to the page URL; resolving it is the caller's job. Links with an
    ``anchor`` parameter describe some other resource, so they are not this page's canonical.
    """
    for header in values:
        if not header:
            continue
        for target, params in _link_values(header):
            if "canonical" not in ascii_lower(params.get("rel", "")).split():
                continue
            if params.get("anchor"):
                continue
            target = target.strip()
            if target:
                return target
    return None


def link_header_alternates(values: Iterable[str]) -> list[tuple[str, str]]:
    """``(hreflang, raw target)`` of the ``rel="alternate"`` links with an ``hreflang`` in the
    response's ``Link`` headers (how a PDF or any non-HTML answer names its language
    versions). Targets are relative to the page URL, like :func:`link_header_canonical`'s."""
    found: list[tuple[str, str]] = []
    for header in values:
        if not header or "hreflang" not in header.lower():
            continue
        for target, params in _link_values(header):
            if "alternate" not in ascii_lower(params.get("rel", "")).split():
                continue
            if params.get("anchor"):
                continue
            hreflang = params.get("hreflang", "").strip()
            target = target.strip()
            if hreflang and target:
                found.append((hreflang, target))
    return found
