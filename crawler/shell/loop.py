"""The loop that runs a crawl, and nothing else: the frontier's URLs handed to workers under
--concurrency, the stop signals and their grace, --max-time, the progress line.

It does not know what a URL's work is (a driver gives it: crawl, check, judge) nor where pages
come from (crawler.shell.client): the loop only decides when work starts and when it stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import time
from collections.abc import Awaitable, Callable, Iterator

from crawler.core.frontier import Frontier, Task
from crawler.core.report import Tally
from crawler.shell.heap import fewer_collections
from crawler.shell.progress import ProgressFigures, ProgressLine
from crawler.shell.throttle import Throttle

#: After SIGINT/SIGTERM, requests in flight get this long to finish before they are cut.
STOP_GRACE_SECONDS = 10.0

#: The limit a URL left unasked is recorded with when the site looked down, or when a bot
#: wall stopped the crawl (max_time's is the throttle's own).
DOWN = "the crawl stopped: the site looked down"
WALLED = "the crawl stopped: a bot protection answered instead of the site"

#: What a driver does with one URL the loop hands it.
Process = Callable[[Task], Awaitable[object]]


class CrawlLoop:
    """Workers taking URLs from the frontier until it is empty, a limit is reached or the run
    is stopped (a signal, --max-time, an outage the client reports)."""

    def __init__(
        self,
        frontier: Frontier,
        tally: Tally,
        throttle: Throttle,
        *,
        concurrency: int,
        max_pages: int = 0,
        max_time: float = 0.0,
        log: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.frontier = frontier
        self.tally = tally
        self.throttle = throttle
        self.concurrency = concurrency
        self.max_pages = max_pages
        self.max_time = max_time
        self.log = log
        # URLs being worked on now -> the fewest links from the start found to them so far
        self.active: dict[str, int] = {}
        self.changed = asyncio.Event()
        #: a URL was added to the frontier: idle workers look again (the event's own, bound:
        #: a layer fewer for every URL queued, #26)
        self.queued: Callable[[], None] = self.changed.set
        self.stop_signal: int | None = None
        #: no new URL is taken: a signal, an outage, a bot wall or max_time, set with each
        #: (a worker asks every page: an attribute, not a property's call, #26)
        self.stopped = False
        self.timed_out = False  # max_time is up
        self.outage: str | None = None  # why the site looks down, when it does
        self.blocked: str | None = None  # why a bot wall stops the run (crawler.core.botwall)
        self.requested = 0  # page requests started, redirect hops included (max_pages)
        self.done_requests = 0  # requests whose outcome is recorded: the state's "fetched"
        self.on_cut: Callable[[], None] = lambda: None  # what else a cut stops (the pool)
        self._workers: set[asyncio.Task[None]] = set()
        self._taking = concurrency  # workers taking URLs: concurrency x the depth (set_depth)
        self._running = 0  # workers running now (more than _taking: the extra ones stop)
        self._group: asyncio.TaskGroup | None = None  # while run() runs
        self._work: tuple[Process, Callable[[], bool], Callable[[], None]] | None = None
        self._steps: list[asyncio.Future[None]] = []  # what a stop's cut ends before workers
        self._idle = 0  # workers waiting for `changed`: the only ones a page done may wake
        self._grace: asyncio.TimerHandle | None = None

    def down(self, outage: str) -> None:
        """The client found the site down: stop taking URLs."""
        if self.outage is None:
            self.outage = outage
            self.stopped = True
            self.log(f"warning: the site looks down ({outage}): stopping")
            self.throttle.close(DOWN)  # requests waiting their turn (and retries) are not sent
            self.changed.set()

    def walled(self, why: str) -> None:
        """A bot wall answers instead of the site: stop taking URLs (what would they show?)."""
        if self.blocked is None:
            self.blocked = why
            self.stopped = True
            self.throttle.close(WALLED)  # requests waiting their turn are not sent
            self.changed.set()

    async def run(
        self,
        process: Process,
        idle: Callable[[], bool] = lambda: False,
        after: Callable[[], None] = lambda: None,
    ) -> None:
        """concurrency x depth workers (tasks: set_depth) until the frontier is empty; one
        failing cancels the rest, and its error (not an ExceptionGroup) reaches the CLI,
        which maps it to an exit code. `idle`: the frontier ran out with nothing in flight;
        True when it queued more (the seed sitemaps). `after`: once per URL worked on (the
        state's checkpoints)."""
        try:
            async with asyncio.TaskGroup() as group:
                self._group, self._work = group, (process, idle, after)
                self._start_workers()
        except BaseExceptionGroup as group:
            raise group.exceptions[0] from None
        finally:  # a worker cancelled before it began never counted itself out
            self._group = self._work = None
            self._running = 0

    def set_depth(self, depth: int) -> None:
        """Jobs per allowed request from now on: worker processes pipeline them (2), or
        not (1: none ready, or conditional requests made here). The throttle admits that
        many, and as many workers take URLs. A worker past them would take a URL only to
        wait in the throttle for every one, its page's every frame resumed with it: on an
        unchanged night, with worker processes allowed, most of the 3.5% this and a worker
        process never started took off it (#26). It stops after its URL instead, and more
        start when the depth grows again. (A throttle slowed down by the site admits fewer
        than `concurrency`: the extra workers then wait in it, as before.)"""
        self.throttle.set_depth(depth)
        self._taking = self.concurrency * max(1, depth)
        if self._group is not None:
            self._start_workers()

    def _start_workers(self) -> None:
        """As many workers as the depth admits (set_depth may have grown it), in the run's
        task group. `_running` counts them from before each starts to its return: only a
        worker cancelled before its first step (a cut, a failed run) is never counted out,
        and the run's end sets the count right."""
        assert self._group is not None and self._work is not None
        while self._running < self._taking and not self.stopped:
            work = self._worker(*self._work)
            self._running += 1
            try:
                worker = self._group.create_task(work)
            except RuntimeError:  # the run is ending (a worker failed, or all are done)
                self._running -= 1
                work.close()
                return
            self._workers.add(worker)
            worker.add_done_callback(self._workers.discard)

    async def _worker(
        self, process: Process, idle: Callable[[], bool], after: Callable[[], None]
    ) -> None:
        max_pages, frontier, active = self.max_pages, self.frontier, self.active
        try:
            while not self.stopped:
                if max_pages and self.requested >= max_pages:
                    return
                if self._running > self._taking:  # fewer jobs per request now (set_depth)
                    return
                task = frontier.pop()
                if task is None:
                    if not active:
                        if idle():
                            continue
                        self.changed.set()
                        return
                    self.changed.clear()
                    self._idle += 1
                    try:
                        await self.changed.wait()
                    finally:
                        self._idle -= 1
                    continue
                active[task.url] = task.depth
                try:
                    await process(task)
                finally:
                    active.pop(task.url, None)
                    if self._idle:  # (the event's call, for no one, every page: #26)
                        self.changed.set()
                after()
        finally:
            self._running -= 1

    @contextlib.contextmanager
    def showing(self, renderer: ProgressLine | None, started: float) -> Iterator[None]:
        """Report progress every renderer.interval seconds while the workers run."""
        if renderer is None:
            yield
            return

        def figures() -> ProgressFigures:
            throttle, tally = self.throttle, self.tally
            return ProgressFigures(
                tally.fetched,
                tally.listed,
                # not yet judged: workers waiting on the throttle have taken theirs already
                len(self.frontier) + len(self.active),
                tally.failed,
                time.monotonic() - started,
                throttle.pace,
                throttle.min_interval,
                tally.fetched_before,
            )

        async def tick() -> None:
            while True:
                await asyncio.sleep(renderer.interval)
                renderer(figures())

        task = asyncio.get_running_loop().create_task(tick())
        try:
            yield
        finally:
            task.cancel()
            renderer.finish()

    @contextlib.contextmanager
    def timed(self) -> Iterator[None]:
        """--max-time: once it is up, no new URL is taken; requests in flight finish, and
        what is left in the queue is recorded as a limit reached."""
        if not self.max_time:
            yield
            return

        def time_up() -> None:
            self.timed_out = True
            self.stopped = True
            self.throttle.close()  # requests waiting for their turn are not sent
            self.log(f"max_time {self.max_time:g} s reached: finishing requests in flight")
            self.changed.set()

        timer = asyncio.get_running_loop().call_later(self.max_time, time_up)
        try:
            yield
        finally:
            timer.cancel()

    @contextlib.contextmanager
    def signals(self) -> Iterator[None]:
        """First SIGINT/SIGTERM: take no new URLs, let requests in flight finish within
        STOP_GRACE_SECONDS. A second signal, or the end of the grace period, cuts them. The
        grace's timer ends with the run: a cut after it would cancel nothing of this run."""
        loop = asyncio.get_running_loop()
        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
                installed.append(sig)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread
                pass
        try:
            yield
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            if self._grace is not None:
                self._grace.cancel()
                self._grace = None

    def _on_signal(self, sig: int) -> None:
        if self.stop_signal is None:
            self.stop_signal = sig
            self.stopped = True
            self.log(
                f"{signal.Signals(sig).name}: finishing requests in flight "
                f"(up to {STOP_GRACE_SECONDS:g} s; signal again to stop at once)"
            )
            self.changed.set()
            self._grace = asyncio.get_running_loop().call_later(STOP_GRACE_SECONDS, self.cut)
        else:
            self.cut()

    async def cuttable(self, step: Awaitable[None]) -> None:
        """A step before the workers start (robots.txt, the seed sitemaps), which a stop
        signal's cut must end as it ends the workers: a robots.txt that never answers would
        otherwise hold a SIGTERM for its retries' whole timeouts. Cut, the step is dropped
        and the run stops as after any signal (the workers take nothing)."""
        task = asyncio.ensure_future(step)
        self._steps.append(task)
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self.stop_signal is None or (current is not None and current.cancelling()):
                raise  # not ours: the run itself is being cancelled
        finally:
            self._steps.remove(task)

    def cut(self) -> None:
        for step in self._steps:
            step.cancel()
        for worker in list(self._workers):
            worker.cancel()
        self.on_cut()

    def stopped_message(self, state_path: object | None) -> str:
        name = signal.Signals(self.stop_signal or signal.SIGTERM).name
        resume = f" (--state {state_path} --resume goes on from here)" if state_path else ""
        return (
            f"stopped by {name} after {self.tally.fetched} pages; "
            f"the previously published sitemap is untouched{resume}"
        )


@contextlib.contextmanager
def fewer_gc_pauses() -> Iterator[None]:
    """A crawl allocates millions of short-lived objects and almost no reference cycles, so
    the cycle collector runs at crawler.shell.heap's thresholds (the command's already; a
    caller of main in process, such as a test, gets them here), over a heap frozen at the
    start (measured: 5-8% less time for the same memory)."""
    threshold = gc.get_threshold()
    gc.freeze()
    fewer_collections()
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
