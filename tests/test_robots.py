"""Unit tests for crawler.core.robots: parsing, matching, verdict reporting and fetch policy."""

from __future__ import annotations

import dataclasses

import pytest

from crawler import DEFAULT_USER_AGENT, PRODUCT_TOKEN
from crawler.core.robots import (
    MAX_ROBOTS_BYTES,
    RobotsTxt,
    Verdict,
    is_allowed,
    parse_robots,
    product_token,
    robots_from_response,
)

UA = DEFAULT_USER_AGENT


# --- product tokens and group choice --------------------------------------------------


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        (DEFAULT_USER_AGENT, PRODUCT_TOKEN),
        ("Sitemap-Crawler/0.1", "sitemap-crawler"),
        ("  FooBot  ", "foobot"),
        ("Mozilla/5.0 (compatible; FooBot/1.0)", "mozilla"),
        ("Bot with spaces", "bot"),
        ("*", "*"),
        ("", ""),
        # RFC 9309 2.2.1: a product token is [a-zA-Z_-]+; the name is cut at anything else
        ("UnicödeBöt", "unic"),
        ("my.bot/2.0", "my"),
        ("Rule1TestBot", "rule"),
        ("under_score-bot;v=1", "under_score-bot"),
        ("2bot", ""),
    ],
)
def test_product_token(user_agent: str, token: str) -> None:
    assert product_token(user_agent) == token


def test_specific_group_beats_star_and_groups_are_not_inherited() -> None:
    robots = parse_robots(
        "User-agent: *\nDisallow: /\n\nUser-agent: sitemap-crawler\nDisallow: /private/\n"
    )
    assert robots.can_fetch("https://a.test/page", UA)
    assert not robots.can_fetch("https://a.test/private/x", UA)
    assert not robots.can_fetch("https://a.test/page", "otherbot/1.0")


def test_user_agent_line_token_stops_at_slash_and_space() -> None:
    robots = parse_robots("User-agent: Sitemap-Crawler/2.0 (extra)\nDisallow: /x\n")
    assert robots.verdict("/x", UA) == Verdict(False, "Disallow: /x", 2)


@pytest.mark.parametrize(
    ("line", "user_agent", "named"),
    [
        ("User-agent: Foo Bar", "Foo", True),
        ("User-agent: FOO BAR", "foo", True),
        ("User-agent: foo bar", "Foo Bar", True),  # our token of "Foo Bar" is "foo" too
        ("User-agent: Foo Bar", "FooBar", False),
        ("User-agent: Foo Bar", "Bar", False),
        ("User-agent: sitemap-crawler/1.0", UA, True),
        ("User-agent: Sitemap-Crawler/1.0 (+https://x.test)", UA, True),
        ("User-agent: sitemap-crawler;v1", UA, True),
        ("User-agent: sitemap-crawlers", UA, False),
        ("User-agent: foo.bar", "foo", True),
        ("User-agent: foo*bot", "foobot", False),
        ("User-agent: foo*bot", "foo", True),
        ("User-agent: Googlebot-News", "googlebot", False),
    ],
)
def test_user_agent_value_names_its_leading_product_token(
    line: str, user_agent: str, named: bool
) -> None:
    """Google's GoogleOnly_AcceptUserAgentUpToFirstSpace, extended to every character
    outside RFC 9309's product-token alphabet [a-zA-Z_-]."""
    robots = parse_robots(f"User-agent: *\nDisallow: /\n{line}\nAllow: /x/\nDisallow: /\n")
    assert robots.can_fetch("http://foo.bar/x/y", user_agent) is named
    assert not robots.can_fetch("http://foo.bar/a", user_agent)


@pytest.mark.parametrize(
    ("value", "agents"),
    [("*", ("*",)), ("* everyone", ("*",)), ("*\tbots", ("*",)), ("*bot", ()), ("/1.0", ())],
)
def test_star_is_global_only_alone_or_before_whitespace(
    value: str, agents: tuple[str, ...]
) -> None:
    robots = parse_robots(f"User-agent: {value}\nDisallow: /\n")
    assert robots.groups[0].agents == agents
    assert robots.can_fetch("/x", "otherbot") is not agents


