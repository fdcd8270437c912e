"""A revived page's history row carried as it is (#26): the history after a night that
carries rows (crawler.shell.revalidation.carries) is, row for row, the history a night that
writes every row again leaves, the lastmods published included; and a 304 night stopped by
SIGTERM and resumed leaves the history and sitemaps an uninterrupted one does."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import signal
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawler.cli import main
from crawler.core.directives import NO_DIRECTIVES, Directives
from crawler.core.history import Prior, revive
from crawler.core.httpdate import parse_http_date
from crawler.core.media import PageExtras
from crawler.core.page import PageResult
from crawler.core.wire import pack
from crawler.shell.listings import Listing
from crawler.shell.revalidation import Answer, Revalidation, carries
from crawler.shell.state import CrawlState
from tests.procs import wait_for
from tests.sites import Page, Site, crawl_process, read_published

START = "http://example.com/"
PAGES = 12
NIGHT = datetime(2026, 1, 2, tzinfo=UTC)


def _open(path: Path, day: int) -> CrawlState:
    return CrawlState.open(
        path, fingerprint="fp", start_url=START, resume=False,
        now=lambda: NIGHT.replace(day=day),
    )  # fmt: skip


def _result(i: int) -> PageResult:
    """Page i's facts, of every kind a row holds: some with nofollow links, extras, a
    canonical, directives, none or other blocks."""
    urls = [f"{START}p{j}" for j in range(PAGES)]
    return PageResult(
        "text/html" if i % 5 else "application/pdf",
        header=Directives(noindex=True, source="header") if i % 7 == 3 else NO_DIRECTIVES,
        meta=Directives(nofollow=True, source="meta") if i % 6 == 2 else NO_DIRECTIVES,
        canonical=urls[0] if i % 4 == 1 else None,
        canonical_in_html=i % 8 == 1,
        targets=[urls[(i + k) % PAGES] for k in range(1, 1 + i % 4)],
        nofollow=[f"{START}nf{i}"] if i % 3 == 0 else [],
        body_key=i * 1000 if i % 5 else None,
        extras=PageExtras(images=(f"{START}i{i}.png",)) if i % 2 else None,
        blocks=None if i % 5 == 0 else bytes([i, 1, 2, 3, 4, 5, 6, 7]),
    )


def _history(path: Path) -> None:
    """A finished full night of PAGES pages, some published with a lastmod."""
    with _open(path, 2) as state:
        for i in range(PAGES):
            url = f"{START}p{i}"
            state.queued(url, 1, None)
            state.page(url, None, etag=f'"e{i}"', modified=None, status=200,
                       reason="listed" if i % 7 != 3 else "noindex", result=_result(i))  # fmt: skip
            if i % 3:
                state.published(url, 100 + i, 200 + i, "content")
        state.finish()


def _rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT * FROM history ORDER BY url").fetchall()


def _night(
    path: Path,
    published: list[tuple[int, int] | None],
    *,
    carry: bool,
    listed: bool = False,
    before_finish: Callable[[], object] = lambda: None,
) -> int:
    """A 304 night: every page revived from its row and recorded (by Revalidation.record,
    which carries a row where the rule says so; or, `carry` off, written again as before
    #26), then the lastmods `published` (None: the page is not listed). `listed`: each page
    published is listed first (its listing saved) and dated by its last run (last_run_of)
    before its lastmod is published, as in a crawl. The rows carried."""
    carried = 0
    blocks: list[bytes | None] = []
    with _open(path, 3) as state:
        revalidation = Revalidation(state)
        for i in range(PAGES):
            url = f"{START}p{i}"
            state.queued(url, 1, None)
            prior = state.prior(url)
            assert prior is not None
            targets, nofollow = state.links_of(prior)
            page = revive(prior, PageResult("", not_modified=True), header_given=False,
                          targets=targets, nofollow=nofollow)  # fmt: skip
            answer = Answer(
                page, 200, prior.etag, prior.modified, parse_http_date(prior.modified),
                prior.stamped, False, True,
            )  # fmt: skip
            blocks.append(page.blocks)
            reason = "listed" if i % 7 != 3 else "noindex"
            carried += carries(prior, answer, reason)
            if carry:
                revalidation.record(url, prior, answer, reason)
            else:
                state.page(url, prior, etag=answer.etag, modified=answer.modified, status=200,
                           reason=reason, result=page, stamped=answer.stamped)  # fmt: skip
            if listed and published[i] is not None:
                state.listed(Listing(url, url, 200, "", 1, None, None, None, None, None))
            if i % 4 == 0:
                state.checkpoint()  # published values and rows over several checkpoints
        for i, dates in enumerate(published):
            if dates is not None:
                if listed:
                    state.last_run_of(f"{START}p{i}", blocks[i])
                state.published(f"{START}p{i}", dates[0], dates[1], "content")
            if i % 5 == 0:
                state.checkpoint()
        state.checkpoint()
        before_finish()
        state.finish()
    return carried


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    published=st.lists(
        st.one_of(st.none(), st.tuples(st.sampled_from([None, 101, 150]), st.integers(0, 300))),
        min_size=PAGES,
        max_size=PAGES,
    )
)
def test_a_night_that_carries_rows_leaves_the_history_one_that_writes_them_does(
    tmp_path: Path, published: list[tuple[int, int] | None]
) -> None:
    # published: each page listed with its lastmod as last night, or another, or unlisted
    # (a carried row's published columns must then be emptied as a written row's are)
    base = tmp_path / "base.sqlite"
    shutil.rmtree(tmp_path / "x", ignore_errors=True)
    (tmp_path / "x").mkdir()
    written, carried = tmp_path / "x" / "written.sqlite", tmp_path / "x" / "carried.sqlite"
    if not base.exists():
        _history(base)
    shutil.copy(base, written)
    shutil.copy(base, carried)
    count = _night(written, published, carry=False)
    assert _night(carried, published, carry=True) == count
    assert _rows(carried) == _rows(written)
    with sqlite3.connect(carried) as conn:
        assert conn.execute("SELECT count(*) FROM published").fetchone() == (0,)
        # kept past the finish, the night's record (a new run empties it)
        assert conn.execute("SELECT count(*) FROM carried").fetchone() == (count,)


def test_a_listed_page_carried_with_the_lastmod_its_row_holds_writes_no_published_row(
    tmp_path: Path,
) -> None:
    """#26: a carried page listed with the lastmod its row holds already (every page of an
    unchanged night) writes no `published` row, and the finish keeps its row as it is: the
    history is the one a night writing every row leaves. A page listed with another lastmod,
    or not listed (its row's lastmod emptied), or not carried, is published as before."""
    base = tmp_path / "base.sqlite"
    _history(base)  # pages i % 3 != 0 published with (100 + i, 200 + i), "content"
    published: list[tuple[int, int] | None] = [
        (150, 7) if i % 4 == 1 else (100 + i, 200 + i) if i % 3 else None for i in range(PAGES)
    ]
    written, carried = tmp_path / "written.sqlite", tmp_path / "carried.sqlite"
    shutil.copy(base, written)
    shutil.copy(base, carried)
    counts: list[int] = []

    def count() -> None:
        with sqlite3.connect(carried) as conn:
            counts.append(conn.execute("SELECT count(*) FROM published").fetchone()[0])

    assert _night(written, published, carry=False, listed=True) == _night(
        carried, published, carry=True, listed=True, before_finish=count
    )
    assert _rows(carried) == _rows(written)
    with _open(base, 3) as state:  # which pages the rule carries, and with what lastmod
        held = [
            (prior := state.prior(f"{START}p{i}")) is not None
            and (prior.changed, prior.lastmod) == published[i]
            and prior.blocks is not None
            and bool(prior.mime)
            for i in range(PAGES)
        ]
    skipped = sum(held)
    assert skipped >= 3
    assert counts == [sum(1 for dates in published if dates is not None) - skipped]


def test_a_night_after_one_that_wrote_no_published_rows_dates_as_if_it_had(
    tmp_path: Path,
) -> None:
    """#26: after an unchanged night whose listed pages kept their rows (no published row
    written), the next night moves some lastmods, unlists some pages and keeps the rest: the
    history is the one two nights writing every row leave (the review's case)."""
    base = tmp_path / "base.sqlite"
    _history(base)
    same = [(100 + i, 200 + i) if i % 3 else None for i in range(PAGES)]
    moved = [
        None if i % 5 == 1 else (300 + i, 400 + i) if i % 4 == 2 else dates
        for i, dates in enumerate(same)
    ]
    written, carried = tmp_path / "written.sqlite", tmp_path / "carried.sqlite"
    shutil.copy(base, written)
    shutil.copy(base, carried)
    for published in (same, moved):
        _night(written, published, carry=False, listed=True)
        _night(carried, published, carry=True, listed=True)
        assert _rows(carried) == _rows(written)
    assert _rows(carried) != _rows(base)


def test_the_rule_carries_a_page_only_as_its_row_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    _history(path)
    with _open(path, 3) as state:
        url = f"{START}p1"
        prior = state.prior(url)
        assert prior is not None
        targets, nofollow = state.links_of(prior)

        def answer(**changes: object) -> Answer:
            page = revive(prior, PageResult("", not_modified=True), header_given=False,
                          targets=targets, nofollow=nofollow)  # fmt: skip
            fields = {
                "etag": prior.etag, "modified": prior.modified,
                "modified_at": parse_http_date(prior.modified), "stamped": prior.stamped,
            }  # fmt: skip
            for name, value in changes.items():
                if name in fields:
                    fields[name] = value
                else:
                    setattr(page, name, value)
            return Answer(page, 200, too_large=False, revived=True, **fields)  # type: ignore[arg-type]

        assert carries(prior, answer(), "listed")
        assert not carries(prior, answer(), "duplicate")  # another decision
        assert not carries(prior, answer(etag='"new"'), "listed")
        assert not carries(prior, answer(modified="Mon, 01 Jan 2024 00:00:00 GMT"), "listed")
        assert not carries(prior, answer(stamped=True), "listed")
        assert not carries(prior, answer(mime="text/plain"), "listed")
        assert not carries(prior, answer(header=Directives(noindex=True)), "listed")
        assert not carries(prior, answer(canonical=f"{START}other"), "listed")
        assert not carries(prior, answer(targets=list(targets)), "listed")  # names, not ids
        assert not carries(prior, answer(moved_to=f"{START}x"), "listed")
        assert not carries(prior, answer(meta=Directives(nofollow=True)), "listed")
        assert not carries(prior, answer(canonical_in_html=not prior.canonical_in_html), "listed")
        assert not carries(prior, answer(body_key=(prior.body_key or 0) + 1), "listed")
        assert not carries(prior, answer(blocks=b"\x00" * 8), "listed")
        assert not carries(prior, answer(blocks=None), "listed")
        assert not carries(prior, answer(extras=None), "listed")
        assert not carries(prior, answer(nofollow=[f"{START}p2"]), "listed")  # names, not ids
        assert pack(PageExtras(images=(f"{START}i1.png",))) == prior.extras  # packs back


def test_the_rule_names_every_column_a_row_holds_but_those_the_finish_sets() -> None:
    # a field added to the history row must be compared by carries() too (and named in
    # CARRIED_COLUMNS), or a carried row would keep last night's value of it
    from crawler.shell.revalidation import CARRIED_COLUMNS
    from crawler.shell.state_file import HISTORY_NAMES

    assert set(CARRIED_COLUMNS) == set(HISTORY_NAMES) - {"url", "changed", "lastmod", "source"}


# -- a listing kept in its carried row -------------------------------------------------------


def _revived(state: CrawlState, url: str) -> tuple[Prior, Answer]:
    """url's row, and the answer of a 304 that says nothing new revived from it."""
    prior = state.prior(url)
    assert prior is not None
    targets, nofollow = state.links_of(prior)
    page = revive(prior, PageResult("", not_modified=True), header_given=False,
                  targets=targets, nofollow=nofollow)  # fmt: skip
    return prior, Answer(page, 200, prior.etag, prior.modified, None, prior.stamped, False, True)


def _revived_night(state: CrawlState) -> list[tuple[str, Listing, bool]]:
    """Every page of `_history`'s night revived and recorded (Revalidation.record carries
    what the rule carries), then listed: as its row says (every listing field but depth,
    referrer and lastmod the row's or a constant), or, every third page, with a detail, a
    changefreq or another loc. (url, listing, whether its row was carried)."""
    revalidation, made = Revalidation(state), []
    for i in range(PAGES):
        url = f"{START}p{i}"
        state.queued(url, 1 + i % 2, START if i else None)  # a listing's depth: its task's
        prior, answer = _revived(state, url)
        carried = carries(prior, answer, "listed")
        revalidation.record(url, prior, answer, "listed")
        listing = Listing(
            url, url, 200, "", 1 + i % 2, START if i else None, 1_700_000_000_000_000 + i,
            None, None, prior.body_key, prior.extras, prior.blocks, prior.stamped,
        )  # fmt: skip
        if i % 3 == 2:
            listing = [
                dataclasses.replace(listing, detail="(after 1 retries: 503)"),
                dataclasses.replace(listing, changefreq="daily"),
                dataclasses.replace(listing, loc=f"https://public.example/p{i}"),
            ][i // 3 % 3]
        state.listed(listing)
        made.append((url, listing, carried))
    return made


def test_a_page_listed_as_its_carried_row_says_is_listed_by_that_row_and_read_back_as_made(
    tmp_path: Path,
) -> None:
    """#26: a listing whose every field but its depth, referrer and lastmod is its carried
    row's (or a constant) takes no listing row: its carried row keeps the three, and a
    resume reads back the very Listing made, done (not waiting) as a listing row's URL is.
    Any other listing (not carried, a detail, a changefreq, another loc) has its row."""
    path = tmp_path / "s.sqlite"
    _history(path)
    with _open(path, 3) as state:
        made = _revived_night(state)
        state.checkpoint()
        conn = state._open_conn()
        in_rows = {
            u for (u,) in conn.execute("SELECT u.url FROM listings l JOIN urls u ON u.id = l.url")
        }
        by_carried = {
            u for (u,) in conn.execute(
                "SELECT u.url FROM carried c JOIN urls u ON u.id = c.url WHERE c.depth IS NOT NULL"
            )
        }  # fmt: skip
        saved = state.load()
        listings = list(saved.listings)  # streamed from the file: read while it is open
    assert by_carried and in_rows and not by_carried & in_rows
    assert by_carried | in_rows == {url for url, _, _ in made}
    for url, listing, carried in made:
        odd = listing.detail or listing.changefreq or listing.loc != url
        assert (url in by_carried) == (carried and not odd), url
    assert sorted(listings, key=lambda x: x.url) == sorted(
        (listing for _, listing, _ in made), key=lambda x: x.url
    )
    assert saved.queued == []  # every URL listed: none waits
    assert not CrawlState.peek(path, "fp")


def test_a_listing_kept_in_its_carried_row_that_loses_to_a_twin_is_listed_no_more(
    tmp_path: Path,
) -> None:
    """#26: a page listed by its carried row and then unlisted (a better twin), before its
    row is written or after, is listed by nothing a resume reads."""
    path = tmp_path / "s.sqlite"
    _history(path)
    with _open(path, 3) as state:
        made = _revived_night(state)
        compact = [
            url
            for url, listing, carried in made
            if carried and not (listing.detail or listing.changefreq or listing.loc != url)
        ]
        assert len(compact) >= 2
        state.unlisted(compact[0])  # still buffered
        state.checkpoint()
        state.unlisted(compact[1])  # written already
        state.checkpoint()
        listed = {listing.url for listing in state.load().listings}
    assert listed == {url for url, _, _ in made} - set(compact[:2])


def _listed_by_rows(path: Path) -> dict[str, tuple[object, ...]]:
    """URL -> its carried row's listing columns (the referrer named), for the rows that list
    their page."""
    with sqlite3.connect(path) as conn:
        return {
            url: tuple(rest)
            for url, *rest in conn.execute(
                "SELECT u.url, c.depth, r.url, c.lastmod FROM carried c JOIN urls u"
                " ON u.id = c.url LEFT JOIN urls r ON r.id = c.referrer WHERE c.depth IS NOT NULL"
            )
        }


def test_a_page_carried_again_keeps_the_listing_of_its_last_judgement(tmp_path: Path) -> None:
    """A URL whose carried row the file holds already, listing nothing (judged, and stopped
    before it was done, as a page waiting for its canonical's target may be), is judged again
    by the resumed night and listed as its row says: listed by its row, the row written again
    replacing the one on disk."""
    path = tmp_path / "s.sqlite"
    _history(path)
    url = f"{START}p1"

    def judge(state: CrawlState) -> Prior:
        prior, answer = _revived(state, url)
        assert carries(prior, answer, "listed")
        Revalidation(state).record(url, prior, answer, "listed")
        return prior

    with _open(path, 3) as state:
        state.queued(url, 1, START)
        judge(state)
        state.checkpoint()  # carried, listed by nothing, not done: the night stops here
    with CrawlState.open(
        path, fingerprint="fp", start_url=START, resume=True, now=lambda: NIGHT.replace(day=3)
    ) as state:
        assert [row.url for row in state.load().queued] == [url]  # waits again
        prior = judge(state)
        listing = Listing(url, url, 200, "", 1, START, 7, None, None, prior.body_key,
                          prior.extras, prior.blocks, prior.stamped)  # fmt: skip
        state.listed(listing)
        state.checkpoint()
        assert list(state.load().listings) == [listing]
    assert _listed_by_rows(path) == {url: (1, START, 7)}


@pytest.mark.parametrize(
    "columns",
    [
        "url INTEGER PRIMARY KEY REFERENCES urls(id)",  # a version before #26's listings in it
        "url INTEGER PRIMARY KEY, depth INTEGER",  # an opening cut between two new columns
    ],
)
def test_a_carried_table_of_an_older_shape_gets_its_listing_columns(
    tmp_path: Path, columns: str
) -> None:
    """A file whose `carried` lacks some of its listing columns (written by a version before
    them, or its upgrade cut short) is given each it lacks when opened, and a night carries
    and lists into them."""
    path = tmp_path / "s.sqlite"
    _history(path)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE carried")
        conn.execute(f"CREATE TABLE carried ({columns})")
    with _open(path, 3) as state:
        made = _revived_night(state)
        state.checkpoint()
        assert sorted(listing.url for listing in state.load().listings) == sorted(
            url for url, _, _ in made
        )
    assert _listed_by_rows(path)
    with sqlite3.connect(path) as conn:
        names = [row[1] for row in conn.execute("PRAGMA table_info(carried)")]
    assert names == ["url", "depth", "referrer", "lastmod"]


def test_a_finished_nights_carried_listings_are_its_record_and_a_twins_loss_is_kept(
    tmp_path: Path,
) -> None:
    """#26: once the night is finished, its record (reopened) still lists the pages its
    carried rows list; a page that lost to a twin is listed by nothing, and its history
    row's published lastmod is emptied as a written row's would be, while a carried page
    listed with the lastmod its row holds keeps it."""
    path = tmp_path / "s.sqlite"
    _history(path)  # pages i % 3 != 0 published with (100 + i, 200 + i), "content"
    with _open(path, 3) as state:
        made = _revived_night(state)
        state.checkpoint()
        compact = sorted(_listed_by_rows(path), key=lambda u: int(u.rsplit("p", 1)[1]))
        published = [u for u in compact if int(u.rsplit("p", 1)[1]) % 3]
        assert len(published) >= 2
        loser, kept = published[0], published[1:]
        state.unlisted(loser)
        blocks = {url: listing.blocks for url, listing, _ in made}
        for url in kept:  # dated as its row says: no published row (published_by)
            i = int(url.rsplit("p", 1)[1])
            state.last_run_of(url, blocks[url])
            state.published(url, 100 + i, 200 + i, "content")
        state.checkpoint()
        state.finish()
    with CrawlState.open(
        path, fingerprint="fp", start_url=START, resume=True, reopen_finished=True
    ) as state:
        listed = {listing.url for listing in state.load().listings}
    assert set(compact) - {loser} <= listed and loser not in listed
    with sqlite3.connect(path) as conn:
        dates = dict(
            (url, (lastmod, source))
            for url, lastmod, source in conn.execute(
                "SELECT u.url, h.lastmod, h.source FROM history h JOIN urls u ON u.id = h.url"
            )
        )
    assert dates[loser] == (None, None)
    for url in kept:
        assert dates[url] == (200 + int(url.rsplit("p", 1)[1]), "content")


# -- a 304 night stopped and resumed --------------------------------------------------------

TREE = 400


def _etag_tree(edited: set[int]) -> Site:
    """Pages /0 to /TREE-1 as a binary tree, each with an ETag it answers 304 to, slowly
    enough that a night can be stopped half-way; the pages in `edited` have new text."""

    async def page(request: web.Request) -> web.Response:
        n = int(request.path.strip("/") or 0)
        links = "".join(f'<a href="/{m}">{m}</a>' for m in (2 * n + 1, 2 * n + 2) if m < TREE)
        text = f"Page {n}, rewritten with more words" if n in edited else f"Page {n}"
        body = f"<html><body><nav>menu</nav><p>{text}</p>{links}</body></html>".encode()
        tag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        if request.headers.get("If-None-Match") == tag:
            import asyncio

            await asyncio.sleep(0.004)
            return web.Response(status=304, headers={"ETag": tag})
        return web.Response(body=body, content_type="text/html", headers={"ETag": tag})

    return Site({"/robots.txt": Page("", status=404)}, fallback=page)


def test_a_304_night_stopped_and_resumed_equals_an_uninterrupted_one(serve, tmp_path, xsd):
    edited: set[int] = set()
    site = _etag_tree(edited)
    srv = serve(site.app)
    first = tmp_path / "first.sqlite"

    def crawl(out: str, state: Path, *extra: str) -> list[str]:
        return ["crawl", srv.url + "/", "-o", str(tmp_path / out), "--state", str(state),
                "--concurrency", "2", "--quiet", *extra]  # fmt: skip

    assert main(crawl("full", first)) == 0
    edited.update(range(0, TREE, 3))  # their content dates: tonight's, published again below
    assert main(crawl("edited", first)) == 0
    dated = read_published(tmp_path / "edited", xsd).lastmods
    assert sum(1 for lastmod in dated.values() if lastmod) >= TREE // 4
    whole, stopped = tmp_path / "whole.sqlite", tmp_path / "stopped.sqlite"
    shutil.copy(first, whole)
    shutil.copy(first, stopped)
    assert main(crawl("whole", whole)) == 0
    site.requests.clear()
    proc = crawl_process(*crawl("stopped", stopped)[1:])
    wait_for(lambda: len(site.requests) >= TREE // 2, "half the night", proc=proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    with sqlite3.connect(stopped) as conn:  # stopped with rows carried, not yet the history's
        assert conn.execute("SELECT count(*) FROM carried").fetchone()[0] > 0
        # and pages listed by them (no listing row), which the resume must list again
        assert conn.execute("SELECT count(*) FROM carried WHERE depth IS NOT NULL").fetchone()[0]
    assert main([*crawl("stopped", stopped), "--resume"]) == 0
    assert site.requests and all(
        headers.get("If-None-Match") for _, path, headers in site.requests if path != "/robots.txt"
    )
    stopped_out, whole_out = (
        read_published(tmp_path / "stopped", xsd),
        read_published(tmp_path / "whole", xsd),
    )
    assert len(whole_out.locs) == TREE and whole_out.lastmods == dated
    assert [p.read_bytes() for p in stopped_out.files] == [p.read_bytes() for p in whole_out.files]
    assert _rows(stopped) == _rows(whole) == _rows(first)
