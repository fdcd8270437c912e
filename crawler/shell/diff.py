"""`sitemap-crawler diff OLD NEW`: read two sets of URLs into one spool, compare them there,
and with --fetch judge the URLs removed and added as the audit judges a listed URL.

A set is read as the audit reads its target (crawler.shell.audit.read_sitemaps: a local
file and the parts of its index beside it, or a sitemap or site URL fetched politely with
robots.txt, redirects and the reader's bounds), or from a folder holding a published set (its
sitemap.xml, else the files its manifest names), or from the --decisions file of a crawl
(the lines with "listed": true). A set read only in part would make a release gate compare
the wrong things, so a part that cannot be read is an error, not a finding.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from crawler.config import Config
from crawler.core.diff import (
    NOT_CHECKED,
    DiffSummary,
    Kind,
    tally,
    verdict,
)
from crawler.core.findings import Finding, ListedUrl
from crawler.core.urls import normalize
from crawler.errors import InvalidURLError, SitemapCrawlerError
from crawler.exit_codes import Exit
from crawler.shell.audit import GUESSES, Configure, Reading, is_url, read_sitemaps
from crawler.shell.audit_urls import check_urls
from crawler.shell.diff_spool import DiffSpool, Side
from crawler.shell.outputs import written_in_place
from crawler.shell.pool import Spare
from crawler.shell.progress import ProgressLine
from sitemap_out.manifest import MANIFEST_NAME, read_manifest
from sitemap_out.reader import Problem, ReadResult, read_sitemap

__all__ = ["DiffInputError", "DiffResult", "diff", "write_streamed"]

#: The audit's file findings that leave a set incomplete: compared, it would look shrunk.
_INCOMPLETE: Final = frozenset(
    {
        "sitemap_unreachable", "sitemap_blocked", "parse_error", "compression_error",
        "too_large", "too_many_urls", "nested_index", "too_many_sitemaps",
    }
)  # fmt: skip
#: The reader's problems that leave a file unread, or read in part.
_UNREAD: Final = frozenset(
    {"bad_gzip", "not_well_formed", "too_large", "too_many_urls", "wrong_root"}
)
_BATCH: Final = 10_000
_LABELS: Final[dict[Side, str]] = {"old": "OLD", "new": "NEW"}

Log = Callable[[str], None]


class DiffInputError(SitemapCrawlerError):
    """OLD or NEW cannot be read whole: missing, not a sitemap, a server that does not answer."""

    exit_code = Exit.USAGE


@dataclass(slots=True)
class DiffResult:
    """The figures, and the spool the lists are read from (the caller closes it)."""

    summary: DiffSummary
    spool: DiffSpool


async def diff(
    old: str,
    new: str,
    configure: Configure,
    *,
    fetch: bool,
    fetch_max: int,
    log: Log,
    progress: ProgressLine | None,
    workers: list[Spare] | None = None,
) -> DiffResult:
    started = time.monotonic()
    spool = DiffSpool()
    try:
        configs: dict[Side, Config | None] = {}
        sides: tuple[tuple[Side, str], ...] = (("old", old), ("new", new))
        for side, target in sides:
            configs[side] = await _read_side(side, target, configure, spool, log)
        summary = DiffSummary(old, new)
        spool.summarise(summary)
        config = configs["new"] or configs["old"]
        if fetch and config is not None and (summary.removed or summary.added):
            await _check(spool, summary, config, fetch_max, log, progress, workers)
        elif spool.has_decisions and summary.removed:
            summary.explained_by = "decisions"
            summary.verdicts["removed"] = spool.explain_removed()
        summary.seconds = time.monotonic() - started
        return DiffResult(summary, spool)
    except BaseException:
        spool.close()
        raise


# -- reading a set ----------------------------------------------------------------------------


async def _read_side(
    side: Side, target: str, configure: Configure, spool: DiffSpool, log: Log
) -> Config | None:
    """Spool one set; the Config its URLs are checked with (None: a set without URLs)."""
    label = f"{_LABELS[side]} ({target})"
    if is_url(target):
        return await _read_sitemaps(side, label, target, configure, spool, log)
    path = Path(target)
    if path.is_dir():
        files = _published(path)
        if not files:
            raise DiffInputError(
                f"{label}: no sitemap.xml, sitemap.txt or {MANIFEST_NAME} in the folder: "
                "not a published set"
            )
        for file in files:
            _read_local(side, label, file, spool)
        return _local_config(side, spool, configure)
    if not path.is_file():
        raise DiffInputError(f"{label}: no such file or folder")
    if _is_json(path, label):
        _spool_decisions(side, label, path, spool)
    else:
        _read_local(side, label, path, spool)
    return _local_config(side, spool, configure)


def _local_config(side: Side, spool: DiffSpool, configure: Configure) -> Config | None:
    """A local set's URLs are checked on the site of its first URL (sorted), from its root."""
    first = spool.first_loc(side)
    try:
        url = normalize(first) if first is not None else None
    except InvalidURLError:
        return None
    if url is None:
        return None
    scheme, _, rest = url.partition("://")
    return configure(f"{scheme}://{rest.split('/', 1)[0]}/", None)


