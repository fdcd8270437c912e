"""Parsing pages in worker processes (crawler.parse_pool): same answers as extract_page, matched
to the right request, through worker crashes, cancellation and shutdown, with nothing left
running afterwards."""

from __future__ import annotations

import asyncio
import codecs
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler import parse_pool
from crawler.directives import Directives
from crawler.extract import Link, PageData, extract_page
from crawler.parse_pool import ParsePool, ParsePoolError, RawPage, pack_page, unpack_page

URL = "https://example.com/dir/page.html"
T = TypeVar("T")
REPO = Path(__file__).resolve().parents[1]

PAGES: list[tuple[bytes, str | None, str]] = [
    (b"", "text/html", URL),
    (b"", None, URL),
    (bytes(range(256)) * 40, "text/html", URL),
    (b"\xff\xfe\x00<\x00a\x00 \x00h\x00r\x00e\x00f\x00=\x00x\x00>", "text/html", URL),
    (b'<a href="/a">a</a><a href=" b ">b</a><a>no href</a><a href="">empty</a>', None, URL),
    (b'<a href="/x" rel="NoFollow noopener">x</a><area href="/map" rel=nofollow>', None, URL),
    (b'<svg><a xlink:href="/svg">s</a></svg><!-- <a href="/comment"> -->', None, URL),
    (
        b'<script>document.write("<a href=/s>")</script><template><a href="/t"></template>',
        None,
        URL,
    ),
    (b'<base href="../other/"><a href="rel">r</a>', "text/html", URL),
    (b'<base href="javascript:alert(1)"><a href="rel">r</a>', "text/html", URL),
    (
        b'<link rel="canonical" href=" /canon "><link rel="CANONICAL" href="/second">'
        b'<link rel="alternate" hreflang="de" href="/de"><link rel=alternate href="/feed">',
        "text/html; charset=utf-8",
        URL,
    ),
    (b'<meta name="robots" content="noindex, nofollow">', None, URL),
    (
        b'<meta name="ROBOTS" content="none"><meta name="sitemap-crawler" content="noindex">',
        None,
        URL,
    ),
    (b'<meta name="googlebot" content="noindex"><a href="/g">g</a>', None, URL),
    ('<meta charset="iso-8859-1"><a href="/café?q=é">c</a>'.encode("latin-1"), None, URL),
    ('<a href="/naïve">n</a>'.encode("cp1251", "replace"), "text/html; charset=cp1251", URL),
    ('<a href="/日本">j</a>'.encode("shift_jis"), "text/html; charset=shift_jis", URL),
    (codecs.BOM_UTF8 + '<a href="/bom-ü">b</a>'.encode(), "text/html; charset=latin1", URL),
    (b'<a href="/x">x</a>', "text/html; charset=\udcff\udcfe", URL),  # header as aiohttp decodes
    (b'<a href="/x">x</a>', "text/html; charset=iso-2022-kr", URL),  # "replacement" encoding
    (b'<a href="/\xed\xa0\x80">lone surrogate bytes</a>', "text/html", "https://例え.jp/ü\udcff"),
    (b"<html><body>" + b'<a href="/p">' * 3000 + b"</body></html>", None, URL),
    (b"<a href='/quote\"d'>" + b"\x00" * 100 + b"<a href=/nul\x00>", None, URL),
]


