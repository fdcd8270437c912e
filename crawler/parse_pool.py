"""Parse HTML pages in worker processes so a crawl uses more than one core (issue #6).

The event loop's core is saturated by aiohttp's request path; HTML parsing is a quarter of its
CPU and is the one piece that moves cleanly to another process. Threads do not help (the GIL
hand-offs ate the gain) and ``concurrent.futures.ProcessPoolExecutor`` spends parent CPU on a
feeder thread, pickling and per-call bookkeeping, which is the very core we are trying to
relieve. So this module is deliberately lean:

* one ``socketpair`` per worker; the parent writes length-prefixed frames straight to the
  transport and reads answers through an ``asyncio.Protocol`` on the event loop's own
  selector: no threads, no queues, no pickling of page bodies;
* a request is a 16-byte header, the content type and URL, then the body bytes as they came;
* an answer is the request id and a ``marshal`` of plain tuples, lists and strings (see
  :class:`RawPage`), rebuilt into :class:`~crawler.extract.PageData` only if the caller wants
  objects.

Failure policy: a page must always get a correct result. If a worker dies, every request it
held is parsed inline in the parent and the worker is respawned in the background (a bounded
number of times, so a crash loop cannot become a fork loop); while no worker is available,
calls parse inline. Nothing is logged: the caller gets the same answer either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import marshal
import os
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Callable
from types import TracebackType
from typing import NamedTuple, Self

from crawler import PRODUCT_TOKEN
from crawler.directives import NO_DIRECTIVES, Directives
from crawler.errors import SitemapCrawlerError
from crawler.extract import Link, PageData, extract_page

__all__ = ["ParsePool", "ParsePoolError", "RawPage", "pack_page", "unpack_page"]

# Request header: frame length (bytes after this field), request id, content-type length
# (-1 for None), URL length. The body follows the content type and URL, unencoded.
_REQ = struct.Struct(">IIiI")
# Answer header: frame length (bytes after this field), request id. An empty payload means
# "the worker could not produce an answer" (the parent then parses inline); request id 0 with
# an empty payload is the worker's "ready" signal.
_ANS = struct.Struct(">II")
_READY_ID = 0
_MAX_ID = 0xFFFFFFFF
# Socket buffers big enough for a few dozen pages in flight without the transport having to
# queue (each queued write costs the parent an extra send() later).
_SOCK_BUF = 1 << 21
_TEXT = ("utf-8", "surrogatepass")  # any Python str survives the round trip


class ParsePoolError(SitemapCrawlerError):
    """The worker processes could not be started (the crawl can still parse inline)."""


class RawPage(NamedTuple):
    """:class:`PageData` as plain values: what crosses the process boundary.

    It reads like a PageData (``base``, ``alternates``, ``canonical``, ``directives``,
    ``encoding``, even ``links``), but keeps links as two parallel lists: building 80
    ``Link`` objects costs the parent about as much CPU as the whole round trip, so the
    crawl's hot path should use :meth:`followable` and never touch ``links``.
    """

    base: str
    hrefs: list[str]
    nofollow: list[bool]  # parallel to hrefs: rel="nofollow" on that link
    alternates: list[tuple[str, str]]  # (hreflang, href)
    canonical: str | None
    meta: tuple[bool, bool, str]  # Directives(noindex, nofollow, source) as a tuple
    encoding: str

    @property
    def directives(self) -> Directives:
        noindex, nofollow, source = self.meta
        if noindex or nofollow or source:
            return Directives(noindex, nofollow, source)
        return NO_DIRECTIVES

    @property
    def links(self) -> list[Link]:
        return list(map(Link, self.hrefs, self.nofollow))

    def page_data(self) -> PageData:
        """The same :class:`PageData` ``extract_page`` would have returned."""
        return PageData(
            self.base, self.links, self.alternates, self.canonical, self.directives, self.encoding
        )

    def followable(self, follow_nofollow: bool = False) -> list[str]:
        """Hrefs a crawler may follow, in document order, then the hreflang alternates:
        the same list the engine builds from ``PageData.links`` and ``.alternates``."""
        if follow_nofollow or True not in self.nofollow:
            hrefs = self.hrefs.copy()
        else:
            hrefs = [h for h, nf in zip(self.hrefs, self.nofollow, strict=True) if not nf]
        hrefs += [href for _, href in self.alternates]
        return hrefs

    @classmethod
    def of(cls, page: PageData) -> RawPage:
        d = page.directives
        return cls(
            page.base,
            [link.href for link in page.links],
            [link.nofollow for link in page.links],
            page.alternates,
            page.canonical,
            (d.noindex, d.nofollow, d.source),
            page.encoding,
        )


def pack_page(page: PageData) -> bytes:
    """Serialise ``page`` for the trip back to the parent (marshal: the fastest to load, and
    safe here because both ends are the same interpreter build)."""
    return marshal.dumps(tuple(RawPage.of(page)))


def unpack_page(payload: bytes) -> RawPage:
    """Inverse of :func:`pack_page`, without building any per-link objects."""
    return tuple.__new__(RawPage, marshal.loads(payload))


# --- worker process ----------------------------------------------------------------------------


def _recv_exactly(sock: socket.socket, view: memoryview) -> bool:
    """Fill ``view`` from ``sock``; False on end of stream (the parent is gone or closed us)."""
    got, size = 0, len(view)
    while got < size:
        n = sock.recv_into(view[got:])
        if n == 0:
            return False
        got += n
    return True


def _serve(sock: socket.socket, agent: str) -> None:
    """Worker main loop: answer requests until the parent closes its end of the socket.

    SIGINT is ignored because Ctrl-C reaches the whole process group and the parent decides
    how the crawl stops (it closes the pool, which ends this loop). Because the only thing
    keeping the worker alive is the socket, a parent that is killed outright still leaves no
    orphan: the kernel closes its end and ``recv`` returns end-of-stream.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock.setblocking(True)
    sock.sendall(_ANS.pack(4, _READY_ID))
    head = bytearray(_REQ.size)
    head_view = memoryview(head)
    while True:
        if not _recv_exactly(sock, head_view):
            return
        length, rid, ct_len, url_len = _REQ.unpack(head)
        frame = bytearray(length - (_REQ.size - 4))
        if not _recv_exactly(sock, memoryview(frame)):
            return
        start = max(ct_len, 0)
        content_type = bytes(frame[:start]).decode(*_TEXT) if ct_len >= 0 else None
        url = bytes(frame[start : start + url_len]).decode(*_TEXT)
        body = bytes(frame[start + url_len :])
        try:
            payload = pack_page(extract_page(body, content_type, url, agent))
        except Exception:  # extract_page promises not to raise; if it ever does, the parent
            payload = b""  # re-runs it inline so the caller sees exactly extract_page's error
        sock.sendall(_ANS.pack(4 + len(payload), rid) + payload)


