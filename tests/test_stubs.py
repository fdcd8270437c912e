"""Redirect stubs are redirects (#24): a meta refresh of up to 5 s and a page that is only a
script setting the location are `redirect` decisions, their targets followed like an HTTP
redirect's (scope, robots.txt, --public-url), in the pure core and against live servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from multidict import CIMultiDict

from crawler.cli import main
from crawler.core.decide import REDIRECT, PageFacts, Policy, decide_page
from crawler.core.page import PagePolicy, analyse
from crawler.core.stubs import REFRESH_MAX_DELAY, refresh_target, script_target
from tests.sites import Page, Site, html, read_decisions, read_published, urlset


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("0; url=/new/", (0, "/new/")),
        ("0;URL='http://x/new'", (0, "http://x/new")),
        ('0 ; url = "/q" ', (0, "/q")),
        ("3, /a", (3, "/a")),
        ("1.5;url=/z", (1, "/z")),  # whole seconds, as browsers read it
        (f"{int(REFRESH_MAX_DELAY)}; url=/x", (5, "/x")),
        (f"{int(REFRESH_MAX_DELAY) + 1}; url=/x", None),  # a page that moves on later
        ("5", None),  # a reload, not a redirect
        ("url=/x", None),  # no delay: no refresh at all
        ("5abc;url=/x", None),
        ("", None),
    ],
)
def test_refresh_target(content, expected):
    assert refresh_target(content) == expected


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ('location.href="/new/"', ("/new/", "sets location.href")),
        ("window.location = '/n';", ("/n", "sets location")),
        (' location.replace("/r") ', ("/r", "calls location.replace()")),
        ("document.location.assign( '/a' );", ("/a", "calls location.assign()")),
        ('location.href="/n/"+location.hash', None),  # computed: only a browser knows
        ('var a=1;location="/x"', None),
        ('location.hash="x"', None),
        ('location.href=""', None),
    ],
)
def test_script_target(script, expected):
    assert script_target(script) == expected


POLICY = PagePolicy("sitemap-crawler")
HTML = CIMultiDict({"Content-Type": "text/html"})


def _moved(body: str, url: str = "http://h/old/page") -> tuple[str | None, str]:
    page = analyse(url, 200, HTML, body.encode(), False, POLICY)
    return page.moved_to, page.moved_by


def test_analyse_finds_the_stubs_the_generators_write():
    mkdocs = (
        '<!doctype html><html><head><meta charset="utf-8"><title>Redirecting...</title>'
        '<link rel="canonical" href="../new/"><meta name="robots" content="noindex">'
        '<script>var anchor=window.location.hash.substr(1);location.href="../new/"+'
        '(anchor?"#"+anchor:"")</script><meta http-equiv="refresh" content="0; url=../new/">'
        "</head><body>Redirecting...</body></html>"
    )
    assert _moved(mkdocs) == ("http://h/new/", "meta refresh (0 s)")
    script_only = (
        "<html><head><title>Redirecting</title><script>location.href='/new/'</script>"
        "</head><body><p>Redirecting...</p></body></html>"
    )
    assert _moved(script_only) == ("http://h/new/", "script sets location.href")
    # not stubs: a page with content, two scripts, a long delay, a refresh of itself
    text = "<p>" + "A page with a great deal to say. " * 10 + "</p>"
    assert _moved(f"<script>location='/x'</script>{text}") == (None, "")
    assert _moved("<script>location='/x'</script><script>track()</script>") == (None, "")
    assert _moved('<meta http-equiv="refresh" content="30; url=/x">') == (None, "")
    assert _moved('<meta http-equiv="refresh" content="0; url=page">') == (None, "")


def test_a_stub_is_a_redirect_decision():
    facts = PageFacts("http://h/old", 200, "text/html", moved_to="http://h/new", moved_by="x")
    decision = decide_page(facts, Policy(frozenset({"text/html"})))
    assert (decision.reason, decision.detail) == (REDIRECT, "x to http://h/new")


def _stub_site() -> Site:
    return Site(
        {
            "/": html("/old/", "/js-old", "/replaced", "/countdown", "/off-site", "/computed"),
            "/old/": html(head='<meta http-equiv="refresh" content="0; url=/new/">'),
            "/new/": html(),
            "/js-old": "<html><head><title>Moved</title>"
            '<script>location.href = "/js-new";</script></head><body>Moved</body></html>',
            "/js-new": html(),
            "/replaced": '<script>location.replace("/private/page")</script>',
            "/private/page": html(),
            "/countdown": html(head='<meta http-equiv="refresh" content="30; url=/new/">'),
            "/off-site": html(
                head='<meta http-equiv="refresh" content="0; url=http://elsewhere.invalid/">'
            ),
            "/computed": '<script>location.href = "/c" + location.search</script>',
            "/robots.txt": Page("User-agent: *\nDisallow: /private/\n", content_type="text/plain"),
        }
    )


def _crawl(tmp_path: Path, start: str, xsd, *args: str):
    n = len(list(tmp_path.glob("out*")))
    out, dec = tmp_path / f"out{n}", tmp_path / f"d{n}.jsonl"
    code = main(["crawl", start, "-o", str(out), "-q", "--decisions", str(dec), *args])
    assert code == 0
    return sorted(read_published(out, xsd).locs), read_decisions(dec)


def test_a_crawl_follows_stubs_like_redirects(serve, tmp_path, xsd):
    site = _stub_site()
    srv = serve(site.app)
    u = srv.url
    locs, decisions = _crawl(tmp_path, u + "/", xsd)
    # the targets only stubs lead to are listed; the stubs are not
    assert locs == [u + p for p in ("/", "/computed", "/countdown", "/js-new", "/new/")]
    assert decisions[u + "/old/"]["reason"] == "redirect"
    assert decisions[u + "/old/"]["detail"] == f"meta refresh (0 s) to {u}/new/"
    assert decisions[u + "/js-old"]["detail"] == f"script sets location.href to {u}/js-new"
    # the target is screened like an HTTP redirect's: robots.txt, scope
    assert decisions[u + "/replaced"]["reason"] == "redirect"
    assert decisions[u + "/private/page"]["reason"] == "robots_txt"
    assert decisions[u + "/off-site"]["reason"] == "redirect"
    assert decisions["http://elsewhere.invalid/"]["reason"] == "out_of_scope"
    assert "/private/page" not in site.paths


def test_a_stub_names_its_target_under_public_url(serve, tmp_path, xsd):
    srv = serve(_stub_site().app)
    public = "https://www.example.com"
    locs, decisions = _crawl(tmp_path, srv.url + "/", xsd, "--public-url", public + "/")
    assert public + "/new/" in locs
    assert decisions[public + "/old/"]["detail"] == f"meta refresh (0 s) to {public}/new/"


def test_a_stub_is_fetched_whole_every_night(serve, tmp_path, xsd):
    """The history keeps no stub's target, so a stub keeps no validators: a 304 never
    stands for it, and the second night judges it as the first."""
    site = _stub_site()
    srv = serve(site.app)
    state = str(tmp_path / "state.sqlite")
    for _night in range(2):
        locs, decisions = _crawl(tmp_path, srv.url + "/", xsd, "--state", state)
        assert decisions[srv.url + "/old/"]["reason"] == "redirect"
        assert srv.url + "/old/" not in locs


def test_audit_crawl_no_longer_reports_stubs_as_missing(serve, tmp_path, capsys):
    site = _stub_site()
    srv = serve(site.app)
    u = srv.url
    listed = ["/", "/new/", "/js-new", "/countdown", "/computed", "/old/"]
    site.pages["/sitemap.xml"] = urlset(u, listed)
    out = tmp_path / "audit.json"
    main(["audit", u + "/", "--crawl", "-q", "--json", str(out), "--retries", "0"])
    findings = json.loads(out.read_text())["findings"]
    missing = [f["url"] for f in findings if f["code"] == "missing_from_sitemap"]
    assert missing == []
    redirects = {f["url"]: f["detail"] for f in findings if f["code"] == "redirect"}
    assert redirects == {u + "/old/": f"meta refresh (0 s) to {u}/new/"}
    capsys.readouterr()


@pytest.mark.usefixtures("a_browser")
def test_a_rendered_page_that_navigates_away_is_a_redirect(serve, tmp_path, xsd):
    """A computed location is no raw stub (only a browser knows where it goes); rendered,
    the navigation the browser was refused is the page's redirect."""
    text = "<p>" + "Moved somewhere, computed by a script. " * 10 + "</p>"
    site = Site(
        {
            "/": html("/computed"),
            "/computed": f'<script>location.href = "/ta" + "rget/"</script>{text}',
            "/refreshed": '<meta http-equiv="refresh" content="0; url=/target/">Moved',
            "/target/": html("/refreshed"),
        }
    )
    srv = serve(site.app)
    u = srv.url
    locs, decisions = _crawl(tmp_path, u + "/", xsd)
    assert u + "/computed" in locs and u + "/target/" not in locs  # raw: a page
    locs, decisions = _crawl(tmp_path, u + "/", xsd, "--render", "always", "--workers", "0")
    assert locs == [u + "/", u + "/target/"]
    assert decisions[u + "/computed"]["reason"] == "redirect"
    assert decisions[u + "/computed"]["detail"].startswith(
        f"its script navigated while rendering to {u}/target/"
    )
    assert decisions[u + "/refreshed"]["reason"] == "redirect"  # not a script's navigation
    assert decisions[u + "/refreshed"]["detail"].startswith(f"meta refresh (0 s) to {u}/target/")