def test_groups_naming_the_same_agent_are_combined() -> None:
    robots = parse_robots(
        "User-agent: sitemap-crawler\nDisallow: /a\n\n"
        "User-agent: *\nDisallow: /b\n\n"
        "User-agent: SITEMAP-CRAWLER\nDisallow: /c\nAllow: /a/ok\n"
    )
    assert not robots.can_fetch("/a", UA)
    assert robots.can_fetch("/a/ok", UA)
    assert robots.can_fetch("/b", UA)
    assert not robots.can_fetch("/c", UA)


def test_consecutive_user_agents_share_a_group_across_blank_lines_and_sitemaps() -> None:
    robots = parse_robots(
        "User-agent: a\n\nSitemap: https://s.test/sm.xml\nUser-agent: b\nDisallow: /x\n"
    )
    assert not robots.can_fetch("/x", "a")
    assert not robots.can_fetch("/x", "b")
    assert robots.sitemaps == ("https://s.test/sm.xml",)


@pytest.mark.parametrize(
    "between",
    [
        "Invalid-Unknown-Line: x",
        "Noindex: /private/",
        "this line has no colon",
        "Sitemap: https://s.test/sm.xml",
        "Host: s.test",
        "Clean-param: ref /",
    ],
)
def test_lines_that_are_no_group_member_do_not_split_a_run_of_user_agents(between: str) -> None:
    """Google's ID_LineSyntax_Groups_OtherRules: only a rule line closes the agent list."""
    robots = parse_robots(f"User-agent: FooBot\n{between}\nUser-agent: *\nDisallow: /\n")
    assert not robots.can_fetch("http://foo.bar/", "FooBot")
    assert not robots.can_fetch("http://foo.bar/", "BarBot")
    assert len(robots.groups) == 1
    assert robots.groups[0].agents == ("foobot", "*")


@pytest.mark.parametrize("rule", ["Disallow: /x", "Allow: /y", "Disallow:", "Allow:"])
def test_a_rule_line_ends_a_run_of_user_agents_even_when_empty(rule: str) -> None:
    robots = parse_robots(f"User-agent: a\n{rule}\nUser-agent: b\nDisallow: /\n")
    assert robots.can_fetch("/z", "a")
    assert not robots.can_fetch("/z", "b")


def test_unknown_lines_inside_a_group_are_ignored_and_keep_it_open() -> None:
    robots = parse_robots(
        "User-agent: abc\nDisallow: /content/2/\nUser-agent: *\nInvalid_directive: /gb.html\n"
        "User-agent: ia_archiver\nDisallow: /\n"
    )
    assert not robots.can_fetch("/foo", "agent")  # "*" and ia_archiver share one group
    assert robots.can_fetch("/foo", "abc")
    assert not robots.can_fetch("/content/2/x", "abc")


def test_crawl_delay_line_ends_a_run_of_user_agents() -> None:
    robots = parse_robots("User-agent: a\nCrawl-delay: 3\nUser-agent: b\nDisallow: /x\n")
    assert robots.can_fetch("/x", "a")
    assert robots.crawl_delay("a") == 3.0
    assert robots.crawl_delay("b") is None


def test_rules_before_any_user_agent_are_ignored() -> None:
    robots = parse_robots("Disallow: /\nCrawl-delay: 9\nUser-agent: *\nDisallow: /x\n")
    assert robots.can_fetch("/y", UA)
    assert robots.crawl_delay(UA) is None


def test_no_star_group_means_unmatched_agents_are_allowed() -> None:
    robots = parse_robots("User-agent: otherbot\nDisallow: /\n")
    assert robots.verdict("/anything", UA) == Verdict(True, None, None)


def test_compiled_matcher_is_cached_per_user_agent() -> None:
    robots = parse_robots("User-agent: *\nDisallow: /x\n")
    robots.can_fetch("/x", UA)
    robots.can_fetch("/y", UA)
    assert list(robots._cache) == [UA]


