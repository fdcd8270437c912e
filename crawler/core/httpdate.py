"""HTTP dates (RFC 9110 section 5.6.7): the three formats a server may still send.

Used for Last-Modified -> lastmod and, for retries, Retry-After. A value we cannot parse
gives None: a wrong lastmod is worse than none.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_MONTHS = {
    m: i
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
_IMF = re.compile(  # Sun, 06 Nov 1994 08:49:37 GMT
    r"^[A-Za-z]{3}, (\d{2}) ([A-Za-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$"
)
_RFC850 = re.compile(  # Sunday, 06-Nov-94 08:49:37 GMT
    r"^[A-Za-z]{6,9}, (\d{2})-([A-Za-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$"
)
_ASCTIME = re.compile(  # Sun Nov  6 08:49:37 1994
    r"^[A-Za-z]{3} ([A-Za-z]{3}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$"
)


def parse_http_date(value: str | None, *, now: datetime | None = None) -> datetime | None:
    """A timezone-aware UTC datetime, or None for anything that is not an RFC 9110 date."""
    if not value:
        return None
    text = value.strip()
    try:
        if m := _IMF.match(text):
            day, mon, year, hh, mm, ss = m.groups()
        elif m := _RFC850.match(text):
            day, mon, yy, hh, mm, ss = m.groups()
            # RFC 9110: a two-digit year more than 50 years in the future is in the past.
            year = 2000 + int(yy)
            current = (now or datetime.now(UTC)).year
            if year > current + 50:
                year -= 100
        elif m := _ASCTIME.match(text):
            mon, day, hh, mm, ss, year = m.groups()
        else:
            return None
        month = _MONTHS.get(mon.lower())
        if month is None:
            return None
        return datetime(int(year), month, int(day), int(hh), int(mm), int(ss), tzinfo=UTC)
    except ValueError:  # 31 Feb, 25:00 and the like
        return None
