"""Bot walls (issue #28, part 4): a CDN's bot protection answering instead of the site is
recognised by its own markers (crawler/core/botwall.py), recorded as
blocked_by_bot_protection, never analysed, listed or compared for duplicates; at the start
URL, at robots.txt or past max_bot_blocked the crawl stops with exit 8 and one line, keeping
the previous sitemap; explain and audit say the same; worker processes judge alike. Each
service's answer is imitated by a local server (status, headers, the body's markers), and a
site's own 403 with no marker is a 403."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp import web
from multidict import CIMultiDict

from crawler.cli import main
from crawler.config import DEFAULT_USER_AGENT
from crawler.core.botwall import AKAMAI, AWS_WAF, CLOUDFLARE, DATADOME, IMPERVA, bot_wall
from crawler.shell.pool import START_AFTER
from tests.sites import Page, html, read_decisions, read_published

# -- each service's answer, as captured from the services (trimmed to their markers) -------

CF_CHALLENGE = Page(
    '<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>'
    '<meta name="robots" content="noindex,nofollow"></head><body><noscript>Enable JavaScript '
    "and cookies to continue</noscript><script>(function(){window._cf_chl_opt={cvId: '3',"
    "cZone: \"example.com\",cType: 'managed'};var a = document.createElement('script');"
    "a.src = '/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1?ray=8f02ab';"
    "document.getElementsByTagName('head')[0].appendChild(a);}());</script></body></html>",
    403,
    headers={"cf-mitigated": "challenge", "Server": "cloudflare", "CF-RAY": "8f02ab-LHR"},
)
# an older "I'm Under Attack" interstitial: a 503, no cf-mitigated header
CF_UNDER_ATTACK = Page(
    "<!DOCTYPE HTML><html><head><title>Just a moment...</title></head><body>"
    "<h1>Checking your browser before accessing example.com.</h1><script>"
    "window._cf_chl_opt={cType: 'non-interactive'};</script></body></html>",
    503,
    headers={"Server": "cloudflare", "CF-RAY": "8f02ac-CDG"},
)
AKAMAI_DENIED = Page(
    "<HTML><HEAD>\n<TITLE>Access Denied</TITLE>\n</HEAD><BODY>\n<H1>Access Denied</H1>\n \n"
    'You don\'t have permission to access "http&#58;&#47;&#47;example&#46;com&#47;" on this '
    "server.<P>\nReference&#32;&#35;18&#46;6f2c2c17&#46;1757999123&#46;9a1b4c2\n"
    "<P>https&#58;&#47;&#47;errors&#46;edgesuite&#46;net&#47;18&#46;6f2c2c17&#46;1757999123"
    "&#46;9a1b4c2</P>\n</BODY>\n</HTML>\n",
    403,
    headers={"Server": "AkamaiGHost", "Mime-Version": "1.0"},
)
# Imperva answers its challenge with 200 as often as not
IMPERVA_CHALLENGE = Page(
    '<html style="height:100%"><head><META NAME="ROBOTS" CONTENT="NOINDEX, NOFOLLOW">'
    '</head><body style="margin:0px;height:100%"><iframe id="main-iframe" '
    'src="/_Incapsula_Resource?CWUDNSAI=23&xinfo=5-1234-0%200NNN" frameborder=0 '
    'width="100%" height="100%">Request unsuccessful. Incapsula incident ID: '
    "1234000560012345-678901234567890</iframe></body></html>",
    200,
    headers={"X-Iinfo": "5-12345678-0 0NNN RT(1700000000000 0) q(0 -1 -1 -1) r(0 -1)"},
)
AWS_CHALLENGE = Page(
    '<!DOCTYPE html><html lang="en"><head><script>window.awsWafCookieDomainList = [];'
    'window.gokuProps = {"key":"AQIDAHj","iv":"CgAHbC","context":"abc"};</script>'
    '<script src="https://abc.edge.sdk.awswaf.com/abc/def/challenge.js"></script></head>'
    "<body><noscript>JavaScript is disabled</noscript></body></html>",
    202,
    headers={"x-amzn-waf-action": "challenge"},
)
AWS_CAPTCHA = Page(
    '<html><head><script>window.gokuProps = {"key":"k"};</script></head><body></body></html>',
    405,
    headers={"x-amzn-waf-action": "captcha"},
)
DATADOME_CAPTCHA = Page(
    '<html><head><title>example.com</title></head><body><script data-cfasync="false">'
    "var dd={'rt':'c','cid':'AHrlqAAAAAMA','hsh':'A55FBF','t':'fe','host':"
    "'geo.captcha-delivery.com'}</script><script data-cfasync=\"false\" "
    'src="https://ct.captcha-delivery.com/c.js"></script></body></html>',
    403,
    headers={
        "X-DataDome": "protected",
        "Set-Cookie": "datadome=AbC~123; Max-Age=31536000; Path=/",
    },
)
DATADOME_BLOCK = Page(
    '{"url":"https://geo.captcha-delivery.com/captcha/?initialCid=AHrlq"}',
    403,
    "application/json",
    {"X-DataDome": "protected", "X-DD-B": "1"},
)

WALLS: dict[str, tuple[str, Page]] = {
    "cloudflare": (CLOUDFLARE, CF_CHALLENGE),
    "cloudflare-503": (CLOUDFLARE, CF_UNDER_ATTACK),
    "akamai": (AKAMAI, AKAMAI_DENIED),
    "imperva": (IMPERVA, IMPERVA_CHALLENGE),
    "aws-waf": (AWS_WAF, AWS_CHALLENGE),
    "aws-waf-captcha": (AWS_WAF, AWS_CAPTCHA),
    "datadome": (DATADOME, DATADOME_CAPTCHA),
    "datadome-json": (DATADOME, DATADOME_BLOCK),
}

# -- what is the site's own answer, however close it looks ---------------------------------

NOT_WALLS: dict[str, Page] = {
    # a site's own refusal, in the words bot walls use
    "own-403": Page(
        "<html><head><title>Access denied</title></head><body><h1>Access denied</h1>"
        "<p>You don't have permission to view this page. Reference #4711</p></body></html>",
        403,
    ),
    # Cloudflare in front, the origin down (error 521): an outage, not a wall
    "cloudflare-521": Page(
        "<!DOCTYPE html><html><head><title>example.com | 521: Web server is down</title>"
        "</head><body>Cloudflare Ray ID: 8f02ad</body></html>",
        521,
        headers={"Server": "cloudflare", "CF-RAY": "8f02ad-LHR"},
    ),
    "cloudflare-404": Page(
        "<html><head><title>Not found</title></head><body>Just a moment... no.</body></html>",
        404,
        headers={"Server": "cloudflare", "CF-RAY": "8f02ae-LHR"},
    ),
    # Akamai's edge error for an empty origin answer: same reference, not a refusal
    "akamai-503": Page(
        "<HTML><HEAD> <TITLE>Service Unavailable</TITLE> </HEAD><BODY> <H1>Service "
        "Unavailable - Zero size object</H1> The server is temporarily unable to service your "
        "request.<P> Reference&#32;&#35;15&#46;6c83017&#46;1789141109&#46;3ddd8dc4 <P>https&#58;"
        "&#47;&#47;errors&#46;edgesuite&#46;net&#47;15&#46;6c83017</P> </BODY></HTML>",
        503,
        headers={"Server": "AkamaiGHost"},
    ),
    # a real page behind Imperva loads its scripts: no marker
    "imperva-page": Page(
        html(head='<script src="/_Incapsula_Resource?SWKMTFSR=1&e=0.123"></script>'),
        headers={"X-Iinfo": "5-1-0 NNNN"},
    ),
    # a real page behind AWS WAF may load the token script
    "aws-page": Page(
        html(head='<script src="https://abc.token.awswaf.com/abc/challenge.js"></script>')
    ),
    # every answer of a DataDome-protected site carries x-datadome
    "datadome-page": Page(html(), headers={"X-DataDome": "protected"}),
    "datadome-404": Page("<p>no such page</p>", 404, headers={"X-DataDome": "protected"}),
}


def _headers(page: Page) -> CIMultiDict[str]:
    headers = CIMultiDict(page.headers)
    if page.content_type is not None:
        headers["Content-Type"] = page.content_type
    return headers


def _body(page: Page) -> bytes:
    return page.body.encode() if isinstance(page.body, str) else page.body


@pytest.mark.parametrize("name", WALLS)
def test_each_services_answer_is_recognised(name):
    service, page = WALLS[name]
    assert bot_wall(page.status, _headers(page), _body(page)) == service


@pytest.mark.parametrize("name", NOT_WALLS)
def test_the_sites_own_answers_are_not_walls(name):
    page = NOT_WALLS[name]
    assert bot_wall(page.status, _headers(page), _body(page)) is None


def test_markers_past_the_first_kilobytes_are_not_read():
    """A page that quotes a marker deep in its text is the site's: walls say it early."""
    deep = b"<html><body>" + b"x" * 10_000 + b"Incapsula incident ID: 1</body></html>"
    imperva = CIMultiDict({"X-CDN": "Imperva"})
    assert bot_wall(403, imperva, deep) is None
    assert bot_wall(403, imperva, deep[:100] + b"Incapsula incident ID") == IMPERVA
    # not through Imperva: the site's own page quoting it
    assert bot_wall(403, CIMultiDict(), deep[:100] + b"Incapsula incident ID") is None


