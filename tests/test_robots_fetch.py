"""fetch_robots: redirects of robots.txt stay on the site's origin (issue #11).

Unit tests drive fetch_robots with a stand-in `get`; the end-to-end tests run the real
CLI against two servers on 127.0.0.1, one redirecting its robots.txt to the other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from crawler import DEFAULT_USER_AGENT
from crawler.cli import main
from crawler.core.robots import RobotsTxt
from crawler.shell import eventloop
from crawler.shell.fetch import Response, fetch_robots
from tests.sites import Page, Site, html, read_decisions, redirect

UA = DEFAULT_USER_AGENT
ALLOW_ALL = b"User-agent: *\nAllow: /\n"


def _redirect(url: str, location: str) -> Response:
    return Response(url, 301, CIMultiDictProxy(CIMultiDict({"Location": location})))


def _fake_get(
    answers: dict[str, Response | str | bytes], requested: list[str]
) -> Callable[[str, int], Awaitable[Response]]:
    """A `get` answering by path (any host): a str is a Location, bytes a 200 body."""

    async def get(url: str, cap: int) -> Response:
        requested.append(url)
        answer = answers.get(URL(url).path)
        if isinstance(answer, str):
            return _redirect(url, answer)
        if isinstance(answer, bytes):
            return Response(url, 200, body=answer)
        return answer or Response(url, 404)

    return get


def _robots(
    page_url: str, answers: dict[str, Response | str | bytes]
) -> tuple[RobotsTxt, str, list[str]]:
    requested: list[str] = []
    robots, note = eventloop.run(fetch_robots(page_url, _fake_get(answers, requested)))
    return robots, note, requested


# --- unit: fetch_robots -----------------------------------------------------------------


def test_redirect_to_another_port_is_unreachable_and_not_requested() -> None:
    robots, note, requested = _robots(
        "http://127.0.0.1:8001/page",
        {"/robots.txt": "http://127.0.0.1:8002/robots.txt"},
    )
    assert note == (
        "http://127.0.0.1:8001/robots.txt: redirects to another origin "
        "(http://127.0.0.1:8002/robots.txt), everything disallowed"
    )
    assert requested == ["http://127.0.0.1:8001/robots.txt"]
    verdict = robots.verdict("http://127.0.0.1:8001/page", UA)
    assert not verdict.allowed
    assert verdict.rule == (
        "robots.txt unreachable: redirects to another origin (http://127.0.0.1:8002/robots.txt)"
    )


@pytest.mark.parametrize(
    "location",
    [
        "https://a.test/robots.txt",  # same host, other scheme
        "http://a.test:8080/robots.txt",  # other port
        "http://www.a.test/robots.txt",  # other host
        "//cdn.test/robots.txt",  # scheme-relative, other host
        "ftp://a.test/robots.txt",  # not HTTP at all
    ],
)
def test_every_other_origin_counts_as_unreachable(location: str) -> None:
    robots, note, requested = _robots("http://a.test/", {"/robots.txt": location})
    assert note.startswith("http://a.test/robots.txt: redirects to another origin (")
    assert note.endswith("), everything disallowed")
    assert requested == ["http://a.test/robots.txt"]
    assert not robots.can_fetch("http://a.test/x", UA)


def test_the_note_names_the_hop_that_left_the_origin() -> None:
    robots, note, requested = _robots(
        "http://a.test/",
        {"/robots.txt": "/moved.txt", "/moved.txt": "http://b.test/robots.txt"},
    )
    assert note == (
        "http://a.test/moved.txt: redirects to another origin (http://b.test/robots.txt), "
        "everything disallowed"
    )
    assert requested == ["http://a.test/robots.txt", "http://a.test/moved.txt"]
    assert not robots.can_fetch("http://a.test/x", UA)


@pytest.mark.parametrize(
    ("page_url", "location"),
    [
        ("http://a.test/", "/real.txt"),
        ("http://a.test/", "real.txt"),
        ("http://a.test/", "http://a.test:80/real.txt"),
        ("http://A.Test/", "HTTP://a.TEST/real.txt"),
        ("http://a.test:80/", "http://a.test/real.txt"),
        ("https://a.test/", "https://a.test:443/real.txt"),
        ("http://127.0.0.1:8001/", "http://127.0.0.1:8001/real.txt"),
    ],
)
def test_same_origin_redirects_are_followed(page_url: str, location: str) -> None:
    body = b"User-agent: *\nDisallow: /private\n"
    robots, note, requested = _robots(page_url, {"/robots.txt": location, "/real.txt": body})
    assert len(requested) == 2 and URL(requested[1]).path == "/real.txt"
    assert note == f"{requested[1]}: HTTP 200, {len(body)} bytes"
    assert not robots.can_fetch("/private/x", UA)
    assert robots.can_fetch("/public", UA)


def test_too_many_same_origin_redirects_are_still_unreachable() -> None:
    hops: dict[str, Response | str | bytes] = {f"/r{n}": f"/r{n + 1}" for n in range(10)}
    hops["/robots.txt"] = "/r0"
    robots, note, requested = _robots("http://a.test/", hops)
    assert note == "http://a.test/r5: more than 5 redirects, everything disallowed"
    assert len(requested) == 6
    assert not robots.can_fetch("http://a.test/x", UA)


# --- end to end: two servers on 127.0.0.1 -------------------------------------------------


def test_crawl_treats_a_cross_origin_robots_redirect_as_unreachable(serve, tmp_path, capsys):
    other = Site({"/robots.txt": Page(ALLOW_ALL, content_type="text/plain"), "/": html()})
    other_srv = serve(other.app)
    site = Site(
        {
            "/robots.txt": redirect(other_srv.url + "/robots.txt"),
            "/": html("/a"),
            "/a": html(),
        }
    )
    srv = serve(site.app)
    out = tmp_path / "out"
    code = main(["crawl", srv.url + "/", "-o", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 3
    assert not _published(out)
    assert site.paths == ["/robots.txt"]
    assert other.requests == []
    assert err.count("\n") == 1 and "nothing crawled" in err
    assert f"{srv.url}/robots.txt: redirects to another origin ({other_srv.url}/robots.txt)" in err


def test_crawl_applies_the_rules_of_a_same_origin_robots_redirect(serve, tmp_path, capsys):
    site = Site(
        {
            "/robots-real.txt": Page("User-agent: *\nDisallow: /a\n", content_type="text/plain"),
            "/": html("/a", "/b"),
            "/a": html(),
            "/b": html(),
        }
    )
    srv = serve(site.app)
    site.pages["/robots.txt"] = redirect(srv.url + "/robots-real.txt")  # absolute Location
    out = tmp_path / "out"
    decisions = tmp_path / "decisions.jsonl"
    code = main(["crawl", srv.url + "/", "-o", str(out), "--quiet", "--decisions", str(decisions)])
    capsys.readouterr()
    assert code == 0
    assert _published(out)
    assert read_decisions(decisions)[srv.url + "/a"]["reason"] == "robots_txt"
    assert read_decisions(decisions)[srv.url + "/b"]["reason"] == "listed"
    assert site.paths[:2] == ["/robots.txt", "/robots-real.txt"]
    assert "/a" not in site.paths


def _published(out: Path) -> list[str]:
    if not out.exists():
        return []
    return [p.name for p in out.iterdir() if not p.name.startswith(".")]
