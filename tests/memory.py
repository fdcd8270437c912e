"""An in-memory transport: the crawl's policy tested in milliseconds, without a server."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from crawler.config import build
from crawler.core.report import DecisionRecord
from crawler.core.validators import Validators
from crawler.shell import eventloop
from crawler.shell.engine import Crawl, CrawlResult
from crawler.shell.fetch import Response


@dataclass
class Answer:
    body: bytes | str = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/html"})


class MemoryTransport:
    """Answers GETs from a dict of URL -> Answer (a str is an HTML body); 404 otherwise.
    Records every URL asked for, in order."""

    def __init__(self, pages: dict[str, Answer | str]) -> None:
        self.pages = pages
        self.requested: list[str] = []

    async def get(
        self, url: str, max_bytes: int | None = None, validators: Validators | None = None
    ) -> Response:
        """Validators are ignored, as by a server that does not honour them."""
        self.requested.append(url)
        await asyncio.sleep(0)  # other requests run in between, as over a network
        answer = self.pages.get(url)
        if answer is None:
            return Response(url, 404, CIMultiDictProxy(CIMultiDict({"Content-Type": "text/plain"})))
        if isinstance(answer, str):
            answer = Answer(answer)
        body = answer.body.encode() if isinstance(answer.body, str) else answer.body
        headers = CIMultiDictProxy(CIMultiDict(answer.headers))
        return Response(url, answer.status, headers, body)


def crawl(
    pages: dict[str, Answer | str], out: Path, **options: Any
) -> tuple[CrawlResult, MemoryTransport, dict[str, tuple[str, str]]]:
    """Crawl `pages` (the first key is the start URL) in this process, publishing to out:
    the result, the transport (what was asked for) and each URL's (reason, detail)."""
    transport = MemoryTransport(pages)
    config = build({}, {"url": next(iter(pages)), "output": out, "quiet": True, **options})
    engine = Crawl(config, transport=transport)
    records: list[DecisionRecord] = []
    engine.journal.echo = records.append
    result = eventloop.run(engine.run())
    return result, transport, {r.url: (r.reason, r.detail) for r in records}


class Crash(Exception):
    """Raised by a transport's hook: the crawl dies there, as a killed process would."""


def crawl_until_crash(
    pages: dict[str, Answer | str], out: Path, crash_at: str, **options: Any
) -> MemoryTransport:
    """Crawl with --state until crash_at is requested: the state is checkpointed there (its
    last checkpoint), then the crawl dies without saving anything more."""
    transport = MemoryTransport(pages)
    config = build({}, {"url": next(iter(pages)), "output": out, "quiet": True, **options})
    engine = Crawl(config, transport=transport)

    async def get(
        url: str, max_bytes: int | None = None, validators: Validators | None = None
    ) -> Response:
        if url == crash_at:
            assert engine.state is not None
            engine.state.checkpoint()
            raise Crash(url)
        return await MemoryTransport.get(transport, url, max_bytes, validators)

    transport.get = get  # type: ignore[method-assign]
    try:
        eventloop.run(engine.run())
    except Crash:
        return transport
    raise AssertionError(f"{crash_at} was never requested")
