"""Crawling a staging site (issue #17): basic auth, headers and cookies reach the site (and
no other host), --robots-from replaces the staging Disallow: /, a forward proxy and a private
CA work, and no secret is ever printed or stored.

The real CLI against aiohttp servers on 127.0.0.1; the staging site refuses every request
without the credentials, so a crawl that lists its pages proves they were sent each time.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import aiohttp
import pytest
import trustme
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from crawler.cli import main
from crawler.config import Config
from crawler.core.access import AUTH_ENV, Access, redact, secrets_of
from crawler.errors import ConfigError
from crawler.shell import eventloop
from crawler.shell.fetch import Response, fetch_rules
from tests.sites import Page, Site, crawl_process, html, read_decisions, tree_site

USER, PASSWORD = "deploy", "pw:Zq8-s3cret!"  # a colon in the password: only the first splits
TOKEN = "tok-8c1d-4b2e-secret"
COOKIE = "ck-55aa-77bb-secret"
PROXY_USER, PROXY_PASSWORD = "puser", "pp@ss-9f3e-secret"  # '@' travels percent-encoded
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
PROXY_BASIC = "Basic " + base64.b64encode(f"{PROXY_USER}:{PROXY_PASSWORD}".encode()).decode()
#: Every secret in every form it could leak in: as given, percent-encoded, base64-encoded.
SECRETS = (
    PASSWORD,
    quote(PASSWORD, safe=""),
    TOKEN,
    COOKIE,
    PROXY_PASSWORD,
    quote(PROXY_PASSWORD, safe=""),
    BASIC.split()[1],
    PROXY_BASIC.split()[1],
)

ACCESS = (
    "--auth",
    f"{USER}:{PASSWORD}",
    "--header",
    f"X-Staging-Token: {TOKEN}",
    "--cookie",
    f"staging_session={COOKIE}",
)
PRODUCTION_RULES = "User-agent: *\nDisallow: /private/\n"
DISALLOW_ALL = Page("User-agent: *\nDisallow: /\n", content_type="text/plain")


class StagingSite(Site):
    """A Site behind the staging gate: basic auth (401 without), then the header and the
    cookie (403 without). Refused requests are recorded too, and listed in `refused`."""

    def __init__(self, pages: dict, fallback=None) -> None:
        super().__init__({"/robots.txt": DISALLOW_ALL, **pages}, fallback)
        self.refused: list[str] = []
        self.app.middlewares.append(self._gate)

    @web.middleware
    async def _gate(self, request: web.Request, handler) -> web.StreamResponse:
        if request.headers.get("Authorization") != BASIC:
            status = 401
        elif (
            request.headers.get("X-Staging-Token") != TOKEN
            or request.cookies.get("staging_session") != COOKIE
        ):
            status = 403
        else:
            return await handler(request)
        self.requests.append((time.monotonic(), request.raw_path, dict(request.headers)))
        self.refused.append(request.raw_path)
        headers = {"WWW-Authenticate": 'Basic realm="staging"'} if status == 401 else {}
        return web.Response(status=status, text="not for you", headers=headers)


def staging_site() -> StagingSite:
    return StagingSite(
        {
            "/": html("/a", "/b", "/private/", "/private/x"),
            "/a": html("/b"),
            "/b": html("/"),
            "/private/": html("/private/x"),
            "/private/x": html(),
        }
    )


def production_site(rules: str = PRODUCTION_RULES) -> Site:
    return Site({"/robots.txt": Page(rules, content_type="text/plain")})


@pytest.fixture
def rules_file(tmp_path: Path) -> Path:
    path = tmp_path / "production-robots.txt"
    path.write_text(PRODUCTION_RULES)
    return path


def _saw_credentials(headers: dict[str, str]) -> bool:
    return (
        headers.get("Authorization") == BASIC
        and headers.get("X-Staging-Token") == TOKEN
        and f"staging_session={COOKIE}" in headers.get("Cookie", "")
    )


# --- credentials, headers, cookies, --robots-from ------------------------------------------


def test_staging_crawl_with_auth_header_cookie_and_production_rules_from_a_file(
    serve, crawl, tmp_path, rules_file
):
    site = staging_site()
    srv = serve(site.app)
    report, decisions = tmp_path / "report.json", tmp_path / "decisions.jsonl"
    code, pub, _, err = crawl(
        srv.url + "/",
        *ACCESS,
        "--robots-from",
        str(rules_file),
        "--report",
        str(report),
        "--decisions",
        str(decisions),
    )
    assert code == 0, err
    assert sorted(pub.locs) == sorted(srv.url + p for p in ["/", "/a", "/b"])
    why = read_decisions(decisions)
    assert why[srv.url + "/private/"]["reason"] == "robots_txt"
    assert why[srv.url + "/private/"]["detail"] == "Disallow: /private/ (line 2)"
    assert why[srv.url + "/private/x"]["reason"] == "robots_txt"
    # the staging robots.txt was never asked for; every request carried the credentials
    assert "/robots.txt" not in site.paths
    assert sorted(site.paths) == ["/", "/a", "/b"]
    assert site.refused == []
    assert all(_saw_credentials(headers) for _, _, headers in site.requests)
    note = f"rules from {rules_file} (--robots-from); the site's robots.txt was not used"
    assert json.loads(report.read_text())["robots_txt"] == note
    assert f"robots.txt: {note}" in err


def test_auth_from_the_environment(serve, crawl, rules_file, monkeypatch):
    site = staging_site()
    srv = serve(site.app)
    monkeypatch.setenv(AUTH_ENV, f"{USER}:{PASSWORD}")
    monkeypatch.setenv("SITEMAP_CRAWLER_AUTH_ORIGIN", srv.url)  # what the password is for
    code, pub, _, err = crawl(srv.url + "/", *ACCESS[2:], "--robots-from", str(rules_file))
    assert code == 0, err
    assert len(pub.locs) == 3
    assert site.refused == []
    # the command line wins over the environment
    monkeypatch.setenv(AUTH_ENV, f"{USER}:wrong-password")
    code, pub, _, err = crawl(srv.url + "/", *ACCESS, "--robots-from", str(rules_file))
    assert code == 0, err
    assert site.refused == []


def test_robots_from_a_url_is_fetched_once_without_the_staging_credentials(serve, crawl, tmp_path):
    production = production_site(PRODUCTION_RULES + "Crawl-delay: 0.2\n")
    prod = serve(production.app)
    site = staging_site()
    srv = serve(site.app)
    report = tmp_path / "report.json"
    rules_url = prod.url + "/robots.txt"
    code, pub, _, err = crawl(
        srv.url + "/", *ACCESS, "--robots-from", rules_url, "--report", str(report), "-q"
    )
    assert code == 0, err
    assert sorted(pub.locs) == sorted(srv.url + p for p in ["/", "/a", "/b"])
    assert production.paths == ["/robots.txt"]
    sent = production.requests[0][2]
    assert not {"Authorization", "X-Staging-Token", "Cookie"} & set(sent)
    assert "/robots.txt" not in site.paths
    figures = json.loads(report.read_text())
    assert figures["robots_txt"] == (
        f"rules from {rules_url} (--robots-from); the site's robots.txt was not used"
    )
    # the production Crawl-delay spaces the staging requests (test_politeness measures
    # that spacing at a server; here, that the throttle was given it)
    assert figures["requests"]["min_interval"] >= 0.2


def test_robots_from_a_url_that_fails_stops_before_the_site_is_asked(serve, crawl, tmp_path):
    production = Site({})  # robots.txt: 404
    prod = serve(production.app)
    site = staging_site()
    srv = serve(site.app)
    out = tmp_path / "out"
    code, _, _, err = crawl(srv.url + "/", *ACCESS, "--robots-from", prod.url + "/robots.txt")
    assert code == 2
    assert err.count("\n") == 1
    assert f"robots_from {prod.url}/robots.txt: HTTP 404; nothing was crawled" in err
    assert site.requests == []
    assert not out.exists() or not [p for p in out.iterdir() if not p.name.startswith(".")]


def test_a_start_url_asking_for_credentials_says_so(serve, crawl, tmp_path):
    site = staging_site()
    srv = serve(site.app)
    decisions = tmp_path / "decisions.jsonl"
    code, _, _, err = crawl(srv.url + "/", "-q", "--decisions", str(decisions))
    assert code == 3
    assert err.count("\n") == 1
    hint = f"the site wants credentials (--auth USER:PASSWORD, or ${AUTH_ENV})"
    assert f"the start URL {srv.url}/ answered HTTP 401: {hint}" in err
    # the decision says the same, from the one table of hints
    detail = read_decisions(decisions)[srv.url + "/"]["detail"]
    assert detail == f"HTTP 401: {hint}"
    # wrong credentials: refused, said as such, and the password given is not repeated
    code, _, _, err = crawl(srv.url + "/", "-q", "--auth", f"{USER}:not-the-password")
    assert code == 3
    assert "answered HTTP 401: the site refused the credentials given (--auth)" in err
    assert "not-the-password" not in err


def test_workers_send_the_credentials_too(serve, crawl, tmp_path, rules_file):
    base = tree_site(400, 0.01)  # past pool.START_AFTER, slow enough for workers to start
    site = StagingSite({}, fallback=base.fallback)
    srv = serve(site.app)
    report = tmp_path / "report.json"
    code, pub, _, err = crawl(
        srv.url + "/",
        *ACCESS,
        "--robots-from",
        str(rules_file),
        "--workers",
        "2",
        "--concurrency",
        "4",
        "--report",
        str(report),
        "-q",
    )
    assert code == 0, err
    requests = json.loads(report.read_text())["requests"]
    assert requests["workers"] == 2
    assert requests["by_workers"] > 0
    assert len(pub.locs) == 400
    assert site.refused == []
    assert all(_saw_credentials(headers) for _, _, headers in site.requests)


def test_explain_uses_the_access_options(serve, capsys, rules_file):
    site = staging_site()
    srv = serve(site.app)
    code = main(["explain", srv.url + "/a", *ACCESS, "--robots-from", str(rules_file)])
    assert code == 0, capsys.readouterr()
    code = main(["explain", srv.url + "/private/x", *ACCESS, "--robots-from", str(rules_file)])
    assert code == 3
    assert "Disallow: /private/" in capsys.readouterr().out
    assert "/robots.txt" not in site.paths
    assert site.refused == []


# --- a forward proxy ---------------------------------------------------------------------

_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authorization", "proxy-connection", "te", "trailer",
     "transfer-encoding", "upgrade", "content-length", "content-encoding"}
)  # fmt: skip


class ForwardProxy:
    """An HTTP forward proxy: takes absolute-form requests (GET http://host:port/path),
    forwards them to 127.0.0.1 only, and records each. With `credentials`, asks for them
    (407) as a corporate proxy does."""

    def __init__(self, credentials: str | None = None) -> None:
        self.credentials = credentials
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.app = web.Application()
        self.app.router.add_route("*", "/{tail:.*}", self._handle)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.raw_path, dict(request.headers)))
        target = URL(request.raw_path)
        if not target.is_absolute() or target.host != "127.0.0.1":
            return web.Response(status=400, text="this proxy forwards to 127.0.0.1 only")
        if self.credentials and request.headers.get("Proxy-Authorization") != self.credentials:
            return web.Response(status=407, headers={"Proxy-Authenticate": 'Basic realm="p"'})
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        async with (
            aiohttp.ClientSession() as session,
            session.request(request.method, target, headers=headers, allow_redirects=False) as r,
        ):
            body = await r.read()
            kept = {k: v for k, v in r.headers.items() if k.lower() not in _HOP_BY_HOP}
            return web.Response(status=r.status, body=body, headers=kept)


def test_a_crawl_through_a_proxy(serve, crawl, rules_file):
    site = staging_site()
    srv = serve(site.app)
    proxy = ForwardProxy(PROXY_BASIC)
    hop = serve(proxy.app)
    proxy_url = f"http://{PROXY_USER}:{quote(PROXY_PASSWORD, safe='')}@127.0.0.1:{hop.port}"
    code, pub, _, err = crawl(
        srv.url + "/", *ACCESS, "--robots-from", str(rules_file), "--proxy", proxy_url
    )
    assert code == 0, err
    assert len(pub.locs) == 3
    # every request went through the proxy, in absolute form, with the proxy's credentials
    assert sorted(target for target, _ in proxy.seen) == sorted(srv.url + p for p in site.paths)
    assert all(headers.get("Proxy-Authorization") == PROXY_BASIC for _, headers in proxy.seen)
    assert all("Proxy-Authorization" not in headers for _, _, headers in site.requests)
    assert site.refused == []


def test_a_proxy_asking_for_credentials_says_so(serve, crawl, rules_file, tmp_path):
    site = staging_site()
    srv = serve(site.app)
    proxy = ForwardProxy(PROXY_BASIC)
    hop = serve(proxy.app)
    decisions = tmp_path / "decisions.jsonl"
    code, _, _, err = crawl(
        srv.url + "/",
        *ACCESS,
        "--robots-from",
        str(rules_file),
        "--proxy",
        f"http://127.0.0.1:{hop.port}",
        "--decisions",
        str(decisions),
        "-q",
    )
    assert code == 3
    assert err.count("\n") == 1
    assert "answered HTTP 407: the proxy wants credentials (--proxy http://USER:PASSWORD@" in err
    assert read_decisions(decisions)[srv.url + "/"]["detail"].startswith("HTTP 407: the proxy")
    assert site.requests == []


# --- TLS: a private CA ------------------------------------------------------------------


@pytest.fixture(scope="module")
def private_ca(tmp_path_factory) -> tuple[ssl.SSLContext, Path]:
    """A server certificate for 127.0.0.1 from a CA of the test's own (a staging site's
    internal CA), and that CA's certificate as a PEM file."""
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    pem = tmp_path_factory.mktemp("ca") / "staging-ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    return context, pem


