"""Time and memory of nightly runs with stable part files (#14), the writer alone.

Run: python3 bench/stable_bench.py --urls 1000000

Three runs into one output folder, each in its own process (so each peak RSS is its own):
a first run (nothing published), an unchanged second run, and a third run with 1% of the
URLs added, 1% removed and 1% given a new lastmod, spread over the whole range. Each run
writes the URLs sorted, as the crawl hands them over, with a lastmod each. Prints each run's
time, peak RSS, the parts rewritten and the changes counted.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sitemap_out import Entry, SitemapWriter

ORIGIN = "http://127.0.0.1:8765/"
BASE = datetime(2026, 1, 1, tzinfo=UTC)


def _urls(count: int, run: int) -> Iterator[tuple[str, datetime]]:
    """(loc, lastmod) in loc order, made as they are written (a list of a million would be
    most of the peak RSS): run 3 drops every 100th URL, adds one beside every 100th (offset
    50, "-new" sorting just before it) and changes the lastmod of every 100th (offset 25)."""
    for n in range(count):
        loc = f"{ORIGIN}page-{n:08d}.html"
        lastmod = BASE + timedelta(minutes=n % 10_000)
        if run == 3:
            if n % 100 == 0:
                continue
            if n % 100 == 25:
                lastmod += timedelta(days=3)
            if n % 100 == 50:
                yield loc.replace(".html", "-new.html"), BASE + timedelta(days=3)
        yield loc, lastmod


def _one(out: Path, count: int, run: int, max_urls: int) -> None:
    started = time.perf_counter()
    with SitemapWriter(
        out, ORIGIN, stable=True, max_urls=max_urls, now=BASE + timedelta(days=run)
    ) as writer:
        read = time.perf_counter() - started
        writer.add_many(Entry(loc, lastmod=lastmod) for loc, lastmod in _urls(count, run))
        result = writer.publish()
    took = time.perf_counter() - started
    changes = result.changes
    assert changes is not None
    print(
        json.dumps(
            {
                "run": run,
                "urls": result.url_count,
                "seconds": round(took, 2),
                "reading_previous": round(read, 2),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "parts": len(result.parts),
                "parts_rewritten": sum(not p.kept for p in result.parts),
                "added": changes.added,
                "removed": changes.removed,
                "changed": changes.changed,
            }
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--max-urls", type=int, default=50_000)
    parser.add_argument("--run", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run:
        _one(args.out, args.urls, args.run, args.max_urls)
        return 0
    print(f"stable bench: {args.urls:,} URLs, {args.max_urls:,} per part")
    with tempfile.TemporaryDirectory(prefix="stable-bench-") as folder:
        for run in (1, 2, 3):
            command = [sys.executable, __file__, "--urls", str(args.urls)]
            command += ["--max-urls", str(args.max_urls), "--run", str(run), "--out", folder]
            line = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            r = json.loads(line)
            print(
                f"run {r['run']}: {r['urls']:,} URLs in {r['seconds']:.2f} s (reading the "
                f"published set {r['reading_previous']:.2f} s), peak RSS {r['peak_rss_mb']} MB; "
                f"{r['parts_rewritten']} of {r['parts']} parts written; "
                f"{r['added']:,} added, {r['removed']:,} removed, {r['changed']:,} changed"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
