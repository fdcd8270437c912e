"""Fetch-and-parse worker processes, so a big crawl uses every core.

A crawl of a fast site is CPU-bound: the HTTP client, the HTML parser and link handling
each take about a quarter of the time per page, on one core under the GIL. `PoolPages` is a
`pages.LocalPages` whose page fetches run in worker processes. Each worker runs LocalPages
itself (fetch, then `page.analyse`: the same step as in the main process), leaves out the
links to URLs the crawl has settled (`urls.LinkResolver`; with a state, none: every link is
the page's history, `Settings.all_links`), and sends back the status, the
few headers the crawl reads and the `PageResult`. Everything that
needs the crawl's state (throttle, frontier, decisions, writer) stays in the main process,
which also decides how many jobs are in flight. Beside one or two workers it has time to
spare and makes a share of the pages itself (`main_share`). Its share and the workers' add
up to --concurrency and hold the requests at the server to it, so politeness is the same
with or without workers.

Workers are forked by `worker_processes()` before the event loop, so they share the imported
code and inherit no thread or connection. They are an optimisation, never a dependency:
before they start, when a request needs its body (robots.txt), within its share, and when a
worker is lost (its share becomes the main process's), the main process fetches the URL
itself. They start once a crawl has shown it is big (`START_AFTER` pages they would have
taken), and never when requests are spaced (--delay, --max-rps, Crawl-delay): a spaced crawl
waits, it does not compute. A conditional request (validators from the history) goes to them
only while the site answers such requests with whole pages: while it answers 304s, a worker
has nothing to take off the main process, and the trip costs more than the request
(`revalidate_here`). A night starts out as an unchanged one, so an unchanged night starts no
worker at all. Nor does it fork one: a crawl that revalidates its pages (a night with a
history) has its workers spawned, a fresh interpreter each, once it has had `SPAWN_AFTER` of
the pages they would take (`worker_processes(spawn_later=True)`), and started as forked ones
are. A forked worker that never starts still cost an unchanged night 24 ms, 1.6% of its CPU
(the pages the main process writes after the fork are copied: 4,300 faults; bench/README.md,
#26); a spawned one costs a changed night its imports (0.1 CPU-s) and its own code pages
instead.

Wire format: frames of a 4-byte little-endian length and a record packed by `wire` (the
dataclasses below, encoded from their fields) over two pipes per worker: `Settings`, `Job`s
and `Settled` lists one way, `Result`s the other. Only our own child writes to the pipe we
read, so marshal's speed comes at no trust cost.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import math
import os
import signal
import struct
import sys
import time
from array import array
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import NoReturn

from multidict import CIMultiDict, CIMultiDictProxy

from crawler.core.access import Access, redact
from crawler.core.page import PagePolicy, PageResult
from crawler.core.urls import RESOLVER_CAPACITY, LinkResolver
from crawler.core.validators import Validators
from crawler.core.wire import pack, unpack, unpack_any
from crawler.core.words import plural
from crawler.shell import eventloop
from crawler.shell.fetch import Response
from crawler.shell.heap import fewer_collections, keep_heap
from crawler.shell.http1 import Slots
from crawler.shell.pages import Fetched, LocalPages, analysed
from crawler.shell.transports import CrawlTransport, crawl_transport

#: Pages a crawl fetches in the main process before it starts its workers: pages they would
#: have taken (a whole page answered 200; not a 304, a redirect or an error, nor a
#: conditional request while the night's answers have it made here).
START_AFTER = 100
#: Of those, the pages after which the workers of a crawl with a history are spawned
#: (`worker_processes(spawn_later=True)`): a night with fewer whole pages makes no process,
#: one with more but under START_AFTER spawns them for nothing (0.1 CPU-s each). Before
#: START_AFTER, so that on a slow site their imports are done by the time they start (on a
#: fast one the main process goes on making pages until they are ready).
SPAWN_AFTER = START_AFTER // 2

#: Jobs a crawl keeps in flight per allowed request once workers run: a job also spends
#: time queued, parsed and in the pipes, while the workers hold the requests at the server
#: to --concurrency between them (measured on the 20,000-page bench site: 2 gave most of it).
PIPELINE_DEPTH = 2

#: The response headers the crawl reads; workers send only these back.
KEPT_HEADERS = (
    "Content-Type", "Location", "Last-Modified", "Retry-After", "X-Robots-Tag", "Link", "ETag",
    "Date",
)  # fmt: skip

#: A kept header's name as servers spell it (in any case) -> as KEPT_HEADERS does, None for
#: a header the crawl does not read: one dict look-up a header of the answer, where a
#: case-insensitive search per kept name cost six times as much. A server inventing names
#: fills it once, to _SPELLINGS; after that they are lower-cased per answer.
_KEPT = {name.lower(): name for name in KEPT_HEADERS}
_SPELLED: dict[str, str | None] = {}
_SPELLINGS = 1024

_LENGTH = struct.Struct("<I")
_READ_SIZE = 1 << 18
_STOP_WAIT = 5.0  # seconds a worker gets to finish its requests at the end before it is killed


#: CPU time per page, measured on the 20,000-page bench site (23 KB pages, about 80 links):
#: a page made in a worker (fetch, parse, links), the main process's part of it (hand-over,
#: frontier, decision, writer), and a page the main process makes itself.
_WORKER_PAGE, _HAND_OVER, _OWN_PAGE = 300e-6, 85e-6, 375e-6

#: Where a conditional request is made (`revalidate_here`), measured on the bench sites with
#: a history, as a worker's pages then are (every link sent back, the content blocks): the
#: CPU time a 304 costs the crawl more when handed to a worker than when made here (the
#: worker's round and both ends of the pipe, 115 us a 304 on the 20,000-page 304 night, the
#: main process's own time the same either way), and what a whole page handed over saves the
#: main process (callgrind of a 3,000-page crawl: 2.6 M instructions a page, about 500 us).
_HANDED_304, _HANDED_WHOLE = 115e-6, 500e-6

#: Answers to conditional requests counted before the place they are made in is chosen again.
REVALIDATION_BLOCK = 64


def default_workers() -> int:
    """One worker per CPU this process may use, less the one the main process keeps (it
    hands out the pages and makes some itself); none with a single CPU. A container's CPU
    quota (cgroup v2 cpu.max, e.g. docker --cpus 2) counts, not just the host's cores."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    quota = _cgroup_cpus()
    if quota is not None:
        cores = min(cores, quota)
    return cores - 1


