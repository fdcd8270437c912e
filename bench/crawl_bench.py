"""Crawl a generated site with sitemap-crawler and its peers in one run; print the figures.

Run: python3 bench/crawl_bench.py --pages 20000

Generates (or reuses) bench/.sites/p<N>-s<seed>-kb<kb>/, serves it with bench/serve.sh (nginx
on 127.0.0.1) and crawls it with each tool, alternating tools round by round so that a
machine's drift (thermal, page cache, a neighbour) spreads over all of them rather than
landing on one. For each run it prints pages found vs expected, wall seconds, pages/s, CPU
seconds and peak RSS, then per-tool medians and the ratios of ours to each peer.

How each figure is taken, so the comparison is fair:

* wall: from spawning the tool's process to its exit, so start-up and writing output count.
* CPU: user + system time of the process and every descendant it waited for (``wait4``).
* peak RSS: the larger of the biggest single process (``ru_maxrss``) and the peak of the
  whole process tree's summed RSS, sampled every 50 ms from /proc (a crawler that parses in
  a worker process pays for both).
* peak PSS: the peak of the process tree's summed proportional set size (/proc/PID/
  smaps_rollup), sampled with the RSS. Summed RSS counts a page shared by several processes
  (code a forked worker shares with its parent) once per process; PSS splits it between
  them, so for a tree it is the memory the tool really holds. For one process the two differ
  only by its share of shared libraries.
* found: read from each tool's own output (our sitemap files, spider-rs's links list,
  Scrapy's crawled-page log, wget's log), compared to the generator's expected list (every
  page robots.txt allows). "extra" counts URLs a tool reported outside that list: a
  disallowed page there means robots.txt was not obeyed.

Peers: spider-rs (``@spider-rs/spider-rs@0.0.157`` from npm, in bench/peers/node_modules),
Scrapy (pip, in the venv bench/.env/venv) and ``wget --spider -r``; each is installed on first
use when missing, and a peer that cannot be installed is reported and skipped.
"""

from __future__ import annotations

import argparse
import compileall
import functools
import gzip
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from lxml import etree

HERE = Path(__file__).resolve().parent
PEERS = HERE / "peers"
ENV = HERE / ".env"
VENV = ENV / "venv"
SITES = HERE / ".sites"
#: The origin the sites are generated for by default (--port 8765): their folders keep the
#: plain name
DEFAULT_ORIGIN = "http://127.0.0.1:8765"
SPIDER_RS_PACKAGE = "@spider-rs/spider-rs@0.0.157"
ALL_TOOLS = ("ours", "spider-rs", "scrapy", "wget")
NOT_PAGES = re.compile(r"/robots\.txt$|\.css$")
SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


class BenchError(Exception):
    """The bench could not set up a site, a server or a tool."""


@dataclass(slots=True, frozen=True)
class Usage:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    peak_pss_mb: float
    returncode: int


@dataclass(slots=True, frozen=True)
class RunResult:
    tool: str
    round: int
    usage: Usage
    found: int
    expected: int
    missing: int
    extra: int
    extra_sample: tuple[str, ...] = ()
    missing_sample: tuple[str, ...] = ()

    @property
    def pages_per_s(self) -> float:
        return self.found / self.usage.wall_s if self.usage.wall_s else 0.0


@dataclass(slots=True)
class Tool:
    """A crawler to bench: how to run it on url writing into work, how to read what it found."""

    name: str
    command: Callable[[str, Path], list[str]]
    found: Callable[[Path], set[str]]
    cwd: Path = HERE
    env: dict[str, str] = field(default_factory=dict)


# --- measuring a process tree -----------------------------------------------------------------


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError, IndexError):
        return 0


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _descendants(pid: int) -> list[int]:
    """pid and every process below it, through /proc/<pid>/task/<tid>/children."""
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children", "rb") as f:
                    stack.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return out


@functools.cache
def _compiled() -> None:
    """Our sources compiled once, as an installed package has them: a machine that sets
    PYTHONDONTWRITEBYTECODE (this one does) would otherwise have every measured run compile
    the project again (about 0.3 CPU-s, counted as the crawl's); the variable stops writing
    .pyc files, not reading them."""
    for package in ("crawler", "sitemap_out"):
        compileall.compile_dir(HERE.parent / package, quiet=1)


