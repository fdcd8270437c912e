"""What the search engines reading the sitemap may index (#24, search_engines): their own
robots.txt groups and the meta and header directives addressed to them by name, in the pure
core and through crawl, explain, the audit and a 304 night, against servers on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crawler.cli import main
from crawler.config import Config
from crawler.core.decide import (
    HEADER_NOINDEX,
    LISTED,
    META_NOINDEX,
    ROBOTS_TXT,
    PageFacts,
    Policy,
    TrapBudgets,
    decide_page,
)
from crawler.core.directives import Directives, header_directives, meta_directives
from crawler.core.history import Prior, revive
from crawler.core.page import PagePolicy, PageResult, analyse
from crawler.core.robots import parse_robots
from crawler.core.screen import Plan, Screen
from crawler.core.wire import pack, unpack
from crawler.errors import ConfigError
from tests.sites import Page, Site, html, read_decisions, read_published, urlset

ENGINES = ("googlebot", "bingbot")
ROBOTS = (
    "User-agent: sitemap-crawler\nAllow: /\n\n"
    "User-agent: Googlebot\nDisallow: /g-only/\n\n"
    "User-agent: bingbot\nDisallow: /b-only/\n\n"
    "User-agent: *\nDisallow: /nobody/\n"
)


# -- the pure rules ------------------------------------------------------------------------


def test_meta_addressed_to_an_engine_is_its_noindex_only():
    tags = [("googlebot", "noindex"), ("BingBot", "none"), ("otherbot", "noindex")]
    said = meta_directives(tags, "sitemap-crawler", ENGINES)
    assert not said.noindex and not said.nofollow  # none of it binds us
    assert said.engines == (
        ("googlebot", 'meta googlebot "noindex"'),
        ("bingbot", 'meta bingbot "none"'),
    )
    # an engine's nofollow, or any directive without the engines named, is nothing to us
    assert meta_directives([("googlebot", "nofollow")], "x", ENGINES).engines == ()
    assert meta_directives(tags, "sitemap-crawler") == Directives()
    # robots still speaks to every robot, the engines too
    general = meta_directives([("robots", "noindex")], "x", ENGINES)
    assert general.noindex and general.engines == ()


@pytest.mark.parametrize(
    ("values", "engines"),
    [
        (["googlebot: noindex"], ("googlebot",)),
        (["googlebot: none"], ("googlebot",)),
        (["noarchive, bingbot: noindex, nofollow"], ("bingbot",)),
        (["googlebot: nofollow"], ()),
        (["otherbot: noindex"], ()),
        (["googlebot: noindex", "bingbot: noindex"], ("googlebot", "bingbot")),
    ],
)
def test_x_robots_tag_addressed_to_an_engine(values, engines):
    said = header_directives(values, "sitemap-crawler", ENGINES)
    assert not said.noindex
    assert tuple(engine for engine, _ in said.engines) == engines
    for engine, source in said.engines:
        assert source.startswith("X-Robots-Tag ") and engine in source


def test_merge_keeps_each_engines_noindex():
    meta = meta_directives([("googlebot", "noindex")], "x", ENGINES)
    header = header_directives(["noindex"], "x", ENGINES)
    merged = meta.merge(header)
    assert merged.noindex and merged.engines == meta.engines


def _facts(**kwargs: object) -> PageFacts:
    return PageFacts("http://h/p", 200, "text/html", **kwargs)  # type: ignore[arg-type]


POLICY = Policy(frozenset({"text/html"}))


def test_decide_names_the_engine():
    google = meta_directives([("googlebot", "noindex")], "x", ENGINES)
    decision = decide_page(_facts(meta=google), POLICY)
    assert decision.reason == META_NOINDEX
    assert decision.detail == 'for googlebot: meta googlebot "noindex"'
    bing = header_directives(["bingbot: none"], "x", ENGINES)
    decision = decide_page(_facts(header=bing), POLICY)
    assert (decision.reason, decision.detail) == (
        HEADER_NOINDEX,
        'for bingbot: X-Robots-Tag "bingbot: none"',
    )
    # our own noindex is named first; respect_noindex off lists the page whoever is told
    both = meta_directives([("robots", "noindex"), ("googlebot", "noindex")], "x", ENGINES)
    assert decide_page(_facts(meta=both), POLICY).detail == 'meta robots "noindex"'
    off = Policy(frozenset({"text/html"}), respect_noindex=False)
    assert decide_page(_facts(meta=google), off).reason == LISTED
    denied = decide_page(_facts(engine_denial="for googlebot: Disallow: /g/ (line 3)"), POLICY)
    assert (denied.reason, denied.detail) == (ROBOTS_TXT, "for googlebot: Disallow: /g/ (line 3)")


def _screen(engines: tuple[str, ...]) -> Screen:
    screen = Screen(
        Plan.make("http://h/", None, None),
        user_agent="sitemap-crawler/1.0",
        max_url_length=2000,
        max_segment_repeats=3,
        max_depth=-1,
        budgets=TrapBudgets(),
        engines=engines,
    )
    screen.robots = parse_robots(ROBOTS)
    return screen


def test_the_screen_fetches_by_our_group_and_judges_the_engines_by_theirs():
    screen = _screen(ENGINES)
    # we may fetch all three (our group allows everything)
    for path in ("/g-only/a", "/b-only/a", "/nobody/a", "/ok"):
        assert screen("http://h" + path, 1) is None
    assert screen.engine_denial("http://h/g-only/a") == "for googlebot: Disallow: /g-only/ (line 5)"
    assert screen.engine_denial("http://h/b-only/a") == "for bingbot: Disallow: /b-only/ (line 8)"
    # an engine without a group of its own is judged by the * group, as it reads robots.txt
    assert _screen(("duckduckbot",)).engine_denial("http://h/nobody/a") is not None
    assert screen.engine_denial("http://h/nobody/a") is None  # both have groups of their own
    assert screen.engine_denial("http://h/ok") is None
    assert _screen(()).engine_denial("http://h/g-only/a") is None


def test_analyse_carries_the_engines_directives_across_the_wire_and_a_304():
    """One analysis, in-process and in workers alike: the directives cross a pipe and the
    history as packed records, so a 304 night judges the page as the full answer did."""
    from multidict import CIMultiDict

    policy = PagePolicy("sitemap-crawler", engines=ENGINES)
    headers = CIMultiDict({"Content-Type": "text/html", "X-Robots-Tag": "bingbot: noindex"})
    body = b'<html><head><meta name="googlebot" content="noindex"></head><body></body></html>'
    page = analyse("http://h/p", 200, headers, body, False, policy)
    assert page.meta.engines == (("googlebot", 'meta googlebot "noindex"'),)
    assert page.header.engines == (("bingbot", 'X-Robots-Tag "bingbot: noindex"'),)
    assert unpack(PageResult, pack(page)) == page
    prior = Prior(mime="text/html", meta=unpack(Directives, pack(page.meta)), header=page.header)
    answer = analyse("http://h/p", 304, CIMultiDict(), b"", False, policy)
    revived = revive(prior, answer, header_given=False, targets=[])
    assert revived.meta.engines == page.meta.engines
    assert revived.header.engines == page.header.engines


def test_search_engines_config():
    assert Config(url="http://h/").validate().search_engines == ENGINES
    assert Config(
        url="http://h/", search_engines=(" GoogleBot ", "googlebot")
    ).validate().search_engines == ("googlebot",)
    assert Config(url="http://h/", search_engines=()).validate().search_engines == ()
    with pytest.raises(ConfigError, match="search_engines"):
        Config(url="http://h/", search_engines=("Googlebot/2.1",)).validate()


# -- through the CLI, against a live site ------------------------------------------------------


def _site() -> Site:
    return Site(
        {
            "/robots.txt": Page(ROBOTS, content_type="text/plain"),
            "/": html(
                "/g-only/page",
                "/b-only/page",
                "/nobody/page",
                "/g-meta",
                "/b-meta",
                "/g-header",
                "/b-header",
                "/g-nofollow",
            ),
            # fetched by us (our group allows it): its links still lead on
            "/g-only/page": html("/reached"),
            "/reached": html(),
            "/b-only/page": html(),
            "/nobody/page": html(),
            "/g-meta": html(head='<meta name="googlebot" content="noindex">'),
            "/b-meta": html(head='<meta name="bingbot" content="none">'),
            "/g-header": Page(html(), headers={"X-Robots-Tag": "googlebot: noindex"}),
            "/b-header": Page(html(), headers={"X-Robots-Tag": "bingbot: none"}),
            "/g-nofollow": html(head='<meta name="googlebot" content="nofollow">'),
        }
    )


def _crawl(tmp_path: Path, url: str, xsd, *args: str) -> tuple[list[str], dict[str, dict]]:
    n = len(list(tmp_path.glob("out*")))
    out, dec = tmp_path / f"out{n}", tmp_path / f"d{n}.jsonl"
    code = main(["crawl", url + "/", "-o", str(out), "-q", "--decisions", str(dec), *args])
    assert code == 0
    return sorted(read_published(out, xsd).locs), read_decisions(dec)


def test_crawl_lists_only_what_each_engine_may_index(serve, tmp_path, xsd, capsys):
    site = _site()
    srv = serve(site.app)
    u = srv.url
    locs, decisions = _crawl(tmp_path, u, xsd)
    assert locs == [u + p for p in ("/", "/g-nofollow", "/nobody/page", "/reached")]
    expected = {
        "/g-only/page": ("robots_txt", "for googlebot: Disallow: /g-only/ (line 5)"),
        "/b-only/page": ("robots_txt", "for bingbot: Disallow: /b-only/ (line 8)"),
        "/g-meta": ("meta_noindex", 'for googlebot: meta googlebot "noindex"'),
        "/b-meta": ("meta_noindex", 'for bingbot: meta bingbot "none"'),
        "/g-header": ("header_noindex", 'for googlebot: X-Robots-Tag "googlebot: noindex"'),
        "/b-header": ("header_noindex", 'for bingbot: X-Robots-Tag "bingbot: none"'),
    }
    for path, (reason, detail) in expected.items():
        assert (decisions[u + path]["reason"], decisions[u + path]["detail"]) == (reason, detail)
    assert "/g-only/page" in site.paths  # fetched: our group governs what we request
    # one engine: the other's rules are not its business; none: our own rules only
    locs, _ = _crawl(tmp_path, u, xsd, "--search-engines", "googlebot")
    assert u + "/b-only/page" in locs and u + "/b-meta" in locs and u + "/g-meta" not in locs
    locs, _ = _crawl(tmp_path, u, xsd, "--search-engines", "")
    assert len(locs) == 10  # every page of the site
    capsys.readouterr()


def test_the_environment_and_the_config_file_set_the_engines(serve, tmp_path, xsd, monkeypatch):
    srv = serve(_site().app)
    monkeypatch.setenv("SITEMAP_CRAWLER_SEARCH_ENGINES", "bingbot")
    locs, _ = _crawl(tmp_path, srv.url, xsd)
    assert srv.url + "/g-meta" in locs and srv.url + "/b-meta" not in locs
    monkeypatch.delenv("SITEMAP_CRAWLER_SEARCH_ENGINES")
    config = tmp_path / "c.toml"
    config.write_text("search_engines = []\n")
    locs, _ = _crawl(tmp_path, srv.url, xsd, "-c", str(config))
    assert srv.url + "/g-meta" in locs and srv.url + "/b-only/page" in locs


def test_explain_names_the_engine(serve, capsys):
    srv = serve(_site().app)
    assert main(["explain", srv.url + "/g-only/page"]) != 0
    out = capsys.readouterr().out
    assert "for googlebot: Disallow: /g-only/ (line 5)" in out
    assert main(["explain", srv.url + "/b-header"]) != 0
    assert 'for bingbot: X-Robots-Tag "bingbot: none"' in capsys.readouterr().out
    assert main(["explain", srv.url + "/g-meta", "--search-engines", "bingbot"]) == 0
    capsys.readouterr()


def test_the_audit_names_the_engine(serve, tmp_path, capsys):
    site = _site()
    srv = serve(site.app)
    u = srv.url
    listed = ["/", "/g-only/page", "/g-meta", "/b-header"]
    site.pages["/sitemap.xml"] = urlset(u, listed)
    out = tmp_path / "audit.json"
    code = main(["audit", u + "/sitemap.xml", "-q", "--report", str(out), "--retries", "0"])
    assert code == 1
    found = {f["url"]: f for f in json.loads(out.read_text())["findings"] if f.get("url")}
    assert found[u + "/g-only/page"]["code"] == "blocked_by_robots"
    assert "for googlebot" in found[u + "/g-only/page"]["detail"]
    assert found[u + "/g-meta"]["code"] == "noindex"
    assert "for googlebot" in found[u + "/g-meta"]["detail"]
    assert found[u + "/b-header"]["code"] == "noindex"
    assert "for bingbot" in found[u + "/b-header"]["detail"]
    assert u + "/" not in found
    capsys.readouterr()


def test_a_304_night_keeps_the_engines_directives(serve, tmp_path, xsd):
    from tests.test_incremental import HistorySite

    class Told(HistorySite):
        def render(self, path: str) -> str:
            page = super().render(path)
            if path == "/p/2":
                page = page.replace("<head>", '<head><meta name="googlebot" content="noindex">')
            return page

    site = Told(pages=4)
    srv = serve(site.app())
    url, state = srv.url + "/p/2", str(tmp_path / "state.sqlite")
    for _night in range(2):  # the second: every page answers 304
        site.reset()
        locs, decisions = _crawl(tmp_path, srv.url, xsd, "--state", state)
        assert url not in locs
        assert decisions[url]["detail"] == 'for googlebot: meta googlebot "noindex"'
    assert site.bodies == 0 and site.not_modified > 0  # the second night: all 304s
