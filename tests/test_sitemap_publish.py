"""Atomic publish, stale-file cleanup, the folder lock and crash safety (SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sitemap_out.writer as writer_mod
from sitemap_out import (
    EmptySitemapError,
    Entry,
    SitemapWriter,
    WriterLockedError,
    read_sitemap,
)
from sitemap_out.writer import MANIFEST_NAME
from tests.procs import child_env

BASE = "https://example.com/"


def snapshot(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")}


def publish(out: Path, n: int, *, tag: str = "a", **kw) -> None:
    with SitemapWriter(out, BASE, **kw) as w:
        w.add_many(Entry(f"https://example.com/{tag}/{i}") for i in range(n))
        w.publish()


def check_consistent(out: Path, xsd) -> set[str]:
    """Every file the entry point names exists and is valid; returns the locs reachable."""
    top = read_sitemap(out / "sitemap.xml")
    assert top.ok, top.problems
    xsd.any(out / "sitemap.xml")
    if top.kind == "urlset":
        return {e.loc for e in top.entries}
    locs: set[str] = set()
    for item in top.entries:
        part = out / item.loc.removeprefix(BASE)
        xsd.urlset(part)
        rr = read_sitemap(part)
        assert rr.ok, rr.problems
        locs |= {e.loc for e in rr.entries}
    return locs


def test_new_set_replaces_old_and_stale_parts_go(tmp_path: Path, xsd) -> None:
    publish(tmp_path, 70, gzip=True, max_urls=10)
    assert len(list(tmp_path.glob("sitemap-*.xml.gz"))) == 7
    (tmp_path / "robots.txt").write_text("keep me\n")
    (tmp_path / "sitemap-99.xml.gz").write_bytes(b"not ours: not in the manifest")
    publish(tmp_path, 25, tag="b", gzip=True, max_urls=10)
    assert set(snapshot(tmp_path)) == {
        "sitemap.xml",
        "sitemap-1.xml.gz",
        "sitemap-2.xml.gz",
        "sitemap-3.xml.gz",
        "robots.txt",
        "sitemap-99.xml.gz",
    }
    assert check_consistent(tmp_path, xsd) == {f"https://example.com/b/{i}" for i in range(25)}
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    assert manifest["files"] == [f"sitemap-{i}.xml.gz" for i in (1, 2, 3)] + ["sitemap.xml"]
    # A single plain urlset next: the index's parts all go.
    publish(tmp_path, 5, tag="c")
    assert set(snapshot(tmp_path)) == {"sitemap.xml", "robots.txt", "sitemap-99.xml.gz"}
    assert check_consistent(tmp_path, xsd) == {f"https://example.com/c/{i}" for i in range(5)}


def test_tampered_manifest_cannot_delete_other_files(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("home")
    (tmp_path / MANIFEST_NAME).write_text(json.dumps({"files": ["index.html", "../x", 3]}))
    publish(tmp_path, 3)
    assert (tmp_path / "index.html").read_text() == "home"


@pytest.mark.parametrize("how", ["abort", "exception", "empty"])
def test_failed_run_leaves_previous_set_byte_for_byte(tmp_path: Path, how: str) -> None:
    publish(tmp_path, 30, gzip=True, max_urls=10)
    before = snapshot(tmp_path)
    if how == "abort":
        w = SitemapWriter(tmp_path, BASE, max_urls=3)
        w.add_many(Entry(f"https://example.com/new/{i}") for i in range(10))
        w.abort()
    elif how == "exception":
        with pytest.raises(RuntimeError), SitemapWriter(tmp_path, BASE, max_urls=3) as w:
            w.add_many(Entry(f"https://example.com/new/{i}") for i in range(10))
            raise RuntimeError("crawl failed")
    else:
        with pytest.raises(EmptySitemapError), SitemapWriter(tmp_path, BASE) as w:
            w.publish()
    assert snapshot(tmp_path) == before
    assert not list(tmp_path.glob(".sitemap-staging-*"))


def test_second_writer_is_refused_then_allowed(tmp_path: Path) -> None:
    first = SitemapWriter(tmp_path, BASE)
    with pytest.raises(WriterLockedError, match=f"pid {os.getpid()}"):
        SitemapWriter(tmp_path, BASE)
    first.abort()
    SitemapWriter(tmp_path, BASE).abort()


def _child(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),  # this checkout's sitemap_out, not an installed copy
    )


def test_lock_held_by_another_process(tmp_path: Path) -> None:
    child = _child(
        f"""
        import sys
        from sitemap_out import SitemapWriter
        w = SitemapWriter({str(tmp_path)!r}, "https://example.com/")
        print("locked", flush=True)
        sys.stdin.readline()
        """
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "locked"
        with pytest.raises(WriterLockedError, match=f"pid {child.pid}"):
            SitemapWriter(tmp_path, BASE)
    finally:
        child.communicate("go\n", timeout=30)
    SitemapWriter(tmp_path, BASE).abort()


def test_sigkill_mid_run_keeps_old_set_and_next_run_cleans_up(tmp_path: Path, xsd) -> None:
    publish(tmp_path, 120, gzip=True, max_urls=50)
    before = snapshot(tmp_path)
    child = _child(
        f"""
        import itertools
        from sitemap_out import Entry, SitemapWriter
        w = SitemapWriter({str(tmp_path)!r}, "https://example.com/", gzip=True, max_urls=1000)
        for i in itertools.count():
            w.add(Entry(f"https://example.com/killed/{{i}}"))
            if i == 5000:  # a few parts are finished in staging by now
                print("writing", flush=True)
        """
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "writing"
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    child.stdout.close()
    assert child.stdin is not None
    child.stdin.close()

    leftovers = list(tmp_path.glob(".sitemap-staging-*"))
    assert leftovers and any(p.name.endswith(".xml.gz") for p in leftovers[0].iterdir())
    assert snapshot(tmp_path) == before
    assert check_consistent(tmp_path, xsd) == {f"https://example.com/a/{i}" for i in range(120)}

    # The dead process's lock is gone with it; the next run removes its staging folder.
    w = SitemapWriter(tmp_path, BASE)
    assert [p for p in tmp_path.glob(".sitemap-staging-*") if p != w.staging_dir] == []
    w.add(Entry("https://example.com/after"))
    w.publish()
    assert check_consistent(tmp_path, xsd) == {"https://example.com/after"}
    assert not list(tmp_path.glob(".sitemap-staging-*"))
    assert set(snapshot(tmp_path)) == {"sitemap.xml"}


@pytest.mark.parametrize("replaces_before_crash", [0, 1, 2, 3, 4])
def test_crash_between_renames_leaves_a_consistent_set(
    tmp_path: Path, xsd, monkeypatch: pytest.MonkeyPatch, replaces_before_crash: int
) -> None:
    """Old set: index + 2 parts. New set: index + 4 parts. A crash after any rename still
    leaves an entry point whose every listed file exists and is valid; the next run then
    cleans up everything the crashed run placed."""
    publish(tmp_path, 20, gzip=True, max_urls=10)
    old_locs = {f"https://example.com/a/{i}" for i in range(20)}
    real_replace = os.replace
    calls = {"n": 0}

    def flaky_replace(src, dst):  # the staging-internal replace of a manifest counts too
        if Path(dst).parent == tmp_path and not Path(dst).name.startswith("."):
            if calls["n"] == replaces_before_crash:
                raise OSError("simulated crash")
            calls["n"] += 1
        return real_replace(src, dst)

    monkeypatch.setattr(writer_mod.os, "replace", flaky_replace)
    with pytest.raises(OSError, match="simulated"):
        publish(tmp_path, 40, tag="b", gzip=True, max_urls=10)
    monkeypatch.setattr(writer_mod.os, "replace", real_replace)

    reachable = check_consistent(tmp_path, xsd)
    assert reachable  # every listed file parsed and validated above
    # The entry point is renamed last, so the old index (2 parts) is still in charge.
    assert len(read_sitemap(tmp_path / "sitemap.xml").entries) == 2
    assert reachable <= old_locs | {f"https://example.com/b/{i}" for i in range(40)}

    publish(tmp_path, 15, tag="c", gzip=True, max_urls=10)
    assert set(snapshot(tmp_path)) == {"sitemap.xml", "sitemap-1.xml.gz", "sitemap-2.xml.gz"}
    assert check_consistent(tmp_path, xsd) == {f"https://example.com/c/{i}" for i in range(15)}


def test_crash_while_deleting_stale_parts(
    tmp_path: Path, xsd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new entry point is in place; stale old parts stay on record and go next run."""
    publish(tmp_path, 40, gzip=True, max_urls=10)
    real_unlink = Path.unlink

    def flaky_unlink(self: Path, missing_ok: bool = False) -> None:
        if self.parent == tmp_path and self.name.startswith("sitemap-"):
            raise OSError("simulated crash")
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", flaky_unlink)
    with pytest.raises(OSError, match="simulated"):
        publish(tmp_path, 15, tag="b", gzip=True, max_urls=10)
    monkeypatch.setattr(Path, "unlink", real_unlink)
    assert check_consistent(tmp_path, xsd) == {f"https://example.com/b/{i}" for i in range(15)}
    assert (tmp_path / "sitemap-4.xml.gz").exists()  # unlisted leftover, still on record
    assert "sitemap-4.xml.gz" in json.loads((tmp_path / MANIFEST_NAME).read_text())["files"]

    publish(tmp_path, 5, tag="c", gzip=True, max_urls=10)
    assert set(snapshot(tmp_path)) == {"sitemap.xml", "sitemap-1.xml.gz"}