def test_tls_with_a_private_ca(serve, crawl, tmp_path, private_ca):
    context, pem = private_ca
    site = Site({"/": html("/a"), "/a": html()})
    srv = serve(site.app, context)
    assert srv.url.startswith("https://")
    # not trusted: one line naming the certificate problem, and how to get past it
    code, _, _, err = crawl(srv.url + "/", "-q", "--retries", "0", out=tmp_path / "none")
    assert code == 3
    assert err.count("\n") == 1, err
    assert "TLS certificate not trusted: unable to get local issuer certificate" in err
    assert "--ca-bundle" in err and "Traceback" not in err
    assert site.requests == []  # no TLS handshake succeeded, so no request was read
    # trusted through --ca-bundle
    code, pub, _, err = crawl(srv.url + "/", "--ca-bundle", str(pem), out=tmp_path / "ca")
    assert code == 0, err
    assert sorted(pub.locs) == [srv.url + "/", srv.url + "/a"]
    assert "--insecure" not in err
    # not checked at all, said once at the start, even with -q
    code, pub, _, err = crawl(srv.url + "/", "--insecure", "-q", out=tmp_path / "insecure")
    assert code == 0, err
    assert len(pub.locs) == 2
    assert err.splitlines() == [
        "sitemap-crawler: warning: --insecure: TLS certificates are not checked; anyone "
        "between here and the site can read and change what the crawl sees"
    ]


