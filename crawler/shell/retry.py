"""Retrying a fetch: which outcomes deserve another try, and how long to wait first.

Only failures that are plausibly temporary are retried: no answer at all (connection error,
timeout) and 429, 500, 502, 503, 504. A 404 or a 403 will not change in two seconds, so
asking again would only add load. The server's own Retry-After wins over our backoff, within
a cap so that a "Retry-After: 86400" cannot park a crawl for a day; otherwise the wait is
exponential with full jitter, so that workers hit by the same burst do not retry in step.

The caller gets the last result back (never an exception for an HTTP status) together with
one line per retry for the decisions file, so a page that needed three tries says so.

tenacity drives the retries, but building and running its machinery costs 36-71 us per call
even when the first try succeeds (a direct call: 0.1-0.3 us); at thousands of requests a
second that matters, so the first try is made directly (about 2 us in all) and tenacity is
entered, with that first outcome replayed into it, only when the outcome is retryable.
"""

from __future__ import annotations

import asyncio
import math
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from crawler.core.httpdate import parse_http_date
from crawler.errors import ConfigError

if TYPE_CHECKING:  # imported where it runs: a crawl without a proxy never loads aiohttp
    import aiohttp
    from tenacity import RetryCallState

R = TypeVar("R")

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# Exceptions a fetch may raise that mean "no answer", as opposed to a bug in our code; with
# aiohttp's ClientError once aiohttp is loaded (`connection_errors`).
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (OSError, TimeoutError)


def connection_errors() -> tuple[type[BaseException], ...]:
    """CONNECTION_ERRORS and aiohttp's ClientError when aiohttp is loaded: only then can a
    fetch raise one, and importing it here would cost every crawl a fifth of a second."""
    aiohttp = sys.modules.get("aiohttp")
    return CONNECTION_ERRORS if aiohttp is None else (*CONNECTION_ERRORS, aiohttp.ClientError)


_DELAY_SECONDS = re.compile(r"\d+(?:\.\d+)?")  # RFC 9110 says 1*DIGIT; "1.5" is harmless


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try. retries counts the requests after the first one: 0 means never retry.

    Counted as curl's --retry and Scrapy's RETRY_TIMES are, so `--retries 2` reads as
    people expect: the first request and two more.
    """

    retries: int = 2
    max_retry_after: float = 60.0  # seconds; a longer Retry-After is cut to this
    base: float = 0.5  # seconds; the backoff before retry n is uniform in [0, base * 2**(n-1)]
    max_backoff: float = 30.0  # seconds; ceiling of that range

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int):
            raise ConfigError(f"retries must be a whole number, not {self.retries!r}")
        if self.retries < 0:
            raise ConfigError(f"retries must be at least 0, got {self.retries}")
        for name in ("max_retry_after", "base", "max_backoff"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ConfigError(f"retry {name} must be a finite number >= 0, not {value!r}")

    @property
    def attempts(self) -> int:
        """Requests in all, the first included: what tenacity's stop condition counts."""
        return self.retries + 1


def is_retryable(status: int | None) -> bool:
    """None stands for a connection error or timeout: worth another try, like a 503."""
    return status is None or status in RETRY_STATUSES


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After value: delay-seconds or an HTTP date.

    None when the header is absent or unusable (negative, garbage), so the caller falls
    back to its own backoff. A date in the past means "now": 0.0.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if _DELAY_SECONDS.fullmatch(text):
        return float(text)
    when = parse_http_date(text, now=now)
    if when is None:
        return None
    if now is None:
        now = datetime.now(UTC)
    elif now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