def _worker_main(fd: int, agent: str) -> None:
    """Entry point of a worker process (see ``_WORKER_CODE``)."""
    with contextlib.suppress(OSError, KeyboardInterrupt), socket.socket(fileno=fd) as sock:
        _serve(sock, agent)


# Workers are fresh interpreters (fork+exec, like multiprocessing's "spawn", never a bare fork
# of a process that has aiohttp's threads and sockets). They are started directly rather than
# through multiprocessing so that nothing else comes along: no re-import of the parent's
# __main__ (a script without a main guard would crawl again in every worker), no resource
# tracker process outliving close(), no atexit hooks. The package's own directory goes first
# on sys.path so an uninstalled checkout works too.
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_WORKER_CODE = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from crawler.parse_pool import _worker_main; _worker_main(int(sys.argv[2]), sys.argv[3])"
)


# --- parent side -------------------------------------------------------------------------------


class _WorkerGone(Exception):
    """Internal: the worker holding a request died before answering."""


class _Channel(asyncio.Protocol):
    """The parent's end of one worker's socket: splits answer frames and settles futures."""

    def __init__(self, on_lost: Callable[[_Channel], None]) -> None:
        self.pending: dict[int, asyncio.Future[bytes]] = {}
        self.transport: asyncio.Transport | None = None
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.alive = False
        self._buf = b""
        self._on_lost = on_lost

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._buf:
            data = self._buf + data
        pos, end = 0, len(data)
        pending = self.pending
        while end - pos >= 8:
            length, rid = _ANS.unpack_from(data, pos)
            stop = pos + 4 + length
            if stop > end:
                break
            if rid == _READY_ID:
                self.alive = True
                if not self.ready.done():
                    self.ready.set_result(None)
            else:
                fut = pending.pop(rid, None)
                if fut is not None and not fut.done():
                    fut.set_result(data[pos + 8 : stop])
            pos = stop
        self._buf = data[pos:] if pos < end else b""

    def connection_lost(self, exc: Exception | None) -> None:
        self.alive = False
        if not self.ready.done():
            self.ready.set_exception(_WorkerGone())
            self.ready.exception()  # retrieved: nobody may be waiting any more
        pending, self.pending = self.pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(_WorkerGone())
        self._on_lost(self)

    def eof_received(self) -> bool:
        return False  # close our end too; connection_lost follows


