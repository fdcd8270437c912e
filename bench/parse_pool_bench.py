"""What `crawler.parse_pool.ParsePool` saves the parent process, per page (issue #6).

The crawl is bound by the event loop's core, so the figure that matters is *parent CPU per page*
(time.process_time in the parent): inline extract_page costs it the whole parse; the pool should
cost it only the round trip. Three views, each printed, nothing asserted:

1. idle parent: 64 extract calls in flight and nothing else to do. Throughput here is the
   workers' speed; parent CPU is inflated because the loop sleeps and wakes for each answer.
2. busy parent: every call first burns --work-us of parent CPU, standing in for aiohttp's
   request path (~45% of a core at 2,100 pages/s is ~215 us a page). Answers then arrive in
   batches, as they do in a real crawl; "overhead" is CPU per page minus that work.
3. --fetch: a real aiohttp fetch loop against a private nginx on 127.0.0.1 (bench/serve.sh)
   serving a 23 KB page, each body parsed inline or by the pool.

Run: python3 bench/parse_pool_bench.py [--pages N] [--rounds R] [--fetch]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extract_bench import PAGE_URL, make_page

from crawler.extract import extract_page
from crawler.parse_pool import ParsePool

HERE = Path(__file__).resolve().parent
CT = "text/html; charset=utf-8"
Extract = Callable[[bytes, str | None, str], Awaitable[object]]


def burn(us: float) -> None:
    """Spend ``us`` microseconds of this process's CPU (not wall time: preemption must not
    count as work done)."""
    if us <= 0:
        return
    end = time.process_time() + us / 1e6
    while time.process_time() < end:
        pass


def workers_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) the worker processes have used so far."""
    ticks = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


Row = tuple[float, float, float]  # pages/s, parent CPU us/page, workers' CPU us/page