def main_share(concurrency: int, workers: int) -> int:
    """The main process's own share of --concurrency once workers run.

    The main process does a part of every page the workers make. With few workers that
    leaves it time to spare, so it makes pages itself too. To be as busy as each of n
    workers, with per-page costs w (a worker's page), h (the main process's part of it) and
    m (a page it makes itself), it should make the fraction f = (w - n h) / (w + n (m - h))
    of the pages. Its share of the requests is f rounded down: its own requests turn around
    faster than a worker's, so a share gives it more of the pages than of the requests
    (2 of 8 gave it 38% of the pages, f being 36%). On two cores, one worker plus a share of
    2 of 8 beat two workers (bench/crawl_bench.py: 4,036 against 3,807 pages/s), in one
    process less. From three workers on, handing out pages is all it has time for.
    """
    w, h, m = _WORKER_PAGE, _HAND_OVER, _OWN_PAGE
    fraction = (w - workers * h) / (w + workers * (m - h))
    return max(0, min(concurrency - workers, math.floor(fraction * concurrency)))


def revalidate_here(not_modified: int, whole: int) -> bool:
    """Whether conditional requests (validators from the history) should be made here rather
    than in the workers, given how many recent ones the site answered 304 and how many with a
    whole page.

    A worker relieves the main process of a whole page's parse (_HANDED_WHOLE), but of a 304
    it takes nothing: the main process's part of a 304 handed over costs it as much as
    making the request itself with the lean client, and the worker and the pipe add their
    own time (_HANDED_304). With p 304s among conditional requests, handing one over wastes
    p _HANDED_304 and saves the main process (1 - p) _HANDED_WHOLE: they are made here once
    the waste is the larger, from about 81% of 304s. An unchanged night makes them here; a
    night where a fifth of the site changed is about on the line (either way costs the
    same); more, and the workers make them as ever.
    """
    return not_modified * _HANDED_304 > whole * _HANDED_WHOLE


class _Revalidations:
    """Where conditional requests are made, chosen again every REVALIDATION_BLOCK answers
    from that block's 304s and whole pages (`revalidate_here`): a night that changes
    course changes with it, and one near the line does not flip at every answer."""

    __slots__ = ("_counted", "_not_modified", "_whole", "here")

    def __init__(self) -> None:
        # None until a block's answers say: a night starts as the job's common one,
        # unchanged, its conditional requests made here and no worker started for them (on
        # an unchanged night, none at all: a worker had only the URLs settled to read,
        # 24,000 of them at 20,000 pages, #26); once workers run, they make them. Never
        # True without a block of 304s: pipelining waits for no conditional request.
        self.here: bool | None = None
        self._counted = self._not_modified = self._whole = 0

    def answered(self, status: int) -> bool:
        """Count one conditional request's answer; True when the place changes."""
        if status == 304:
            self._not_modified += 1
        elif status == 200:
            self._whole += 1
        else:  # a redirect, an error: cheap anywhere, and says nothing of the night
            return False
        self._counted += 1
        if self._counted < REVALIDATION_BLOCK:
            return False
        here = revalidate_here(self._not_modified, self._whole)
        self._counted = self._not_modified = self._whole = 0
        changed, self.here = here != self.here, here
        return changed


def _cgroup_cpus(path: str = "/sys/fs/cgroup/cpu.max") -> int | None:
    try:
        with open(path) as f:
            quota, period = f.read().split()[:2]
        return max(1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError, ZeroDivisionError):  # no cgroup v2, or "max": no quota
        return None


@dataclass(slots=True)
class Settings:
    """How a worker fetches and analyses: sent once, when it starts."""

    user_agent: str
    concurrency: int  # its share of --concurrency
    timeout: float
    max_bytes: int
    policy: PagePolicy
    access: Access  # credentials, proxy, TLS trust: the same requests as the main process's
    # every link of a page is sent back, settled or not: the crawl keeps them as the page's
    # history (a 304 next time follows them all), so none may be left out
    all_links: bool = False


