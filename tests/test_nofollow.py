"""Every URL met has a decision (#24): a URL only nofollow links lead to is not fetched, and
is decided `nofollow`, naming one page linking to it; explain says a crawl alone can tell."""

from __future__ import annotations

from crawler.cli import main
from crawler.core.decide import PageFacts, Policy, nofollow_links
from crawler.core.directives import Directives
from tests.sites import Site, html, read_decisions, read_published


def test_nofollow_links_are_the_page_s_own_or_all_of_a_nofollow_page():
    policy = Policy(frozenset({"text/html"}))
    facts = PageFacts("http://h/", 200, "text/html")
    assert nofollow_links(facts, ["http://h/a"], ["http://h/n"], policy) == ["http://h/n"]
    facts.meta = Directives(nofollow=True, source='meta robots "nofollow"')
    assert nofollow_links(facts, ["http://h/a"], ["http://h/n"], policy) == [
        "http://h/a",
        "http://h/n",
    ]
    follow = Policy(frozenset({"text/html"}), follow_nofollow=True)
    assert nofollow_links(facts, ["http://h/a"], ["http://h/n"], follow) == []


def test_a_url_only_nofollow_links_reach_is_decided_nofollow(serve, tmp_path, xsd, capsys):
    site = Site(
        {
            "/": '<a rel="nofollow" href="/only-nf">a</a><a rel="nofollow" href="/both">b</a>'
            '<a href="/b">b</a>',
            "/b": '<a href="/both">x</a><a rel="nofollow" href="/only-nf">y</a>',
            "/both": html(),
            "/only-nf": html(),
        }
    )
    srv = serve(site.app)
    u = srv.url
    out, dec = tmp_path / "out", tmp_path / "d.jsonl"
    assert main(["crawl", u + "/", "-o", str(out), "-q", "--decisions", str(dec)]) == 0
    decisions = read_decisions(dec)
    assert sorted(read_published(out, xsd).locs) == [u + "/", u + "/b", u + "/both"]
    assert decisions[u + "/only-nf"]["reason"] == "nofollow"
    assert decisions[u + "/only-nf"]["detail"] == f"linked only by nofollow links, e.g. from {u}/"
    assert "/only-nf" not in site.paths
    # --follow-nofollow: a link like any other
    out2 = tmp_path / "out2"
    assert main(["crawl", u + "/", "-o", str(out2), "-q", "--follow-nofollow"]) == 0
    assert u + "/only-nf" in read_published(out2, xsd).locs
    capsys.readouterr()
    assert main(["explain", u + "/only-nf"]) == 0
    said = capsys.readouterr().out
    assert "or if only rel=nofollow links lead to it" in said
    assert said.count("(judged on its own") == 1  # one general note, not a caveat each


def test_nofollow_links_to_the_public_origin_are_known_in_crawl_space(serve, tmp_path, xsd):
    """A copy crawled with --public-url whose links name the live origin: a URL a followed
    link also leads to is not decided `nofollow` (the nofollow links are mapped as links are)."""
    public = "https://www.example.com"
    site = Site(
        {
            "/": f'<a rel="nofollow" href="{public}/only-nf">a</a>'
            f'<a rel="nofollow" href="{public}/both">b</a><a href="{public}/both">c</a>',
            "/both": html(),
            "/only-nf": html(),
        }
    )
    srv = serve(site.app)
    out, dec = tmp_path / "out", tmp_path / "d.jsonl"
    args = ["crawl", srv.url + "/", "-o", str(out), "-q", "--decisions", str(dec)]
    assert main([*args, "--public-url", public + "/"]) == 0
    decisions = read_decisions(dec)
    assert sorted(read_published(out, xsd).locs) == [public + "/", public + "/both"]
    assert decisions[public + "/both"]["reason"] != "nofollow"
    assert decisions[public + "/only-nf"]["reason"] == "nofollow"
