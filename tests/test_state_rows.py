"""A checkpoint's rows written many a statement (crawler.shell.state_file.write_rows) leave
the tables executemany, one statement a row, leaves: same rows, same order of keys given
(AUTOINCREMENT), the same winner among duplicates (OR IGNORE: the first, OR REPLACE: the
last), whatever the count against the statement's limits."""

from __future__ import annotations

import sqlite3
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawler.shell import state_file, state_queue
from crawler.shell.listings import Listing
from crawler.shell.state import CrawlState, StateError
from crawler.shell.state_file import STATE_CACHE_KIB, insert_rows, write_rows

_VALUES = st.one_of(
    st.none(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=5), st.binary(max_size=5),
    st.floats(allow_nan=False), st.booleans(),
)  # fmt: skip


_FILLED = _VALUES.filter(lambda value: value is not None)


def _tables(width: int) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    cols = ", ".join(f"c{i}" for i in range(width))
    for name in ("one", "many"):
        conn.execute(f"CREATE TABLE {name} (seq INTEGER PRIMARY KEY AUTOINCREMENT, {cols})")
        conn.execute(f"CREATE TABLE {name}_keyed (k INTEGER PRIMARY KEY, v)")
    return conn


@settings(max_examples=40)
@given(
    width=st.integers(1, 13),
    count=st.sampled_from([0, 1, 2, 76, 499, 500, 501, 1201]),
    data=st.data(),
)
def test_rows_written_many_a_statement_are_those_written_one_a_statement(
    width: int, count: int, data: st.DataObject
) -> None:
    conn = _tables(width)
    rows = [tuple(data.draw(_VALUES) for _ in range(width)) for _ in range(min(count, 30))]
    rows = (rows * (count // max(len(rows), 1) + 1))[:count]  # long lists, cheaply
    cols = ", ".join(f"c{i}" for i in range(width))
    marks = ", ".join("?" * width)
    conn.executemany(f"INSERT INTO one ({cols}) VALUES ({marks})", rows)
    write_rows(conn, f"INSERT INTO many ({cols}) VALUES {{}}", width, rows)
    assert (
        conn.execute("SELECT * FROM many").fetchall()
        == conn.execute("SELECT * FROM one").fetchall()
    )
    keyed = [(data.draw(st.integers(0, 20)), i) for i in range(min(count, 700))]
    for verb in ("OR IGNORE", "OR REPLACE"):
        conn.executemany(f"INSERT {verb} INTO one_keyed (k, v) VALUES (?, ?)", keyed)
        write_rows(conn, f"INSERT {verb} INTO many_keyed (k, v) VALUES {{}}", 2, iter(keyed))
        assert (
            conn.execute("SELECT * FROM many_keyed ORDER BY k").fetchall()
            == conn.execute("SELECT * FROM one_keyed ORDER BY k").fetchall()
        )
    done = [(seq,) for seq in range(1, count + 1, 2)]
    conn.executemany("UPDATE one SET c0 = 'done' WHERE seq = ?", done)
    write_rows(conn, "UPDATE many SET c0 = 'done' WHERE seq IN ({})", 1, done)
    assert (
        conn.execute("SELECT * FROM many").fetchall()
        == conn.execute("SELECT * FROM one").fetchall()
    )


# up to 20 rows of 13 drawn values each (the rest copies) and 200 keys: a draw that runs out
# of hypothesis' buffer, or is slow to make, is no finding
@settings(max_examples=60, suppress_health_check=[HealthCheck.data_too_large, HealthCheck.too_slow])
@given(
    width=st.integers(1, 13),
    count=st.sampled_from([1, 2, 3, 63, 64, 65, 200]),
    data=st.data(),
)
def test_rows_inserted_with_their_empty_columns_left_out_are_those_written_whole(
    width: int, count: int, data: st.DataObject
) -> None:
    """#26: insert_rows leaves out of a statement a column None in each of its rows (no
    None bound) and writes every other value as executemany does: the same rows, keys in
    the same order (AUTOINCREMENT), the same winner of OR REPLACE, and NULL where a column
    was left out; no statement names a column left empty."""
    conn = _tables(width)
    columns = tuple(f"c{i}" for i in range(width))
    empty = data.draw(st.lists(st.booleans(), min_size=width, max_size=width))
    firm = empty.index(False) if False in empty else -1  # never None: a column is named
    some = [
        tuple(
            None if empty[i] else data.draw(_FILLED if i == firm else _VALUES) for i in range(width)
        )
        for _ in range(min(count, 20))
    ]
    rows = (some * (count // len(some) + 1))[:count]
    marks = ", ".join("?" * width)
    conn.executemany(f"INSERT INTO one ({', '.join(columns)}) VALUES ({marks})", rows)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    insert_rows(conn, f"INSERT INTO many ({', '.join(columns)}) VALUES {{}}", columns, rows)
    conn.set_trace_callback(None)
    assert (
        conn.execute("SELECT * FROM many").fetchall()
        == conn.execute("SELECT * FROM one").fetchall()
    )
    left_out = [c for c, e in zip(columns, empty, strict=True) if e]
    named = [s[s.index("(") + 1 : s.index(")")].split(", ") for s in statements]
    assert len(named) == len(statements) > 0
    if len(left_out) < width:  # a statement names one column at least
        assert not any(set(left_out) & set(names) for names in named)
    keyed = [(data.draw(st.integers(0, 20)), None if empty[0] else i) for i in range(count)]
    conn.executemany("INSERT OR REPLACE INTO one_keyed (k, v) VALUES (?, ?)", keyed)
    insert_rows(conn, "INSERT OR REPLACE INTO many_keyed (k, v) VALUES {}", ("k", "v"), keyed)
    assert (
        conn.execute("SELECT * FROM many_keyed ORDER BY k").fetchall()
        == conn.execute("SELECT * FROM one_keyed ORDER BY k").fetchall()
    )


#: values of an INTEGER and a TEXT column, few so that a statement's rows share them: ints
#: and what equals them (a bool, a float), texts a literal must quote or cannot hold
_INTEGERS = st.sampled_from([0, 1, 200, -(2**63), 2**63 - 1, True, False, 1.0, 2.5, None])
_TEXTS = st.sampled_from(
    ["", "out_of_scope", "it's", "''", "é", "a\x00b", "x" * 64, "y" * 65, "1", None]
)


class _Recorded(sqlite3.Connection):
    """A connection that keeps the text of each statement it is given (the trace callback
    shows them with their values in place)."""

    texts: list[str]
    bound: list[int]

    def execute(
        self, sql: str, parameters: Sequence[object] | Mapping[str, object] = (), /
    ) -> sqlite3.Cursor:
        self.texts.append(sql)
        self.bound.append(len(parameters))
        return super().execute(sql, parameters)


def _recorded(path: str = ":memory:") -> _Recorded:
    conn = sqlite3.connect(path, isolation_level=None, factory=_Recorded)
    conn.texts, conn.bound = [], []
    return conn


@settings(max_examples=60)
@given(count=st.sampled_from([1, 31, 32, 33, 64, 65, 97, 200]), data=st.data())
def test_values_written_into_the_statement_store_what_binding_them_stores(
    count: int, data: st.DataObject
) -> None:
    """#26: insert_rows binds a column's value once when every row of a statement of 64
    rows holds it (constants), a numbered parameter each row names: the rows stored are
    executemany's, value and type (an equal bool or float in an INTEGER column stores as
    the first row's value does), and such a value is bound once a statement."""
    conn = _recorded()
    for name in ("one", "many"):
        conn.execute(
            f"CREATE TABLE {name} (seq INTEGER PRIMARY KEY AUTOINCREMENT, i INTEGER, t TEXT,"
            " k INTEGER)"
        )
    firm = data.draw(st.tuples(_INTEGERS, _TEXTS))  # most rows hold these
    rows = [
        (
            data.draw(_INTEGERS) if data.draw(st.integers(0, 9)) == 0 else firm[0],
            data.draw(_TEXTS) if data.draw(st.integers(0, 9)) == 0 else firm[1],
            n,
        )
        for n in range(count)
    ]
    conn.executemany("INSERT INTO one (i, t, k) VALUES (?, ?, ?)", rows)
    conn.texts.clear()
    conn.bound.clear()
    insert_rows(
        conn, "INSERT INTO many (i, t, k) VALUES {}", ("i", "t", "k"), rows, constants=("i", "t")
    )
    read = "SELECT seq, i, typeof(i), t, typeof(t), k FROM {}"
    assert (
        conn.execute(read.format("many")).fetchall() == conn.execute(read.format("one")).fetchall()
    )
    shared = type(firm[0]) in (int, bool) and type(firm[1]) is str
    if count >= 64 and shared and all(row[:2] == firm for row in rows[:64]):
        groups = ", ".join(f"(?1, ?2, ?{n})" for n in range(3, 64 + 3))
        assert conn.texts[0].endswith(f"VALUES {groups}")
        assert conn.bound[0] == 2 + 64


def test_a_listing_statement_holds_the_values_its_rows_share(tmp_path: Path) -> None:
    """#26: a checkpoint's listings of one status, detail and stamp bind what differs a
    row (url, depth, referrer, lastmod, body key) a row, and those once a statement."""
    path = tmp_path / "s.db"
    with CrawlState.open(path, fingerprint="f", start_url="http://a.test/", resume=False) as state:
        queue = state._queue
        for n in range(64):
            url = f"http://a.test/{n}"
            state.listed(Listing(url, url, 200, "", 2, "http://a.test/", n, None, None, n))
        conn = _recorded(str(path))
        conn.execute("BEGIN IMMEDIATE")
        queue.write(conn)
        conn.execute("ROLLBACK")
        conn.close()
    at = next(i for i, s in enumerate(conn.texts) if s.startswith("INSERT INTO listings"))
    insert = conn.texts[at]
    assert conn.bound[at] == 3 + 64 * 5, insert[:200]
    assert (
        "VALUES (?4, ?1, ?2, ?5, ?6, ?7, ?8, ?3), (?9, ?1, ?2, ?10, ?11, ?12, ?13, ?3)," in insert
    )


def test_no_column_of_the_state_has_a_default() -> None:
    """insert_rows leaves out a column None in every row: it comes out NULL only because
    no column of the state has a DEFAULT (a column added with one would need None bound)."""
    conn = sqlite3.connect(":memory:")
    for statement in state_file._SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    tables = [
        name for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")
    ]
    assert len(tables) >= 10
    for table in tables:
        for _, name, _, _, default, _ in conn.execute(f"PRAGMA table_info({table})"):
            assert default is None, (table, name)


@given(st.lists(_VALUES, min_size=1, max_size=6))
def test_the_adapters_registered_bind_what_sqlite3_binds_unadapted(values: list[object]) -> None:
    """state_file registers adapters for None, bytes and bool (found at once, where
    sqlite3's search for one cost about 3,200 instructions a value): each binds the same
    storage class and value as the value itself would, an empty blob included."""
    assert sqlite3.adapters[(type(None), sqlite3.PrepareProtocol)](None) is None
    conn = sqlite3.connect(":memory:")
    marks = ", ".join(f"typeof(?{i}), ?{i}" for i in range(1, len(values) + 1))
    got = conn.execute(f"SELECT {marks}", values).fetchone()
    expected: list[object] = []
    for value in values:
        kind = {type(None): "null", bytes: "blob", bool: "integer", int: "integer"}.get(
            type(value), "real" if isinstance(value, float) else "text"
        )
        expected += [kind, int(value) if isinstance(value, bool) else value]
    assert list(got) == expected


def test_the_state_connection_keeps_its_durability_and_a_bounded_page_cache(
    tmp_path: Path,
) -> None:
    """WAL with synchronous=NORMAL (a commit survives the process's crash: the resume's
    promise), and a page cache of at most 16 MiB, whatever the size of the site: a night
    reads most pages once, and the cache filled to its size stayed in the peak RSS."""
    with CrawlState.open(
        tmp_path / "state.sqlite", fingerprint="fp", start_url="http://example.com/", resume=False
    ) as state:
        conn = state._open_conn()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert conn.execute("PRAGMA cache_size").fetchone()[0] == -STATE_CACHE_KIB
    assert STATE_CACHE_KIB <= 16 * 1024


def test_decided_takes_its_values_in_the_order_its_row_is_written() -> None:
    """#26: decided() appends its row as a tuple in the insert's column order (_DECIDED),
    its parameters named as the columns: a parameter moved or renamed fails here, never a
    value written into another column (status and depth are both ints)."""
    import inspect

    from crawler.shell import state_queue

    parameters = tuple(inspect.signature(state_queue.ResumeQueue.decided).parameters)
    assert parameters[1:] == state_queue._DECIDED


def _finished(path: Path, start: str, urls: list[str], *, pages: bool) -> None:
    """A finished run in which every one of urls answered 404 (with its history row when
    `pages`)."""
    with CrawlState.open(path, fingerprint="fp", start_url=start, resume=False) as state:
        for url in urls:
            state.queued(url, 1, None)
            if pages:
                state.page(url, None, etag=None, modified=None, status=404,
                           reason="http_error", result=None)  # fmt: skip
            state.decided(url, 404, "http_error", "HTTP 404", 1, None)
        state.finish()


@pytest.mark.interpreted
@pytest.mark.parametrize("upsert", [True, False])
def test_urls_queued_again_are_updated_as_one_update_a_row_updates_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, upsert: bool
) -> None:
    """#26: the URLs of an earlier run queued again (ResumeQueue.write, an upsert many a
    statement) get the state, depth, referrer and queue place an UPDATE by id gives them,
    every other column and row left as it was: no row added, no URL rewritten. (With a
    SQLite before 3.24, no upsert: the UPDATE by id a row.)"""
    monkeypatch.setattr(state_queue, "_UPSERT", upsert)
    path = tmp_path / "state.sqlite"
    start = "http://example.com/"
    urls = [f"{start}p{i}" for i in range(150)]
    _finished(path, start, urls, pages=False)
    with CrawlState.open(path, fingerprint="fp", start_url=start, resume=False) as state:
        conn = state._open_conn()
        before = conn.execute("SELECT * FROM urls ORDER BY id").fetchall()
        requeued = [
            (url, i % 5, None if i % 7 == 0 else urls[i // 2]) for i, url in enumerate(urls)
        ]
        for url, depth, referrer in requeued[::2] + requeued[1::2]:  # ids out of order
            state.queued(url, depth, referrer)
        expected = {row[0]: list(row) for row in before}
        for depth, referrer, qseq, uid in state._queue._requeue:
            expected[uid][2:] = [0, depth, referrer, qseq]
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        state.checkpoint()
        conn.set_trace_callback(None)
        after = conn.execute("SELECT * FROM urls ORDER BY id").fetchall()
    assert [list(row) for row in after] == list(expected.values())
    assert any(row[4] is None for row in after) and any(row[4] for row in after)
    upserts = [s for s in statements if s.startswith("INSERT INTO urls")]
    assert len(upserts) == (5 if upsert else 0)  # 64+64+16+4+2


def test_a_finish_keeps_the_history_of_the_urls_met_and_only_theirs(tmp_path: Path) -> None:
    """#26: the finish drops the history rows of URLs this run did not meet (NOT EXISTS,
    a look-up by id a row): a URL fetched or only queued (a limit came first) keeps its
    row, one never met or only named as a referrer loses it."""
    path = tmp_path / "state.sqlite"
    start = "http://example.com/"
    urls = [f"{start}p{i}" for i in range(6)]
    _finished(path, start, urls, pages=True)
    with CrawlState.open(path, fingerprint="fp", start_url=start, resume=False) as state:
        state.queued(urls[0], 1, None)
        state.decided(urls[0], 404, "http_error", "HTTP 404", 1, urls[3])  # p3: named only
        state.page(urls[0], None, etag=None, modified=None, status=404, reason="http_error",
                   result=None)  # fmt: skip
        state.queued(urls[1], 1, None)  # met, never fetched
        state.decided(urls[4], None, "robots_txt", "", 1, None)  # met, screened out
        state.finish()
        conn = state._open_conn()
        kept = conn.execute(
            "SELECT u.url FROM history h JOIN urls u ON u.id = h.url ORDER BY h.url"
        ).fetchall()
    assert [url for (url,) in kept] == [urls[0], urls[1], urls[4]]


def test_the_first_url_of_each_body_is_one_row_a_checkpoint_read_back_in_order(
    tmp_path: Path,
) -> None:
    """#26: a page's body key (a 304 night records one a page) is logged, a row a checkpoint
    of packed keys and ids, not a row a body keyed by its hash; a key logged again (a
    replay) keeps its first URL, across checkpoints, as the bodies table's INSERT OR IGNORE
    did; keys over the whole signed 64-bit range come back as they went."""
    path = tmp_path / "s.db"
    keys = [-(2**63), -1, 0, 7, 2**40, 2**63 - 1]
    with CrawlState.open(path, fingerprint="f", start_url="http://a.test/", resume=False) as state:
        for n, key in enumerate(keys):
            state.queued(f"http://a.test/{n}", 1, None)
            state.body(key, f"http://a.test/{n}")
        state.checkpoint()
        state.body(7, "http://a.test/again")  # met again, by a replay: not the first
        state.body(8, "http://a.test/new")
        state.checkpoint()
        conn = state._open_conn()
        logged = conn.execute("SELECT count(*) FROM first_bodies").fetchone()[0]
        old = conn.execute("SELECT count(*) FROM bodies").fetchone()[0]
        saved = state.load()
    assert (logged, old) == (2, 0)
    assert saved.bodies == {
        **{key: f"http://a.test/{n}" for n, key in enumerate(keys)},
        8: "http://a.test/new",
    }


def test_a_crawl_stopped_by_a_version_keeping_its_record_otherwise_is_not_resumed(
    tmp_path: Path,
) -> None:
    """A stopped crawl whose record is kept otherwise (an older version's: URLs written DONE,
    first URLs in `bodies`; its fingerprint without RECORD_FORMAT) is not resumed: --resume
    says why in a line, and the nightly job's peek says there is nothing to resume, so it
    starts afresh on the history. Read either way, the record would be misread."""
    path = tmp_path / "s.db"
    start = "http://a.test/"
    with CrawlState.open(path, fingerprint="f", start_url=start, resume=False) as state:
        state.queued(start, 0, None)
        state.queued("http://a.test/waiting", 1, start)
        state.checkpoint()
    assert CrawlState.peek(path, "f")
    for stored in ("f", "f+1", "f+2", "f+4"):
        conn = sqlite3.connect(path)
        with conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'fingerprint'", (stored,))
        conn.close()
        assert not CrawlState.peek(path, "f")
        with pytest.raises(StateError, match="stopped by another version of sitemap-crawler"):
            CrawlState.open(path, fingerprint="f", start_url=start, resume=True)
    with pytest.raises(StateError, match="different configuration"):  # another crawl's
        CrawlState.open(path, fingerprint="g", start_url=start, resume=True)


def test_a_url_of_an_earlier_run_is_done_by_its_decision_or_listing_row(tmp_path: Path) -> None:
    """#26: a URL of an earlier run queued again is written QUEUED once and never DONE: its
    decision or listing row says it is done, for a resume (load) and the job's peek alike;
    one with neither still waits; a URL new to the file is written as it is at the
    checkpoint."""
    path = tmp_path / "s.db"
    start = "http://a.test/"
    urls = [f"{start}p{i}" for i in range(4)]
    _finished(path, start, urls, pages=True)  # a history: the next run keeps the URL ids
    with CrawlState.open(path, fingerprint="fp", start_url=start, resume=False) as state:
        for url in urls:
            state.queued(url, 1, start)
        state.queued(f"{start}new", 1, start)
        state.checkpoint()
        state.decided(urls[0], 404, "http_error", "", 1, start)
        state.listed(Listing(urls[1], urls[1], 200, "", 1, start, None, None, None, None))
        state.decided(f"{start}new", 404, "http_error", "", 1, start)
        state.checkpoint()
        conn = state._open_conn()
        states = dict(conn.execute("SELECT url, state FROM urls"))
        waiting = [row.url for row in state.load().queued]
    assert [states[u] for u in urls] == [state_file.QUEUED] * 4
    assert states[f"{start}new"] == state_file.QUEUED  # on disk before it was done
    assert waiting == urls[2:]
    assert CrawlState.peek(path, "fp")
    with CrawlState.open(path, fingerprint="fp", start_url=start, resume=True) as state:
        for url in urls[2:]:
            state.decided(url, 404, "http_error", "", 1, start)
        state.checkpoint()
        assert state.load().queued == []
    assert not CrawlState.peek(path, "fp")  # nothing waits: nothing to resume


def _saved(path: Path, start: str, sql: str, *params: object, finish: bool = False) -> None:
    """A crawl of `start` saved in path (checkpointed, or finished), then the file edited by
    one statement, as damage or another version would leave it."""
    with CrawlState.open(path, fingerprint="f", start_url=start, resume=False) as state:
        state.queued(start, 0, None)
        if finish:
            state.finish()
        else:
            state.checkpoint()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(sql, params)
    conn.close()


@pytest.mark.parametrize(
    ("keys", "urls"),
    [
        (b"\x01" * 8, b""),
        (b"\x01" * 7, b"\x01" * 4),
        (b"", b""),
        ("text", b"\x01" * 4),
        (b"\x01" * 8, array("I", [999]).tobytes()),  # no such URL
        (b"\x01" * 8, array("I", [0]).tobytes()),
    ],
)
def test_a_first_bodies_row_it_cannot_read_is_a_state_error(
    tmp_path: Path, keys: object, urls: bytes
) -> None:
    path = tmp_path / "s.db"
    insert = "INSERT INTO first_bodies (keys, urls) VALUES (?, ?)"
    _saved(path, "http://a.test/", insert, keys, urls)
    with (
        CrawlState.open(path, fingerprint="f", start_url="http://a.test/", resume=True) as state,
        pytest.raises(StateError, match=r"cannot read state file .*first_bodies"),
    ):
        state.load()


@pytest.mark.parametrize("table", ["decisions", "listings"])
@pytest.mark.parametrize("uid", [999, 0, -1, "x"])
def test_a_decision_or_listing_of_no_url_of_the_file_is_a_state_error(
    tmp_path: Path, table: str, uid: object
) -> None:
    """A row naming a URL id the file does not hold (a damaged file) is said in a line by
    the resume, not met as an IndexError."""
    path = tmp_path / "s.db"
    start = "http://a.test/"
    columns = (
        "status, detail, depth) VALUES (?, 200"
        if table == "listings"
        else ("reason, detail, depth) VALUES (?, 'x'")
    )
    _saved(path, start, f"INSERT INTO {table} (url, {columns}, '', 0)", uid)
    with (
        CrawlState.open(path, fingerprint="f", start_url=start, resume=True) as state,
        pytest.raises(StateError, match=rf"cannot read state file .*{table} names no URL"),
    ):
        state.load()


def test_resume_of_a_finished_crawl_of_another_version_says_it_finished(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    start = "http://a.test/"
    _saved(path, start, "UPDATE meta SET value = 'f' WHERE key = 'fingerprint'", finish=True)
    with pytest.raises(StateError, match=r"finished and was published .*nothing to resume"):
        CrawlState.open(path, fingerprint="f", start_url=start, resume=True)
