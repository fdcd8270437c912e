"""URL normalisation, link resolution and crawl scope: pure functions on ``str``.

Every URL the crawler stores, compares or writes goes through :func:`normalize` (start URLs,
redirect targets) or :func:`resolve` (links found in pages), so two spellings of one page
collapse to one string and plain string operations (``==``, ``startswith``) are enough
afterwards. The rules are RFC 3986 section 6 syntax-based normalisation, restricted to what a
sitemap may list:

* only ``http`` and ``https``; scheme and host lower-cased; Unicode hosts mapped with UTS #46
  (as browsers do) and written as punycode ``xn--`` labels; IPv6 literals compressed;
* the default port (80, 443) and an empty port are dropped;
* percent-encoding normalised: ``%XX`` of an unreserved character decoded, other ``%XX``
  upper-cased, a stray ``%`` written ``%25``, and every character RFC 3986 does not allow
  there (space, ``"<>\\^`{|}``, non-ASCII, ...) UTF-8 percent-encoded. Reserved characters,
  encoded or not, are never touched, so ``%2F``, ``%26`` and ``%3D`` keep their meaning;
* dot segments removed (RFC 3986 5.2.4) after decoding, so ``%2E%2E`` counts as ``..``;
  an empty path becomes ``/``;
* the query is kept verbatim apart from percent-encoding: order is preserved and an empty
  query (``/a?``) stays distinct from no query (``/a``), as search engines treat them;
* the fragment is dropped; userinfo (``user:pw@``) is refused because a sitemap may not list
  such URLs.

:func:`normalize` is strict (it reports bad input with :class:`InvalidURLError`), while
:func:`resolve` is lenient in the way browsers are with ``href`` text and returns ``None``
for anything unusable: it never raises on page content.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final
from urllib.parse import unquote

import idna

from crawler.errors import InvalidURLError, SitemapCrawlerError

__all__ = [
    "DEFAULT_STRIP_PARAMS",
    "OriginMap",
    "OutOfScopeError",
    "Scope",
    "clear_resolve_cache",
    "known",
    "normalize",
    "normalize_host",
    "params_matching",
    "resolve",
    "strip_params",
    "url_folder",
]

DEFAULT_STRIP_PARAMS: tuple[str, ...] = (
    "jsessionid",
    "phpsessid",
    "sid",
    "utm_*",
    "gclid",
    "fbclid",
)
"""Session and tracking parameters that make one page look like many (issue #4)."""

DEFAULT_PORTS: dict[str, int] = {"http": 80, "https": 443}

RESOLVE_CACHE_SIZE = 100_000
"""Entries kept by :func:`resolve` before its memo is emptied; about 15 MB at the limit."""

JOINS_MEMOISED = 4096
"""Known joins :func:`resolve_links` adds to resolve()'s memo until it is next emptied: the
first met, which most pages link to (the navigation); about 0.8 MB."""

_MAX_CACHED_HREF = 2048  # longer hrefs are one-offs (traps, data blobs): not worth the memory


class OutOfScopeError(SitemapCrawlerError, ValueError):
    """A URL that lies outside the scope an operation requires.

    Raised by :meth:`OriginMap.to_public` so that a staging URL can never be written silently
    into a public sitemap: a bug if it reaches the CLI (an unexpected failure).
    """


# --- percent-encoding ------------------------------------------------------------------------

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PATH_SAFE = r"A-Za-z0-9\-._~!$&'()*+,;=:@/"  # RFC 3986 pchar + "/", without "%"
_PATH_CLEAN = re.compile(f"[{_PATH_SAFE}]*")
_QUERY_CLEAN = re.compile(f"[{_PATH_SAFE}?]*")
_PATH_FIX = re.compile(f"%[0-9A-Fa-f]{{2}}|[^{_PATH_SAFE}]")
_QUERY_FIX = re.compile(f"%[0-9A-Fa-f]{{2}}|[^{_PATH_SAFE}?]")


def _pct_fix(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 3:  # a well-formed %XX
        char = chr(int(text[1:], 16))
        return char if char in _UNRESERVED else text.upper()
    # A character not allowed here, including a "%" that starts no escape. Lone surrogates
    # cannot be encoded; the UnicodeEncodeError is turned into InvalidURLError by the caller.
    return "".join(f"%{byte:02X}" for byte in text.encode("utf-8"))


def _pct_normalize(text: str, clean: re.Pattern[str], fix: re.Pattern[str]) -> str:
    if clean.fullmatch(text):
        return text
    return fix.sub(_pct_fix, text)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 for an absolute path (one that starts with "/")."""
    out: list[str] = []
    segments = path.split("/")
    last = len(segments) - 1
    for i, segment in enumerate(segments[1:], start=1):
        if segment == "..":
            if out:
                out.pop()
            if i == last:
                out.append("")
        elif segment == ".":
            if i == last:
                out.append("")
        else:
            out.append(segment)
    return "/" + "/".join(out)


# --- host ------------------------------------------------------------------------------------

_ASCII_HOST = re.compile(r"(?:[a-z0-9_-]{1,63}\.)*[a-z0-9_-]{1,63}\.?")
_LABEL = re.compile(r"[a-z0-9_-]{1,63}")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0[xX][0-9A-Fa-f]*")


def _bad(url: str, reason: str) -> InvalidURLError:
    # a password given in the URL never reaches a message (the URL's userinfo is refused)
    shown = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@]*@", r"\1***@", url)
    return InvalidURLError(f"invalid URL {shown!r}: {reason}")


class _HostError(ValueError):
    """Why a host is unusable; :func:`normalize` adds the URL to the message."""


@lru_cache(maxsize=4096)
def _normalize_host(host: str) -> str:
    """Lower-case, IDNA-encode and validate a host; raises ``_HostError(reason)``."""
    if host.startswith("["):
        if not host.endswith("]"):
            raise _HostError("unterminated IPv6 literal")
        if "%" in host:
            raise _HostError(f"IPv6 zone identifiers are not allowed in {host!r}")
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
        except ValueError:
            raise _HostError(f"invalid IPv6 address {host!r}") from None
    if "%" in host:
        try:
            host = unquote(host, errors="strict")
        except UnicodeDecodeError:
            raise _HostError(f"invalid host {host!r}") from None
    if host.isascii():
        host = host.lower()
    else:
        try:
            host = idna.uts46_remap(host, std3_rules=False, transitional=False)
        except (idna.IDNAError, ValueError):
            raise _HostError(f"host {host!r} fails IDNA mapping") from None
    if not host or host == ".":
        raise _HostError("no host")
    labels = host.split(".")
    if labels[-1] == "":
        labels.pop()
    encoded: list[str] = []
    for label in labels:
        if label.isascii():
            if not _LABEL.fullmatch(label):
                raise _HostError(f"invalid host {host!r}")
            if label.startswith("xn--") and not _valid_alabel(label):
                raise _HostError(f"invalid punycode label {label!r}")
        else:
            label = "xn--" + label.encode("punycode").decode("ascii")
            if len(label) > 63:
                raise _HostError(f"host label too long in {host!r}")
        encoded.append(label)
    if _NUMERIC_LABEL.fullmatch(encoded[-1]):
        # As in browsers, a host ending in a number is an IPv4 address or nothing.
        try:
            ipaddress.IPv4Address(".".join(encoded))
        except ValueError:
            raise _HostError(f"invalid IPv4 address {host!r}") from None
    result = ".".join(encoded) + ("." if host.endswith(".") else "")
    if len(result.rstrip(".")) > 253:
        raise _HostError("host name longer than 253 characters")
    return result


def normalize_host(host: str) -> str:
    """A host name (no port) in normal form; InvalidURLError saying why it is unusable."""
    try:
        return _normalize_host(host)
    except _HostError as exc:
        raise InvalidURLError(str(exc)) from None


def _valid_alabel(label: str) -> bool:
    """Whether an ``xn--`` label is what encoding some valid Unicode label would produce."""
    try:
        decoded = label[4:].encode("ascii").decode("punycode")
        return (
            not decoded.isascii()
            and "xn--" + decoded.encode("punycode").decode("ascii") == label
            and idna.uts46_remap(decoded, std3_rules=False, transitional=False) == decoded
            and "." not in decoded
        )
    except (UnicodeError, idna.IDNAError):
        return False


# --- normalize -------------------------------------------------------------------------------

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# an IPv4 address in its one normal spelling (four decimal octets, no leading zero), which
# _normalize_host gives back as it is: a crawl of a server named by its address (a staging
# box, an intranet, the bench site on 127.0.0.1) would take the slow path for every new URL
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
# A last label that is a number in hexadecimal ("0x7f") ends in a letter but is a number to
# a browser (_NUMERIC_LABEL): the lookahead leaves it to the slow path, which refuses it.
_FAST = re.compile(
    r"(https?)://((?:[a-z0-9-]{1,63}\.)*(?!0x[0-9a-f]*[:/])[a-z0-9-]{0,62}[a-z-]"
    rf"|{_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET})(?::([1-9][0-9]{{0,4}}))?"
    rf"(/[{_PATH_SAFE}]*)(\?[{_PATH_SAFE}?]*)?"
)


def normalize(url: str) -> str:
    """Return the one canonical spelling of an absolute http(s) URL.

    Strict on purpose: surrounding whitespace, control characters, a missing or unsupported
    scheme, a missing host, userinfo, a bad port or a host that fails IDNA all raise
    :class:`InvalidURLError`. Page links go through :func:`resolve`, which is lenient.
    """
    fast = _FAST.fullmatch(url)
    if fast is not None:  # already normal, plain ASCII: by far the most common input
        scheme, host, port, path = fast.group(1, 2, 3, 4)
        if (
            "/." not in path
            and "xn--" not in host
            and len(host) <= 253
            and (port is None or (int(port) <= 65535 and int(port) != DEFAULT_PORTS[scheme]))
        ):
            return url
    return _normalize_slow(url)


def _normalize_slow(url: str) -> str:
    if _CONTROL.search(url):
        raise _bad(url, "control character")
    match = _SCHEME.match(url)
    if match is None:
        raise _bad(url, "no scheme (expected http:// or https://)")
    scheme = match.group(1).lower()
    if scheme not in DEFAULT_PORTS:
        raise _bad(url, f"unsupported scheme {scheme!r} (only http and https)")
    rest = url[match.end() :]
    if not rest.startswith("//"):
        raise _bad(url, "no host")
    rest = rest[2:]
    fragment = rest.find("#")
    if fragment >= 0:
        rest = rest[:fragment]
    end = len(rest)
    for sep in "/?":
        at = rest.find(sep)
        if 0 <= at < end:
            end = at
    authority, rest = rest[:end], rest[end:]
    query_at = rest.find("?")
    if query_at >= 0:
        path, query = rest[:query_at], rest[query_at + 1 :]
    else:
        path, query = rest, None

    if "@" in authority:
        raise _bad(url, "userinfo (user@) is not allowed: credentials go in --auth")
    if authority.startswith("["):
        close = authority.find("]")
        host, port_text = authority[: close + 1], authority[close + 1 :]
        if close < 0 or (port_text and not port_text.startswith(":")):
            raise _bad(url, "malformed IPv6 host")
        port_text = port_text[1:]
    else:
        host, _, port_text = authority.partition(":")
    if not host:
        raise _bad(url, "no host")
    try:
        host = _normalize_host(host)
    except _HostError as exc:
        raise _bad(url, str(exc)) from None
    port = ""
    if port_text:
        if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) <= 65535:
            raise _bad(url, f"bad port {port_text!r}")
        if int(port_text) != DEFAULT_PORTS[scheme]:
            port = f":{int(port_text)}"

    try:
        path = _pct_normalize(path, _PATH_CLEAN, _PATH_FIX) if path else "/"
        if query is not None:
            query = _pct_normalize(query, _QUERY_CLEAN, _QUERY_FIX)
    except UnicodeEncodeError:
        raise _bad(url, "unencodable character (lone surrogate)") from None
    if "/." in path:
        path = _remove_dot_segments(path)
    result = f"{scheme}://{host}{port}{path}"
    return result if query is None else f"{result}?{query}"


def url_folder(url: str) -> str:
    """The sitemaps.org "folder" of a URL: everything up to the last "/" of its path.

    ``https://e.com/docs/`` and ``https://e.com/docs/index.html`` both give
    ``https://e.com/docs/``; note that ``https://e.com/docs`` gives ``https://e.com/``.
    """
    url = normalize(url)
    query = url.find("?")
    return url[: url.rfind("/", 0, query if query >= 0 else len(url)) + 1]


# --- tracking parameters ---------------------------------------------------------------------


@lru_cache(maxsize=64)
def _param_matcher(patterns: tuple[str, ...]) -> re.Pattern[str]:
    globs = "|".join(re.escape(p).replace(r"\*", ".*") for p in patterns)
    return re.compile(f"(?:{globs})", re.IGNORECASE | re.DOTALL)


def strip_params(url: str, patterns: tuple[str, ...]) -> str:
    """Remove query parameters and ``;name=value`` path parameters whose name matches.

    Patterns are case-insensitive names where ``*`` matches any run of characters; names are
    compared percent-decoded, so ``utm%5Fsource`` is caught by ``utm_*``. The remaining
    parameters keep their order and their exact spelling; when none remains, the ``?`` goes
    too (a query that was empty to begin with is left alone). Works on raw or normalised,
    absolute or relative URLs; a fragment is kept.
    """
    if not patterns or ("?" not in url and ";" not in url):
        return url
    matches = _param_matcher(patterns).fullmatch
    fragment = ""
    at = url.find("#")
    if at >= 0:
        url, fragment = url[:at], url[at:]
    query: str | None = None
    at = url.find("?")
    if at >= 0:
        url, query = url[:at], url[at + 1 :]

    if ";" in url:
        start = url.find("://")
        if start >= 0:
            slash = url.find("/", start + 3)
            start = len(url) if slash < 0 else slash
        else:
            start = 0
        head, path = url[:start], url[start:]
        segments = path.split("/")
        for i, segment in enumerate(segments):
            if ";" in segment:
                first, *params = segment.split(";")
                kept = [p for p in params if not ("=" in p and matches(_name(p)))]
                if len(kept) != len(params):
                    segments[i] = ";".join([first, *kept])
        url = head + "/".join(segments)

    if query:
        params = query.split("&")
        kept = [p for p in params if not matches(_name(p))]
        if len(kept) != len(params):
            query = "&".join(kept) if kept else None
    if query is not None:
        url = f"{url}?{query}"
    return url + fragment


def params_matching(url: str, patterns: tuple[str, ...]) -> tuple[str, ...]:
    """The names of the query and ``;name=value`` path parameters of ``url`` that
    ``patterns`` match (as :func:`strip_params` would remove them), each once, as written."""
    if not patterns or ("?" not in url and ";" not in url):
        return ()
    matches = _param_matcher(patterns).fullmatch
    url = url.partition("#")[0]
    path, _, query = url.partition("?")
    params = query.split("&") if query else []
    path = path.partition("://")[2].partition("/")[2]
    for segment in path.split("/"):
        params += [p for p in segment.split(";")[1:] if "=" in p]
    names = (param.partition("=")[0] for param in params)
    return tuple(dict.fromkeys(name for name in names if name and matches(_name(name))))


def known(url: str, strip: tuple[str, ...]) -> str:
    """A URL given by the user or a sitemap (start URLs, seeds, seed sitemaps' URLs, explain)
    as the crawl knows it from a link: normalised, strip_params' parameters removed (as
    :func:`resolve` does for links), normalised again. Raises :class:`InvalidURLError`."""
    url = normalize(url)
    stripped = strip_params(url, strip)
    return url if stripped == url else normalize(stripped)


def _name(param: str) -> str:
    name = param.partition("=")[0]
    return unquote(name) if "%" in name else name


# --- resolve ---------------------------------------------------------------------------------

_C0_SPACE = "".join(map(chr, range(0x21)))  # what browsers strip around an href
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
_MISS = object()
# resolve()'s memo. The forms the origin alone decides ("/x", "//x", an absolute href):
# strip -> origin -> href -> answer, by origin first, so that resolve_links looks a page's
# hrefs up in one dict (no (context, href) tuple an entry); it holds no other form, so an
# href of another form looked up there is a miss, never another page's answer. The forms
# the folder or the whole base decides: strip -> (context, href) -> answer (a dict a folder
# or a page would cost more than the tuple: a site's query links make one a page).
_caches: dict[tuple[str, ...], dict[str, dict[str, str | None]]] = {}
_pairs: dict[tuple[str, ...], dict[tuple[str, str], str | None]] = {}
_cached = [0]  # entries in _caches and _pairs together: RESOLVE_CACHE_SIZE bounds them
_emptied = [0]  # times the memo was emptied: resolve_links then looks its memo up again
_joined = [0]  # of which resolve_links' known joins: JOINS_MEMOISED bounds them
_bases: dict[str, tuple[str, str, str, str]] = {}


def clear_resolve_cache() -> None:
    """Forget memoised resolutions (tests and benchmarks; the memo is otherwise self-bounding)."""
    _forget()
    _bases.clear()


def _forget() -> None:
    _caches.clear()
    _pairs.clear()
    _cached[0] = _joined[0] = 0
    _emptied[0] += 1


def _memo(strip: tuple[str, ...], origin: str) -> dict[str, str | None]:
    """resolve()'s memo for the hrefs whose answer `origin` alone decides."""
    origins = _caches.get(strip)
    if origins is None:
        origins = _caches[strip] = {}
    memo = origins.get(origin)
    if memo is None:
        memo = origins[origin] = {}
    return memo


def _pairs_memo(strip: tuple[str, ...]) -> dict[tuple[str, str], str | None]:
    """resolve()'s memo for the hrefs whose answer a folder or the whole base decides."""
    memo = _pairs.get(strip)
    if memo is None:
        memo = _pairs[strip] = {}
    return memo


def _room(href: str) -> bool:
    """Whether resolve()'s answer for href is kept: one entry more, the memo emptied first
    when full (so a caller looks its memo up again after)."""
    if len(href) > _MAX_CACHED_HREF:
        return False
    if _cached[0] >= RESOLVE_CACHE_SIZE:
        _forget()
    _cached[0] += 1
    return True


_AUTHORITY_END = re.compile(r"[/?#]")
_QUERY_OR_FRAGMENT = re.compile(r"[?#]")


def _base_parts(base: str) -> tuple[str, str, str, str]:
    """(scheme, origin, folder, base without query) of an absolute URL. A raw base (a
    sitemap's URL from robots.txt, a redirect's) may end its authority at a query or a
    fragment, with no path: https://example.com?x is https://example.com/?x."""
    parts = _bases.get(base)
    if parts is None:
        scheme_end = base.find(":")
        found = _AUTHORITY_END.search(base, scheme_end + 3)
        path_at = len(base) if found is None else found.start()
        found = _QUERY_OR_FRAGMENT.search(base, path_at)
        no_query = base if found is None else base[: found.start()]
        slash = no_query.rfind("/")
        folder = no_query[: slash + 1] if slash >= path_at else base[:path_at] + "/"
        parts = (base[:scheme_end].lower(), base[:path_at], folder, no_query)
        if len(_bases) >= 4096:
            _bases.clear()
        _bases[base] = parts
    return parts


def resolve(base: str, href: str, strip: tuple[str, ...] = ()) -> str | None:
    """Resolve a link against the URL it was found at (a page's, normalised; or a raw one:
    a sitemap's, a redirect's), then normalise.

    Returns ``None`` for anything that is not an http(s) URL or cannot be made one
    (``mailto:``, ``javascript:``, ``tel:``, ``data:``, a bad host, ...): page content is
    untrusted and never makes this raise. Surrounding whitespace is stripped and tabs and
    newlines inside are removed, and before the query ``\\`` counts as ``/``, as in browsers.
    ``strip`` names query/path parameters to drop first (see :func:`strip_params`).

    Results are memoised: most links on a site are the same navigation links on every page.
    The memo's context holds only what the result depends on (the origin for ``/x``, and
    for ``//x`` and an absolute href, which it contains; the folder for ``x``, the whole
    base for ``?x``), so one entry serves every page that shares it.
    """
    first = href[:1]
    if first == "/" or href.startswith(("https://", "http://")):
        origin = _base_parts(base)[1]
        result = _memo(strip, origin).get(href, _MISS)
        if result is _MISS:
            result = _resolve(base, href, strip)
            if _room(href):
                _memo(strip, origin)[href] = result
        return result  # type: ignore[return-value]
    if first > " " and first not in "?#\\" and ":" not in href:
        key = (_base_parts(base)[2], href)
    else:  # "?x", "#x", "", leading whitespace, other schemes, "http:x": may need the query
        key = (base, href)
    result = _pairs_memo(strip).get(key, _MISS)
    if result is _MISS:
        result = _resolve(base, href, strip)
        if _room(href):
            _pairs_memo(strip)[key] = result
    return result  # type: ignore[return-value]


def _resolve(base: str, href: str, strip: tuple[str, ...]) -> str | None:
    href = href.strip(_C0_SPACE)
    if "\t" in href or "\n" in href or "\r" in href:
        href = href.translate(_TAB_NEWLINE)
    at = href.find("#")
    if at >= 0:
        href = href[:at]
    if "\\" in href:
        at = href.find("?")
        at = len(href) if at < 0 else at
        href = href[:at].replace("\\", "/") + href[at:]
    scheme, origin, folder, no_query = _base_parts(base)

    match = _SCHEME.match(href)
    if match is not None:
        href_scheme = match.group(1).lower()
        if href_scheme not in DEFAULT_PORTS:
            return None
        rest = href[match.end() :]
        if href_scheme == scheme and not rest.startswith("//"):
            href = rest  # "http:g": relative, like browsers (RFC 3986 5.2.2, non-strict)
        else:
            raw = f"{href_scheme}://{rest.lstrip('/')}"
            return _finish(raw, strip)
    if href.startswith("//"):
        raw = f"{scheme}://{href.lstrip('/')}"
    elif href.startswith("/"):
        raw = origin + href
    elif not href:
        raw = base
    elif href.startswith("?"):
        raw = no_query + href
    else:
        raw = folder + href
    return _finish(raw, strip)


def _finish(raw: str, strip: tuple[str, ...]) -> str | None:
    if strip:
        raw = strip_params(raw, strip)
    try:
        return normalize(raw)
    except InvalidURLError:
        return None


# --- scope -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scope:
    """The URLs a sitemap at ``root`` may list (sitemaps.org "sitemap location" rule).

    Same scheme, host and port, and a path under ``prefix``. ``/docs2/page`` and ``/docs``
    are outside ``/docs/``. ``host`` is in normalised form (punycode, IPv6 in brackets).
    """

    scheme: str
    host: str
    port: int
    prefix: str
    root: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.scheme not in DEFAULT_PORTS:
            raise InvalidURLError(f"invalid scope: unsupported scheme {self.scheme!r}")
        if not 0 < self.port <= 65535:
            raise InvalidURLError(f"invalid scope: bad port {self.port!r}")
        if not (self.prefix.startswith("/") and self.prefix.endswith("/")):
            raise InvalidURLError(f"invalid scope: prefix {self.prefix!r} must start and end in /")
        port = "" if self.port == DEFAULT_PORTS[self.scheme] else f":{self.port}"
        root = f"{self.scheme}://{self.host}{port}{self.prefix}"
        if normalize(root) != root:
            raise InvalidURLError(f"invalid scope: {root!r} is not in normal form")
        object.__setattr__(self, "root", root)

    @classmethod
    def from_url(cls, url: str) -> Scope:
        """The scope of a sitemap whose location (or start URL) is ``url``."""
        folder = url_folder(url)
        scheme, _, rest = folder.partition("://")
        path_at = rest.find("/")
        authority, prefix = rest[:path_at], rest[path_at:]
        host, port = authority, DEFAULT_PORTS[scheme]
        colon = authority.rfind(":")
        if colon > authority.rfind("]"):
            host, port = authority[:colon], int(authority[colon + 1 :])
        return cls(scheme, host, port, prefix)

    def contains(self, url: str) -> bool:
        """Whether a normalised URL is in scope (a plain prefix test on normal forms)."""
        return url.startswith(self.root)


@dataclass(frozen=True, slots=True)
class OriginMap:
    """Crawl one origin, publish under another (a staging server behind a public name).

    Pages are fetched under ``crawl.root`` and every ``<loc>`` is written under
    ``public.root``; links a page makes to the public root lead back into the crawl.
    """

    crawl: Scope
    public: Scope

    @classmethod
    def identity(cls, scope: Scope) -> OriginMap:
        """The usual case: what is crawled is what is published."""
        return cls(scope, scope)

    @classmethod
    def from_urls(cls, crawl_url: str, public_url: str | None = None) -> OriginMap:
        crawl = Scope.from_url(crawl_url)
        return cls(crawl, crawl if public_url is None else Scope.from_url(public_url))

    @property
    def is_identity(self) -> bool:
        return self.crawl.root == self.public.root

    def to_public(self, url: str) -> str:
        """The published spelling of a crawled, normalised URL.

        Raises :class:`OutOfScopeError` for a URL outside the crawl root rather than letting
        a staging address leak into a sitemap.
        """
        crawl_root = self.crawl.root
        if not url.startswith(crawl_root):
            raise OutOfScopeError(f"URL {url!r} is outside the crawl root {crawl_root!r}")
        if crawl_root == self.public.root:
            return url
        return self.public.root + url[len(crawl_root) :]

    def to_crawl(self, url: str) -> str:
        """Send a link to the public root to the crawl root; other URLs are unchanged."""
        public_root = self.public.root
        if public_root == self.crawl.root or not url.startswith(public_root):
            return url
        return self.crawl.root + url[len(public_root) :]


# --- Links met before -------------------------------------------------------------------------


def join_parts(base: str) -> tuple[str, str, str]:
    """(scheme with its colon, origin, folder) of a normalised URL, for join_exactly()."""
    path = base.split("?", 1)[0]
    scheme = path[: path.find(":") + 1]
    origin = path[: path.find("/", len(scheme) + 2)] if path.count("/") >= 3 else path
    return scheme, origin, path[: path.rfind("/") + 1]


def join_exactly(href: str, base: str, scheme: str, origin: str, folder: str) -> str | None:
    """href joined to base by string operations, for the hrefs where that is the RFC 3986
    join (fragments dropped, leading ../ walked up); None for the others. The result is not
    normalised: the caller only uses it to look up URLs that are."""
    if "#" in href:
        href = href[: href.find("#")]
        if not href:
            return base
    first = href[:1]
    if first == "/":
        return origin + href if href[1:2] != "/" else scheme + href
    if first == ".":
        if href[:3] != "../":
            return None
        while href[:3] == "../":
            cut = folder.rfind("/", 0, len(folder) - 1)
            if cut < len(origin):
                return None
            folder, href = folder[: cut + 1], href[3:]
        first = href[:1]
    elif first == "h" and href.startswith(("http://", "https://")):
        return href
    if first and first not in "?." and ":" not in href:
        return folder + href
    return None


def resolve_links(
    base: str, hrefs: list[str], strip: tuple[str, ...], known: Mapping[str, object]
) -> list[str]:
    """resolve() for all the hrefs of a page: the URLs they lead to, each once, in
    first-seen order. The crawl's hottest loop, and fast when most lead to URLs met before.

    Navigation repeats on every page: an href whose URL the origin alone decides (``/x``,
    ``//x``, an absolute URL) is looked up first among the answers memoised for the origin
    (resolve()'s, and this loop's known joins: a per-href hash look-up, no join). Each
    other href is joined to the base by string operations when that is the exact join
    (join_exactly), and looked up in `known`, URLs known to be normalised (and stripped:
    the crawl's): a join equal to one needs no normalising (tests/test_link_fastpath.py
    proves it). Only the rest take resolve().

    `base` must be normalised (as join_parts' is; digest_page normalises a <base href>):
    the string joins are exact only from a base without dot segments or a fragment.
    """
    context = _base_parts(base)[1]  # resolve()'s for the forms the origin decides
    memo = _memo(strip, context)
    get = memo.get
    emptied = _emptied[0]
    scheme, origin, folder = join_parts(base)
    cut = folder.rfind("/", 0, len(folder) - 1)
    up = folder[: cut + 1] if cut >= len(origin) else None  # for "../x": join_exactly's
    found: dict[str, None] = {}
    for href in hrefs:
        target = get(href)
        if target is not None:
            found[target] = None
            continue
        # the forms a page's links are written in, told apart by comparisons alone (cheaper
        # than slices, startswith or a call), most common first, each joined as
        # join_exactly would: "/" then a character from "0" on (so never "//"), to the
        # origin; "../" once, to the folder above; an absolute URL as it is; "//x" to the
        # scheme, another "/x" to the origin; "#x" is the base. A join that is no known URL
        # (a fragment, a backslash, dot segments left, a URL new to the crawl) takes
        # join_exactly, then resolve(), as every other form does. A known join of a form
        # the origin decides (`shared`) is memoised, the first JOINS_MEMOISED of them.
        if "/0" <= href < "0":
            joined = origin + href
            shared = True
        elif "../" <= href < "..0" and up is not None:
            joined, shared = up + href[3:], False
        elif "h" <= href < "i":
            joined, shared = href, True  # a known URL is absolute: decided by no base
        elif "/" <= href < "/0":
            joined = scheme + href if href[1:2] == "/" else origin + href
            shared = True
        elif "#" <= href < "$":
            joined, shared = base, False
        elif "mailto:" <= href < "mailto;":
            continue  # resolve() has nothing for another scheme than http(s)
        else:
            joined, shared = "", False  # no normalised URL
        if joined in known:
            found[joined] = None
            if shared and _joined[0] < JOINS_MEMOISED and _room(href):
                _joined[0] += 1
                if _emptied[0] != emptied:  # _room emptied it, full: look it up again
                    emptied = _emptied[0]
                    memo = _memo(strip, context)
                    get = memo.get
                memo[href] = joined
            continue
        candidate = join_exactly(href, base, scheme, origin, folder)
        if candidate is not None and candidate in known:
            found[candidate] = None
            continue
        target = resolve(base, href, strip)
        if _emptied[0] != emptied:  # resolve() emptied the memo: look it up again
            emptied = _emptied[0]
            memo = _memo(strip, context)
            get = memo.get
        if target is not None:
            found[target] = None
    return list(found)


#: The URLs a worker's LinkResolver keeps before it forgets them all (bounding its memory)
RESOLVER_CAPACITY: Final = 200_000


class LinkResolver:
    """resolve_links() with a memory of its own, for a worker process, which has no seen set:
    the URLs it has produced are the URLs it knows to be normalised.

    URLs the crawl has `settle`d (judged for good, and not broken: a link to one changes
    nothing) are left out of the answer, so they never cross back to the crawl again. All
    is forgotten when `capacity` URLs are known, bounding the memory; forgetting costs only
    speed (settled URLs are sent again, and the crawl ignores them as before).
    """

    __slots__ = ("_capacity", "known")

    def __init__(self, capacity: int = RESOLVER_CAPACITY) -> None:
        self._capacity = capacity
        # URL produced -> UNSETTLED, or the depth below which a link to it still matters
        # (0: none does; a listing that may have twins: its depth, which a closer link lowers)
        self.known: dict[str, int] = {}

    def settle(self, urls: list[str], depths: list[int]) -> None:
        known = self.known
        if len(known) + len(urls) > self._capacity:
            known.clear()
        known.update(zip(urls, depths, strict=True))

    def remember(self, targets: Sequence[str]) -> None:
        """Remember targets as produced, as unsettled() does, for a worker that sends every
        link back (pool.Settings.all_links) and so has no use for the filter: resolve_links
        still finds its next pages' links among them instead of normalising each again
        (#26: without it, 8.5% of a first night's samples were the worker's resolve())."""
        known = self.known
        for target in targets:
            if target not in known:
                if len(known) >= self._capacity:
                    known.clear()
                known[target] = UNSETTLED

    def unsettled(self, targets: Sequence[str], depth: int) -> list[str]:
        """The targets a link at `depth` still matters to, remembering them all as produced."""
        known = self.known
        met = known.get
        kept = []
        for target in targets:
            settled = met(target)
            if settled is None:
                if len(known) >= self._capacity:
                    known.clear()
                known[target] = UNSETTLED
                kept.append(target)
            elif settled == UNSETTLED or depth < settled:  # link_matters, inlined: a call
                kept.append(target)  # a link in the worker's hottest loop
        return kept


#: LinkResolver.known's value for a URL produced but not settled
UNSETTLED = -1


def link_matters(settled: int, depth: int) -> bool:
    """Whether a link found `depth` links from the start may change something for a URL
    settled at `settled`: not settled (UNSETTLED; also a URL judged broken, whose late
    referrers count), or settled deeper (a listing that may have twins, ranked by the
    closest link). The one rule behind LinkResolver (a worker's links, by name) and
    crawler.shell.settled (a revived page's, by id)."""
    return settled == UNSETTLED or depth < settled
