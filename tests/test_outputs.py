"""Every output path checked before the first request (issue #17): an output folder that is a
file or lies under one, a report, decisions or state path that is a folder or lies under a
file, two options naming one file each exit 2 with one line naming the path, and a second run
writing to the same output folder or state file exits 75 (busy); the server sees no request
and the published sitemap is untouched. A missing folder is created up front."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from crawler.cli import main
from crawler.shell.outputs import OUTPUT_FILES
from tests.procs import Watched, unwritable, wait_for
from tests.sites import Site, crawl_process, html, read_published, tree_site

PREVIOUS = b'<?xml version="1.0"?><urlset><!-- previously published --></urlset>\n'


@pytest.fixture
def site(serve):
    site = Site({"/": html("/a"), "/a": html()})
    site.url = serve(site.app).url + "/"  # type: ignore[attr-defined]
    return site


@pytest.fixture
def published(tmp_path) -> Path:
    """An output folder holding a previously published sitemap."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "sitemap.xml").write_bytes(PREVIOUS)
    return out


def _refused(capsys, site, *args: str, code: int = 2) -> str:
    """Run the crawl, which must be refused before its first request (exit `code`): its one
    line."""
    got = main(["crawl", site.url, "-q", *args])
    err = capsys.readouterr().err
    assert got == code, err
    assert err.startswith("sitemap-crawler: ") and err.count("\n") == 1, err
    assert site.requests == [], "a refused run made requests"
    return err


def test_an_output_folder_that_is_a_file(site, tmp_path, capsys):
    out = tmp_path / "sitemap.xml"
    out.write_bytes(PREVIOUS)
    err = _refused(capsys, site, "-o", str(out))
    assert f"output folder {out} is a file, not a folder" in err
    assert out.read_bytes() == PREVIOUS


def test_an_output_folder_under_a_file(site, tmp_path, capsys):
    blocker = tmp_path / "notes"
    blocker.write_text("keep me")
    err = _refused(capsys, site, "-o", str(blocker / "out"))
    assert f"output folder {blocker / 'out'}: {blocker} is a file, not a folder" in err
    assert blocker.read_text() == "keep me"


@pytest.mark.parametrize("key", OUTPUT_FILES)
def test_a_file_path_that_is_a_folder(site, published, tmp_path, capsys, key):
    folder = tmp_path / f"{key}-folder"
    folder.mkdir()
    err = _refused(capsys, site, "-o", str(published), f"--{key}", str(folder))
    assert f"{key} file {folder} is a folder, not a file" in err
    assert (published / "sitemap.xml").read_bytes() == PREVIOUS
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("key", OUTPUT_FILES)
def test_a_file_path_under_a_file(site, published, tmp_path, capsys, key):
    blocker = tmp_path / "notes"
    blocker.write_text("keep me")
    path = blocker / "deeper" / f"{key}.out"
    err = _refused(capsys, site, "-o", str(published), f"--{key}", str(path))
    assert f"{key} file {path}: {blocker} is a file, not a folder" in err
    assert (published / "sitemap.xml").read_bytes() == PREVIOUS
    assert blocker.read_text() == "keep me"


def test_two_options_naming_one_file(site, published, tmp_path, capsys):
    path = tmp_path / "out.json"
    err = _refused(
        capsys, site, "-o", str(published), "--report", str(path), "--decisions", str(path)
    )
    assert f"decisions file {path} is also the report file" in err
    assert not path.exists()


def test_an_output_folder_that_cannot_be_written(site, published, capsys):
    with unwritable(published):
        err = _refused(capsys, site, "-o", str(published))
    assert f"output folder {published}: cannot write in {published}" in err
    assert (published / "sitemap.xml").read_bytes() == PREVIOUS


def test_a_missing_output_folder_is_created_before_the_first_request(serve, tmp_path, xsd):
    """The output folder exists before the first request (the state's must exist: below)."""
    site = tree_site(20, delay=0.3)
    srv = serve(site.app)
    out, state = tmp_path / "new" / "out", tmp_path / "a" / "crawl.sqlite"
    state.parent.mkdir()
    proc = crawl_process(srv.url + "/", "-o", str(out), "-q", "--state", str(state))
    wait_for(lambda: len(site.requests) >= 1, "the first request", proc=proc)
    assert out.is_dir() and state.is_file()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert len(read_published(out, xsd).locs) == 20


