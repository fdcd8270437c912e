"""The lean HTTP/1.1 client (crawler.shell.http1, #26) against real servers on 127.0.0.1:
aiohttp.web apps for well-formed answers, raw asyncio servers for what aiohttp would never
send (a trickle, a closed kept-alive connection, HTTP/1.0, a malformed head). No mocks.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import ssl
import zlib
from collections.abc import Awaitable, Callable

import pytest
import trustme
from aiohttp import web

from crawler.core.access import Access
from crawler.core.validators import Validators
from crawler.shell import eventloop
from crawler.shell.fetch import HttpTransport, Response, conditional
from crawler.shell.http1 import Failure, LeanTransport, Slots
from crawler.shell.transports import crawl_transport
from tests.procs import imports_of_a_crawl

UA = "test-agent/1"


def lean(access: Access | None = None, *, timeout: float = 5, cap: int = 1_000_000):
    return LeanTransport(
        user_agent=UA, concurrency=4, timeout=timeout, max_bytes=cap, access=access
    )


def get(transport: LeanTransport, *urls: str, **kwargs: object) -> list[Response]:
    """GET the urls one after another on one transport, in a loop of their own."""

    async def run() -> list[Response]:
        async with transport:
            return [await transport.get(url, **kwargs) for url in urls]  # type: ignore[arg-type]

    return eventloop.run(run())


class Raw:
    """A raw TCP server on 127.0.0.1 answering each request on a connection with
    `answer(n, head)` (n counts the connection's requests); None closes it unanswered."""

    def __init__(
        self, answer: Callable[[int, bytes], Awaitable[bytes | None]], close_after: bool = False
    ) -> None:
        self.answer = answer
        self.close_after = close_after
        self.connections = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        n = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.requests.append(head)
                reply = await self.answer(n, head)
                n += 1
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


def raw_get(raw: Raw, paths: list[str], transport: LeanTransport | None = None, **kw: object):
    async def run() -> list[Response]:
        server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            async with transport or lean() as client:
                out = []
                for path in paths:
                    out.append(await client.get(f"http://127.0.0.1:{port}{path}", **kw))  # type: ignore[arg-type]
                    await asyncio.sleep(0.05)  # let a close reach the client
                return out
        finally:
            server.close()

    return eventloop.run(run())


def ok(body: bytes, extra: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


# -- well-formed answers (aiohttp.web)


def _app(routes: dict[str, Callable[[web.Request], Awaitable[web.StreamResponse]]]):
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_get(path, handler)
    return app


def test_keep_alive_reuses_one_connection_and_sends_the_request_as_today():
    raw = Raw(lambda n, head: _echo(head))
    responses = raw_get(raw, ["/a?x=%2F&y", "/b", "/c%20d"])
    assert [r.status for r in responses] == [200, 200, 200]
    assert raw.connections == 1  # kept alive
    first = raw.requests[0].decode()
    lines = first.split("\r\n")
    assert lines[0] == "GET /a?x=%2F&y HTTP/1.1"  # as normalised: no re-encoding
    assert f"User-Agent: {UA}" in lines and "Accept: */*" in lines
    assert "Accept-Encoding: gzip, deflate" in lines
    assert any(line.startswith("Host: 127.0.0.1:") for line in lines)
    assert responses[2].body == b"/c%20d"
    assert responses[0].seconds is not None and responses[0].error is None


@pytest.mark.interpreted
def test_a_request_head_is_the_full_parses_whichever_origin_was_asked_before():
    """_request takes a URL's origin from the latest one's when the URL starts with it and a
    slash: after any URL, every URL's head (or error's words) must be what a transport that
    never took the shortcut makes: a port extending another's, a query or fragment right
    after the host, a default port, userinfo, case, validators with a line break. And the
    shortcut is taken: the same origin twice is parsed once."""
    urls = [
        "http://h:8/x", "http://h:8080/x", "http://h:8/x?q#f", "http://h:8?q", "http://h:8#f",
        "http://h/x", "http://h:80/x", "http://H/x", "http://u@h/x", "http://h:8/a//b",
        "http://h:8/\u00e9", "http://h:8/a b", "http://h:8/a\r\nb", "http://[::1]:8/x", "h/x",
    ]  # fmt: skip
    validator_sets = [
        None,
        Validators('"e"', None),
        Validators(None, "Sat, 01 Jan 2000 00:00:00 GMT"),
        Validators('"a\r\nb"', None),
    ]

    def head(transport: LeanTransport, url: str, validators: Validators | None) -> object:
        try:
            return transport._request(url, validators)[1]
        except Failure as failure:
            return str(failure)

    for validators in validator_sets:
        for previous in urls:
            for url in urls:
                warm = lean()
                head(warm, previous, validators)
                assert head(warm, url, validators) == head(lean(), url, validators), (
                    previous,
                    url,
                    validators,
                )
    transport, parsed = lean(), []
    full = transport._parsed
    transport._parsed = lambda url: parsed.append(url) or full(url)  # type: ignore[method-assign]
    for url in ("http://h:8/x", "http://h:8/y?q", "http://h:8080/x", "http://h:8080/z"):
        head(transport, url, None)
    assert parsed == ["http://h:8/x", "http://h:8080/x"]


def test_a_conditional_requests_lines_are_fetch_conditionals_headers_in_their_order():
    """_request writes the validators' lines itself (#26), not through fetch.conditional's
    dict: the same names and values, in its order (If-None-Match first, which a server
    checks first), and a line break or NUL in either value refused before a byte is sent."""
    date = "Sat, 01 Jan 2000 00:00:00 GMT"
    for validators in (
        Validators('"e"', None),
        Validators(None, date),
        Validators('W/"e"', date),
        Validators("", ""),
    ):
        head = lean()._request("http://h/x", validators)[1].decode()
        lines = head.split("\r\n")
        written = [line for line in lines if line.startswith("If-")]
        assert written == [f"{k}: {v}" for k, v in conditional(validators).items()], validators
        assert head.endswith("\r\n\r\n")
    for bad in ("a\rb", "a\nb", "a\x00b"):
        for validators in (Validators(bad, date), Validators('"e"', bad)):
            with pytest.raises(Failure, match="a line break in a header value"):
                lean()._request("http://h/x", validators)


def test_urls_of_two_origins_in_turn_each_go_to_their_own_with_their_own_target():
    """A URL's origin is taken from the latest request's when the URL starts with it and a
    slash: one of another origin, a query without a path or a fragment must still be told
    apart (each server sees only its own, with the target as sent before)."""
    one, two = Raw(lambda n, head: _echo(head)), Raw(lambda n, head: _echo(head))

    async def run() -> list[Response]:
        first = await asyncio.start_server(one.handle, "127.0.0.1", 0)
        second = await asyncio.start_server(two.handle, "127.0.0.1", 0)
        a = f"http://127.0.0.1:{first.sockets[0].getsockname()[1]}"
        b = f"http://127.0.0.1:{second.sockets[0].getsockname()[1]}"
        urls = [f"{a}/x", f"{b}/y", f"{b}?q=1", f"{a}#f", f"{a}/z#f", f"{b}/y?q#f", f"{a}?r"]
        try:
            async with lean() as client:
                return [await client.get(url) for url in urls]
        finally:
            first.close()
            second.close()

    responses = eventloop.run(run())
    assert [(r.status, r.body) for r in responses] == [
        (200, b) for b in (b"/x", b"/y", b"/?q=1", b"/", b"/z", b"/y?q", b"/?r")
    ]
    heads = (
        [head.split(b"\r\n")[0] for head in one.requests],
        [head.split(b"\r\n")[0] for head in two.requests],
    )
    assert heads == (
        [b"GET /x HTTP/1.1", b"GET / HTTP/1.1", b"GET /z HTTP/1.1", b"GET /?r HTTP/1.1"],
        [b"GET /y HTTP/1.1", b"GET /?q=1 HTTP/1.1", b"GET /y?q HTTP/1.1"],
    )
    for raw, server in ((one, 0), (two, 1)):
        hosts = {
            line for head in raw.requests for line in head.split(b"\r\n") if line[:5] == b"Host:"
        }
        assert len(hosts) == 1, (server, hosts)


async def _echo(head: bytes) -> bytes:
    path = head.split(b" ")[1]
    return ok(path)


def test_a_server_closing_an_idle_kept_alive_connection_is_no_error():
    async def answer(n: int, head: bytes) -> bytes | None:
        return ok(b"one", "Keep-Alive: timeout=1\r\n")

    raw = Raw(answer, close_after=True)  # closes each connection once it has answered
    responses = raw_get(raw, ["/1", "/2", "/3"])
    assert [(r.status, r.error) for r in responses] == [(200, None)] * 3
    assert raw.connections == 3


def test_a_kept_alive_connection_closed_before_the_request_is_retried_at_once():
    """The race a browser knows: the server closes the idle connection just as the next
    request goes out. The close is not seen before the write: the retry makes it no error."""
    raw = Raw(lambda n, head: _first_only(n, head))

    async def run() -> list[Response]:
        server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with lean() as client:
            first = await client.get(f"http://127.0.0.1:{port}/1")
            second = await client.get(f"http://127.0.0.1:{port}/2")  # no pause: close unseen
        server.close()
        return [first, second]

    responses = eventloop.run(run())
    assert [(r.status, r.error) for r in responses] == [(200, None), (200, None)]


async def _first_only(n: int, head: bytes) -> bytes | None:
    if n == 0:
        return ok(b"x")
    return None  # the second request on a connection: closed without an answer


def test_connection_close_and_http_1_0_are_not_reused():
    async def close(n: int, head: bytes) -> bytes | None:
        return ok(b"a", "Connection: close\r\n")

    raw = Raw(close)
    assert [r.body for r in raw_get(raw, ["/1", "/2"])] == [b"a", b"a"]
    assert raw.connections == 2

    async def old(n: int, head: bytes) -> bytes | None:
        return b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"

    raw = Raw(old)
    assert [r.body for r in raw_get(raw, ["/1", "/2"])] == [b"ok", b"ok"]
    assert raw.connections == 2


def test_a_body_without_length_ends_with_the_connection():
    async def answer(n: int, head: bytes) -> bytes | None:
        return b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + b"z" * 5000

    class Closing(Raw):
        async def handle(self, reader, writer) -> None:  # type: ignore[override]
            await reader.readuntil(b"\r\n\r\n")
            writer.write(await answer(0, b""))  # type: ignore[arg-type]
            await writer.drain()
            writer.close()

    [resp] = raw_get(Closing(answer), ["/"])
    assert resp.status == 200 and resp.body == b"z" * 5000 and not resp.truncated


def test_chunked_gzip_and_deflate_bodies(serve):
    page = b"<html>" + b"words " * 5000 + b"</html>"

    async def chunked(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for i in range(0, len(page), 999):
            await resp.write(page[i : i + 999])
        await resp.write_eof()
        return resp

    def encoded(body: bytes, encoding: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            return web.Response(body=body, headers={"Content-Encoding": encoding})

        return handle

    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    srv = serve(
        _app(
            {
                "/chunked": chunked,
                "/gzip": encoded(gzip.compress(page), "gzip"),
                "/deflate": encoded(zlib.compress(page), "deflate"),
                "/raw-deflate": encoded(
                    raw_deflate.compress(page) + raw_deflate.flush(), "deflate"
                ),
                "/bad-gzip": encoded(b"\x1f\x8b\x08\x00not gzip at all", "gzip"),
            }
        )
    )
    paths = ["/chunked", "/gzip", "/deflate", "/raw-deflate", "/bad-gzip"]
    responses = get(lean(), *(srv.url + p for p in paths))
    for resp in responses[:4]:
        assert (resp.status, resp.error, resp.body) == (200, None, page)
    assert responses[4].error == "response body cut short (connection reset or bad encoding)"


def test_the_cap_counts_decompressed_bytes_a_gzip_bomb_stops_there(serve):
    bomb = gzip.compress(b"\0" * 50_000_000)  # 50 MB from about 50 KB

    async def handle(request: web.Request) -> web.Response:
        return web.Response(body=bomb, headers={"Content-Encoding": "gzip"})

    async def big(request: web.Request) -> web.Response:
        return web.Response(body=b"b" * 300_000)

    srv = serve(_app({"/bomb": handle, "/big": big, "/small": big}))
    responses = get(lean(cap=100_000), srv.url + "/bomb", srv.url + "/big")
    for resp in responses:
        assert resp.status == 200 and resp.truncated and len(resp.body) == 100_000
    [small] = get(lean(cap=100_000), srv.url + "/small", max_bytes=1_000_000)
    assert len(small.body) == 300_000 and not small.truncated


def test_redirects_and_304_read_no_body_and_the_request_is_conditional(serve):
    asked: list[tuple[str | None, str | None]] = []

    async def page(request: web.Request) -> web.Response:
        asked.append(
            (request.headers.get("If-None-Match"), request.headers.get("If-Modified-Since"))
        )
        if request.headers.get("If-None-Match") == '"v1"':
            return web.Response(status=304, headers={"ETag": '"v1"'})
        return web.Response(text="full", headers={"ETag": '"v1"'})

    async def moved(request: web.Request) -> web.Response:
        return web.Response(status=301, text="gone there", headers={"Location": "/page"})

    srv = serve(_app({"/page": page, "/moved": moved}))
    validators = Validators(etag='"v1"', modified="Wed, 21 Oct 2015 07:28:00 GMT")
    [not_modified] = get(lean(), srv.url + "/page", validators=validators)
    assert (not_modified.status, not_modified.body, not_modified.headers["ETag"]) == (
        304,
        b"",
        '"v1"',
    )
    assert asked == [('"v1"', "Wed, 21 Oct 2015 07:28:00 GMT")]
    [redirect] = get(lean(), srv.url + "/moved")
    assert (redirect.status, redirect.location, redirect.body) == (301, "/page", b"")


def test_a_header_line_over_16_kib_and_a_malformed_head_are_malformed_responses():
    async def long_header(n: int, head: bytes) -> bytes | None:
        return ok(b"x", "X-Big: " + "v" * 17_000 + "\r\n")

    [resp] = raw_get(Raw(long_header), ["/"])
    assert resp.status == 0 and resp.error is not None
    assert resp.error.startswith("malformed response: ")

    async def fine_header(n: int, head: bytes) -> bytes | None:
        return ok(b"x", "X-Big: " + "v" * 15_000 + "\r\n")

    [resp] = raw_get(Raw(fine_header), ["/"])
    assert resp.status == 200 and len(resp.headers["X-Big"]) == 15_000

    async def garbage(n: int, head: bytes) -> bytes | None:
        return b"HTTX/9 what\r\n\r\n"

    [resp] = raw_get(Raw(garbage), ["/"])
    assert resp.error is not None and resp.error.startswith("malformed response: ")


def test_a_trickling_server_hits_the_total_timeout():
    async def trickle(n: int, head: bytes) -> bytes | None:
        return b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"

    class Trickle(Raw):
        async def handle(self, reader, writer) -> None:  # type: ignore[override]
            await reader.readuntil(b"\r\n\r\n")
            writer.write(await trickle(0, b""))  # type: ignore[arg-type]
            for _ in range(100):  # a byte every 0.1 s: each read is quick, the whole is not
                writer.write(b"x")
                await writer.drain()
                await asyncio.sleep(0.1)
            writer.close()

    [resp] = raw_get(Trickle(trickle), ["/"], lean(timeout=0.6))
    assert resp.error == "no complete response within 0.6 s"


def test_each_exchange_times_out_at_its_own_deadline_under_one_alarm():
    """One alarm serves every exchange's timeout (LeanTransport._ring): a request started
    later is not timed out at an earlier one's deadline, one answered in between is
    unharmed, and the alarm is set again for a request after them all."""

    async def answer(n: int, head: bytes) -> bytes | None:
        if head.startswith(b"GET /hang"):
            await asyncio.sleep(30)  # never, within the timeout
        return ok(b"fine")

    async def run() -> list[Response]:
        server = await asyncio.start_server(Raw(answer).handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            async with lean(timeout=0.6) as client:

                async def later(path: str, wait: float) -> Response:
                    await asyncio.sleep(wait)
                    return await client.get(f"http://127.0.0.1:{port}{path}")

                first = await asyncio.gather(
                    later("/hang", 0), later("/hang?b", 0.3), later("/ok", 0.1)
                )
                return [*first, await later("/hang?c", 0)]
        finally:
            server.close()

    early, late, answered, after = eventloop.run(run())
    assert answered.status == 200 and answered.body == b"fine"
    for resp in (early, late, after):
        assert resp.error == "no complete response within 0.6 s"
        assert resp.seconds is not None and resp.seconds >= 0.6  # never before its deadline


def test_server_closing_without_an_answer_and_cut_short_bodies():
    async def nothing(n: int, head: bytes) -> bytes | None:
        return None

    [resp] = raw_get(Raw(nothing), ["/"])
    assert resp.error == "server closed the connection without a response"

    class Short(Raw):
        async def handle(self, reader, writer) -> None:  # type: ignore[override]
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")
            await writer.drain()
            writer.close()

    [resp] = raw_get(Short(nothing), ["/"])
    assert resp.error == "response body cut short (connection reset or bad encoding)"


def test_cannot_connect_says_why():
    [resp] = get(lean(), "http://127.0.0.1:9/")  # discard: nobody listens
    assert resp.error == "cannot connect: connection refused"


def test_resolve_connects_to_the_pinned_address_keeping_host(serve):
    hosts: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        hosts.append(request.headers["Host"])
        return web.Response(text="pinned")

    srv = serve(_app({"/": handle}))
    access = Access(pinned=(("www.example.test", srv.port, "127.0.0.1"),))
    [resp] = get(lean(access), f"http://www.example.test:{srv.port}/")
    assert (resp.status, resp.body) == (200, b"pinned")
    assert hosts == [f"www.example.test:{srv.port}"]


def test_credentials_go_to_the_crawled_origin_only(serve):
    seen: list[str | None] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.Response(text="x")

    one, two = serve(_app({"/": handle})), serve(_app({"/": handle}))
    access = Access(origin=one.url, auth=("u", "p"))
    get(lean(access), one.url + "/", two.url + "/")
    assert seen[0] is not None and seen[0].startswith("Basic ") and seen[1] is None


@pytest.fixture(scope="module")
def tls_site(tmp_path_factory):
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "www.example.test").configure_cert(context)
    pem = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    return context, str(pem)


def test_tls_trusted_untrusted_and_insecure(serve, tls_site):
    context, pem = tls_site

    async def handle(request: web.Request) -> web.Response:
        return web.Response(text="secret")

    srv = serve(_app({"/": handle}), context)
    [untrusted] = get(lean(), srv.url + "/")
    assert untrusted.error == (
        "TLS certificate not trusted: unable to get local issuer certificate "
        "(--ca-bundle FILE trusts its CA; --insecure checks no certificate)"
    )
    [trusted] = get(lean(Access(ca_bundle=pem)), srv.url + "/", srv.url + "/")[:1]
    assert (trusted.status, trusted.body) == (200, b"secret")
    [insecure] = get(lean(Access(insecure=True)), srv.url + "/")
    assert insecure.status == 200
    # SNI and the certificate's name are the URL's host, not the pinned address
    pinned = Access(ca_bundle=pem, pinned=(("www.example.test", srv.port, "127.0.0.1"),))
    [named] = get(lean(pinned), f"https://www.example.test:{srv.port}/")
    assert named.status == 200


def test_the_same_answers_as_aiohttp(serve):
    """The lean client and HttpTransport give the same Response, field by field."""

    async def handle(request: web.Request) -> web.Response:
        return web.Response(
            body=gzip.compress(b"same" * 1000),
            headers={"Content-Encoding": "gzip", "X-A": "1", "Set-Cookie": "a=1"},
        )

    srv = serve(_app({"/": handle}))

    async def both() -> tuple[Response, Response]:
        kw = {"user_agent": UA, "concurrency": 2, "timeout": 5, "max_bytes": 1000}
        async with HttpTransport(**kw) as old, LeanTransport(**kw) as new:  # type: ignore[arg-type]
            return await old.get(srv.url + "/"), await new.get(srv.url + "/")

    old, new = eventloop.run(both())
    assert (old.status, old.body, old.truncated, old.error) == (
        new.status,
        new.body,
        new.truncated,
        new.error,
    )
    assert new.truncated and len(new.body) == 1000
    drop = {"Date", "Server"}
    assert [(k, v) for k, v in old.headers.items() if k not in drop] == [
        (k, v) for k, v in new.headers.items() if k not in drop
    ]


def test_a_proxy_stays_with_aiohttp():
    assert isinstance(
        crawl_transport(
            user_agent=UA, concurrency=1, timeout=1, max_bytes=1, access=Access(proxy="http://p:1")
        ),
        HttpTransport,
    )
    assert isinstance(
        crawl_transport(user_agent=UA, concurrency=1, timeout=1, max_bytes=1, access=Access()),
        LeanTransport,
    )


def test_a_header_of_the_users_replaces_ours_on_its_origin_only():
    raw = Raw(lambda n, head: _echo(head))

    async def run() -> None:
        server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        home = f"http://127.0.0.1:{port}"
        access = Access(
            origin=home,
            headers=(("accept", "text/html"),),
            pinned=(("other.test", port, "127.0.0.1"),),  # another origin, on 127.0.0.1 too
        )
        async with lean(access) as client:
            await client.get(home + "/")
            await client.get(f"http://other.test:{port}/")  # another origin: ours only
        server.close()

    eventloop.run(run())
    home, other = (head.decode().lower().split("\r\n") for head in raw.requests)
    assert [line for line in home if line.startswith("accept:")] == ["accept: text/html"]
    assert [line for line in other if line.startswith("accept:")] == ["accept: */*"]


def test_a_crawl_without_a_proxy_never_loads_aiohttp(serve, tmp_path):
    """aiohttp's import is a fifth of a second a process: a crawl that does not use it
    must not pay for it (it is imported where a proxy, `submit` or `notify` runs)."""

    async def handle(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        return web.Response(text="<html><a href='/b'>b</a></html>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    srv = serve(app)
    argv = ["crawl", srv.url + "/", "-o", str(tmp_path / "out"), "-q"]
    code, loaded, stderr = imports_of_a_crawl(argv, ("aiohttp",))
    assert (code, loaded) == (0, []), stderr


# -- from #26's review: bytes after an answer, llhttp's leniencies, decoding, shutdown


AFTER = {  # the first answer, then bytes that are not this request's
    "a second answer in the same segment": ok(b"ok")
    + b"HTTP/1.1 404 Not Found\r\nX-Robots-Tag: noindex\r\nContent-Length: 4\r\n\r\nnope",
    "a body longer than its Content-Length": ok(b"ok")[:-2] + b"ok and more",
    "a 204 with a body": b"HTTP/1.1 204 No Content\r\nContent-Length: 4\r\n\r\njunk",
    "a 304 with a body": b"HTTP/1.1 304 Not Modified\r\nContent-Length: 4\r\n\r\njunk",
    "a chunked 304 with its last chunk": (
        b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    ),
}


@pytest.mark.parametrize("reply", AFTER.values(), ids=AFTER.keys())
def test_bytes_after_an_answer_change_nothing_and_the_connection_is_not_reused(reply):
    async def answer(n: int, head: bytes) -> bytes | None:
        return reply if head.startswith(b"GET /first ") else ok(b"second")

    raw = Raw(answer)
    first, second = raw_get(raw, ["/first", "/second"])
    assert first.error is None
    status = int(reply.split(b" ")[1])
    assert first.status == status and "X-Robots-Tag" not in first.headers
    assert first.body == (b"ok" if status == 200 else b"")
    assert (second.status, second.error, second.body) == (200, None, b"second")
    assert raw.connections == 2  # the next URL on a new connection


LENIENT = {  # what aiohttp's parser accepted (probed with aiohttp 3.14.5), as it gave it
    "obs-fold": (b"X-Robots-Tag: noindex,\r\n nofollow\r\nContent-Length: 2\r\n\r\nok", "\r\n"),
    "bare LF": (b"X-Robots-Tag: noindex, nofollow\nContent-Length: 2\n\nok", "\n"),
    "a control char in a value": (
        b"X-Robots-Tag: noindex, nofollow\r\nX-A: a\x01b\r\nContent-Length: 2\r\n\r\nok",
        "\r\n",
    ),
    "a space before the colon": (
        b"X-Robots-Tag: noindex, nofollow\r\nContent-Length : 2\r\n\r\nok",
        "\r\n",
    ),
    "a space after a chunk size": (
        b"X-Robots-Tag: noindex, nofollow\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2 \r\nok\r\n0\r\n\r\n",
        "\r\n",
    ),
}


@pytest.mark.parametrize("rest, eol", LENIENT.values(), ids=LENIENT.keys())
def test_what_aiohttp_accepted_is_accepted(rest, eol):
    reply = f"HTTP/1.1 200 OK{eol}".encode() + rest

    async def answer(n: int, head: bytes) -> bytes | None:
        return reply

    raw = Raw(answer)
    responses = raw_get(raw, ["/1", "/2"])
    for resp in responses:
        assert (resp.status, resp.error, resp.body) == (200, None, b"ok")
        assert resp.headers["X-Robots-Tag"] == "noindex, nofollow"
    assert raw.connections == 1  # a length that was read: still kept alive


def _chunked(*parts: bytes, extra: str = "") -> bytes:
    head = f"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n{extra}\r\n".encode()
    return head + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts if p) + b"0\r\n\r\n"


@pytest.mark.parametrize("wbits", [zlib.MAX_WBITS, -zlib.MAX_WBITS], ids=["zlib", "raw"])
def test_deflate_is_told_from_its_first_byte_whatever_the_split(wbits):
    page = b"<html>" + b"deflated words " * 40 + b"</html>"
    packer = zlib.compressobj(wbits=wbits)
    body = packer.compress(page) + packer.flush()

    async def answer(n: int, head: bytes) -> bytes | None:
        at = int(head.split(b" ")[1][1:])
        return _chunked(body[:at], body[at:], extra="Content-Encoding: deflate\r\n")

    paths = [f"/{at}" for at in range(len(body) + 1)]
    responses = raw_get(Raw(answer), paths)
    assert [(r.error, r.body) for r in responses] == [(None, page)] * len(paths)


def test_every_member_of_a_gzip_body_is_read():
    members = gzip.compress(b"<html>part1 ") + gzip.compress(b"part2 ") + gzip.compress(b"</html>")

    async def answer(n: int, head: bytes) -> bytes | None:
        if head.startswith(b"GET /split "):  # members across chunks, one cut inside a header
            return _chunked(members[:30], members[30:45], members[45:], extra=GZIP)
        return ok(members, GZIP)

    whole, split = raw_get(Raw(answer), ["/whole", "/split"])
    assert whole.body == split.body == b"<html>part1 part2 </html>"
    assert whole.error is None and split.error is None

    async def capped(n: int, head: bytes) -> bytes | None:
        return ok(members, GZIP)

    [resp] = raw_get(Raw(capped), ["/"], lean(cap=15))
    assert resp.body == b"<html>part1 par" and resp.truncated


GZIP = "Content-Encoding: gzip\r\n"


@pytest.mark.parametrize("encoding", ["br", "zstd"])
def test_an_encoding_never_asked_for_fails_as_with_aiohttp(encoding):
    async def answer(n: int, head: bytes) -> bytes | None:
        return ok(b"\x8b\x00 not html", f"Content-Encoding: {encoding}\r\n")

    [resp] = raw_get(Raw(answer), ["/"])
    # aiohttp 3.14 without Brotli/zstd: "malformed response: Can not decode content-encoding:
    # brotli (br). Please install `Brotli`" (an install that would not help this client)
    assert resp.error == f"malformed response: Can not decode content-encoding: {encoding}"
    assert (resp.status, resp.body) == (0, b"")


def test_after_close_nothing_is_sent_again_and_no_connection_stays_open():
    async def answer(n: int, head: bytes) -> bytes | None:
        if head.startswith(b"GET /inflight "):
            await asyncio.sleep(0.3)
        return ok(b"ok")

    raw = Raw(answer)
    ended: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await raw.handle(reader, writer)
        ended.append(1)

    async def run() -> tuple[Response, Response, LeanTransport]:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        client = lean()
        await client.__aenter__()
        assert (await client.get(f"{url}/warm")).status == 200  # an idle kept-alive one
        inflight = asyncio.create_task(client.get(f"{url}/inflight"))
        await asyncio.sleep(0.1)
        await client.__aexit__(None, None, None)  # shutdown with a request in flight
        first = await inflight
        after = await client.get(f"{url}/after")
        await asyncio.sleep(0.6)  # the server has answered and seen every close
        server.close()
        return first, after, client

    first, after, client = eventloop.run(run())
    assert first.error == after.error == "transport closed"
    paths = [head.split(b" ")[1] for head in raw.requests]
    assert paths == [b"/warm", b"/inflight"]  # each once, nothing after the close
    assert raw.connections == len(ended) == 1
    assert not client._open and not any(o.idle for o in client._origins.values())


def _full_backlog() -> tuple[socket.socket, list[socket.socket]]:
    """A listening socket whose accept queue is full: Linux then drops a new SYN, so a
    connect to it hangs, as to a black-holed IPv6 route."""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(0)
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(hole.getsockname())
        fillers.append(filler)
    return hole, fillers


def test_a_host_of_several_addresses_falls_to_the_next_one_that_answers():
    """Happy Eyeballs (aiohttp's 0.25 s): the host's first address refuses, or hangs."""
    hole, fillers = _full_backlog()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, not listening: refuses
    raw = Raw(lambda n, head: _echo(head))

    async def run() -> list[Response]:
        server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        out = []
        for first in (closed.getsockname(), hole.getsockname()):
            async with lean(timeout=4) as client:
                infos = [
                    (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", address)
                    for address in (first, ("127.0.0.1", port))
                ]
                client._dns[("site.test", port)] = (float("inf"), infos)
                out.append(await client.get(f"http://site.test:{port}/page"))
        server.close()
        return out

    try:
        responses = eventloop.run(run())
    finally:
        for sock in [hole, closed, *fillers]:
            sock.close()
    assert [(r.status, r.error, r.body) for r in responses] == [(200, None, b"/page")] * 2
    assert all(b"Host: site.test:" in head for head in raw.requests)


@pytest.mark.interpreted
def test_requests_to_a_host_not_yet_resolved_share_one_lookup():
    raw = Raw(lambda n, head: _echo(head))
    lookups: list[str] = []

    class Counted(LeanTransport):
        async def _resolve(self, host: str, port: int):  # type: ignore[no-untyped-def]
            lookups.append(host)
            await asyncio.sleep(0.1)  # a slow resolver: the others arrive meanwhile
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (LOCAL, port))]

    async def run() -> list[Response]:
        server = await asyncio.start_server(raw.handle, LOCAL, 0)
        port = server.sockets[0].getsockname()[1]
        client = Counted(user_agent=UA, concurrency=4, timeout=5, max_bytes=1000, access=None)
        async with client:
            urls = [f"http://site.test:{port}/{i}" for i in range(4)]
            out = await asyncio.gather(*(client.get(url) for url in urls))
        server.close()
        return list(out)

    responses = eventloop.run(run())
    assert [r.body for r in responses] == [b"/0", b"/1", b"/2", b"/3"]
    assert lookups == ["site.test"]


LOCAL = "127.0.0.1"


def test_an_idle_connection_is_closed_after_its_idle_time(monkeypatch):
    import crawler.shell.http1 as http1

    monkeypatch.setattr(http1, "IDLE_SECONDS", 0.2)
    raw = Raw(lambda n, head: _echo(head))
    ended: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await raw.handle(reader, writer)
        ended.append(1)

    async def run() -> LeanTransport:
        server = await asyncio.start_server(handle, LOCAL, 0)
        url = f"http://{LOCAL}:{server.sockets[0].getsockname()[1]}/"
        async with lean() as client:
            assert (await client.get(url)).status == 200
            for _ in range(50):  # the sweep runs after 0.2 s; the server then sees EOF
                if ended:
                    break
                await asyncio.sleep(0.05)
            assert ended == [1] and not any(o.idle for o in client._origins.values())
            assert (await client.get(url)).status == 200  # on a new connection
        server.close()
        return client

    client = eventloop.run(run())
    assert raw.connections == 2 and not client._open


def test_requests_in_flight_never_exceed_the_total_limit_and_a_cancelled_wait_frees_nothing():
    """The transport's own limit (--concurrency across origins, as aiohttp's connector):
    a counter while a slot is free, a first-come queue when none is; a request cancelled
    while it waits for a slot takes none and holds none."""
    now = [0, 0]  # in flight at the server, the most seen

    async def answer(n: int, head: bytes) -> bytes | None:
        now[0] += 1
        now[1] = max(now[1], now[0])
        await asyncio.sleep(0.05)
        now[0] -= 1
        return ok(head.split(b" ")[1])

    raw = Raw(answer)

    async def run() -> tuple[list[Response], bool]:
        server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        client = LeanTransport(user_agent=UA, concurrency=2, timeout=5, max_bytes=1000)
        async with client:
            tasks = [asyncio.create_task(client.get(f"{url}/{n}")) for n in range(7)]
            await asyncio.sleep(0.01)
            tasks[5].cancel()  # waiting for a slot: two are in flight
            done = await asyncio.gather(*tasks, return_exceptions=True)
            free = client._slots.free == 2 and not client._slots.queue
        server.close()
        return [r for r in done if isinstance(r, Response)], free

    responses, free = eventloop.run(run())
    assert sorted(r.body for r in responses) == [b"/0", b"/1", b"/2", b"/3", b"/4", b"/6"]
    assert all(r.status == 200 and r.error is None for r in responses)
    assert now[1] == 2 and free
    assert b"GET /5 " not in b"".join(raw.requests)


def test_a_slot_handed_to_a_waiter_cancelled_in_the_same_step_passes_to_the_next():
    """`give` hands its slot to the first waiter and resolves it; if that waiter is
    cancelled before it runs, the slot goes on to the next, never lost."""

    async def run() -> tuple[bool, int, int]:
        slots = Slots(1)
        await slots.wait()  # the one slot taken
        first = asyncio.create_task(slots.wait())
        second = asyncio.create_task(slots.wait())
        await asyncio.sleep(0)  # both queued
        slots.give()  # handed to the first ...
        first.cancel()  # ... cancelled in the same step
        await asyncio.gather(first, return_exceptions=True)
        await asyncio.wait_for(second, 1)  # the slot went on to the second
        taken = slots.free
        slots.give()
        return first.cancelled(), taken, slots.free

    cancelled, taken, free = eventloop.run(run())
    assert cancelled and taken == 0 and free == 1


def test_a_request_dropped_before_its_loop_turn_ends_is_never_sent():
    """The requests of a loop turn are written together at its end (LeanTransport._send):
    one whose exchange is cancelled before then never reaches the server, and its
    connection is not kept."""
    raw = Raw(lambda n, head: _echo(head))

    async def run() -> tuple[Response, BaseException | Response, Response]:
        server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        async with lean() as client:
            first = await client.get(f"{url}/1")  # a kept-alive connection, idle
            task = asyncio.create_task(client.get(f"{url}/2"))
            # runs after the task's step (its request made on the idle connection, not yet
            # written) and before the turn's writes
            asyncio.get_running_loop().call_soon(task.cancel)
            dropped: BaseException | Response = (
                await asyncio.gather(task, return_exceptions=True)
            )[0]
            third = await client.get(f"{url}/3")
        server.close()
        return first, dropped, third

    first, dropped, third = eventloop.run(run())
    assert isinstance(dropped, asyncio.CancelledError)
    assert (first.body, third.body) == (b"/1", b"/3")
    assert [head.split(b" ")[1] for head in raw.requests] == [b"/1", b"/3"]
    assert raw.connections == 2  # the dropped request's connection was not reused


class _FailingWrites:
    """A connection's transport whose writes fail, as a transport closed under it would.
    `writers`: the task each write was made in (None: a loop callback's, `_send`)."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.writers: list[asyncio.Task[object] | None] = []

    def write(self, data: bytes) -> None:
        self.writers.append(asyncio.current_task())
        raise RuntimeError("unable to perform operation: the handler is closed")

    def __getattr__(self, name: str) -> object:
        return getattr(self.transport, name)


def test_a_request_whose_write_fails_is_answered_with_the_error_at_once():
    """A write made at the end of the loop turn (LeanTransport._send) that fails ends its
    exchange with that error, in the words of any other, not at the timeout."""
    raw = Raw(lambda n, head: _echo(head))

    failing: list[_FailingWrites] = []

    async def run() -> tuple[Response, Response, Response]:
        server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        async with lean(timeout=30) as client:
            first = await client.get(f"{url}/1")
            (origin,) = client._origins.values()
            (conn,) = origin.idle
            assert conn.transport is not None
            failing.append(_FailingWrites(conn.transport))
            conn.transport = failing[0]  # type: ignore[assignment]
            failed = await asyncio.wait_for(client.get(f"{url}/2"), 5)
            third = await client.get(f"{url}/3")
        server.close()
        return first, failed, third

    first, failed, third = eventloop.run(run())
    assert failing[0].writers == [None]  # written by the turn's end, not by get() itself
    assert failed.status == 0 and failed.error is not None
    assert "handler is closed" in failed.error and "\n" not in failed.error
    assert failed.seconds < 5
    assert (first.body, third.body) == (b"/1", b"/3")
    assert raw.connections == 2  # the failed connection was dropped