def run_measured(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: float, log: Path
) -> Usage:
    """Run cmd to completion (or timeout) and measure its wall, CPU and peak RSS, our
    sources compiled first (_compiled)."""
    _compiled()
    peak_tree_kb = peak_pss_kb = 0
    done = threading.Event()
    with log.open("wb") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )

        def sample() -> None:
            nonlocal peak_tree_kb, peak_pss_kb
            while not done.wait(0.05):
                tree = _descendants(proc.pid)
                peak_tree_kb = max(peak_tree_kb, sum(_rss_kb(p) for p in tree))
                peak_pss_kb = max(peak_pss_kb, sum(_pss_kb(p) for p in tree))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        try:
            _, status, rusage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
            done.set()
        wall = time.perf_counter() - started
        sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    peak_kb = max(peak_tree_kb, rusage.ru_maxrss)
    return Usage(
        wall, rusage.ru_utime + rusage.ru_stime, peak_kb / 1024, peak_pss_kb / 1024,
        proc.returncode,
    )  # fmt: skip


# --- what each tool found ---------------------------------------------------------------------


def _sitemap_locs(path: Path) -> list[str]:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    if path.suffix == ".txt":
        return data.decode().split()
    root = etree.fromstring(data, etree.XMLParser(huge_tree=True))
    locs = [el.text.strip() for el in root.iter(f"{SITEMAP_NS}loc") if el.text]
    if root.tag == f"{SITEMAP_NS}sitemapindex":
        urls: list[str] = []
        for loc in locs:
            urls.extend(_sitemap_locs(path.parent / loc.rsplit("/", 1)[1]))
        return urls
    return locs


def ours_found(work: Path) -> set[str]:
    out = work / "out"
    for name in ("sitemap.xml", "sitemap.txt"):
        if (out / name).exists():
            return set(_sitemap_locs(out / name))
    return set()


def lines_found(name: str) -> Callable[[Path], set[str]]:
    def found(work: Path) -> set[str]:
        try:
            return {u.split("#", 1)[0] for u in (work / name).read_text().split()}
        except OSError:
            return set()

    return found


WGET_LINE = re.compile(r" URL: ?(\S+) ")


def wget_found(work: Path) -> set[str]:
    try:
        text = (work / "wget.log").read_text(errors="replace")
    except OSError:
        return set()
    return set(WGET_LINE.findall(text))


# --- peers: install on first use --------------------------------------------------------------


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def setup_spider_rs() -> Tool | None:
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None:
        _say("spider-rs: node is not installed; skipped (apt-get install nodejs npm)")
        return None
    if not (PEERS / "node_modules" / "@spider-rs" / "spider-rs").exists():
        if npm is None:
            _say("spider-rs: npm is not installed; skipped")
            return None
        _say(f"spider-rs: npm install {SPIDER_RS_PACKAGE} in {PEERS}")
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=PEERS, check=False)
        if done.returncode != 0:
            _say("spider-rs: npm install failed; skipped")
            return None
    return Tool(
        "spider-rs",
        lambda url, work: [node, str(PEERS / "spider_rs.mjs"), url, str(work / "links.txt")],
        lines_found("links.txt"),
        cwd=PEERS,
    )


def setup_scrapy() -> Tool | None:
    scrapy = VENV / "bin" / "scrapy"
    if not scrapy.exists():
        _say(f"scrapy: creating {VENV} and pip-installing scrapy (kept out of the main env)")
        made = subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=False)
        pip = VENV / "bin" / "pip"
        if (
            made.returncode != 0
            or subprocess.run([str(pip), "install", "-q", "scrapy"], check=False).returncode
        ):
            _say("scrapy: could not be installed; skipped")
            return None
    spider = str(PEERS / "scrapy_spider.py")
    return Tool(
        "scrapy",
        lambda url, work: [
            str(scrapy),
            "runspider",
            spider,
            "-a",
            f"start={url}",
            "-a",
            f"out={work / 'pages.txt'}",
            "-s",
            "LOG_LEVEL=WARNING",
        ],
        lines_found("pages.txt"),
        cwd=PEERS,
    )


