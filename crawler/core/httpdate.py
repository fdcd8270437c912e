"""HTTP dates (RFC 9110 section 5.6.7): the three formats a server may still send.

Used for Last-Modified -> lastmod and, for retries, Retry-After. A value we cannot parse
gives None: a wrong lastmod is worse than none.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache

_MONTHS = {
    m: i
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
_IMF = re.compile(  # Sun, 06 Nov 1994 08:49:37 GMT
    r"^[A-Za-z]{3}, (\d{2}) ([A-Za-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$"
)
# The obsolete forms, as patterns compiled (and cached by re) at the first date in them: a
# server sends IMF dates, so nearly every run never needs them (#26: a start pays no compile)
_RFC850_PATTERN = r"^[A-Za-z]{6,9}, (\d{2})-([A-Za-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$"
_ASCTIME_PATTERN = r"^[A-Za-z]{3} ([A-Za-z]{3}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$"


def parse_http_date(value: str | None, *, now: datetime | None = None) -> datetime | None:
    """A timezone-aware UTC datetime, or None for anything that is not an RFC 9110 date."""
    if not value:
        return None
    text = value.strip()
    imf = _imf(text)
    if imf is not _NOT_IMF:
        return imf
    try:
        if m := re.match(_RFC850_PATTERN, text):  # Sunday, 06-Nov-94 08:49:37 GMT
            day, mon, yy, hh, mm, ss = m.groups()
            # RFC 9110: a two-digit year more than 50 years in the future is in the past.
            year = 2000 + int(yy)
            current = (now or datetime.now(UTC)).year
            if year > current + 50:
                year -= 100
        elif m := re.match(_ASCTIME_PATTERN, text):  # Sun Nov  6 08:49:37 1994
            mon, day, hh, mm, ss, digits = m.groups()
            year = int(digits)
        else:
            return None
        month = _MONTHS.get(mon.lower())
        if month is None:
            return None
        return datetime(int(year), month, int(day), int(hh), int(mm), int(ss), tzinfo=UTC)
    except ValueError:  # 31 Feb, 25:00 and the like
        return None


_NOT_IMF = datetime.min  # _imf's answer for a value in another format


@lru_cache(maxsize=1024)
def _imf(text: str) -> datetime | None:
    """An IMF-fixdate (what servers send), memoised: a crawl reads the same few dates on
    every page (a Date per second, the Last-Modified of files written together), each two
    or three times. Its datetime is immutable, so one object serves every caller."""
    m = _IMF.match(text)
    if m is None:
        return _NOT_IMF
    day, mon, year, hh, mm, ss = m.groups()
    month = _MONTHS.get(mon.lower())
    if month is None:
        return None
    try:
        return datetime(int(year), month, int(day), int(hh), int(mm), int(ss), tzinfo=UTC)
    except ValueError:  # 31 Feb, 25:00 and the like
        return None
