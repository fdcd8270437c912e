"""Per-URL cost of the robots.txt verdicts a fetched URL gets (#26): ours in the screen, then
googlebot's and bingbot's (``Screen.engine_denial``), on a generated bench site's URLs (plus
one in twenty moved under the disallowed ``/drafts/``) and its robots.txt; prints figures.

Run: python3 bench/robots_verdicts_bench.py [--site bench/.sites/p20000-s1-kb15] [--urls N]
     [--robots FILE] [--once]
``--once`` makes one pass after the warm-up and prints nothing: run it under
``valgrind --tool=callgrind`` at N and at 0 URLs, and divide the difference by 2 N.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from crawler import DEFAULT_USER_AGENT
from crawler.core.decide import TrapBudgets
from crawler.core.robots import parse_robots
from crawler.core.screen import Plan, Screen

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--site", type=Path, default=HERE / ".sites" / "p20000-s1-kb15")
    parser.add_argument("--urls", type=int, default=20000)
    parser.add_argument("--robots", type=Path, help="another robots.txt (default: the site's)")
    parser.add_argument("--once", action="store_true")
    args = parser.parse_args()
    urls = [line.strip() for line in (args.site / "expected.txt").open()]
    urls += [url.replace("/s0", "/drafts/s0", 1) for url in urls[::20]]
    urls = urls[: args.urls]
    screen = Screen(
        Plan.make(urls[0] if urls else "http://127.0.0.1:8793/", None, None),
        user_agent=DEFAULT_USER_AGENT,
        max_url_length=2048,
        max_segment_repeats=3,
        max_depth=-1,
        budgets=TrapBudgets(),
        engines=("googlebot", "bingbot"),
    )
    screen.robots = parse_robots((args.robots or args.site / "www" / "robots.txt").read_bytes())

    def run() -> int:
        allowed = 0
        for url in urls:
            if (
                screen._denied(url, DEFAULT_USER_AGENT) is None
                and screen.engine_denial(url) is None
            ):
                allowed += 1
        return allowed

    allowed = run()  # the warm-up compiles the matchers
    if args.once:
        run()
        return
    best = float("inf")
    for _ in range(7):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    print(
        f"{len(urls)} URLs ({allowed} allowed to all three): "
        f"{best / max(len(urls), 1) * 1e6:.2f} µs a URL for ours + googlebot + bingbot (best of 7)"
    )


if __name__ == "__main__":
    main()
