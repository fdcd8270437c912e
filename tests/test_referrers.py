"""#26: the early referrers of a night with a history, read back at the end for the URLs
judged broken (crawler.shell.referrers), name the pages a crawl that keeps them as it goes
names: the broken-links report is the same whichever way it was made."""

from __future__ import annotations

import asyncio
import json
from array import array
from pathlib import Path

import pytest
from aiohttp import web

from crawler.cli import main
from crawler.core.urls import UNSETTLED
from crawler.shell.referrers import EARLY_REFERRERS, EarlyReferrers
from crawler.shell.settled import SettledIds
from crawler.shell.state_follows import FollowRow
from tests.sites import read_published, tagged

URLS = [f"https://example.com/{i}" for i in range(40)]
IDS = {url: i + 1 for i, url in enumerate(URLS)}  # ids start at 1


def _log() -> tuple[EarlyReferrers, SettledIds]:
    settled = SettledIds(lambda: IDS)
    return EarlyReferrers(lambda: IDS, settled), settled


def _targets(pages: dict[int, list[int]]):  # type: ignore[no-untyped-def]
    asked: list[list[int]] = []

    def targets_of(uids: list[int]) -> dict[int, bytes]:
        asked.append(uids)
        return {uid: array("I", pages[uid]).tobytes() for uid in uids if pages.get(uid)}

    return targets_of, asked


def test_a_broken_url_s_early_referrers_are_the_first_pages_of_its_span_linking_to_it() -> None:
    """Pages followed before it was queued, or after it was judged, are not in its span;
    a referral that is no link (a redirect, a canonical) takes its place in the order;
    a page named twice is named once; EARLY_REFERRERS at most."""
    log, settled = _log()
    gone = URLS[0]
    log.followed(URLS[1])  # before gone is queued: not an early referrer
    log.queued(IDS[gone], 2)
    assert settled.unsettled([gone], 2) == [] and settled.unsettled([gone], 1) == [gone]
    log.followed(URLS[2])
    log.referred(gone, "https://example.com/redirect")  # after URLS[2], before URLS[3]
    for i in range(3, 9):
        log.followed(URLS[i])
    log.broken(gone, URLS[9])
    log.followed(URLS[10])  # after it was judged: a late referrer, not early
    every = {IDS[u]: [IDS[gone]] for u in URLS[1:11]}
    every[IDS[URLS[4]]] = [IDS[URLS[5]]]  # does not link to it
    targets_of, asked = _targets(every)
    named = dict(log.named(targets_of, lambda url: url))
    assert named == {gone: [URLS[9], URLS[2], "https://example.com/redirect", URLS[3], URLS[5]]}
    assert asked and IDS[URLS[10]] not in asked[0]


def test_nothing_is_read_back_without_a_broken_url_nor_for_one_never_queued() -> None:
    log, _ = _log()
    log.queued(IDS[URLS[0]], 1)
    log.followed(URLS[1])
    targets_of, asked = _targets({IDS[URLS[1]]: [IDS[URLS[0]]]})
    assert list(log.named(targets_of, str)) == []
    log.broken(URLS[2], None)  # a redirect's target: no span
    assert list(log.named(targets_of, str)) == [(URLS[2], [])]
    assert asked == []


def test_a_url_queued_before_a_resume_counts_from_the_first_link_reaching_it() -> None:
    """A URL a resumed crawl's queue holds without a place saved (a file without a follow
    log): the first link reaching it (not hushed) opens its span from the run's start, and
    hushes it."""
    log, settled = _log()
    gone = URLS[0]
    log.followed(URLS[1])
    log.waiting(gone, 3)
    assert settled.unsettled([gone], 3) == []
    log.followed(URLS[2])
    log.broken(gone, URLS[7])
    targets_of, _ = _targets({IDS[URLS[1]]: [IDS[gone]], IDS[URLS[2]]: [IDS[gone]]})
    assert dict(log.named(targets_of, str)) == {gone: [URLS[7], URLS[1], URLS[2]]}


