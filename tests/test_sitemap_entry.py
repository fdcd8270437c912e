"""Entry validation and the W3C Datetime / IRI helpers."""

from __future__ import annotations

import dataclasses
import pickle
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_out import Alternate, Entry, EntryError, encode_uri, format_lastmod
from sitemap_out.entry import News, Video

OK = "https://example.com/page"


@pytest.mark.parametrize(
    "loc",
    [
        "https://example.com/",
        "http://example.com:8080/a/b?x=1&y='2'#frag",
        "https://user:pw@example.com/%C3%BCmlat.html",
        "HTTPS://EXAMPLE.COM/",
        "http://[::1]:8080/index",
        "https://example.com/" + "a" * (2048 - 20),
    ],
)
def test_valid_locs(loc: str) -> None:
    assert Entry(loc).loc == loc


@pytest.mark.parametrize(
    ("loc", "why"),
    [
        ("/relative/path", "absolute"),
        ("ftp://example.com/file", "absolute"),
        ("https:///nohost", "RFC 3986"),
        ("https://example.com/ümlat.html", "non-ASCII"),
        ("https://example.com/a b", "RFC 3986"),
        ("https://example.com/<script>", "RFC 3986"),
        ('https://example.com/"q"', "RFC 3986"),
        ("https://example.com/100%", "%XX"),
        ("https://example.com/%zz", "%XX"),
        ("https://example.com/" + "a" * 2029, "2048"),
        ("http://a.io", "minimum is 12"),
    ],
)
def test_invalid_locs_name_url_and_field(loc: str, why: str) -> None:
    with pytest.raises(EntryError) as info:
        Entry(loc)
    assert info.value.field == "loc"
    assert info.value.loc == loc
    assert why in str(info.value)
    assert isinstance(info.value, ValueError)


def test_non_str_loc() -> None:
    with pytest.raises(EntryError, match="must be a str"):
        Entry(b"https://example.com/")  # type: ignore[arg-type]


def test_encode_uri_turns_iris_into_accepted_locs() -> None:
    assert encode_uri("https://example.com/ümlat.html") == "https://example.com/%C3%BCmlat.html"
    assert encode_uri("https://bücher.example/a b?q=ä&x=%41") == (
        "https://xn--bcher-kva.example/a%20b?q=%C3%A4&x=%41"
    )
    assert encode_uri("https://example.com/100%") == "https://example.com/100%25"
    once = encode_uri("https://example.com/ü?a=ö#ä")
    assert encode_uri(once) == once
    Entry(once)


def test_lastmod_formats() -> None:
    assert format_lastmod(datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2024-01-02T03:04:05+00:00"
    cet = timezone(timedelta(hours=1))
    assert format_lastmod(datetime(2024, 1, 2, 3, 4, 5, 999, tzinfo=cet)) == (
        "2024-01-02T03:04:05+01:00"
    )
    assert format_lastmod(date(2024, 1, 2)) == "2024-01-02"


def test_naive_datetime_rejected() -> None:
    with pytest.raises(EntryError, match="naive") as info:
        Entry(OK, lastmod=datetime(2024, 1, 2, 3, 4, 5))
    assert info.value.field == "lastmod"


def test_offset_with_seconds_rejected() -> None:
    odd = timezone(timedelta(hours=1, seconds=7))
    with pytest.raises(EntryError, match="seconds"):
        Entry(OK, lastmod=datetime(2024, 1, 2, tzinfo=odd))


def test_lastmod_type_checked() -> None:
    with pytest.raises(EntryError, match="datetime or date"):
        Entry(OK, lastmod="2024-01-02")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "freq", ["always", "hourly", "daily", "weekly", "monthly", "yearly", "never"]
)
def test_changefreq_values(freq: str) -> None:
    assert Entry(OK, changefreq=freq).changefreq == freq


@pytest.mark.parametrize("freq", ["sometimes", "Daily", " daily", ""])
def test_bad_changefreq(freq: str) -> None:
    with pytest.raises(EntryError) as info:
        Entry(OK, changefreq=freq)
    assert info.value.field == "changefreq"


@pytest.mark.parametrize("priority", [0, 0.0, 0.5, 1, 1.0])
def test_priority_ok(priority: float) -> None:
    Entry(OK, priority=priority)


@pytest.mark.parametrize("priority", [-0.1, 1.01, float("nan"), float("inf"), True, "0.5"])
def test_bad_priority(priority: object) -> None:
    with pytest.raises(EntryError) as info:
        Entry(OK, priority=priority)  # type: ignore[arg-type]
    assert info.value.field == "priority"


