"""Shared fixtures: the official XSDs (read from the shared test data, tests/procs.py's
`shared`: $SITEMAP_CRAWLER_SHARED/schemas, default ../shared/schemas) and live local servers."""

from __future__ import annotations

import asyncio
import fcntl
import gzip
import importlib.util
import os
import shutil
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web
from hypothesis import settings
from lxml import etree

from tests.procs import BUILD_VARIABLE, SHARED_VARIABLE, missing, shared

# a timing never decides a test: hypothesis' 200 ms deadline per example would, on a busy
# machine or beside the other xdist workers
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

#: The most test processes `-n auto` starts (pyproject's addopts). A test mostly waits on
#: its own children (a crawl and its worker, a server, chromium), which want a core each
#: too: more processes than cores, or more than four, only make each test slower.
MOST_TEST_PROCESSES = 4


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under tests/test_compiled.py (BUILD_VARIABLE set), the modules tested are the compiled
    ones, or the run would pass while testing the checkout's Python."""
    build = os.environ.get(BUILD_VARIABLE)
    if build and not hasattr(session.config, "workerinput"):  # once: in xdist's controller
        import subprocess

        import crawler
        from crawler.compiled import compiled
        from tests.procs import CLI, REPO, child_env

        where = Path(crawler.__file__).parent.parent
        if not compiled() or where != Path(build):
            raise pytest.UsageError(f"{BUILD_VARIABLE}={build}, but the crawl imported {where}")
        child = subprocess.run(  # a child started in the checkout, as many tests start one
            [*CLI, "--version"], env=child_env(), cwd=REPO, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
        if not child.stdout.strip().endswith("(compiled)"):
            ran = f"{child.stdout!r} (exit {child.returncode}: {child.stderr.strip()[-300:]})"
            raise pytest.UsageError(f"{BUILD_VARIABLE}={build}, but a child runs {ran}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under tests/test_compiled.py, a test marked `interpreted` is skipped: it replaces a
    compiled module's function or constant (compiled callers bind theirs when compiled), or
    reads its source, which only the checkout's Python can show."""
    if not os.environ.get(BUILD_VARIABLE):
        return
    skip = pytest.mark.skip(reason="replaces or reads a module's Python: not the compiled build")
    for item in items:
        if item.get_closest_marker("interpreted") is not None:
            item.add_marker(skip)


@pytest.hookimpl(optionalhook=True)  # the suite still runs without xdist (-p no:xdist)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """As many test processes as this process may use cores (a container's CPU quota
    counted), up to MOST_TEST_PROCESSES."""
    from crawler.shell.pool import default_workers

    return max(1, min(default_workers() + 1, MOST_TEST_PROCESSES))


@pytest.fixture
def a_browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Rendering's tests: playwright and Debian's chromium (skipped without them, failed in
    CI), one such test at a time. Rendering judges a page on timing, as a crawl must: a
    quiet network, a scroll's requests beginning. Two rendering tests at once on two cores
    starve each other's chromium past those waits (an infinite scroll judged finished early:
    seen under -n 2, and with three such tests run at once). They take turns across the
    test processes, as they did when the suite ran in one."""
    if importlib.util.find_spec("playwright") is None or shutil.which("chromium") is None:
        missing(
            "playwright and Debian's chromium (pip install -e '.[dev]'; apt-get install chromium)"
        )
    shared = tmp_path_factory.getbasetemp().parent  # one folder for every test process
    with open(shared / "one-browser.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


# obstore, without AWS credentials, asks the EC2 instance metadata service (169.254.169.254):
# never from a test (the upload refuses before the crawl with this set; child processes too)
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"


class Xsd:
    """Validates sitemap files against the official schemas; .gz files are decompressed."""

    def __init__(self, schemas: Path) -> None:
        if not (schemas / "sitemap.xsd").is_file():
            raise RuntimeError(f"no sitemap.xsd in {schemas} (set {SHARED_VARIABLE})")
        load = lambda name: etree.XMLSchema(etree.parse(str(schemas / name)))  # noqa: E731
        self.urlset_schema = load("sitemap.xsd")
        self.index_schema = load("siteindex.xsd")
        self.extensions_schema = load("sitemap-with-extensions.local.xsd")

    @staticmethod
    def parse(source: Path | bytes) -> etree._ElementTree:
        data = source if isinstance(source, bytes) else Path(source).read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        return etree.ElementTree(etree.fromstring(data))

    def _check(self, schema: etree.XMLSchema, source: Path | bytes) -> etree._ElementTree:
        tree = self.parse(source)
        if not schema.validate(tree):
            raise AssertionError(f"{source!s:.200} is invalid: {schema.error_log}")
        return tree

    def urlset(self, source: Path | bytes) -> etree._ElementTree:
        """Validate with sitemap.xsd, or the extensions wrapper when foreign tags are used."""
        tree = self.parse(source)
        foreign = any(
            isinstance(el.tag, str) and not el.tag.startswith("{http://www.sitemaps.org/")
            for el in tree.iter()
        )
        return self._check(self.extensions_schema if foreign else self.urlset_schema, source)

    def index(self, source: Path | bytes) -> etree._ElementTree:
        return self._check(self.index_schema, source)

    def any(self, source: Path | bytes) -> etree._ElementTree:
        """Validate a urlset or an index, whichever the root says."""
        root = self.parse(source).getroot()
        return self.index(source) if root.tag.endswith("sitemapindex") else self.urlset(source)


@pytest.fixture(scope="session")
def schemas_dir() -> Path:
    return shared("schemas")


@pytest.fixture(scope="session")
def xsd(schemas_dir: Path) -> Xsd:
    return Xsd(schemas_dir)


class LiveServer:
    """An aiohttp app served on 127.0.0.1 from a background thread with its own loop.

    A thread (not the test's loop) so tests can run the real, blocking CLI against it.
    """

    def __init__(self, app: web.Application, ssl_context: ssl.SSLContext | None = None) -> None:
        self.app = app
        self.ssl_context = ssl_context  # HTTPS with this server certificate
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.runner = web.AppRunner(self.app, access_log=None, handler_cancellation=True)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=self.ssl_context)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.runner.cleanup())
        self.loop.close()

    def start(self) -> LiveServer:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("test server did not start")
        return self

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"{'https' if self.ssl_context else 'http'}://127.0.0.1:{self.port}"


@pytest.fixture
def serve() -> Iterator[Callable[..., LiveServer]]:
    """serve(app) starts app on 127.0.0.1:<free port>; stopped after the test.
    serve(app, ssl_context) serves HTTPS with that context's certificate."""
    servers: list[LiveServer] = []

    def start(app: web.Application, ssl_context: ssl.SSLContext | None = None) -> LiveServer:
        server = LiveServer(app, ssl_context).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def crawl(tmp_path, capsys, xsd):
    """crawl(start, *args, out=None) -> (exit code, Published | None, stdout, stderr): the
    real CLI in this process, every sitemap it publishes validated against the XSD. Test
    modules with other needs define their own `crawl`."""
    from crawler.cli import main
    from tests.sites import read_published

    def run(start: str, *args: str, out: Path | None = None):
        out = out or tmp_path / "out"
        code = main(["crawl", start, "-o", str(out), *args])
        captured = capsys.readouterr()
        published = read_published(out, xsd) if out.exists() and code == 0 else None
        return code, published, captured.out, captured.err

    return run