def test_referrals_are_kept_in_order_up_to_the_early_referrers_and_dropped_when_judged() -> None:
    """Referrals at one place (redirects fetched one after another) keep their order, not
    their names'; no more are kept than can be named; a URL judged (listed, or any other
    decision but broken) drops them; one judged broken is unsettled: its late links count."""
    log, settled = _log()
    log.queued(IDS[URLS[0]], 1)
    log.queued(IDS[URLS[1]], 1)
    for i in (9, 8, 9, 7, 6, 5):  # one named twice: once
        log.referred(URLS[0], URLS[i])
        log.referred(URLS[1], URLS[i])
    assert log.others[URLS[0]] == [(0, URLS[i]) for i in (9, 8, 7, 6)]
    assert len(log.others[URLS[0]]) == EARLY_REFERRERS
    log.judged(URLS[1])
    assert URLS[1] not in log.others
    log.broken(URLS[0], None)
    assert list(log.named(_targets({})[0], str)) == [(URLS[0], [URLS[i] for i in (9, 8, 7, 6)])]
    settled.settle(URLS[0], UNSETTLED)  # the journal's, for a broken URL
    assert settled.unsettled([URLS[0]], 4) == [URLS[0]]


def test_referrals_added_and_dropped_are_read_back_in_the_order_they_came() -> None:
    """A URL whose referrals are dropped (judged while still named, a redirect's task) and
    that gets another one after, within one checkpoint: the restored log keeps the last."""
    log, _ = _log()
    log.queued(IDS[URLS[0]], 1)
    log.referred(URLS[0], URLS[1])
    log.judged(URLS[0])
    log.referred(URLS[0], URLS[2])
    row = log.unsaved(3)
    restored, _ = _log()
    restored.restore([row] if row is not None else [])
    assert restored.others == log.others == {URLS[0]: [(0, URLS[2])]}


def test_a_resumed_night_goes_on_from_the_follow_log_as_if_never_stopped() -> None:
    """The rows checkpoints save (unsaved()) rebuild the order, the places of the URLs
    queued and judged broken before the stop, and the referrals that are no link (added,
    and dropped when their URL is judged): URLs judged broken before and after the stop
    are named as without a stop. Pages followed after the last checkpoint are fetched
    again, and followed in turn; a page in the saved order fetched again (one that waited
    for its canonical's target has no decision saved) keeps its place."""
    run = 7
    pages = {IDS[URLS[i]]: [IDS[URLS[0]], IDS[URLS[1]], IDS[URLS[20]]] for i in range(2, 12)}
    pages[IDS[URLS[3]]] = [IDS[URLS[0]]]

    def night(stopped: bool) -> dict[str, list[str]]:
        log, _ = _log()
        rows: list[FollowRow | None] = []
        log.queued(IDS[URLS[0]], 1)
        log.queued(IDS[URLS[1]], 1)
        log.queued(IDS[URLS[9]], 1)
        log.referred(URLS[1], "https://example.com/r")
        for i in (2, 3):
            log.followed(URLS[i])
        log.broken(URLS[0], "https://example.com/first")
        log.queued(IDS[URLS[20]], 2)  # its span starts after 2 and 3
        log.followed(URLS[4])
        rows.append(log.unsaved(run))
        log.referred(URLS[9], "https://example.com/s")
        log.referred(URLS[1], "https://example.com/t")
        log.judged(URLS[9])  # listed: its referrals dropped
        log.followed(URLS[5])
        rows.append(log.unsaved(run))
        assert log.unsaved(run) is None  # nothing new since
        log.followed(URLS[6])  # never saved: fetched again after a stop
        if stopped:
            log, _ = _log()
            log.restore([row for row in rows if row is not None])
            assert URLS[9] not in log.others
            log.broken(URLS[0], "https://example.com/first")  # the replay of its decision
            log.followed(URLS[4])  # fetched again: in the order already
            log.followed(URLS[6])
        for i in range(7, 12):
            log.followed(URLS[i])
        log.broken(URLS[1], None)
        log.broken(URLS[20], None)
        return dict(log.named(_targets(pages)[0], str))

    whole = night(stopped=False)
    assert whole == {
        URLS[0]: ["https://example.com/first", URLS[2], URLS[3]],
        URLS[1]: ["https://example.com/r", URLS[2], URLS[4], "https://example.com/t"],
        URLS[20]: URLS[4:8],
    }
    assert night(stopped=True) == whole


# -- end to end -------------------------------------------------------------------------