def stable_publish(out: Path, locs: list[str], *, feed: bool = True) -> None:
    with SitemapWriter(
        out, BASE, stable=True, gzip=True, max_urls=10, feed_days=7 if feed else None
    ) as w:
        w.add_many(Entry(loc) for loc in sorted(locs))
        w.publish()


@pytest.mark.parametrize("replaces_before_crash", [0, 1, 2, 3, 4])
def test_crash_while_publishing_a_stable_layout_leaves_a_valid_set(
    tmp_path: Path, xsd, monkeypatch: pytest.MonkeyPatch, replaces_before_crash: int
) -> None:
    """Old set: 4 parts. New set: part 2 loses a URL, part 4 (the last) gets new ones and
    part 5 opens; parts 1 and 3 are not even staged. A crash after any rename leaves an
    entry point whose every listed file exists and is valid, and the next run lays the set
    out afresh (the manifest records no layout until a publish is whole)."""
    old = [f"https://example.com/a/{i:02d}" for i in range(35)]
    stable_publish(tmp_path, old)
    untouched = {n: (tmp_path / n).read_bytes() for n in ("sitemap-1.xml.gz", "sitemap-3.xml.gz")}
    new = [u for u in old if not u.endswith("/15")] + [
        f"https://example.com/b/{i}" for i in range(12)
    ]
    real_replace = os.replace
    calls = {"n": 0}

    def flaky_replace(src, dst):
        if Path(dst).parent == tmp_path and not Path(dst).name.startswith("."):
            if calls["n"] == replaces_before_crash:
                raise OSError("simulated crash")
            calls["n"] += 1
        return real_replace(src, dst)

    monkeypatch.setattr(writer_mod.os, "replace", flaky_replace)
    with pytest.raises(OSError, match="simulated"):
        stable_publish(tmp_path, new)
    monkeypatch.setattr(writer_mod.os, "replace", real_replace)
    reachable = check_consistent(tmp_path, xsd)
    assert len(read_sitemap(tmp_path / "sitemap.xml").entries) == 4  # the old index rules
    assert reachable <= set(old) | set(new)
    for name, data in untouched.items():
        assert (tmp_path / name).read_bytes() == data
    assert "layout" not in json.loads((tmp_path / MANIFEST_NAME).read_text())

    stable_publish(tmp_path, new)
    assert check_consistent(tmp_path, xsd) == set(new)
    assert "layout" in json.loads((tmp_path / MANIFEST_NAME).read_text())
    assert (tmp_path / "changes.atom").exists()
    feed = (tmp_path / "changes.atom").read_bytes()
    stable_publish(tmp_path, new, feed=False)  # a run without the feed leaves it in place
    assert (tmp_path / "changes.atom").read_bytes() == feed
    assert "changes.atom" in json.loads((tmp_path / MANIFEST_NAME).read_text())["files"]