def run(coro_fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(coro_fn())


def gone(pid: int) -> bool:
    """True once ``pid`` has exited and been reaped (a zombie would still be in /proc)."""
    return not Path(f"/proc/{pid}").exists()


def replaced(pool: ParsePool, pid: int) -> bool:
    """The parent noticed ``pid`` died and a fresh worker is ready in its place."""
    return pool.pids != [pid] and pool.alive == 1


def wait_until(predicate: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


async def wait_for(predicate: Callable[[], bool], seconds: float = 10.0) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return predicate()


def unique_page(i: int) -> bytes:
    return (
        f'<link rel="canonical" href="/c{i}">'
        f'<meta name="robots" content="{"noindex" * (i % 3 == 0)}">'
        f'<a href="/p{i}">p</a><a href="/q{i}" rel="{"nofollow" * (i % 2)}">q</a>'
        + "<div>filler</div>"
        * (i % 50)
    ).encode()


# --- results -----------------------------------------------------------------------------------


def test_results_identical_to_extract_page() -> None:
    async def main() -> None:
        async with ParsePool(2, agent="sitemap-crawler") as pool:
            assert pool.alive == 2
            for body, content_type, url in PAGES:
                expected = extract_page(body, content_type, url, "sitemap-crawler")
                assert await pool.extract(body, content_type, url) == expected
                raw = await pool.extract_raw(body, content_type, url)
                assert raw.page_data() == expected
                assert raw.directives == expected.directives
                assert raw.links == expected.links

    run(main)


def test_agent_reaches_the_worker() -> None:
    body = b'<meta name="mybot" content="noindex"><meta name="otherbot" content="nofollow">'

    async def main() -> None:
        async with ParsePool(1, agent="MyBot") as pool:
            page = await pool.extract(body, None, URL)
        assert page.directives == Directives(True, False, 'meta mybot "noindex"')
        assert page == extract_page(body, None, URL, "MyBot")

    run(main)


def test_followable_matches_the_engines_link_list() -> None:
    body = (
        b'<a href="/a">a</a><a href="/b" rel="nofollow">b</a>'
        b"<link rel=alternate hreflang=de href=/de>"
    )
    page = extract_page(body, None, URL)
    raw = RawPage.of(page)
    for follow_nofollow in (False, True):
        expected = [link.href for link in page.links if follow_nofollow or not link.nofollow]
        expected += [href for _, href in page.alternates]
        assert raw.followable(follow_nofollow) == expected
    assert RawPage.of(extract_page(b'<a href="/a">', None, URL)).followable() == ["/a"]


texts = st.text(st.characters(codec="utf-8", exclude_categories=()), max_size=20)


@given(
    base=texts,
    links=st.lists(st.builds(Link, texts, st.booleans()), max_size=20),
    alternates=st.lists(st.tuples(texts, texts), max_size=5),
    canonical=st.none() | texts,
    directives=st.builds(Directives, st.booleans(), st.booleans(), texts),
    encoding=texts,
)
def test_pack_unpack_round_trip(
    base: str,
    links: list[Link],
    alternates: list[tuple[str, str]],
    canonical: str | None,
    directives: Directives,
    encoding: str,
) -> None:
    page = PageData(base, links, alternates, canonical, directives, encoding)
    assert unpack_page(pack_page(page)).page_data() == page


# --- concurrency -------------------------------------------------------------------------------


def test_many_concurrent_calls_get_their_own_answers() -> None:
    async def main() -> None:
        async with ParsePool(2) as pool:
            jobs = [(unique_page(i), None, f"https://example.com/{i}") for i in range(600)]
            results = await asyncio.gather(*(pool.extract(*job) for job in jobs))
            for job, result in zip(jobs, results, strict=True):
                assert result == extract_page(*job)
            # both workers took a share (least-loaded dispatch)
            assert pool.alive == 2

    run(main)


def test_cancelled_call_does_not_confuse_later_answers() -> None:
    async def main() -> None:
        async with ParsePool(1) as pool:
            big = b'<a href="/big">' + b"<p>x</p>" * 200_000
            task = asyncio.ensure_future(pool.extract(big, None, URL))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            for i in range(20):
                assert await pool.extract(unique_page(i), None, URL) == extract_page(
                    unique_page(i), None, URL
                )

    run(main)


# --- failures ----------------------------------------------------------------------------------


@pytest.mark.parametrize("max_respawns", [0, 2])
def test_worker_killed_mid_run(max_respawns: int) -> None:
    """Requests a dead worker held are parsed inline; the worker is respawned (if allowed) and
    takes pages again; with no respawns left every call is parsed inline."""

    async def main() -> None:
        async with ParsePool(1, max_respawns=max_respawns) as pool:
            [pid] = pool.pids
            jobs = [(unique_page(i), None, f"https://example.com/{i}") for i in range(300)]
            calls = [asyncio.ensure_future(pool.extract(*job)) for job in jobs]
            while sum(c.done() for c in calls) < 5:
                await asyncio.sleep(0.001)
            os.kill(pid, signal.SIGKILL)
            results = await asyncio.gather(*calls)
            for job, result in zip(jobs, results, strict=True):
                assert result == extract_page(*job)
            if max_respawns:
                # (the worker may have answered everything before it died: wait for the
                # parent to notice, not just for results)
                assert await wait_for(partial(replaced, pool, pid))
                assert wait_until(lambda: gone(pid))  # the dead one was reaped
                assert await pool.extract(unique_page(1), None, URL) == extract_page(
                    unique_page(1), None, URL
                )
                assert pool.alive == 1
            else:
                assert await wait_for(lambda: pool.alive == 0)
                assert not pool._respawning
                assert await pool.extract(unique_page(7), None, URL) == extract_page(
                    unique_page(7), None, URL
                )
        assert gone(pid)

    run(main)


def test_respawns_are_bounded() -> None:
    async def main() -> None:
        async with ParsePool(1, max_respawns=2) as pool:
            killed = []
            for _ in range(2):
                [pid] = pool.pids
                killed.append(pid)
                os.kill(pid, signal.SIGKILL)
                assert await wait_for(partial(replaced, pool, pid))
            [pid] = pool.pids
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)
            assert await wait_for(lambda: pool.alive == 0)
            # the third death scheduled nothing: no respawn can come later
            assert pool.respawns_left == 0 and not pool._respawning and pool.pids == [pid]
            assert await pool.extract(b'<a href="/z">', None, URL) == extract_page(
                b'<a href="/z">', None, URL
            )
        assert all(wait_until(partial(gone, pid)) for pid in killed)

    run(main)


def test_worker_ignores_sigint() -> None:
    async def main() -> None:
        async with ParsePool(1) as pool:
            [pid] = pool.pids
            os.kill(pid, signal.SIGINT)
            # A worker that took the signal would die before answering the next request.
            for _ in range(2):
                page = await pool.extract(b'<a href="/i">', None, URL)
                assert page.links == [Link("/i", False)]
            assert pool._slots[0].process.poll() is None
            assert pool.alive == 1 and pool.pids == [pid]

    run(main)


def test_worker_that_cannot_start_raises_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_pool, "_WORKER_CODE", "import sys; sys.exit(3)")

    async def main() -> list[int]:
        pool = ParsePool(2)
        with pytest.raises(ParsePoolError):
            await pool.start()
        # still usable, inline
        assert await pool.extract(b'<a href="/a">', None, URL) == extract_page(
            b'<a href="/a">', None, URL
        )
        await pool.close()
        return pool.pids

    pids = run(main)
    assert isinstance(pids, list) and len(pids) >= 1
    assert all(gone(pid) for pid in pids)