def test_images_and_alternates_are_checked_and_frozen_to_tuples() -> None:
    e = Entry(OK, images=["https://example.com/a.png"], alternates=[Alternate("de", OK)])
    assert e.images == ("https://example.com/a.png",)
    assert e.alternates == (Alternate("de", OK),)
    hash(e)
    with pytest.raises(EntryError, match="images"):
        Entry(OK, images=("not a url",))
    with pytest.raises(EntryError, match="1000"):
        Entry(OK, images=tuple(f"https://example.com/{i}.png" for i in range(1001)))
    with pytest.raises(EntryError, match="alternates"):
        Entry(OK, alternates=(("de", OK),))  # type: ignore[arg-type]


@pytest.mark.parametrize("lang", ["en", "de-CH", "x-default", "zh-Hant-TW"])
def test_alternate_ok(lang: str) -> None:
    Alternate(lang, OK)


@pytest.mark.parametrize(("lang", "href"), [("en_US", OK), ("", OK), ("en", "/rel")])
def test_alternate_bad(lang: str, href: str) -> None:
    with pytest.raises(EntryError):
        Alternate(lang, href)


def test_an_unchecked_entry_puts_each_value_in_its_own_field() -> None:
    """#26: Entry._unchecked sets the slots by their setters, named one by one: every field
    the dataclass has is set, each to its own value (a field added, renamed or reordered
    would fail here)."""
    from dataclasses import fields

    from sitemap_out.entry import Video

    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    video = Video(
        "https://example.com/t.jpg", "A title", "A description", "https://example.com/v.mp4"
    )
    alternate = Alternate("de", "https://example.com/de/")
    full = Entry(OK, when, "daily", 0.5, ("https://example.com/i.png",), (alternate,), (video,))
    made = Entry._unchecked(OK, when, "daily", 0.5, full.images, full.alternates, full.videos)
    assert made == full and hash(made) == hash(full)
    assert [f.name for f in fields(Entry)] == [
        "loc", "lastmod", "changefreq", "priority", "images", "alternates", "videos", "news",
    ]  # fmt: skip
    for f in fields(Entry):
        assert getattr(made, f.name) == getattr(full, f.name), f.name


def test_a_redated_entry_is_the_entry_with_its_lastmod_checked() -> None:
    """#26: made again with another lastmod (the crawl's publish), an entry equals the one
    the constructor makes; only the lastmod is checked, with the constructor's error."""
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    for lastmod in (when, date(2026, 1, 2), None, when.astimezone(timezone(timedelta(hours=2)))):
        args = ("https://example.com/page", lastmod, "daily", 0.5)
        redated = Entry.redated(*args)
        assert redated == Entry(*args) and hash(redated) == hash(Entry(*args))
        assert redated.namespaces == 0
    assert Entry.redated(OK, None) == Entry(OK)
    with pytest.raises(EntryError) as caught:
        Entry.redated(OK, when.replace(tzinfo=None))
    assert caught.value.field == "lastmod"
    with pytest.raises(EntryError):
        Entry.redated(OK, "2026-01-02")  # type: ignore[arg-type]


def test_normalised_entry_is_the_checked_entry() -> None:
    """The crawl's constructor (for URLs its normaliser made) builds the same Entry, and
    still refuses what a normaliser does not rule out: too long, too many, a bad loc."""
    from datetime import UTC, datetime

    from sitemap_out.entry import Alternate, Entry, EntryError, Video

    images = ("https://example.com/a.jpg", "https://example.com/b.jpg?w=1&x='y'")
    alternates = (
        Alternate("de", "https://example.com/de/"),
        Alternate("x-default", "https://example.com/"),
    )
    videos = (Video("https://example.com/t.jpg", "T", "D", "https://example.com/v.mp4"),)
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    args = ("https://example.com/page", when, "daily", 0.5)
    checked = Entry(*args, images=images, alternates=alternates, videos=videos)
    fast = Entry.normalised(
        *args,
        images=images,
        alternates=tuple(Alternate.normalised(a.hreflang, a.href) for a in alternates),
        videos=videos,
    )
    assert fast == checked and hash(fast) == hash(checked)
    assert fast.namespaces == checked.namespaces
    assert Entry.normalised("https://example.com/page") == Entry("https://example.com/page")
    long = "https://example.com/" + "a" * 2100
    with pytest.raises(EntryError) as caught:
        Entry.normalised("https://example.com/page", images=("https://example.com/x", long))
    assert caught.value.field == "images"
    with pytest.raises(EntryError):
        Entry.normalised("https://example.com/page", images=("https://example.com/x",) * 1001)
    with pytest.raises(EntryError) as caught:
        Entry.normalised("short", images=images)
    assert caught.value.field == "loc"
    with pytest.raises(EntryError):
        Entry.normalised("https://example.com/page", when.replace(tzinfo=None))
    with pytest.raises(EntryError):
        Alternate.normalised("de", long)
    with pytest.raises(EntryError):
        Entry.normalised("https://example.com/page", alternates=("de",))  # type: ignore[arg-type]


