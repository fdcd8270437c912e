"""The exit codes of every command, in one table: the CLI's --help, the README's table and the
tests are all made from (or checked against) it, so a code means one thing everywhere.

A code is never shared by an answer and a failure: "no" (findings, a blocked URL) is 1 and
an unexpected failure is 70 (sysexits' EX_SOFTWARE) in every command, so a script reading
`$?` cannot take a bug for a verdict.
"""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    NO = 1  # the answer is no: audit findings, a URL robots.txt blocks
    USAGE = 2
    NOTHING = 3
    REFUSED = 4
    IO = 5
    ON_PUBLISH = 6
    UPLOAD = 7
    BLOCKED = 8  # a CDN's bot protection answers instead of the site
    SUBMIT = 9  # published, but submitting it to a search engine failed (#28)
    FAILURE = 70  # sysexits' EX_SOFTWARE
    BUSY = 75  # sysexits' EX_TEMPFAIL: try again later
    INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it


_FAILURE = "unexpected failure (a bug: one line on stderr; SITEMAP_CRAWLER_DEBUG=1 for a traceback)"
_INTERRUPTED = "interrupted (SIGINT or SIGTERM)"

#: What each code means to each command; a command does not use the codes it does not list.
MEANINGS: dict[str, dict[Exit, str]] = {
    "crawl": {
        Exit.OK: "published",
        Exit.USAGE: "bad usage, URL or config, or an output path that cannot be written "
        "(nothing fetched)",
        Exit.NOTHING: "nothing could be listed",
        Exit.REFUSED: "publishing refused (the site failing, or the sitemap shrinking past "
        "--max-shrink)",
        Exit.IO: "a file could not be written while crawling (a full disk)",
        Exit.ON_PUBLISH: "published, but the --on-publish command failed (or ran past its "
        "900 s timeout, or was interrupted)",
        Exit.UPLOAD: "published locally, but the upload to publish_to failed (or was "
        "interrupted); the local set is whole",
        Exit.BLOCKED: "the crawl is blocked by bot protection (Cloudflare, Akamai, Imperva, "
        "AWS WAF, DataDome: named in the line); nothing published",
        Exit.SUBMIT: "published, but submitting it to a search engine (submit = ...) failed "
        "(or was interrupted)",
        Exit.FAILURE: _FAILURE,
        Exit.BUSY: "another run is writing to the output folder or using the state file "
        "(nothing fetched: try again later)",
        Exit.INTERRUPTED: _INTERRUPTED + "; with --state the crawl can be resumed",
    },
    "explain": {
        Exit.OK: "the URL would be listed",
        Exit.USAGE: "bad usage, URL or config",
        Exit.NOTHING: "it would not",
        Exit.FAILURE: _FAILURE,
        Exit.INTERRUPTED: _INTERRUPTED,
    },
    "robots": {
        Exit.OK: "every URL allowed",
        Exit.NO: "one or more blocked by a rule",
        Exit.USAGE: "bad usage, URL or --robots-from file (nothing fetched)",
        Exit.NOTHING: "a robots.txt could not be read (5xx, 429, unreachable, redirected off "
        "its site): RFC 9309 blocks all its URLs; wins over 1",
        Exit.FAILURE: _FAILURE,
        Exit.INTERRUPTED: _INTERRUPTED,
    },
    "audit": {
        Exit.OK: "no finding at or above --fail-on",
        Exit.NO: "there is one",
        Exit.USAGE: "bad usage or config, or a local file or output path that cannot be read "
        "or written",
        Exit.NOTHING: "nothing could be audited (no sitemap found, site unreachable, a bot "
        "protection answering instead of the site)",
        Exit.FAILURE: _FAILURE,
        Exit.INTERRUPTED: _INTERRUPTED + "; no report written",
    },
    "diff": {
        Exit.OK: "no --fail-on threshold crossed",
        Exit.NO: "one is crossed",
        Exit.USAGE: "bad usage or --fail-on, OLD or NEW not readable whole (missing, not a "
        "sitemap, a part unreadable, a server not answering), or a report path that cannot "
        "be written",
        Exit.NOTHING: "nothing to compare (neither set lists a URL), or the site went down "
        "during --fetch",
        Exit.FAILURE: _FAILURE,
        Exit.INTERRUPTED: _INTERRUPTED + "; no report written",
    },
}
MEANINGS["submit"] = {
    Exit.OK: "every sitemap submitted (--status: every status read, no engine reports an "
    "error in a sitemap)",
    Exit.NO: "--status: an engine reports errors in a sitemap",
    Exit.USAGE: "bad usage or config (no engine, no key file or API key, a key file that is "
    "not a service account's key)",
    Exit.REFUSED: "an engine refused: no access to the property or site (401, 403), an "
    "unknown property, site or sitemap (404), a bad request or API key",
    Exit.FAILURE: _FAILURE,
    Exit.BUSY: "an engine was rate-limiting (429), failing (5xx) or unreachable, still after "
    "retries: try again later",
    Exit.INTERRUPTED: _INTERRUPTED,
}
MEANINGS["job"] = MEANINGS["crawl"]
#: Every code but these leaves a published sitemap byte for byte as it was.
TOUCH_THE_SITEMAP = (Exit.OK, Exit.ON_PUBLISH, Exit.UPLOAD, Exit.SUBMIT)
_TOUCHING = [str(int(code)) for code in TOUCH_THE_SITEMAP]
KEPT = "all but {} and {} leave the published sitemap byte for byte as it was".format(
    ", ".join(_TOUCHING[:-1]), _TOUCHING[-1]
)


def help_text(command: str) -> str:
    """The 'exit codes:' paragraph of a command's --help."""
    items = [f"{int(code)} {meaning}" for code, meaning in MEANINGS[command].items()]
    if command in ("crawl", "job"):
        items.append(KEPT)
    lines, line = [], "exit codes:"
    for word in "; ".join(items).split(" "):
        if len(line) + 1 + len(word) > 92:
            lines.append(line)
            line = " " * 12 + word
        else:
            line += " " + word
    return "\n".join([*lines, line]) + "\n"


def markdown_table() -> str:
    """The README's table: a row per code, a column per command (job: as crawl); a meaning
    the same as crawl's reads "as crawl"."""
    # every command of MEANINGS, in its order; a command sharing crawl's meanings (job)
    # shares its column
    commands = tuple(c for c in MEANINGS if c == "crawl" or MEANINGS[c] is not MEANINGS["crawl"])
    heads = [
        ", ".join(c for c in MEANINGS if MEANINGS[c] is MEANINGS[command]) for command in commands
    ]
    codes = sorted({code for command in commands for code in MEANINGS[command]})
    rows = [
        "| code | " + " | ".join(heads) + " |",
        "|---" * (len(commands) + 1) + "|",
    ]
    for code in codes:
        first = MEANINGS["crawl"].get(code)
        cells = [first or ""] + [
            "as crawl"
            if first and MEANINGS[command].get(code) == first
            else MEANINGS[command].get(code, "")
            for command in commands[1:]
        ]
        rows.append(f"| {int(code)} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"