def test_a_redirect_or_a_plain_200_is_never_scanned():
    headers = CIMultiDict({"cf-mitigated": "challenge"})
    assert bot_wall(301, headers, _body(CF_CHALLENGE)) is None
    assert bot_wall(200, CIMultiDict(), _body(CF_CHALLENGE)) is None


# -- the crawl ------------------------------------------------------------------------------


class Walled:
    """A 31-page site (/ links to /p0../p29) whose answers a wall can take over: every
    path's (`wall_all`, robots.txt included), or some pages' (`walled`)."""

    def __init__(self, pages: int = 30, slow_from: int | None = None) -> None:
        self.paths = [f"/p{i}" for i in range(pages)]
        # from /p<slow_from> on, each page answered after 20 ms: time for a worker started
        # then to be ready on a busy machine, before the crawl is over
        self.slow = set(self.paths[slow_from:]) if slow_from is not None else set()
        self.wall: Page | None = None
        self.wall_all = False
        self.walled: set[str] = set()
        self.requests: list[str] = []
        self.validators: dict[str, str | None] = {}  # path -> its last If-None-Match
        self.app = web.Application()
        self.app.router.add_get("/{tail:.*}", self._handle)

    async def _handle(self, request: web.Request) -> web.Response:
        path = request.path
        self.requests.append(path)
        self.validators[path] = request.headers.get("If-None-Match")
        wall = self.wall
        if wall is not None and (
            (self.wall_all and (path != "/robots.txt" or self.wall_all == "robots"))
            or path in self.walled
        ):
            body = _body(wall)
            headers = _headers(wall)
            return web.Response(status=wall.status, body=body, headers=headers)
        if path == "/robots.txt":
            return web.Response(status=404)
        if path == "/":
            return web.Response(text=html(*self.paths), content_type="text/html")
        if path in self.slow:
            await asyncio.sleep(0.02)
        return web.Response(
            text=html(body=f"<p>{path}</p>"),
            content_type="text/html",
            headers={"ETag": f'"{path}"'},
        )


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")}


