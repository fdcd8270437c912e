"""The WHATWG Encoding Standard as the crawler needs it: which encoding a charset label
names, decoding a page the way browsers do, and encoding a link's query the way browsers send
it from a legacy-encoded page (the URL Standard encodes a query in the page's encoding).

Browsers do not use Python's codec registry, and their encoders are narrower than Python's
codecs: this module maps between the two, so that a link on a Shift_JIS page is the URL a
browser (and Googlebot) would request.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import re
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING

from crawler.core.directives import ascii_lower

if TYPE_CHECKING:
    from _codecs import _EncodingMap

__all__ = ["BOMS", "UTF8_QUERIES", "decode", "encode_query", "encoding_for_label"]

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


#: The single-byte encodings decoded by a table of their own (WHATWG's index, not Python's
#: codec): their names, and the table's recipe. Each table is built when a page first needs it
#: (_table): building them all took 256 codec calls each at every start (#26), about 1% of
#: an unchanged night's instructions on a small site, for encodings most crawls never meet.
_TABLE_RECIPES: dict[str, Callable[[], str]] = {
    **{
        f"windows-125{n}": functools.partial(_windows_table, f"cp125{n}")
        for n in (0, 1, 2, 3, 4, 6, 7, 8)
    },
    "windows-1255": functools.partial(_windows_table, "cp1255", {0xCA: "\u05ba"}),  # HOLAM HASER
    "windows-874": functools.partial(_windows_table, "cp874"),
    "koi8-u": functools.partial(_windows_table, "koi8_u", {0xAE: "\u045e", 0xBE: "\u040e"}),  # ў Ў
    "x-user-defined": functools.partial(
        _single_byte_table, lambda b: chr(b) if b < 0x80 else chr(0xF780 + b - 0x80)
    ),
}


@functools.cache
def _table(name: str) -> str | None:
    """The decoding table of a single-byte encoding name (_TABLE_RECIPES), None for others."""
    recipe = _TABLE_RECIPES.get(name)
    return None if recipe is None else recipe()


BOMS = (
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


def decode(body: bytes, name: str) -> str:
    """body read in the WHATWG encoding name; never raises (undecodable bytes: U+FFFD)."""
    for bom, bom_name in BOMS:
        if bom_name == name and body.startswith(bom):
            body = body[len(bom) :]
            break
    table = _table(name)
    if table is not None:
        return codecs.charmap_decode(body, "replace", table)[0]
    if name == "replacement":
        # Encodings that were XSS vectors decode to a single U+FFFD, by design.
        return "\ufffd" if body else ""
    if name in ("gbk", "gb18030"):
        return body.decode("gb18030", _GB18030_ERRORS).translate(_GB18030_DECODED)
    if name == "big5":
        return body.decode("big5hkscs", _BIG5_ERRORS).translate(_BIG5_DECODED)
    if name == "euc-jp":
        if b"\x8f\xa2\xb7" in body:  # JIS X 0212's tilde: WHATWG's ～, Python's "~"
            body = body.replace(b"\x8f\xa2\xb7", b"\xa1\xc1")  # 0x8F is never a trail
        return body.decode("euc_jp", _EUC_JP_ERRORS).translate(_EUC_JP_DECODED)
    return body.decode(_CODECS[name], "replace")


def _euc_jp_error(exc: UnicodeError) -> tuple[str, int]:
    """WHATWG's EUC-JP decoder reads every jis0208 pair, NEC row 13 and the NEC-selected IBM
    extensions included, which Python's euc_jp refuses: read those through cp932."""
    assert isinstance(exc, UnicodeDecodeError)
    data, at = exc.object, exc.start
    if at + 1 < len(data) and 0xA1 <= data[at + 1] <= 0xFE and 0xA1 <= data[at] <= 0xFE:
        pair = _shift_jis_pair((data[at] - 0xA1) * 94 + data[at + 1] - 0xA1)
        with contextlib.suppress(UnicodeDecodeError):
            return pair.decode("cp932"), at + 2
    return "\ufffd", exc.end


