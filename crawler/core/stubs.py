"""Redirect stubs: pages whose whole job is to send the browser on. Pure.

Static site generators cannot answer 301, so a moved page is left as a stub that redirects
on the client (mkdocs-redirects, Jekyll redirect-from, many CMS exports): a meta refresh,
a one-line script, or both. Google treats these as redirects ("Redirects and Google Search":
an instant meta refresh as a permanent redirect, a delayed one as a temporary redirect, and
JavaScript location changes as redirects once rendered), and Search Console reports a
listed stub as "Submitted URL is a redirect". So a stub is a `redirect` decision, its target
followed like an HTTP redirect's, never a listed page.

What is recognised, on purpose narrowly, so that a real page is never taken for a stub:

* ``<meta http-equiv="refresh" content="N; url=TARGET">`` anywhere in the page, read as
  browsers read it (HTML's shared declarative refresh steps: ``;`` or ``,``, an optional
  ``url=``, optional quotes), with a delay of at most REFRESH_MAX_DELAY seconds. A refresh
  without a URL reloads the page itself: not a redirect. A longer delay is a page meant to
  be read first (a countdown notice), which Google still follows as a temporary redirect,
  but whose own URL is the one it keeps: it stays a page.
* A script that is the page's only content: a page of at most STUB_MAX_BYTES bytes with one
  inline script whose whole text is one assignment of a string literal to the location,
  ``location = "..."``, ``location.href = "..."``, ``location.replace("...")`` or
  ``location.assign("...")`` (optionally on ``window.``, ``document.``, ``self.`` or
  ``top.``, with or without a trailing ``;``), and at most STUB_MAX_TEXT characters of other
  text (a "Redirecting..." notice). Anything computed (a hash appended, a condition) is not
  read: without a browser it cannot be known where it goes.
"""

from __future__ import annotations

import re

__all__ = [
    "REFRESH_MAX_DELAY",
    "STUB_MAX_BYTES",
    "STUB_MAX_TEXT",
    "refresh_target",
    "script_target",
]

#: The longest meta refresh delay (seconds) read as a redirect. Google calls a refresh of 0 s
#: instant and any longer one delayed, and follows both; a few seconds is what the generators
#: write (0, sometimes 1 to 3 for a "you are being redirected" notice), 5 s the usual ceiling
#: of such notices. Past it the page is a page that happens to move on, and is judged as one.
REFRESH_MAX_DELAY = 5.0
#: A script stub is tiny: the generators' stubs are 200 to 600 bytes.
STUB_MAX_BYTES = 2048
#: Visible text a script stub may carry besides its script (title and notice).
STUB_MAX_TEXT = 200

_HTML_SPACE = "\t\n\f\r "
# The patterns below are compiled (and cached by re) at the first stub candidate, a page with
# a meta refresh or a tiny script page: most crawls meet none, and a start pays no compile
# for them (#26: 4 M instructions)
# HTML's shared declarative refresh steps: a whole number of seconds ("1.5" is read as 1),
# then ";" or "," and an optional "url=" before the URL
_DELAY_PATTERN = r"[\t\n\f\r ]*(\d*)[\d.]*"
_URL_PREFIX_PATTERN = r"(?i)[\t\n\f\r ]*[;,]?[\t\n\f\r ]*(?:url[\t\n\f\r ]*=[\t\n\f\r ]*)?"
_STRING = r"""(?:"(?P<dq>[^"\\\n]*)"|'(?P<sq>[^'\\\n]*)')"""
_LOCATION = r"(?:(?:window|document|self|top)\s*\.\s*)?location"
_ASSIGN_PATTERN = rf"\s*{_LOCATION}(?P<href>\s*\.\s*href)?\s*=\s*{_STRING}\s*;?\s*"
_CALL_PATTERN = rf"\s*{_LOCATION}\s*\.\s*(?P<call>replace|assign)\s*\(\s*{_STRING}\s*\)\s*;?\s*"


def refresh_target(content: str | None) -> tuple[int, str] | None:
    """(delay in seconds, raw URL) of a meta refresh's content, when it names a URL and
    its delay is at most REFRESH_MAX_DELAY; None for a plain reload or a longer delay."""
    if not content:
        return None
    match = re.match(_DELAY_PATTERN, content)
    assert match is not None  # every part is optional
    if match.end() == 0 or match.group(0).strip(_HTML_SPACE) == "":
        return None  # no delay at all: the spec reads no refresh
    delay = int(match.group(1) or 0)
    if delay > REFRESH_MAX_DELAY:
        return None
    rest = content[match.end() :]
    if rest and rest[0] not in _HTML_SPACE + ";,":
        return None  # "5abc": not a refresh the spec reads
    prefix = re.match(_URL_PREFIX_PATTERN, rest)
    assert prefix is not None
    rest = rest[prefix.end() :]
    if rest[:1] in ("'", '"'):
        quote, rest = rest[0], rest[1:]
        rest = rest.split(quote, 1)[0]
    target = rest.strip(_HTML_SPACE)
    return (delay, target) if target else None


def script_target(script: str) -> tuple[str, str] | None:
    """(raw URL, what the script does, e.g. ``sets location.href``) when the script is nothing but
    a location assignment of a string literal (see the module's list); None otherwise."""
    for regex in (_ASSIGN_PATTERN, _CALL_PATTERN):
        match = re.fullmatch(regex, script)
        if match is None:
            continue
        target = (match.group("dq") or match.group("sq") or "").strip()
        if not target:
            return None
        groups = match.groupdict()
        if groups.get("call"):
            how = f"calls location.{groups['call']}()"
        else:
            how = "sets location.href" if groups.get("href") else "sets location"
        return target, how
    return None