def _crawl(url: str, out: Path, *args: str) -> int:
    return main(["crawl", url, "-o", str(out), "--quiet", *args])


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("name", WALLS)
def test_a_walled_start_url_stops_the_crawl_with_exit_8_and_keeps_the_sitemap(
    name, serve, tmp_path, xsd, capsys
):
    service, wall = WALLS[name]
    site = Walled()
    srv = serve(site.app)
    out = tmp_path / "out"
    assert _crawl(srv.url + "/", out) == 0
    assert len(read_published(out, xsd).locs) == 31
    before = _files(out)
    capsys.readouterr()

    site.wall, site.wall_all = wall, True  # robots.txt still the site's: a 404
    site.requests.clear()
    report = tmp_path / "r.json"
    assert _crawl(srv.url + "/", out, "--retries", "2", "--report", str(report)) == 8
    line = _one_line(capsys.readouterr().err)
    figures = json.loads(report.read_text())
    assert figures["published"] is False and figures["error"] == line.split(": ", 1)[1]
    assert figures["reasons"]["blocked_by_bot_protection"] == 1
    assert f"blocked by {service}'s bot protection" in line, line
    assert f"the start URL {srv.url}/ answered" in line
    assert f'allow our User-Agent "{DEFAULT_USER_AGENT}"' in line
    assert "nothing published, the previous sitemap is kept" in line
    assert _files(out) == before  # byte for byte
    assert site.requests == ["/robots.txt", "/"]  # not retried, nothing else asked