# --- secrets: never printed, never stored -------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _reset(request: web.Request) -> web.StreamResponse:
    assert request.transport is not None
    request.transport.abort()  # no answer at all: a fetch error in the decisions
    raise web.HTTPInternalServerError


@pytest.mark.parametrize("scenario", ["crawled", "proxy down", "refused", "bad header"])
def test_no_secret_is_printed_or_stored(serve, tmp_path, rules_file, scenario):
    site = staging_site()
    site.pages["/a"] = html("/b", "/reset", "/oops")
    site.pages["/oops"] = Page("down", status=503)

    async def reset(request: web.Request) -> web.StreamResponse:
        return _reset(request)

    site.pages["/reset"] = reset
    srv = serve(site.app)
    out = tmp_path / "out"
    report, decisions, state = tmp_path / "r.json", tmp_path / "d.jsonl", tmp_path / "s.db"
    access = list(ACCESS)
    expected = 0
    if scenario == "proxy down":
        hidden = quote(PROXY_PASSWORD, safe="")
        access += ["--proxy", f"http://{PROXY_USER}:{hidden}@127.0.0.1:{_closed_port()}"]
        expected = 3
    elif scenario == "refused":
        access[1] = f"{USER}:{PASSWORD[:-1]}"  # a wrong password is a secret too
        expected = 3
    elif scenario == "bad header":
        access += ["--header", f"X-Other {TOKEN}"]  # no colon: refused, and not quoted
        expected = 2
    proc = crawl_process(
        srv.url + "/", "-o", str(out), *access, "--robots-from", str(rules_file),
        "--report", str(report), "--decisions", str(decisions), "--state", str(state),
        "--retries", "1", "--max-error-rate", "1",
    )  # fmt: skip
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == expected, stderr
    if scenario == "crawled":  # the failures whose messages could have carried a secret
        why = read_decisions(decisions)
        assert why[srv.url + "/reset"]["reason"] == "fetch_error"
        assert why[srv.url + "/oops"]["detail"].startswith("HTTP 503")
    if scenario == "proxy down":
        assert "cannot connect to the proxy: connection refused" in stderr
    written = [p for p in (report, decisions, state) if p.exists()]
    assert expected == 2 or len(written) == 3
    everything = [stdout.encode(), stderr.encode(), *(p.read_bytes() for p in written)]
    for secret in (*SECRETS, PASSWORD[:-1]):
        for text in everything:
            assert secret.encode() not in text


