"""Throughput of crawler.shell.state: recording, checkpointing and loading a large crawl.

Simulates a breadth-first crawl of N URLs the way the engine records it: each page's
decision (half of them a listing, which waits for its twins) together with the queued calls
for the new links it found, ``maybe_checkpoint`` after every page at the default thresholds.
Then a crash-free reopen with ``--resume`` and a full ``load()``, consuming every stream.
Prints figures only.

Run: python3 bench/state_bench.py [N]   (default 1,000,000)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from crawler.shell.listings import Listing, to_micros
from crawler.shell.state import DEFAULT_CHECKPOINT_OPS, CrawlState

LINKS_PER_PAGE = 20  # new links per page until N URLs are known


def url_of(i: int) -> str:
    return f"https://www.shop.example/catalogue/category-{i % 997}/product-{i:08d}.html?ref=nav"


def crawl(path: Path, n: int) -> tuple[float, float, int, int]:
    """Record a crawl of n URLs; returns (record seconds, checkpoint seconds, rows, ops)."""
    state = CrawlState.open(path, fingerprint="bench", start_url=url_of(0), resume=False)
    base = datetime(2024, 1, 1, tzinfo=UTC)
    write = 0.0
    record_started = time.perf_counter()
    rows = 0
    ops = 0
    checkpoints = 0
    state.queued(url_of(0), 0, None)
    ops += 1
    known = 1
    depth = 0
    for i in range(n):
        url = url_of(i)
        depth = 0 if i == 0 else 1 + (i // 50_000)
        if i % 2 == 0:
            lastmod = to_micros(base + timedelta(seconds=i))
            state.listed(
                Listing(url, url, 200, "", depth, url_of(i // 20), lastmod, "weekly", 0.5, i)
            )
        else:
            state.decided(url, 200, "noindex", "", depth, url_of(i // 20))
        # the decision or listing row (the url row of a URL queued is inserted with it, or
        # was written queued at a checkpoint before: then that row says it is done)
        rows += 1
        ops += 1
        if i % 10 == 0:
            key = hashlib.blake2b(url.encode(), digest_size=8).digest()
            state.body(int.from_bytes(key, "little", signed=True), url)  # logged: no row of its own
            ops += 1
        for _ in range(LINKS_PER_PAGE):
            if known >= n:
                break
            state.queued(url_of(known), depth + 1, url)
            known += 1
            rows += 1
            ops += 1
        state.counter("pages", i + 1)
        ops += 1
        if state.pending >= DEFAULT_CHECKPOINT_OPS:
            t = time.perf_counter()
            state.checkpoint()
            write += time.perf_counter() - t
            checkpoints += 1
    t = time.perf_counter()
    state.finish()
    write += time.perf_counter() - t
    total = time.perf_counter() - record_started
    state.close()
    return total - write, write, rows, ops


def bulk(path: Path, n: int) -> tuple[float, int, float]:
    """n URLs queued and decided, then one checkpoint: the raw executemany rate; then the
    load of those n decisions, which is where building each row's record shows."""
    state = CrawlState.open(path, fingerprint="bench", start_url=url_of(0), resume=False)
    for i in range(n):
        state.queued(url_of(i), 1, None)
    for i in range(n):
        state.decided(url_of(i), 404, "http_error", "HTTP 404", 1, url_of(i // 20))
    t = time.perf_counter()
    state.checkpoint()
    seconds = time.perf_counter() - t
    state.close()
    t = time.perf_counter()
    with CrawlState.open(path, fingerprint="bench", start_url=url_of(0), resume=True) as state:
        assert sum(1 for _ in state.load().decisions) == n
    return seconds, 2 * n, time.perf_counter() - t


def frontier(path: Path, n: int) -> tuple[float, float]:
    """n URLs queued and none decided (a crawl killed early): checkpoint and load times."""
    state = CrawlState.open(path, fingerprint="bench", start_url=url_of(0), resume=False)
    for i in range(n):
        state.queued(url_of(i), 1 + i % 5, url_of(i // 20))
    t = time.perf_counter()
    state.checkpoint()
    write = time.perf_counter() - t
    state.close()
    t = time.perf_counter()
    with CrawlState.open(path, fingerprint="bench", start_url=url_of(0), resume=True) as state:
        snap = state.load()
        assert len(snap.queued) == n
    return write, time.perf_counter() - t


def hot_path(path: Path, n: int) -> tuple[float, float, float]:
    """Microseconds per queued(), decided() and listed() call, URLs prebuilt."""
    urls = [url_of(i) for i in range(n)]
    lastmod = to_micros(datetime(2024, 1, 1, tzinfo=UTC))
    with CrawlState.open(path, fingerprint="bench", start_url=urls[0], resume=False) as state:
        t = time.perf_counter()
        for url in urls:
            state.queued(url, 2, urls[0])
        queued = (time.perf_counter() - t) / n * 1e6
        t = time.perf_counter()
        for url in urls:
            state.decided(url, 200, "noindex", "", 2, urls[0])
        decided = (time.perf_counter() - t) / n * 1e6
        t = time.perf_counter()
        for i, url in enumerate(urls):
            state.listed(Listing(url, url, 200, "", 2, urls[0], lastmod, None, None, i))
        listed = (time.perf_counter() - t) / n * 1e6
    return queued, decided, listed


def load(path: Path) -> tuple[float, float, int, int]:
    t = time.perf_counter()
    # The crawl ended with finish(), as the engine's does; a resume would refuse it.
    state = CrawlState.open(
        path, fingerprint="bench", start_url=url_of(0), resume=True, reopen_finished=True
    )
    opened = time.perf_counter() - t
    snap = state.load()
    decisions = sum(1 for _ in snap.decisions)
    listings = sum(1 for _ in snap.listings)
    seconds = time.perf_counter() - t
    state.close()
    return opened, seconds, decisions, listings + len(snap.seen) + len(snap.bodies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=1_000_000, help="URLs to crawl")
    n = parser.parse_args().n
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "crawl.state"
        queued, decided, listed = hot_path(Path(tmp) / "hot.state", min(n, 200_000))
        print(
            f"hot path: queued() {queued:.2f} µs, decided() {decided:.2f} µs, "
            f"listed() {listed:.2f} µs"
        )
        record, write, rows, ops = crawl(path, n)
        size = os.path.getsize(path)
        print(f"crawl of {n:,} URLs, {ops:,} recorded operations, {rows:,} rows written")
        print(f"  recording: {record:.2f} s, {record / ops * 1e6:.2f} µs per operation")
        print(
            f"  checkpoints (every {DEFAULT_CHECKPOINT_OPS:,} ops): {write:.2f} s, "
            f"{rows / write:,.0f} rows/s, "
            f"{n / write:,.0f} URLs/s"
        )
        print(f"  file: {size / 1e6:.1f} MB ({size / n:.0f} bytes per URL)")
        opened, seconds, decisions, other = load(path)
        print(
            f"resume: open {opened:.2f} s, open + load + read all {decisions:,} decisions "
            f"and the rest ({other:,} rows) {seconds:.2f} s"
        )
        write, read = frontier(Path(tmp) / "frontier.state", n)
        print(
            f"{n:,} queued, none decided: checkpoint {write:.2f} s ({n / write:,.0f} rows/s), "
            f"open + load {read:.2f} s"
        )
        seconds, rows, read = bulk(Path(tmp) / "bulk.state", n)
        print(
            f"one checkpoint of {n:,} queued + decided URLs: {seconds:.2f} s, "
            f"{rows / seconds:,.0f} rows/s; open + load + read all decisions {read:.2f} s"
        )


if __name__ == "__main__":
    main()
