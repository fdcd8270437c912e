"""Turn a fetched HTML body into the few facts the crawler needs: links, hreflang alternates,
canonical, robots meta directives, and the encoding the bytes were read in.

Decoding follows the WHATWG encoding sniffing order the way browsers and search engines apply
it, so that a ``<a href="/café">`` in a Latin-1 page is the same URL Googlebot sees. Everything
here is pure and must stay cheap: it runs once per fetched page (issue #6 budgets well under a
millisecond), so the page is parsed exactly once and only the handful of element types we need
is visited.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import hashlib
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode

from crawler import PRODUCT_TOKEN
from crawler.directives import NO_DIRECTIVES, Directives, ascii_lower, meta_directives
from crawler.urls import resolve

__all__ = [
    "Link",
    "PageData",
    "PageDigest",
    "decode_html",
    "digest_page",
    "encode_query",
    "encoding_for_label",
    "extract_page",
    "parse_content_type",
    "sniff_encoding",
]

# --- Encoding labels (WHATWG Encoding Standard, "Encodings" table) --------------------------
#
# Browsers do not use Python's codec registry: "iso-8859-1" and "us-ascii" mean windows-1252,
# "gb2312" means GBK, "utf-7" or "base64" mean nothing at all. The table maps each WHATWG
# encoding name to its labels; the Python codec used to decode it is in _CODECS.
# Each line: WHATWG encoding name, then its labels (a name may take several lines).
_LABEL_TABLE = """
utf-8 unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8
ibm866 866 cp866 csibm866 ibm866
iso-8859-2 csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 iso_8859-2:1987 l2
iso-8859-2 latin2
iso-8859-3 csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 iso_8859-3:1988 l3
iso-8859-3 latin3
iso-8859-4 csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 iso_8859-4:1988 l4
iso-8859-4 latin4
iso-8859-5 csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 iso_8859-5
iso-8859-5 iso_8859-5:1988
iso-8859-6 arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 iso-8859-6
iso-8859-6 iso-8859-6-e iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6 iso_8859-6:1987
iso-8859-7 csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 iso8859-7
iso-8859-7 iso88597 iso_8859-7 iso_8859-7:1987 sun_eu_greek
iso-8859-8 csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 iso8859-8
iso-8859-8 iso88598 iso_8859-8 iso_8859-8:1988 visual
iso-8859-8-i csiso88598i iso-8859-8-i logical
iso-8859-10 csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6
iso-8859-13 iso-8859-13 iso8859-13 iso885913
iso-8859-14 iso-8859-14 iso8859-14 iso885914
iso-8859-15 csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9
iso-8859-16 iso-8859-16
koi8-r cskoi8r koi koi8 koi8-r koi8_r
koi8-u koi8-ru koi8-u
macintosh csmacintosh mac macintosh x-mac-roman
windows-874 dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874
windows-1250 cp1250 windows-1250 x-cp1250
windows-1251 cp1251 windows-1251 x-cp1251
windows-1252 ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100
windows-1252 iso8859-1 iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252
windows-1252 x-cp1252
windows-1253 cp1253 windows-1253 x-cp1253
windows-1254 cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9
windows-1254 iso_8859-9:1989 l5 latin5 windows-1254 x-cp1254
windows-1255 cp1255 windows-1255 x-cp1255
windows-1256 cp1256 windows-1256 x-cp1256
windows-1257 cp1257 windows-1257 x-cp1257
windows-1258 cp1258 windows-1258 x-cp1258
x-mac-cyrillic x-mac-cyrillic x-mac-ukrainian
gbk chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk
gb18030 gb18030
big5 big5 big5-hkscs cn-big5 csbig5 x-x-big5
euc-jp cseucpkdfmtjapanese euc-jp x-euc-jp
iso-2022-jp csiso2022jp iso-2022-jp
shift_jis csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis
euc-kr cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601
euc-kr ksc_5601 windows-949
replacement csiso2022kr hz-gb-2312 iso-2022-cn iso-2022-cn-ext iso-2022-kr replacement
utf-16be unicodefffe utf-16be
utf-16le csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le
x-user-defined x-user-defined
"""
_LABEL_TO_NAME: dict[str, str] = {
    label: line.split()[0]
    for line in _LABEL_TABLE.strip().splitlines()
    for label in line.split()[1:]
}

# Python codecs closest to each WHATWG decoder (the CJK ones are the Microsoft supersets that
# browsers actually implement). windows-1252 and x-user-defined use exact tables below;
# "replacement" is handled in _decode.
_CODECS: dict[str, str] = {
    "utf-8": "utf-8",
    "ibm866": "cp866",
    "iso-8859-8-i": "iso8859-8",
    "koi8-r": "koi8_r",
    "koi8-u": "koi8_u",
    "macintosh": "mac_roman",
    "windows-874": "cp874",
    "x-mac-cyrillic": "mac_cyrillic",
    "gbk": "gb18030",  # the WHATWG gbk decoder *is* the gb18030 decoder
    "gb18030": "gb18030",
    "big5": "big5hkscs",
    "euc-jp": "euc_jp",
    "iso-2022-jp": "iso2022_jp",
    "shift_jis": "cp932",
    "euc-kr": "cp949",
    "utf-16be": "utf-16-be",
    "utf-16le": "utf-16-le",
    **{f"iso-8859-{n}": f"iso8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)},
    **{f"windows-125{n}": f"cp125{n}" for n in range(9)},
}


def _single_byte_table(decode_byte: Callable[[int], str]) -> str:
    return "".join(decode_byte(b) for b in range(256))


def _windows_table(codec: str, overrides: dict[int, str] | None = None) -> str:
    """A WHATWG single-byte index from the Python codec: WHATWG maps the bytes 0x80 to 0x9F
    that Windows leaves undefined to the C1 controls; other undefined bytes stay undefined."""

    def byte(b: int) -> str:
        if overrides and b in overrides:
            return overrides[b]
        try:
            return bytes((b,)).decode(codec)
        except UnicodeDecodeError:
            return chr(b) if 0x80 <= b < 0xA0 else "\ufffe"  # U+FFFE: undefined to charmap

    return _single_byte_table(byte)


_TABLES: dict[str, str] = {
    **{f"windows-125{n}": _windows_table(f"cp125{n}") for n in range(9)},
    "windows-1255": _windows_table("cp1255", {0xCA: "\u05ba"}),  # HEBREW POINT HOLAM HASER
    "windows-874": _windows_table("cp874"),
    "koi8-u": _windows_table("koi8_u", {0xAE: "\u045e", 0xBE: "\u040e"}),  # KOI8-RU's ў Ў
    "x-user-defined": _single_byte_table(lambda b: chr(b) if b < 0x80 else chr(0xF780 + b - 0x80)),
}

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_BE, "utf-16be"),
    (codecs.BOM_UTF16_LE, "utf-16le"),
)


def encoding_for_label(label: str | None) -> str | None:
    """WHATWG encoding name for a charset label, or None for labels browsers do not know."""
    if not label:
        return None
    # Labels are matched after stripping ASCII whitespace, ASCII case-insensitively.
    return _LABEL_TO_NAME.get(ascii_lower(label.strip("\t\n\f\r ")))


# --- Content-Type ----------------------------------------------------------------------------

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_MIME_RE = re.compile(rf"[\t\n\r ]*({_TOKEN}/{_TOKEN})[\t\n\r ]*")
_MIME_PARAM_RE = re.compile(
    rf"""[\t\n\r ]*({_TOKEN})[\t\n\r ]*=[\t\n\r ]*
         (?:"((?:[^"\\]|\\.)*)"?|([^;]*))""",
    re.VERBOSE | re.DOTALL,
)