@pytest.mark.parametrize("key", sorted(OUTPUT_FILES))
def test_a_file_in_a_missing_folder_is_refused_and_nothing_is_made(serve, tmp_path, capsys, key):
    """A report (decisions, changes, metrics) or the state file in a folder that does not
    exist is a typo more likely than a wish: exit 2 before any request, and the output
    folder the run would have made is not left behind either (the job makes its own
    folders under --data: test_docker_job)."""
    site = tree_site(3)
    srv = serve(site.app)
    out, path = tmp_path / "out", tmp_path / "nonexistent" / "dir" / f"{key}.out"
    code = main(["crawl", srv.url + "/", "-o", str(out), "-q", f"--{key}", str(path)])
    assert code == 2
    err = capsys.readouterr().err
    assert f"{key} file {path}: no folder {path.parent}" in err and err.count("\n") == 1
    assert site.requests == []
    assert sorted(tmp_path.iterdir()) == []


def test_a_failed_crawl_leaves_no_output_folder_it_made(tmp_path, capsys):
    """Nothing could be fetched (robots.txt unreachable, exit 3): no empty folder of locks."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: connections are refused
    out = tmp_path / "new" / "out"
    assert main(["crawl", f"http://127.0.0.1:{port}/", "-o", str(out), "-q"]) == 3
    assert sorted(tmp_path.iterdir()) == []
    # nor a state file, nor its lock, that it made (review-user #8)
    (tmp_path / "state").mkdir()
    state = tmp_path / "state" / "s.db"
    args = ["crawl", f"http://127.0.0.1:{port}/", "-o", str(out), "-q", "--state", str(state)]
    assert main(args) == 3
    assert sorted(tmp_path.iterdir()) == [tmp_path / "state"]
    assert sorted((tmp_path / "state").iterdir()) == []


def test_a_second_run_on_the_same_output_folder_is_refused(serve, tmp_path, xsd, capsys):
    """While a slow crawl writes to out, a second run to out (of another site, so that its
    requests would show) is refused; the first publishes as if alone."""
    slow = tree_site(30, delay=0.2)
    first_server = serve(slow.app)
    out = tmp_path / "out"
    out.mkdir()
    (out / "sitemap.xml").write_bytes(PREVIOUS)
    first = Watched(crawl_process(first_server.url + "/", "-o", str(out), "--concurrency", "2"))
    wait_for(lambda: len(slow.requests) >= 3, "the first run's requests", proc=first)

    other = Site({"/": html("/a"), "/a": html()})
    other.url = serve(other.app).url + "/"  # type: ignore[attr-defined]
    err = _refused(capsys, other, "-o", str(out), code=75)  # busy: try again later
    assert f"another sitemap-crawler run is writing to {out} (pid {first.pid})" in err
    assert (out / "sitemap.xml").read_bytes() == PREVIOUS

    _, first_err = first.communicate(timeout=60)
    assert first.returncode == 0, first_err
    assert len(read_published(out, xsd).locs) == 30
    # the lock is released with the run: the next one publishes
    assert main(["crawl", other.url, "-o", str(out), "-q", "--force"]) == 0
    assert len(read_published(out, xsd).locs) == 2


def test_a_second_run_on_the_same_state_file_is_refused(serve, tmp_path, xsd, capsys):
    """Another output folder but the state file a running crawl uses: busy too (exit 75),
    and the running crawl's state is untouched: it publishes as if alone."""
    slow = tree_site(30, delay=0.2)
    first_server = serve(slow.app)
    state = tmp_path / "crawl.sqlite"
    args = ["-o", str(tmp_path / "out"), "--concurrency", "2", "--state", str(state)]
    first = Watched(crawl_process(first_server.url + "/", *args))
    wait_for(lambda: len(slow.requests) >= 3, "the first run's requests", proc=first)

    other = Site({"/": html("/a"), "/a": html()})
    other.url = serve(other.app).url + "/"  # type: ignore[attr-defined]
    err = _refused(capsys, other, "-o", str(tmp_path / "other"), "--state", str(state), code=75)
    assert f"state file {state} is in use by another running crawl (pid {first.pid})" in err
    assert not (tmp_path / "other" / "sitemap.xml").exists()

    _, first_err = first.communicate(timeout=60)
    assert first.returncode == 0, first_err
    assert len(read_published(tmp_path / "out", xsd).locs) == 30