@dataclass(slots=True)
class Job:
    """A page a worker fetches: with the history's validators for a conditional request."""

    job: int
    url: str
    depth: int  # of the links on its page: a link to a settled URL may still matter
    validators: Validators | None  # from the crawl's history: a conditional request


@dataclass(slots=True)
class Settled:
    """URLs the crawl has judged for good: links to them need not be sent back, unless
    found at less than the depth beside each (0: never)."""

    urls: list[str]
    depths: list[int]


@dataclass(slots=True)
class Result:
    """A worker's answer to a job: what the crawl reads of the response, and its page."""

    job: int
    status: int
    headers: list[tuple[str, str]]  # KEPT_HEADERS only
    error: str | None
    truncated: bool
    seconds: float | None  # the exchange, timed in the worker: no pipe or queue in it
    page: PageResult | None
    unreadable: str | None  # why the page could not be analysed
    walled: str | None = None  # the bot protection that answered instead of the site


class WorkerLost(Exception):
    """A worker process ended while it had requests: another worker, or the main process
    when none is left, makes them."""


@dataclass(slots=True)
class Spare:
    """A worker waiting for its settings: its pid and the main process's pipe ends. A spare
    of `worker_processes(spawn_later=True)` is no process until the crawl has had
    SPAWN_AFTER of the pages workers take (`_spawn`): pid None, no pipe."""

    pid: int | None
    jobs: int  # fd: jobs to the worker
    results: int  # fd: results from the worker
    exit_code: int | None = None


@contextlib.contextmanager
def worker_processes(count: int, *, spawn_later: bool = False) -> Iterator[list[Spare]]:
    """`count` idle workers, forked now, before the event loop, threads and connections exist.

    A forked worker shares the main process's imported code (no start-up cost, and memory
    shared until written) and inherits nothing in flight. Workers never told to start exit
    when their job pipe closes, at the end of the block at the latest, where they are reaped.
    `spawn_later`: no process now; each is spawned once the crawl has had SPAWN_AFTER of
    the pages workers take, if it has (PoolPages).
    """
    spares: list[Spare] = []
    if count and spawn_later:
        spares = [Spare(None, -1, -1) for _ in range(count)]
    elif count:  # the loop's module imported here, once: its code shared, not a worker's own
        eventloop.loop_factory()
        import crawler.core.extract  # noqa: F401  # the HTML parser too (page.analyse's own)
    try:
        while len(spares) < count:
            spare = _fork(spares)
            if spare is None:
                break
            spares.append(spare)
        yield spares
    finally:
        for spare in spares:
            _close(spare)
        _reap(spares)


def _pipes() -> tuple[int, int, int, int]:
    """A worker's two pipes: jobs (read end, write end), then results (read end, write end)."""
    jobs = os.pipe()
    try:
        return (*jobs, *os.pipe())
    except OSError:
        _close_all(jobs)
        raise


def _fork(siblings: list[Spare]) -> Spare | None:
    try:
        fds = _pipes()
    except OSError:
        return None  # fewer workers (none at worst): the crawl fetches in its own process
    jobs_read, jobs_write, results_read, results_write = fds
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
    except OSError:
        _close_all(fds)
        return None
    if pid == 0:
        try:  # never back into the crawl's code, whatever happens here
            for fd in (
                jobs_write, results_read, *(f for s in siblings for f in (s.jobs, s.results))
            ):  # fmt: skip
                with contextlib.suppress(OSError):
                    os.close(fd)
            os.setsid()  # a Ctrl-C or a signal to the crawl's process group is the crawl's
            _worker_main(jobs_read, results_write)
        finally:
            os._exit(1)
    os.close(jobs_read)
    os.close(results_write)
    return Spare(pid, jobs_write, results_read)


#: What a spawned worker runs (`_spawn`), its first line what `ps` shows of it: the crawl's
#: import path, then a worker's life; an interpreter that cannot import us says so in a line.
_SPAWNED = """# sitemap-crawler worker
import os, sys
sys.path[:] = {path!r}
try:
    from crawler.shell.pool import spawned_main
except BaseException as exc:
    print(f"sitemap-crawler worker: cannot start: {{type(exc).__name__}}: {{exc}}", file=sys.stderr)
    os._exit(1)
spawned_main({jobs}, {results})
"""


def _spawn(spare: Spare) -> None:
    """Make `spare` a process now (a spare of worker_processes(spawn_later=True)): a fresh
    interpreter, with the crawl's flags (`_interpreter_flags`), on its import path, that runs
    a worker's life (`spawned_main`). posix_spawn, not a fork: the crawl has threads and
    connections by now. OSError when it cannot be made."""
    if not sys.executable:
        raise OSError("no Python interpreter to run one with (sys.executable is empty)")
    path = [os.fsdecode(p) for p in sys.path if isinstance(p, str | bytes)]
    jobs_read, jobs_write, results_read, results_write = fds = _pipes()
    try:
        for fd in (jobs_read, results_write):  # the child's two ends, and no other fd
            os.set_inheritable(fd, True)
        code = _SPAWNED.format(path=path, jobs=jobs_read, results=results_write)
        argv = [sys.executable, *_interpreter_flags(), "-c", code]
        # its own session from the start, as a forked one's: a Ctrl-C is the crawl's
        pid = os.posix_spawn(sys.executable, argv, os.environ, setsid=True)
    except OSError:  # no process left, an argument list too long
        _close_all(fds)
        raise
    except (NotImplementedError, ValueError) as exc:  # no setsid here; a bad environment
        _close_all(fds)
        raise OSError(str(exc)) from exc
    os.close(jobs_read)
    os.close(results_write)
    spare.pid, spare.jobs, spare.results = pid, jobs_write, results_read