def _apt_install(package: str) -> bool:
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run([*sudo, "apt-get", "update", "-qq"], check=False, env=env)
    return (
        subprocess.run(
            [*sudo, "apt-get", "install", "-y", "-qq", package], check=False, env=env
        ).returncode
        == 0
    )


def setup_wget() -> Tool | None:
    wget = shutil.which("wget")
    if wget is None and _apt_install("wget"):
        wget = shutil.which("wget")
    if wget is None:
        _say("wget: not installed and could not be installed; skipped")
        return None
    # --spider -r still downloads every HTML page (to a temp file it deletes) to find links;
    # wget obeys robots.txt in recursive mode and stays on the start host without -H.
    return Tool(
        "wget",
        lambda url, work: [
            wget,
            "--spider",
            "-r",
            "-l",
            "inf",
            "-nv",
            "-e",
            "robots=on",
            "-o",
            str(work / "wget.log"),
            "-P",
            str(work / "files"),
            url,
        ],
        wget_found,
    )


def ours_command() -> list[str]:
    """How to run sitemap-crawler as users run it: the console command of this Python's
    environment (found beside its interpreter when the environment is not activated), else
    one on PATH, else `python -m crawler.cli`. The way matters: at glibc's default malloc
    thresholds the two ways churned the heap differently (bench/README.md, "the C heap").
    PYTHONPATH still picks the tree either way."""
    beside = Path(sys.executable).with_name("sitemap-crawler")
    exe = str(beside) if beside.is_file() else shutil.which("sitemap-crawler")
    return [exe] if exe else [sys.executable, "-m", "crawler.cli"]


def compiled_build() -> Path:
    """This checkout's compiled wheel, unpacked (build_support/local.py, as `pip install .`
    and the container image build it): built once for each state of the sources and each
    interpreter, into bench/.build/<their digest>-<the interpreter's tag>. --compiled runs
    our crawl from it."""
    sys.path.insert(0, str(HERE.parent))
    try:
        from build_support.local import build_unpacked, digest
    finally:
        sys.path.remove(str(HERE.parent))
    work = HERE / ".build" / f"{digest(HERE.parent)}-{sys.implementation.cache_tag}"
    unpacked = work / "build"
    if not unpacked.is_dir():
        print(f"building the compiled wheel into {work} (about a minute)", flush=True)
        build_unpacked(HERE.parent, work)
    return unpacked


