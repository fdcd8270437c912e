"""Telling the operator how a run ended (#28): notify_url (a webhook on 127.0.0.1 here) and
--on-failure COMMAND, through the real CLI; neither ever changes the exit code."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from aiohttp import web

from crawler.core.access import secrets_of
from crawler.core.notice import Ending, body, scrub
from crawler.shell import eventloop
from crawler.shell.notify import post, where
from tests.procs import CLI, child_env, interrupted
from tests.sites import Page, Site, read_published, tree_site


class Hook:
    """A webhook receiver: records each POST's JSON body; answers with `statuses` in turn
    (then 200), Retry-After: 0 on a 429 or 503 so that a retry costs no time."""

    def __init__(self, statuses: tuple[int, ...] = (), delay: float = 0.0) -> None:
        self.bodies: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.statuses = list(statuses)
        self.delay = delay
        self.app = web.Application()
        self.app.router.add_post("/services/T0/B0/hook-secret-token", self._handle)

    async def _handle(self, request: web.Request) -> web.Response:
        self.bodies.append(json.loads(await request.read()))
        self.headers.append(dict(request.headers))
        if self.delay:
            await asyncio.sleep(self.delay)
        status = self.statuses.pop(0) if self.statuses else 200
        headers = {"Retry-After": "0"} if status in (429, 503) else {}
        return web.Response(status=status, text="ok", headers=headers)


def _hook(serve, hook: Hook) -> str:
    return serve(hook.app).url + "/services/T0/B0/hook-secret-token"


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env=child_env(**env), timeout=120
    )


def _nothing_site(serve) -> str:
    """A site whose start page is a 404: nothing can be listed (exit 3)."""
    return serve(Site({"/robots.txt": Page("", status=404)}).app).url + "/"


def test_a_failed_crawl_posts_its_exit_code_reason_and_summary_once(serve, tmp_path):
    hook = Hook()
    url = _hook(serve, hook)
    start = _nothing_site(serve)
    proc = _run("crawl", start, "-o", str(tmp_path / "o"), "--notify-url", url)
    assert proc.returncode == 3, proc.stderr
    assert len(hook.bodies) == 1
    sent = hook.bodies[0]
    reason = proc.stderr.strip().splitlines()[-1].removeprefix("sitemap-crawler: ")
    assert sent["event"] == "sitemap-crawler.failed" and sent["ok"] is False
    assert sent["exit_code"] == 3 and sent["command"] == "crawl"
    assert sent["reason"] == reason and sent["meaning"] == "nothing could be listed"
    assert sent["site"] == start
    assert sent["summary"]["published"] is False and sent["summary"]["start_url"] == start
    assert hook.headers[0]["Content-Type"] == "application/json"
    assert "hook-secret-token" not in proc.stderr + proc.stdout  # the URL is a secret


def test_success_is_told_only_when_asked_in_slacks_shape(serve, tmp_path, xsd):
    hook = Hook()
    url = _hook(serve, hook)
    start = serve(tree_site(3).app).url + "/"
    out = tmp_path / "o"
    proc = _run("crawl", start, "-o", str(out), "--notify-url", url, "-q")
    assert proc.returncode == 0 and hook.bodies == []
    proc = _run(
        "crawl", start, "-o", str(out), "-q", "--notify-on-success", "--notify-format", "slack",
        SITEMAP_CRAWLER_NOTIFY_URL=url,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert hook.bodies == [{"text": f"sitemap-crawler crawl {start}: published 3 URLs"}]
    assert len(read_published(out, xsd).locs) == 3


def test_no_secret_reaches_the_payload(serve, tmp_path):
    """The auth, header and cookie values, the webhook's URL, and a URL's userinfo are
    scrubbed from every field, here the start URL that carries the header's value."""
    hook = Hook()
    url = _hook(serve, hook)
    site = Site({"/robots.txt": Page("", status=404)})
    start = serve(site.app).url + "/?t=tok-secret-456"
    proc = _run(
        "crawl", start, "-o", str(tmp_path / "o"), "--notify-url", url,
        "--auth", "user:pw-secret-123", "--header", "X-Token: tok-secret-456",
        "--cookie", "sid=cookie-secret-789",
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    text = json.dumps(hook.bodies)
    assert len(hook.bodies) == 1 and "***" in text
    for secret in ("pw-secret-123", "tok-secret-456", "cookie-secret-789", "hook-secret-token"):
        assert secret not in text


def test_scrub_masks_secrets_and_userinfo_in_every_field():
    secrets = secrets_of(
        "u:pw-secret-123", ["X-Api-Key: key-secret-000"], ["s=cookie-secret-789"],
        "http://puser:proxy-secret-1@proxy:3128",
    )  # fmt: skip
    ending = Ending(
        "job", 5, "a file could not be written",
        "cannot reach https://bob:hunter2@example.com/x via http://puser:proxy-secret-1@proxy:3128",
        "https://example.com/?k=key-secret-000",
        {"start_url": "https://example.com/?k=key-secret-000", "sitemap_url": "https://a:b@e.com/"},
    )  # fmt: skip
    for fmt in ("json", "slack"):
        text = json.dumps(body(ending, fmt, secrets))
        for secret in ("pw-secret-123", "key-secret-000", "proxy-secret-1", "hunter2", "a:b@"):
            assert secret not in text, (fmt, secret)
        assert "https://example.com/x" in text
    assert scrub({"k": ["ftp://u:p@h/"]}, ()) == {"k": ["ftp://h/"]}


def test_a_failing_webhook_is_a_warning_and_the_exit_code_is_unchanged(serve, tmp_path):
    hook = Hook(statuses=(404,))
    url = _hook(serve, hook)
    start = serve(tree_site(2).app).url + "/"
    proc = _run(
        "crawl", start, "-o", str(tmp_path / "o"), "-q", "--notify-url", url,
        "--notify-on-success",
    )  # fmt: skip
    assert proc.returncode == 0
    assert len(hook.bodies) == 1  # a 404 is not retried
    host = url.split("/services")[0]
    assert proc.stderr.strip() == (
        f"sitemap-crawler: warning: the notification to {host} failed: HTTP 404 "
        "(the exit code is unchanged)"
    )


def test_a_busy_webhook_is_retried_then_taken(serve, tmp_path):
    hook = Hook(statuses=(503, 429))
    url = _hook(serve, hook)
    proc = _run("crawl", _nothing_site(serve), "-o", str(tmp_path / "o"), "--notify-url", url)
    assert proc.returncode == 3
    assert len(hook.bodies) == 3 and hook.bodies[0] == hook.bodies[2]
    assert "warning" not in proc.stderr


def test_retries_are_bounded_and_a_slow_webhook_is_cut_off(serve):
    hook = Hook(statuses=(503,) * 10)
    url = _hook(serve, hook)
    assert eventloop.run(post(url, b"{}", retries=2)) == "HTTP 503 after 3 tries"
    assert len(hook.bodies) == 3
    slow = Hook(delay=5)
    failed = eventloop.run(post(_hook(serve, slow), b"{}", retries=0, timeout=0.3))
    assert failed == "no answer (TimeoutError)" or failed.startswith("no answer")
    assert where("https://hooks.slack.com/services/T/B/secret") == "https://hooks.slack.com"


def test_a_config_that_cannot_be_read_is_told_too(serve, tmp_path):
    """A typo in the nightly config fails the job with exit 2, before any setting is in
    force; the notification settings are still read on their own, and the night is told."""
    hook = Hook()
    url = _hook(serve, hook)
    config = tmp_path / "c.toml"
    config.write_text(f'url = "http://127.0.0.1:9/"\nconcurency = 4\nnotify_url = "{url}"\n')
    proc = _run("job", "-c", str(config), "--data", str(tmp_path / "data"))
    assert proc.returncode == 2
    assert len(hook.bodies) == 1
    assert hook.bodies[0]["exit_code"] == 2 and "concurency" in hook.bodies[0]["reason"]
    assert hook.bodies[0]["command"] == "job"


def test_a_bad_usage_whose_metrics_cannot_be_written_is_told_too(serve, tmp_path):
    """Exit 2 with a --metrics path that cannot be written: the usage line says what is
    wrong, and the night is still told."""
    hook = Hook()
    metrics = tmp_path / "missing" / "m.prom"
    proc = _run(
        "crawl", "http://127.0.0.1:9/", "--metrics", str(metrics),
        "--notify-url", _hook(serve, hook), "-o", str(tmp_path / "out"),
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert len(hook.bodies) == 1 and hook.bodies[0]["exit_code"] == 2


WRITE_FAILED = (
    'printf "%s\\n%s\\n" "$SITEMAP_CRAWLER_FAILED_EXIT_CODE" "$SITEMAP_CRAWLER_FAILED_REASON" '
    '> "$MARKER"; cp "$SITEMAP_CRAWLER_FAILED_SUMMARY" "$MARKER.json"; env > "$MARKER.env"; '
    "echo told"
)


def test_the_on_failure_command_is_told_the_code_reason_and_summary(serve, tmp_path):
    marker = tmp_path / "m"
    start = _nothing_site(serve)
    proc = _run(
        "job", start, "--data", str(tmp_path / "d"), "--on-failure", WRITE_FAILED,
        MARKER=str(marker), SITEMAP_CRAWLER_AUTH="u:pw-secret-123",
        SITEMAP_CRAWLER_AUTH_ORIGIN=start.rstrip("/"),
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert "told" in proc.stdout  # its output passes through
    code, reason = marker.read_text().splitlines()
    assert code == "3" and reason == proc.stderr.strip().splitlines()[-1].removeprefix(
        "sitemap-crawler: "
    )
    summary = json.loads(Path(f"{marker}.json").read_text())
    assert summary["exit_code"] == 3 and summary["summary"]["published"] is False
    env = Path(f"{marker}.env").read_text()
    assert "pw-secret-123" not in env and "SITEMAP_CRAWLER_AUTH" not in env
    summary_path = Path(env.split("SITEMAP_CRAWLER_FAILED_SUMMARY=")[1].split()[0])
    assert not summary_path.exists()  # removed once the command ended


def test_the_on_failure_command_runs_on_failure_only_and_its_failure_is_a_warning(serve, tmp_path):
    marker = tmp_path / "m"
    start = serve(tree_site(2).app).url + "/"
    proc = _run(
        "crawl", start, "-o", str(tmp_path / "o"), "-q", "--on-failure", 'touch "$MARKER"',
        MARKER=str(marker),
    )  # fmt: skip
    assert proc.returncode == 0 and not marker.exists()
    proc = _run(
        "crawl", _nothing_site(serve), "-o", str(tmp_path / "o2"), "--on-failure", "exit 4",
        "--log-format", "json",
    )  # fmt: skip
    assert proc.returncode == 3
    events = [json.loads(line) for line in proc.stderr.splitlines()]
    assert events[-1]["event"] == "summary" and events[-1]["exit_code"] == 3  # still last
    warning = events[-2]
    assert warning["event"] == "log" and warning["level"] == "warning"
    assert warning["message"] == (
        "the on-failure command failed: exit 4 (the exit code is unchanged)"
    )


def test_what_the_command_is_told_is_no_setting():
    from crawler.config import from_env
    from crawler.shell.notify import environment

    ending = Ending("job", 4, "refused", "why", "https://e.com/")
    assert from_env(environment(ending, Path("/tmp/s.json"))) == {}


def test_the_webhook_url_is_hidden_in_json_logs(serve, tmp_path):
    hook = Hook()
    url = _hook(serve, hook)
    proc = _run(
        "crawl", _nothing_site(serve), "-o", str(tmp_path / "o"), "--log-format", "json",
        SITEMAP_CRAWLER_NOTIFY_URL=url, SITEMAP_CRAWLER_BING_API_KEY="bing-key-secret-1",
    )  # fmt: skip
    assert proc.returncode == 3 and len(hook.bodies) == 1
    start = json.loads(proc.stderr.splitlines()[0])
    assert start["settings"]["notify_url"] == "***"
    assert "hook-secret-token" not in proc.stderr and "bing-key-secret-1" not in proc.stderr


def test_a_fleet_job_tells_each_site_on_its_own(serve, tmp_path):
    """`job --sites`: each index is its own process, exit code and notification, naming its
    site and carrying its index."""
    hook = Hook()
    url = _hook(serve, hook)
    sites = tmp_path / "sites.txt"
    good, bad = serve(tree_site(2).app).url + "/", _nothing_site(serve)
    sites.write_text(f"{good}\n{bad}\n")
    for index, expected in ((0, 0), (1, 3)):
        proc = _run(
            "job", "--sites", str(sites), "--index", str(index), "--data", str(tmp_path / "d"),
            "-q", "--notify-url", url, "--notify-on-success",
        )  # fmt: skip
        assert proc.returncode == expected, proc.stderr
    assert [(b["site"], b["exit_code"], b["labels"]) for b in hook.bodies] == [
        (good, 0, {"index": "0"}),
        (bad, 3, {"index": "1"}),
    ]


def test_a_refused_notify_url_is_never_posted_to_nor_shown(serve, tmp_path):
    """The config's check refuses it (exit 2, one line); the lenient read that tells a
    broken config's failure must not then use it."""
    start = _nothing_site(serve)
    for bad in ("htps://hooks.example/services/T0/B0/SECRETTOKEN", "ftp://x/SECRETTOKEN"):
        proc = _run("crawl", start, "-o", str(tmp_path / "o"), "--notify-url", bad)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.splitlines() == [
            "sitemap-crawler: notify_url must be an http(s):// URL (the value is not shown)"
        ]
        assert "SECRETTOKEN" not in proc.stdout + proc.stderr


def test_sigterm_during_the_notification_ends_it_and_keeps_the_exit_code(serve, tmp_path):
    hook = Hook(delay=60.0)  # the POST hangs until the signal
    url = _hook(serve, hook)
    code, err = interrupted(
        [*CLI, "crawl", _nothing_site(serve), "-o", str(tmp_path / "o"), "--notify-url", url],
        lambda: hook.bodies, "the notification to be sent", env=child_env(),
    )  # fmt: skip
    assert code == 3, err  # the run's own code, not killed (-15)
    assert "interrupted while telling the operator; the exit code is unchanged" in err
