"""Property-based tests for crawler.core.robots (hypothesis)."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from crawler.core.robots import parse_robots

UA = "sitemap-crawler/0.1"
UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"

# A small alphabet makes collisions between patterns and paths likely, which is where the
# interesting cases are; none of these characters is changed by canonicalisation.
paths = st.text(alphabet="ab/", max_size=12).map(lambda s: "/" + s)
patterns = st.builds(
    lambda body, anchored: "/" + body + ("$" if anchored else ""),
    st.text(alphabet="ab/*", max_size=8),
    st.booleans(),
)


def reference_match(pattern: str, path: str) -> bool:
    """Google's reference algorithm (robots.cc Matches): the set of reachable positions."""
    positions = {0}
    for index, char in enumerate(pattern):
        if char == "$" and index == len(pattern) - 1:
            return len(path) in positions
        if char == "*":
            positions = set(range(min(positions), len(path) + 1))
        else:
            positions = {p + 1 for p in positions if p < len(path) and path[p] == char}
            if not positions:
                return False
    return True


def group(*lines: str) -> str:
    return "User-agent: *\n" + "".join(f"{line}\n" for line in lines)


@settings(max_examples=500)
@given(patterns, paths)
def test_matching_agrees_with_the_reference_algorithm(pattern: str, path: str) -> None:
    robots = parse_robots(group(f"Disallow: {pattern}"))
    assert robots.can_fetch(path, UA) is not reference_match(pattern, path)


@given(patterns, paths, st.booleans())
def test_allow_and_disallow_of_the_same_pattern_allows(
    pattern: str, path: str, allow_first: bool
) -> None:
    lines = [f"Allow: {pattern}", f"Disallow: {pattern}"]
    if not allow_first:
        lines.reverse()
    assert parse_robots(group(*lines)).can_fetch(path, UA)


@given(paths, st.data())
def test_the_longer_matching_rule_decides(path: str, data: st.DataObject) -> None:
    assume(len(path) >= 2)
    short = data.draw(st.integers(1, len(path) - 1))
    long = data.draw(st.integers(short + 1, len(path)))
    short_allows, long_allows = data.draw(st.booleans()), data.draw(st.booleans())
    long_pattern = path[:long]
    if data.draw(st.booleans()):  # a wildcard rule of the same length competes just as well
        long_pattern = "/*" + path[2:long] if long > 2 else long_pattern
    lines = [
        f"{'Allow' if short_allows else 'Disallow'}: {path[:short]}",
        f"{'Allow' if long_allows else 'Disallow'}: {long_pattern}",
    ]
    if data.draw(st.booleans()):
        lines.reverse()
    verdict = parse_robots(group(*lines)).verdict(f"https://site.test{path}", UA)
    assert verdict.allowed is long_allows
    assert verdict.rule == f"{'Allow' if long_allows else 'Disallow'}: {long_pattern}"


@given(st.lists(st.tuples(st.booleans(), patterns), max_size=8), paths, st.randoms())
def test_rule_order_in_the_file_does_not_matter(
    rules: list[tuple[bool, str]], path: str, random: object
) -> None:
    lines = [f"{'Allow' if allow else 'Disallow'}: {pattern}" for allow, pattern in rules]
    before = parse_robots(group(*lines)).can_fetch(path, UA)
    random.shuffle(lines)  # type: ignore[attr-defined]
    assert parse_robots(group(*lines)).can_fetch(path, UA) is before


def _encode_some(text: str, which: list[bool], upper: bool) -> str:
    out = []
    for char, encode in zip(text, which, strict=False):
        if encode:
            escape = f"%{ord(char):02X}"
            out.append(escape if upper else escape.lower())
        else:
            out.append(char)
    return "".join(out) + text[len(which) :]


@given(
    st.text(alphabet=UNRESERVED, min_size=1, max_size=10),
    st.lists(st.booleans(), max_size=10),
    st.lists(st.booleans(), max_size=10),
    st.booleans(),
)
def test_encoded_and_decoded_unreserved_characters_match_the_same(
    text: str, in_pattern: list[bool], in_url: list[bool], upper: bool
) -> None:
    pattern = "/" + _encode_some(text, in_pattern, upper) + "$"
    url = "https://site.test/" + _encode_some(text, in_url, not upper)
    robots = parse_robots(group(f"Disallow: {pattern}"))
    assert not robots.can_fetch(url, UA)
    assert robots.can_fetch(url + "x", UA)


@given(st.text(max_size=30), st.text(max_size=30))
def test_url_forms_are_equivalent_after_canonicalisation(raw: str, extra: str) -> None:
    robots = parse_robots(group("Disallow: /*%25", "Allow: /a", "Disallow: /*é$"))
    path = "/" + raw.replace("#", "")
    assert robots.can_fetch(path, UA) is robots.can_fetch(f"http://h.test{path}#{extra}", UA)