#: A tall page whose height, when the renderer reads it to scroll, sends the browser away
#: and keeps the document busy until the navigation lands: the read is cut short by its
#: own document going away, every time (it once did so by chance, under load)
_NAVIGATES_WHEN_MEASURED = (
    "<html><body><div style='height:5000px'><p>"
    + "Moved somewhere, by a script reading its height. " * 10
    + "</p></div><script>"
    "Object.defineProperty(document.documentElement, 'scrollHeight', {get() {"
    " location.href = '/target/'; const end = Date.now() + 1500; while (Date.now() < end) {}"
    " return 5000; }});</script></body></html>"
)


@pytest.mark.usefixtures("a_browser")
def test_a_page_that_navigates_while_the_renderer_reads_it_is_a_redirect(serve, tmp_path, xsd):
    """Not an unexpected failure (exit 70): the navigation the browser was refused is the
    page's redirect, as when it navigates while it loads."""
    site = Site({"/": html("/late"), "/late": _NAVIGATES_WHEN_MEASURED, "/target/": html()})
    u = serve(site.app).url
    locs, decisions = _crawl(tmp_path, u + "/", xsd, "--render", "always", "--workers", "0")
    assert locs == [u + "/", u + "/target/"]
    assert decisions[u + "/late"]["reason"] == "redirect"
    assert decisions[u + "/late"]["detail"].startswith(
        f"its script navigated while rendering to {u}/target/"
    )


@pytest.mark.usefixtures("a_browser")
def test_a_page_whose_script_breaks_the_renderer_s_reads_is_a_fetch_error(serve, tmp_path, xsd):
    """A page's script that throws when the renderer reads its height costs that page (a
    fetch error naming the browser's message), not the crawl (it was exit 70)."""
    throws = (
        "<html><body><div style='height:5000px'>Tall.</div><script>"
        "Object.defineProperty(document.documentElement, 'scrollHeight', {get() {"
        " throw new Error('no height here'); }});</script></body></html>"
    )
    site = Site({"/": html("/throws"), "/throws": throws})
    u = serve(site.app).url
    locs, decisions = _crawl(tmp_path, u + "/", xsd, "--render", "always", "--workers", "0")
    assert locs == [u + "/"]
    assert decisions[u + "/throws"]["reason"] == "fetch_error"
    assert "the browser could not render it" in decisions[u + "/throws"]["detail"]
    assert "no height here" in decisions[u + "/throws"]["detail"]
