"""Peak memory and time of `sitemap-crawler diff` over two large published sets (#27): OLD and
NEW of URLS URLs each, written by the project's writer into two folders (an index and its
50,000-URL parts), NEW with 1% of OLD removed, 1% added and 1% given another lastmod.

    python3 bench/diff_bench.py                     # 1,000,000 vs 1,000,000 URLs
    python3 bench/diff_bench.py --urls 200000 --gzip

The diff is the real CLI in a child process (--report and --html written too); its peak RSS
is its own VmHWM (tests.procs.PEAK_RSS_CLI). Prints the sets' size, the writer's time, and
the diff's seconds (wall and CPU: a busy machine stretches the first), peak MB and the
counts it found.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from sitemap_out import Entry, SitemapWriter  # noqa: E402
from tests.procs import PEAK_RSS_CLI, child_env  # noqa: E402

BASE = "https://www.example.com"


def loc(n: int) -> str:
    return f"{BASE}/products/category-{n % 997}/item-{n:09d}.html"


def publish(out: Path, numbers: range, *, moved: bool, gzip: bool) -> None:
    """Every 100th URL (offset 50) gets another lastmod in NEW."""
    with SitemapWriter(out, BASE + "/", gzip=gzip) as writer:
        writer.add_many(
            Entry(loc(n), lastmod=date(2026, 2, 1) if moved and n % 100 == 50 else date(2026, 1, 1))
            for n in numbers
        )
        writer.publish()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--gzip", action="store_true")
    args = parser.parse_args()
    n, cut = args.urls, args.urls // 100
    with tempfile.TemporaryDirectory(prefix="diff-bench-") as tmp:
        folder = Path(tmp)
        started = time.monotonic()
        publish(folder / "old", range(n), moved=False, gzip=args.gzip)
        publish(folder / "new", range(cut, n + cut), moved=True, gzip=args.gzip)
        size = sum(p.stat().st_size for p in folder.rglob("sitemap*")) / 1e6
        print(f"sets: {n:,} vs {n:,} URLs, {size:.0f} MB on disk, written in "
              f"{time.monotonic() - started:.1f} s")  # fmt: skip
        report = folder / "diff.json"
        command = [sys.executable, "-c", PEAK_RSS_CLI, "diff", str(folder / "old"),
                   str(folder / "new"), "-q", "--report", str(report),
                   "--html", str(folder / "diff.html")]  # fmt: skip
        started = time.monotonic()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(command, capture_output=True, text=True, env=child_env())
        seconds = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        if proc.returncode != 0:
            sys.exit(f"diff failed ({proc.returncode}): {proc.stderr}")
        peak = int(proc.stderr.splitlines()[-1]) * 1024 / 1e6
        summary = json.loads(report.read_text())["summary"]
        html = (folder / "diff.html").stat().st_size / 1e6
        print(
            f"diff: {seconds:.1f} s ({cpu:.1f} s of CPU), peak RSS {peak:.0f} MB; "
            f"removed {summary['removed']:,}, added {summary['added']:,}, "
            f"moved {summary['moved']:,}, unchanged "
            f"{summary['unchanged']:,}; report {report.stat().st_size / 1e6:.1f} MB, "
            f"html {html:.1f} MB"
        )


if __name__ == "__main__":
    main()