# --- rule precedence and pattern syntax ------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "path", "verdict"),
    [
        ("Disallow: /private/\n", "/private/a", Verdict(False, "Disallow: /private/", 3)),
        (
            "Disallow: /private/\nAllow: /private/ok\n",
            "/private/ok",
            Verdict(True, "Allow: /private/ok", 4),
        ),
        ("Allow: /p\nDisallow: /p\n", "/p", Verdict(True, "Allow: /p", 3)),
        ("Disallow: /p\nAllow: /p\n", "/page", Verdict(True, "Allow: /p", 4)),
        ("Allow: /$\nDisallow: /\n", "/", Verdict(True, "Allow: /$", 3)),
        ("Allow: /$\nDisallow: /\n", "/a", Verdict(False, "Disallow: /", 4)),
        ("Disallow: /*.pdf$\n", "/doc/x.pdf", Verdict(False, "Disallow: /*.pdf$", 3)),
        ("Disallow: /*.pdf$\n", "/doc/x.pdf?dl=1", Verdict(True, None, None)),
        ("Disallow: /*?\n", "/search?q=1", Verdict(False, "Disallow: /*?", 3)),
        ("Disallow: /*?\n", "/search", Verdict(True, None, None)),
        ("Disallow: /a?b=1\n", "/a?b=1&c=2", Verdict(False, "Disallow: /a?b=1", 3)),
        ("Disallow:\n", "/anything", Verdict(True, None, None)),
        ("Disallow: /private/   # secret\n", "/private/", Verdict(False, "Disallow: /private/", 3)),
        ("Disallow: /\n", "/robots.txt", Verdict(True, None, None)),
        ("Disallow: /\n", "/robots.txt?x=1", Verdict(False, "Disallow: /", 3)),
        ("Disallow: /\n", "https://a.test", Verdict(False, "Disallow: /", 3)),
        ("Disallow: /\n", "https://a.test?q", Verdict(False, "Disallow: /", 3)),
        ("Disallow: /X\n", "/x", Verdict(True, None, None)),
    ],
)
def test_precedence_and_patterns(rules: str, path: str, verdict: Verdict) -> None:
    robots = parse_robots(f"# site\nUser-agent: *\n{rules}")
    assert robots.verdict(path, UA) == verdict


def test_verdict_reports_the_longest_rule_and_its_line() -> None:
    robots = parse_robots(
        "User-agent: *\nDisallow: /shop/\nAllow: /shop/public/\nDisallow: /shop/public/tmp\n"
    )
    assert robots.verdict("https://a.test/shop/public/tmp/1", UA) == Verdict(
        False, "Disallow: /shop/public/tmp", 4
    )
    assert robots.verdict("https://a.test/shop/public/1", UA) == Verdict(
        True, "Allow: /shop/public/", 3
    )


def test_url_forms_reduce_to_path_and_query() -> None:
    robots = parse_robots("User-agent: *\nDisallow: /a;p?q=1\n")
    for url in (
        "http://user:pw@host.test:8080/a;p?q=1#frag",
        "HTTPS://host.test/a;p?q=1",
        "/a;p?q=1#frag",
        "a;p?q=1",
    ):
        assert not robots.can_fetch(url, UA), url
    assert robots.can_fetch("http://host.test/a;p?q=2", UA)
    assert robots.can_fetch("http://host.test/a;p#?q=1", UA)


def test_wildcard_runs_and_pathological_patterns_are_fast_and_correct() -> None:
    robots = parse_robots("User-agent: *\nDisallow: /a/" + "*a" * 40 + "*b\nAllow: /**/x$\n")
    assert robots.can_fetch("/a/" + "a" * 10_000 + "c", UA)
    assert not robots.can_fetch("/a/" + "a" * 50 + "b", UA)
    assert robots.verdict("/q/r/x", UA) == Verdict(True, "Allow: /**/x$", 3)


def test_index_html_allow_also_allows_the_directory() -> None:
    robots = parse_robots("User-agent: *\nAllow: /docs/index.html\nDisallow: /\n")
    assert robots.verdict("/docs/", UA) == Verdict(True, "Allow: /docs/index.html", 2)
    assert not robots.can_fetch("/docs/other", UA)


