"""The second run of a nightly crawl (issue #14): conditional requests against a full re-crawl.

Run: python3 bench/incremental_bench.py --pages 20000 [--compiled]

--compiled crawls from this checkout's compiled wheel (build_support/local.py: what `pip
install .` and the container image install, #26), built once into bench/.build/; without
it, from the checkout's Python, as an editable install runs.

Serves the generated bench site (bench/gen_site.py) with nginx (bench/serve.sh), which sends
an ETag and a Last-Modified for every page and answers 304 to a request whose validators
still match, as most web servers do for static files. Then, with one state file:

* a full crawl without --state (the crawl as it was before the history),
* a full re-crawl with ``--state --fresh`` (every page fetched, the history rewritten),
* the second run: the same crawl from the history the previous run left, every page
  asked for with If-None-Match / If-Modified-Since, the site unchanged,
* again: one more unchanged night, after the unchanged one: the nightly job's common night,
  published as the job publishes it, over the set the night before published (a copy of the
  second run's folder: the stable layout reads it and keeps every part); every other run
  publishes into an empty folder,
* the rebuilt night: every file of the site given a new time, as a site rebuilt from the
  same sources, so every page answers 200 with its content unchanged, from the same history;
  every page must answer 200 and the published files must be those of the second run, byte
  for byte (no lastmod moved by the rebuild), or the bench exits 1. (So an --ours-arg that
  publishes files with times in them, e.g. the changes feed, fails it; and a page without
  main text would move by design, its Last-Modified all it has: the bench site has none.)

the last four in turn for --runs rounds. For each run: wall seconds, pages/s (pages met
over wall time, start-up included), bytes received (the sum of nginx's $bytes_sent over the
run: headers and bodies), the 304s, and the state file's size per 1,000 URLs it holds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # crawler, not installed
from crawl_bench import HERE, ensure_site, ours_command, ours_env, run_measured

from crawler.core.lastmod import STAMP_SLACK


@dataclass(slots=True)
class Run:
    kind: str
    wall_s: float
    cpu_s: float
    pages: int
    listed: int
    not_modified: int
    requests: int
    bytes_received: int
    state_bytes: int
    state_urls: int

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall_s if self.wall_s else 0.0

    @property
    def state_kb_per_1000(self) -> float:
        return self.state_bytes / 1024 / self.state_urls * 1000 if self.state_urls else 0.0


def _serve(site: Path, port: int, action: str, log: Path | None = None) -> None:
    env = {**os.environ, **({"SERVE_ACCESS_LOG": str(log)} if log is not None else {})}
    done = subprocess.run(["bash", str(HERE / "serve.sh"), action, str(site), str(port)], env=env)
    if done.returncode != 0:
        raise SystemExit(f"serve.sh {action} failed")


def _received(log: Path, since: int) -> tuple[int, int]:
    """Requests and bytes sent by nginx after offset `since` of its access log."""
    requests = sent = 0
    with log.open("rb") as f:
        f.seek(since)
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                requests += 1
                sent += int(parts[1])
    return requests, sent


def _state_size(state: Path) -> tuple[int, int]:
    if not state.exists():
        return 0, 0
    size = sum(
        p.stat().st_size for p in state.parent.glob(state.name + "*") if not p.name.endswith("lock")
    )
    conn = sqlite3.connect(state)
    try:
        (urls,) = conn.execute("SELECT count(*) FROM urls").fetchone()
    finally:
        conn.close()
    return size, urls


def crawl(
    kind: str,
    url: str,
    work: Path,
    state: Path,
    log: Path,
    extra: list[str],
    over: Path | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    """One run of `kind`, published into an empty folder, or over a copy of `over`."""
    out = work / kind
    shutil.rmtree(out, ignore_errors=True)
    if over is not None:
        shutil.copytree(over, out)
    report = work / f"{kind}.json"
    cmd = [*ours_command(), "crawl", url, "-o", str(out), "--quiet"]
    cmd += ["--report", str(report), "--max-shrink", "1", *extra]
    if kind != "no-state":
        cmd += ["--state", str(state)]
    if kind == "full":
        cmd.append("--fresh")
    since = log.stat().st_size if log.exists() else 0
    usage = run_measured(cmd, Path.cwd(), env or ours_env(False), 3600, work / f"{kind}.log")
    if usage.returncode != 0:
        raise SystemExit(f"{kind}: exit {usage.returncode}; see {work / kind}.log")
    figures = json.loads(report.read_text())
    requests, sent = _received(log, since)
    size, urls = _state_size(state) if kind != "no-state" else (0, 0)
    return Run(
        kind, usage.wall_s, usage.cpu_s, figures["pages_fetched_this_run"],
        figures["urls_listed"], figures.get("pages_not_modified", 0), requests, sent, size, urls,
    )  # fmt: skip


def rebuild(site: Path) -> float:
    """Give every file the site serves one new time (its ETag and Last-Modified change with
    it, its content does not), and return it: later than any the files have, so that every
    ETag changes, and five seconds ago, as a Last-Modified within STAMP_SLACK of its
    answer's Date is the server stamping its answers (crawler.core.lastmod), not a
    rebuild's file time."""
    files = [p for p in (site / "www").rglob("*") if p.is_file()]
    when = max(max(p.stat().st_mtime for p in files) + 1, time.time() - 5)
    for path in files:
        os.utime(path, (when, when))
    return when


def same_files(a: Path, b: Path) -> bool:
    """Whether two published folders hold the same files, byte for byte."""
    names = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    if names != sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()):
        return False
    return all((a / n).read_bytes() == (b / n).read_bytes() for n in names)


