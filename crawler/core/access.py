"""How the crawl reaches a site that is not public, and how its secrets stay out of messages.

A staging site wants credentials (basic auth, a header, a cookie), sits behind a proxy or
serves a certificate from an internal CA. `Access` is all of that as plain data: parsed and
checked here once, sent to the worker processes as it is, and applied by the transport.
Credentials, headers and cookies are meant for the crawled origin only, whatever else the
crawl may request (the production robots.txt of --robots-from): `Access.origin` says which,
and the transport compares every request's origin with it.

`secrets_of` lists every secret the settings hold and `redact` takes them out of a text. The
few places a message leaves the process (a fetch error, the CLI's error line, the report's
error) pass it through, so no password, proxy credential, header or cookie value is ever
printed or stored. Errors about these settings never quote the value either.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from crawler.core.hosts import parse_resolve
from crawler.errors import ConfigError

__all__ = [
    "AUTH_ENV",
    "Access",
    "parse_auth",
    "parse_cookie",
    "parse_header",
    "parse_proxy",
    "redact",
    "secrets_of",
]

#: The environment variable --auth falls back on: a password in a command line is seen by
#: every user of the machine (ps), and in a TOML file by whoever reads the config.
AUTH_ENV = "SITEMAP_CRAWLER_AUTH"

#: What a secret becomes in a message.
MASK = "***"

#: Header and cookie values shorter than this are not redacted: "1", "on", "en" hide
#: nothing, and masking every "1" would garble status codes and ports in every message.
#: Passwords are redacted whatever their length.
MIN_VALUE_SECRET = 4

#: Secrets shorter than this are masked only where they stand as a token (redact).
WHOLE_TOKEN_BELOW = 8
# not inside a word: no letter, digit or _ beside it, nor one joined to it by - . ~ +
# (`test-sitemaps`, `test.example`), while a sentence's closing period is no join
_TOKEN_BEFORE = r"(?<![0-9A-Za-z_])(?<![0-9A-Za-z][-.~+])"
_TOKEN_AFTER = r"(?![0-9A-Za-z_]|[-.~+][0-9A-Za-z])"
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 5.6.2: a header or cookie name
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # CR, LF, NUL...; a tab is allowed


def header_safe(value: str) -> bool:
    """A header value sent as given: no line break, NUL or other control (a tab is fine)."""
    return _CONTROL.search(value) is None


#: Headers the HTTP client or another option sets; a --header naming one is refused, and why.
_OWN_HEADERS = {
    "host": "the Host header is the start URL's (--public-url maps a staging host to the "
    "public one)",
    "user-agent": "the User-Agent has its own option: --user-agent",
    "cookie": "cookies have their own option: --cookie NAME=VALUE (repeatable)",
    "proxy-authorization": "the proxy's credentials go in --proxy http://USER:PASSWORD@HOST:PORT",
    "content-length": "the HTTP client sets Content-Length",
    "transfer-encoding": "the HTTP client sets Transfer-Encoding",
    "connection": "the HTTP client sets Connection",
}


@dataclass(slots=True, frozen=True, repr=False)  # its own __repr__, without the secrets
class Access:
    """How requests reach the site: plain data, crossing to the worker processes as is."""

    origin: str = ""  # scheme://host[:port] that credentials, headers and cookies go to
    auth: tuple[str, str] | None = None  # basic auth (user, password)
    headers: tuple[tuple[str, str], ...] = ()  # (name, value)
    cookies: tuple[tuple[str, str], ...] = ()  # (name, value)
    proxy: str | None = None  # http://host:port, without credentials
    proxy_auth: tuple[str, str] | None = None  # the proxy's (user, password)
    ca_bundle: str | None = None  # a PEM file of CAs trusted besides the system's
    insecure: bool = False  # no TLS certificate check at all
    pinned: tuple[tuple[str, int, str], ...] = ()  # --resolve: (host, port, address)

    @classmethod
    def make(
        cls,
        origin: str,
        *,
        auth: str | None = None,
        headers: Iterable[str] = (),
        cookies: Iterable[str] = (),
        proxy: str | None = None,
        ca_bundle: str | None = None,
        insecure: bool = False,
        resolve: Iterable[str] = (),
    ) -> Access:
        """The access from the config's values; ConfigError (never quoting a value) if one
        is malformed. `origin`: the start URL's, where the credentials go."""
        proxy_url, proxy_auth = parse_proxy(proxy) if proxy else (None, None)
        parsed = tuple(parse_header(text, n) for n, text in enumerate(headers, 1))
        if auth is not None and any(name.lower() == "authorization" for name, _ in parsed):
            raise ConfigError("give auth or an Authorization header, not both: both would be sent")
        return cls(
            origin,
            parse_auth(auth) if auth is not None else None,
            parsed,
            tuple(parse_cookie(text, n) for n, text in enumerate(cookies, 1)),
            proxy_url,
            proxy_auth,
            ca_bundle,
            insecure,
            tuple((host, port, ip) for (host, port), ip in parse_resolve(tuple(resolve)).items()),
        )

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret held here, for `redact`."""
        return secrets_of(
            f"{self.auth[0]}:{self.auth[1]}" if self.auth else None,
            (f"{name}: {value}" for name, value in self.headers),
            (f"{name}={value}" for name, value in self.cookies),
            None,
        ) + _pair_secrets(self.proxy_auth)

    @property
    def cookie_header(self) -> str | None:
        """The cookies as one Cookie header (RFC 6265 5.4), or None without any."""
        if not self.cookies:
            return None
        return "; ".join(f"{name}={value}" for name, value in self.cookies)

    def __repr__(self) -> str:
        """Names, never values: an Access in a traceback or a debug line gives nothing away."""
        return (
            f"Access(origin={self.origin!r}, auth={_shown(self.auth)}, "
            f"headers={[name for name, _ in self.headers]}, "
            f"cookies={[name for name, _ in self.cookies]}, proxy={self.proxy!r}, "
            f"proxy_auth={_shown(self.proxy_auth)}, ca_bundle={self.ca_bundle!r}, "
            f"insecure={self.insecure})"
        )


def _shown(pair: tuple[str, str] | None) -> str:
    return "None" if pair is None else f"'{pair[0]}:{MASK}'"


def parse_auth(text: str) -> tuple[str, str]:
    """USER:PASSWORD as (user, password); the password may hold colons, the user may not."""
    user, colon, password = text.partition(":")
    where = f"auth (--auth, the config's auth or ${AUTH_ENV})"
    if not colon:
        raise ConfigError(f"{where} must be USER:PASSWORD, with a colon (the value is not shown)")
    if not user or _CONTROL.search(text):
        raise ConfigError(
            f"{where} must be USER:PASSWORD: a user name, and no line breaks or control "
            "characters (the value is not shown)"
        )
    return user, password


def parse_header(text: str, number: int = 1) -> tuple[str, str]:
    """'Name: value' as (name, value). `number`: which --header, for the error message."""
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon:
        raise ConfigError(
            f"header #{number} must be 'Name: value', with a colon (the text is not shown)"
        )
    if not _TOKEN.fullmatch(name):
        raise ConfigError(
            f"header #{number}: the name before the colon must be a header name "
            "(letters, digits and !#$%&'*+.^_`|~-; the text is not shown)"
        )
    if _CONTROL.search(value):
        raise ConfigError(
            f"header {name}: the value may not hold line breaks or control characters "
            "(the value is not shown)"
        )
    why = _OWN_HEADERS.get(name.lower())
    if why is not None:
        raise ConfigError(f"header {name} cannot be given with --header: {why}")
    return name, value


def parse_cookie(text: str, number: int = 1) -> tuple[str, str]:
    """'name=value' as (name, value). `number`: which --cookie, for the error message."""
    name, equals, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not equals or not _TOKEN.fullmatch(name):
        raise ConfigError(
            f"cookie #{number} must be NAME=VALUE, the name a token (the text is not shown)"
        )
    if _CONTROL.search(value) or ";" in value or "," in value:
        raise ConfigError(
            f"cookie {name}: the value may not hold ';', ',', line breaks or control "
            "characters (the value is not shown)"
        )
    return name, value


def parse_proxy(text: str) -> tuple[str, tuple[str, str] | None]:
    """http://[USER:PASSWORD@]HOST[:PORT] as (the URL without credentials, (user, password)
    or None). The credentials are percent-decoded, as in any URL's userinfo."""
    usage = "proxy must be http://[USER:PASSWORD@]HOST[:PORT] (the value is not shown)"
    if _CONTROL.search(text) or any(c.isspace() for c in text):
        raise ConfigError(usage)
    try:
        parts = urlsplit(text)
        port = parts.port
        host = parts.hostname
    except ValueError:
        raise ConfigError(usage) from None
    if parts.scheme.lower() != "http" or not host or parts.path not in ("", "/"):
        raise ConfigError(usage)
    if parts.query or parts.fragment:
        raise ConfigError(usage)
    credentials = None
    if parts.username is not None or parts.password is not None:
        credentials = (unquote(parts.username or ""), unquote(parts.password or ""))
    netloc = f"[{host}]" if ":" in host else host
    return f"http://{netloc}" + (f":{port}" if port is not None else ""), credentials