# --- bad input: one line, exit 2, no request -------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--auth", "deploy-no-colon-secret"], None, "must be USER:PASSWORD, with a colon"),
        ([], "env-no-colon-secret", f"${AUTH_ENV}) must be USER:PASSWORD"),
        (["--header", "X-Token-no-colon-secret"], None, "header #1 must be 'Name: value'"),
        (["--header", "Host: other.example"], None, "header Host cannot be given"),
        (["--header", "User-Agent: x"], None, "has its own option: --user-agent"),
        (["--header", "X-A: b\r\nX-Injected: secret"], None, "line breaks"),
        (["--cookie", "no-equals-secret"], None, "cookie #1 must be NAME=VALUE"),
        (["--ca-bundle", "/nonexistent/ca.pem"], None, "ca_bundle: no such file"),
        (["--robots-from", "missing-robots.txt"], None, "robots_from: no such file"),
        (["--proxy", "socks5://u:proxy-secret@127.0.0.1:1"], None, "proxy must be http://"),
        (["--auth", "u:p", "--header", "Authorization: Bearer x-secret"], None, "not both"),
    ],
)
def test_bad_access_options_are_one_line_and_no_request(
    serve, crawl, monkeypatch, args, env, expected
):
    site = staging_site()
    srv = serve(site.app)
    if env is not None:
        monkeypatch.setenv(AUTH_ENV, env)
    code, _, out, err = crawl(srv.url + "/", *args)
    assert code == 2
    assert err.count("\n") == 1 and expected in err, err
    assert "secret" not in err + out
    assert site.requests == []


