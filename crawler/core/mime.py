"""The Content-Type header: its MIME type and charset (RFC 9110 8.3, as WHATWG parses it).
Pure. Its own module, apart from the HTML extraction (crawler.core.extract), because every
answer's type is read, a 304's too, and a night of 304s never parses HTML: it does not
import the parser (selectolax) for it (#26).
"""

from __future__ import annotations

import functools
import re

from crawler.core.directives import ascii_lower

__all__ = ["parse_content_type"]

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_MIME_RE = re.compile(rf"[\t\n\r ]*({_TOKEN}/{_TOKEN})[\t\n\r ]*")
_MIME_PARAM_RE = re.compile(
    rf"""[\t\n\r ]*({_TOKEN})[\t\n\r ]*=[\t\n\r ]*
         (?:"((?:[^"\\]|\\.)*)"?|([^;]*))""",
    re.VERBOSE | re.DOTALL,
)


@functools.lru_cache(maxsize=256)
def parse_content_type(header: str | None) -> tuple[str, str | None]:
    """Split a Content-Type value into (lower-cased MIME type, lower-cased charset or None).

    Servers send all sorts of junk here; anything without a ``type/subtype`` gives
    ``("", None)`` rather than an error, and malformed parameters are skipped. Memoised: a
    site sends one or two values, and each page's is read twice (analyse, sniff_encoding).
    """
    if not header:
        return "", None
    mime_end = header.find(";")
    head = header if mime_end < 0 else header[:mime_end]
    match = _MIME_RE.fullmatch(head)
    if match is None:
        return "", None
    mime = ascii_lower(match.group(1))
    if mime_end < 0:
        return mime, None
    for part in _split_params(header[mime_end + 1 :]):
        param = _MIME_PARAM_RE.fullmatch(part)
        if param is None or ascii_lower(param.group(1)) != "charset":
            continue
        quoted, plain = param.group(2), param.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else plain.strip()
        # First charset parameter wins, even when empty (WHATWG MIME parsing keeps the first).
        return mime, ascii_lower(value.strip()) or None
    return mime, None


def _split_params(params: str) -> list[str]:
    """Split at semicolons that are not inside a quoted-string."""
    if '"' not in params:
        return params.split(";")
    parts: list[str] = []
    start, quoted, escaped = 0, False, False
    for i, char in enumerate(params):
        if escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == ";" and not quoted:
            parts.append(params[start:i])
            start = i + 1
    parts.append(params[start:])
    return parts