def ours_env(compiled: bool) -> dict[str, str]:
    """PYTHONPATH for our crawl: a PYTHONPATH already set (e.g. a worktree's), then this
    checkout; with `compiled`, this checkout's compiled wheel before both."""
    path = [str(compiled_build())] if compiled else []
    path += [*filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)), str(HERE.parent)]
    env = {"PYTHONPATH": os.pathsep.join(path)}
    if compiled:  # a build that fell back to Python, or another interpreter's, would not say so
        version = subprocess.run(
            [*ours_command(), "--version"], env={**os.environ, **env}, cwd=HERE,
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip
        if not version.endswith("(compiled)"):
            raise SystemExit(f"--compiled: the crawl runs {version or 'nothing'!r}, not compiled")
    return env


def setup_ours(concurrency: int, extra: list[str], compiled: bool = False) -> Tool:
    base = ours_command()
    return Tool(
        "ours",
        lambda url, work: [
            *base,
            "crawl",
            url,
            "-o",
            str(work / "out"),
            "--concurrency",
            str(concurrency),
            "--quiet",
            "--report",
            str(work / "report.json"),
            *extra,
        ],
        ours_found,
        env=ours_env(compiled),
    )


# --- site and server --------------------------------------------------------------------------


def ensure_site(
    pages: int, seed: int, page_kb: int, origin: str, media: bool = False
) -> tuple[Path, list[str]]:
    """The site folder and its expected URL list, generating the site when needed. `media`:
    the pages also carry images and hreflang alternates (gen_site.py --media). The origin
    is baked into the pages, so a site for another port than the default one has a folder
    of its own: two benches on two ports no longer regenerate each other's site."""
    sys.path.insert(0, str(HERE))
    from gen_site import SiteSpec, generate, read_manifest

    port = "" if origin == DEFAULT_ORIGIN else f"-port{urlsplit(origin).port}"
    site = SITES / f"p{pages}-s{seed}-kb{page_kb}{'-media' if media else ''}{port}"
    manifest = read_manifest(site)
    spec = SiteSpec(pages, seed, origin, page_kb, media)
    if manifest is None or manifest.get("origin") != origin or manifest.get("pages") != pages:
        _say(f"generating {pages} pages into {site} ...")
        if site.exists():
            shutil.rmtree(site)
        manifest = generate(spec, site)
        _say(f"  done in {manifest['generated_in_s']} s")
    expected = (site / "expected.txt").read_text().split()
    return site, expected


def serve(site: Path, port: int, action: str) -> None:
    done = subprocess.run(["bash", str(HERE / "serve.sh"), action, str(site), str(port)])
    if done.returncode != 0:
        raise BenchError(f"serve.sh {action} failed")


# --- profile ----------------------------------------------------------------------------------


def profile_ours(tool: Tool, url: str, work: Path, top: int) -> None:
    """Record our crawl with py-spy and print the functions with the most own (self) time."""
    pyspy = shutil.which("py-spy")
    if pyspy is None:
        _say("profile: py-spy not found (pip install py-spy); skipped")
        return
    raw = work / "profile.txt"
    shutil.rmtree(work / "out", ignore_errors=True)
    cmd = [pyspy, "record", "--format", "raw", "--function", "--subprocesses", "-r", "250"]
    cmd += ["-o", str(raw)]
    subprocess.run([*cmd, "--", *tool.command(url, work)], check=False, capture_output=True)
    own: dict[str, int] = {}
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        leaf = stack.rsplit(";", 1)[-1]
        own[leaf] = own.get(leaf, 0) + n
    print(f"\npy-spy profile of our crawl: top {top} functions by own time ({total} samples)")
    for name, n in sorted(own.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {100 * n / total:5.1f}%  {name}")


# --- the bench --------------------------------------------------------------------------------


def bench_once(
    tool: Tool, url: str, work: Path, expected: set[str], rnd: int, timeout: float
) -> RunResult:
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    usage = run_measured(tool.command(url, work), tool.cwd, tool.env, timeout, work / "log.txt")
    found = {u for u in tool.found(work) if not NOT_PAGES.search(u)}
    hit = found & expected
    extra = sorted(found - expected)
    missing = sorted(expected - found)
    return RunResult(
        tool.name, rnd, usage, len(hit), len(expected), len(missing), len(extra),
        tuple(extra[:3]), tuple(missing[:3]),
    )  # fmt: skip


def row(r: RunResult) -> str:
    u = r.usage
    flag = "" if u.returncode == 0 else f"  exit {u.returncode}"
    return (
        f"{r.tool:<10} {r.round:>5} {r.found:>7}/{r.expected:<7} {r.missing:>7} {r.extra:>6} "
        f"{u.wall_s:>8.2f} {r.pages_per_s:>9.0f} {u.cpu_s:>8.2f} {u.peak_rss_mb:>8.1f} "
        f"{u.peak_pss_mb:>8.1f}{flag}"
    )


HEADER = (
    f"{'tool':<10} {'round':>5} {'found/expected':>15} {'missing':>7} {'extra':>6} "
    f"{'wall s':>8} {'pages/s':>9} {'CPU s':>8} {'RSS MB':>8} {'PSS MB':>8}"
)


def summarise(results: list[RunResult]) -> None:
    by_tool: dict[str, list[RunResult]] = {}
    for r in results:
        by_tool.setdefault(r.tool, []).append(r)
    print("\nmedians per tool")
    print(
        f"{'tool':<10} {'runs':>4} {'pages/s':>9} {'wall s':>8} {'CPU s':>8} {'RSS MB':>8} "
        f"{'PSS MB':>8}",
        "found",
    )
    med: dict[str, tuple[float, float, float]] = {}
    for tool, rs in by_tool.items():
        pps = statistics.median(r.pages_per_s for r in rs)
        rss = statistics.median(r.usage.peak_rss_mb for r in rs)
        pss = statistics.median(r.usage.peak_pss_mb for r in rs)
        wall = statistics.median(r.usage.wall_s for r in rs)
        cpu = statistics.median(r.usage.cpu_s for r in rs)
        found = ", ".join(f"{r.found}/{r.expected}" for r in rs)
        print(
            f"{tool:<10} {len(rs):>4} {pps:>9.0f} {wall:>8.2f} {cpu:>8.2f} {rss:>8.1f} "
            f"{pss:>8.1f}  {found}"
        )
        med[tool] = (pps, rss, pss)
    if "ours" in med:
        ours_pps, ours_rss, ours_pss = med["ours"]
        print("\nratios (ours / peer): pages/s, peak RSS, peak PSS")
        for tool, (pps, rss, pss) in med.items():
            if tool != "ours" and pps and rss:
                speed, memory = ours_pps / pps, ours_rss / rss
                shared = ours_pss / pss if pss else float("nan")
                print(
                    f"  vs {tool:<10} speed x{speed:5.2f}   memory x{memory:5.2f} (RSS), "
                    f"x{shared:5.2f} (PSS)"
                )
        exact = all(r.missing == 0 and r.extra == 0 for r in by_tool["ours"])
        print(f"\nours found exactly the expected pages in every run: {'yes' if exact else 'NO'}")
    for r in results:
        if r.extra_sample or r.missing_sample:
            print(
                f"  {r.tool} round {r.round}: missing e.g. {list(r.missing_sample)}, "
                f"extra e.g. {list(r.extra_sample)}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--page-kb", type=int, default=15, help="page size: KB to 2*KB")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--runs", type=int, default=2, help="rounds; each tool runs once a round")
    parser.add_argument(
        "--tools", default=",".join(ALL_TOOLS), help=f"comma-separated subset of {ALL_TOOLS}"
    )
    parser.add_argument(
        "--once", default="scrapy", help="tools run in the first round only (slow ones)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=8, help="our --concurrency (default: ours, 8)"
    )
    parser.add_argument("--ours-arg", action="append", default=[], help="extra argument for ours")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds allowed per run")
    parser.add_argument("--profile", action="store_true", help="then py-spy our crawl once")
    parser.add_argument("--keep-serving", action="store_true", help="leave nginx running")
    parser.add_argument(
        "--compiled", action="store_true", help="ours from the checkout's compiled wheel"
    )
    args = parser.parse_args(argv)

    tools_wanted = [t for t in args.tools.split(",") if t]
    unknown = set(tools_wanted) - set(ALL_TOOLS)
    if unknown:
        parser.error(f"unknown tools: {sorted(unknown)}")
    once = set(args.once.split(","))
    origin = f"http://127.0.0.1:{args.port}"
    url = origin + "/"
    site, expected_list = ensure_site(args.pages, args.seed, args.page_kb, origin)
    expected = set(expected_list)

    setups: dict[str, Callable[[], Tool | None]] = {
        "ours": lambda: setup_ours(args.concurrency, args.ours_arg, args.compiled),
        "spider-rs": setup_spider_rs,
        "scrapy": setup_scrapy,
        "wget": setup_wget,
    }
    tools = [t for name in tools_wanted if (t := setups[name]()) is not None]

    pidfile = ENV / f"nginx-{args.port}" / "nginx.pid"
    started_here = not pidfile.exists()
    serve(site, args.port, "start")
    results: list[RunResult] = []
    print(f"site: {site} ({len(expected)} expected pages), {os.cpu_count()} CPUs, {url}")
    print(HEADER, flush=True)
    try:
        for rnd in range(1, args.runs + 1):
            order = tools if rnd % 2 else tools[::-1]
            for tool in order:
                if rnd > 1 and tool.name in once:
                    continue
                work = ENV / "runs" / tool.name
                result = bench_once(tool, url, work, expected, rnd, args.timeout)
                results.append(result)
                print(row(result), flush=True)
        summarise(results)
        if args.profile:
            ours = next((t for t in tools if t.name == "ours"), None)
            if ours is not None:
                profile_ours(ours, url, ENV / "runs" / "profile", 15)
    finally:
        if started_here and not args.keep_serving:
            serve(site, args.port, "stop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
