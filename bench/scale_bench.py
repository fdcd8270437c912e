"""A million-page crawl end to end, plain and nightly (with --state), features as shipped.

Run: python3 bench/scale_bench.py --pages 1000000 --page-kb 2 --port 48765 --nice

Generates (or reuses) the bench site (bench/gen_site.py, in bench/.sites/ as crawl_bench.py
names it), serves it with nginx (bench/serve.sh) and runs, in order, the crawls --runs names:

* ``plain``: ``sitemap-crawler crawl URL -o DIR`` at its defaults (no state);
* ``state``: the same with ``--state FILE`` from no state file, the nightly job's first night
  (every page fetched in full, its history written);
* ``second``: the next night from that state file, the site unchanged (every page a 304).

For each: wall seconds, CPU seconds (user + system of the process tree), peak RSS and PSS of
the process tree (crawl_bench.py's ``run_measured``), and the tree's RSS over the run (a
sample every few seconds: flat after the start is the design, a line that climbs with the
pages crawled is memory held per page), the load average before and after (the figures are
taken on a shared machine), the pages listed against the generator's expected list, the
sitemap files and their bytes, each file validated against the official XSDs, and the state
file's size. Figures are printed, nothing is judged pass or fail.

The expected list (a million URLs) is read and the sitemaps validated in a child process
after each crawl, never in this one: a crawl's ``ru_maxrss`` starts from the RSS of the
process that spawned it (Linux carries it across exec), so this process stays small.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crawl_bench import (
    ENV,
    HERE,
    NOT_PAGES,
    SITES,
    Usage,
    _descendants,
    _pss_kb,
    _rss_kb,
    ours_command,
    ours_found,
    run_measured,
    serve,
)
from incremental_bench import _state_size

RUNS = ("plain", "state", "second")
SAMPLE_EVERY_S = 5.0
#: the crawl's progress line in a log, every 10 s (crawler/shell/progress.py)
PROGRESS = re.compile(r"(\d+) fetched, .*?(\d+(?::\d\d)+) elapsed")


@dataclass(slots=True)
class Curve:
    """The crawl's process-tree memory over its run, sampled from this process."""

    samples: list[tuple[float, float, float]] = field(default_factory=list)  # s, RSS MB, PSS MB
    _done: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        started = time.perf_counter()
        me = os.getpid()
        while not self._done.wait(SAMPLE_EVERY_S):
            tree = [p for p in _descendants(me) if p != me]
            rss = sum(_rss_kb(p) for p in tree) / 1024
            pss = sum(_pss_kb(p) for p in tree) / 1024
            self.samples.append((time.perf_counter() - started, rss, pss))

    def stop(self) -> None:
        self._done.set()

    def deciles(self, log: Path) -> str:
        """Tree RSS at each tenth of the run, beside the pages fetched by then (the crawl's
        progress lines in its log), so memory that climbs with the pages crawled shows."""
        if not self.samples:
            return "  -"
        progress = [
            (_seconds(m[2]), int(m[1])) for m in PROGRESS.finditer(log.read_text(errors="replace"))
        ]
        n = len(self.samples)
        lines = []
        for i in sorted({min(n - 1, max(0, round(n * k / 10) - 1)) for k in range(1, 11)}):
            t, rss, pss = self.samples[i]  # a short run has fewer than ten samples
            fetched = max((f for s, f in progress if s <= t), default=0)
            lines.append(
                f"  {t:8.0f} s {fetched:>9,} fetched  RSS {rss:7.0f} MB  PSS {pss:7.0f} MB"
            )
        return "\n".join(lines)


def _seconds(clock: str) -> float:
    total = 0
    for part in clock.split(":"):
        total = total * 60 + int(part)
    return total


@dataclass(slots=True, frozen=True)
class Checked:
    """What the child process found in a published folder (see `check`)."""

    found: int
    expected: int
    missing: int
    extra: int
    files: int
    sitemap_bytes: int
    valid: bool
    problem: str


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def ensure_site(pages: int, seed: int, page_kb: int, origin: str) -> Path:
    """The site folder, generated in a child process when missing (see the module's doc)."""
    site = SITES / f"p{pages}-s{seed}-kb{page_kb}"
    manifest = site / "site.json"
    if manifest.exists():
        meta = json.loads(manifest.read_text())
        if meta.get("origin") == origin and meta.get("pages") == pages:
            return site
    shutil.rmtree(site, ignore_errors=True)
    print(f"generating {pages:,} pages into {site} ...", file=sys.stderr, flush=True)
    cmd = [sys.executable, str(HERE / "gen_site.py"), "--pages", str(pages), "--out", str(site)]
    cmd += ["--seed", str(seed), "--page-kb", str(page_kb), "--origin", origin]
    subprocess.run(cmd, check=True)
    return site


def crawl_command(kind: str, url: str, out: Path, state: Path, nice: bool, extra: list[str]):
    base = ours_command()
    cmd = [*(["nice", "-n", "19"] if nice else []), *base, "crawl", url, "-o", str(out)]
    cmd += ["--report", str(out.parent / f"{kind}.json"), *extra]  # progress lines: the curve
    if kind != "plain":
        cmd += ["--state", str(state)]
    return cmd