def _close_all(fds: tuple[int, ...]) -> None:
    for fd in fds:
        os.close(fd)


def _interpreter_flags() -> list[str]:
    """The crawl's own interpreter options, for a spawned worker to run as the crawl does:
    isolated or not (-I, -E, -s: which environment and user site it reads), -S, -B, -b,
    -O, -W and -X (Python's development mode, -X dev, warns of what a worker leaves open:
    tests look), but -X importtime, which would print each worker's imports to the crawl's
    stderr."""
    flags = sys.flags
    options = []
    if flags.isolated:
        options.append("-I")
    else:
        options += ["-E"] * bool(flags.ignore_environment) + ["-s"] * bool(flags.no_user_site)
    options += ["-S"] * bool(flags.no_site) + ["-B"] * bool(flags.dont_write_bytecode)
    options += ["-b"] * flags.bytes_warning + ["-O"] * flags.optimize
    options += [f"-W{option}" for option in sys.warnoptions]
    for name, value in sys._xoptions.items():
        if name != "importtime":
            options.append(f"-X{name}" if value is True else f"-X{name}={value}")
    return options


def _close(spare: Spare) -> None:
    for fd in (spare.jobs, spare.results):
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
    spare.jobs = spare.results = -1


def _reap(spares: list[Spare]) -> None:
    """Wait for workers to exit (their job pipes are closed); kill any still running after
    _STOP_WAIT seconds."""
    deadline = time.monotonic() + _STOP_WAIT
    for spare in spares:
        child = spare.pid
        while spare.exit_code is None and child is not None:  # None: never spawned
            with contextlib.suppress(ChildProcessError):
                pid, status = os.waitpid(child, os.WNOHANG)
                if pid == 0:
                    if time.monotonic() < deadline:
                        time.sleep(0.005)
                        continue
                    os.kill(child, signal.SIGKILL)
                    pid, status = os.waitpid(child, 0)
                spare.exit_code = os.waitstatus_to_exitcode(status)
                continue
            spare.exit_code = -1  # reaped elsewhere


