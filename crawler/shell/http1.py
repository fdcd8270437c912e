"""The crawl's lean HTTP/1.1 client: plain GETs over kept-alive connections, nothing else.

Why not aiohttp here: a crawl is CPU-bound, and aiohttp's request path (ClientRequest, its
headers, a timeout handle, yarl, the response's start) was 272 µs of a 949 µs page and 193
of a 627 µs 304 (bench/README.md, #26). A crawl needs a small part of it: one GET, sent as
is, read under a cap, on a pool of connections per origin. That is an asyncio Protocol
around llhttp (httptools: the parser uvicorn runs on), a request written from bytes made
once per origin, and one alarm for every request's timeout (not a timer each).

It answers exactly as `HttpTransport` does (the same `Response`, the same one-line errors
as `describe_error`), so nothing above the transport knows which one ran. A proxy is the
one thing it leaves to aiohttp (`crawler.shell.transports` chooses).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import socket
import ssl
import time
import zlib
from collections import deque
from dataclasses import dataclass, field

import aiohappyeyeballs
import httptools
from aiohappyeyeballs import AddrInfoType
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from crawler.core.validators import Validators
from crawler.shell.fetch import (
    REDIRECT_STATUSES,
    BaseTransport,
    Response,
    certificate_problem,
    connect_reason,
    describe_error,
    home_headers,
    ssl_reason,
    tls_context,
)

#: Answers whose body is never read (aiohttp's HttpTransport read none either).
_NO_BODY = REDIRECT_STATUSES | {204, 304}
MAX_LINE = 16 * 1024  # a header line, as aiohttp's max_line_size/max_field_size
MAX_HEAD = 1024 * 1024  # the whole head: llhttp itself has no limit
DNS_TTL = 300.0  # as aiohttp's ttl_dns_cache
IDLE_SECONDS = 15.0  # aiohttp's keepalive_timeout: an older idle connection is not reused
CONNECT_SECONDS = 10.0
#: uvloop's clock (loop.time()) counts whole milliseconds, read once a loop turn: a deadline
#: on it may ring up to this much before the same timeout on time.monotonic(), which times
#: the exchange. Added to every deadline, a timeout never ends an exchange before its time.
_LOOP_CLOCK_STEP = 0.001
HAPPY_EYEBALLS_DELAY = 0.25  # aiohttp's default: the next address after 250 ms
MAX_MEMBERS = 1024  # gzip/deflate members in one body, as aiohttp's MAX_DECOMPRESS_MEMBERS

DISCONNECTED = "server closed the connection without a response"
CUT_SHORT = "response body cut short (connection reset or bad encoding)"
CLOSED = "transport closed"  # after __aexit__: nothing more is sent (aiohttp: session closed)
#: aiohttp's default headers (no brotli installed: no br).
_DEFAULTS = {"Accept": "*/*", "Accept-Encoding": "gzip, deflate"}
_UNSAFE = re.compile(r"[\x00-\x20\x7f]")  # not in a request target


class _Stop(Exception):
    """Raised in a parser callback to stop parsing (cap reached, a bad header)."""


class Failure(Exception):
    """A request that failed, with its user-facing line (describe_error's words)."""


@dataclass(slots=True)
class _Origin:
    """What every request to one origin shares: where to connect, how, and its idle pool."""

    host: str  # for the resolver and the TLS server name
    port: int
    address: str | None  # --resolve's pinned address
    tls: ssl.SSLContext | None
    fields: str  # the request's header lines after the request line, this origin's own
    root: str  # its key and the path's first slash: a URL starting so is this origin's
    idle: list[_Connection] = field(default_factory=list)


class _Connection(asyncio.Protocol):
    """One connection and the exchange in progress on it; the parser calls back here."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.parser = parser = httptools.HttpResponseParser(self)
        # what aiohttp's parser allows in a response (obs-fold, bare LF, a CTL in a value, a
        # space before the colon or after a chunk size); none of the smuggling-relevant ones
        parser.set_dangerous_leniencies(
            lenient_headers=True,
            lenient_optional_cr_before_lf=True,
            lenient_spaces_after_chunk_size=True,
        )
        self.closed = False
        self.idle_since = 0.0
        self.waiter: asyncio.Future[None] | None = None
        self.deadline = 0.0  # the loop's time the exchange in progress times out at
        self.cap = 0
        self.clear()

    def begin(self, cap: int, deadline: float) -> asyncio.Future[None]:
        """Start a new request's exchange. The state is clear already: a connection is new,
        or was cleared when it went idle (`_answer`), the only ways to one that is free."""
        self.cap = cap
        self.deadline = deadline
        self.waiter = waiter = self.loop.create_future()
        return waiter

    def clear(self) -> None:
        """Forget the last answer (also when the connection goes idle: its zlib window,
        headers and fields are not kept alive by an idle connection)."""
        self.fields: list[tuple[str, str]] = []
        self.headers: CIMultiDictProxy[str] | None = None
        self.chunks: list[bytes] = []
        self.inflate: zlib._Decompress | None = None
        self.encoding = ""
        self.wbits = self.members = 0
        self.status = self.size = self.head = 0
        self.started = self.done = self.truncated = self.skip = self.keep = False
        self.sniffed = False
        self.failure: str | None = None
        self.error: Exception | None = None  # the request's write failed (`send`)

    def send(self, request: bytes, waiter: asyncio.Future[None]) -> None:
        """Write the request of the exchange `waiter` waits for (LeanTransport._send), unless
        that exchange is over already: dropped (cancelled, timed out), or the connection lost
        (the exchange says so). A write that fails ends the exchange with its error, raised
        by the request's own call (`_answer`) as when it wrote the request itself."""
        if waiter is not self.waiter or waiter.done() or self.closed:
            return
        assert self.transport is not None  # connected before any exchange begins
        try:
            self.transport.write(request)
        except Exception as exc:  # the burst's other requests are written all the same
            self.error = exc
            waiter.set_result(None)

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if self.headers is not None and not self.done:
            if self._ends_at_close() and self.failure is None:
                self._finish_body()  # a body without length ends with the connection
                self.done = True
            elif self.failure is None:
                self.failure = CUT_SHORT
        elif self.headers is None and self.failure is None:
            self.failure = DISCONNECTED
        waiter.set_result(None)

    def data_received(self, data: bytes) -> None:
        waiter = self.waiter
        if waiter is None or waiter.done():  # nobody asked: the connection is not ours to keep
            self.abort()
            return
        self.started = True
        if self.headers is None:
            self.head += len(data)
            if self.head > MAX_HEAD:
                self.failure = "malformed response: response head over 1 MiB"
        if self.failure is None:
            try:
                self.parser.feed_data(data)
            except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
                if self.done:  # bytes after the answer: it stands, the connection does not
                    self.keep = False
                elif self.failure is None and not self.truncated:
                    self.failure = f"malformed response: {exc}"
        if self.failure is not None or self.done or self.truncated:
            waiter.set_result(None)
        elif self.skip and self.headers is not None:
            waiter.set_result(None)  # no body read: the connection goes unless it is complete

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    # -- httptools callbacks

    def on_message_begin(self) -> None:
        if self.done:  # a second answer to one request: never this URL's, nor the next's
            self.keep = False
            raise _Stop

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(value) > MAX_LINE:  # the value alone, as aiohttp's max_field_size
            self.failure = "malformed response: a header line over 16 KiB"
            raise _Stop
        try:  # UTF-8 as nearly every head is: the decoder's fast path, no handler looked up
            field = (name.decode().strip(), value.decode())  # .strip(): `Content-Length : 2`
        except UnicodeDecodeError:  # the same strings, and the bytes that are not UTF-8 kept
            field = (
                name.decode("utf-8", "surrogateescape").strip(),
                value.decode("utf-8", "surrogateescape"),
            )
        self.fields.append(field)

    def on_headers_complete(self) -> None:
        self.status = status = self.parser.get_status_code()
        if status < 200:
            return  # an interim answer (100 Continue): the real one follows
        self.headers = headers = CIMultiDictProxy(CIMultiDict(self.fields))
        if status in _NO_BODY:
            self.skip = True
            return
        encoding = headers.get("Content-Encoding")
        if encoding is not None and encoding.isascii():
            encoding = encoding.lower()
            if encoding in ("br", "zstd"):  # never asked for: aiohttp (without them) failed so
                self.failure = f"malformed response: Can not decode content-encoding: {encoding}"
                raise _Stop
            if encoding == "gzip":
                self.wbits = 16 + zlib.MAX_WBITS
            elif encoding == "deflate":
                self.wbits = zlib.MAX_WBITS  # or raw: see on_body
            if self.wbits:
                self.inflate = zlib.decompressobj(self.wbits)
                self.members = 1
            self.encoding = encoding

    def on_body(self, chunk: bytes) -> None:
        if self.skip:
            return
        if self.inflate is not None:
            chunk = self._inflate(chunk)
            if not chunk:
                return
        self._take(chunk)

    def _inflate(self, chunk: bytes) -> bytes:
        """The body's bytes decoded, every member of it, never more than the cap plus one."""
        if not self.sniffed and chunk:  # the stream's first byte, whatever the split
            self.sniffed = True
            if self.encoding == "deflate" and chunk[0] & 0xF != 8:
                # deflate without its zlib header, as many servers send it (aiohttp reads it too)
                self.wbits = -zlib.MAX_WBITS
                self.inflate = zlib.decompressobj(self.wbits)
                self.encoding = "raw"
        inflate = self.inflate
        assert inflate is not None
        room = self.cap - self.size + 1
        try:
            out = inflate.decompress(chunk, room)
            while inflate.eof and inflate.unused_data and len(out) < room:
                # another member follows (concatenated gzip): aiohttp reads them all
                self.members += 1
                if self.members > MAX_MEMBERS:
                    raise zlib.error("too many members")
                rest = inflate.unused_data
                self.inflate = inflate = zlib.decompressobj(self.wbits)
                out += inflate.decompress(rest, room - len(out))
        except zlib.error:
            self.failure = CUT_SHORT
            raise _Stop from None
        return out

    def on_message_complete(self) -> None:
        if self.status < 200:
            self.fields = []
            return
        if self.skip or self._finish_body():
            self.done = True
            self.keep = self.parser.should_keep_alive()  # known here only: llhttp resets it

    # --

    def _take(self, chunk: bytes) -> None:
        size = self.size + len(chunk)
        if size > self.cap:
            self.chunks.append(chunk[: self.cap - self.size])
            self.size = self.cap
            self.truncated = True
            raise _Stop
        self.size = size
        self.chunks.append(chunk)

    def _finish_body(self) -> bool:
        """The decompressor's end; False when the body turned out bad or over the cap."""
        inflate = self.inflate
        if inflate is None:
            return True
        if self.encoding == "deflate" and self.size and not inflate.eof:
            self.failure = CUT_SHORT  # aiohttp's ContentEncodingError("deflate")
            return False
        try:
            tail = inflate.flush()
        except zlib.error:  # never escapes from connection_lost, holding the slot
            self.failure = CUT_SHORT
            return False
        if tail:
            try:
                self._take(tail)
            except _Stop:
                return False
        return True

    def _ends_at_close(self) -> bool:
        """A body with neither a length nor chunks ends when the server closes (RFC 9112 6.3)."""
        headers = self.headers
        return (
            headers is not None
            and "Content-Length" not in headers
            and "chunked" not in headers.get("Transfer-Encoding", "").lower()
        )

    def reusable(self) -> bool:
        return self.keep and not self.closed


class Slots:
    """A limit of requests in flight (here --concurrency, as aiohttp's connector had; the
    pool's share of it for the main process): a semaphore whose free slot is taken by the
    caller as a counter (`free`, none `queue`d), not by asyncio.Semaphore's `acquire`
    coroutine, whose `locked()` scans its waiters with a generator each time (4,700
    instructions a request under callgrind, against 300)."""

    __slots__ = ("free", "queue")

    def __init__(self, total: int) -> None:
        self.free = total
        self.queue: deque[asyncio.Future[None]] = deque()

    def take(self) -> bool:
        """A free slot taken now, if one is and nobody waits before us: the common case,
        with no coroutine made."""
        if self.free and not self.queue:
            self.free -= 1
            return True
        return False

    async def wait(self) -> None:
        """A slot, first come first served, once one is given back."""
        if self.take():
            return
        waiter = asyncio.get_running_loop().create_future()
        self.queue.append(waiter)
        try:
            await waiter  # `give` hands its slot over before resolving it
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.give()  # handed over and cancelled in the same step: pass it on
            else:
                with contextlib.suppress(ValueError):  # `give` may have dropped it already
                    self.queue.remove(waiter)
            raise

    def give(self) -> None:
        """A slot given back: to the first one waiting, else free."""
        queue = self.queue
        while queue:
            waiter = queue.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1


class LeanTransport(BaseTransport):
    """The crawl's transport without a proxy. Use as an async context manager."""

    def _prepare(self) -> None:
        access = self.access
        assert access.proxy is None, "a proxy is aiohttp's (crawler.shell.transports)"
        # a --header Accept replaces ours, as aiohttp merged them
        self._home_headers = _lines({**_DEFAULTS, **home_headers(access)})
        self._other_headers = _lines(_DEFAULTS)
        self._pinned = {(host, port): address for host, port, address in access.pinned}
        self._origins: dict[str, _Origin] = {}
        self._recent: _Origin | None = None  # the origin of the latest request's URL
        self._dns: dict[tuple[str, int], tuple[float, list[AddrInfoType]]] = {}
        self._resolving: dict[tuple[str, int], asyncio.Future[list[AddrInfoType]]] = {}
        self._slots = Slots(self.concurrency)
        self._tls: ssl.SSLContext | None = None
        self._open: set[_Connection] = set()
        self._closing = False
        self._sweep: asyncio.TimerHandle | None = None
        # one alarm for every exchange's timeout, at the earliest deadline in flight or
        # before it (`_alarm_at`): a timer a request cost 8% of a 304's round trip
        self._alarm: asyncio.TimerHandle | None = None
        self._alarm_at = math.inf
        # the requests made in this loop turn, written together at its end (`_send`), each
        # with the waiter of its exchange
        self._outbox: list[tuple[_Connection, bytes, asyncio.Future[None]]] = []
        # the loop it is used in, from __aenter__: 3.11's get_running_loop() makes a getpid
        # system call each time (about 0.4% of an unchanged night's CPU, a request each)
        self._loop: asyncio.AbstractEventLoop | None = None

    async def __aenter__(self) -> LeanTransport:
        self._loop = asyncio.get_running_loop()
        if self.access.ca_bundle is not None:
            self._trust()  # a --ca-bundle that cannot be read is said now, as a config error
        return self

    def _trust(self) -> ssl.SSLContext:
        """The TLS context, made at the first https origin: loading the system's CAs costs
        tens of milliseconds a process, for nothing on an http:// site."""
        if self._tls is not None:
            return self._tls
        trust = tls_context(self.access)
        if isinstance(trust, ssl.SSLContext):
            self._tls = trust
        elif trust:
            self._tls = ssl.create_default_context()
        else:  # --insecure: no certificate check at all, as aiohttp's ssl=False
            self._tls = context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return self._tls

    async def __aexit__(self, *exc: object) -> None:
        self._closing = True  # a request in flight is not retried, a new one not sent
        self._loop = None
        if self._sweep is not None:
            self._sweep.cancel()
        if self._alarm is not None:
            self._alarm.cancel()
            self._alarm, self._alarm_at = None, math.inf
        for conn in self._open:
            conn.abort()
        self._open.clear()
        for origin in self._origins.values():
            origin.idle.clear()

    async def get(
        self, url: str, max_bytes: int | None = None, validators: Validators | None = None
    ) -> Response:
        """GET url (already normalised: sent as is), without following redirects. The
        exchange is made here, not in a coroutine of its own: every await of every request
        passes each coroutine layer, about 1,000 instructions a layer (#26)."""
        cap = self.max_bytes if max_bytes is None else max_bytes
        started = time.monotonic()
        try:
            origin, request = self._request(url, validators)
            slots = self._slots
            if not slots.take():  # no coroutine a request while a slot is free
                await slots.wait()
            try:
                loop = self._loop or asyncio.get_running_loop()
                now = loop.time()
                deadline = now + self.timeout - (time.monotonic() - started) + _LOOP_CLOCK_STEP
                conn = self._idle(origin, now)
                fresh = conn is None
                while True:
                    if self._closing:
                        raise Failure(CLOSED)
                    if conn is None:
                        conn = await self._connect(origin, deadline)
                    waiter = conn.begin(cap, deadline)
                    if deadline < self._alarm_at:  # else the alarm rings first, sets the next
                        self._set_alarm(loop, deadline)
                    try:
                        outbox = self._outbox
                        outbox.append((conn, request, waiter))
                        if len(outbox) == 1:
                            loop.call_soon(self._send)
                        await waiter
                    except TimeoutError:
                        self._drop(conn)
                        raise Failure(f"no complete response within {self.timeout:g} s") from None
                    except BaseException:  # cancelled: the answer will never be read
                        self._drop(conn)
                        raise
                    if conn.failure == DISCONNECTED and not conn.started and not fresh:
                        # a kept-alive connection the server had closed: ask once more at
                        # once on a new one, as browsers do (a GET may be repeated)
                        self._drop(conn)
                        conn, fresh = None, True
                        continue
                    break
                answer = self._answer(url, origin, conn, loop)
            finally:
                slots.give()
        except Failure as failure:
            answer = Response(url, error=self.redact(str(failure)))
        except (ValueError, OSError, RuntimeError) as exc:  # none known: said as aiohttp's were
            answer = Response(url, error=self.redact(describe_error(exc, self.timeout)))
        answer.seconds = time.monotonic() - started
        return answer

    def _send(self) -> None:
        """Write the requests made in the last loop turn, one after another. Written as each
        was made, each request woke the server anew: on a server on the same machine, the
        crawl's write runs the server's receive and wake-up in the kernel (8-10% of a 304
        night's CPU, #26), and a burst wakes it once (5-6% of that night saved). A request
        waits at most a loop turn, which its pages take anyway."""
        outbox, self._outbox = self._outbox, []
        for conn, request, waiter in outbox:
            conn.send(request, waiter)

    def _request(self, url: str, validators: Validators | None) -> tuple[_Origin, bytes]:
        """url's origin and the bytes of its GET. A crawl asks one origin nearly always, so
        the latest origin is tried first: one `startswith` instead of the parse (#26)."""
        # Exact because an origin's key (`_parsed`) holds no "/" or "?" after its "://",
        # so a URL starting with key + "/" parses to that key and the rest, and because
        # `_origins` only ever grows: an origin once made is the one its URLs get.
        origin = self._recent
        if origin is not None and url.startswith(origin.root):
            target = url[len(origin.root) - 1 :]  # what `_parsed` would make of it
        else:
            origin, target = self._parsed(url)
            self._recent = origin
        if "#" in target:
            target = target.partition("#")[0]
        # printable ASCII without a space has nothing unsafe: string tests before a search
        if not (target.isascii() and target.isprintable() and " " not in target):
            if _UNSAFE.search(target):
                raise Failure(f"invalid URL: {url}")
            f"GET {target}".encode()  # one that cannot be sent fails first, in the same words
        if validators is None:
            return origin, f"GET {target} HTTP/1.1\r\n{origin.fields}\r\n".encode()
        # fetch.conditional's headers, in its order, as lines: not through its dict, a call,
        # a join and a loop a 304 (#26)
        etag, modified = validators.etag, validators.modified
        extra = "" if etag is None else f"If-None-Match: {etag}\r\n"
        if modified is not None:
            extra += f"If-Modified-Since: {modified}\r\n"
        values = f"{etag or ''}{modified or ''}"  # NUL, CR or LF in one: in them all
        if "\r" in values or "\n" in values or "\x00" in values:
            raise Failure("invalid validators: a line break in a header value")
        try:
            return origin, f"GET {target} HTTP/1.1\r\n{origin.fields}{extra}\r\n".encode()
        except UnicodeEncodeError:  # said as when the validators' lines were encoded alone:
            extra.encode()  # the target and the origin's fields are encodable (checked), so
            raise  # this raises; the bare raise is never reached

    def _parsed(self, url: str) -> tuple[_Origin, str]:
        """url's origin (made at its first URL) and its request target, fragment included."""
        scheme_end = url.find("://")
        if scheme_end < 0:
            raise Failure(f"invalid URL: {url}")
        rest = url.find("/", scheme_end + 3)
        query = url.find("?", scheme_end + 3)
        if rest < 0 or 0 <= query < rest:
            rest = query
        key, target = (url, "/") if rest < 0 else (url[:rest], url[rest:])
        if target[0] == "?":
            target = "/" + target
        origin = self._origins.get(key)
        if origin is None:
            origin = self._origins[key] = self._new_origin(key)
        return origin, target

    def _new_origin(self, key: str) -> _Origin:
        try:
            parsed = URL(key, encoded=True)
            host, port, scheme = parsed.raw_host, parsed.port, parsed.scheme
        except ValueError as exc:
            raise Failure(f"invalid URL: {key}: {exc}") from None
        if not host or port is None or scheme not in ("http", "https"):
            raise Failure(f"invalid URL: {key}")
        shown = f"[{host}]" if ":" in host else host
        if not parsed.is_default_port():
            shown += f":{port}"
        home = self._home == (scheme, parsed.host, port)
        own = self._home_headers if home else self._other_headers
        fields = f"Host: {shown}\r\nUser-Agent: {self.user_agent}\r\n{own}"
        fields.encode()  # what cannot be sent fails here, at the origin's first URL, as ever
        address = self._pinned.get((host.lower().rstrip("."), port))
        tls = self._trust() if scheme == "https" else None
        return _Origin(host, port, address, tls, fields, key + "/")

    def _answer(
        self, url: str, origin: _Origin, conn: _Connection, loop: asyncio.AbstractEventLoop
    ) -> Response:
        """The exchange's answer, its connection back to the idle pool when reusable."""
        if conn.failure is not None or conn.error is not None:
            self._drop(conn)
            if conn.error is not None:
                raise conn.error  # said as get() says any error of the exchange
            raise Failure(CLOSED if self._closing else conn.failure)
        answer = Response(url, conn.status, conn.headers or CIMultiDictProxy(CIMultiDict()))
        if not conn.skip:
            answer.body = b"".join(conn.chunks) if len(conn.chunks) != 1 else conn.chunks[0]
            answer.truncated = conn.truncated
        conn.waiter = None
        if conn.reusable():
            conn.clear()
            conn.idle_since = loop.time()
            origin.idle.append(conn)
            if self._sweep is None:
                self._sweep = loop.call_later(IDLE_SECONDS, self._close_idle)
        else:
            self._drop(conn)
        return answer

    def _set_alarm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._alarm is not None:
            self._alarm.cancel()
        self._alarm, self._alarm_at = loop.call_at(when, self._ring), when

    def _ring(self) -> None:
        """Time out every exchange past its deadline (its `await` raises TimeoutError, as a
        timer of its own did), and set the alarm at the earliest deadline left. Exchanges
        in progress are on open connections only, at most --concurrency of them a host."""
        # asyncio may ring a timer up to its clock's resolution early: the alarm's own time
        # counts as now, or a coarse clock would ring again and again until it passed
        rung, self._alarm, self._alarm_at = self._alarm_at, None, math.inf
        loop = asyncio.get_running_loop()
        now = max(loop.time(), rung)
        first = math.inf
        for conn in self._open:
            waiter = conn.waiter
            if waiter is None or waiter.done():
                continue
            if conn.deadline <= now:
                waiter.set_exception(TimeoutError())
            elif conn.deadline < first:
                first = conn.deadline
        if first < math.inf:
            self._set_alarm(loop, first)

    def _drop(self, conn: _Connection) -> None:
        conn.abort()
        self._open.discard(conn)

    def _close_idle(self) -> None:
        """Close what has idled over IDLE_SECONDS, as aiohttp's cleanup timer did: the
        user's server does not keep `concurrency` sockets a host for us until it times out."""
        self._sweep = None
        loop = asyncio.get_running_loop()
        oldest = loop.time() - IDLE_SECONDS
        left = False
        for origin in self._origins.values():
            for conn in origin.idle:
                if conn.closed or conn.idle_since <= oldest:
                    self._drop(conn)
            origin.idle = [conn for conn in origin.idle if not conn.closed]
            left = left or bool(origin.idle)
        if left:
            self._sweep = loop.call_later(IDLE_SECONDS, self._close_idle)

    def _idle(self, origin: _Origin, now: float) -> _Connection | None:
        """The most recently used idle connection still open and fresh enough, if any."""
        idle = origin.idle
        oldest = now - IDLE_SECONDS
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.idle_since > oldest:
                return conn
            self._drop(conn)
        return None

    async def _connect(self, origin: _Origin, deadline: float) -> _Connection:
        loop = asyncio.get_running_loop()
        try:  # connecting may take its share of the total, never more than 10 s of it
            async with asyncio.timeout_at(min(deadline, loop.time() + CONNECT_SECONDS)):
                infos = await self._addresses(origin)
                try:  # Happy Eyeballs as aiohttp's connector: a black-holed IPv6 route costs
                    # 0.25 s before the next address is tried, not the whole connect budget
                    sock = await aiohappyeyeballs.start_connection(
                        infos, happy_eyeballs_delay=HAPPY_EYEBALLS_DELAY, interleave=1
                    )
                except OSError as exc:
                    raise Failure(_connect_problem(exc)) from None
                try:
                    _, conn = await loop.create_connection(
                        lambda: _Connection(loop),
                        sock=sock,
                        ssl=origin.tls,
                        server_hostname=origin.host.rstrip(".") if origin.tls else None,
                    )
                except ssl.SSLError as exc:
                    raise Failure(_tls_problem(exc)) from None
                except OSError as exc:
                    raise Failure(_connect_problem(exc)) from None
                if self._closing:  # closed while connecting: not ours to keep
                    conn.abort()
                    raise Failure(CLOSED)
                self._open.add(conn)
                return conn
        except TimeoutError:
            raise Failure(f"no complete response within {self.timeout:g} s") from None

    async def _addresses(self, origin: _Origin) -> list[AddrInfoType]:
        port = origin.port
        if origin.address is not None:
            return _literal(origin.address, port)
        host = origin.host
        if ":" in host or host.replace(".", "").isdigit():
            return _literal(host, port)  # an IP address
        key = (host, port)
        cached = self._dns.get(key)
        if cached is not None and cached[0] > asyncio.get_running_loop().time():
            return cached[1]
        pending = self._resolving.get(key)
        if pending is None:  # one lookup a host at a time, however many requests wait for it
            pending = self._resolving[key] = asyncio.ensure_future(self._resolve(host, port))
            pending.add_done_callback(lambda done: self._resolved(key, done))
        return await asyncio.shield(pending)  # one waiter cancelled never cancels the others'

    def _resolved(self, key: tuple[str, int], done: asyncio.Future[list[AddrInfoType]]) -> None:
        self._resolving.pop(key, None)
        if not done.cancelled():
            done.exception()  # said to its waiters; never "never retrieved" if none is left

    async def _resolve(self, host: str, port: int) -> list[AddrInfoType]:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise Failure(_connect_problem(exc)) from None
        addresses: list[AddrInfoType] = list({info[4]: info for info in infos}.values())
        self._dns[(host, port)] = (loop.time() + DNS_TTL, addresses)
        return addresses


def _literal(address: str, port: int) -> list[AddrInfoType]:
    infos = aiohappyeyeballs.addr_to_addr_infos((address, port))
    assert infos is not None
    return infos


def _lines(headers: dict[str, str]) -> str:
    """Header lines, one name once whatever its case (a later one wins, as in aiohttp)."""
    named = CIMultiDict[str]()
    for name, value in headers.items():
        named[name] = value
    return "".join(f"{name}: {value}\r\n" for name, value in named.items())


def _tls_problem(exc: ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return certificate_problem(exc)
    return f"TLS handshake failed: {ssl_reason(exc)}"


def _connect_problem(exc: OSError) -> str:
    return f"cannot connect: {connect_reason(exc)}"