def parse_content_type(header: str | None) -> tuple[str, str | None]:
    """Split a Content-Type value into (lower-cased MIME type, lower-cased charset or None).

    Servers send all sorts of junk here; anything without a ``type/subtype`` gives
    ``("", None)`` rather than an error, and malformed parameters are skipped.
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


# --- <meta> prescan (HTML Standard 13.2.3.2, "prescan a byte stream") ---------------------------

_PRESCAN_LIMIT = 1024
_WS = b"\t\n\f\r "
# Attribute as the prescan's "get an attribute" reads it: a name up to whitespace, "/", ">"
# or "=", then optionally "=" and a quoted or bare value.
_ATTR_RE = re.compile(
    rb"""[\t\n\f\r /]*
         ([^\t\n\f\r />][^\t\n\f\r /=>]*)
         (?:[\t\n\f\r ]*=[\t\n\f\r ]*
            (?:"([^"]*)"|'([^']*)'|([^\t\n\f\r >"']*)))?""",
    re.VERBOSE,
)
_TAG_RE = re.compile(rb"<(/?)([A-Za-z][^\t\n\f\r />]*)|<!--|<[!/?]")
_CHARSET_IN_CONTENT_RE = re.compile(
    rb"""charset[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)'|([^\t\n\f\r ;"']+))""",
    re.IGNORECASE,
)