def test_bad_tls_files_are_refused_before_any_request(serve, crawl, tmp_path, private_ca):
    site = staging_site()
    srv = serve(site.app)
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    code, _, _, err = crawl(srv.url + "/", "--ca-bundle", str(junk))
    assert code == 2 and f"ca_bundle {junk} holds no PEM certificate" in err
    code, _, _, err = crawl(srv.url + "/", "--ca-bundle", str(private_ca[1]), "--insecure")
    assert code == 2 and "not both" in err
    assert site.requests == []


def test_a_secret_of_the_wrong_type_in_toml_is_not_quoted(crawl, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('url = "http://127.0.0.1:1/"\nheader = "X-Token: toml-secret"\n')
    code, _, _, err = crawl("http://127.0.0.1:1/", "-c", str(config))
    assert code == 2
    assert "header must be a list of strings" in err and "toml-secret" not in err


# --- the pure parts ----------------------------------------------------------------------


def test_config_repr_hides_the_secrets():
    config = Config(
        url="http://127.0.0.1:1/",
        auth=f"{USER}:{PASSWORD}",
        header=(f"X-Staging-Token: {TOKEN}",),
        cookie=(f"staging_session={COOKIE}",),
        proxy=f"http://{PROXY_USER}:{quote(PROXY_PASSWORD, safe='')}@127.0.0.1:3128",
    ).validate()
    for text in (repr(config), str(config), repr(config.access("http://127.0.0.1:1"))):
        assert not [secret for secret in SECRETS if secret in text], text
        assert "X-Staging-Token" in text


def test_access_parses_and_redacts():
    access = Access.make(
        "http://127.0.0.1:1",
        auth=f"{USER}:{PASSWORD}",
        headers=[f"X-Staging-Token:   {TOKEN}  ", "Accept-Language: en"],
        cookies=[f"staging_session={COOKIE}", "theme=dark"],
        proxy=f"http://{PROXY_USER}:{quote(PROXY_PASSWORD, safe='')}@127.0.0.1:3128/",
    )
    assert access.auth == (USER, PASSWORD)
    assert access.headers == (("X-Staging-Token", TOKEN), ("Accept-Language", "en"))
    assert access.cookie_header == f"staging_session={COOKIE}; theme=dark"
    assert access.proxy == "http://127.0.0.1:3128"
    assert access.proxy_auth == (PROXY_USER, PROXY_PASSWORD)
    message = " ".join(SECRETS) + " HTTP 401 at 127.0.0.1:3128, language en"
    cleaned = redact(message, access.secrets)
    assert not [secret for secret in SECRETS if secret in cleaned]
    assert cleaned.endswith(" HTTP 401 at 127.0.0.1:3128, language en")  # short values stay
    # the lenient form, for values not yet checked: a malformed one is a secret whole
    assert secrets_of("no-colon-secret", ["no-colon-header"], ["no-equals"]) == (
        "no-colon-secret",
        "no-colon-header",
        "no-equals",
    )


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        # LocalStack's test/test: the bucket and the words keep their letters
        (
            "cannot upload to s3://test-sitemaps/latest/ (test.example): list request denied",
            "cannot upload to s3://test-sitemaps/latest/ (test.example): list request denied",
        ),
        ("key test rejected; secret=test&x=1, 'test'.", "key *** rejected; secret=***&x=1, '***'."),
        ("http://test:test@127.0.0.1:9/ said test", "http://***@127.0.0.1:9/ said ***"),
        # a secret of 8 characters or more is hidden wherever it is, inside a word too
        ("bucket-s3cr3tvalue-x and s3cr3tvalue", "bucket-***-x and ***"),
    ],
)
def test_a_short_secret_is_masked_only_as_a_token_of_its_own(message, shown):
    secrets = (*secrets_of("test:test", [], []), "s3cr3tvalue")
    assert redact(message, secrets) == shown
    # a one-letter password garbles nothing, and is still hidden where it stands alone
    assert redact("list request for s failed", secrets_of("u:s", [], [])) == (
        "list request for *** failed"
    )


