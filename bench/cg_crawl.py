"""Run `sitemap-crawler` under callgrind with the checkpoint timer out of the way.

Under callgrind a crawl runs about 50 times slower, so the state's time-based checkpoint
(every few seconds) would fire every few pages and the count would measure checkpoints, not
the crawl. This raises it to 1e9 s: checkpoints then come by operations only, as on a real
night. Everything else is the CLI as installed (or as PYTHONPATH names it).

Run (the 304 night of a 3,000-page site, from a copy of a state a full night wrote):
    env -u PYTHONDONTWRITEBYTECODE PYTHONHASHSEED=0 PYTHONPATH=CODE \\
        valgrind --tool=callgrind --callgrind-out-file=OUT python3 bench/cg_crawl.py \\
        crawl http://127.0.0.1:18766/ -o DIR --state S.sqlite --workers 0 --max-shrink 1
Precompile CODE's bytecode first (`python -m compileall -q crawler sitemap_out` with
PYTHONDONTWRITEBYTECODE unset), or the count includes compiling every module.
"""

from __future__ import annotations

import runpy
import sys

from crawler.shell import state

open_state = state.CrawlState.open.__func__  # type: ignore[attr-defined]
open_state.__kwdefaults__ = {**open_state.__kwdefaults__, "checkpoint_seconds": 1e9}
sys.argv = ["crawler.cli", *sys.argv[1:]]
runpy.run_module("crawler.cli", run_name="__main__")
