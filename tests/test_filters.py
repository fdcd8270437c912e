"""Include, exclude and exclude_listing_only patterns (issue #17): the pattern rules, the
screen and the decision that use them, and crawls through the real CLI against a local server
that records every request, so that "never requested" is checked where it happens."""

from __future__ import annotations

import re
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.cli import main
from crawler.config import build
from crawler.core import decide
from crawler.core.decide import (
    EXCLUDED_BY_PATTERN,
    LISTED,
    META_NOINDEX,
    OUT_OF_SCOPE,
    REASON_TEXT,
    REASONS,
    ROBOTS_TXT,
    Decision,
    PageFacts,
    Policy,
    SegmentRepeats,
    TrapBudgets,
    decide_page,
)
from crawler.core.directives import Directives
from crawler.core.patterns import Patterns, glob_regex, path_and_query
from crawler.core.robots import parse_robots
from crawler.core.screen import Plan, Screen
from crawler.errors import ConfigError
from tests.memory import crawl as memory_crawl
from tests.memory import crawl_until_crash
from tests.sites import Page, Site, html, read_decisions, read_published, redirect

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


@pytest.mark.parametrize("key", ["include", "exclude", "exclude_listing_only"])
def test_the_config_checks_every_pattern_key(key):
    with pytest.raises(ConfigError, match=f"^{key} pattern 're:\\*x' is not a valid"):
        build({}, {"url": "https://example.com/", key: ["re:*x"]})
    config = build({}, {"url": "https://example.com/", key: ["/a/*", "re:b"]})
    assert getattr(config, key) == ("/a/*", "re:b")


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


def _repeats_as_counted(path: str, limit: int) -> bool:
    """The trap rule, plainly: a non-empty segment met more than limit times."""
    segments = [segment for segment in path.split("/") if segment]
    return any(segments.count(segment) > limit for segment in segments)


@given(
    st.lists(
        st.lists(st.sampled_from(["", "a", "b", "ab", "http:", "h:1"]), max_size=8).map("/".join),
        max_size=12,
    ),
    st.integers(1, 4),
)
def test_a_repeated_segment_is_found_as_counting_finds_it(paths, limit):
    """#26: the rule answered by folder (paths of one folder in a row, empty segments and
    trailing slashes included) is the count of every segment of each path."""
    repeats = SegmentRepeats(limit)
    for path in paths:
        assert repeats(path) == _repeats_as_counted(path, limit), path


def test_the_folders_kept_for_the_segment_rule_are_bounded():
    """#26: however many folders, and however long, what the rule keeps stays about
    _KEPT_MOST (a hostile page's 4,096 URLs of 2 KB, each of a thousand distinct segments,
    kept 89 MB whole at the default limit, 282 MB at 1)."""
    repeats = SegmentRepeats(1)
    for i in range(5000):
        assert not repeats(f"http://example.com/f{i}/p")
    assert repeats("http://example.com/f1/f1") and not repeats("http://example.com/f1/g")
    tracemalloc.start()
    try:
        for limit in (1, 3):
            repeats = SegmentRepeats(limit)
            for i in range(300):  # each kept costs ~34 KB: the bound is met every ~30
                segments = "/".join(f"{i:x}{j:x}" for j in range(300))
                assert not repeats(f"/{segments}/p"[:2048])
            assert repeats._kept <= decide._KEPT_MOST
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * decide._KEPT_MOST


def test_a_site_whose_urls_end_in_a_slash_shares_its_folders():
    """#26: /blog/post-1/ is post-1 in /blog: the folder is kept once for all its posts,
    not once a URL (then every URL was counted whole, four times the old rule's cost)."""
    repeats = SegmentRepeats(3)
    for i in range(1000):
        assert not repeats(f"/blog/2026/post-{i}/")
    assert list(repeats._folders) == ["/blog/2026"]
    assert repeats("/a/a/a/a/") and not repeats("/a/a/a/")


# -- the screen and the decision -------------------------------------------------------------


def _screen(plan: Plan, budgets: TrapBudgets | None = None, **patterns: list[str]) -> Screen:
    return Screen(
        plan,
        user_agent="bot",
        max_url_length=2048,
        max_segment_repeats=3,
        max_depth=-1,
        budgets=budgets or TrapBudgets(),
        include=Patterns.compile(patterns.get("include", ())),
        exclude=Patterns.compile(patterns.get("exclude", ())),
        seeds=frozenset({plan.start}),
    )