def _prescan(head: bytes) -> str | None:
    """Encoding declared by a ``<meta>`` in ``head`` (the first 1024 bytes), browser-style:
    comments and other tags' attributes are skipped, so a commented-out or quoted
    ``charset=`` cannot mislead us."""
    pos, end = 0, len(head)
    while pos < end:
        tag = _TAG_RE.search(head, pos)
        if tag is None:
            return None
        token = tag.group(0)
        if token == b"<!--":
            close = head.find(b"-->", tag.start() + 2)
            if close < 0:
                return None
            pos = close + 3
            continue
        if tag.group(2) is None:  # <!DOCTYPE, <?xml, </ followed by a non-letter
            close = head.find(b">", tag.end())
            if close < 0:
                return None
            pos = close + 1
            continue
        pos = tag.end()
        is_meta = not tag.group(1) and tag.group(2).lower() == b"meta"
        attrs: dict[bytes, bytes] = {}
        while True:
            attr = _ATTR_RE.match(head, pos)
            if attr is None:
                break
            pos = attr.end()
            name = attr.group(1).lower()
            value = attr.group(2)
            if value is None:
                value = attr.group(3)
            if value is None:
                value = attr.group(4) or b""
            attrs.setdefault(name, value)
        if is_meta:
            found = _meta_charset(attrs)
            if found is not None:
                return found
        close = head.find(b">", pos)
        if close < 0:
            return None
        pos = close + 1
    return None


def _meta_charset(attrs: dict[bytes, bytes]) -> str | None:
    charset = attrs.get(b"charset")
    if charset is not None:
        name = encoding_for_label(charset.decode("latin-1"))
    elif b"content" in attrs and attrs.get(b"http-equiv", b"").lower() == b"content-type":
        match = _CHARSET_IN_CONTENT_RE.search(attrs[b"content"])
        if match is None:
            return None
        label = next(g for g in match.groups() if g is not None)
        name = encoding_for_label(label.decode("latin-1"))
    else:
        return None
    if name in ("utf-16be", "utf-16le"):
        return "utf-8"  # a document that can declare itself in ASCII is not UTF-16
    if name == "x-user-defined":
        return "windows-1252"
    return name


# --- Decoding ----------------------------------------------------------------------------------


def sniff_encoding(body: bytes, content_type: str | None) -> str:
    """WHATWG name of the encoding ``body`` should be read in.

    Order: byte-order mark, Content-Type charset, ``<meta>`` in the first 1024 bytes, UTF-8.
    The BOM comes first because that is what every browser does: a page saved with a UTF-8
    BOM on a server that claims ISO-8859-1 is read as UTF-8. Unknown labels fall through.
    """
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name
    _, charset = parse_content_type(content_type)
    label = encoding_for_label(charset)
    if label is not None:
        return label
    return _prescan(body[:_PRESCAN_LIMIT]) or "utf-8"