async def measure(
    fn: Extract, page: bytes, pages: int, concurrency: int, work_us: float, pids: list[int]
) -> Row:
    """Figures with ``concurrency`` calls in flight."""

    async def caller(count: int) -> None:
        for _ in range(count):
            burn(work_us)
            await fn(page, CT, PAGE_URL)

    per = pages // concurrency
    wall, cpu, wcpu = time.perf_counter(), time.process_time(), workers_cpu(pids)
    await asyncio.gather(*(caller(per) for _ in range(concurrency)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    wcpu = workers_cpu(pids) - wcpu
    done = per * concurrency
    return done / wall, cpu / done * 1e6, wcpu / done * 1e6


def print_rows(rows: dict[str, list[Row]], work_us: float | None) -> None:
    extra = f" {'overhead':>9s}" if work_us is not None else ""
    print(f"{'case':28s} {'pages/s':>9s} {'parent us/page':>15s} {'workers us/page':>16s}{extra}")
    for name, results in rows.items():
        rate, cpu, wcpu = (statistics.median(r[i] for r in results) for i in range(3))
        tail = f" {cpu - work_us:9.1f}" if work_us is not None else ""
        print(f"{name:28s} {rate:9,.0f} {cpu:15.1f} {wcpu:16.1f}{tail}")


async def inline(body: bytes, content_type: str | None, url: str) -> object:
    return extract_page(body, content_type, url)


async def run_cases(args: argparse.Namespace, page: bytes, work_us: float) -> None:
    cases: list[tuple[str, int, str]] = [("inline extract_page", 0, "")]
    for n in (1, 2):
        cases += [
            (f"ParsePool({n}).extract", n, "extract"),
            (f"ParsePool({n}).extract_raw", n, "raw"),
        ]
    rows: dict[str, list[Row]] = {name: [] for name, _, _ in cases}
    for _ in range(args.rounds):
        for workers in (0, 1, 2):
            if workers == 0:
                rows[cases[0][0]].append(
                    await measure(inline, page, args.pages, args.concurrency, work_us, [])
                )
                continue
            async with ParsePool(workers) as pool:
                await measure(pool.extract, page, 640, args.concurrency, 0, [])  # warm up
                for name, n, kind in cases:
                    if n != workers:
                        continue
                    fn = pool.extract if kind == "extract" else pool.extract_raw
                    rows[name].append(
                        await measure(fn, page, args.pages, args.concurrency, work_us, pool.pids)
                    )
    print_rows(rows, work_us)


async def rebuild_cost(page: bytes) -> None:
    async with ParsePool(1) as pool:
        raw = await pool.extract_raw(page, CT, PAGE_URL)
    n = 20000
    for name, fn in (
        ("RawPage.page_data() (Link objects)", raw.page_data),
        ("RawPage.followable()", raw.followable),
    ):
        start = time.process_time()
        for _ in range(n):
            fn()
        print(f"  {name:36s} {(time.process_time() - start) / n * 1e6:6.1f} us")


# --- end to end: aiohttp fetch loop against nginx -----------------------------------------------


async def fetch_loop(
    url: str, pages: int, concurrency: int, parse: Extract | None, pids: list[int]
) -> Row:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def caller(count: int) -> None:
            for _ in range(count):
                async with session.get(url) as resp:
                    body = await resp.read()
                    content_type = resp.headers.get("Content-Type")
                if parse is not None:
                    await parse(body, content_type, url)

        per = pages // concurrency
        await caller(10)
        wall, cpu, wcpu = time.perf_counter(), time.process_time(), workers_cpu(pids)
        await asyncio.gather(*(caller(per) for _ in range(concurrency)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        wcpu = workers_cpu(pids) - wcpu
    done = per * concurrency
    return done / wall, cpu / done * 1e6, wcpu / done * 1e6


async def run_fetch(args: argparse.Namespace, page: bytes) -> None:
    site = HERE / ".sites" / "parse-pool-bench"
    (site / "www").mkdir(parents=True, exist_ok=True)
    (site / "www" / "index.html").write_bytes(page)
    port = str(args.port)
    subprocess.run([str(HERE / "serve.sh"), "start", str(site), port], check=True)
    url = f"http://127.0.0.1:{port}/index.html"
    try:
        rows: dict[str, list[Row]] = {}
        for _ in range(args.rounds):
            for name, workers in (
                ("fetch only (no parse)", -1),
                ("fetch + inline", 0),
                ("fetch + ParsePool(1)", 1),
                ("fetch + ParsePool(2)", 2),
            ):
                if workers < 0:
                    result = await fetch_loop(url, args.pages, args.concurrency, None, [])
                elif workers == 0:
                    result = await fetch_loop(url, args.pages, args.concurrency, inline, [])
                else:
                    async with ParsePool(workers) as pool:
                        result = await fetch_loop(
                            url, args.pages, args.concurrency, pool.extract_raw, pool.pids
                        )
                rows.setdefault(name, []).append(result)
        print_rows(rows, None)
    finally:
        subprocess.run([str(HERE / "serve.sh"), "stop", str(site), port], check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=6400, help="pages per case and round")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; medians are printed")
    ap.add_argument("--concurrency", type=int, default=64, help="calls in flight")
    ap.add_argument("--work-us", type=float, default=215.0, help="busy parent: CPU per page")
    ap.add_argument("--fetch", action="store_true", help="also run the aiohttp + nginx loop")
    ap.add_argument("--port", type=int, default=8791, help="nginx port for --fetch")
    args = ap.parse_args()

    page = make_page()
    data = extract_page(page, CT, PAGE_URL)
    print(
        f"page: {len(page):,} bytes, {len(data.links)} links; {os.cpu_count()} CPUs; "
        f"{args.concurrency} calls in flight; medians of {args.rounds} rounds"
    )
    print("\nrebuilding objects from a worker's answer, parent CPU per page:")
    asyncio.run(rebuild_cost(page))
    print("\n1. idle parent (only extract calls):")
    asyncio.run(run_cases(args, page, 0.0))
    print(f"\n2. busy parent ({args.work_us:.0f} us of other CPU work per page):")
    asyncio.run(run_cases(args, page, args.work_us))
    if args.fetch:
        print("\n3. aiohttp fetch loop against nginx on 127.0.0.1 (same cores):")
        asyncio.run(run_fetch(args, page))


if __name__ == "__main__":
    main()
