"""Throughput and peak memory of sitemap_out's writer. Prints figures; asserts nothing.

    python3 bench/writer_bench.py [N]        (default N = 1,000,000)

Each scenario runs in a fresh subprocess so its ``ru_maxrss`` (peak RSS) is its own; the
baseline is a writer that publishes a single URL. URLs/s is end to end: building each
``Entry`` (which validates it), ``add``, and ``publish`` (final copy, fsync, renames).
The async rows compare the two designs considered for ``AsyncSitemapWriter``: batches of
entries handed to the sync writer in a thread (what it does) against aiofiles writing
each ``<url>`` line with its own await (measured on fewer URLs: it is far slower).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap

SCENARIO = textwrap.dedent(
    """
    import asyncio, json, resource, sys, time
    from datetime import UTC, datetime
    from sitemap_out import AsyncSitemapWriter, Entry, SitemapWriter
    from sitemap_out.xml import URLSET_CLOSE, url_element, urlset_open

    kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    base = "https://example.com/"
    lm = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)

    def entries(count, rich=False):
        for i in range(count):
            if rich:
                yield Entry(f"{base}section/{i % 97}/page-{i}.html?ref=a&x={i}",
                            lastmod=lm, changefreq="weekly", priority=0.5)
            else:
                yield Entry(f"{base}section/{i % 97}/page-{i}.html")

    async def batched(count):
        async with AsyncSitemapWriter(out, base) as aw:
            for e in entries(count):
                await aw.add(e)
            await aw.publish()

    async def aiofiles_lines(count):
        import aiofiles
        async with aiofiles.open(out + "/aiofiles.xml", "w") as fh:
            await fh.write(urlset_open())
            for e in entries(count):
                await fh.write(url_element(e))
            await fh.write(URLSET_CLOSE)

    t = time.perf_counter()
    if kind == "baseline":
        with SitemapWriter(out, base) as w:
            w.add(Entry(base + "only"))
            w.publish()
    elif kind in ("plain", "rich", "gzip6", "gzip1", "txt"):
        gz = kind.startswith("gzip")
        with SitemapWriter(out, base, gzip=gz, compresslevel=int(kind[-1]) if gz else 6,
                           fmt="txt" if kind == "txt" else "xml") as w:
            for e in entries(n, rich=kind == "rich"):
                w.add(e)
            res = w.publish()
    elif kind == "async-batched":
        asyncio.run(batched(n))
    elif kind == "async-aiofiles":
        asyncio.run(aiofiles_lines(n))
    elapsed = time.perf_counter() - t
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": elapsed, "rss_mib": rss_mib}))
    """
)


def run(kind: str, n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [sys.executable, "-c", SCENARIO, kind, str(n), out],
            check=True,
            capture_output=True,
            text=True,
        )
    return json.loads(done.stdout)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    base = run("baseline", 1)
    print(f"empty-writer baseline: peak RSS {base['rss_mib']:.1f} MiB")
    print(f"{'scenario':<34} {'URLs':>9} {'URLs/s':>10} {'peak RSS':>10} {'vs base':>9}")
    rows = [
        ("plain xml, gzip off", "plain", n),
        ("xml + lastmod/changefreq/priority", "rich", n),
        ("plain xml, gzip level 6", "gzip6", n),
        ("plain xml, gzip level 1", "gzip1", n),
        ("text format, gzip off", "txt", n),
        ("async: batches to a thread", "async-batched", n),
        ("async: aiofiles, await per URL", "async-aiofiles", max(n // 10, 1)),
    ]
    for label, kind, count in rows:
        r = run(kind, count)
        print(
            f"{label:<34} {count:>9,} {count / r['seconds']:>10,.0f} "
            f"{r['rss_mib']:>7.1f} MiB {r['rss_mib'] - base['rss_mib']:>+7.1f}"
        )


if __name__ == "__main__":
    main()