def _answers(answers: dict[str, Response]) -> tuple[list[str], Callable]:
    asked: list[str] = []

    async def get(url: str, cap: int) -> Response:
        asked.append(url)
        return answers.get(url) or Response(url, 404)

    return asked, get


def _moved(url: str, location: str) -> Response:
    return Response(url, 301, CIMultiDictProxy(CIMultiDict({"Location": location})))


def test_robots_from_url_follows_redirects_to_any_origin():
    rules = b"User-agent: *\nDisallow: /private/\n"
    asked, get = _answers(
        {
            "http://a.test/robots.txt": _moved("http://a.test/robots.txt", "https://www.a.test/r"),
            "https://www.a.test/r": Response("https://www.a.test/r", 200, body=rules),
        }
    )
    robots = eventloop.run(fetch_rules("http://a.test/robots.txt", get))
    assert asked == ["http://a.test/robots.txt", "https://www.a.test/r"]
    assert not robots.can_fetch("/private/x", "bot") and robots.can_fetch("/x", "bot")


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (Response("http://a.test/r", 503), "robots_from http://a.test/r: HTTP 503"),
        (Response("http://a.test/r", error="cannot connect: x"), "r: cannot connect: x"),
        (Response("http://a.test/r", 301), "HTTP 301 without a usable Location"),
        (_moved("http://a.test/r", "ftp://a.test/r"), "HTTP 301 without a usable Location"),
        (_moved("http://a.test/r", "/r"), "more than 5 redirects"),
    ],
)
def test_robots_from_url_that_cannot_be_read_is_a_config_error(answer, message):
    _, get = _answers({"http://a.test/r": answer})
    with pytest.raises(ConfigError, match=re.escape(message)):
        eventloop.run(fetch_rules("http://a.test/r", get))


@pytest.mark.parametrize(
    "text",
    ["X-A", ": v", "X A: v", "X-A: a\nb", "Cookie: a=b", "Proxy-Authorization: Basic x"],
)
def test_malformed_headers_are_config_errors(text):
    with pytest.raises(ConfigError):
        Access.make("http://h", headers=[text])


def test_a_password_in_the_start_url_is_refused_without_echoing_it(capsys):
    from crawler.cli import main

    assert main(["crawl", "http://bob:s3cret-pw@127.0.0.1:9/", "-o", "/nonexistent/x"]) == 2
    err = capsys.readouterr().err
    assert "s3cret-pw" not in err and "--auth" in err and err.count("\n") == 1


def test_a_start_url_refused_under_public_url_names_the_server_asked(serve, crawl):
    site = staging_site()
    srv = serve(site.app)
    code, _, _, err = crawl(srv.url + "/", "-q", "--public-url", "https://www.example.com/")
    assert code == 3
    assert (
        f"the start URL {srv.url}/ (https://www.example.com/ in the sitemap) answered HTTP 401"
        in err
    )