def test_the_screen_excludes_before_the_trap_budgets():
    """An excluded URL spends no budget: /a/2 still passes a budget of 1 URL per folder."""
    plan = Plan.make("https://example.com/", None, None)
    screen = _screen(plan, TrapBudgets(per_folder=1), exclude=["/a/1"])
    e = "https://example.com/"
    assert screen(e + "a/1", 1) == Decision(EXCLUDED_BY_PATTERN, "exclude /a/1")
    assert screen(e + "a/2", 1) is None
    assert screen(e + "a/3", 1).reason == "trap"


def test_each_refusal_names_its_own_rule_when_the_rules_change():
    """A robots.txt refusal's decision is kept by the rule that refuses (one Decision a
    rule, not one a URL): rules read later, at other lines, are named as they are."""
    plan = Plan.make("https://example.com/", None, None)
    screen = _screen(plan)
    e = "https://example.com/"
    screen.robots = parse_robots("User-agent: *\nDisallow: /a/\n")
    assert screen(e + "a/1", 1) == Decision(ROBOTS_TXT, "Disallow: /a/ (line 2)")
    assert screen(e + "a/2", 1) is screen(e + "a/1", 1)
    screen.robots = parse_robots("User-agent: *\nAllow: /b/\nDisallow: /a/\n")
    assert screen(e + "a/1", 1) == Decision(ROBOTS_TXT, "Disallow: /a/ (line 3)")
    assert screen("https://other.example/", 1) == Decision(
        OUT_OF_SCOPE, "outside https://example.com/"
    )


def test_a_seed_is_exempt_from_include_but_not_from_exclude():
    plan = Plan.make("https://example.com/", None, None)
    e = "https://example.com/"
    screen = _screen(plan, include=["/blog/*", "/docs/*"])
    assert screen(e, 0) is None
    assert screen(e + "blog/x", 1) is None
    detail = "not matched by include /blog/*, /docs/*"
    assert screen(e + "about", 1) == Decision(EXCLUDED_BY_PATTERN, detail)
    assert _screen(plan, include=["/blog/*"], exclude=["/"])(e, 0) == Decision(
        EXCLUDED_BY_PATTERN, "exclude /"
    )


def test_patterns_match_the_public_path():
    """Under --public-url, the path a pattern sees is the one the sitemap lists."""
    plan = Plan.make("http://127.0.0.1:9/", "https://www.example.com/site/", None)
    screen = _screen(plan, exclude=["/site/tag/*"])
    assert screen("http://127.0.0.1:9/tag/x", 1) == Decision(
        EXCLUDED_BY_PATTERN, "exclude /site/tag/*"
    )
    assert _screen(plan, exclude=["/tag/*"])("http://127.0.0.1:9/tag/x", 1) is None


def test_the_decision_leaves_out_what_would_be_listed():
    policy = Policy(
        frozenset({"text/html"}),
        include=Patterns.compile(["/blog/*"]),
        exclude_listing_only=Patterns.compile(["/blog/hub/*"]),
    )
    page = PageFacts("http://127.0.0.1:9/", 200, "text/html")
    assert decide_page(page, policy) == Decision(
        EXCLUDED_BY_PATTERN, "not matched by include /blog/*"
    )
    page = PageFacts("http://127.0.0.1:9/blog/hub/", 200, "text/html")
    assert decide_page(page, policy) == Decision(
        EXCLUDED_BY_PATTERN, "exclude_listing_only /blog/hub/*"
    )
    assert decide_page(PageFacts("http://127.0.0.1:9/blog/a", 200, "text/html"), policy).listed
    # the public URL is the one matched, when it is given
    page = PageFacts("http://127.0.0.1:9/a", 200, "text/html", public="https://e.com/blog/a")
    assert decide_page(page, policy) == Decision(LISTED)
    # the site's own signals are named first
    noindex = Directives(noindex=True, source='meta robots "noindex"')
    page = PageFacts("http://127.0.0.1:9/blog/hub/", 200, "text/html", meta=noindex)
    assert decide_page(page, policy).reason == META_NOINDEX


def test_the_reason_is_one_of_the_closed_set():
    assert EXCLUDED_BY_PATTERN in REASONS and EXCLUDED_BY_PATTERN in REASON_TEXT


# -- crawls through the real CLI -------------------------------------------------------------


