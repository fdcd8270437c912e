"""Include, exclude and exclude_listing_only patterns (issue #17): the pattern rules, the
screen and the decision that use them, and crawls through the real CLI against a local server
that records every request, so that "never requested" is checked where it happens."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.core.patterns import Patterns, glob_regex, path_and_query
from crawler.errors import ConfigError

# -- the pattern rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("/tag/*", "/tag/python", True),
        ("/tag/*", "/tag/", True),
        ("/tag/*", "/tag", False),
        ("/tag/*", "/blog/tag/x", False),  # the whole path and query
        ("*/tag/*", "/blog/tag/x", True),
        ("/search?*", "/search?q=x", True),
        ("/search?*", "/search", False),
        ("/search?*", "/searchx", False),  # ? is the query's, not a wildcard
        ("/a?c", "/abc", False),
        ("/a?c", "/a?c", True),
        ("*.pdf", "/docs/manual.pdf", True),
        ("*.pdf", "/docs/manual.pdf?download=1", False),
        ("*/print/*", "/article/1/print/", True),
        ("/blog/*", "/blog/a?page=2", True),  # * crosses / and ?
        ("/Tag/*", "/tag/x", False),  # case-sensitive
        ("/[a]/*", "/[a]/x", True),  # regex syntax is literal in a glob
        ("/x.y", "/xzy", False),
        ("re:^/search\\?", "/search?q=1", True),
        ("re:^/search\\?", "/search", False),
        ("re:print", "/a/print/b", True),  # searched anywhere
        ("re:/page/[0-9]+$", "/blog/page/12", True),
        ("re:/page/[0-9]+$", "/blog/page/12/x", False),
    ],
)
def test_pattern_rules(pattern, path, matches):
    assert Patterns.compile([pattern]).match(path) == (pattern if matches else None)


def test_the_first_matching_pattern_is_named():
    patterns = Patterns.compile(["/a/*", "re:b", "*"])
    assert patterns.match("/a/b") == "/a/*"
    assert patterns.match("/x/b") == "re:b"
    assert patterns.match("/z") == "*"
    assert not Patterns.compile([]) and Patterns.compile(["*"])


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "exclude pattern is empty"),
        ("re:", "exclude pattern 're:' has no regular expression"),
        ("re:(", "exclude pattern 're:(' is not a valid regular expression"),
        ("re:[a-", "exclude pattern 're:[a-' is not a valid regular expression"),
        ("tag/*", "exclude pattern 'tag/*' can never match"),
    ],
)
def test_bad_patterns_are_config_errors(pattern, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        Patterns.compile(["/ok/*", pattern], "exclude")


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("https://example.com/", "/"),
        ("https://example.com/a/b?q=1&r=/x", "/a/b?q=1&r=/x"),
        ("http://127.0.0.1:8080/search?q=a//b", "/search?q=a//b"),
        ("https://example.com", "/"),
    ],
)
def test_path_and_query(url, path):
    assert path_and_query(url) == path


# Property tests over a small alphabet, so that patterns and paths often meet.
CHARS = "/ab?.=*"
literal = st.text(alphabet=CHARS.replace("*", ""), max_size=6)
paths = st.text(alphabet=CHARS, max_size=12).map(lambda s: "/" + s)


def _reference(glob: str, path: str) -> bool:
    """A glob of literals and *s, matched the plain way: the first piece is a prefix, the
    last a suffix, and the ones between occur in order, each as early as it can."""
    pieces = glob.split("*")
    if len(pieces) == 1:
        return glob == path
    first, *middle, last = pieces
    if not path.startswith(first) or len(path) < len(first) + len(last):
        return False
    if not path.endswith(last):
        return False
    at, end = len(first), len(path) - len(last)
    for piece in middle:
        found = path.find(piece, at, end)
        if found < 0:
            return False
        at = found + len(piece)
    return True


@given(st.lists(literal, min_size=1, max_size=4).map("*".join).map(lambda g: "/" + g), paths)
def test_a_glob_matches_as_the_plain_rule_says(glob, path):
    assert (re.search(glob_regex(glob), path) is not None) == _reference(glob, path)


@given(literal.map(lambda s: "/" + s), st.data())
def test_a_glob_without_a_star_matches_only_itself(glob, data):
    path = data.draw(st.one_of(st.just(glob), paths, literal.map(lambda s: glob + s)))
    assert Patterns.compile([glob]).match(path) == (glob if path == glob else None)


@given(st.lists(literal, min_size=2, max_size=4), st.data())
def test_a_star_matches_any_insertion(pieces, data):
    glob = "/" + "*".join(pieces)
    fillers = [data.draw(st.text(max_size=5)) for _ in pieces[1:]]  # any text, / ? * too
    path = "/" + pieces[0] + "".join(f + p for f, p in zip(fillers, pieces[1:], strict=True))
    assert Patterns.compile([glob]).match(path) == glob