def _decode(body: bytes, name: str) -> str:
    for bom, bom_name in _BOMS:
        if bom_name == name and body.startswith(bom):
            body = body[len(bom) :]
            break
    table = _TABLES.get(name)
    if table is not None:
        return codecs.charmap_decode(body, "replace", table)[0]
    if name == "replacement":
        # Encodings that were XSS vectors decode to a single U+FFFD, by design.
        return "\ufffd" if body else ""
    return body.decode(_CODECS[name], "replace")


def decode_html(body: bytes, content_type: str | None) -> tuple[str, str]:
    """Decode an HTML body the way a browser would; never raises.

    Returns ``(text, encoding)`` with the WHATWG encoding name, e.g. ``"windows-1252"`` for a
    page served as ``charset=iso-8859-1``. Undecodable bytes become U+FFFD.
    """
    name = sniff_encoding(body, content_type)
    return _decode(body, name), name


# --- Extraction --------------------------------------------------------------------------------


@dataclass(slots=True)
class Link:
    """An ``<a>``/``<area>`` target as written (whitespace-stripped, unresolved)."""

    href: str
    nofollow: bool


@dataclass(slots=True)
class PageData:
    """What one HTML page contributes to the crawl. Hrefs are raw: resolve them against
    ``base`` (the caller normalises; for non-UTF-8 pages the query is percent-encoded in
    ``encoding`` first, per the URL Standard: :func:`encode_query`, as digest_page does)."""

    base: str
    links: list[Link] = field(default_factory=list)
    alternates: list[tuple[str, str]] = field(default_factory=list)
    canonical: str | None = None
    directives: Directives = NO_DIRECTIVES
    encoding: str = "utf-8"


# The URL parser strips leading/trailing C0 controls and spaces; so do we, so that an href
# that is only whitespace counts as empty.
_URL_STRIP = "".join(map(chr, range(0x21)))
_HTML_SPACE_RE = re.compile(r"[\t\n\f\r ]+")


def _rel_tokens(rel: str | None) -> list[str]:
    """``rel`` is a set of space-separated, ASCII case-insensitive tokens."""
    if not rel:
        return []
    if rel.isascii():
        return rel.lower().split()
    return _HTML_SPACE_RE.split(ascii_lower(rel))


def _effective_base(page_url: str, href: str) -> str:
    """HTML "frozen base URL": the ``<base href>`` resolved against the page URL, unless it
    fails to parse or is a data:/javascript: URL, which browsers refuse as a base."""
    try:
        base = urljoin(page_url, href.strip(_URL_STRIP))
        scheme = urlsplit(base).scheme.lower()
    except ValueError:
        return page_url
    if scheme in ("data", "javascript"):
        return page_url
    return base


# Encodings whose pages send link queries in UTF-8 (the URL Standard's "get an output encoding")
_UTF8_QUERIES = frozenset({"utf-8", "utf-16be", "utf-16le", "replacement"})
_CHARMAPS = {name: codecs.charmap_build(table) for name, table in _TABLES.items()}
_NON_ASCII = re.compile("[^\x00-\x7f]+")
# a byte of an encoded query as the URL Standard writes it: percent-encoded when it is in the
# special-query percent-encode set or not ASCII (stateful and multibyte encodings emit ASCII
# bytes too: ISO-2022-JP's escapes, Shift_JIS trail bytes), otherwise as itself
_QUERY_BYTES = [
    chr(byte) if 0x20 < byte < 0x7F and byte not in b"\"#<>'" else f"%{byte:02X}"
    for byte in range(256)
]


