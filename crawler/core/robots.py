"""robots.txt parsing and matching per RFC 9309, with Google's documented leniencies.

The module is a pure, I/O-free core: :func:`parse_robots` turns the body of a robots.txt
into an immutable :class:`RobotsTxt`, and :func:`robots_from_response` maps the outcome of
fetching it (status, body, network error) onto the RFC 9309 section 2.3.1 policy. Fetching,
following redirects and caching across crawls belong to the fetcher. A crawl judges each URL
for itself and for the search engines reading the sitemap (#24): :meth:`RobotsTxt.verdicts`
does that in one pass, agents whose groups are the same sharing one compiled matcher (#26).

Decisions worth knowing, all of them in favour of what Googlebot does (the sitemaps we emit
are read by Google and Bing, so "Googlebot may fetch it" is the useful question):

* Groups are chosen by exact, case-insensitive product-token match; the token of a
  ``User-agent`` line is the leading run of ``[a-zA-Z_-]`` in its value (RFC 9309 2.2.1's
  product-token alphabet, cut where Google's parser cuts), so ``Foo Bar`` and ``foo/1.0``
  both name ``foo``. Every group naming the token is merged (RFC 9309 2.2.1); ``*`` groups
  apply only when no group names it.
* Consecutive ``User-agent`` lines share a group. Only a line that belongs to a group
  (``Allow``, ``Disallow``, ``Crawl-delay``) ends that run; ``Sitemap``, ``Host``, unknown
  keys and unreadable lines do not, as in Google's parser (``User-agent: a`` /
  ``Foo: x`` / ``User-agent: b`` is one group for ``a`` and ``b``).
* A rule's specificity is the length of its pattern in canonical percent-encoded form; the
  longest matching rule wins and ``Allow`` wins a tie. Empty ``Allow``/``Disallow`` values
  are no rule at all, and ``/robots.txt`` itself is always allowed.
* Patterns and the URL's path+query are compared in one canonical form: ``%XX`` of an
  unreserved character is decoded, other escapes get upper-case hex, non-ASCII is UTF-8
  percent-encoded, and ASCII that is never legal in a URI (space, ``<``, ``"``, ...) is
  percent-encoded the way an HTTP client would send it. ``*`` and ``$`` in a URL are
  compared as ``%2A``/``%24`` so that a pattern can name them literally (RFC 9309 2.2.3);
  a ``$`` that does not end a pattern is a literal dollar.
* ``Allow: /dir/index.html`` (or ``index.htm``) also allows ``/dir/`` exactly, as
  Google's reference parser does.
* Leniency (Google's ``allow_frequent_typos``): keys are case-insensitive and accept the
  misspellings in ``_KEYS``; a missing colon is tolerated when the line starts with a known
  key (``Disallow /x``). A line with a colon but an unknown key is only reread that way when
  its value is one token, so prose such as ``User-agent must match: see docs`` stays inert.
* Only the first 500 KiB are parsed (RFC 9309 2.5); :attr:`RobotsTxt.truncated` records
  that a cut happened and the partial last line is dropped rather than misread.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = [
    "MAX_ROBOTS_BYTES",
    "RobotsRule",
    "RobotsTxt",
    "UserAgentGroup",
    "Verdict",
    "is_allowed",
    "parse_robots",
    "product_token",
    "robots_from_response",
]

MAX_ROBOTS_BYTES = 500 * 1024
"""RFC 9309 2.5: crawlers must parse at least 500 KiB; we parse exactly that much."""

_USER_AGENT = "user-agent"
_ALLOW = "allow"
_DISALLOW = "disallow"
_CRAWL_DELAY = "crawl-delay"
_SITEMAP = "sitemap"
_HOST = "host"

# Accepted spellings, normalised (lower case, single spaces). The typos are the ones
# Google's parser accepts; "crawl delay"/"user_agent" variants are common in the wild.
_KEYS: dict[str, str] = {
    "user-agent": _USER_AGENT,
    "useragent": _USER_AGENT,
    "user agent": _USER_AGENT,
    "user_agent": _USER_AGENT,
    "allow": _ALLOW,
    "disallow": _DISALLOW,
    "dissallow": _DISALLOW,
    "dissalow": _DISALLOW,
    "disalow": _DISALLOW,
    "diasllow": _DISALLOW,
    "disallaw": _DISALLOW,
    "crawl-delay": _CRAWL_DELAY,
    "crawldelay": _CRAWL_DELAY,
    "crawl delay": _CRAWL_DELAY,
    "crawl_delay": _CRAWL_DELAY,
    "sitemap": _SITEMAP,
    "site-map": _SITEMAP,
    "host": _HOST,
}
# The lines that belong to a group. Only these end a run of User-agent lines: Sitemap and
# Host belong to no group, and Google's parser lets unknown lines split nothing either.
_GROUP_MEMBERS = frozenset({_ALLOW, _DISALLOW, _CRAWL_DELAY})

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_WHITESPACE = re.compile(r"\s+")

# --- canonical percent-encoding ------------------------------------------------------

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Characters that are kept verbatim: unreserved plus the reserved set minus "*", "$" and
# "#" (fragments and comments are already gone; "*"/"$" are pattern syntax).
_VERBATIM = r"A-Za-z0-9\-._~:/?\[\]@!&'()+,;="
_NEEDS_WORK = re.compile(rf"[^{_VERBATIM}]")
_TOKEN = re.compile(rf"%[0-9A-Fa-f]{{2}}|[^{_VERBATIM}]")


def _encode_char(char: str) -> str:
    data = char.encode("utf-8", "surrogatepass")
    return "".join(f"%{byte:02X}" for byte in data)


def _canonical_token(match: re.Match[str]) -> str:
    token = match.group()
    if len(token) == 3:  # a %XX escape
        char = chr(int(token[1:], 16))
        return char if char in _UNRESERVED else token.upper()
    return _encode_char(token)  # covers a stray "%" too: it becomes "%25"


def _canonical(text: str) -> str:
    """Bring a path or pattern fragment to the single form in which both are compared."""
    if _NEEDS_WORK.search(text) is None:
        return text
    return _TOKEN.sub(_canonical_token, text)


# --- URL -> path+query, the string rules are matched against --------------------------

_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#]*")


# The usual URL in one call: scheme://host, then a path and query that are canonical
# already (no character needs work), up to a fragment or the end.
_PLAIN_ABSOLUTE = re.compile(rf"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#]*(/[{_VERBATIM}]*)(?:#|\Z)")


def _match_target(url: str) -> str:
    """Path plus query of ``url`` in canonical form; one regex call for the usual absolute
    URL (#26: it is judged for us and for each search engine), else :func:`_target`."""
    plain = _PLAIN_ABSOLUTE.match(url)
    return _target(url) if plain is None else plain.group(1)


def _target(url: str) -> str:
    """:func:`_match_target` the long way, for any string.

    A string starting with ``/`` is taken as a bare path (so ``//x`` is a path, not a
    network-path reference); anything else that is not ``scheme://`` goes through urlsplit.
    """
    if url.startswith("/"):
        rest = url
    else:
        match = _ABSOLUTE.match(url)
        if match is not None:
            rest = url[match.end() :]
        else:
            parts = urlsplit(url)
            rest = parts.path + (f"?{parts.query}" if parts.query else "")
    hash_at = rest.find("#")
    if hash_at >= 0:
        rest = rest[:hash_at]
    if not rest.startswith("/"):
        rest = "/" + rest
    return _canonical(rest)


# --- data ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verdict:
    """Outcome of one check, with the deciding line for the "why was this excluded" report."""

    allowed: bool
    rule: str | None
    line: int | None


@dataclass(frozen=True, slots=True)
class RobotsRule:
    """One Allow/Disallow line. ``pattern`` is canonical; ``text`` is what the site wrote."""

    allow: bool
    pattern: str
    text: str
    line: int

    @property
    def specificity(self) -> int:
        return len(self.pattern)


@dataclass(frozen=True, slots=True)
class UserAgentGroup:
    """A group: the product tokens it names (lower case) and its rules in file order."""

    agents: tuple[str, ...]
    rules: tuple[RobotsRule, ...]
    crawl_delay: float | None = None
    lines: tuple[int, ...] = ()
    """The line of each of ``agents``' ``User-agent`` lines: a tester names the group."""


@dataclass(slots=True)  # plain, not frozen: a RobotsTxt's cached value, never hashed (#26)
class _Matcher:
    """The rules that apply to one product token, compiled into a single regex.

    Alternatives are ordered by precedence (longest first, Allow before Disallow), and a
    backtracking regex tries alternatives in order, so the first alternative that matches
    is the deciding rule: one C-level call per check.
    """

    regex: re.Pattern[str] | None
    rules: tuple[RobotsRule, ...]
    crawl_delay: float | None
    verdicts: tuple[Verdict, ...]
    """One per rule, made once: a check returns the deciding rule's, allocating nothing."""

    def verdict(self, target: str) -> Verdict:
        if self.regex is None:
            return _NO_RULE
        match = self.regex.match(target)
        if match is None:
            return _NO_RULE
        return self.verdicts[match.lastindex - 1]  # type: ignore[operator]


_NO_RULE = Verdict(True, None, None)
_CACHE_LIMIT = 64


def _pattern_regex(pattern: str) -> str:
    """Regex source for one canonical pattern, immune to catastrophic backtracking.

    ``*`` matches greedily in the spec, but for patterns whose only operator is ``*`` the
    leftmost occurrence of each literal piece is always a valid choice, so each piece sits
    in an atomic group and the engine never revisits it: linear in practice, where the
    naive ``.*a.*a.*a...`` is exponential.
    """
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    pieces = [re.escape(piece) for piece in pattern.split("*")]
    head, middle = pieces[0], pieces[1:]
    if not middle:
        return head + (r"\Z" if anchored else "")
    last = middle.pop()
    out = [head, *(f"(?>.*?{piece})" for piece in middle if piece)]
    if anchored:
        out.append(f".*{last}\\Z")
    elif last:
        out.append(f"(?>.*?{last})")
    return "".join(out)


def _compile(groups: list[UserAgentGroup]) -> _Matcher:
    rules = sorted(
        (rule for group in groups for rule in group.rules),
        key=lambda rule: (-rule.specificity, not rule.allow, rule.line),
    )
    delays = [g.crawl_delay for g in groups if g.crawl_delay is not None]
    regex = None
    if rules:
        source = "|".join(f"({_pattern_regex(rule.pattern)})" for rule in rules)
        regex = re.compile(source, re.DOTALL)
    verdicts = tuple(Verdict(rule.allow, rule.text, rule.line) for rule in rules)
    return _Matcher(regex, tuple(rules), max(delays) if delays else None, verdicts)


@dataclass(frozen=True, slots=True)
class RobotsTxt:
    """A parsed robots.txt. Immutable apart from a private per-user-agent compile cache."""

    groups: tuple[UserAgentGroup, ...] = ()
    sitemaps: tuple[str, ...] = ()
    truncated: bool = False
    denial: str | None = None
    """Set by :meth:`disallow_all`: every verdict is a refusal carrying this reason."""
    _cache: dict[str, _Matcher] = field(default_factory=dict, compare=False, repr=False)
    _by_groups: dict[tuple[int, ...], _Matcher] = field(
        default_factory=dict, compare=False, repr=False
    )
    _plans: dict[tuple[str, ...], _Matcher | tuple[_Matcher, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def allow_all(cls) -> RobotsTxt:
        """No robots.txt (RFC 9309 2.3.1.3, "unavailable"): everything may be crawled."""
        return cls()

    @classmethod
    def disallow_all(cls, reason: str) -> RobotsTxt:
        """robots.txt unreachable (RFC 9309 2.3.1.4): crawl nothing, and say why."""
        return cls(denial=reason)

    def _matcher(self, user_agent: str) -> _Matcher:
        """The compiled rules for user_agent. Agents whose groups are the same (all of them
        when the file names none: the ``*`` groups) share one matcher object, so
        :meth:`verdicts` matches a URL once for all of them."""
        cache = self._cache
        matcher = cache.get(user_agent)
        if matcher is None:
            groups = self._groups_for(product_token(user_agent))
            key = tuple(id(group) for group in groups)  # self holds them: the ids stay theirs
            matcher = self._by_groups.get(key)
            if matcher is None:
                matcher = self._by_groups[key] = _compile(groups)
            if len(cache) >= _CACHE_LIMIT:
                cache.clear()
            cache[user_agent] = matcher
        return matcher

    def _groups_for(self, token: str) -> list[UserAgentGroup]:
        if token:
            named = [g for g in self.groups if token in g.agents]
            if named:
                return named
        return [g for g in self.groups if "*" in g.agents]

    def applied_groups(self, user_agent: str) -> tuple[UserAgentGroup, ...]:
        """The groups whose rules decide for ``user_agent``, in file order: those naming its
        product token (merged, RFC 9309 2.2.1), else the ``*`` groups; () when neither
        exists. For a tester saying which group applied; matching never needs it."""
        if self.denial is not None:
            return ()
        return tuple(self._groups_for(product_token(user_agent)))

    def verdict(self, url: str, user_agent: str) -> Verdict:
        """May ``user_agent`` fetch ``url`` (absolute, or a bare path), and which line says so."""
        target = _match_target(url)
        if target == "/robots.txt":
            return _NO_RULE
        if self.denial is not None:
            return Verdict(False, self.denial, None)
        # the cache's hit without a call, as _plans' below (a URL screened, a page judged)
        return (self._cache.get(user_agent) or self._matcher(user_agent)).verdict(target)

    def verdicts(self, url: str, user_agents: tuple[str, ...]) -> tuple[Verdict, ...]:
        """:meth:`verdict` for each of user_agents (ours and the search engines', #24) in one
        pass: the URL is brought to its canonical form once, and matched once per distinct
        set of groups, not once per agent."""
        target = _match_target(url)
        if target == "/robots.txt":
            return (_NO_RULE,) * len(user_agents)
        if self.denial is not None:
            return (Verdict(False, self.denial, None),) * len(user_agents)
        plan = self._plans.get(user_agents) or self._plan(user_agents)
        if isinstance(plan, _Matcher):
            return (plan.verdict(target),) * len(user_agents)
        return tuple(matcher.verdict(target) for matcher in plan)

    def _plan(self, user_agents: tuple[str, ...]) -> _Matcher | tuple[_Matcher, ...]:
        """The matchers of user_agents, or the one they all share."""
        each = tuple(self._matcher(agent) for agent in user_agents)
        plan = each[0] if each and all(m is each[0] for m in each) else each
        if len(self._plans) >= _CACHE_LIMIT:
            self._plans.clear()
        self._plans[user_agents] = plan
        return plan

    def shares_rules(self, user_agents: tuple[str, ...], user_agent: str) -> bool:
        """Whether each of user_agents is judged by user_agent's rules: the groups that apply
        to each (those naming its product token, else the ``*`` groups, RFC 9309 2.2.1)
        are user_agent's, so its verdict on any URL is user_agent's. The usual robots.txt
        names none of them (``User-agent: *`` alone), and then they all share one. A
        robots.txt refusing everything (`denial`) shares no verdict: no."""
        if self.denial is not None:
            return False  # nothing is allowed to anyone: no verdict to share
        plan = self._plans.get(user_agents) or self._plan(user_agents)
        return plan is (self._cache.get(user_agent) or self._matcher(user_agent))

    def matching_rules(self, url: str, user_agent: str) -> tuple[RobotsRule, ...]:
        """Every rule of the applied groups that matches ``url``, in precedence order: the
        first decides (it is :meth:`verdict`'s), the next ones are what it beat. Slow (one
        regex per rule), for a tester showing why an Allow won; crawls use the verdict."""
        target = _match_target(url)
        if target == "/robots.txt" or self.denial is not None:
            return ()
        return tuple(
            rule
            for rule in self._matcher(user_agent).rules
            if re.match(_pattern_regex(rule.pattern), target, re.DOTALL) is not None
        )

    def can_fetch(self, url: str, user_agent: str) -> bool:
        return self.verdict(url, user_agent).allowed

    def crawl_delay(self, user_agent: str) -> float | None:
        """Seconds between requests the site asks of this agent; the largest if several."""
        if self.denial is not None:
            return None
        return self._matcher(user_agent).crawl_delay


# --- parsing ---------------------------------------------------------------------------


_NOT_IN_TOKEN = re.compile(r"[^A-Za-z_-]")


def _agent_token(value: str) -> str:
    """The product token a ``User-agent`` value names, lower-cased.

    RFC 9309 2.2.1 allows only ``[a-zA-Z_-]`` in a product token; Google's parser reads a
    value up to the first other character, so sites that write ``Googlebot/2.1`` or
    ``Googlebot Images`` get the group they meant for ``googlebot``. A ``*`` alone or
    followed by whitespace is the wildcard; ``*bot`` names no agent at all.
    """
    if value[:1] == "*" and (len(value) == 1 or value[1].isspace()):
        return "*"
    return _NOT_IN_TOKEN.split(value, 1)[0].lower()


def product_token(user_agent: str) -> str:
    """The name a robots.txt group must use for this agent: ``sitemap-crawler/0.1 (...)``
    is matched as ``sitemap-crawler``.

    Cut exactly as a ``User-agent`` line is, so a configured name with characters outside
    ``[a-zA-Z_-]`` (``my.bot``, ``bot2``) still meets the group written for it (both sides
    read ``my``, ``bot``) instead of silently falling back to ``*``.
    """
    return _agent_token(user_agent.strip())


def _normal_key(key: str) -> str:
    return _WHITESPACE.sub(" ", key.strip().lower())


def _split_line(line: str) -> tuple[str, str] | None:
    """``(key, value)`` of a stripped, comment-free line; key is canonical or unknown.

    Returns None for text that is not a ``key: value`` record at all.
    """
    colon = line.find(":")
    if colon >= 0:
        key = _normal_key(line[:colon])
        if key in _KEYS:
            return _KEYS[key], line[colon + 1 :].strip()
    # Generosity: "Disallow /x", "User agent foo", "Sitemap https://...".
    words = line.split()
    for size in (2, 1):
        key = " ".join(words[:size]).lower()
        if len(words) >= size and key in _KEYS:
            rest = words[size:]
            if colon >= 0 and len(rest) != 1:
                break  # prose with a colon, e.g. "Sitemap index: see ..."
            return _KEYS[key], " ".join(rest)
    if colon >= 0:
        return _normal_key(line[:colon]), line[colon + 1 :].strip()
    return None


def _crawl_delay(value: str) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


def _canonical_pattern(value: str) -> str:
    """Canonical form of a rule value; ``*`` runs collapse and ``$`` is kept only at the end."""
    anchored = value.endswith("$")
    body = value[:-1] if anchored else value
    pieces = [_canonical(piece.replace("$", "%24")) for piece in body.split("*")]
    pattern = "*".join(pieces)
    while "**" in pattern:
        pattern = pattern.replace("**", "*")
    return pattern + ("$" if anchored else "")


def _index_html_alias(value: str) -> str | None:
    """Google: ``Allow: /d/index.htm[l]`` also allows ``/d/`` itself, as ``/d/$``."""
    slash = value.rfind("/")
    if slash >= 0 and value.startswith("/index.htm", slash):
        return value[: slash + 1] + "$"
    return None


@dataclass(slots=True)
class _GroupBuilder:
    """A group while its lines are read: frozen into a UserAgentGroup at its end."""

    agents: list[str] = field(default_factory=list)
    rules: list[RobotsRule] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)

    def build(self) -> UserAgentGroup:
        delay = max(self.delays) if self.delays else None
        return UserAgentGroup(tuple(self.agents), tuple(self.rules), delay, tuple(self.lines))


def _limit(text: str | bytes) -> tuple[str, bool]:
    """Decode and cut to 500 KiB of UTF-8, dropping a line the cut went through."""
    data = text if isinstance(text, bytes) else None
    if data is None:
        assert isinstance(text, str)
        if len(text) * 4 <= MAX_ROBOTS_BYTES:
            return text.removeprefix("\ufeff"), False
        data = text.encode("utf-8", "surrogatepass")
    truncated = len(data) > MAX_ROBOTS_BYTES
    if truncated:
        cut = data[:MAX_ROBOTS_BYTES]
        last_break = max(cut.rfind(b"\n"), cut.rfind(b"\r"))
        ends_line = data[MAX_ROBOTS_BYTES : MAX_ROBOTS_BYTES + 1] in (b"\n", b"\r")
        data = cut if ends_line else cut[: last_break + 1]
    decoded = data.decode("utf-8", "replace").removeprefix("\ufeff")
    return decoded, truncated


def parse_robots(text: str | bytes) -> RobotsTxt:
    """Parse a robots.txt body. Never raises: whatever is not a valid line is skipped."""
    body, truncated = _limit(text)
    builders: list[_GroupBuilder] = []
    sitemaps: list[str] = []
    current: _GroupBuilder | None = None
    in_agent_run = False
    for number, raw in enumerate(_LINE_BREAK.split(body), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        record = _split_line(line)
        if record is None:
            continue
        key, value = record
        if key == _USER_AGENT:
            if not in_agent_run or current is None:
                current = _GroupBuilder()
                builders.append(current)
                in_agent_run = True
            token = _agent_token(value)
            if token:
                current.agents.append(token)
                current.lines.append(number)
        elif key == _SITEMAP:
            if value and not any(c.isspace() for c in value) and value not in sitemaps:
                sitemaps.append(value)
        elif key in _GROUP_MEMBERS:
            in_agent_run = False
            if current is None:
                continue  # RFC 9309: rules before the first User-agent line belong nowhere
            if key in (_ALLOW, _DISALLOW):
                _add_rule(current, key == _ALLOW, value, number)
            elif key == _CRAWL_DELAY:
                delay = _crawl_delay(value)
                if delay is not None:
                    current.delays.append(delay)
    groups = tuple(builder.build() for builder in builders)
    return RobotsTxt(groups=groups, sitemaps=tuple(sitemaps), truncated=truncated)


def _add_rule(group: _GroupBuilder, allow: bool, value: str, line: int) -> None:
    if not value:
        return  # an empty Disallow disallows nothing; an empty Allow allows nothing new
    text = f"{'Allow' if allow else 'Disallow'}: {value}"
    group.rules.append(RobotsRule(allow, _canonical_pattern(value), text, line))
    if allow:
        alias = _index_html_alias(value)
        if alias is not None:
            group.rules.append(RobotsRule(True, _canonical_pattern(alias), text, line))


# --- fetch outcome -> policy -----------------------------------------------------------


def robots_from_response(
    status: int | None, body: bytes | None, *, error: str | None = None
) -> RobotsTxt:
    """RFC 9309 2.3.1 policy for a fetched robots.txt (after the fetcher's redirects).

    2xx is parsed. 4xx means "unavailable" (RFC 9309 2.3.1.3), so everything is allowed --
    except 429, which Google treats as a server error, and so do we. 5xx, a missing status
    (network failure, timeout) and other odd codes are "unreachable": crawl nothing. A 3xx
    here means the fetcher gave up on redirects, which RFC 9309 2.3.1.2 calls unavailable.
    """
    if status is None:
        return RobotsTxt.disallow_all(f"robots.txt unreachable: {error or 'no response'}")
    if 200 <= status < 300:
        return parse_robots(body or b"")
    if 300 <= status < 400 or (400 <= status < 500 and status != 429):
        return RobotsTxt.allow_all()
    return RobotsTxt.disallow_all(f"robots.txt answered {status}")


def is_allowed(robots_txt: str, user_agent: str, url: str) -> bool:
    """One-shot check; parse once with :func:`parse_robots` when checking many URLs."""
    return parse_robots(robots_txt).can_fetch(url, user_agent)