@pytest.fixture
def crawl(tmp_path, capsys, xsd):
    """crawl(start, *args) -> (exit code, published locs or None, decisions, stdout, stderr):
    the real CLI, every sitemap it writes validated against the XSD."""

    runs = iter(range(100))

    def run(start: str, *args: str):
        n = next(runs)  # each run publishes afresh: no guard against the one before
        out, why = tmp_path / f"out{n}", tmp_path / f"why{n}.jsonl"
        code = main(["crawl", start, "-o", str(out), "--decisions", str(why), *args])
        captured = capsys.readouterr()
        locs = read_published(out, xsd).locs if code == 0 else None
        decisions = read_decisions(why) if why.exists() else {}
        return code, locs, decisions, captured.out, captured.err

    return run


def _blog_site() -> Site:
    return Site(
        {
            "/": html("/blog/", "/tag/python", "/tag/web", "/search?q=x", "/searchable", "/about"),
            "/blog/": html("/blog/a", "/blog/b?page=2", "/tag/python", "/docs/x"),
            "/blog/a": html("/search?q=y"),
            "/blog/b?page=2": html(),
            "/tag/python": html("/blog/a"),
            "/tag/web": html(),
            "/search?q=x": html(),
            "/search?q=y": html(),
            "/searchable": html(),
            "/about": html(),
            "/docs/x": html(),
        }
    )


def test_excluded_urls_are_never_requested(serve, crawl):
    site = _blog_site()
    srv = serve(site.app)
    u = srv.url
    code, locs, why, out, _ = crawl(u + "/", "--exclude", "/tag/*", "--exclude", "re:^/search\\?")
    assert code == 0
    excluded = {"/tag/python", "/tag/web", "/search?q=x", "/search?q=y"}
    assert not excluded & set(site.paths)
    assert sorted(site.paths[1:]) == ["/", "/about", "/blog/", "/blog/a", "/blog/b?page=2",
                                      "/docs/x", "/searchable"]  # fmt: skip
    assert sorted(locs) == sorted(u + p for p in set(site.pages) - excluded)
    for path in ("/tag/python", "/tag/web"):
        assert why[u + path]["reason"] == "excluded_by_pattern"
        assert why[u + path]["detail"] == "exclude /tag/*"
        assert why[u + path]["status"] is None
    for path in ("/search?q=x", "/search?q=y"):
        assert why[u + path]["detail"] == "exclude re:^/search\\?"
    assert "4 excluded_by_pattern" in out  # the summary line


def test_include_lists_only_matching_pages_and_fetches_the_start(serve, crawl):
    site = _blog_site()
    srv = serve(site.app)
    u = srv.url
    code, locs, why, _, _ = crawl(u + "/", "--include", "/blog/*")
    assert code == 0
    assert sorted(site.paths) == ["/", "/blog/", "/blog/a", "/blog/b?page=2", "/robots.txt"]
    assert sorted(locs) == [u + "/blog/", u + "/blog/a", u + "/blog/b?page=2"]
    # the start page is fetched, its links followed, but it is not listed
    assert why[u + "/"]["reason"] == "excluded_by_pattern"
    assert why[u + "/"]["detail"] == "not matched by include /blog/*"
    assert why[u + "/"]["status"] == 200
    for path in ("/about", "/tag/python", "/docs/x", "/search?q=y"):
        assert why[u + path]["reason"] == "excluded_by_pattern", path
        assert why[u + path]["status"] is None
    # two include patterns: a URL matching either is fetched, and only those
    code, locs, _, _, _ = crawl(u + "/", "--include", "/blog/", "--include", "/about")
    assert code == 0
    assert sorted(locs) == [u + "/about", u + "/blog/"]
    assert "/blog/a" not in site.paths[-3:]  # linked from /blog/, not fetched this time


def test_an_included_start_page_is_listed(serve, crawl):
    site = Site({"/blog/": html("/blog/a", "/blog/b"), "/blog/a": html(), "/blog/b": html()})
    srv = serve(site.app)
    code, locs, _, _, _ = crawl(srv.url + "/blog/", "--include", "/blog/*", "--exclude", "*/b")
    assert code == 0
    assert sorted(locs) == [srv.url + "/blog/", srv.url + "/blog/a"]
    assert "/blog/b" not in site.paths