def _read_local(side: Side, label: str, path: Path, spool: DiffSpool) -> None:
    """A sitemap file, and an index's parts beside it by file name (what `crawl` publishes:
    sitemap.xml and its sitemap-N.xml parts), read straight with the reader: the audit's
    file checks are not the diff's business, and cost more than the reading on a million
    URLs. One file's entries in memory at a time (50,000 at most)."""
    result = _read_file(path, label)
    if result.kind != "sitemapindex":
        spool.add(side, _locs(result))
        return
    for entry in result.entries:
        name = urlsplit(entry.loc).path.rsplit("/", 1)[-1]
        beside = path.parent / name
        if not name or not beside.is_file():
            raise DiffInputError(
                f"{label}: {path.name} lists {entry.loc}, not found as {beside} (the parts of a "
                "local index are read from its folder); a set read in part is not compared"
            )
        part = _read_file(beside, label)
        if part.kind == "sitemapindex":
            raise DiffInputError(
                f"{label}: {beside.name} is an index inside an index; a set read in part is "
                "not compared"
            )
        spool.add(side, _locs(part))


def _read_file(path: Path, label: str) -> ReadResult:
    """One file read whole, or a DiffInputError saying why it cannot be compared."""
    try:
        result = read_sitemap(path)
    except OSError as exc:
        raise DiffInputError(f"{label}: cannot read {path}: {exc.strerror or exc}") from None
    name = path.name
    fatal = [p for p in result.problems if p.code in _UNREAD]
    if result.kind == "unknown" or (fatal and not result.entries):
        why = (fatal or result.problems or [Problem("empty", "nothing read")])[0].message
        raise DiffInputError(f"{label}: {name} is not a sitemap ({why})")
    if not any(_is_url(entry.loc) for entry in result.entries):
        bad = [p for p in result.problems if p.severity == "error" and p.code != "empty"]
        if bad:
            raise DiffInputError(f"{label}: {name} is not a sitemap ({bad[0].message})")
    if fatal:
        raise DiffInputError(
            f"{label}: {name}: {fatal[0].message}; a set read in part is not compared"
        )
    return result


def _is_url(loc: str) -> bool:
    return loc[:8].lower().startswith(("http://", "https://"))


def _locs(result: ReadResult) -> Iterator[tuple[str, str | None]]:
    return ((entry.loc, entry.lastmod) for entry in result.entries if entry.loc)


def _published(folder: Path) -> list[Path]:
    """A published set's top file (the writer always publishes one of these), else the
    files its manifest names (a set published by hand or in part)."""
    for name in GUESSES:
        if (folder / name).is_file():
            return [folder / name]
    return [folder / name for name in read_manifest(folder) if name != "changes.atom"]


async def _read_sitemaps(
    side: Side, label: str, target: str, configure: Configure, spool: DiffSpool, log: Log
) -> Config | None:
    reading = Reading()
    try:
        try:
            config, why_nothing = await read_sitemaps(target, configure, reading, log)
        except InvalidURLError as exc:
            raise DiffInputError(f"{label}: {exc}") from None
        if why_nothing is not None:
            raise DiffInputError(f"{label}: {why_nothing}")
        _whole(label, target, reading.findings, bool(reading.listed))
        spool.add(side, ((item.loc, item.lastmod) for item in reading.listed))
        return config
    finally:
        reading.listed.close()


def _whole(label: str, target: str, findings: list[Finding], listed: bool) -> None:
    """Refuse a file that is not a sitemap at all, or a set read in part."""
    if not listed:
        bad = [f for f in findings if f.severity == "error" and f.code != "empty_sitemap"]
        if bad:
            raise DiffInputError(f"{label}: not a sitemap ({bad[0].code}: {bad[0].detail})")
    for finding in findings:
        if finding.code in _INCOMPLETE:
            where = finding.sitemap or ""
            where = f"{where}: " if where and where != target else ""
            raise DiffInputError(
                f"{label}: {where}{finding.detail}; a set read in part is not compared"
            )