def _big5_error(exc: UnicodeError) -> tuple[str, int]:
    """HKSCS-2008 codes in WHATWG's big5 index that Python's big5hkscs lacks."""
    assert isinstance(exc, UnicodeDecodeError)
    data, at = exc.object, exc.start
    if at + 1 < len(data):
        char = _BIG5_MISSING.get(data[at] << 8 | data[at + 1])
        if char is not None:
            return char, at + 2
    return "\ufffd", exc.end


_BIG5_ERRORS = "sitemap-crawler-big5"
codecs.register_error(_BIG5_ERRORS, _big5_error)
# From WHATWG's big5 index, compared with Python's big5hkscs pair by pair: the codes Python
# lacks, and the characters it reads differently (Python's, then WHATWG's)
_BIG5_MISSING: dict[int, str] = {
    0x877A: "\u3875",
    0x877B: "\U00021d53",
    0x877C: "\U0002369e",
    0x877D: "\U00026021",
    0x877E: "\u3eec",
    0x87A1: "\U000258de",
    0x87A2: "\u3af5",
    0x87A3: "\u7afc",
    0x87A4: "\u9f97",
    0x87A5: "\U00024161",
    0x87A6: "\U0002890d",
    0x87A7: "\U000231ea",
    0x87A8: "\U00020a8a",
    0x87A9: "\U0002325e",
    0x87AA: "\u430a",
    0x87AB: "\u8484",
    0x87AC: "\u9f96",
    0x87AD: "\u942f",
    0x87AE: "\u4930",
    0x87AF: "\u8613",
    0x87B0: "\u5896",
    0x87B1: "\u974a",
    0x87B2: "\u9218",
    0x87B3: "\u79d0",
    0x87B4: "\u7a32",
    0x87B5: "\u6660",
    0x87B6: "\u6a29",
    0x87B7: "\u889d",
    0x87B8: "\u744c",
    0x87B9: "\u7bc5",
    0x87BA: "\u6782",
    0x87BB: "\u7a2c",
    0x87BC: "\u524f",
    0x87BD: "\u9046",
    0x87BE: "\u34e6",
    0x87BF: "\u73c4",
    0x87C0: "\U00025db9",
    0x87C1: "\u74c6",
    0x87C2: "\u9fc7",
    0x87C3: "\u57b3",
    0x87C4: "\u492f",
    0x87C5: "\u544c",
    0x87C6: "\u4131",
    0x87C7: "\U0002368e",
    0x87C8: "\u5818",
    0x87C9: "\u7a72",
    0x87CA: "\U00027b65",
    0x87CB: "\u8b8f",
    0x87CC: "\u46ae",
    0x87CD: "\U00026e88",
    0x87CE: "\u4181",
    0x87CF: "\U00025d99",
    0x87D0: "\u7bae",
    0x87D1: "\U000224bc",
    0x87D2: "\u9fc8",
    0x87D3: "\U000224c1",
    0x87D4: "\U000224c9",
    0x87D5: "\U000224cc",
    0x87D6: "\u9fc9",
    0x87D7: "\u8504",
    0x87D8: "\U000235bb",
    0x87D9: "\u40b4",
    0x87DA: "\u9fca",
    0x87DB: "\u44e1",
    0x87DC: "\U0002adff",
    0x87DD: "\u62c1",
    0x87DE: "\u706e",
    0x87DF: "\u9fcb",
    0x8E69: "\u7bb8",
    0x8E6F: "\u7c06",
    0x8E7E: "\u7cce",
    0x8EAB: "\u7dd2",
    0x8EB4: "\u7e1d",
    0x8ECD: "\u8005",
    0x8ED0: "\u8028",
    0x8F57: "\u83c1",
    0x8F69: "\u84a8",
    0x8F6E: "\u840f",
    0x8FCB: "\u89a6",
    0x8FCC: "\u89a9",
    0x8FFE: "\u8d77",
    0x906D: "\u90fd",
    0x907A: "\u92b9",
    0x90DC: "\u975c",
    0x90F1: "\u97ff",
    0x91BF: "\u9f16",
    0x9244: "\u8503",
    0x92AF: "\u5159",
    0x92B0: "\u515b",
    0x92B1: "\u515d",
    0x92B2: "\u515e",
    0x92C8: "\u936e",
    0x92D1: "\u7479",
    0x9447: "\u6d67",
    0x94CA: "\u799b",
    0x95D9: "\u9097",
    0x9644: "\u975d",
    0x96ED: "\u701e",
    0x96FC: "\u5b28",
    0x9B76: "\u7201",
    0x9B78: "\u77d7",
    0x9B7B: "\u7e87",
    0x9BC6: "\u99d6",
    0x9BDE: "\u91d4",
    0x9BEC: "\u60de",
    0x9BF6: "\u6fb6",
    0x9C42: "\u8f36",
    0x9C53: "\u4fbb",
    0x9C62: "\u71df",
    0x9C68: "\u9104",
    0x9C6B: "\u9df0",
    0x9C77: "\u83cf",
    0x9CBC: "\u5c10",
    0x9CBD: "\u79e3",
    0x9CD0: "\u5a67",
    0x9D57: "\u8f0b",
    0x9D5A: "\u7b51",
    0x9DC4: "\u62d0",
    0x9EA9: "\u6062",
    0x9EEF: "\u75f9",
    0x9EFD: "\u6c4a",
    0x9F60: "\u9b2e",
    0x9F66: "\u9f17",
    0x9FCB: "\u50ed",
    0x9FD8: "\u5f0c",
    0xA063: "\u880f",
    0xA077: "\u62ce",
    0xA0D5: "\u7468",
    0xA0DF: "\u7162",
    0xA0E4: "\u7250",
    0xA3C0: "\u2400",
    0xA3C1: "\u2401",
    0xA3C2: "\u2402",
    0xA3C3: "\u2403",
    0xA3C4: "\u2404",
    0xA3C5: "\u2405",
    0xA3C6: "\u2406",
    0xA3C7: "\u2407",
    0xA3C8: "\u2408",
    0xA3C9: "\u2409",
    0xA3CA: "\u240a",
    0xA3CB: "\u240b",
    0xA3CC: "\u240c",
    0xA3CD: "\u240d",
    0xA3CE: "\u240e",
    0xA3CF: "\u240f",
    0xA3D0: "\u2410",
    0xA3D1: "\u2411",
    0xA3D2: "\u2412",
    0xA3D3: "\u2413",
    0xA3D4: "\u2414",
    0xA3D5: "\u2415",
    0xA3D6: "\u2416",
    0xA3D7: "\u2417",
    0xA3D8: "\u2418",
    0xA3D9: "\u2419",
    0xA3DA: "\u241a",
    0xA3DB: "\u241b",
    0xA3DC: "\u241c",
    0xA3DD: "\u241d",
    0xA3DE: "\u241e",
    0xA3DF: "\u241f",
    0xA3E0: "\u2421",
    0xA3E1: "\u20ac",
    0xC6CF: "\u5ef4",
    0xC6D3: "\u65e0",
    0xC6D5: "\u7676",
    0xC6D7: "\u96b6",
    0xC6DE: "\u3003",
    0xC6DF: "\u4edd",
    0xFA5F: "\u5029",
    0xFA66: "\u507d",
    0xFABD: "\u5305",
    0xFAC5: "\u5344",
    0xFAD5: "\u537f",
    0xFB48: "\u5605",
    0xFBB8: "\u5a77",
    0xFBF3: "\u5e75",
    0xFBF9: "\u5ed0",
    0xFC4F: "\u5f58",
    0xFC6C: "\u60a4",
    0xFCB9: "\u6490",
    0xFCE2: "\u6674",
    0xFCF1: "\u675e",
    0xFDB7: "\u6c9c",
    0xFDB8: "\u6e1d",
    0xFDBB: "\u6e2f",
    0xFDF1: "\u716e",
    0xFE52: "\u732a",
    0xFE6F: "\u745c",
    0xFEAA: "\u74e9",
    0xFEDD: "\u7809",
}
# (0xA241 and 0xA242 stay Python's: it reads them as ／ and ＼, like 0xA1FE and 0xA240,
# which are far more common)
_BIG5_DECODED = str.maketrans(
    "\u2022\uff64\u203e\u223c\u2641\u2609\u00a5\u00a2\u00a3",
    "\u2027\ufe51\u00af\uff5e\u2295\u2299\uffe5\uffe0\uffe1",
)


