"""Nights against a server answering 304 to If-None-Match as nginx does (issue #22): what a
304 revives is what the full answer said, a page over max_page_bytes is never revived, and
the publish guard compares parts with parts. Real servers on 127.0.0.1."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from crawler.cli import main
from crawler.core.page import PagePolicy, PageResult, analyse
from crawler.shell.revalidation import Answer
from tests.sites import html, read_decisions, read_published

CAP = 200_000


class NginxLike:
    """Static files with a strong ETag and a Last-Modified, a 304 to a matching
    If-None-Match (nginx's default). Counts bodies sent and conditional requests per path."""

    def __init__(self) -> None:
        canonical = '<link rel="canonical" href="/a">'
        self.pages: dict[str, tuple[str, bytes, dict[str, str]]] = {
            "/": self._html(
                html("/a", "/b", "/c", "/d", "/n", "/f", "/big.pdf", "/big.html", "/e.pdf")
            ),
            "/a": self._html(html("/a/1", "/a/2")),
            "/a/1": self._html(html()),
            "/a/2": self._html(html()),
            "/b": self._html(html("/b/1", head=canonical)),  # canonical elsewhere
            "/b/1": self._html(html()),
            "/c": self._html(html("/c/1", head='<meta name="robots" content="noindex">')),
            "/c/1": self._html(html()),
            "/d": self._html(html("/d/1"), {"X-Robots-Tag": "noindex, nofollow"}),
            "/d/1": self._html(html()),
            "/big.pdf": ("application/pdf", b"%PDF-1.4 " + b"x" * 300_000, {}),
            # over the cap, its link never read: /hidden is found by no other page
            "/big.html": self._html(html("/hidden") + " " * 300_000),
            "/hidden": self._html(html()),
            "/e.pdf": ("application/pdf", b"%PDF-1.4 small", {}),
            # /n/1 is reached only by a rel=nofollow link: met, not fetched (#24)
            "/n": self._html(html(body='<a rel="nofollow" href="/n/1">x</a>')),
            "/n/1": self._html(html()),
            # a canonical in the HTML and another in the Link header (sent with a 304 too):
            # the HTML link wins (core.page.analyse), on a 304 night as well
            "/f": self._html(html(head=canonical), {"Link": '</f/other>; rel="canonical"'}),
        }
        for path, (mime, body, extra) in self.pages.items():  # no two pages byte-identical
            if mime.startswith("text/html"):
                self.pages[path] = (mime, body + f"<!-- {path} -->".encode(), extra)
        self.honour = True
        self.bodies: dict[str, int] = {}
        self.asked: dict[str, int] = {}  # conditional requests

    @staticmethod
    def _html(body: str, headers: dict[str, str] | None = None):
        return "text/html; charset=utf-8", body.encode(), headers or {}

    def app(self) -> web.Application:
        async def handle(request: web.Request) -> web.StreamResponse:
            found = self.pages.get(request.path)
            if found is None:
                return web.Response(status=404, text="no")
            mime, body, extra = found
            tag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            headers = {"ETag": tag, "Last-Modified": "Mon, 05 Jan 2026 10:00:00 GMT", **extra}
            if request.headers.get("If-None-Match"):
                self.asked[request.path] = self.asked.get(request.path, 0) + 1
                if self.honour and request.headers["If-None-Match"] == tag:
                    return web.Response(status=304, headers=headers)
            self.bodies[request.path] = self.bodies.get(request.path, 0) + 1
            return web.Response(body=body, headers={**headers, "Content-Type": mime})

        app = web.Application()
        app.router.add_get("/{tail:.*}", handle)
        return app

    def reset(self) -> None:
        self.bodies, self.asked = {}, {}


def _night(url: str, tmp: Path, state: Path, xsd, name: str, *args: str):
    out, decisions = tmp / name, tmp / f"{name}.jsonl"
    code = main(
        ["crawl", url + "/", "-o", str(out), "-q", "--state", str(state),
         "--decisions", str(decisions), "--max-page-bytes", str(CAP), *args]
    )  # fmt: skip
    assert code == 0
    return read_published(out, xsd), read_decisions(decisions)


def _verdicts(decisions: dict[str, dict]) -> dict[str, tuple]:
    return {u: (d["reason"], d["listed"], d.get("detail")) for u, d in decisions.items()}


def test_a_page_over_the_cap_stays_out_every_night(serve, tmp_path, xsd):
    site = NginxLike()
    srv = serve(site.app())
    state = tmp_path / "state.sqlite"
    big, hidden = srv.url + "/big.pdf", srv.url + "/hidden"
    first, decisions = _night(srv.url, tmp_path, state, xsd, "n1")
    assert big not in first.locs and decisions[big]["reason"] == "too_large"
    assert hidden not in decisions  # the cut page's links are not read
    for night in ("n2", "n3"):
        site.reset()
        published, decisions = _night(srv.url, tmp_path, state, xsd, night)
        assert published.locs == first.locs
        assert decisions[big]["reason"] == "too_large"
        assert hidden not in decisions
        # asked whole (no validators were kept for it), so judged on its size again
        assert "/big.pdf" not in site.asked and site.bodies["/big.pdf"] == 1
        assert "/big.html" not in site.asked
        assert site.asked["/a"] == 1 and "/a" not in site.bodies  # the others: 304s


def test_a_304_night_publishes_what_a_full_night_does(serve, tmp_path, xsd):
    site = NginxLike()
    srv = serve(site.app())
    state, baseline = tmp_path / "state.sqlite", tmp_path / "baseline.sqlite"
    _night(srv.url, tmp_path, state, xsd, "n1")
    shutil.copy(state, baseline)

    site.reset()
    revived, revived_decisions = _night(srv.url, tmp_path, state, xsd, "revived")
    assert site.asked and set(site.bodies) == {"/big.pdf", "/big.html"}  # 304s but these

    shutil.copy(baseline, state)
    site.honour, _ = False, site.reset()
    full, full_decisions = _night(srv.url, tmp_path, state, xsd, "full")
    assert set(site.bodies) == set(site.pages) - {"/hidden", "/d/1", "/n/1"}  # not fetched
    assert _verdicts(revived_decisions) == _verdicts(full_decisions)
    assert revived.locs == full.locs and revived.lastmods == full.lastmods
    for path in full.files:
        assert (tmp_path / "revived" / path.name).read_bytes() == path.read_bytes()
    u = srv.url
    assert revived_decisions[u + "/b"]["reason"] == "canonicalised"
    assert revived_decisions[u + "/c"]["reason"] == "meta_noindex"
    assert revived_decisions[u + "/d"]["reason"] == "header_noindex"
    # a revived page's links are followed as the full page's (not a nofollow page's)
    assert {u + "/a/1", u + "/a/2"} <= set(revived.locs)
    # met only through a nofollow page's links: not fetched, decided nofollow (#24)
    assert revived_decisions[u + "/d/1"]["reason"] == "nofollow"
    # met only through a rel=nofollow link: kept from the history on a 304 (review #1)
    assert revived_decisions[u + "/n/1"]["reason"] == "nofollow"
    # the HTML canonical over the 304's Link header, as the full answer (review #7)
    assert revived_decisions[u + "/f"]["reason"] == "canonicalised"
    assert revived_decisions[u + "/f"]["detail"] == full_decisions[u + "/f"]["detail"]
    assert u + "/f/other" not in revived_decisions


def test_another_byte_cap_asks_for_whole_pages_again(serve, tmp_path, xsd):
    site = NginxLike()
    srv = serve(site.app())
    state = tmp_path / "state.sqlite"
    _night(srv.url, tmp_path, state, xsd, "n1")
    site.reset()
    # the cap changes a page's facts (too large or not): its history is not reused
    _night(srv.url, tmp_path, state, xsd, "n2", "--max-page-bytes", str(CAP * 2))
    assert not site.asked


def test_a_news_site_run_twice_with_a_tight_max_shrink_publishes_both_times(serve, crawl, tmp_path):
    now = datetime.now(UTC).replace(microsecond=0)
    published = (now - timedelta(hours=2)).isoformat()
    article = html(head=f'<meta property="article:published_time" content="{published}">')
    news = [f"/news/{i}" for i in range(3)]
    pages = {"/": html(*news, "/about"), "/about": html(), **dict.fromkeys(news, article)}
    from tests.sites import Site

    srv = serve(Site(pages).app)
    config = tmp_path / "news.toml"
    config.write_text('[news]\nname = "The Times"\nlanguage = "en"\narticles = ["/news/*"]\n')
    for _ in range(2):  # 5 URLs in the parts, 3 more in the news sitemap: not a shrink
        code, pub, _, err = crawl(srv.url + "/", "-c", str(config), "--max-shrink", "0.1")
        assert code == 0, err
        assert {p.name for p in pub.files} == {"sitemap.xml", "sitemap-1.xml", "sitemap-news.xml"}
        assert len(pub.locs) == 5 + 3


def test_a_304_that_names_nothing_is_the_bodiless_record_the_constructor_makes() -> None:
    """#26: the usual 304 (no Content-Type, X-Robots-Tag nor Link) gets one shared record,
    not one made a page: it must be the record analyse made before, field for field, and
    a 304 that names any of the three still gets its own."""
    policy = PagePolicy("sitemap-crawler")
    made = PageResult("", targets=[], not_modified=True)
    for names in (
        {},
        {"Server": "nginx", "ETag": '"x"', "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"},
    ):
        page = analyse("http://h/p", 304, CIMultiDictProxy(CIMultiDict(names)), b"", False, policy)
        assert page == made and dataclasses.astuple(page) == dataclasses.astuple(made)
        assert type(page) is PageResult
    assert analyse("http://h/p", 304, CIMultiDict(), b"", False, policy) is page  # shared
    for names in (
        {"Content-Type": "text/html"},
        {"X-Robots-Tag": "noindex"},
        {"Link": '<http://h/c>; rel="canonical"'},
    ):
        own = analyse("http://h/p", 304, CIMultiDict(names), b"", False, policy)
        assert own is not page and own != made


def test_the_records_a_304_makes_by_position_keep_their_fields_order() -> None:
    """#26: a 304's PageResult (core.page.analyse, core.history.revive) and its Answer
    (Revalidation.answer) are made by position, the cheaper call on every page of an
    unchanged night: a field moved or added in between must fail here, not shift those
    values into the wrong fields unseen (several are bools or None alike)."""
    assert [f.name for f in dataclasses.fields(PageResult)] == [
        "mime", "header", "meta", "canonical", "targets", "body_key", "extras", "blocks",
        "not_modified", "moved_to", "moved_by", "nofollow", "canonical_in_html",
    ]  # fmt: skip
    assert [f.name for f in dataclasses.fields(Answer)] == [
        "page", "status", "etag", "modified", "modified_at", "stamped", "too_large", "revived",
    ]  # fmt: skip