def secrets_of(
    auth: str | None,
    headers: Iterable[str] = (),
    cookies: Iterable[str] = (),
    proxy: str | None = None,
) -> tuple[str, ...]:
    """Every secret in the settings as given (--auth, --header, --cookie, --proxy), in every
    form it may take in a message: as given, percent-encoded, and as the Authorization
    header's base64. Lenient, for it also runs on values not yet checked: a malformed one
    is a secret whole."""
    found: list[str] = []
    if auth:
        user, colon, password = auth.partition(":")
        found += _pair_secrets((user, password)) if colon else [auth]
    for text in headers:
        _, colon, value = text.partition(":")
        found += _value_secrets(value.strip() if colon else text)
    for text in cookies:
        _, equals, value = text.partition("=")
        found += _value_secrets(value.strip() if equals else text)
    if proxy:
        proxy_user: str | None = None
        proxy_password: str | None = None
        try:
            parts = urlsplit(proxy)
            proxy_user, proxy_password = parts.username, parts.password
        except ValueError:
            found.append(proxy)  # unreadable: all of it
        if proxy_user is not None or proxy_password is not None:
            found += _pair_secrets((unquote(proxy_user or ""), unquote(proxy_password or "")))
            userinfo = proxy.partition("//")[2].rpartition("@")[0]
            found += [userinfo, *(userinfo.split(":", 1)[1:])]
    return _distinct(found)