def test_silent_worker_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_pool, "_WORKER_CODE", "import time; time.sleep(60)")

    async def main() -> list[int]:
        pool = ParsePool(1, start_timeout=0.5)
        with pytest.raises(ParsePoolError):
            await pool.start()
        return pool.pids

    pids = run(main)
    assert all(gone(pid) for pid in pids)


# --- shutdown ----------------------------------------------------------------------------------


def test_close_leaves_no_child_processes() -> None:
    async def main() -> list[int]:
        pool = ParsePool(2)
        await pool.start()
        pids = pool.pids
        assert len(pids) == 2 and not any(gone(pid) for pid in pids)
        await pool.extract(b"<a href=/x>", None, URL)
        await pool.close()
        await pool.close()  # idempotent
        assert all(gone(pid) for pid in pids)
        # closed: still answers, inline
        assert (await pool.extract(b"<a href=/y>", None, URL)).links == [Link("/y", False)]
        return pids

    pids = run(main)
    assert multiprocessing.active_children() == []
    assert all(gone(pid) for pid in pids)


def test_close_unblocks_waiting_callers() -> None:
    async def main() -> None:
        pool = ParsePool(1)
        await pool.start()
        big = b'<a href="/big">' + b"<p>x</p>" * 100_000
        calls = [asyncio.ensure_future(pool.extract(big, None, URL)) for _ in range(5)]
        await asyncio.sleep(0.01)
        await pool.close()
        for result in await asyncio.gather(*calls):
            assert result.links == [Link("/big", False)]

    run(main)


@pytest.mark.parametrize("delay", [0.0, 0.001, 0.05])
def test_start_cancelled_leaves_nothing(delay: float) -> None:
    async def main() -> list[int]:
        pool = ParsePool(2)
        task = asyncio.ensure_future(pool.start())
        await asyncio.sleep(delay)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        pids = pool.pids
        assert all(gone(pid) for pid in pids)
        await pool.close()
        return pids

    pids = run(main)
    assert all(gone(pid) for pid in pids)


def test_close_cancelled_still_reaps() -> None:
    async def main() -> list[int]:
        pool = ParsePool(2)
        await pool.start()
        pids = pool.pids
        task = asyncio.ensure_future(pool.close())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert all(gone(pid) for pid in pids)
        return pids

    run(main)


def test_body_cancelled_inside_async_with() -> None:
    async def main() -> list[int]:
        pids: list[int] = []

        async def crawl() -> None:
            async with ParsePool(1) as pool:
                pids.extend(pool.pids)
                await asyncio.sleep(60)

        task = asyncio.ensure_future(crawl())
        await wait_for(lambda: bool(pids))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return pids

    pids = run(main)
    assert pids and all(gone(pid) for pid in pids)


def test_workers_exit_when_the_parent_is_killed(tmp_path: Path) -> None:
    """No orphans: the worker's only lifeline is its socket, which the kernel closes when the
    parent dies, even by SIGKILL."""
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio, sys
            from crawler.parse_pool import ParsePool

            async def main():
                pool = ParsePool(2)
                await pool.start()
                print(*pool.pids, flush=True)
                await asyncio.sleep(60)

            asyncio.run(main())
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    parent = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, env=env, cwd=REPO
    )
    try:
        assert parent.stdout is not None
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 2
        parent.kill()
        parent.wait()

        def exited(pid: int) -> bool:
            # reparented to init (or a subreaper); exited even if not yet reaped
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except FileNotFoundError:
                return True
            return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")

        assert all(wait_until(partial(exited, pid)) for pid in pids)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