_HOME = [f"/a/{i}" for i in range(6)] + ["/gone/1", "/r", "/c", "/deep"]
_TIED = ["/rz", "/ry", "/rx", "/rw", "/rv"]  # redirects to one URL, fetched in a row
_MORE = [f"/f/{i}" for i in range(300)]  # pages enough for a worker to take some
_PAGES: dict[str, list[str]] = {
    "/": [*_HOME, *(f"/a/{i}" for i in range(6, 10)), "/y", "/x", "/p5", *_TIED, *_MORE],
    "/p5": ["/gone/5"],
    "/deep": ["/gone/3", *(f"/b/{i}" for i in range(6))],
    "/y": ["/r4"],  # queued before /gone/4, fetched after it is queued, before it is fetched
    "/x": ["/gone/4"],
}
_PAGES.update({f"/a/{i}": ["/", "/gone/1", "/gone/2", f"/b/{i}"] for i in range(10)})
_PAGES.update({f"/b/{i}": ["/gone/2", "/gone/3", "/a/0", "/gone/1"] for i in range(10)})
_PAGES["/b/8"].append("/gone/4")
_PAGES["/b/9"].append("/gone/4")
_PAGES.update({path: ["/"] for path in _MORE})
_REDIRECTS = {"/r": "/gone/2", "/r4": "/gone/4"} | dict.fromkeys(_TIED, "/gone/5")


def _site(nights: list[int]) -> web.Application:
    """Five broken URLs linked from pages judged before and after them, redirects to three
    (a referral that is no link) and a noindex page whose canonical names another. The
    pages met last answer after 20 ms: time for a worker to be ready on a busy machine."""

    async def handle(request: web.Request) -> web.StreamResponse:
        path = request.path
        if path.startswith("/b/"):
            await asyncio.sleep(0.02)
        if path in _REDIRECTS:
            raise web.HTTPMovedPermanently(_REDIRECTS[path])
        if path == "/c":
            body = (
                b'<!doctype html><meta name="robots" content="noindex">'
                b'<link rel="canonical" href="/gone/3"><a href="/">home</a>'
            )
        elif path in _PAGES:
            links = "".join(f'<a href="{href}">{href}</a>' for href in _PAGES[path])
            body = f"<!doctype html><title>{path}</title><p>{links}</p>".encode()
        else:
            return web.Response(status=404 if path != "/gone/3" else 410, text="gone")
        return tagged(request, body, nights[0])

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


@pytest.mark.parametrize("workers", ["0", "1"])
def test_the_broken_links_report_is_the_same_with_a_history_as_without(
    serve, tmp_path: Path, xsd, workers: str
) -> None:
    """The first night (no history: kept as links are followed), an unchanged night (every
    page a 304), a changed one (every page a 200, its links by name) and a crawl without a
    state name the same pages for each broken URL, in the same order."""
    nights = [0]
    srv = serve(_site(nights))
    state, report = tmp_path / "state.sqlite", tmp_path / "report.json"

    def broken(*args: str) -> dict[str, list[str]]:
        out = tmp_path / "out"
        code = main(
            ["crawl", srv.url + "/", "-o", str(out), "-q", "--concurrency", "1",
             "--workers", workers, "--report", str(report), *args]
        )  # fmt: skip
        assert code == 0
        read_published(out, xsd)
        found = json.loads(report.read_text())["broken_links"]
        return {b["url"].removeprefix(srv.url): b["linked_from"] for b in found}

    without = broken()
    assert json.loads(report.read_text())["requests"]["by_workers"] >= int(workers)
    assert sorted(without) == [f"/gone/{i}" for i in range(1, 6)]
    # redirects fetched in a row, the first moving it up: in the order they came
    assert [u.removeprefix(srv.url) for u in without["/gone/5"]] == _TIED[:4]
    # a redirect after two pages' links, before it was fetched: in its place among them
    assert [u.removeprefix(srv.url) for u in without["/gone/4"]] == ["/x", "/b/8", "/b/9", "/r4"]
    assert len(without["/gone/1"]) == 10  # late referrers among them, cut at the cap
    assert srv.url + "/r" in without["/gone/2"] and srv.url + "/c" in without["/gone/3"]
    first = broken("--state", str(state))
    unchanged = broken("--state", str(state))
    assert json.loads(report.read_text())["pages_not_modified"] > 0
    nights[0] += 1
    changed = broken("--state", str(state))
    assert json.loads(report.read_text())["pages_not_modified"] == 0
    assert first == unchanged == changed == without