def test_exclude_listing_only_fetches_and_follows_but_never_lists(serve, crawl):
    site = Site(
        {
            "/": html("/hub/"),
            "/hub/": html("/p1", "/p2"),
            "/p1": html(),
            "/p2": html("/hub/"),
        }
    )
    srv = serve(site.app)
    u = srv.url
    code, locs, why, _, _ = crawl(u + "/", "--exclude-listing-only", "/hub/")
    assert code == 0
    assert "/hub/" in site.paths
    assert sorted(locs) == [u + "/", u + "/p1", u + "/p2"]
    assert why[u + "/hub/"]["reason"] == "excluded_by_pattern"
    assert why[u + "/hub/"]["detail"] == "exclude_listing_only /hub/"
    assert why[u + "/hub/"]["status"] == 200


def test_include_lets_the_exclude_listing_only_hubs_be_fetched_so_their_posts_are_found(
    serve, crawl
):
    site = Site(
        {
            "/": html("/hub/", "/about"),
            "/hub/": html("/posts/1", "/posts/2"),
            "/posts/1": html(),
            "/posts/2": html(),
            "/about": html(),
        }
    )
    srv = serve(site.app)
    u = srv.url
    code, locs, why, _, _ = crawl(
        u + "/", "--include", "/posts/*", "--exclude-listing-only", "/hub/"
    )
    assert code == 0
    assert sorted(locs) == [u + "/posts/1", u + "/posts/2"]
    assert why[u + "/hub/"]["detail"] == "exclude_listing_only /hub/"
    assert why[u + "/hub/"]["status"] == 200
    assert why[u + "/about"]["detail"] == "not matched by include /posts/*"
    assert "/about" not in site.paths


@pytest.mark.parametrize("order", [("/hub", "/all"), ("/all", "/hub")])
def test_a_page_left_out_by_pattern_never_hides_its_twin(serve, crawl, order):
    same = html("/p", body="<p>every post</p>")
    site = Site(
        {
            "/": html(*order),
            # XHTML: served byte for byte (the test site marks HTML bodies with their path)
            "/hub": Page(same, content_type="application/xhtml+xml"),
            "/all": Page(same, content_type="application/xhtml+xml"),
            "/p": html(),
        }
    )
    srv = serve(site.app)
    u = srv.url
    code, locs, why, _, _ = crawl(u + "/", "--exclude-listing-only", "/hub", "--concurrency", "1")
    assert code == 0
    assert sorted(locs) == [u + "/", u + "/all", u + "/p"]
    assert why[u + "/hub"]["reason"] == "excluded_by_pattern"
    assert why[u + "/all"]["reason"] == "listed"