def _pair_secrets(pair: tuple[str, str] | None) -> tuple[str, ...]:
    """A user and password's secrets: the password and user:password, also as sent."""
    if pair is None:
        return ()
    user, password = pair
    joined = f"{user}:{password}"
    basic = base64.b64encode(joined.encode("utf-8")).decode("ascii")
    forms = [joined, basic, password, quote(password, safe=""), f"{quote(user)}:{quote(password)}"]
    return _distinct(forms)


def _value_secrets(value: str) -> list[str]:
    if len(value) < MIN_VALUE_SECRET:
        return []
    return [value, quote(value, safe="")]


def _distinct(forms: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(form for form in forms if form))


def redact(text: str, secrets: Iterable[str]) -> str:
    """text with every secret replaced by ***, the longest first (a password inside
    user:password goes with it, not before it, leaving the user name's colon behind). A
    secret shorter than WHOLE_TOKEN_BELOW is masked only as a token of its own: LocalStack's
    `test` key must not turn the bucket `test-sitemaps` into `***-sitemaps`, nor a one-letter
    password every word holding that letter; a longer one is masked wherever it is."""
    for secret in sorted(secrets, key=len, reverse=True):
        if not secret or secret not in text:
            continue
        if len(secret) >= WHOLE_TOKEN_BELOW:
            text = text.replace(secret, MASK)
        else:
            text = re.sub(_TOKEN_BEFORE + re.escape(secret) + _TOKEN_AFTER, MASK, text)
    return text