@pytest.mark.parametrize("bits", range(16))
def test_an_entry_s_namespaces_are_the_extensions_it_carries(bits: int) -> None:
    """The quick answer for a plain entry and the sum of bits agree on every mix."""
    loc = "https://example.com/page"
    news = None
    if bits & 8:
        news = News("Example", "en", datetime(2026, 1, 1, tzinfo=UTC), "A title")
    video = None
    if bits & 4:
        video = Video("https://example.com/t.jpg", "Title", "Words", "https://example.com/v.mp4")
    entry = Entry(
        loc,
        images=("https://example.com/a.png",) if bits & 1 else (),
        alternates=(Alternate("de", "https://example.com/de"),) if bits & 2 else (),
        videos=(video,) if video is not None else (),
        news=news,
    )
    assert entry.namespaces == bits


def test_checked_values_raise_what_the_constructor_raises() -> None:
    """#26: Entry.check_values (the crawl's check of a page when it is listed, without
    making the entry) refuses exactly what Entry(loc, lastmod, changefreq, priority) does,
    with the same field and words, and accepts what it accepts."""
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    cases = [
        (OK, None, None, None),
        (OK, when, "daily", 0.5),
        (OK, date(2026, 1, 2), "never", 1),
        (OK, when.astimezone(timezone(timedelta(hours=2))), None, 0.0),
        ("http://a.io", when, None, None),
        ("https://example.com/a b", None, None, None),
        ("https://example.com/100%", None, None, None),
        ("https://example.com/" + "a" * 2029, None, None, None),
        (OK, when.replace(tzinfo=None), None, None),
        (OK, "2026-01-02", None, None),
        (OK, when, "sometimes", None),
        (OK, when, None, 1.5),
        (OK, when, None, True),
        (OK, when, None, "0.5"),
    ]
    for args in cases:
        try:
            Entry(*args)  # type: ignore[arg-type]
        except EntryError as exc:
            with pytest.raises(EntryError) as caught:
                Entry.check_values(*args)  # type: ignore[arg-type]
            assert (caught.value.loc, caught.value.field, str(caught.value)) == (
                exc.loc, exc.field, str(exc),
            ), args  # fmt: skip
        else:
            Entry.check_values(*args)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(
    loc=st.sampled_from([OK, "https://example.com/a?b=c#d", "http://h.example/" + "x" * 40]),
    lastmod=st.one_of(
        st.none(),
        st.dates(),
        st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=2))])),
    ),
    changefreq=st.sampled_from([None, "daily", "never"]),
    priority=st.one_of(st.none(), st.floats(0.0, 1.0)),
    images=st.lists(st.sampled_from([OK + ".jpg", "https://example.com/b.png"]), max_size=2),
)
def test_an_entry_made_unchecked_is_the_constructor_s(
    loc: str,
    lastmod: datetime | date | None,
    changefreq: str | None,
    priority: float | None,
    images: list[str],
) -> None:
    """#26: normalised and redated fill an Entry's settable twin and make it an Entry: it
    is one (type, equality, hash, repr, pickling) and stays frozen, as the constructor's."""
    with_images = Entry(loc, lastmod, changefreq, priority, images=tuple(images))
    for entry, made in (
        (Entry.normalised(loc, lastmod, changefreq, priority, images=tuple(images)), with_images),
        (
            Entry.redated(loc, lastmod, changefreq, priority),
            Entry(loc, lastmod, changefreq, priority),
        ),
    ):
        assert type(entry) is Entry
        assert entry == made and hash(entry) == hash(made) and repr(entry) == repr(made)
        assert pickle.loads(pickle.dumps(entry)) == made
        with pytest.raises(dataclasses.FrozenInstanceError):
            entry.loc = OK  # type: ignore[misc]


def test_an_entry_made_unchecked_has_every_slot_set() -> None:
    """Entry._unchecked sets Entry's slots by name (its fast path): a field added to Entry
    and not set there would be missing from every entry the publish makes."""
    entry = Entry.redated(OK, None)
    for name in Entry.__slots__:
        getattr(entry, name)  # an unset slot raises AttributeError


def test_a_subclass_s_unchecked_entry_is_of_the_subclass() -> None:
    """#26: the twin has Entry's layout only; a subclass's entry is made field by field."""

    class Dated(Entry):
        pass

    when = datetime(2026, 1, 2, tzinfo=UTC)
    entry = Dated.redated(OK, when, "daily")
    assert type(entry) is Dated and (entry.loc, entry.lastmod, entry.changefreq) == (
        OK,
        when,
        "daily",
    )