@pytest.mark.parametrize(
    ("key", "name", "clash"),
    [
        ("report", "sitemap.xml", "sitemap.xml"),
        ("state", "sitemap.xml", "sitemap.xml"),
        ("decisions", "sitemap.txt", "sitemap.txt"),
        ("report", "sitemap-2.xml.gz", "sitemap-2.xml.gz"),
        ("state", "sitemap-1.txt", "sitemap-1.txt"),
        ("decisions", ".sitemap-crawler.lock", ".sitemap-crawler.lock"),
        ("report", ".sitemap.lock", ".sitemap.lock"),
        ("decisions", ".sitemap-manifest.json", ".sitemap-manifest.json"),
        ("state", ".sitemap", ".sitemap.lock"),  # the state's own lock: <state>.lock
        ("report", ".sitemap-manifest.json", ".sitemap-manifest.json"),
        ("decisions", ".sitemap-staging-1/d.jsonl", ".sitemap-staging-1"),
    ],
)
def test_a_file_the_publish_would_clobber_is_refused(site, published, capsys, key, name, clash):
    """A report, decisions or state path in the output folder that is (or makes beside
    itself) a file the writer publishes or uses there: exit 2, nothing fetched or written."""
    before = sorted(p.name for p in published.iterdir())
    path = published / name
    err = _refused(capsys, site, "-o", str(published), f"--{key}", str(path))
    assert f"{key} file {path} clashes with {clash} in the output folder {published}" in err
    assert (published / "sitemap.xml").read_bytes() == PREVIOUS
    assert sorted(p.name for p in published.iterdir()) == sorted({*before, ".sitemap-crawler.lock"})


def test_other_names_in_the_output_folder_are_fine(site, tmp_path, xsd):
    out = tmp_path / "out"
    files = {"report": "report.json", "decisions": "sitemap.jsonl", "state": "sitemap.state"}
    options = [arg for key, name in files.items() for arg in (f"--{key}", str(out / name))]
    assert main(["crawl", site.url, "-o", str(out), "-q", *options]) == 0
    assert all((out / name).is_file() for name in files.values())
    assert b"/a</loc>" in (out / "sitemap.xml").read_bytes()


@pytest.mark.parametrize("key", ["decisions", "report"])
def test_devnull_is_written_in_place(site, tmp_path, capsys, xsd, key):
    """An existing file is probed itself, not its folder (/dev/ may not be writable), and a
    report that is not a regular file is written in place: a rename would replace it."""
    out = tmp_path / "out"
    code = main(["crawl", site.url, "-o", str(out), "-q", f"--{key}", "/dev/null"])
    assert code == 0, capsys.readouterr().err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert not Path("/dev/null.tmp").exists()
    assert len(read_published(out, xsd).locs) == 2


def test_a_report_behind_a_symlink_keeps_the_link(site, tmp_path, capsys):
    target = tmp_path / "reports" / "last.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "report.json"
    link.symlink_to(target)
    code = main(["crawl", site.url, "-o", str(tmp_path / "out"), "-q", "--report", str(link)])
    assert code == 0, capsys.readouterr().err
    assert link.is_symlink() and '"published": true' in target.read_text()


def test_a_state_file_that_is_not_a_regular_file(site, published, tmp_path, capsys):
    fifo = tmp_path / "state.fifo"
    os.mkfifo(fifo)
    err = _refused(capsys, site, "-o", str(published), "--state", str(fifo))
    assert f"state file {fifo} is not a regular file" in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert (published / "sitemap.xml").read_bytes() == PREVIOUS


def test_a_decisions_file_that_cannot_be_written(site, published, tmp_path, capsys):
    path = tmp_path / "d.jsonl"
    path.write_text("keep me\n")
    with unwritable(path):
        err = _refused(capsys, site, "-o", str(published), "--decisions", str(path))
    assert f"decisions file {path}: cannot write it" in err
    assert path.read_text() == "keep me\n"
