"""What the sitemap extensions cost a crawl: pages/s on the bench site with images and
hreflang alternates on every page, this code against the code before (issue #15: under 10%).

Run: python3 bench/ext_bench.py --before /path/to/checkout-before [--pages 20000 --runs 3]

The site is gen_site.py's with --media (9 to 12 images per page in every source form, an
og:image, a two-page hreflang cluster per page), served by serve.sh's nginx. Each round runs
every configuration once, the order reversed every other round, each crawl a fresh process
at its defaults (`sitemap-crawler crawl URL -o DIR --quiet --report FILE`) with PYTHONPATH
naming the code: `before` (the given checkout), `after` (this one) and `after --no-images`.
pages/s is the crawl's own figure from its report (requests over the crawl's seconds). Prints
every run and the medians; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from crawl_bench import ENV, ensure_site, ours_command, run_measured, serve  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout of the old code")
    parser.add_argument("--pages", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=8795)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument(
        "--plain", action="store_true", help="the bench site without --media (no images)"
    )
    args = parser.parse_args(argv)
    origin = f"http://127.0.0.1:{args.port}"
    site, expected = ensure_site(args.pages, 1, 15, origin, media=not args.plain)
    base = ours_command()
    configs = {
        "before": (args.before.resolve(), []),
        "after": (HERE.parent, []),
        "after --no-images": (HERE.parent, ["--no-images"]),
    }
    figures: dict[str, list[float]] = {name: [] for name in configs}
    cpu: dict[str, list[float]] = {name: [] for name in configs}
    serve(site, args.port, "start")
    try:
        for rnd in range(args.runs):
            names = list(configs) if rnd % 2 == 0 else list(reversed(configs))
            for name in names:
                code, extra = configs[name]
                work = ENV / "ext-bench" / name.replace(" ", "")
                if work.exists():
                    shutil.rmtree(work)
                work.mkdir(parents=True)
                report = work / "report.json"
                cmd = [*base, "crawl", origin + "/", "-o", str(work / "out"), "--quiet"]
                cmd += ["--report", str(report), *extra]
                usage = run_measured(
                    cmd, HERE, {"PYTHONPATH": str(code)}, args.timeout, work / "log.txt"
                )
                data = json.loads(report.read_text())
                pps = data["pages_per_second"]
                figures[name].append(pps)
                cpu[name].append(usage.cpu_s)
                print(
                    f"round {rnd + 1} {name:<18} {pps:>7.1f} pages/s  wall {usage.wall_s:6.1f} s"
                    f"  cpu {usage.cpu_s:6.1f} s  rss {usage.peak_rss_mb:6.0f} MB  listed "
                    f"{data['urls_listed']}/{len(expected)}  images {data.get('images', {})}",
                    flush=True,
                )
    finally:
        serve(site, args.port, "stop")
    print()
    before = statistics.median(figures["before"])
    before_cpu = statistics.median(cpu["before"])
    for name, values in figures.items():
        median = statistics.median(values)
        runs = ", ".join(f"{v:.0f}" for v in values)
        print(f"{name:<18} median {median:7.1f} pages/s ({median / before - 1:+.1%})  runs {runs}")
        median = statistics.median(cpu[name])
        runs = ", ".join(f"{v:.1f}" for v in cpu[name])
        print(f"{'':<18} median {median:7.1f} CPU-s ({median / before_cpu - 1:+.1%})  runs {runs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