class _Worker:
    """One worker slot: its process and its channel, replaced together on respawn."""

    __slots__ = ("channel", "process")

    def __init__(self, process: subprocess.Popen[bytes], channel: _Channel) -> None:
        self.process = process
        self.channel = channel


class ParsePool:
    """Parses pages in N worker processes (default 1), fed over socketpairs with length-prefixed
    frames; results come back through the event loop's own reader, no threads in the parent.

    ``extract`` always returns what ``extract_page`` would: when the pool is closed, not
    started, or a worker dies, the page is parsed inline. A worker that dies after start-up is
    respawned in the background, at most ``max_respawns`` times over the pool's life (a page
    that crashes the parser must not turn into an endless spawn loop).
    """

    def __init__(
        self,
        workers: int = 1,
        agent: str = PRODUCT_TOKEN,
        *,
        start_timeout: float = 60.0,
        max_respawns: int = 8,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.workers = workers
        self.agent = agent
        self.start_timeout = start_timeout
        self.respawns_left = max_respawns
        self._slots: list[_Worker] = []
        self._next_id = 0
        self._started = False
        self._running = False  # start() finished: deaths from now on are respawned
        self._closed = False
        self._respawning: set[asyncio.Task[None]] = set()
        self._retired: list[subprocess.Popen[bytes]] = []  # dead workers not yet reaped

    # -- life cycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def pids(self) -> list[int]:
        """Process ids of the current workers (for tests and diagnostics)."""
        return [w.process.pid for w in self._slots]

    @property
    def alive(self) -> int:
        """How many workers are ready to take pages right now."""
        return sum(w.channel.alive for w in self._slots)

    async def start(self) -> None:
        """Spawn the workers and wait until each has imported the parser and said it is ready.

        Raises ParsePoolError (after cleaning up) if a worker dies or stays silent during
        start-up; if ``start`` itself is cancelled, every process started so far is killed
        and reaped before the cancellation propagates.
        """
        if self._started:
            raise RuntimeError("ParsePool.start() called twice")
        self._started = True
        try:
            for _ in range(self.workers):
                self._slots.append(await self._spawn())
            async with asyncio.timeout(self.start_timeout):
                await asyncio.gather(*(w.channel.ready for w in self._slots))
        except (_WorkerGone, TimeoutError, OSError) as exc:
            self._kill_all()
            raise ParsePoolError(f"parse worker failed to start: {exc!r}") from None
        except BaseException:
            self._kill_all()
            raise
        self._running = True

    async def _spawn(self) -> _Worker:
        parent_sock, child_sock = socket.socketpair()
        try:
            for s in (parent_sock, child_sock):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SOCK_BUF)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _SOCK_BUF)
            fd = child_sock.fileno()
            process = subprocess.Popen(
                [sys.executable, "-c", _WORKER_CODE, _PACKAGE_ROOT, str(fd), self.agent],
                stdin=subprocess.DEVNULL,
                pass_fds=(fd,),  # and nothing else: other workers' sockets stay private
            )
        except BaseException:
            parent_sock.close()
            raise
        finally:
            child_sock.close()  # the child has its own copy; ours would hide its EOF
        try:
            loop = asyncio.get_running_loop()
            _, channel = await loop.create_connection(
                lambda: _Channel(self._lost), sock=parent_sock
            )
        except BaseException:
            parent_sock.close()
            _hard_stop(process)
            raise
        return _Worker(process, channel)

    def _lost(self, channel: _Channel) -> None:
        if self._closed or not self._running:
            return
        worker = next((w for w in self._slots if w.channel is channel), None)
        if worker is None or self.respawns_left <= 0:
            return
        self.respawns_left -= 1
        self._retired.append(worker.process)
        task = asyncio.get_running_loop().create_task(self._respawn(worker))
        self._respawning.add(task)
        task.add_done_callback(self._respawning.discard)

    async def _respawn(self, worker: _Worker) -> None:
        try:
            fresh = await self._spawn()
        except Exception:
            return  # stay at fewer workers; calls keep falling back inline
        worker.process, worker.channel = fresh.process, fresh.channel
        # After the swap, close() and _kill_all() see the new process whatever happens next.
        self._retired = [p for p in self._retired if p.poll() is None]

    async def close(self) -> None:
        """Stop the workers and reap them. Idempotent.

        Closing a worker's socket is its signal to exit; one that has not exited within a
        short grace period is terminated, then killed. Even if this coroutine is cancelled,
        every worker is killed and reaped before the cancellation propagates.
        """
        if self._closed:
            return
        self._closed = True
        try:
            respawning = list(self._respawning)
            for task in respawning:
                task.cancel()
            await asyncio.gather(*respawning, return_exceptions=True)
            for worker in self._slots:
                if worker.channel.transport is not None:
                    worker.channel.transport.close()
            processes = [w.process for w in self._slots] + self._retired
            await _wait_exit(processes, 1.0)
            for process in processes:
                if process.poll() is None:
                    process.terminate()
            await _wait_exit(processes, 1.0)
        finally:
            self._kill_all()

    def _kill_all(self) -> None:
        """Synchronous last resort, safe in any state: nothing survives, nothing is left
        unreaped. Also used when start() fails or is cancelled."""
        self._closed = True
        for task in list(self._respawning):
            task.cancel()
        for worker in self._slots:
            if worker.channel.transport is not None:
                worker.channel.transport.close()
        for process in [w.process for w in self._slots] + self._retired:
            _hard_stop(process)
        self._retired = []

    # -- parsing -------------------------------------------------------------------------------

    async def extract_raw(self, body: bytes, content_type: str | None, url: str) -> RawPage:
        """Like :meth:`extract`, but returns the plain-value form (cheapest for the parent)."""
        payload = await self._roundtrip(body, content_type, url)
        if payload:
            return unpack_page(payload)
        return RawPage.of(extract_page(body, content_type, url, self.agent))

    async def extract(self, body: bytes, content_type: str | None, url: str) -> PageData:
        """``extract_page(body, content_type, url, agent)``, computed in a worker."""
        payload = await self._roundtrip(body, content_type, url)
        if payload:
            return unpack_page(payload).page_data()
        return extract_page(body, content_type, url, self.agent)

    async def _roundtrip(self, body: bytes, content_type: str | None, url: str) -> bytes:
        """The worker's answer, or b"" when the caller must parse inline."""
        channel: _Channel | None = None
        load = -1
        for worker in self._slots:  # least loaded live worker
            ch = worker.channel
            if ch.alive and (channel is None or len(ch.pending) < load):
                channel, load = ch, len(ch.pending)
        if channel is None or self._closed:
            return b""
        rid = self._next_id = self._next_id % _MAX_ID + 1
        ct = content_type.encode(*_TEXT) if content_type is not None else b""
        u = url.encode(*_TEXT)
        header = _REQ.pack(
            12 + len(ct) + len(u) + len(body), rid, -1 if content_type is None else len(ct), len(u)
        )
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        channel.pending[rid] = fut
        assert channel.transport is not None
        channel.transport.write(b"".join((header, ct, u, body)))
        try:
            return await fut
        except _WorkerGone:
            return b""
        finally:
            channel.pending.pop(rid, None)


def _hard_stop(process: subprocess.Popen[bytes]) -> None:
    """Kill and reap: SIGKILL cannot be ignored, so the wait is short."""
    if process.poll() is None:
        with contextlib.suppress(OSError):
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)


async def _wait_exit(processes: list[subprocess.Popen[bytes]], seconds: float) -> None:
    """Poll for exit without a thread (asyncio's 3.11 child watcher would start one per
    process, and Popen.wait would block the loop)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    delay = 0.001
    while any(p.poll() is None for p in processes):
        if loop.time() >= deadline:
            return
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