@given(st.text(max_size=400), st.text(max_size=60), st.text(max_size=30))
def test_arbitrary_text_never_raises(text: str, url: str, user_agent: str) -> None:
    robots = parse_robots(text)
    verdict = robots.verdict(url, user_agent)
    assert isinstance(verdict.allowed, bool)
    robots.crawl_delay(user_agent)
    assert all(isinstance(sitemap, str) for sitemap in robots.sitemaps)


@given(st.binary(max_size=400), st.text(max_size=60))
def test_arbitrary_bytes_never_raise(body: bytes, url: str) -> None:
    assert isinstance(parse_robots(body).can_fetch(url, UA), bool)


@given(
    st.lists(
        st.sampled_from(
            ["User-agent: *", "User-agent: sitemap-crawler", "Allow:", "Disallow:", "Sitemap:"]
        ).flatmap(lambda key: st.text(max_size=15).map(lambda value: f"{key} {value}")),
        max_size=12,
    ),
    st.text(max_size=40),
)
def test_structured_noise_never_raises(lines: list[str], url: str) -> None:
    robots = parse_robots("\n".join(lines))
    robots.verdict(url, UA)
    robots.verdict("https://site.test/" + url, "*")


AGENTS = ("sitemap-crawler", "googlebot", "bingbot", "otherbot")
#: robots.txt lines: groups for us, the engines and ``*``, with rules in any order
agent_lines = st.lists(
    st.one_of(
        st.sampled_from(AGENTS[:3]).map(lambda agent: f"User-agent: {agent}"),
        st.just("User-agent: *"),
        st.tuples(st.sampled_from(["Allow", "Disallow"]), patterns).map(": ".join),
    ),
    max_size=12,
)


@given(
    agent_lines,
    paths,
    st.lists(st.sampled_from(AGENTS), max_size=4).map(tuple),
)
def test_verdicts_in_one_pass_are_each_agents_verdict(
    lines: list[str], path: str, agents: tuple[str, ...]
) -> None:
    """#26: verdicts() matches once per distinct set of groups; each agent's verdict is the
    one verdict() gives it alone, whether its groups are shared, its own or ``*``'s."""
    robots = parse_robots("\n".join(lines))
    for _ in range(2):  # the second time from the cached plan
        assert robots.verdicts(path, agents) == tuple(robots.verdict(path, a) for a in agents)


@settings(max_examples=500)
@given(
    st.sampled_from(["", "http://site.test", "HTTPS://a.b:81", "x+y.z://h", "http:/", "//h"]),
    st.text(alphabet=st.sampled_from("/?#%7aA:@ *$\n\u00e9~"), max_size=20),
)
def test_the_plain_url_fast_path_is_the_long_way(head: str, rest: str) -> None:
    """#26: one regex call for the usual URL gives the target the full canonicalisation does."""
    from crawler.core.robots import _match_target, _target

    assert _match_target(head + rest) == _target(head + rest)


@given(
    agent_lines,
    st.lists(paths, min_size=1, max_size=5),
    st.lists(st.sampled_from(AGENTS[1:]), min_size=1, max_size=3).map(tuple),
)
def test_agents_that_share_our_rules_get_our_verdict(
    lines: list[str], some: list[str], agents: tuple[str, ...]
) -> None:
    """#26: shares_rules() says yes only when each agent's verdict on any URL is ours (the
    judge then takes the engines' verdict from ours); it says yes when the file names none
    of them, and no when one of them has a group of its own that we do not."""
    robots = parse_robots("\n".join(lines))
    ours = "sitemap-crawler/1.0 (+https://example.test)"
    if robots.shares_rules(agents, ours):
        for path in some:
            assert robots.verdicts(path, agents) == (robots.verdict(path, ours),) * len(agents)
    named = {g for group in robots.groups for g in group.agents}
    if not named & {*agents, "sitemap-crawler"}:
        assert robots.shares_rules(agents, ours)
    if named & set(agents) and not named & {"*", "sitemap-crawler"}:
        assert not robots.shares_rules(agents, ours)  # theirs, and no rule for us at all


def test_rules_are_shared_by_group_not_by_text() -> None:
    """The same rules in a group of its own are another group: judged the long way."""
    ours = "sitemap-crawler/1.0"
    two = parse_robots("User-agent: *\nDisallow: /a\nUser-agent: googlebot\nDisallow: /a")
    assert not two.shares_rules(("googlebot",), ours)
    assert two.shares_rules(("bingbot",), ours)
    both = parse_robots("User-agent: googlebot\nUser-agent: sitemap-crawler\nDisallow: /a")
    assert both.shares_rules(("googlebot",), ours)  # one group names us both
    assert not both.shares_rules(("googlebot", "bingbot"), ours)