def check(out: Path, expected_file: Path) -> Checked:
    """Run in a child process: the published URLs against the expected list, each file valid."""
    sys.path.insert(0, str(HERE.parent))
    from tests.conftest import Xsd
    from tests.procs import shared

    expected = set(expected_file.read_text().split())
    if not out.is_dir():
        return Checked(0, len(expected), len(expected), 0, 0, 0, False, "nothing published")
    found = {u for u in ours_found(out.parent) if not NOT_PAGES.search(u)}
    files = sorted(p for p in out.iterdir() if p.name.startswith("sitemap"))
    xsd = Xsd(shared("schemas"))
    problem = ""
    for path in files:
        if path.suffix in (".xml", ".gz"):
            try:
                xsd.any(path)
            except AssertionError as e:
                problem = str(e)[:300]
                break
    return Checked(
        len(found & expected), len(expected), len(expected - found), len(found - expected),
        len(files), sum(p.stat().st_size for p in files), not problem, problem,
    )  # fmt: skip


def checked_in_child(out: Path, expected_file: Path) -> Checked:
    done = subprocess.run(
        [sys.executable, __file__, "--check", str(out), str(expected_file)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        return Checked(0, 0, 0, 0, 0, 0, False, done.stderr.strip().splitlines()[-1:][0])
    return Checked(**json.loads(done.stdout))


def show(kind: str, usage: Usage, curve: Curve, log: Path, loads: tuple[str, str],
         report: dict, checked: Checked, state: tuple[int, int]) -> None:  # fmt: skip
    listed = report.get("urls_listed", 0)
    fetched = report.get("pages_fetched_this_run", 0)
    print(f"\n{kind}: exit {usage.returncode}, load average {loads[0]} before, {loads[1]} after")
    print(
        f"  wall {usage.wall_s:,.1f} s ({fetched / usage.wall_s if usage.wall_s else 0:,.0f} "
        f"pages/s), CPU {usage.cpu_s:,.1f} s ({1e6 * usage.cpu_s / max(fetched, 1):,.0f} us a "
        f"page), peak RSS {usage.peak_rss_mb:,.1f} MB, peak PSS {usage.peak_pss_mb:,.1f} MB"
    )
    print(f"  the process tree's memory at each tenth of the run:\n{curve.deciles(log)}")
    print(
        f"  pages fetched {fetched:,}, 304s {report.get('pages_not_modified', 0):,}, "
        f"listed {listed:,}; found {checked.found:,} of {checked.expected:,} expected, "
        f"{checked.missing:,} missing, {checked.extra:,} extra"
    )
    print(
        f"  sitemap: {checked.files} files, {checked.sitemap_bytes / 1e6:,.1f} MB, "
        f"{'valid (XSD)' if checked.valid else 'INVALID: ' + checked.problem}"
    )
    size, urls = state
    if urls:
        print(
            f"  state file {size / 1e6:,.1f} MB, {urls:,} URLs: "
            f"{size / 1024 / urls * 1000:,.0f} KB per 1,000 URLs"
        )


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["--check"]:
        print(json.dumps(dataclasses.asdict(check(Path(sys.argv[2]), Path(sys.argv[3])))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--page-kb", type=int, default=2, help="page size: KB to 2*KB")
    parser.add_argument("--port", type=int, default=48765)
    parser.add_argument("--runs", default=",".join(RUNS), help=f"comma-separated, of {RUNS}")
    parser.add_argument("--nice", action="store_true", help="run the crawls under nice -n 19")
    parser.add_argument("--ours-arg", action="append", default=[], help="extra crawl argument")
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds per crawl")
    parser.add_argument("--work", type=Path, default=ENV / "scale", help="the runs' folder")
    parser.add_argument("--delete-site", action="store_true", help="remove the site at the end")
    args = parser.parse_args(argv)
    kinds = [k for k in args.runs.split(",") if k]
    if set(kinds) - set(RUNS):
        parser.error(f"--runs: unknown {sorted(set(kinds) - set(RUNS))}")
    origin = f"http://127.0.0.1:{args.port}"
    site = ensure_site(args.pages, args.seed, args.page_kb, origin)
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    state = work / "state.sqlite"
    started_here = not (ENV / f"nginx-{args.port}" / "nginx.pid").exists()
    serve(site, args.port, "start")
    print(f"site: {site}, {os.cpu_count()} CPUs, {origin}/, runs {', '.join(kinds)}", flush=True)
    try:
        for kind in kinds:
            out = work / ("plain" if kind == "plain" else "nightly") / "out"
            out.parent.mkdir(exist_ok=True)
            cmd = crawl_command(kind, origin + "/", out, state, args.nice, args.ours_arg)
            curve = Curve()
            sampler = threading.Thread(target=curve.run, daemon=True)
            before = load()
            sampler.start()
            log = work / f"{kind}.log"
            usage = run_measured(cmd, HERE.parent, {}, args.timeout, log)
            curve.stop()
            sampler.join()
            after = load()
            report_file = out.parent / f"{kind}.json"
            report = json.loads(report_file.read_text()) if report_file.exists() else {}
            checked = checked_in_child(out, site / "expected.txt")
            sizes = _state_size(state) if kind != "plain" else (0, 0)
            show(kind, usage, curve, log, (before, after), report, checked, sizes)
            sys.stdout.flush()
    finally:
        if started_here:
            serve(site, args.port, "stop")
        if args.delete_site:
            shutil.rmtree(site, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