def show(run: Run) -> str:
    return (
        f"{run.kind:>9}: {run.wall_s:6.1f} s wall, {run.cpu_s:6.2f} s CPU, "
        f"{run.pages_per_s:7,.0f} pages/s, {run.listed:,} listed, {run.not_modified:,} x 304, "
        f"{run.requests:,} requests, {run.bytes_received / 1e6:8.1f} MB received"
        + (
            f", state {run.state_bytes / 1e6:.1f} MB"
            f" = {run.state_kb_per_1000:.0f} KB per 1,000 URLs"
            if run.state_urls
            else ""
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--page-kb", type=int, default=15)
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument(
        "--runs", type=int, default=2, help="rounds of full, second, again and rebuilt runs"
    )
    parser.add_argument("--ours-arg", action="append", default=[], help="extra crawl argument")
    parser.add_argument(
        "--compiled", action="store_true", help="crawl from the checkout's compiled wheel"
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs: at least 1")
    origin = f"http://127.0.0.1:{args.port}"
    site, _ = ensure_site(args.pages, args.seed, args.page_kb, origin)
    env = ours_env(args.compiled)
    build = (
        "the compiled wheel (as `pip install .` and the image install it)"
        if args.compiled
        else "the checkout's Python (an editable install's; --compiled: the wheel users get)"
    )
    print(f"ours: {build}; {env}")
    work = HERE / ".env" / "incremental"  # git-ignored, as every run folder
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log, state = work / "access.log", work / "state.sqlite"
    # serve.sh start keeps an nginx of its own already running on this port (one started by
    # hand, maybe serving another site), which writes no access log of ours: crawl() counts
    # the bytes received from `log`. Stopped first (stop touches only that one instance).
    _serve(site, args.port, "stop")
    _serve(site, args.port, "start", log)
    try:
        url = origin + "/"
        runs = [crawl("no-state", url, work, state, log, args.ours_arg, env=env)]
        print(show(runs[-1]), flush=True)
        unmoved = []  # each rebuilt night: its files the same as the second run's
        for _ in range(args.runs):
            for kind in ("full", "second", "again", "rebuilt"):
                if kind == "rebuilt":  # nginx restarted, as by a deploy: its
                    # open_file_cache keeps the times of the files it has open (60 s),
                    # which still answered 304 for them
                    when = rebuild(site)
                    _serve(site, args.port, "stop")
                    _serve(site, args.port, "start", log)
                    time.sleep(max(0.0, when + STAMP_SLACK + 1 - time.time()))
                over = work / "second" if kind == "again" else None  # (the job's way)
                runs.append(crawl(kind, url, work, state, log, args.ours_arg, over, env))
                print(show(runs[-1]), flush=True)
            second, rebuilt = runs[-3], runs[-1]
            unmoved.append(
                rebuilt.not_modified == 0
                and rebuilt.pages == second.pages
                and same_files(work / "second", work / "rebuilt")
            )
    finally:
        _serve(site, args.port, "stop")
    print("\nmedians:")
    for kind in ("no-state", "full", "second", "again", "rebuilt"):
        mine = [r for r in runs if r.kind == kind]
        wall = statistics.median(r.wall_s for r in mine)
        cpu = statistics.median(r.cpu_s for r in mine)
        rate = statistics.median(r.pages_per_s for r in mine)
        received = statistics.median(r.bytes_received for r in mine)
        line = (
            f"  {kind:>9}: {wall:6.1f} s, {cpu:6.2f} s CPU, {rate:7,.0f} pages/s,"
            f" {received / 1e6:7.1f} MB"
        )
        if kind != "no-state":
            per = statistics.median(r.state_kb_per_1000 for r in mine)
            line += f", state {per:.0f} KB per 1,000 URLs"
        print(line)
    print(ratio_line(runs))
    print(ratio_line(runs, "again"))
    print(f"measured: {build}")
    said = "yes" if all(unmoved) else f"NO, in {unmoved.count(False)} of {len(unmoved)}"
    print(f"rebuilt nights: every page a 200, the second run's files published: {said}")
    return 0 if all(unmoved) else 1


#: #26's aim: a full night with history at least this many times an unchanged night's CPU
AIM = 5.0


def ratio_line(runs: list[Run], kind: str = "second") -> str:
    """#26's figure: a full night with history against the unchanged (304) night, in CPU:
    the first after a full one (`second`, into an empty folder), or one after another
    (`again`, published over the night before's set, as the job does). The medians,
    and the least of each: on a machine shared with other work, load only adds CPU time
    (contention for the cores and their caches), so the least of several runs is the
    steadier figure when the medians move by more than a change measured. Then each
    round's own ratio (its full night and its unchanged one run minutes apart, while the
    machine's speed drifts over a run), their median and how many fall under the aim."""
    full = [r.cpu_s for r in runs if r.kind == "full"]
    second = [r.cpu_s for r in runs if r.kind == kind]
    if not full or not second or min(second) <= 0:
        return f"ratio: no full and {kind} runs to compare"
    mid_full, mid_second = statistics.median(full), statistics.median(second)
    rounds = [f / s for f, s in zip(full, second, strict=False)]  # (in the order run)
    night = (
        "unchanged night"
        if kind == "second"
        else "unchanged night after one, over its set (the job's)"
    )
    return (
        f"CPU, full night / {night}: medians {mid_full:.2f} / {mid_second:.2f} s ="
        f" {mid_full / mid_second:.2f}x; least {min(full):.2f} / {min(second):.2f} s ="
        f" {min(full) / min(second):.2f}x; by round: median {statistics.median(rounds):.2f}x"
        f" ({min(rounds):.2f}x to {max(rounds):.2f}x, {sum(r < AIM for r in rounds)} of"
        f" {len(rounds)} under) (the aim, #26: {AIM:g}x)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