def _is_json(path: Path, label: str) -> bool:
    """A file whose first byte (past blanks) is `{`: a decisions file, or not ours."""
    try:
        with path.open("rb") as file:
            head = file.read(4096)
    except OSError as exc:
        raise DiffInputError(f"{label}: cannot read it: {exc.strerror or exc}") from None
    return head.lstrip(b" \t\r\n\xef\xbb\xbf").startswith(b"{")


def _spool_decisions(side: Side, label: str, path: Path, spool: DiffSpool) -> None:
    """The URLs a crawl listed, from its --decisions file (JSON lines: url, status, listed,
    reason, detail, ...), spooled 10,000 lines at a time; of NEW's, also why it left out
    each URL it met, which explains the URLs removed. The file says no lastmod: the set's
    URLs are compared without one."""
    listed: list[tuple[str, str | None]] = []
    left_out: list[tuple[str, str, str]] = []
    for record in _decisions(path, label):
        if record.get("listed") is True:
            listed.append((record["url"], None))
        elif side == "new" and isinstance(record.get("reason"), str):
            status, detail = record.get("status"), str(record.get("detail") or "")
            if isinstance(status, int) and status != 200 and str(status) not in detail:
                detail = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
            left_out.append((record["url"], record["reason"], detail))
        if len(listed) + len(left_out) >= _BATCH:
            spool.add(side, listed)
            spool.decided(left_out)
            listed, left_out = [], []
    spool.add(side, listed)
    spool.decided(left_out)
    if side == "new":
        spool.has_decisions = True


def _decisions(path: Path, label: str) -> Iterator[dict[str, Any]]:
    """The lines of a decisions file, each a JSON object with a url, or a DiffInputError."""
    try:
        with path.open(encoding="utf-8") as file:
            for n, line in enumerate(file, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    raise DiffInputError(
                        f"{label}: line {n} is not JSON; a decisions file (crawl --decisions) "
                        "is one JSON object a line"
                    ) from None
                if not isinstance(record, dict) or not isinstance(record.get("url"), str):
                    raise DiffInputError(
                        f"{label}: line {n} has no url: not a decisions file (a crawl's "
                        "--report holds figures, not URLs: give its --decisions FILE.jsonl)"
                    )
                yield record
    except OSError as exc:
        raise DiffInputError(f"{label}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise DiffInputError(f"{label}: not UTF-8 text: not a decisions file") from None


# -- --fetch --------------------------------------------------------------------------------


async def _check(
    spool: DiffSpool,
    summary: DiffSummary,
    config: Config,
    fetch_max: int,
    log: Log,
    progress: ProgressLine | None,
    workers: list[Spare] | None,
) -> None:
    """Judge the first `fetch_max` URLs removed and added (by key) with the audit's URL
    checks; the others are NOT_CHECKED. Only NEW's site (its sitemap's folder) is fetched."""
    summary.fetched, summary.explained_by = True, "fetch"
    kinds: tuple[Kind, ...] = ("removed", "added")
    locs = {kind: spool.locs(kind, fetch_max) for kind in kinds}
    listed = [ListedUrl(loc, kind) for kind in kinds for loc in locs[kind]]
    checks = await check_urls(config, listed, log=log, progress=progress, workers=workers)
    found: dict[str, list[Finding]] = {}
    for finding in checks.findings:
        if finding.url is not None:
            found.setdefault(finding.url, []).append(finding)
    for kind in kinds:
        rows = []
        for loc in locs[kind]:
            if loc in checks.judged:
                label, detail = verdict(found.get(loc, ()))
            else:
                label, detail = NOT_CHECKED, "not fetched: not on the site or folder checked"
            rows.append((loc, label, detail))
            tally(summary.verdicts, kind, label)
        spool.judge(kind, rows)
        rest = summary.count(kind) - len(locs[kind])
        if rest:
            summary.verdicts[kind][NOT_CHECKED] = summary.verdicts[kind].get(NOT_CHECKED, 0) + rest
            log(f"warning: {rest} {kind} URLs past --fetch-max {fetch_max} were not fetched")


# -- reports --------------------------------------------------------------------------------


def write_streamed(path: Path, chunks: Iterable[str]) -> None:
    """A report written whole or not at all, as the audit's (a temporary file renamed over
    it), from chunks: a million-URL report is never one string in memory."""
    in_place = written_in_place(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    target = path if in_place else path.with_name(path.name + ".tmp")
    try:
        with target.open("w", encoding="utf-8") as file:
            for chunk in chunks:
                file.write(chunk)
    except BaseException:  # a full disk, an interrupt: no half report left behind
        if not in_place:
            target.unlink(missing_ok=True)
        raise
    if not in_place:
        target.replace(path)
