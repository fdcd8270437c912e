"""The crawl's transports side by side: aiohttp's HttpTransport against the lean HTTP/1.1
client (crawler.shell.http1), on the bench site served by nginx; print the figures.

Run: PYTHONPATH=$PWD .venv/bin/python bench/transport_bench.py --pages 5000 --port 18765

Each round fetches the same N pages through one transport, `--concurrency` requests in
flight (the crawl's default, 8), as full 200s ("full") and as 304s ("304": the pages asked
conditionally with the ETag and Last-Modified nginx gave in an untimed first pass). The
transports alternate A B B A round after round, so the machine's drift falls on both.

Figures: CPU µs a request, user + system time of this process (nginx runs in its own
processes and is not counted: the figure is the client's cost), and requests a second of
wall time (noisy on a shared machine; CPU decides). Nothing else runs in the process:
no parse, no throttle, only `get()` and the loop.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from crawl_bench import ensure_site, serve  # noqa: E402

from crawler.core.validators import Validators  # noqa: E402
from crawler.shell.fetch import HttpTransport  # noqa: E402
from crawler.shell.http1 import LeanTransport  # noqa: E402

KINDS: dict[str, Callable[..., HttpTransport | LeanTransport]] = {
    "aiohttp": HttpTransport,
    "lean": LeanTransport,
}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _fetch_all(
    kind: str,
    urls: list[str],
    concurrency: int,
    validators: dict[str, Validators] | None,
) -> tuple[float, float, int, dict[str, Validators]]:
    """(cpu s, wall s, errors, validators seen) of fetching every url once."""
    transport = KINDS[kind](
        user_agent="transport-bench", concurrency=concurrency, timeout=30, max_bytes=10 << 20
    )
    seen: dict[str, Validators] = {}
    errors = 0
    queue = iter(urls)

    async def worker() -> None:
        nonlocal errors
        for url in queue:
            asked = validators.get(url) if validators is not None else None
            resp = await transport.get(url, None, asked)
            if resp.error or resp.status not in (200, 304):
                errors += 1
            elif validators is None:
                headers = resp.headers
                seen[url] = Validators(headers.get("ETag"), headers.get("Last-Modified"))

    async with transport:
        gc.collect()
        cpu, wall = _cpu(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        cpu, wall = _cpu() - cpu, time.perf_counter() - wall
    return cpu, wall, errors, seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=5000, help="requests a round")
    parser.add_argument("--site-pages", type=int, default=20000, help="the bench site's size")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--page-kb", type=int, default=15)
    parser.add_argument("--port", type=int, default=18765)
    parser.add_argument("--rounds", type=int, default=4, help="ABBA: each kind once a round")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--keep-serving", action="store_true", help="leave nginx running")
    args = parser.parse_args(argv)

    origin = f"http://127.0.0.1:{args.port}"
    site, expected = ensure_site(args.site_pages, args.seed, args.page_kb, origin)
    urls = sorted(u for u in expected if u.startswith(origin))[: args.pages]
    serve(site, args.port, "start")
    try:
        _, _, errors, validators = asyncio.run(_fetch_all("lean", urls, args.concurrency, None))
        if errors:
            print(f"warning: {errors} errors in the first pass", file=sys.stderr)
        figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for rnd in range(args.rounds):
            order = ["aiohttp", "lean"] if rnd % 2 == 0 else ["lean", "aiohttp"]
            for mode in ("full", "304"):
                for kind in order:
                    asked = validators if mode == "304" else None
                    cpu, wall, errors, _ = asyncio.run(
                        _fetch_all(kind, urls, args.concurrency, asked)
                    )
                    per = 1e6 * cpu / len(urls)
                    rate = len(urls) / wall
                    figures.setdefault((mode, kind), []).append((per, rate))
                    print(
                        f"round {rnd + 1} {mode:>4} {kind:>7}: {per:6.0f} µs CPU a request, "
                        f"{rate:6.0f} requests/s, {errors} errors",
                        flush=True,
                    )
        print(f"\nmedians over {args.rounds} rounds of {len(urls)} requests:")
        for mode in ("full", "304"):
            old = statistics.median(p for p, _ in figures[(mode, "aiohttp")])
            new = statistics.median(p for p, _ in figures[(mode, "lean")])
            old_rate = statistics.median(r for _, r in figures[(mode, "aiohttp")])
            new_rate = statistics.median(r for _, r in figures[(mode, "lean")])
            print(
                f"  {mode:>4}: aiohttp {old:5.0f} µs, lean {new:5.0f} µs CPU a request "
                f"({new / old:.2f}x); {old_rate:5.0f} against {new_rate:5.0f} requests/s"
            )
    finally:
        if not args.keep_serving:
            serve(site, args.port, "stop")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
