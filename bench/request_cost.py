"""The CPU of one request's path in the crawl, from asking for a URL to a `Response` in hand:
the lean client alone (`--layers lean`), or through the crawl's polite client as a page is
asked (`--layers client`: the throttle's slot, the retries' first try, `LocalPages.get`),
or the floor (`--layers floor`: an asyncio Protocol with httptools, one kept-alive
connection a request in flight, the same request heads, no bookkeeping at all: what a
request costs any Python client), against a site served on 127.0.0.1 (nginx:
`bench/serve.sh`). No analysis of the page.
Runs the code PYTHONPATH names, so one script measures base and a branch.

Run: PYTHONPATH=CODE python3 bench/request_cost.py --origin http://127.0.0.1:18766/ \
        --urls /work/sx/site3000/expected.txt --requests 2800
     valgrind --tool=callgrind python3 bench/request_cost.py ... --requests 700
     python3 bench/request_cost.py --layers floor ...   (the floor, the same arguments)

The URLs are the site's expected list, asked in order (and again from the start when
--requests is larger), `--concurrency` (8, the crawl's default) in flight; `--conditional`
asks each with nginx's ETag and Last-Modified, got in a first pass (not counted), so that
every answer is a 304. Under callgrind, the difference in instructions between two runs
of different --requests, over the difference in requests, is a request's cost,
independent of the load (start-up and connections cancel out). Prints figures only:
CPU µs a request (user + system of this process; nginx is not counted), and the errors.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import resource
import time
from pathlib import Path
from urllib.parse import urlsplit

import httptools

from crawler.config import Config
from crawler.core.page import PagePolicy
from crawler.core.validators import Validators
from crawler.shell.client import PoliteClient
from crawler.shell.http1 import LeanTransport
from crawler.shell.pages import Fetched


async def _fetched(transport: LeanTransport, url: str, validators: Validators | None) -> Fetched:
    """As `LocalPages.fetch` but for the analysis: the request's path alone."""
    return Fetched(await transport.get(url, None, validators), None)


class _Floor(asyncio.Protocol):
    """One kept-alive connection: a request written, its answer parsed by httptools."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.done: asyncio.Future[int] | None = None
        self.fields: list[tuple[str, str]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.connection_lost(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        """The server closed (or sent what does not parse): the request waiting fails, not
        hangs (nginx closes a connection after `keepalive_requests`)."""
        if self.done is not None and not self.done.done():
            self.done.set_exception(exc or ConnectionError("connection closed by the server"))

    def on_header(self, name: bytes, value: bytes) -> None:
        self.fields.append((name.decode(), value.decode()))

    def on_message_complete(self) -> None:
        if self.done is not None:
            self.done.set_result(self.parser.get_status_code())

    async def get(self, head: bytes) -> int:
        self.done, self.fields = asyncio.get_running_loop().create_future(), []
        assert self.transport is not None
        self.transport.write(head)
        return await self.done


async def _floor(args: argparse.Namespace, urls: list[str]) -> None:
    split = urlsplit(args.origin)
    loop = asyncio.get_running_loop()
    base = (
        f"Host: {split.netloc}\r\nUser-Agent: sitemap-crawler\r\nAccept: */*\r\n"
        "Accept-Encoding: gzip, deflate\r\n"
    )
    conditions: dict[str, str] = {}

    async def connection() -> _Floor:
        _, conn = await loop.create_connection(_Floor, split.hostname, split.port)
        return conn

    def head(url: str) -> bytes:
        target = url[len(split.scheme) + 3 + len(split.netloc) :].partition("#")[0] or "/"
        return f"GET {target} HTTP/1.1\r\n{base}{conditions.get(url, '')}\r\n".encode()

    root = f"{split.scheme}://{split.netloc}"
    strange = [url for url in urls if url != root and not url.startswith(root + "/")]
    if strange:
        raise SystemExit(f"not of --origin {args.origin}: {strange[0]}")
    conns = [await connection() for _ in range(args.concurrency)]
    if args.conditional:
        for url in dict.fromkeys(urls):
            await conns[0].get(head(url))
            fields = dict(conns[0].fields)
            conditions[url] = "".join(
                f"{name}: {fields[key]}\r\n"
                for key, name in (("ETag", "If-None-Match"), ("Last-Modified", "If-Modified-Since"))
                if key in fields
            )
    todo, errors = iter(range(args.requests)), 0

    async def worker(conn: _Floor) -> None:
        nonlocal errors
        for number in todo:
            if await conn.get(head(urls[number % len(urls)])) not in (200, 304):
                errors += 1

    cpu, wall = _cpu(), time.perf_counter()
    await asyncio.gather(*(worker(conn) for conn in conns))
    cpu, wall = _cpu() - cpu, time.perf_counter() - wall
    for conn in conns:
        assert conn.transport is not None
        conn.transport.close()
    print(
        f"floor: {args.requests} requests, {cpu / args.requests * 1e6:.1f} CPU µs a "
        f"request, {args.requests / wall:.0f}/s, {errors} errors"
    )


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _run(args: argparse.Namespace, urls: list[str]) -> None:
    transport = LeanTransport(
        user_agent="sitemap-crawler", concurrency=args.concurrency, timeout=30,
        max_bytes=10 << 20,
    )  # fmt: skip
    async with transport:
        asked: dict[str, Validators] = {}
        if args.conditional:
            for url in dict.fromkeys(urls):
                resp = await transport.get(url)
                headers = resp.headers
                asked[url] = Validators(headers.get("ETag"), headers.get("Last-Modified"))
        config = Config(url=args.origin, concurrency=args.concurrency)
        policy = PagePolicy("sitemap-crawler")
        client = PoliteClient(config, args.origin, policy, transport=transport)
        todo = iter(range(args.requests))
        errors = 0

        async def worker() -> None:
            nonlocal errors
            for number in todo:
                url = urls[number % len(urls)]
                validators = asked.get(url)
                if args.layers == "lean":
                    resp = await transport.get(url, None, validators)
                else:
                    fetch = functools.partial(_fetched, transport, url, validators)
                    resp = (await client._retried(url, fetch)).response  # as client.fetch
                if resp.error or resp.status not in (200, 304):
                    errors += 1

        async with client.opened({}, set_depth=lambda _: None):
            cpu, wall = _cpu(), time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(args.concurrency)))
            cpu, wall = _cpu() - cpu, time.perf_counter() - wall
    print(
        f"{args.layers}: {args.requests} requests, {cpu / args.requests * 1e6:.1f} CPU µs a "
        f"request, {args.requests / wall:.0f}/s, {errors} errors"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--origin", default="http://127.0.0.1:18766/")
    ap.add_argument("--urls", type=Path, required=True, help="one URL a line")
    ap.add_argument("--requests", type=int, default=2800)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--layers", choices=("floor", "lean", "client"), default="client")
    ap.add_argument("--conditional", action="store_true", help="every answer a 304")
    ap.add_argument("--uvloop", action="store_true", help="on uvloop, as the crawl runs")
    args = ap.parse_args()
    urls = [line.strip() for line in args.urls.read_text().splitlines() if line.strip()]
    run = _floor(args, urls) if args.layers == "floor" else _run(args, urls)
    if args.uvloop:
        import uvloop

        uvloop.run(run)
    else:
        asyncio.run(run)


if __name__ == "__main__":
    main()