async def fetch_with_retries(
    fetch: Callable[[], Awaitable[R]],
    policy: RetryPolicy,
    *,
    status_of: Callable[[R], int | None],
    retry_after_of: Callable[[R], str | None],
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    error_of: Callable[[R], str | None] | None = None,
    retry_on: tuple[type[BaseException], ...] | None = None,
    now: Callable[[], datetime] | None = None,
    first: R | Raised | None = None,
) -> tuple[R, list[str]]:
    """Call fetch until it gives a non-retryable outcome or policy.retries are spent.

    Returns the last result and one note per retry, e.g.
    "attempt 1: HTTP 503, retried after 2.0 s (Retry-After)". status_of maps a result to
    its HTTP status, None for a connection error or timeout; error_of, if given, names that
    error in the note. An exception of a retry_on type (by default a connection error:
    `connection_errors`) is retried like a None status and re-raised if the last attempt
    raises it too; any other exception propagates at once.
    `now` (UTC) is for Retry-After dates and exists for tests. `first`: the first try's
    outcome when the caller made it (a result that `needs_retry`, or the connection error
    it raised, as `Raised`): the crawl's client tries first with no coroutine of this
    module's around it, and comes here only when that try is to be retried.
    """
    if retry_on is None:
        retry_on = connection_errors()
    if first is None:  # fast path: one direct call; tenacity only sees a second try
        try:
            outcome = await fetch()
        except retry_on as exc:
            if policy.retries == 0:
                raise
            first = Raised(exc)
        else:
            if not needs_retry(policy, status_of(outcome)):
                return outcome, []
            first = outcome

    # here, not at the top: most crawls never retry, and tenacity is a tenth of their imports
    from tenacity import (
        AsyncRetrying,
        retry_if_exception_type,
        retry_if_result,
        stop_after_attempt,
        wait_random_exponential,
    )

    replay: list[R | Raised] = [first]

    async def attempt() -> R:
        if replay:  # attempt 1 already happened: hand tenacity its outcome
            outcome = replay.pop()
            if isinstance(outcome, Raised):
                raise outcome.exc
            return outcome
        return await fetch()

    notes: list[str] = []
    pending_note: list[str] = [""]
    backoff = wait_random_exponential(multiplier=policy.base, max=policy.max_backoff)

    def wait(state: RetryCallState) -> float:
        outcome = state.outcome
        assert outcome is not None
        retry_after: float | None = None
        if outcome.failed:
            exc = outcome.exception()
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            what = f"connection error ({detail})"
        else:
            result = outcome.result()
            status = status_of(result)
            if status is None:
                error = error_of(result) if error_of is not None else None
                what = f"connection error ({error})" if error else "connection error or timeout"
            else:
                what = f"HTTP {status}"
                retry_after = retry_after_seconds(
                    retry_after_of(result), now=now() if now is not None else None
                )
        if retry_after is None:
            seconds = float(backoff(state))
            how = "backoff"
        elif retry_after > policy.max_retry_after:
            seconds = float(policy.max_retry_after)
            how = f"Retry-After {_secs(retry_after)} s, capped at {_secs(seconds)} s"
        else:
            seconds = retry_after
            how = "Retry-After"
        pending_note[0] = (
            f"attempt {state.attempt_number}: {what}, retried after {_secs(seconds)} s ({how})"
        )
        return seconds

    def before_sleep(state: RetryCallState) -> None:
        notes.append(pending_note[0])  # only reached when a retry really follows

    retrying = AsyncRetrying(
        sleep=sleep,
        stop=stop_after_attempt(policy.attempts),
        wait=wait,
        retry=retry_if_exception_type(retry_on)
        | retry_if_result(lambda r: is_retryable(status_of(r))),
        before_sleep=before_sleep,
        retry_error_callback=_last_outcome,
    )
    result: R = await retrying(attempt)
    return result, notes


def needs_retry(policy: RetryPolicy, status: int | None) -> bool:
    """Whether an answer of this status (None: none at all) is asked again under policy."""
    return policy.retries != 0 and (status is None or status in RETRY_STATUSES)  # is_retryable


@dataclass(slots=True)  # plain, not frozen: nothing hashes or changes it (#26)
class Raised:
    """The first attempt's exception, kept to be replayed inside tenacity."""

    exc: BaseException


def _last_outcome(state: RetryCallState) -> object:
    """Out of attempts: give back the last result (or raise its exception), not RetryError."""
    assert state.outcome is not None
    return state.outcome.result()


def _secs(seconds: float) -> str:
    """'2.0', '0.25', '0.004': short, and a wait that was not zero never reads as zero."""
    if not math.isfinite(seconds) or seconds >= 1 or seconds == 0:
        return f"{seconds:.1f}"
    return f"{seconds:.2f}" if seconds >= 0.01 else f"{seconds:.3f}"


@dataclass(slots=True)  # plain, not frozen: nothing hashes or changes it (#26)
class Reply:
    """An API's answer to one request, after the retries (`call`)."""

    status: int | None  # None: no answer (a connection error, a timeout)
    text: str = ""
    retry_after: str | None = None
    error: str | None = None  # the exception's name, when there was no answer
    tries: int = 1


async def call(
    session: aiohttp.ClientSession, method: str, url: Any, policy: RetryPolicy, **kwargs: Any
) -> Reply:
    """One request to an API (a webhook, a search console), retried as a fetch is: the
    reply (its body as text), never an exception for a status or a lost connection.
    `kwargs` go to aiohttp (headers, data, json)."""
    import aiohttp

    async def once() -> Reply:
        try:
            async with session.request(method, url, **kwargs) as response:
                text = await response.text(errors="replace")
                return Reply(response.status, text, response.headers.get("Retry-After"))
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            return Reply(None, error=type(exc).__name__)

    reply, notes = await fetch_with_retries(
        once,
        policy,
        status_of=lambda r: r.status,
        retry_after_of=lambda r: r.retry_after,
        error_of=lambda r: r.error,
    )
    return Reply(reply.status, reply.text, reply.retry_after, reply.error, len(notes) + 1)