def test_a_walled_robots_txt_stops_the_crawl_before_any_page(serve, tmp_path, capsys):
    site = Walled()
    site.wall, site.wall_all = CF_UNDER_ATTACK, "robots"  # a 503: "disallow all" otherwise
    srv = serve(site.app)
    out = tmp_path / "out"
    assert _crawl(srv.url + "/", out, "--retries", "0") == 8
    line = _one_line(capsys.readouterr().err)
    assert f"blocked by Cloudflare's bot protection ({srv.url}/robots.txt answered" in line
    assert line.endswith("; nothing published")  # there was no previous sitemap to keep
    assert site.requests == ["/robots.txt"]
    assert not out.exists() or not _files(out)


def test_walled_pages_under_the_threshold_are_left_out_and_the_rest_published(serve, tmp_path, xsd):
    """4 of 32 requests walled with a 503 (12.5%, under max_bot_blocked's 20%): those pages
    are recorded as blocked_by_bot_protection naming the service, asked once, not counted
    as the site's failures (12.5% would pass max_error_rate's 10%) and not twins of each
    other though their bodies are the same."""
    site = Walled()
    walled = {"/p3", "/p9", "/p17", "/p25"}
    site.wall, site.walled = CF_UNDER_ATTACK, walled
    srv = serve(site.app)
    out, decisions, report = tmp_path / "out", tmp_path / "d.jsonl", tmp_path / "r.json"
    args = ("--decisions", str(decisions), "--report", str(report))
    assert _crawl(srv.url + "/", out, *args) == 0
    locs = set(read_published(out, xsd).locs)
    assert locs == {srv.url + "/"} | {srv.url + p for p in site.paths if p not in walled}
    d = read_decisions(decisions)
    for path in walled:
        record = d[srv.url + path]
        assert record["reason"] == "blocked_by_bot_protection"
        assert record["status"] == 503
        assert record["detail"] == "Cloudflare answered HTTP 503 with its challenge or block page"
        assert site.requests.count(path) == 1  # a wall's 503 is not retried
    assert not any(r["reason"] == "duplicate_of" for r in d.values())
    figures = json.loads(report.read_text())
    assert figures["reasons"]["blocked_by_bot_protection"] == 4
    assert figures["broken_links"] == []  # the wall broke no link of the site


def test_past_max_bot_blocked_the_crawl_stops(serve, tmp_path, xsd, capsys, monkeypatch):
    site = Walled()
    srv = serve(site.app)
    out = tmp_path / "out"
    assert _crawl(srv.url + "/", out) == 0
    before = _files(out)
    capsys.readouterr()

    site.wall = DATADOME_CAPTCHA
    site.walled = {f"/p{i}" for i in range(0, 30, 2)}  # 15 of 31: about half
    site.requests.clear()
    assert _crawl(srv.url + "/", out, "--concurrency", "1") == 8
    line = _one_line(capsys.readouterr().err)
    assert "blocked by DataDome's bot protection" in line
    assert "max_bot_blocked is 20%" in line and "of 2" in line  # "N of 2x requests"
    assert "DataDome's dashboard" in line
    assert _files(out) == before
    assert len(site.requests) < 31  # it stopped taking pages
    assert _crawl(srv.url + "/", out, "--force") == 8  # challenge pages are not the site
    assert _files(out) == before

    # the fraction is the operator's: a TOML key, a variable and a flag
    monkeypatch.setenv("SITEMAP_CRAWLER_MAX_BOT_BLOCKED", "0.6")
    assert _crawl(srv.url + "/", out) == 0
    assert len(read_published(out, xsd).locs) == 16
    monkeypatch.delenv("SITEMAP_CRAWLER_MAX_BOT_BLOCKED")
    config = tmp_path / "c.toml"
    config.write_text("max_bot_blocked = 0.1\n")
    assert _crawl(srv.url + "/", out, "-c", str(config)) == 8
    assert _crawl(srv.url + "/", out, "-c", str(config), "--max-bot-blocked", "1") == 0
    capsys.readouterr()


