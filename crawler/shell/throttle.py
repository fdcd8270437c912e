"""Per-origin politeness: how many requests may be in flight, and how far apart they start.

One Throttle per origin. It combines what the user asked for (--delay, --max-rps, the
concurrency), what the site asked for (robots.txt Crawl-delay, capped so a hostile or
mistaken value cannot stall a crawl for hours) and what the site's behaviour tells us (the
adaptive part: 429/503s, timeouts or markedly slower responses mean the server is
struggling, so we back off at once and only creep back up after a run of good answers).

Spacing is reserved, not polled: each request claims the start time
`max(now, previous start + interval)` before it sleeps, so eight concurrent callers with a
0.2 s interval start exactly 0.2 s apart instead of all waking together. When nothing slows
the origin down the slot is a counter check and a clock read, because a crawl of a fast
local site runs thousands of requests a second through it.

The clock and sleep are injectable so the control logic is tested in virtual time.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

from crawler.errors import ConfigError

# The server tells us in so many words that it is overloaded.
PRESSURE_STATUSES = frozenset({429, 503})
# Answers that prove nothing good about the server's health; they never count toward recovery.
_BAD_STATUSES = frozenset({500, 502, 503, 504, 429})

BASELINE_SAMPLES = 20  # responses whose median sets the "normal" response time
EWMA_ALPHA = 0.2  # weight of the newest response time in the moving average
SLOW_FACTOR = 3.0  # EWMA above this multiple of the baseline counts as "slowed down markedly"
# ...and by at least this many seconds: 1 ms -> 4 ms jitter is not it, and neither is the
# few hundred ms of lag a CPU-bound crawler's own event loop adds on a busy machine.
SLOW_MIN_EXCESS = 0.5
COOLDOWN = 1.0  # seconds: a burst of bad answers within this window is one slow-down
FIRST_EXTRA_DELAY = 0.25  # seconds of adaptive delay on the first slow-down; doubled after
RECOVER_AFTER = 20  # consecutive good responses before one step of recovery
EXTRA_DELAY_FLOOR = 0.05  # halving below this drops the adaptive delay altogether
# Failed answers (5xx, 429, no answer) in a row, all at the slowest rate, that make an
# outage: backing off further would turn a crawl into hours of waiting on a site that is down
OUTAGE_AFTER = 10
# No answer at all (connection refused or reset, timed out) to this many requests in a row,
# for at least this long: the site is not answering, and backing off to the slowest rate
# first would only make the crawl wait minutes to say so. A restart's blip is shorter.
NO_ANSWER_AFTER = 5
NO_ANSWER_SECONDS = 30.0
_INF = math.inf


@dataclass(slots=True)
class Ticket:
    """One granted request slot.

    `start` is the clock time the request was cleared to start, after any spacing sleep;
    `waited` is how long the caller queued for the slot and the spacing together.
    """

    start: float
    waited: float


#: Why a throttle closed when --max-time is up: the limit a URL left unasked is recorded with.
MAX_TIME: Final = "max_time reached"


class ThrottleClosed(Exception):
    """The crawl takes no more requests: raised to those waiting. Its text is why (what
    closed the throttle, as the decisions file records the URLs left unasked)."""


class Throttle:
    """Concurrency limit plus start spacing for one origin, adapting to how the server copes."""

    def __init__(
        self,
        *,
        concurrency: object,  # checked below: `int` here, and a compiled build raised TypeError
        delay: float = 0.0,
        max_rps: float | None = None,
        crawl_delay: float | None = None,
        max_crawl_delay: float = 10.0,
        margin: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        # margin: a fraction added to every non-zero spacing. Starts are timed here; a send can
        # trail its start by a few ms on a busy machine, which must not bring the *next*
        # request closer than asked at the server.
        self._margin = 1.0 + margin
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"concurrency must be a whole number >= 1, not {concurrency!r}")
        if not _is_seconds(delay):
            raise ConfigError(f"delay must be a finite number of seconds >= 0, not {delay!r}")
        if max_rps is not None and not (_is_seconds(max_rps) and max_rps > 0):
            raise ConfigError(f"max_rps must be a finite number > 0, not {max_rps!r}")
        if not _is_seconds(max_crawl_delay):
            raise ConfigError(
                f"max_crawl_delay must be a finite number of seconds >= 0, not {max_crawl_delay!r}"
            )
        self._clock = clock
        self._sleep = sleep
        self.closed = False
        self._closed_why = MAX_TIME
        self._close_event: asyncio.Event | None = None  # wakes spaced requests' waits
        self.followers: list[Throttle] = []  # other hosts' (allowed_hosts): closed with it
        self._configured_concurrency = concurrency
        self._delay = float(delay)
        self._rps_interval = 1.0 / max_rps if max_rps is not None else 0.0
        self._max_crawl_delay = float(max_crawl_delay)
        self._crawl_delay = 0.0
        self.warnings: list[str] = []

        # concurrency: a semaphore whose limit can move
        self._limit = concurrency
        self._depth = 1
        self._cap = concurrency  # slots: the limit, times the depth while not slowed down
        self._in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

        # spacing
        self._base_interval = 0.0  # user and robots.txt spacing; the adaptive part adds to it
        self._extra = 0.0
        self._interval = 0.0  # max(base, extra), kept current so slot() reads one attribute
        self._slow_since: float | None = None  # when response times first looked slow
        self._last_start = -math.inf  # when the latest request actually started
        self._last_reserved = -math.inf  # the latest start claimed by a caller still sleeping

        # adaptive control
        self._samples: list[float] = []
        self._baseline: float | None = None
        self._ewma: float | None = None
        self._good_streak = 0
        self._last_slowdown = -math.inf
        self._failing = 0  # failed answers in a row at the slowest rate
        self._silent = 0  # requests in a row with no answer at all
        self._silent_since = 0.0  # when the first of them was observed
        self._silent_error: str | None = None  # the transport's words for the latest

        # figures
        self._requests = 0
        self._first_start = 0.0
        self._slowdowns = 0
        self._max_extra = 0.0
        self._waited = 0.0

        self.set_crawl_delay(crawl_delay)

    # ---- configuration -------------------------------------------------------------------

    def set_crawl_delay(self, seconds: float | None) -> None:
        """Apply robots.txt Crawl-delay, which is normally known only after the first request.

        The value comes from the site, so it is sanitised rather than trusted: a negative or
        non-finite one is ignored, one above max_crawl_delay is capped (with a warning).
        """
        if seconds is None:
            self._crawl_delay = 0.0
        elif not _is_seconds(seconds):
            self._crawl_delay = 0.0
            self.warnings.append(f"robots.txt Crawl-delay {seconds!r} is not valid; ignored")
        elif seconds > self._max_crawl_delay:
            self._crawl_delay = self._max_crawl_delay
            self.warnings.append(
                f"robots.txt Crawl-delay {_num(seconds)} s is above max_crawl_delay; "
                f"using {_num(self._max_crawl_delay)} s"
            )
        else:
            self._crawl_delay = float(seconds)
        self._base_interval = max(self._delay, self._crawl_delay, self._rps_interval)
        self._interval = max(self._base_interval, self._extra)

    def set_depth(self, depth: int) -> None:
        """Admit up to concurrency x depth slots while no slow-down is in force: for when
        something downstream holds the number of requests actually at the server
        to `concurrency` (worker processes do): a slot then also covers time spent queued
        and parsing, and more slots keep that pipeline full. After a slow-down the slots
        are the lowered limit itself, so the server sees fewer requests at once, as without.
        """
        self._depth = max(1, depth)
        if self._limit == self._configured_concurrency:
            self._cap = self._limit * self._depth
            self._wake()

    # ---- state -----------------------------------------------------------------------------

    @property
    def min_interval(self) -> float:
        """Seconds between request starts now: user delay, Crawl-delay, 1/max_rps, adaptive."""
        return self._interval

    @property
    def requested_interval(self) -> float:
        """The spacing asked for (--delay, --max-rps, Crawl-delay), without the adaptive part."""
        return self._base_interval

    @property
    def pace(self) -> str:
        """What holds the crawl back now, for the progress line ('' when nothing does)."""
        said = []
        base = self._base_interval
        if base > 0:
            if base == self._crawl_delay:
                said.append(f"Crawl-delay {_num(base)} s from robots.txt")
            elif base == self._delay:
                said.append(f"--delay {_num(base)} s")
            else:
                said.append(f"--max-rps {_num(1 / base)}")
        if self._extra > base:
            why = "site not answering" if self._silent else "site strained"
            said.append(f"slowed to 1 request per {_num(round(self._extra, 2))} s ({why})")
        if self._limit < self._configured_concurrency:
            said.append(f"{self._limit} of {self._configured_concurrency} requests at once")
        return "; ".join(said)

    @property
    def concurrency(self) -> int:
        """Requests allowed in flight now; the adaptive control lowers it under pressure."""
        return self._limit

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def effective_rate(self) -> float:
        """Requests started per second, first start to last start. Measured between starts
        (n - 1 gaps) so that a paced crawl reads as its pace: ten requests one second apart
        is 1.0/s, not 10 over 9.x seconds."""
        if self._requests < 2:
            return 0.0
        span = self._last_start - self._first_start
        return (self._requests - 1) / span if span > 0 else math.inf

    @property
    def stats(self) -> dict[str, Any]:
        """Figures for the crawl report."""
        return {
            "requests": self._requests,
            "effective_rate": self.effective_rate(),
            "slowdowns": self._slowdowns,
            "max_extra_delay": self._max_extra,
            "extra_delay": self._extra,
            "concurrency": self._limit,
            "configured_concurrency": self._configured_concurrency,
            "min_interval": self._interval,
            "waited_seconds": self._waited,
        }

    # ---- admission -------------------------------------------------------------------------

    def slot(self) -> _Slot:
        """`async with throttle.slot() as ticket:` a free slot and a start time, held for the
        whole request (body read included), then observe() the outcome. The same slot without
        the context manager's coroutines: `admit()` (else `await wait()`), then `release()`."""
        return _Slot(self)

    def close(self, why: str = MAX_TIME) -> None:
        """Admit no more requests: those waiting raise ThrottleClosed(why) now, not after
        their wait (a Crawl-delay queue can be minutes long). The first why is kept."""
        self._closed_why, self.closed = (self._closed_why if self.closed else why), True
        waiters, self._waiters = list(self._waiters), deque()
        for fut in waiters:
            if not fut.done():
                fut.set_exception(ThrottleClosed(self._closed_why))
        if self._close_event is not None:
            self._close_event.set()
        for follower in self.followers:
            follower.close(why)

    async def _nap(self, seconds: float) -> None:
        """Sleep, cut short by close()."""
        if self._sleep is not asyncio.sleep:  # a test's clock
            await self._sleep(seconds)
        else:
            if self._close_event is None:
                self._close_event = asyncio.Event()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._close_event.wait(), seconds)
        if self.closed:
            raise ThrottleClosed(self._closed_why)

    def admit(self) -> bool:
        """A slot now when free, none queued, no spacing: no coroutine. Else `wait` for it."""
        if self.closed:
            raise ThrottleClosed(self._closed_why)
        if free := self._in_flight < self._cap and not self._waiters and self._interval == 0.0:
            self._in_flight += 1
            self._started(self._clock())
        return free

    async def wait(self) -> Ticket:
        """A slot, waited for when none is free now (`admit` first: one fast path for all)."""
        if self.admit():
            return Ticket(self._last_start, 0.0)
        clock = self._clock
        asked = clock()
        await self._take_slot()
        try:
            now = clock()
            interval = self._interval
            if interval > 0.0:
                interval *= self._margin
                # Claim a start time before sleeping, so the next caller queues behind it.
                target = max(now, self._last_reserved + interval)
                self._last_reserved = target
                if target > now:
                    await self._nap(target - now)
                    now = clock()
                # Sleep is a lower bound only: a late wake-up, or an interval raised while we
                # slept, must not let two starts come closer than the interval.
                while (gap := self._last_start + self._interval * self._margin - now) > 0.0:
                    await self._nap(gap)
                    now = clock()
        except BaseException:
            self.release()
            raise
        self._started(now)
        waited = now - asked
        self._waited += waited
        return Ticket(now, waited)

    async def _take_slot(self) -> None:
        if self._in_flight < self._cap and not self._waiters:
            self._in_flight += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut  # _wake() counts us in before resolving the future
        except BaseException:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self.release()  # granted and cancelled in the same tick: pass it on
            else:
                with contextlib.suppress(ValueError):  # _wake() may have dropped it already
                    self._waiters.remove(fut)
            raise

    def _started(self, now: float) -> None:
        if self._requests == 0:
            self._first_start = now
        self._requests += 1
        self._last_start = now
        if now > self._last_reserved:
            self._last_reserved = now

    def release(self) -> None:
        """The slot given back, once a request is over; the next waiter woken if it fits."""
        self._in_flight -= 1
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        waiters = self._waiters
        while waiters and self._in_flight < self._cap:
            fut = waiters.popleft()
            if not fut.done():
                self._in_flight += 1
                fut.set_result(None)

    # ---- adaptive control --------------------------------------------------------------------

    def observe(self, status: int | None, seconds: float, error: str | None = None) -> str | None:
        """Feed the outcome of one request: its status (None: connection error or timeout)
        and how long it took; `error`, the transport's words when there was no answer
        ("connection refused"), said when the site is found not answering.

        Pressure (429, 503, no answer, or an average response time far above the baseline)
        halves the concurrency and doubles the extra delay, once per cool-down so that a burst
        of 429s from eight in-flight requests is one signal, not eight. Only a run of good
        answers undoes one step; errors never make the crawl faster. Returns `outage`.
        """
        # a good answer (every one, on a good night) tells its status once: no other test
        good = status is not None and status not in _BAD_STATUSES
        # (a clock's difference, every request: _is_seconds' float test without its call)
        sane = 0.0 <= seconds < _INF if type(seconds) is float else _is_seconds(seconds)
        slow = good and sane and self._time_sample(seconds)
        if status is None:
            if not self._silent:
                self._silent_since = self._clock()
            self._silent += 1
            self._silent_error = error or self._silent_error
        else:
            self._silent, self._silent_error = 0, None
        if good:
            self._failing = 0
        elif self._limit == 1 and self._extra >= max(self._max_crawl_delay, FIRST_EXTRA_DELAY):
            self._failing += 1
        if slow or (not good and (status is None or status in PRESSURE_STATUSES)):
            self._good_streak = 0
            now = self._clock()
            if now - self._last_slowdown >= COOLDOWN:
                self._last_slowdown = now
                self._slow_down()
        elif not good:
            self._good_streak = 0
        else:
            self._good_streak += 1
            if self._good_streak >= RECOVER_AFTER:
                self._good_streak = 0
                self._recover()
        return self.outage if self._silent or self._failing else None

    def _time_sample(self, seconds: float) -> bool:
        """Track response time; True when it has slowed down markedly against the baseline."""
        ewma = self._ewma
        self._ewma = ewma = seconds if ewma is None else ewma + EWMA_ALPHA * (seconds - ewma)
        baseline = self._baseline
        if baseline is None:
            self._samples.append(seconds)
            if len(self._samples) >= BASELINE_SAMPLES:
                self._baseline = _median(self._samples)
                self._samples = []
            return False
        if not (ewma > SLOW_FACTOR * baseline and ewma - baseline > SLOW_MIN_EXCESS):
            self._slow_since = None
            return False
        # Confirmed only by a request that *started* after the slowness was first seen: a
        # stall of our own (a busy machine, a pause of the process) delays just the requests
        # in flight during it; a server that slowed down delays the later ones too.
        now = self._clock()
        if self._slow_since is None:
            self._slow_since = now
            return False
        this_one_slow = seconds > SLOW_FACTOR * baseline and seconds - baseline > SLOW_MIN_EXCESS
        return this_one_slow and now - seconds > self._slow_since

    @property
    def not_answering(self) -> bool:
        """No answer at all to NO_ANSWER_AFTER requests in a row over NO_ANSWER_SECONDS."""
        return (
            self._silent >= NO_ANSWER_AFTER
            and self._clock() - self._silent_since >= NO_ANSWER_SECONDS
        )

    @property
    def outage(self) -> str | None:
        """Why the site looks down (no answer at all for a while, or OUTAGE_AFTER failed
        answers in a row at the slowest rate), or None: the crawl should stop rather than
        back off any further."""
        if self.not_answering:
            seconds = round(self._clock() - self._silent_since)
            return (
                f"not answering: {self._silent_error or 'no answer'} "
                f"({self._silent} requests in a row over {seconds} s)"
            )
        if self._failing < OUTAGE_AFTER:
            return None
        return (
            f"{self._failing} failed answers in a row (5xx, 429 or no answer) at the slowest "
            f"rate, one request every {_num(self._interval)} s"
        )

    def _slow_down(self) -> None:
        self._slowdowns += 1
        self._limit = max(1, self._limit // 2)
        self._cap = self._limit
        slowest = max(self._max_crawl_delay, FIRST_EXTRA_DELAY)
        self._extra = min(max(FIRST_EXTRA_DELAY, self._extra * 2), slowest)
        self._max_extra = max(self._max_extra, self._extra)
        self._interval = max(self._base_interval, self._extra)

    def _recover(self) -> None:
        if self._limit < self._configured_concurrency:
            self._limit += 1
            self._cap = self._limit
            if self._limit == self._configured_concurrency:
                self._cap *= self._depth
            self._wake()
        extra = self._extra / 2
        self._extra = extra if extra >= EXTRA_DELAY_FLOOR else 0.0
        self._interval = max(self._base_interval, self._extra)


class _Slot:
    """The async context manager behind Throttle.slot(); a class, not a generator, for speed."""

    __slots__ = ("_throttle",)

    def __init__(self, throttle: Throttle) -> None:
        self._throttle = throttle

    async def __aenter__(self) -> Ticket:
        return await self._throttle.wait()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._throttle.release()


def _is_seconds(value: object) -> bool:
    if type(value) is float:  # a float's test, as observe() makes it inline
        return 0.0 <= value < _INF
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _num(value: float) -> str:
    return f"{value:g}"


def _median(samples: list[float]) -> float:
    """statistics.median's value, computed here: every crawl takes a host's baseline, and
    importing statistics (which brings fractions and decimal) cost about 15 M instructions
    at each start, half a percent of an unchanged night of 3,000 pages (#26)."""
    ordered = sorted(samples)
    half = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[half]
    return (ordered[half - 1] + ordered[half]) / 2