_EUC_JP_ERRORS = "sitemap-crawler-euc-jp"
codecs.register_error(_EUC_JP_ERRORS, _euc_jp_error)
# where Python's JIS X 0208 table differs from WHATWG's jis0208 index (Microsoft's choices)
_EUC_JP_DECODED = str.maketrans("\u301c\u2016\u2212\u00a2\u00a3\u00ac", "～∥－￠￡￢")


def _gb18030_error(exc: UnicodeError) -> tuple[str, int]:
    """A lone 0x80 is the euro sign in WHATWG's gb18030 decoder; anything else is U+FFFD."""
    assert isinstance(exc, UnicodeDecodeError)
    bad = exc.object[exc.start : exc.end]
    return ("\u20ac" if bad == b"\x80" else "\ufffd"), exc.end


_GB18030_ERRORS = "sitemap-crawler-gb18030"
codecs.register_error(_GB18030_ERRORS, _gb18030_error)
# where Python's GB18030 table differs from WHATWG's index (GB18030-2005 as browsers have it)
_GB18030_DECODED = {0xE5E5: "\u3000", 0xE7C7: "\u1e3f", 0x1E3F: "\ue7c7"}


# Encodings whose pages send link queries in UTF-8 (the URL Standard's "get an output encoding")
UTF8_QUERIES = frozenset({"utf-8", "utf-16be", "utf-16le", "replacement"})
_NON_ASCII = re.compile("[^\x00-\x7f]+")
# a byte of an encoded query as the URL Standard writes it: percent-encoded when it is in the
# special-query percent-encode set or not ASCII (stateful and multibyte encodings emit ASCII
# bytes too: ISO-2022-JP's escapes, Shift_JIS trail bytes), otherwise as itself
_QUERY_BYTES = [
    chr(byte) if 0x20 < byte < 0x7F and byte not in b"\"#<>'" else f"%{byte:02X}"
    for byte in range(256)
]