class PoolPages(LocalPages):
    """LocalPages that hands page fetches to worker processes once the crawl allows it."""

    def __init__(
        self,
        spares: list[Spare],
        transport: CrawlTransport,
        policy: PagePolicy,
        known: Mapping[str, object] | None = None,
        *,
        log: Callable[[str], None] = lambda _: None,
        set_depth: Callable[[int], None],
        in_flight: Callable[[], int] = lambda: 0,
        all_links: bool = False,
    ) -> None:
        """`set_depth`: the crawl loop's (CrawlLoop.set_depth: the jobs per allowed request,
        told the throttle too); `in_flight`: the throttle's (the jobs it holds now);
        `all_links`: workers send every link of a page back (Settings.all_links)."""
        super().__init__(transport, policy, known)
        self.log = log
        self.concurrency = concurrency = transport.concurrency
        self._set_depth = set_depth
        self._in_flight = in_flight
        self._spares = spares[:concurrency]  # each worker holds one request at least
        self._settings = Settings(
            transport.user_agent, 0, transport.timeout, transport.max_bytes, policy,
            transport.access, all_links,
        )  # fmt: skip
        self._workers: list[_Worker] = []
        self.worker_requests = 0  # GETs the workers made: the crawl report's figure
        self._allowed = False
        self._taken = 0  # whole pages made here while no worker runs (START_AFTER)
        self._local = 0  # requests this process has in flight outside its share
        # settled before the workers started, handed to them when they do (a crawl without
        # a state: one with a state tells them none): kept flat (a name and 8 bytes a URL),
        # and no more than a worker keeps (RESOLVER_CAPACITY, the latest: a 1M-page crawl
        # would hand a 55 MB frame, most of it forgotten as it is read)
        self._backlog: list[str] = []
        self._backlog_depths = array("q")
        # this process's share of --concurrency once workers run; all of it when all are lost
        self._here: Slots | None = None
        self._deep: bool | None = False  # pipelined; None: never again (a worker was lost)
        self._revalidations = _Revalidations()  # where conditional requests are made

    def allow_workers(self) -> bool:
        """Let the workers start once the crawl passes START_AFTER pages."""
        self._allowed = bool(self._spares)
        return self._allowed

    @property
    def worker_count(self) -> int:
        """Workers started (alive or not): the crawl report's figure."""
        return len(self._workers)

    async def fetch(
        self, url: str, depth: int = 0, validators: Validators | None = None
    ) -> Fetched:
        """A page, made where it costs the crawl least. One coroutine, whatever the way: a
        page's every await passes each layer (#26). A conditional request's answer is
        counted wherever it was made (`_Revalidations`)."""
        here = self._here
        fetched = None
        resp = None  # an answer made here: analysed below, as LocalPages.fetch does
        if here is not None and here.take():  # a slot of our share is free: ours, at once
            try:
                resp = await self.response(url, validators)
            finally:
                here.give()
        else:
            if validators is None or not self._revalidating_here():
                while (worker := self._pick()) is not None:
                    try:  # not contextlib.suppress: three calls a page handed over, for nothing
                        fetched = await worker.fetch(url, depth, validators)
                    except WorkerLost:  # then the next worker, or this process
                        continue
                    self.worker_requests += 1
                    break
                else:
                    if here is not None and all(w.lost or w.leaving for w in self._workers):
                        # the crawl may hold 2x concurrency slots for a while: our share,
                        # grown by the lost workers' shares to all of --concurrency, bounds
                        # the requests (a worker leaving still holds its share in flight)
                        await here.wait()
                        try:
                            resp = await self.response(url, validators)
                        finally:
                            here.give()
                    elif self._allowed and not self._workers and self._taken >= START_AFTER:
                        self._start()
            if fetched is None and resp is None:
                self._local += 1
                try:
                    resp = await self.response(url, validators)
                finally:
                    self._local -= 1
                    if self._workers:  # none yet: nothing to pipeline (a call a 304, #26)
                        self._deepen()
        if resp is not None:  # the request made here, in this frame: a layer fewer a page
            fetched = analysed(url, resp, self.policy, self.known)
        assert fetched is not None  # made by one of the ways above (mypy loses it in the try)
        status = fetched.response.status
        # a page the workers would have taken (START_AFTER): a whole one, and not a
        # conditional request while the answers have those made here
        if (
            not self._workers
            and status == 200
            and (validators is None or self._revalidations.here is not True)
        ):
            self._taken += 1
            if self._taken == SPAWN_AFTER and self._allowed:
                self._spawn_spares()
        if validators is not None and self._revalidations.answered(status):
            self._deepen()  # back to the workers: pipeline them again
        return fetched

    def _revalidating_here(self) -> bool:
        """Whether this conditional request is made here (`revalidate_here`), outside our
        share. Only with no more jobs than --concurrency: the throttle then holds a request
        at most per job, wherever it is made. Pipelining ends while the site answers 304s,
        and the jobs over --concurrency drain to the workers meanwhile. `in_flight` is the
        start host's throttle's: another allowed host's never pipelines (one job a request)."""
        here = self._revalidations.here
        if not self._workers:  # none started: here, unless the answers said otherwise
            return here is not False
        if not here:
            return False
        if self._deep:
            self._deep = False
            self._set_depth(1)
        return self._in_flight() <= self.concurrency

    async def get(self, url: str, max_bytes: int | None = None) -> Response:
        self._local += 1
        try:
            return await super().get(url, max_bytes)
        finally:
            self._local -= 1
            self._deepen()

    def settle(self, url: str, depth: int = 0) -> None:
        """The crawl has judged url for good, and it is not broken: workers stop sending
        links to it, except those found at less than `depth` (twins are ranked by it).
        UNSETTLED: judged broken, every link to it is sent (as for a URL not settled)."""
        if not self._workers:  # handed to the workers when they start
            backlog, depths = self._backlog, self._backlog_depths
            backlog.append(url)
            depths.append(depth)
            if len(backlog) >= 2 * RESOLVER_CAPACITY:  # a worker keeps no more: the oldest go
                del backlog[:RESOLVER_CAPACITY], depths[:RESOLVER_CAPACITY]
        for worker in self._workers:
            worker.settle(url, depth)

    def _pick(self) -> _Worker | None:
        """The live worker with the fewest jobs for its share of requests: it makes them in
        parallel, so a bigger share drains its queue sooner (shares differ by one when
        --concurrency does not divide evenly)."""
        best, load = None, 0.0
        for worker in self._workers:
            if worker.alive and (best is None or len(worker.pending) / worker.share < load):
                best, load = worker, len(worker.pending) / worker.share
        return best

    def _spawn_spares(self) -> None:
        """Make the spares that are no process yet (worker_processes(spawn_later=True))
        processes now. At the first that cannot be made the rest are dropped too (what
        stopped one stops the next: no process left, no setsid), with one warning."""
        for at, spare in enumerate(self._spares):
            if spare.pid is not None:
                continue
            try:
                _spawn(spare)
            except OSError as exc:
                self.log(
                    f"warning: cannot start a worker process ({exc}); the crawl goes on with "
                    f"{plural(at, 'worker')}"
                )
                self._spares = self._spares[:at]
                return

    def _start(self) -> None:
        self._spawn_spares()
        spares = self._spares
        if not spares:  # none could be made: every page is made here, as without workers
            self._allowed = False
            return
        count = len(spares)
        ours = main_share(self.concurrency, count)
        self._here = Slots(ours)
        concurrency = self.concurrency - ours
        for i, spare in enumerate(spares):
            # the shares of --concurrency, ours and the workers', add up to it exactly
            share = concurrency // count + (1 if i < concurrency % count else 0)
            kept = -RESOLVER_CAPACITY  # the latest a worker keeps (LinkResolver)
            settled = list(zip(self._backlog[kept:], self._backlog_depths[kept:], strict=True))
            worker = _Worker(spare, share, self._lost, self._deepen, settled)
            self._workers.append(worker)
            self._settings.concurrency = share
            worker.start(pack(self._settings))
        self._backlog = []
        self._backlog_depths = array("q")

    def _deepen(self) -> None:
        """Pipeline jobs once every worker is ready and this process has no request of its
        own in flight: only then do the workers alone hold the requests at the server.
        Not while conditional requests are made here: they need one job per request."""
        ready = bool(self._workers) and all(w.alive for w in self._workers)
        if self._deep is False and ready and not self._local and not self._revalidations.here:
            self._deep = True
            self._set_depth(PIPELINE_DEPTH)

    def _lost(self, worker: _Worker) -> None:
        self.log(
            f"warning: worker process {worker.spare.pid} ended; "
            f"its requests go to the other workers, or to the main process"
        )
        self._deep = None  # no more jobs than requests from now on
        self._set_depth(1)
        if self._here is not None:
            for _ in range(worker.share):  # its share of --concurrency becomes ours
                self._here.give()

    def abort(self) -> None:
        """Stop every worker at once, requests in flight and all (a second signal)."""
        for worker in self._workers:
            worker.kill()

    async def close(self) -> None:
        """Stop the workers: each finishes its requests and exits."""
        await asyncio.gather(*(w.stop() for w in self._workers))