def encode_query(href: str, encoding: str) -> str:
    """href as a page in ``encoding`` sends it: the URL Standard encodes an http(s) URL's
    query in the document's encoding, not UTF-8, so ``?q=café`` on a windows-1252 page asks
    the server for ``q=caf%E9``. Non-ASCII characters of the query become percent-encoded
    bytes from the Encoding Standard's encoder (one it cannot encode becomes
    ``%26%23<code point>%3B``, as browsers send it); the path and fragment are left for
    resolve(), which uses UTF-8. Hrefs of other schemes are dropped later, whatever this
    does to them."""
    if href.isascii() or encoding in _UTF8_QUERIES:
        return href
    end = href.find("#")
    if end < 0:
        end = len(href)
    start = href.find("?", 0, end) + 1
    query = href[start:end]
    if not start or query.isascii():
        return href
    query = query.translate(_TAB_NEWLINE)  # the URL parser drops them before encoding
    if encoding == "iso-2022-jp":  # stateful: its escapes span the whole query
        query = _iso_2022_jp(query)
    else:
        query = _NON_ASCII.sub(
            lambda run: "".join(_percent_char(char, encoding) for char in run[0]), query
        )
    return href[:start] + query + href[end:]


_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")


def _percent_char(char: str, encoding: str) -> str:
    data = _encode_char(char, encoding)
    if data is None:
        return f"%26%23{ord(char)}%3B"
    return "".join(_QUERY_BYTES[byte] for byte in data)


