"""Several hosts in one crawl (allowed_hosts): which other hosts' URLs are in scope. Pure.

A pattern is a host (``blog.example.com``) or ``*.`` and a host (``*.example.com``), which
matches every subdomain, at any depth, and never the bare ``example.com``: a wildcard
certificate's rule, and the operator's meaning ("the language hosts"). An allowed host's
URLs have the start URL's scheme and port, as the start URL's own scope has: another
scheme or port is another origin, which the operator did not name. The start URL's path
prefix applies on the start host only; an allowed host is in scope from its root, since
the prefix names a folder of one site, not of every site.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from crawler.core.urls import DEFAULT_PORTS, Scope, normalize_host
from crawler.errors import ConfigError, InvalidURLError

__all__ = ["AllowedHosts", "parse_host_pattern", "parse_resolve"]


def parse_host_pattern(pattern: str) -> str:
    """A pattern in normal form (lower case, punycode); ConfigError naming it when it is
    not a host or ``*.`` host (no scheme, port, path or bare ``*``)."""
    text = pattern.strip()
    wild = text.startswith("*.")
    name = text[2:] if wild else text
    if not name or any(c in name for c in "/:@*?#[] "):
        raise ConfigError(
            f"allowed_hosts: {pattern!r} is not a host or *.host pattern (no scheme, port or "
            f"path: blog.example.com, *.example.com)"
        )
    try:
        host = normalize_host(name).rstrip(".")
    except InvalidURLError as exc:
        raise ConfigError(f"allowed_hosts: {pattern!r}: {exc}") from None
    return f"*.{host}" if wild else host


@dataclass(frozen=True, slots=True)
class AllowedHosts:
    """The hosts beside the start's that a crawl may fetch and list, with the start's
    scheme and port. ``start``: the start URL's scope (its host keeps its path prefix)."""

    start: Scope
    exact: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()  # ".example.com" for *.example.com

    @classmethod
    def parse(cls, patterns: tuple[str, ...], start: Scope) -> AllowedHosts:
        exact: set[str] = set()
        suffixes: dict[str, None] = {}
        for pattern in patterns:
            host = parse_host_pattern(pattern)
            if host.startswith("*."):
                suffixes[host[1:]] = None
            else:
                exact.add(host)
        exact.discard(start.host)  # the start host keeps its own (prefixed) scope
        return cls(start, frozenset(exact), tuple(suffixes))

    def __bool__(self) -> bool:
        return bool(self.exact or self.suffixes)

    def matches(self, host: str) -> bool:
        """Whether a normalised host is an allowed one (the start host is not: it has its
        own scope)."""
        if host == self.start.host:
            return False
        return host in self.exact or any(
            host.endswith(suffix) and len(host) > len(suffix) for suffix in self.suffixes
        )

    def covers(self, url: str) -> bool:
        """Whether a normalised URL lies on an allowed host, with the start's scheme and
        port (any path)."""
        if not self:
            return False
        start = self.start
        scheme, sep, rest = url.partition("://")
        if not sep or scheme != start.scheme:
            return False
        end = rest.find("/")
        authority = rest if end < 0 else rest[:end]
        host, port = authority, ""
        colon = authority.rfind(":")
        if colon > authority.rfind("]"):
            host, port = authority[:colon], authority[colon + 1 :]
        wanted = "" if start.port == DEFAULT_PORTS[scheme] else str(start.port)
        return port == wanted and self.matches(host)


def parse_resolve(entries: tuple[str, ...]) -> dict[tuple[str, int], str]:
    """--resolve HOST:PORT:ADDRESS entries as {(host, port): address}: curl's syntax, so an
    operator's staging line carries over. ConfigError naming a bad entry."""
    pinned: dict[tuple[str, int], str] = {}
    for entry in entries:
        host, sep1, rest = entry.strip().partition(":")
        port, sep2, address = rest.partition(":")
        bad = ConfigError(
            f"resolve: {entry!r} is not HOST:PORT:ADDRESS (blog.example.com:443:10.0.0.5)"
        )
        if not (sep1 and sep2 and host and port.isdigit() and 0 < int(port) <= 65535):
            raise bad
        if address.startswith("[") and address.endswith("]"):
            address = address[1:-1]
        try:
            address = str(ipaddress.ip_address(address))
            host = normalize_host(host).rstrip(".")
        except (ValueError, InvalidURLError):
            raise bad from None
        pinned[(host, int(port))] = address
    return pinned