def test_patterns_from_a_config_file(serve, crawl, tmp_path):
    site = _blog_site()
    srv = serve(site.app)
    u = srv.url
    config = tmp_path / "c.toml"
    config.write_text(
        'include = ["/blog/*", "/tag/*"]\n'
        "exclude = ['re:^/tag/w']\n"
        'exclude_listing_only = ["/tag/*"]\n'
    )
    code, locs, why, _, _ = crawl(u + "/", "-c", str(config))
    assert code == 0
    assert "/tag/web" not in site.paths and "/about" not in site.paths
    assert "/tag/python" in site.paths
    assert sorted(locs) == [u + "/blog/", u + "/blog/a", u + "/blog/b?page=2"]
    assert why[u + "/tag/web"]["detail"] == "exclude re:^/tag/w"
    assert why[u + "/tag/python"]["detail"] == "exclude_listing_only /tag/*"
    # the command line's list replaces the file's
    code, locs, _, _, _ = crawl(u + "/", "-c", str(config), "--include", "/about")
    assert code == 0 and locs == [u + "/about"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--exclude", "/ok/*", "--exclude", "re:(unclosed"], "exclude pattern 're:(unclosed'"),
        (["--include", ""], "include pattern is empty"),
        (["--exclude-listing-only", "hub/*"], "exclude_listing_only pattern 'hub/*' can never"),
    ],
)
def test_a_bad_pattern_exits_2_before_any_request(serve, tmp_path, capsys, args, message):
    site = Site({"/": html()})
    srv = serve(site.app)
    out = tmp_path / "out"
    assert main(["crawl", srv.url + "/", "-o", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert message in err
    assert site.paths == [] and not out.exists()


def test_a_redirect_to_an_excluded_url_is_not_followed(serve, crawl):
    site = Site({"/": html("/old"), "/old": redirect("/tag/new"), "/tag/new": html()})
    srv = serve(site.app)
    u = srv.url
    code, locs, why, _, _ = crawl(u + "/", "--exclude", "/tag/*")
    assert code == 0
    assert "/tag/new" not in site.paths and "/old" in site.paths
    assert locs == [u + "/"]
    assert why[u + "/old"]["reason"] == "redirect"
    assert why[u + "/tag/new"]["reason"] == "excluded_by_pattern"


def test_a_canonical_to_an_excluded_url_is_not_fetched(serve, crawl):
    head = '<link rel="canonical" href="/print/a">'
    site = Site({"/": html("/a"), "/a": html(head=head), "/print/a": html()})
    srv = serve(site.app)
    code, _, why, _, _ = crawl(srv.url + "/", "--exclude", "/print/*")
    assert code == 0
    assert "/print/a" not in site.paths
    assert why[srv.url + "/print/a"]["detail"] == "exclude /print/*"


def test_patterns_see_the_public_path(serve, crawl):
    """With --public-url the pattern names the path the sitemap lists."""
    site = Site({"/": html("/tag/a", "/b"), "/tag/a": html(), "/b": html()})
    srv = serve(site.app)
    public = "https://www.example.com/site/"
    code, locs, _, _, _ = crawl(
        srv.url + "/", "--public-url", public, "--sitemap-url", public + "sitemap.xml",
        "--exclude", "/site/tag/*",
    )  # fmt: skip
    assert code == 0
    assert "/tag/a" not in site.paths
    assert sorted(locs) == [public, public + "b"]


def test_explain_an_excluded_url(serve, capsys, tmp_path):
    site = Site({"/": html("/blog/a"), "/blog/a": html(), "/tag/x": html()})
    srv = serve(site.app)
    u = srv.url
    assert main(["explain", u + "/tag/x", "--exclude", "/tag/*"]) == 3
    out = capsys.readouterr().out
    assert "not fetched" in out and "exclude /tag/*" in out
    assert "not listed: excluded by the crawl's include, exclude" in out
    assert "/tag/x" not in site.paths
    # with a crawl's config: the start URL is fetched but not listed, others must match
    config = tmp_path / "c.toml"
    config.write_text(f'url = "{u}/"\ninclude = ["/blog/*"]\n')
    assert main(["explain", "-c", str(config), u + "/"]) == 3
    assert "not matched by include /blog/*" in capsys.readouterr().out
    assert main(["explain", "-c", str(config), u + "/tag/x"]) == 3
    assert "not matched by include /blog/*" in capsys.readouterr().out
    assert "/tag/x" not in site.paths
    assert main(["explain", "-c", str(config), u + "/blog/a"]) == 0


# -- a resumed crawl ---------------------------------------------------------------------------

SITE = "http://site.test/"


@pytest.mark.parametrize(("budget", "p4"), [(5, "trap"), (6, "listed")])
def test_a_resumed_crawl_counts_the_trap_budgets_as_before(tmp_path, budget, p4):
    """A URL a pattern kept from being fetched spent no budget; a fetched page a pattern
    left out of the sitemap did: a resume counts them the same, so /p4, found after it,
    meets the same budget in both runs."""
    pages: dict = {
        SITE: html("/hub", "/skip-1", "/skip-2", "/p1"),
        SITE + "hub": html("/p2", "/p3", body="hub"),
        SITE + "p1": html("/p4", body="p1"),
        SITE + "p2": html(body="p2"),
        SITE + "p3": html(body="p3"),
        SITE + "p4": html(body="p4"),
    }
    options = {
        "concurrency": 1,
        "max_pages_per_folder": budget,
        "exclude": ("/skip-*",),
        "exclude_listing_only": ("/hub",),
    }
    _, _, whole = memory_crawl(pages, tmp_path / "whole", **options)
    assert whole[SITE + "p4"][0] == p4
    assert whole[SITE + "skip-1"] == ("excluded_by_pattern", "exclude /skip-*")
    options["state"] = tmp_path / "s.sqlite"
    crawl_until_crash(pages, tmp_path / "o", SITE + "p1", **options)
    _, resumed, decided = memory_crawl(pages, tmp_path / "o", resume=True, **options)
    assert SITE + "p1" in resumed.requested
    assert decided[SITE + "p4"][0] == p4
    assert decided[SITE + "hub"] == ("excluded_by_pattern", "exclude_listing_only /hub")
    assert not any("skip" in url for url in resumed.requested)


def test_the_pattern_keys_have_their_flags(capsys):
    with pytest.raises(SystemExit):
        main(["crawl", "--help"])
    text = capsys.readouterr().out
    for flag in ("--include PATTERN", "--exclude PATTERN", "--exclude-listing-only PATTERN"):
        assert flag in text
