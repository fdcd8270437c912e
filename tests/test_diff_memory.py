"""The diff's memory does not grow with the sets (issue #27): both are spooled to SQLite, one
part file's entries in memory at a time. Peak RSS of the real CLI in a child process, on two
published sets of 150,000 URLs; the 1,000,000 vs 1,000,000 figure is bench/diff_bench.py's
(107 to 109 MB, against 104 MB for 100,000 vs 100,000)."""

from __future__ import annotations

import json
import subprocess
from datetime import date

import pytest

from sitemap_out import Entry, SitemapWriter
from tests.procs import CLI, PEAK_RSS_CLI, child_env

BASE = "https://www.example.com"
URLS = 150_000


def _publish(out, numbers: range, moved: bool) -> None:
    with SitemapWriter(out, BASE + "/") as writer:
        writer.add_many(
            Entry(
                f"{BASE}/products/category-{n % 997}/item-{n:09d}.html",
                lastmod=date(2026, 2, 1) if moved and n % 100 == 50 else date(2026, 1, 1),
            )
            for n in numbers
        )
        writer.publish()


@pytest.mark.slow
@pytest.mark.timeout(300)  # 22-28 s alone; a busy machine beside the other test processes
def test_two_large_sets_in_bounded_memory(tmp_path, xsd) -> None:
    cut = URLS // 100
    _publish(tmp_path / "old", range(URLS), moved=False)
    _publish(tmp_path / "new", range(cut, URLS + cut), moved=True)
    xsd.index(tmp_path / "new" / "sitemap.xml")
    xsd.urlset(tmp_path / "new" / "sitemap-1.xml")
    report = tmp_path / "diff.json"
    proc = subprocess.run(
        [CLI[0], "-c", PEAK_RSS_CLI, "diff", str(tmp_path / "old"), str(tmp_path / "new"),
         "-q", "--report", str(report), "--html", str(tmp_path / "diff.html")],
        capture_output=True, text=True, env=child_env(), timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    peak = int(proc.stderr.splitlines()[-1]) * 1024 / 1e6
    summary = json.loads(report.read_text())["summary"]
    assert (summary["removed"], summary["added"]) == (cut, cut)
    assert summary["moved"] == len([n for n in range(cut, URLS) if n % 100 == 50])
    # two Python sets of 300,000 URLs and lastmods would add some 60 MB to this
    assert peak < 135, f"peak RSS {peak:.0f} MB for {URLS:,} vs {URLS:,} URLs"