@functools.cache
def _charmap(name: str) -> dict[int, int] | _EncodingMap | None:
    """The encoding map of a single-byte encoding's table (_table), None for others."""
    table = _table(name)
    return None if table is None else codecs.charmap_build(table)


def encode_query(href: str, encoding: str) -> str:
    """href as a page in ``encoding`` sends it: the URL Standard encodes an http(s) URL's
    query in the document's encoding, not UTF-8, so ``?q=café`` on a windows-1252 page asks
    the server for ``q=caf%E9``. Non-ASCII characters of the query become percent-encoded
    bytes from the Encoding Standard's encoder (one it cannot encode becomes
    ``%26%23<code point>%3B``, as browsers send it); the path and fragment are left for
    resolve(), which uses UTF-8. Hrefs of other schemes are dropped later, whatever this
    does to them."""
    if href.isascii() or encoding in UTF8_QUERIES:
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
    charmap = _charmap(encoding)
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
        return _shift_jis_pair(pointer)
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


def _shift_jis_pair(pointer: int) -> bytes:
    """The Shift_JIS bytes of a jis0208 pointer (EUC-JP's row and cell, read as a pointer,
    reach the same table this way)."""
    lead, trail = divmod(pointer, 188)
    return bytes((lead + (0x81 if lead < 0x1F else 0xC1), trail + (0x40 if trail < 0x3F else 0x41)))


@functools.cache
def _ibm_extensions() -> dict[str, int]:
    """IBM extension characters (Shift_JIS 0xFA40 to 0xFC4B) to their jis0208 pointers."""
    found: dict[str, int] = {}
    for pointer in range(10716, 11104):
        with contextlib.suppress(UnicodeDecodeError):
            found.setdefault(_shift_jis_pair(pointer).decode("cp932"), pointer)
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