def test_the_nightly_job_starts_afresh_after_a_walled_night(serve, tmp_path, xsd, capsys):
    """A night stopped by a wall saves its queue; its answers are no result to go on from,
    so the next night crawls afresh (as after an outage), and a --resume refuses it
    without telling anyone to drop a flag the job has not got."""
    site = Walled()
    srv = serve(site.app)
    data = tmp_path / "data"
    job = ["job", "--data", str(data), srv.url + "/", "--concurrency", "1", "--quiet"]
    assert main(job) == 0
    site.wall, site.walled = DATADOME_CAPTCHA, {f"/p{i}" for i in range(0, 30, 2)}
    assert main(job) == 8
    state = data / "state" / "crawl.sqlite"
    capsys.readouterr()
    resume = ["crawl", srv.url + "/", "-o", str(tmp_path / "o"), "--state", str(state)]
    assert main([*resume, "--resume", "--concurrency", "1", "--quiet"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "a bot protection answered instead of the site" in line
    assert "the nightly job does so by itself" in line
    site.wall, site.walled = None, set()  # the operator allowed the crawler
    assert main(job) == 0, capsys.readouterr().err
    assert len(read_published(data / "out", xsd).locs) == 31


def test_urls_left_when_a_wall_stops_the_crawl_say_so(serve, tmp_path, capsys):
    """Requests waiting their turn when the wall's verdict came are never sent: their
    limit is the wall, not max_time. (Their turn: spaced requests wait for it; the crawl
    takes no more URLs at once than the throttle admits, #26.)"""
    site = Walled()
    site.wall, site.walled = DATADOME_CAPTCHA, set(site.paths)
    srv = serve(site.app)
    decisions = tmp_path / "d.jsonl"
    args = ("--concurrency", "4", "--max-rps", "200", "--decisions", str(decisions))
    assert _crawl(srv.url + "/", tmp_path / "out", *args) == 8
    capsys.readouterr()
    limits = [r["detail"] for r in read_decisions(decisions).values() if r["reason"] == "limit"]
    assert limits, "no request was left waiting"
    assert set(limits) == {"the crawl stopped: a bot protection answered instead of the site"}


def test_a_walled_answer_is_not_kept_as_the_pages_history(serve, tmp_path, xsd):
    """Imperva's 200 challenge with an ETag: kept as the page's history, the next run would
    ask with its validator and a 304 would revive the challenge as the page."""
    site = Walled()
    wall = IMPERVA_CHALLENGE
    site.wall, site.walled = (
        Page(wall.body, 200, headers={**wall.headers, "ETag": '"wall"'}),
        {"/p3"},
    )
    srv = serve(site.app)
    out, state, decisions = tmp_path / "out", tmp_path / "state.db", tmp_path / "d.jsonl"
    args = ("--state", str(state), "--decisions", str(decisions))
    assert _crawl(srv.url + "/", out, *args) == 0
    assert read_decisions(decisions)[srv.url + "/p3"]["reason"] == "blocked_by_bot_protection"
    site.walled = set()
    assert _crawl(srv.url + "/", out, *args) == 0
    assert site.validators["/p4"] == '"/p4"'  # a page's history: asked conditionally
    assert site.validators["/p3"] is None  # asked whole: no history of the wall's answer
    assert read_decisions(decisions)[srv.url + "/p3"]["reason"] == "listed"
    assert srv.url + "/p3" in read_published(out, xsd).locs


class Failing(Walled):
    """Walled, with pages that answer the site's own 503 (`failing`): a transient failure."""

    def __init__(self) -> None:
        super().__init__()
        self.failing: set[str] = set()

    async def _handle(self, request: web.Request) -> web.Response:
        if request.path in self.failing:
            self.requests.append(request.path)
            return web.Response(status=503, text="busy")
        return await super()._handle(request)


def test_a_walled_page_listed_before_is_treated_as_a_failed_one(serve, tmp_path, xsd):
    """The rule for a page listed last night that gets no answer of the site's tonight is
    one: left out tonight, back once it answers; nothing revives it from the history
    without an answer of the site's, a wall's answer no more than a 5xx, and
    max_bot_blocked / max_error_rate bound how many go at once."""
    site = Failing()
    srv = serve(site.app)
    out, state = tmp_path / "out", tmp_path / "state.db"
    args = ("--state", str(state), "--retries", "0", "--max-shrink", "1")
    assert _crawl(srv.url + "/", out, *args) == 0
    site.wall, site.walled, site.failing = CF_UNDER_ATTACK, {"/p3"}, {"/p5"}
    assert _crawl(srv.url + "/", out, *args, "--max-error-rate", "1") == 0
    locs = set(read_published(out, xsd).locs)
    assert srv.url + "/p3" not in locs and srv.url + "/p5" not in locs
    assert len(locs) == 29
    site.walled, site.failing = set(), set()
    assert _crawl(srv.url + "/", out, *args) == 0
    assert len(read_published(out, xsd).locs) == 31


def test_a_sites_own_403_is_a_403(serve, tmp_path, xsd):
    site = Walled()
    site.wall, site.walled = NOT_WALLS["own-403"], {"/p1", "/p2"}
    srv = serve(site.app)
    out, decisions = tmp_path / "out", tmp_path / "d.jsonl"
    assert _crawl(srv.url + "/", out, "--decisions", str(decisions)) == 0
    d = read_decisions(decisions)
    assert d[srv.url + "/p1"]["reason"] == "http_error"
    assert d[srv.url + "/p1"]["detail"] == "HTTP 403"
    assert len(read_published(out, xsd).locs) == 29


def test_worker_processes_see_the_wall_as_the_main_process_does(serve, tmp_path, xsd):
    """Workers send back a few headers and no body: the decision can only come from the
    detector running where the page is analysed, in the worker."""
    site = Walled(400, slow_from=START_AFTER)
    walled = {f"/p{i}" for i in range(300, 310)}  # met late: made by the workers
    site.wall, site.walled = AKAMAI_DENIED, walled
    srv = serve(site.app)
    outs = {}
    for workers in ("0", "2"):
        out, decisions, report = (tmp_path / f"{n}{workers}" for n in ("o", "d", "r"))
        args = ["--workers", workers, "--concurrency", "4", "--decisions", str(decisions)]
        assert _crawl(srv.url + "/", out, *args, "--report", str(report)) == 0
        d = read_decisions(decisions)
        outs[workers] = {u: (r["reason"], r["detail"]) for u, r in d.items()}
        for path in walled:
            assert d[srv.url + path]["reason"] == "blocked_by_bot_protection"
            assert d[srv.url + path]["detail"].startswith("Akamai answered HTTP 403")
        assert len(read_published(out, xsd).locs) == 391
        figures = json.loads(report.read_text())
        assert figures["requests"]["workers"] == int(workers)
    assert json.loads((tmp_path / "r2").read_text())["requests"]["by_workers"] > 200
    assert outs["2"] == outs["0"]


# -- explain and audit ----------------------------------------------------------------------


def test_explain_says_a_bot_wall_answered_and_how_to_allow_the_crawler(serve, capsys):
    site = Walled()
    site.wall, site.walled = AWS_CHALLENGE, {"/p4"}
    srv = serve(site.app)
    assert main(["explain", srv.url + "/p4", "--retries", "0"]) == 3
    out = capsys.readouterr().out
    assert "(HTTP 202)" in out
    assert "not listed: a CDN's bot protection" in out
    assert "AWS WAF answered HTTP 202 with its challenge or block page" in out
    allow = f'allow our User-Agent "{DEFAULT_USER_AGENT}" in AWS WAF'
    assert f"the crawler is being blocked by AWS WAF's bot protection: {allow}" in out


def _audit(tmp_path: Path, *args: str) -> tuple[int, dict]:
    report = tmp_path / "audit.json"
    code = main(["audit", *args, "-q", "--report", str(report), "--retries", "0"])
    return code, json.loads(report.read_text())


def _sitemap(base: str, paths: list[str]) -> bytes:
    urls = "".join(f"<url><loc>{base}{p}</loc></url>" for p in paths)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    ).encode()


class AuditSite(Walled):
    """Walled, with a sitemap at /sitemap.xml listing / and every page."""

    async def _handle(self, request: web.Request) -> web.Response:
        if request.path == "/sitemap.xml" and "/sitemap.xml" not in self.walled:
            self.requests.append(request.path)
            base = f"{request.scheme}://{request.host}"
            body = _sitemap(base, ["/", *self.paths])
            return web.Response(body=body, content_type="application/xml")
        return await super()._handle(request)


def test_the_audit_says_the_crawler_is_blocked_not_the_site_broken(serve, tmp_path):
    site = AuditSite()
    site.wall, site.walled = IMPERVA_CHALLENGE, {"/p1", "/p2"}
    srv = serve(site.app)
    _, data = _audit(tmp_path, srv.url + "/sitemap.xml")
    by_code: dict[str, set[str]] = {}
    for finding in data["findings"]:
        by_code.setdefault(finding["code"], set()).add(finding["url"])
    assert by_code.get("blocked_by_bot_protection") == {srv.url + "/p1", srv.url + "/p2"}
    assert "http_error" not in by_code
    assert "duplicate_content" not in by_code  # the two interstitials are no twins


def test_the_audit_of_a_walled_site_says_so_once(serve, tmp_path):
    site = AuditSite()
    site.wall, site.walled = CF_CHALLENGE, {f"/p{i}" for i in range(30)}
    srv = serve(site.app)
    _, data = _audit(tmp_path, srv.url + "/sitemap.xml", "--concurrency", "1")
    site_wide = [f for f in data["findings"] if f["url"] is None]
    assert [f["code"] for f in site_wide] == ["blocked_by_bot_protection"]
    assert "blocked by Cloudflare's bot protection" in site_wide[0]["detail"]
    assert "max_bot_blocked" in site_wide[0]["detail"]
    assert not any(f["code"] == "http_error" for f in data["findings"])
    assert len(site.requests) < 31


def test_the_audit_of_a_walled_sitemap_and_robots_txt_names_the_service(serve, tmp_path):
    site = AuditSite()
    site.wall, site.wall_all = AKAMAI_DENIED, "robots"
    site.walled = {"/sitemap.xml"}
    srv = serve(site.app)
    code, data = _audit(tmp_path, srv.url + "/sitemap.xml")
    assert code == 3  # nothing could be audited: it says why
    found = {(f["code"], f["url"] or f["sitemap"]) for f in data["findings"]}
    assert ("blocked_by_bot_protection", srv.url + "/robots.txt") in found
    assert ("blocked_by_bot_protection", srv.url + "/sitemap.xml") in found
    details = " ".join(f["detail"] for f in data["findings"])
    assert "Akamai answered HTTP 403" in details and DEFAULT_USER_AGENT in details


@pytest.mark.parametrize("robots", [False, True], ids=["robots-404", "robots-walled"])
def test_the_audit_of_a_fully_walled_site_reports_the_block_once(robots, serve, tmp_path, capsys):
    """Every sitemap guess (and robots.txt, or not) answered by the wall: the audit says the
    crawler is blocked, once, with one finding naming the service; exit 3 (nothing
    audited), never "no sitemap found" with the advice for each guess."""
    site = Walled()
    site.wall, site.wall_all = CF_CHALLENGE, "robots" if robots else True
    srv = serve(site.app)
    code, data = _audit(tmp_path, srv.url + "/")
    assert code == 3
    line = _one_line(capsys.readouterr().err)
    assert "no sitemap found" not in line and line.count("allow our User-Agent") == 1, line
    assert "nothing audited: the crawler is being blocked by Cloudflare's bot protection" in line
    walled = [f for f in data["findings"] if f["code"] == "blocked_by_bot_protection"]
    assert len(walled) == 1 and "Cloudflare" in walled[0]["detail"]
    where = walled[0]["url"] or walled[0]["sitemap"]
    assert where == srv.url + ("/robots.txt" if robots else "/sitemap.xml")


@pytest.mark.parametrize("command", ["audit", "diff"])
def test_max_bot_blocked_is_worded_for_each_command(command, capsys):
    """audit and diff publish nothing and have no exit 8: their help says what the key
    does there."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    start = text.index("--max-bot-blocked FRACTION")
    help_ = text[start : start + 250]
    assert "exit 8" not in help_ and "published" not in help_, help_
    assert ("stop checking URLs" if command == "audit" else "--fetch: stop fetching") in help_