def _encode_char(char: str, encoding: str) -> bytes | None:
    """The Encoding Standard's encoder for one non-ASCII character; None: it has none.

    Python's codecs are supersets of what browsers encode (best-fit mappings, user-defined
    areas, HKSCS, JIS X 0212, GB18030's four-byte forms in GBK), so their output is checked
    and narrowed here; the Japanese encodings go through the jis0208 index directly."""
    charmap = _CHARMAPS.get(encoding)
    if charmap is not None:
        try:
            return codecs.charmap_encode(char, "strict", charmap)[0]
        except UnicodeEncodeError:
            return None
    code = ord(char)
    if encoding in ("shift_jis", "euc-jp"):
        if code in _JIS_ROMAN:  # ¥ and ‾ are 0x5C and 0x7E
            return _JIS_ROMAN[code]
        if 0xFF61 <= code <= 0xFF9F:  # half-width katakana
            katakana = code - 0xFF61 + 0xA1
            return bytes((katakana,) if encoding == "shift_jis" else (0x8E, katakana))
        pointer = _jis0208_pointer(char, shift_jis=encoding == "shift_jis")
        if pointer is None:
            return b"\x80" if code == 0x80 and encoding == "shift_jis" else None
        if encoding == "euc-jp":
            return bytes((pointer // 94 + 0xA1, pointer % 94 + 0xA1))
        lead, trail = divmod(pointer, 188)
        return bytes(
            (lead + (0x81 if lead < 0x1F else 0xC1), trail + (0x40 if trail < 0x3F else 0x41))
        )
    if encoding in ("gbk", "gb18030"):
        if code in _GB18030_FIXES:
            data = _GB18030_FIXES[code]
        elif code == 0x20AC and encoding == "gbk":
            return b"\x80"
        else:
            data = _round_trip(char, "gb18030")
        if data is None or (len(data) == 4 and encoding == "gbk"):  # GBK has no 4-byte forms
            return None
        return data
    if encoding == "big5" and code in _BIG5_FIXES:
        return _BIG5_FIXES[code]
    data = _round_trip(char, _CODECS[encoding])
    if data is not None and encoding == "big5" and data[0] < 0xA1:
        return None  # HKSCS lead bytes: browsers decode them but never encode to them
    return data


def _round_trip(char: str, codec: str) -> bytes | None:
    """char in codec, unless the codec only has a look-alike for it (a best-fit mapping)."""
    try:
        data = char.encode(codec)
        return data if data.decode(codec) == char else None
    except (UnicodeEncodeError, UnicodeDecodeError):
        return None


_JIS_ROMAN = {0xA5: b"\x5c", 0x203E: b"\x7e"}
# The WHATWG big5 index's encoder where Python's big5hkscs codec differs (compared character
# by character over Unicode's BMP and plane 2); None: not encoded
_BIG5_FIXES: dict[int, bytes | None] = {
    0x00A2: None,
    0x00A3: None,
    0x00A5: None,
    0x00AF: b"\xa1\xc2",
    0x2022: None,
    0x2027: b"\xa1\x45",
    0x203E: None,
    0x20AC: b"\xa3\xe1",
    0x2215: b"\xa2\x41",
    0x223C: None,
    0x2295: b"\xa1\xf2",
    0x2299: b"\xa1\xf3",
    0x2400: b"\xa3\xc0",
    0x2401: b"\xa3\xc1",
    0x2402: b"\xa3\xc2",
    0x2403: b"\xa3\xc3",
    0x2404: b"\xa3\xc4",
    0x2405: b"\xa3\xc5",
    0x2406: b"\xa3\xc6",
    0x2407: b"\xa3\xc7",
    0x2408: b"\xa3\xc8",
    0x2409: b"\xa3\xc9",
    0x240A: b"\xa3\xca",
    0x240B: b"\xa3\xcb",
    0x240C: b"\xa3\xcc",
    0x240D: b"\xa3\xcd",
    0x240E: b"\xa3\xce",
    0x240F: b"\xa3\xcf",
    0x2410: b"\xa3\xd0",
    0x2411: b"\xa3\xd1",
    0x2412: b"\xa3\xd2",
    0x2413: b"\xa3\xd3",
    0x2414: b"\xa3\xd4",
    0x2415: b"\xa3\xd5",
    0x2416: b"\xa3\xd6",
    0x2417: b"\xa3\xd7",
    0x2418: b"\xa3\xd8",
    0x2419: b"\xa3\xd9",
    0x241A: b"\xa3\xda",
    0x241B: b"\xa3\xdb",
    0x241C: b"\xa3\xdc",
    0x241D: b"\xa3\xdd",
    0x241E: b"\xa3\xde",
    0x241F: b"\xa3\xdf",
    0x2421: b"\xa3\xe0",
    0x256D: b"\xa2\x7e",
    0x256E: b"\xa2\xa1",
    0x256F: b"\xa2\xa3",
    0x2570: b"\xa2\xa2",
    0x2609: None,
    0x2641: None,
    0x4EDD: b"\xc6\xdf",
    0x5605: b"\xfb\x48",
    0x5ED0: b"\xfb\xf9",
    0x5EF4: b"\xc6\xcf",
    0x60A4: b"\xfc\x6c",
    0x65E0: b"\xc6\xd3",
    0x732A: b"\xfe\x52",
    0x7676: b"\xc6\xd5",
    0x96B6: b"\xc6\xd7",
    0xFE51: b"\xa1\x4e",
    0xFE68: b"\xa2\x42",
    0xFF0F: b"\xa1\xfe",
    0xFF3C: b"\xa2\x40",
    0xFF5E: b"\xa1\xe3",
    0xFF64: None,
    0xFFE0: b"\xa2\x46",
    0xFFE1: b"\xa2\x47",
    0xFFE5: b"\xa2\x44",
}
# GB18030-2005 as browsers implement it, where Python's codec differs; None: not encoded
_GB18030_FIXES: dict[int, bytes | None] = {
    0x1E3F: b"\xa8\xbc",
    0xE7C7: b"\x81\x35\xf4\x37",
    0xE5E5: None,
}


def _jis0208_pointer(char: str, *, shift_jis: bool = False) -> int | None:
    """char's pointer in the WHATWG jis0208 index: the first one, or for Shift_JIS the first
    outside the NEC-selected IBM extensions (8272 to 8835). Python's cp932 is that index
    (Microsoft's Shift_JIS), so it finds the pointer; the user-defined area is not in it."""
    if char == "\u2212":
        char = "\uff0d"  # MINUS SIGN is sent as FULLWIDTH HYPHEN-MINUS
    data = _round_trip(char, "cp932")
    if data is None or len(data) != 2 or 0xF0 <= data[0] <= 0xF9:
        return None
    lead, trail = data
    pointer = (
        (lead - (0x81 if lead < 0xA0 else 0xC1)) * 188 + trail - (0x40 if trail < 0x7F else 0x41)
    )
    if shift_jis and 8272 <= pointer <= 8835:
        return _ibm_extensions().get(char)
    return pointer


@functools.cache
def _ibm_extensions() -> dict[str, int]:
    """IBM extension characters (Shift_JIS 0xFA40 to 0xFC4B) to their jis0208 pointers."""
    found: dict[str, int] = {}
    for pointer in range(10716, 11104):
        lead, trail = divmod(pointer, 188)
        data = bytes((lead + 0xC1, trail + (0x40 if trail < 0x3F else 0x41)))
        with contextlib.suppress(UnicodeDecodeError):
            found.setdefault(data.decode("cp932"), pointer)
    return found


def _iso_2022_jp(query: str) -> str:
    """The Encoding Standard's ISO-2022-JP encoder over a whole query, percent-encoded."""
    out: list[str] = []
    state = "ascii"
    chars = list(reversed(query))
    while chars:
        char = chars.pop()
        code = ord(char)
        if state != "jis0208" and code in (0x0E, 0x0F, 0x1B):
            out.append("%26%2365533%3B")
        elif state == "ascii" and code < 0x80:
            out.append(_QUERY_BYTES[code])
        elif state == "roman" and (
            (code < 0x80 and code not in (0x5C, 0x7E)) or code in _JIS_ROMAN
        ):
            out.append(_QUERY_BYTES[_JIS_ROMAN[code][0] if code in _JIS_ROMAN else code])
        elif code < 0x80 or code in _JIS_ROMAN:  # switch, then take it again
            state = "ascii" if code < 0x80 else "roman"
            out.append("%1B(B" if code < 0x80 else "%1B(J")
            chars.append(char)
        else:
            if 0xFF61 <= code <= 0xFF9F:  # half-width katakana are sent full-width
                char = _HALF_TO_FULL.get(char) or unicodedata.normalize("NFKC", char)
            pointer = _jis0208_pointer(char)
            if pointer is None:
                if state == "jis0208":
                    state = "ascii"
                    out.append("%1B(B")
                    chars.append(char)
                else:
                    out.append(f"%26%23{ord(char)}%3B")
            elif state != "jis0208":
                state = "jis0208"
                out.append("%1B$B")
                chars.append(char)
            else:
                row, cell = divmod(pointer, 94)
                out.append(_QUERY_BYTES[row + 0x21] + _QUERY_BYTES[cell + 0x21])
    if state != "ascii":
        out.append("%1B(B")
    return "".join(out)


_HALF_TO_FULL = {"\uff9e": "\u309b", "\uff9f": "\u309c"}  # the voiced sound marks


def _in_head(node: LexborNode) -> bool:
    """Whether a <link> is in <head> as the HTML parser built it: one written after something
    that ends the head (text, an <img>) lands in <body>, where Google ignores it. The tree
    builder puts a <link> in head only as a child of <head> or of a <noscript> there, so two
    steps up settle it, however deep the body nests."""
    parent = node.parent
    if parent is not None and parent.tag == "noscript":
        parent = parent.parent
    return parent is not None and parent.tag == "head"


def extract_page(
    body: bytes, content_type: str | None, page_url: str, agent: str = PRODUCT_TOKEN
) -> PageData:
    """Parse ``body`` once and collect links, alternates, canonical and robots meta directives.

    Never raises on any bytes: a body that is not HTML simply has no links. Links inside
    comments, ``<script>`` and ``<template>`` are not links (the parser never makes them
    elements of the document); ``<noscript>`` content is parsed as markup, as crawlers do.
    Canonical and hreflang ``<link>``s count only inside ``<head>``, as search engines read
    them.
    """
    encoding = sniff_encoding(body, content_type)
    if encoding == "utf-8":
        # lexbor reads bytes as UTF-8 with replacement, exactly our decoder: skip a Python
        # decode and re-encode of the whole page.
        source: bytes | str = body[3:] if body.startswith(codecs.BOM_UTF8) else body
    else:
        source = _decode(body, encoding)
    parser = LexborHTMLParser(source)

    # tags() walks the tree in C and is measurably faster than an equivalent CSS query;
    # attributes (one dict per node) is cheaper than several attrs.get() calls.
    links: list[Link] = []
    anchors = parser.tags("a")
    if parser.tags("area"):
        anchors = parser.css("a, area")  # keep document order across the two kinds
    for node in anchors:
        attrs = node.attributes
        href = attrs.get("href")
        if href is None:
            href = attrs.get("xlink:href")  # SVG 1.1 <a>
            if href is None:
                continue
        href = href.strip(_URL_STRIP)
        if not href:
            continue
        rel = attrs.get("rel")
        links.append(Link(href, rel is not None and "nofollow" in _rel_tokens(rel)))

    base = page_url
    for node in parser.tags("base"):
        href = node.attributes.get("href")
        if href is not None:
            base = _effective_base(page_url, href)
            break

    alternates: list[tuple[str, str]] = []
    canonical: str | None = None
    for node in parser.tags("link"):
        if not _in_head(node):
            continue  # search engines read canonical and hreflang links in <head> only
        attrs = node.attributes
        rel = attrs.get("rel")
        href = attrs.get("href")
        if not rel or not href:
            continue
        href = href.strip(_URL_STRIP)
        if not href:
            continue
        tokens = _rel_tokens(rel)
        if "alternate" in tokens:
            hreflang = (attrs.get("hreflang") or "").strip("\t\n\f\r ")
            if hreflang:
                alternates.append((hreflang, href))
        if canonical is None and "canonical" in tokens:
            canonical = href

    metas = [
        (attrs.get("name"), attrs.get("content"))
        for attrs in (node.attributes for node in parser.tags("meta"))
        if "name" in attrs
    ]
    directives = meta_directives(metas, agent) if metas else NO_DIRECTIVES

    return PageData(base, links, alternates, canonical, directives, encoding)


@dataclass(slots=True)
class PageDigest:
    """What the crawl keeps of a parsed HTML page: plain, small values, so that a page parsed
    in a worker process crosses back to the crawl in a few hundred bytes, not the page."""

    base: str  # normalised
    hrefs: list[str]  # the hrefs to follow, raw, in document order; hreflang alternates last
    canonical: str | None  # raw, resolved against base by the caller
    directives: Directives
    body_key: int  # the first 64 bits of the body's sha256: the duplicate detector's key
    # hrefs resolved against base and normalised (urls.LinkResolver), each URL once, in
    # first-seen order, in place of hrefs: made where there is CPU to spare (a worker)
    targets: list[str] | None = None


def digest_page(
    body: bytes,
    content_type: str | None,
    page_url: str,
    agent: str = PRODUCT_TOKEN,
    follow_nofollow: bool = False,
) -> PageDigest:
    """Parse an HTML page into its digest. Never raises, like :func:`extract_page`."""
    page = extract_page(body, content_type, page_url, agent)
    base, canonical, encoding = page.base, page.canonical, page.encoding
    hrefs = [link.href for link in page.links if follow_nofollow or not link.nofollow]
    hrefs += [href for _, href in page.alternates]
    if encoding not in _UTF8_QUERIES:
        hrefs = [encode_query(href, encoding) for href in hrefs]
        base = encode_query(base, encoding)
        if canonical is not None:
            canonical = encode_query(canonical, encoding)
    if base != page_url:  # a <base href>: normalised (fragment and all) once here
        base = resolve(page_url, base) or page_url
    # sha256 (OpenSSL, hardware-assisted): 12 us for 23 KB against blake2b's 17
    key = int.from_bytes(hashlib.sha256(body).digest()[:8], "little")
    return PageDigest(base, hrefs, canonical, page.directives, key)
