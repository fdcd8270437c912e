"""Tests for crawler.shell.retry: what is retried, how long it waits, and what the notes say.

Every test uses a fake sleep that records the waits instead of waiting.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from crawler.cli import main
from crawler.errors import ConfigError
from crawler.shell import eventloop
from crawler.shell.retry import (
    RETRY_STATUSES,
    Raised,
    RetryPolicy,
    fetch_with_retries,
    is_retryable,
    needs_retry,
    retry_after_seconds,
)
from tests.sites import Page, Site, html, read_decisions

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


@dataclass
class Resp:
    status: int | None
    retry_after: str | None = None
    error: str | None = None


class Script:
    """A fetch that plays a list of outcomes (Resp, or an exception to raise) in order."""

    def __init__(self, *outcomes: Resp | BaseException) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    async def __call__(self) -> Resp:
        outcome = self.outcomes[min(self.calls, len(self.outcomes) - 1)]
        self.calls += 1
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def run(
    script: Callable[[], Awaitable[Resp]],
    policy: RetryPolicy | None = None,
    **kw: Any,
) -> tuple[Resp, list[str], list[float]]:
    sleeps = Sleeps()

    async def main() -> tuple[Resp, list[str]]:
        return await fetch_with_retries(
            script,
            policy or RetryPolicy(),
            status_of=lambda r: r.status,
            retry_after_of=lambda r: r.retry_after,
            sleep=sleeps,
            now=lambda: NOW,
            **kw,
        )

    result, notes = eventloop.run(main())
    return result, notes, sleeps.waits


# --- retry_after_seconds --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        ("0", 0.0),
        ("  7 ", 7.0),
        ("1.5", 1.5),
        ("Wed, 01 May 2024 12:00:30 GMT", 30.0),
        ("Wednesday, 01-May-24 12:02:00 GMT", 120.0),
        ("Wed May  1 12:00:05 2024", 5.0),
        ("Wed, 01 May 2024 11:00:00 GMT", 0.0),  # in the past: go ahead now
        (None, None),
        ("", None),
        ("-5", None),
        ("soon", None),
        ("1e3", None),
        ("inf", None),
        ("nan", None),
        ("0x10", None),
        ("Wed, 31 Feb 2024 12:00:00 GMT", None),
        ("2024-05-01T12:00:30Z", None),  # ISO 8601 is not an HTTP date
    ],
)
def test_retry_after_seconds(value: str | None, expected: float | None) -> None:
    assert retry_after_seconds(value, now=NOW) == expected


def test_retry_after_date_defaults_to_the_real_clock() -> None:
    soon = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    seconds = retry_after_seconds(soon)
    assert seconds is not None
    assert 3500 < seconds <= 3600


def test_retry_after_naive_now_is_taken_as_utc() -> None:
    naive = NOW.replace(tzinfo=None)
    assert retry_after_seconds("Wed, 01 May 2024 12:00:30 GMT", now=naive) == 30.0


@given(st.text(max_size=40))
def test_retry_after_never_raises_and_is_never_negative(value: str) -> None:
    seconds = retry_after_seconds(value, now=NOW)
    assert seconds is None or seconds >= 0


@given(st.integers(0, 10**9))
def test_retry_after_delay_seconds_round_trip(n: int) -> None:
    assert retry_after_seconds(str(n), now=NOW) == float(n)


# --- policy ---------------------------------------------------------------------------------


def test_policy_defaults() -> None:
    p = RetryPolicy()
    assert (p.retries, p.max_retry_after, p.base, p.max_backoff) == (2, 60.0, 0.5, 30.0)
    assert p.attempts == 3  # the first request and two retries
    assert frozenset({429, 500, 502, 503, 504}) == RETRY_STATUSES


@pytest.mark.parametrize(
    "kw",
    [
        {"retries": -1},
        {"retries": 2.0},
        {"retries": True},
        {"retries": None},
        {"max_retry_after": -1},
        {"base": float("nan")},
        {"max_backoff": float("inf")},
    ],
)
def test_bad_policy_is_a_config_error(kw: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        RetryPolicy(**kw)


@pytest.mark.parametrize(
    ("status", "expected"),
    [(None, True), (429, True), (500, True), (502, True), (503, True), (504, True)]
    + [(s, False) for s in (200, 204, 301, 304, 400, 401, 403, 404, 410, 501, 505, 599)],
)
def test_is_retryable(status: int | None, expected: bool) -> None:
    assert is_retryable(status) is expected


# --- fetch_with_retries ---------------------------------------------------------------------


def test_success_on_the_first_try_is_returned_without_notes() -> None:
    script = Script(Resp(200))
    result, notes, waits = run(script)
    assert (result.status, notes, waits, script.calls) == (200, [], [], 1)


def test_503_with_retry_after_then_200_waits_what_the_server_asked() -> None:
    script = Script(Resp(503, retry_after="2"), Resp(200))
    result, notes, waits = run(script)
    assert result.status == 200
    assert script.calls == 2
    assert waits == [2.0]
    assert notes == ["attempt 1: HTTP 503, retried after 2.0 s (Retry-After)"]


def test_a_first_try_made_by_the_caller_goes_on_as_if_made_here() -> None:
    """The crawl's client tries first itself (no coroutine of retry.py's around it) and
    hands the outcome over only when it `needs_retry`: the same notes, waits and tries."""
    script = Script(Resp(200))
    result, notes, waits = run(script, first=Resp(503, retry_after="2"))
    assert (result.status, script.calls, waits) == (200, 1, [2.0])
    assert notes == ["attempt 1: HTTP 503, retried after 2.0 s (Retry-After)"]
    script = Script(Resp(200))
    result, notes, _ = run(script, first=Raised(ConnectionResetError("reset")))
    assert (result.status, script.calls) == (200, 1)
    assert notes[0].startswith("attempt 1: connection error (ConnectionResetError: reset)")
    script = Script(OSError("still down"))
    with pytest.raises(OSError, match="still down"):  # the last try's error, as ever
        run(script, RetryPolicy(retries=1), first=Raised(OSError("down")))
    assert script.calls == 1
    assert not needs_retry(RetryPolicy(retries=0), 503) and not needs_retry(RetryPolicy(), 404)
    assert needs_retry(RetryPolicy(), None) and needs_retry(RetryPolicy(), 503)


def test_retry_after_as_an_http_date() -> None:
    script = Script(Resp(429, retry_after="Wed, 01 May 2024 12:00:05 GMT"), Resp(200))
    result, notes, waits = run(script)
    assert result.status == 200
    assert waits == [5.0]
    assert notes == ["attempt 1: HTTP 429, retried after 5.0 s (Retry-After)"]


def test_retry_after_above_the_cap_waits_the_cap_and_says_so() -> None:
    script = Script(Resp(503, retry_after="3600"), Resp(200))
    result, notes, waits = run(script, RetryPolicy(max_retry_after=60))
    assert result.status == 200
    assert waits == [60.0]
    assert notes == [
        "attempt 1: HTTP 503, retried after 60.0 s (Retry-After 3600.0 s, capped at 60.0 s)"
    ]


def test_retry_after_zero_retries_at_once() -> None:
    script = Script(Resp(503, retry_after="0"), Resp(200))
    _, notes, waits = run(script)
    assert waits == [0.0]
    assert notes == ["attempt 1: HTTP 503, retried after 0.0 s (Retry-After)"]


def test_garbage_retry_after_falls_back_to_backoff() -> None:
    script = Script(Resp(503, retry_after="later, please"), Resp(200))
    _, notes, waits = run(script, RetryPolicy(base=0.5))
    assert len(waits) == 1
    assert 0 <= waits[0] <= 0.5
    assert notes[0].endswith("(backoff)")


def test_always_500_makes_exactly_the_allowed_attempts_and_returns_the_last() -> None:
    last = Resp(500, error="third")
    script = Script(Resp(500), Resp(500), last, Resp(200))
    result, notes, waits = run(script, RetryPolicy(retries=2, base=0.5))
    assert script.calls == 3
    assert result is last
    assert len(notes) == len(waits) == 2
    assert notes[0].startswith("attempt 1: HTTP 500, retried after ")
    assert notes[1].startswith("attempt 2: HTTP 500, retried after ")
    assert waits[0] <= 0.5 and waits[1] <= 1.0  # full jitter in [0, base * 2**(n-1)]


@pytest.mark.parametrize("retries", [0, 1, 2, 5])
def test_retries_counts_the_requests_after_the_first(retries: int) -> None:
    script = Script(Resp(502))
    result, notes, waits = run(script, RetryPolicy(retries=retries))
    assert script.calls == retries + 1
    assert result.status == 502
    assert len(notes) == len(waits) == retries


@pytest.mark.parametrize("status", [200, 301, 304, 400, 403, 404, 410, 501])
def test_other_statuses_are_not_retried(status: int) -> None:
    script = Script(Resp(status), Resp(200))
    result, notes, waits = run(script)
    assert (result.status, notes, waits, script.calls) == (status, [], [], 1)


def test_connection_error_result_then_success() -> None:
    script = Script(Resp(None, error="connection refused"), Resp(200))
    result, notes, waits = run(script, error_of=lambda r: r.error)
    assert result.status == 200
    assert script.calls == 2
    assert len(waits) == 1
    assert notes[0].startswith("attempt 1: connection error (connection refused), retried after")
    assert notes[0].endswith("(backoff)")


def test_connection_error_without_detail() -> None:
    _, notes, _ = run(Script(Resp(None), Resp(200)))
    assert notes[0].startswith("attempt 1: connection error or timeout, retried after")


def test_retry_after_is_ignored_without_a_status() -> None:
    _, notes, waits = run(Script(Resp(None, retry_after="50"), Resp(200)), RetryPolicy(base=0.1))
    assert waits[0] <= 0.1
    assert notes[0].endswith("(backoff)")


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionResetError("reset by peer"),
        TimeoutError(),
        aiohttp.ServerDisconnectedError(),
    ],
)
def test_raised_connection_errors_are_retried(exc: BaseException) -> None:
    script = Script(exc, Resp(200))
    result, notes, _ = run(script)
    assert result.status == 200
    assert script.calls == 2
    assert notes[0].startswith(f"attempt 1: connection error ({type(exc).__name__}")


def test_a_raised_connection_error_on_the_last_attempt_propagates() -> None:
    script = Script(Resp(503), TimeoutError("slow"), TimeoutError("still slow"))
    with pytest.raises(TimeoutError, match="still slow"):
        run(script, RetryPolicy(retries=2))
    assert script.calls == 3


def test_a_raised_connection_error_with_no_retries_propagates() -> None:
    script = Script(ConnectionRefusedError("no"), Resp(200))
    with pytest.raises(ConnectionRefusedError):
        run(script, RetryPolicy(retries=0))
    assert script.calls == 1


def test_other_exceptions_are_never_retried() -> None:
    script = Script(KeyError("bug"), Resp(200))
    with pytest.raises(KeyError):
        run(script)
    assert script.calls == 1
    script = Script(Resp(503), KeyError("bug"), Resp(200))
    with pytest.raises(KeyError):
        run(script)
    assert script.calls == 2


def test_retry_on_can_be_narrowed() -> None:
    script = Script(TimeoutError(), Resp(200))
    with pytest.raises(TimeoutError):
        run(script, retry_on=(ConnectionError,))
    assert script.calls == 1


def test_retries_zero_means_no_retry() -> None:
    script = Script(Resp(503, retry_after="1"), Resp(200))
    result, notes, waits = run(script, RetryPolicy(retries=0))
    assert (result.status, notes, waits, script.calls) == (503, [], [], 1)


@pytest.fixture
def seeded_random() -> Any:
    """tenacity draws its jitter from the global random module; pin it, then put it back."""
    state = random.getstate()
    random.seed(1234)
    yield
    random.setstate(state)


@pytest.mark.usefixtures("seeded_random")
def test_backoff_grows_exponentially_within_the_ceiling() -> None:
    uppers = []
    for _ in range(50):
        _, _, waits = run(Script(Resp(500)), RetryPolicy(retries=7, base=0.5, max_backoff=4.0))
        assert len(waits) == 7
        for n, w in enumerate(waits, 1):
            assert 0 <= w <= min(4.0, 0.5 * 2 ** (n - 1))
        uppers.append(waits)
    # jitter: the waits differ from run to run
    assert len({tuple(w) for w in uppers}) == 50
    # and later retries wait longer on average
    mean = [sum(w[i] for w in uppers) / len(uppers) for i in range(7)]
    assert mean[0] < mean[2] < mean[4]


def test_mixed_sequence_notes_one_line_per_retry() -> None:
    script = Script(
        Resp(None, error="timeout"),
        Resp(429, retry_after="3"),
        Resp(503, retry_after="Wed, 01 May 2024 12:01:00 GMT"),
        Resp(200),
    )
    result, notes, waits = run(
        script, RetryPolicy(retries=3, max_retry_after=30), error_of=lambda r: r.error
    )
    assert result.status == 200
    assert waits[1:] == [3.0, 30.0]
    assert notes[0].startswith("attempt 1: connection error (timeout), retried after ")
    assert notes[1:] == [
        "attempt 2: HTTP 429, retried after 3.0 s (Retry-After)",
        "attempt 3: HTTP 503, retried after 30.0 s (Retry-After 60.0 s, capped at 30.0 s)",
    ]


@given(
    outcomes=st.lists(st.sampled_from([200, 404, 429, 500, 503, None]), min_size=1, max_size=8),
    retries=st.integers(0, 5),
)
def test_calls_and_notes_for_any_sequence(outcomes: list[int | None], retries: int) -> None:
    script = Script(*(Resp(s, retry_after="1") for s in outcomes))
    result, notes, waits = run(script, RetryPolicy(retries=retries))
    attempts = retries + 1
    padded = outcomes + [outcomes[-1]] * attempts
    expected_calls = next(
        (i + 1 for i, s in enumerate(padded[:attempts]) if not is_retryable(s)), attempts
    )
    assert script.calls == expected_calls
    assert result.status == padded[expected_calls - 1]
    assert len(notes) == len(waits) == expected_calls - 1
    assert all(0 <= w <= 30.0 for w in waits)


# --- against a live local server ------------------------------------------------------------


def test_against_a_local_server_503_then_200(serve: Any) -> None:
    hits: list[int] = []

    async def page(request: web.Request) -> web.Response:
        hits.append(1)
        if len(hits) == 1:
            return web.Response(status=503, headers={"Retry-After": "1"})
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", page)
    server = serve(app)
    sleeps = Sleeps()

    async def main() -> tuple[tuple[int, str | None], list[str]]:
        async with aiohttp.ClientSession() as session:

            async def fetch() -> tuple[int, str | None]:
                async with session.get(server.url + "/") as r:
                    await r.read()
                    return r.status, r.headers.get("Retry-After")

            return await fetch_with_retries(
                fetch,
                RetryPolicy(),
                status_of=lambda r: r[0],
                retry_after_of=lambda r: r[1],
                sleep=sleeps,
            )

    (status, _), notes = eventloop.run(main())
    assert status == 200
    assert len(hits) == 2
    assert sleeps.waits == [1.0]
    assert notes == ["attempt 1: HTTP 503, retried after 1.0 s (Retry-After)"]


# --- --retries through the real command line (issue #11: retries, not attempts) -------------


def _down_site() -> Site:
    """The start page links to /down, which answers 503 to every request and never says
    when to come back, so the retries are driven by our own backoff alone."""
    return Site({"/": html("/down"), "/down": Page("down for maintenance", status=503)})


def _crawl(tmp_path: Path, *args: str) -> tuple[int, dict[str, dict]]:
    """`sitemap-crawler crawl ARGS` in this process, with a decisions file; returns the exit
    code and the decisions by URL (none when the run stopped before crawling)."""
    dec = tmp_path / "decisions.jsonl"
    out = str(tmp_path / "out")  # /down fails on purpose: no publish guard
    code = main(["crawl", *args, "-o", out, "--decisions", str(dec), "--max-error-rate", "1"])
    return code, read_decisions(dec) if dec.exists() else {}


@pytest.mark.parametrize(
    ("args", "requests"),
    [
        (["--retries", "0"], 1),
        (["--retries", "1"], 2),
        (["--retries", "2"], 3),
        ([], 3),  # the default: two retries after the first try, as before the rename
    ],
)
def test_cli_retries_counts_retries_after_the_first_request(
    serve: Any, tmp_path: Path, capsys: Any, args: list[str], requests: int
) -> None:
    site = _down_site()
    srv = serve(site.app)
    code, decisions = _crawl(tmp_path, srv.url + "/", "--quiet", *args)
    capsys.readouterr()
    assert code == 0
    assert site.paths.count("/down") == requests
    down = decisions[srv.url + "/down"]
    assert down["reason"] == "http_error"
    if requests == 1:
        assert "retries" not in down["detail"] and "retried" not in down["detail"]
    else:
        # the decision counts retries, not requests
        assert f"after {requests - 1} retries" in down["detail"]
        assert down["detail"].count("retried after") == requests - 1


@pytest.mark.parametrize("args", [["--retries", "-1"], ["--retries=-1"]])
def test_cli_negative_retries_is_a_config_error_before_any_request(
    serve: Any, tmp_path: Path, capsys: Any, args: list[str]
) -> None:
    site = _down_site()
    srv = serve(site.app)
    code, _ = _crawl(tmp_path, srv.url + "/", *args)
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == ["sitemap-crawler: retries must be at least 0, got -1"]
    assert site.requests == []


def _toml(tmp_path: Path, url: str, retries: int) -> Path:
    cfg = tmp_path / "crawl.toml"
    cfg.write_text(f'url = "{url}/"\nquiet = true\nretries = {retries}\n', encoding="utf-8")
    return cfg


def test_toml_retries_zero_makes_one_request(serve: Any, tmp_path: Path, capsys: Any) -> None:
    site = _down_site()
    srv = serve(site.app)
    code, decisions = _crawl(tmp_path, "-c", str(_toml(tmp_path, srv.url, 0)))
    capsys.readouterr()
    assert code == 0
    assert site.paths.count("/down") == 1
    assert decisions[srv.url + "/down"]["reason"] == "http_error"


def test_cli_retries_overrides_the_toml_key(serve: Any, tmp_path: Path, capsys: Any) -> None:
    site = _down_site()
    srv = serve(site.app)
    cfg = _toml(tmp_path, srv.url, 0)
    code, _ = _crawl(tmp_path, "-c", str(cfg), "--retries", "2")
    capsys.readouterr()
    assert code == 0
    assert site.paths.count("/down") == 3


def test_toml_negative_retries_is_a_config_error_before_any_request(
    serve: Any, tmp_path: Path, capsys: Any
) -> None:
    site = _down_site()
    srv = serve(site.app)
    code, _ = _crawl(tmp_path, "-c", str(_toml(tmp_path, srv.url, -1)))
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == ["sitemap-crawler: retries must be at least 0, got -1"]
    assert site.requests == []


@pytest.mark.parametrize(("args", "requests"), [(["--retries", "0"], 1), ([], 3)])
def test_explain_uses_the_same_retries(
    serve: Any, capsys: Any, args: list[str], requests: int
) -> None:
    site = _down_site()
    srv = serve(site.app)
    assert main(["explain", srv.url + "/down", *args]) == 3
    capsys.readouterr()
    assert site.paths.count("/down") == requests


def test_help_says_retries_not_attempts(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        main(["crawl", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines anywhere
    help_line = text[text.index("--retries N retries") :][:160]
    assert "after the first try" in help_line
    assert "(0: no retry) (default: 2)" in help_line
    assert "attempt" not in help_line


def test_the_clients_page_retried_each_try_in_the_throttle_notes_on_the_last(
    serve: Any,
) -> None:
    """The crawl's client makes a page's first try as its own coroutine and hands a 503 to
    the retries (#26): each try is one request at the server and one the throttle counts,
    the retries make no retries of their own, and the notes land on the answer kept."""
    from crawler.config import Config
    from crawler.core.page import PagePolicy
    from crawler.shell.client import PoliteClient

    hits: list[int] = []

    async def page(request: web.Request) -> web.Response:
        hits.append(1)
        if len(hits) < 3:
            return web.Response(status=503, headers={"Retry-After": "0"})
        return web.Response(text="<html><body>ok</body></html>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    server = serve(app)
    url = server.url + "/"
    config = Config(url=url, retries=2).validate()
    client = PoliteClient(config, url, PagePolicy("sitemap-crawler"))

    async def main() -> Any:
        async with client.opened({}, set_depth=lambda _: None):
            return await client.fetch(url, 1)

    fetched = eventloop.run(main())
    assert fetched.response.status == 200 and fetched.page is not None
    assert len(hits) == 3 and client.throttle._requests == 3
    assert fetched.response.notes == (
        "attempt 1: HTTP 503, retried after 0.0 s (Retry-After)",
        "attempt 2: HTTP 503, retried after 0.0 s (Retry-After)",
    )


def test_an_error_of_a_retry_is_not_chained_to_the_first_try_s() -> None:
    """The client's first try hands a connection error to the retries outside its handler:
    an error a retry raises carries no "during handling of" the first one's."""
    from crawler.config import Config
    from crawler.core.page import PagePolicy
    from crawler.shell.client import PoliteClient

    url = "http://127.0.0.1:9/"  # never asked: the tries below are the fetch given
    client = PoliteClient(Config(url=url, retries=2).validate(), url, PagePolicy("x"))
    client.retry = RetryPolicy(retries=2, base=0)  # no backoff to sleep through
    tries: list[int] = []

    async def fetch() -> Any:
        tries.append(1)
        if len(tries) == 1:
            raise ConnectionResetError("first")
        raise RuntimeError("second")

    async def main() -> Any:
        return await client._retried(url, fetch)

    with pytest.raises(RuntimeError) as raised:
        eventloop.run(main())
    assert len(tries) == 2
    assert raised.value.__context__ is None