# --- percent-encoding -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "url", "matches"),
    [
        ("/%7Euser", "/~user", True),
        ("/~user", "/%7euser", True),
        ("/a%2fb", "/a%2Fb", True),
        ("/a%2Fb", "/a/b", False),  # reserved escapes are not decoded
        ("/caf%C3%A9", "/café", True),
        ("/café", "/caf%c3%a9", True),
        ("/a b", "/a%20b", True),
        ("/a<b", "/a%3Cb", True),
        ("/file-%2A.html", "/file-*.html", True),
        ("/price%24", "/price$", True),
        ("/x$/y", "/x%24/y", True),
        ("/100%", "/100%25", True),
        ("/%zz", "/%25zz", True),
    ],
)
def test_percent_encoding_is_compared_canonically(pattern: str, url: str, matches: bool) -> None:
    robots = parse_robots(f"User-agent: *\nDisallow: {pattern}\n")
    assert robots.can_fetch(f"https://a.test{url}", UA) is not matches


# --- lines, keys, leniency ------------------------------------------------------------


def test_keys_are_case_insensitive_whitespace_tolerant_and_typos_accepted() -> None:
    robots = parse_robots(
        "  USER-AGENT :\tsitemap-crawler  \n"
        "\tdisallow   :   /a\n"
        "Dissallow: /b\n"
        "Disalow /c\n"
        "useragent: other\n"
        "Crawl-Delay: 2.5\n"
    )
    assert not robots.can_fetch("/a", UA)
    assert not robots.can_fetch("/b", UA)
    assert not robots.can_fetch("/c", UA)
    assert robots.crawl_delay("other") == 2.5


def test_unknown_and_malformed_lines_are_ignored() -> None:
    robots = parse_robots(
        "User-agent: *\nNoindex: /a\nthis is prose\n<html><body>\nDisallow: /b\nClean-param: x\n"
    )
    assert robots.can_fetch("/a", UA)
    assert not robots.can_fetch("/b", UA)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_line_endings_and_line_numbers(newline: str) -> None:
    text = newline.join(["# c", "User-agent: *", "", "Disallow: /x"])
    assert parse_robots(text).verdict("/x", UA) == Verdict(False, "Disallow: /x", 4)


def test_bytes_are_decoded_as_utf8_with_bom_skipped_and_bad_bytes_replaced() -> None:
    body = b"\xef\xbb\xbfUser-agent: *\nDisallow: /caf\xc3\xa9\nDisallow: /bad\xff\n"
    robots = parse_robots(body)
    assert not robots.can_fetch("/caf%C3%A9", UA)
    assert not robots.can_fetch("/bad%EF%BF%BD", UA)
    assert parse_robots("\ufeffUser-agent: *\nDisallow: /\n").groups[0].agents == ("*",)


def test_binary_garbage_yields_whatever_valid_lines_exist() -> None:
    robots = parse_robots(bytes(range(256)) * 4 + b"\nUser-agent: *\nDisallow: /x\n")
    assert not robots.can_fetch("/x", UA)
    assert robots.can_fetch("/y", UA)


def test_only_the_first_500_kib_are_parsed_and_a_cut_line_is_dropped() -> None:
    head = "User-agent: *\nDisallow: /early\n"
    start_of_cut_line = MAX_ROBOTS_BYTES - len("Disallow: /cut")
    body = head + "#" * (start_of_cut_line - len(head) - 1) + "\n"
    body += "Disallow: /cut-in-the-middle-of-this-line\n"
    assert body.encode().index(b"/cut-in") + 4 == MAX_ROBOTS_BYTES
    for source in (body, body.encode()):
        robots = parse_robots(source)
        assert robots.truncated
        assert not robots.can_fetch("/early", UA)
        assert robots.can_fetch("/cut", UA)
    small = parse_robots(head)
    assert not small.truncated


def test_exactly_500_kib_ending_at_a_line_break_keeps_its_last_line() -> None:
    last = "Disallow: /last\n"
    head = "User-agent: *\n"
    pad = MAX_ROBOTS_BYTES - len(head) - len(last)
    body = head + "#" * (pad - 1) + "\n" + last + "Disallow: /beyond\n"
    robots = parse_robots(body.encode())
    assert robots.truncated
    assert not robots.can_fetch("/last", UA)
    assert robots.can_fetch("/beyond", UA)


# --- crawl-delay and sitemaps -----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "delay"),
    [("10", 10.0), ("0.5", 0.5), ("0", 0.0), ("-1", None), ("nan", None), ("1s", None)],
)
def test_crawl_delay_values(value: str, delay: float | None) -> None:
    robots = parse_robots(f"User-agent: *\nCrawl-delay: {value}\n")
    assert robots.crawl_delay(UA) == delay


