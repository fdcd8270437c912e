"""crawler.core.robots against protego 0.7.0's test suite, turned into data in the shared test
data (conformance/, found as tests/procs.py's `shared` says).

protego is not the standard: where it contradicts RFC 9309 or Google's robots.txt rules we
follow those, and the case is listed in DEPARTURES with the rule we apply instead. Those
cases are asserted with the opposite result, so a silent drift either way fails.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from crawler.core.robots import parse_robots
from tests.procs import shared

CONFORMANCE = shared("conformance", module=True)

_EXACT_TOKEN = (
    "RFC 9309 2.2.1: a group applies when its product token equals the crawler's, "
    "case-insensitively; no prefix matching (Google's googlebot-news -> googlebot fallback "
    "comes from its crawlers carrying several tokens, not from matching rules)"
)
_FULL_UA = (
    "the product token of 'Mozilla/5.0 (compatible; X/1.0)' is 'mozilla' (its leading run of "
    "letters, '-' and '_'); we do not search the UA string for group names"
)
_TOKEN_ALPHABET = (
    "RFC 9309 2.2.1: product tokens are [a-zA-Z_-]+ and a value is read up to the first other "
    "character, as Google's parser does: every 'RuleNTestBot' names 'rule', so all seven "
    "groups apply to each of them"
)
_DIGIT_FIRST = (
    "RFC 9309 2.2.1: product tokens are [a-zA-Z_-]+; 'User-agent: 2bot' (and the crawler "
    "'2bot') name no token, so no group applies and nothing is disallowed"
)
_UNKNOWN_LINE_IN_RUN = (
    "Google's parser (ID_LineSyntax_Groups_OtherRules): an unknown line does not end a run of "
    "User-agent lines, so '*' shares ia_archiver's 'Disallow: /'"
)

DEPARTURES: dict[str, str] = {
    "protego/test_protego.py/TestProtego::test_unicode_url_and_useragent#15": _FULL_UA,
    "protego/test_protego.py/TestProtego::test_generosity#6": (
        "'*' in a User-agent value is not a wildcard: RFC 9309 2.2.1 product tokens are "
        "letters, '-' and '_', so 'User-agent: foo*bot' names 'foo', not 'foobot'"
    ),
    "protego/test_protego.py/TestProtego::test_unicode_url_and_useragent#11": (
        "RFC 9309 2.2.1: product tokens are [a-zA-Z_-]+; 'Jävla-Foobot' and 'jävla-fanbot' are "
        "both read up to the 'ä', so both name 'j' and the group applies"
    ),
    **{
        f"protego/test_protego.py/TestProtego::test_allowed_wildcards#{n}": _TOKEN_ALPHABET
        for n in (14, 18, 22, 29, 32, 33, 37, 45)
    },
    **{
        f"protego/test_protego.py/TestProtego::test_1996rfc_examples#{n}": _DIGIT_FIRST
        for n in (4, 12, 13)
    },
    **{
        f"protego/test_protego.py/TestProtego::test_grouping_unknown_keys#{n}": (
            _UNKNOWN_LINE_IN_RUN
        )
        for n in (1, 2, 3)
    },
    "protego/test_protego.py/TestProtego::test_special_symbols_dual_behaviour#2": (
        "RFC 9309 2.2.3: a trailing '$' anchors the end of the match; it does not also match "
        "a literal '$', so 'Disallow: /x/abc$' leaves /x/abc$ alone"
    ),
    "protego/test_protego.py/TestProtego::test_special_symbols_dual_behaviour#3": (
        "RFC 9309 2.2.3: a trailing '$' is an anchor, not a literal '$' (or %24)"
    ),
    "protego/test_protego.py/TestProtego::test_with_absolute_urls#2": (
        "RFC 9309 2.2.2: a pattern is a path matched from the start of the URL path; "
        "'Disallow: http://host/' never matches (Google's parser agrees), it is not "
        "rewritten to '/http://host/'"
    ),
    "protego/test_protego.py/test_equal_sign_in_path"
    "[https://example.com/1/filter/page%3D5/-True]#1": (
        "RFC 3986 2.2 / RFC 9309 2.2.2: only escapes of unreserved characters are decoded "
        "before comparison; %3D is not the same as '=' (the RFC's table keeps %3A%2F encoded)"
    ),
    "protego/test_on_google_spec.py/test_user_agent_precedence[/group3-hedwig-new]#2": (
        _EXACT_TOKEN
    ),
    "protego/test_on_google_spec.py/test_user_agent_precedence[/group3-hedwig-new]#3": (
        _EXACT_TOKEN
    ),
    "protego/test_on_google_spec.py/test_user_agent_precedence[/group3-hedwig-images]#2": (
        _EXACT_TOKEN
    ),
    "protego/test_on_google_spec.py/test_user_agent_precedence[/group3-hedwig-images]#3": (
        _EXACT_TOKEN
    ),
    "protego/test_on_google_spec.py/test_user_agent_boundary_matching"
    "[googlebot-googlebot-news-True]#1": _EXACT_TOKEN,
    "protego/test_on_google_spec.py/test_user_agent_boundary_matching"
    "[google-googlebot-mobile-True]#1": _EXACT_TOKEN,
    "protego/test_on_google_spec.py/test_user_agent_boundary_matching"
    "[foobot-Mozilla/5.0 (compatible; Foobot/1.0)-True]#1": _FULL_UA,
}


def _load(name: str) -> list[dict[str, Any]]:
    return json.loads((CONFORMANCE / name).read_text(encoding="utf-8"))


CASES = _load("robots_protego_cases.json")
OTHER = _load("robots_protego_other_assertions.json")


def test_case_file_is_the_one_described() -> None:
    assert len(CASES) == 437
    # The README says 138 bare paths; the file has 136 "/..." plus one "xyz/foo.js".
    assert sum(1 for case in CASES if "://" not in case["url"]) == 137
    assert len({case["id"] for case in CASES}) == len(CASES)


def test_every_departure_names_a_real_case() -> None:
    ids = {case["id"] for case in CASES}
    assert set(DEPARTURES) <= ids


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_protego_case(case: dict[str, Any]) -> None:
    expected = case["allowed"]
    if case["id"] in DEPARTURES:
        expected = not expected
    robots = parse_robots(case["robots_txt"])
    verdict = robots.verdict(case["url"], case["user_agent"])
    assert verdict.allowed is expected, (case["robots_txt"], verdict)
    assert robots.can_fetch(case["url"], case["user_agent"]) is expected


CRAWL_DELAYS = [item for item in OTHER if item["kind"] == "crawl_delay"]
SITEMAPS = [item for item in OTHER if item["kind"] == "sitemaps"]


@pytest.mark.parametrize("item", CRAWL_DELAYS, ids=[item["id"] for item in CRAWL_DELAYS])
def test_protego_crawl_delay(item: dict[str, Any]) -> None:
    assert parse_robots(item["robots_txt"]).crawl_delay(item["user_agent"]) == item["expected"]


@pytest.mark.parametrize("item", SITEMAPS, ids=[item["id"] for item in SITEMAPS])
def test_protego_sitemaps(item: dict[str, Any]) -> None:
    sitemaps = parse_robots(item["robots_txt"]).sitemaps
    assert isinstance(sitemaps, tuple)
    if item["ordered"]:
        assert list(sitemaps) == item["expected"]
    else:
        assert sorted(sitemaps) == sorted(item["expected"])


def test_other_assertion_kinds_are_the_ones_we_use() -> None:
    assert len(CRAWL_DELAYS) == 18
    assert len(SITEMAPS) == 7
