"""Time the end-of-crawl pass over the listings: the spool's external sort and the writer.

Run: python3 bench/spool_bench.py --listings 1000000

Listings of the shape a crawl makes (about 40-character URLs, a lastmod and a body key) are
added to a `Spool` in a shuffled order, as pages finish in any order; then the spool is read
back once in loc order (what ranking twins costs), and once more into a `SitemapWriter`
through `Listing.entry()` (what publishing costs). Prints the time of each step and the peak
RSS above the baseline, which the run gathered in memory bounds (crawler.shell.listings).
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawler.shell.listings import RUN_SIZE, Listing, Spool
from sitemap_out import SitemapWriter

ORIGIN = "http://127.0.0.1:8765/"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listings", type=int, default=100_000)
    parser.add_argument("--run-size", type=int, default=RUN_SIZE)
    args = parser.parse_args(argv)
    count = args.listings
    order = list(range(count))
    random.Random(1).shuffle(order)
    baseline = _peak_mb()
    with tempfile.TemporaryDirectory(prefix="spool-bench-") as folder:
        spool = Spool(Path(folder), run_size=args.run_size)
        started = time.perf_counter()
        for n in order:
            url = f"{ORIGIN}section-{n % 97}/page-{n}.html"
            spool.add(Listing(url, url, 200, "", 4, None, 1_600_000_000_000_000 + n, None, None, n))
        added = time.perf_counter() - started

        started = time.perf_counter()
        read = sum(1 for _ in spool)
        merged = time.perf_counter() - started
        assert read == count

        writer = SitemapWriter(Path(folder) / "out", ORIGIN)
        started = time.perf_counter()
        writer.add_many(listing.entry() for listing in spool)
        written = time.perf_counter() - started
        writer.abort()
        spool.close()
    runs = -(-count // args.run_size)
    print(f"spool bench: {count:,} listings in {runs} runs of {args.run_size:,}")
    print(f"add (sort and spill)     {added:6.2f} s  {count / added:10,.0f} listings/s")
    print(f"one pass in loc order    {merged:6.2f} s  {count / merged:10,.0f} listings/s")
    print(f"pass, Entry and writer   {written:6.2f} s  {count / written:10,.0f} listings/s")
    print(f"peak RSS {_peak_mb():.1f} MB (baseline {baseline:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