def test_crawl_delay_takes_the_largest_of_combined_groups() -> None:
    robots = parse_robots(
        "User-agent: sitemap-crawler\nCrawl-delay: 2\nUser-agent: *\nCrawl-delay: 30\n"
        "User-agent: sitemap-crawler\nCrawl-delay: 5\n"
    )
    assert robots.crawl_delay(UA) == 5.0
    assert robots.crawl_delay("other") == 30.0


def test_sitemaps_are_global_ordered_and_deduplicated() -> None:
    robots = parse_robots(
        "Sitemap: https://a.test/1.xml\nUser-agent: x\nDisallow: /\n"
        "sitemap: https://a.test/2.xml # comment\nSITEMAP:https://a.test/1.xml\n"
        "Sitemap:\nSitemap: not a url\n"
    )
    assert robots.sitemaps == ("https://a.test/1.xml", "https://a.test/2.xml")


# --- constructors and fetch policy ----------------------------------------------------


def test_allow_all_and_disallow_all() -> None:
    assert RobotsTxt.allow_all().verdict("/x", UA) == Verdict(True, None, None)
    denied = RobotsTxt.disallow_all("robots.txt answered 500")
    assert denied.verdict("https://a.test/x", UA) == Verdict(False, "robots.txt answered 500", None)
    assert denied.crawl_delay(UA) is None
    assert denied.sitemaps == ()


def test_robots_txt_is_immutable() -> None:
    robots = parse_robots("User-agent: *\nDisallow: /\n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        robots.sitemaps = ()  # type: ignore[misc]


@pytest.mark.parametrize(
    ("status", "body", "error", "allowed", "rule"),
    [
        (200, b"User-agent: *\nDisallow: /x\n", None, False, "Disallow: /x"),
        (200, None, None, True, None),
        (204, b"", None, True, None),
        (404, b"User-agent: *\nDisallow: /x\n", None, True, None),
        (401, None, None, True, None),
        (403, None, None, True, None),
        (410, None, None, True, None),
        (310, None, None, True, None),
        (429, None, None, False, "robots.txt answered 429"),
        (500, None, None, False, "robots.txt answered 500"),
        (503, b"busy", None, False, "robots.txt answered 503"),
        (None, None, "timeout after 10s", False, "robots.txt unreachable: timeout after 10s"),
        (None, None, None, False, "robots.txt unreachable: no response"),
    ],
)
def test_robots_from_response(
    status: int | None, body: bytes | None, error: str | None, allowed: bool, rule: str | None
) -> None:
    robots = robots_from_response(status, body, error=error)
    verdict = robots.verdict("https://a.test/x", UA)
    assert (verdict.allowed, verdict.rule) == (allowed, rule)


def test_is_allowed_one_shot() -> None:
    assert not is_allowed("User-agent: *\nDisallow: /x\n", UA, "https://a.test/x/1")
    assert is_allowed("User-agent: *\nDisallow: /x\n", UA, "https://a.test/y")


def test_agents_with_the_same_groups_share_one_matcher() -> None:
    """#26: googlebot and bingbot judged against the ``*`` groups as we are: one compiled
    matcher, so a URL is matched once for the three of them."""
    robots = parse_robots("User-agent: *\nDisallow: /x\n\nUser-agent: otherbot\nDisallow: /\n")
    agents = (UA, "googlebot", "bingbot")
    assert robots.verdicts("/x/1", agents) == (Verdict(False, "Disallow: /x", 2),) * 3
    assert len({id(robots._matcher(agent)) for agent in agents}) == 1
    assert robots._matcher("otherbot") is not robots._matcher(UA)
    assert robots.verdicts("/y", ("otherbot", UA)) == (
        Verdict(False, "Disallow: /", 5),
        Verdict(True, None, None),
    )


def test_verdicts_of_a_refusing_robots_txt_refuse_every_agent() -> None:
    robots = RobotsTxt.disallow_all("robots.txt answered 503")
    refused = Verdict(False, "robots.txt answered 503", None)
    assert robots.verdicts("/a", (UA, "googlebot")) == (refused, refused)
    assert robots.verdicts("/robots.txt", (UA,)) == (Verdict(True, None, None),)
