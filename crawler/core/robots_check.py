"""`sitemap-crawler robots`: a robots.txt tester's verdicts and report, as pure functions.

A webmaster asks "may this agent fetch this URL, and which line of my robots.txt says so?";
search engines answer only inside their consoles. The shell fetches each origin's robots.txt
(or reads a file) into a :class:`RobotsSource`; everything here is plain data in, lines of text
and an exit code out, so the wording is tested without a server.

Exit codes (crawler/exit_codes.py): 0 every URL allowed, 1 one or more blocked by a rule, 3 a
robots.txt could not be read (5xx, 429, unreachable, a redirect off its origin): RFC 9309
then blocks every URL of that origin, which the report says, but "your rules block it" and
"we could not read your rules" call for different fixes, so a script can tell them apart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from crawler.core.robots import MAX_ROBOTS_BYTES, RobotsRule, RobotsTxt, UserAgentGroup, Verdict
from crawler.core.robots import product_token as _product_token
from crawler.core.words import plural
from crawler.exit_codes import Exit

__all__ = [
    "RobotsSource",
    "UrlCheck",
    "check",
    "exit_code",
    "report",
    "tester_token",
]

_BLOCK_ALL = "everything blocked until it can be read (RFC 9309)"

# a browser-style User-Agent, as search engines send and logs show: the crawler's product
# token follows "compatible;" (Mozilla/5.0 (compatible; bingbot/2.0; +http://...))
_COMPATIBLE = re.compile(r"compatible;\s*([^\s;/()]+)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class RobotsSource:
    """One robots.txt and how it was obtained: the facts a report needs, nothing live."""

    url: str  # the robots.txt URL (the last one asked, after redirects), or the file's path
    robots: RobotsTxt
    status: int | None = None  # the last HTTP status; None for no answer, or a file
    size: int = 0  # bytes received (or read from the file)
    content_type: str | None = None
    head: bytes = b""  # the body's first bytes: enough to tell HTML or binary from rules
    from_file: bool = False
    truncated: bool = False  # the fetch stopped at the cap: there was more
    notes: tuple[str, ...] = ()  # one line per retry

    @property
    def unreadable(self) -> bool:
        """RFC 9309 2.3.1.4: the rules could not be read, so every URL is blocked."""
        return self.robots.denial is not None

    def outcome(self) -> str:
        """How the fetch went, in the words the report uses for the source and its URLs."""
        if self.robots.denial is not None:
            return f"{self.robots.denial}: {_BLOCK_ALL}"
        if self.from_file:
            return f"read from the file, {self.size} bytes"
        assert self.status is not None
        if self.status >= 300:
            why = "RFC 9309: an unavailable robots.txt allows all"
            return f"robots.txt answered {self.status}: everything allowed ({why})"
        return f"HTTP {self.status}, {self.size} bytes"


@dataclass(frozen=True, slots=True)
class UrlCheck:
    """The verdict on one URL for one agent, with the group and the rules behind it."""

    url: str
    source: RobotsSource
    verdict: Verdict
    groups: tuple[UserAgentGroup, ...]
    matched: tuple[RobotsRule, ...]  # every matching rule, the deciding one first

    @property
    def allowed(self) -> bool:
        return self.verdict.allowed

    # the search engines reading the sitemap (search_engines), other than the agent tested:
    # a crawl lists the URL only if each of them may crawl it too
    engines: tuple[tuple[str, Verdict], ...] = ()


def tester_token(user_agent: str, token: str | None = None) -> tuple[str, str]:
    """The robots.txt product token a search engine would match user_agent's groups with,
    and how it was found, for the report to say. A browser-style string pasted from a log
    names its crawler after ``compatible;`` (Bing's and Google's do): its first word,
    ``Mozilla``, names no robot. `token` (--token) overrides both."""
    if token is not None and token.strip():
        return _product_token(token) or "*", "given with --token"
    found = _COMPATIBLE.search(user_agent)
    if found is not None and _product_token(found.group(1)):
        return _product_token(found.group(1)), "the product named after 'compatible;'"
    return _product_token(user_agent) or "*", "the User-Agent's first word"


def check(url: str, source: RobotsSource, token: str, engines: Sequence[str] = ()) -> UrlCheck:
    """The verdict for the product `token` (tester_token), and for each search engine."""
    robots = source.robots
    return UrlCheck(
        url,
        source,
        robots.verdict(url, token),
        robots.applied_groups(token),
        robots.matching_rules(url, token),
        tuple((engine, robots.verdict(url, engine)) for engine in engines if engine != token),
    )


def exit_code(checks: Sequence[UrlCheck]) -> int:
    if any(c.source.unreadable for c in checks):
        return Exit.NOTHING
    return Exit.OK if all(c.allowed for c in checks) else Exit.NO


def report(
    checks: Sequence[UrlCheck], user_agent: str, token: str | None = None, how: str = ""
) -> list[str]:
    """The whole report: the agent, one block per URL, one per robots.txt, a summary.
    `token` and `how`: tester_token's (by default, the User-Agent's first word)."""
    if token is None:
        token, how = tester_token(user_agent)
    said = f"robots.txt token: {token}" + (f", {how}" if how else "")
    lines = [f"user agent: {user_agent} ({said})", ""]
    for item in checks:
        lines += _url_lines(item, token)
        lines += _engine_lines(item)
    sources: list[RobotsSource] = []
    for item in checks:
        if all(item.source is not seen for seen in sources):
            sources.append(item.source)
    for source in sources:
        lines += ["", *_source_lines(source, user_agent, token)]
    lines += ["", _summary(checks)]
    return lines


def _url_lines(item: UrlCheck, token: str) -> list[str]:
    word = "allowed" if item.allowed else "BLOCKED"
    lines = [f"{item.url}  {word} for {token}"]
    source = item.source
    if source.unreadable:
        return [
            *lines,
            "  group: none (robots.txt could not be read)",
            f"  rule:  {source.outcome()}",
        ]
    if not source.from_file and source.status is not None and source.status >= 300:
        return [*lines, "  group: none (no robots.txt)", f"  rule:  none: {source.outcome()}"]
    lines.append(f"  group: {_group_text(item.groups, token)}")
    if not item.matched:
        itself = urlsplit(item.url).path == "/robots.txt"
        why = "robots.txt itself is always allowed" if itself else "allowed by default"
        lines.append(f"  rule:  none matched ({why})")
        return lines
    first = item.matched[0]
    lines.append(f"  rule:  {first.text} (line {first.line})")
    rival = next((rule for rule in item.matched[1:] if rule.allow != first.allow), None)
    if rival is not None:
        why = (
            "longer pattern wins"
            if first.specificity > rival.specificity
            else "same length: Allow wins a tie"
        )
        lines.append(f"         beats {rival.text} (line {rival.line}): {why}")
    return lines


def _engine_lines(item: UrlCheck) -> list[str]:
    """The search engines reading the sitemap that may not crawl a URL the agent may: a
    crawl lists it only if each of them may (search_engines). Said only then: a URL the
    agent may not fetch is never listed anyway."""
    if not item.allowed or item.source.unreadable:
        return []
    lines = []
    for engine, verdict in item.engines:
        if not verdict.allowed:
            where = f" (line {verdict.line})" if verdict.line else ""
            lines.append(
                f"  but:   BLOCKED for {engine} by {verdict.rule}{where}: a crawl does not "
                f"list it (search_engines)"
            )
    return lines


def _group_text(groups: Sequence[UserAgentGroup], token: str) -> str:
    """``User-agent: googlebot (line 4)``; the lines of every group merged for the token."""
    if not groups:
        return f"none (no group names {token} and there is no User-agent: *): all allowed"
    named = any(token in group.agents for group in groups)
    name = token if named else "*"
    numbers = [
        line
        for group in groups
        for agent, line in zip(group.agents, group.lines, strict=False)
        if agent == name
    ]
    where = f"line {numbers[0]}" if len(numbers) == 1 else f"lines {', '.join(map(str, numbers))}"
    text = f"User-agent: {name} ({where})"
    if not named and token != "*":
        text += f"; no group names {token}"
    return text


def _source_lines(source: RobotsSource, user_agent: str, token: str) -> list[str]:
    lines = [f"robots.txt {source.url}: {source.outcome()}"]
    lines += [f"  retried: {note}" for note in source.notes]
    if source.unreadable or (source.status is not None and source.status >= 300):
        return lines
    lines += [f"  warning: {warning}" for warning in _warnings(source)]
    delay = source.robots.crawl_delay(user_agent)
    if delay is not None:
        lines.append(f"  Crawl-delay for {token}: {delay:g} s")
    lines += [f"  Sitemap: {url}" for url in source.robots.sitemaps]
    if not source.robots.sitemaps:
        lines.append("  no Sitemap lines")
    return lines


def _warnings(source: RobotsSource) -> list[str]:
    """What makes a robots.txt read as something other than its author meant."""
    found: list[str] = []
    head = source.head.lstrip()
    kind = (source.content_type or "").split(";")[0].strip().lower()
    if kind == "text/html" or head[:1] == b"<":
        found.append(
            "this looks like an HTML page, not a robots.txt: lines that are not rules are "
            "ignored, as search engines do"
        )
    elif b"\x00" in source.head:
        found.append("this looks like binary data, not a robots.txt: most of it is ignored")
    if source.truncated or source.robots.truncated:
        found.append(
            f"larger than {MAX_ROBOTS_BYTES // 1024} KiB: only the first {MAX_ROBOTS_BYTES} "
            "bytes are read (RFC 9309), rules after them are not applied"
        )
    if not source.robots.groups and source.size:
        found.append("no User-agent group in it: everything allowed")
    for sitemap in source.robots.sitemaps:
        if not sitemap.lower().startswith(("http://", "https://")):
            found.append(
                f"Sitemap: {sitemap} is not an absolute URL: search engines ignore it "
                "(the Sitemap line must name the sitemap's full URL)"
            )
    return found


def _summary(checks: Sequence[UrlCheck]) -> str:
    blocked = sum(not c.allowed for c in checks)
    text = f"{plural(len(checks), 'URL')}: {len(checks) - blocked} allowed, {blocked} blocked"
    unread = sum(c.source.unreadable for c in checks)
    if unread:
        text += f" ({unread} of them because their robots.txt could not be read)"
    theirs = sum(c.allowed and any(not verdict.allowed for _, verdict in c.engines) for c in checks)
    if theirs:
        text += f"; {theirs} allowed but blocked for a search engine, so not listed by a crawl"
    return text