class _JobsEnd(asyncio.Protocol):
    """The crawl's end of a worker's jobs pipe. A worker that leaves on its own (a bug of
    ours ended one of its runners: _serve) closes its end first, and answers the requests
    it has in flight before its results pipe closes, up to --timeout later. It is handed
    no more pages once the loop sees its end closed (at once, or at a write in the air):
    until then each page was handed to it, and asked again only when the results pipe
    closed. Leaving, it holds its share of the requests until it is lost, so the pages
    made here meanwhile wait for this process's share (PoolPages.fetch)."""

    def __init__(self, worker: _Worker) -> None:
        self._worker = worker

    def connection_lost(self, exc: Exception | None) -> None:
        self._worker.alive = False
        self._worker.leaving = True


class _Worker:
    """The main process's end of one worker: futures for its jobs, a task reading results."""

    def __init__(
        self,
        spare: Spare,
        share: int,
        on_lost: Callable[[_Worker], None],
        on_ready: Callable[[], None],
        settled: list[tuple[str, int]],
    ) -> None:
        self.spare = spare
        self.share = share  # of --concurrency: the requests it may have in flight
        self.pending: dict[int, asyncio.Future[Fetched]] = {}
        self.alive = False  # until the worker says it is ready
        self._urls: dict[int, str] = {}
        self._next = 0
        self._out: list[bytes] = []  # frames written together at the end of a loop turn
        self._settled = settled  # URLs settled, sent before the next jobs
        self._on_lost = on_lost
        self._on_ready = on_ready
        self._stopping = False
        self.lost = False  # ended, or found broken
        self.leaving = False  # its jobs pipe closed: lost once its results pipe closes too
        self._jobs: asyncio.WriteTransport | None = None
        self._reader: asyncio.Task[None] | None = None

    def start(self, settings: bytes) -> None:
        self._reader = asyncio.get_running_loop().create_task(self._read(settings))

    async def fetch(self, url: str, depth: int, validators: Validators | None) -> Fetched:
        self._next += 1
        job = self._next
        future: asyncio.Future[Fetched] = asyncio.get_running_loop().create_future()
        self.pending[job] = future
        self._urls[job] = url
        if not self._out:
            asyncio.get_running_loop().call_soon(self._flush)
        self._out.append(_frame(pack(Job(job, url, depth, validators))))
        try:
            return await future
        finally:
            self.pending.pop(job, None)
            self._urls.pop(job, None)

    def settle(self, url: str, depth: int) -> None:
        if not self._stopping and not self.lost:
            self._settled.append((url, depth))  # sent with the next jobs

    def _flush(self) -> None:
        if self._settled:
            urls, depths = zip(*self._settled, strict=True)
            self._out.insert(0, _frame(pack(Settled(list(urls), list(depths)))))
            self._settled = []
        data, self._out = b"".join(self._out), []
        if self.alive and self._jobs is not None and not self._jobs.is_closing():
            self._jobs.write(data)

    async def _read(self, settings: bytes) -> None:
        loop = asyncio.get_running_loop()
        spare = self.spare
        reader = asyncio.StreamReader(limit=_READ_SIZE)
        frames = _Frames()
        results_pipe: asyncio.BaseTransport | None = None
        try:
            # the transports own the fds from here on
            jobs, results = spare.jobs, spare.results
            spare.jobs = spare.results = -1
            self._jobs, _ = await loop.connect_write_pipe(
                lambda: _JobsEnd(self), os.fdopen(jobs, "wb", buffering=0)
            )
            results_pipe, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader),
                os.fdopen(results, "rb", buffering=0),
            )
            if self._stopping:  # stopped while connecting
                return
            self._jobs.write(_frame(settings))
            await reader.readexactly(_LENGTH.size)  # the ready signal: an empty frame
            self.alive = not self._jobs.is_closing()  # not a worker that left already
            self._on_ready()
            while data := await reader.read(_READ_SIZE):
                for payload in frames.feed(data):
                    result = unpack(Result, payload)
                    future = self.pending.get(result.job)
                    if future is not None and not future.done():
                        future.set_result(_fetched(self._urls[result.job], result))
        except Exception:  # the worker has gone, or sent what it never would: lost either way
            self._signal_kill()  # its requests are made again elsewhere: not twice at the server
        finally:
            self.alive = False
            self.lost, self._settled = True, []
            for transport in (self._jobs, results_pipe):
                if transport is not None:
                    transport.close()
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(WorkerLost())
        if not self._stopping:
            self._on_lost(self)

    def kill(self) -> None:
        self._stopping = True
        self._signal_kill()

    def _signal_kill(self) -> None:
        pid = self.spare.pid
        if pid is None or pid <= 0:  # no process: kill(0) or kill(-1) would signal many
            return
        with contextlib.suppress(ProcessLookupError):  # reaped by worker_processes() only
            os.kill(pid, signal.SIGKILL)

    async def stop(self) -> None:
        """Close the job pipe: the worker finishes its requests, closes its end and exits.
        Waits _STOP_WAIT seconds for that at most (worker_processes() reaps, and kills a
        laggard)."""
        self.alive, self._stopping = False, True
        if self._jobs is not None:
            self._jobs.close()  # EOF for the worker; our end of its results closes in _read
        if self._reader is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._reader, _STOP_WAIT)


# -- the wire --------------------------------------------------------------------------------


class _Frames:
    """Splits a byte stream into frame payloads, however the reads cut it."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = bytearray()  # a frame begun, not yet whole

    def feed(self, data: bytes) -> list[bytes]:
        """The payloads `data` completes. A frame longer than a read (the URLs settled
        before a worker starts: megabytes) grows the buffer in place: joined to it anew at
        every read, it was copied whole each time, quadratic in its size."""
        kept = self._buffer
        buffer: bytes | bytearray = data
        if kept:
            kept += data
            buffer = kept
        payloads = []
        at, end = 0, len(buffer)
        while end - at >= 4:
            (size,) = _LENGTH.unpack_from(buffer, at)
            if end - at - 4 < size:
                break
            payloads.append(bytes(buffer[at + 4 : at + 4 + size]))
            at += 4 + size
        if buffer is kept:
            del kept[:at]
        elif at < end:
            kept += data[at:]
        return payloads


def _frame(payload: bytes) -> bytes:
    return _LENGTH.pack(len(payload)) + payload


def _kept(headers: CIMultiDictProxy[str]) -> list[tuple[str, str]]:
    """The KEPT_HEADERS of an answer, named as KEPT_HEADERS does, each name's values in
    their order (as `getall` gives them: the crawl reads nothing else of the order)."""
    kept = []
    for name, value in headers.items():
        known = _SPELLED.get(name, "")
        if known == "":
            known = _KEPT.get(name.lower())  # as CIMultiDict compares names
            if len(_SPELLED) < _SPELLINGS:
                _SPELLED[name] = known
        if known is not None:
            kept.append((known, value))
    return kept


def _result(job: int, fetched: Fetched) -> bytes:
    resp = fetched.response
    result = Result(
        job, resp.status, _kept(resp.headers), resp.error, resp.truncated, resp.seconds,
        fetched.page, fetched.unreadable, fetched.walled,
    )  # fmt: skip
    return _frame(pack(result))


def _fetched(url: str, result: Result) -> Fetched:
    headers = CIMultiDictProxy(CIMultiDict(result.headers))
    resp = Response(
        url, result.status, headers, error=result.error, truncated=result.truncated,
        seconds=result.seconds,
    )  # fmt: skip
    return Fetched(resp, result.page, result.unreadable, result.walled)


# -- the worker process ----------------------------------------------------------------------


async def _serve(settings: Settings, jobs_fd: int, results_fd: int) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_READ_SIZE)
    jobs, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(jobs_fd, "rb", buffering=0)
    )
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(results_fd, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    links = LinkResolver()
    http = crawl_transport(
        user_agent=settings.user_agent,
        concurrency=settings.concurrency,
        timeout=settings.timeout,
        max_bytes=settings.max_bytes,
        access=settings.access,
    )
    pages = LocalPages(http, settings.policy, links.known)

    def answer(number: int, url: str, fetched: Fetched) -> bytes:
        try:
            return _result(number, fetched)
        except Exception as exc:  # a result that cannot cross: the URL fails, never hangs
            error = f"worker: cannot send the result: {type(exc).__name__}: {exc}"
            try:  # the answer itself (status, headers) still tells the throttle how it went
                return _result(number, Fetched(fetched.response, None, error))
            except Exception:
                return _result(number, Fetched(Response(url), None, error))

    # Our share of --concurrency: the crawl sends more jobs than that, so one is ready
    # whenever a request ends. As many runners as the share make the requests, each taking
    # the next job waiting as it ends one (before its timeout starts), and parking when
    # none waits, to be handed the next job read: a task per runner, not per job (a task
    # a job cost a step and a done callback through the loop each), and no semaphore to
    # pass. A result is written as soon as it is made (results rarely meet in one loop
    # turn), and drained only when the pipe is full.
    waiting: collections.deque[Job] = collections.deque()
    parked: collections.deque[asyncio.Future[Job | None]] = collections.deque()
    runners: set[asyncio.Task[None]] = set()
    free = settings.concurrency  # runners that may start: counted as they start and stop
    closing = False  # the crawl closed the pipe: a runner out of jobs stops, not parks
    failed: list[Exception] = []  # a bug of ours that escaped serve: the worker leaves

    async def run(job: Job | None) -> None:
        nonlocal free
        try:
            while job is not None:
                if not await serve(job):  # the crawl is gone (killed): nobody reads results,
                    waiting.clear()  # theirs neither: those jobs are not asked for
                    return
                if closing:
                    return
                park: asyncio.Future[Job | None] = loop.create_future()
                parked.append(park)
                job = await park  # the next job read, or None: the pipe closed
        except Exception as exc:
            # Its job is never answered, and the crawl waits for every job it sent: the
            # worker leaves as one that dies does (the crawl asks its URLs again), saying
            # why in one line (_worker_main). No job more is read, and none read is
            # started; the requests in flight are answered.
            failed.append(exc)
            waiting.clear()
            jobs.close()  # the read loop ends (EOF), then _serve raises it
        finally:  # its place given back, even by a runner that failed
            if waiting:  # then the jobs left waiting for it get a runner of their own
                start(waiting.popleft())
            else:
                free += 1

    async def serve(job: Job) -> bool:
        """job and the jobs waiting as it ends; False when the crawl is gone."""
        while True:
            if transport.is_closing():  # asked for, nobody would read the answer
                return False
            url, depth = job.url, job.depth
            try:
                fetched = await pages.fetch(url, depth, job.validators)
                page = fetched.page
                if page is not None and page.targets:
                    if settings.all_links:
                        links.remember(page.targets)
                    else:
                        page.targets = links.unsettled(page.targets, depth)
            except Exception as exc:  # a bug of ours: this URL fails, the crawl goes on
                error = http.redact(f"worker: {type(exc).__name__}: {exc}")
                fetched = Fetched(Response(url, error=error), None)
            if transport.is_closing():  # a write to the closed pipe would raise
                return False
            transport.write(answer(job.job, url, fetched))
            if transport.get_write_buffer_size() > _READ_SIZE:
                try:
                    await writer.drain()
                except ConnectionError:  # the crawl went while the pipe was full
                    return False
            if not waiting:  # it parks (run), handed the next job as it is read
                return True
            job = waiting.popleft()

    def start(job: Job) -> None:
        task = loop.create_task(run(job))
        runners.add(task)
        task.add_done_callback(runners.discard)

    def hand(job: Job) -> None:
        """A job read: to a parked runner, else a new runner, else the queue; none once
        the crawl is gone (its results pipe closed) or a runner failed."""
        nonlocal free
        if transport.is_closing() or failed:
            return
        while parked:
            park = parked.popleft()
            if not park.done():  # never, but for a runner cancelled while parked
                park.set_result(job)
                return
        if free:
            free -= 1
            start(job)
        else:
            waiting.append(job)

    frames = _Frames()
    try:
        async with http:
            transport.write(_LENGTH.pack(0))  # ready
            while data := await reader.read(_READ_SIZE):  # b"": the crawl closed the pipe
                for payload in frames.feed(data):
                    message = unpack_any((Job, Settled), payload)
                    if isinstance(message, Settled):
                        links.settle(message.urls, message.depths)
                    else:
                        hand(message)
            closing = True  # finish what was asked, then stop
            for park in parked:
                if not park.done():
                    park.set_result(None)
            parked.clear()
            while runners:
                await asyncio.wait(runners)
    finally:  # at EOF already, or the loop broken: closed here, not left to the
        jobs.close()  # loop's close to warn of
        writer.close()
    if failed:
        raise failed[0]


def _read_settings(fd: int) -> Settings | None:
    """Block until the crawl starts this worker (its settings) or ends (None)."""
    frames, payloads = _Frames(), list[bytes]()
    while not payloads:
        data = os.read(fd, 4096)
        if not data:
            return None
        payloads = frames.feed(data)
    return unpack(Settings, payloads[0])


def spawned_main(jobs_fd: int, results_fd: int) -> NoReturn:
    """A spawned worker's start (`_spawn`): the C heap set as the crawl's and the loop's
    module imported, as a forked worker inherits them, then a worker's life, whatever those
    two did (each only saves time: a worker works without them). The HTML parser, which a
    forked worker inherits too, is imported at its first HTML page (crawler.core.page)."""
    try:
        keep_heap()
        eventloop.loop_factory()
    finally:
        _worker_main(jobs_fd, results_fd)


def _worker_main(jobs_fd: int, results_fd: int) -> NoReturn:
    """A worker's whole life, in a session of its own; it leaves by os._exit, never through
    the crawl's code."""
    code = 0
    settings: Settings | None = None
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.dup2(2, 1)  # a stray print() goes to stderr, never into a result frame
        settings = _read_settings(jobs_fd)
        if settings is not None:
            gc.freeze()  # as the crawl does: few cycles, millions of short-lived objects
            fewer_collections()
            eventloop.run(_serve(settings, jobs_fd, results_fd))  # the crawl's loop
    except (BrokenPipeError, ConnectionError):
        pass  # the crawl has gone; nobody is left to read our results
    except BaseException as exc:  # one line, never a traceback: the crawl carries on without us
        with contextlib.suppress(Exception):
            line = f"{type(exc).__name__}: {exc}"
            if settings is not None:  # a bug's words may hold a URL with credentials
                line = redact(line, settings.access.secrets)
            print(f"sitemap-crawler worker: {line}", file=sys.stderr)
            sys.stderr.flush()
        code = 1
    os._exit(code)
