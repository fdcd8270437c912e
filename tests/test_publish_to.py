"""publish_to: the published set copied to a real S3-compatible server (moto's, on
127.0.0.1, behind a recording proxy): order, headers, unchanged parts left alone, dropped
parts deleted, failures (exit 7, the local set whole) and a kill mid-upload."""

from __future__ import annotations

import gzip
import hashlib
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from crawler.cli import main
from crawler.core.uploads import (
    DIGEST_KEY,
    DROPPED,
    Found,
    LocalFile,
    dropped_names,
    dropped_text,
    parse_target,
    plan,
)
from crawler.errors import ConfigError
from crawler.exit_codes import Exit
from tests.conftest import LiveServer
from tests.objectstore import CREDENTIALS, S3, Proxy
from tests.procs import CLI, child_env, interrupted, wait_for
from tests.sites import NS, Site, html, read_published

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    """moto's server, for this module; a bucket per test."""
    server = S3()
    yield server
    server.server.stop()


@pytest.fixture
def s3_env(monkeypatch) -> dict[str, str]:
    """The credentials in this process's environment, as a deployment sets them."""
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    return dict(CREDENTIALS)


@pytest.fixture
def proxy(s3, serve) -> tuple[Proxy, LiveServer]:
    front = Proxy(s3.endpoint)
    return front, serve(front.app())


def catalogue(count: dict[str, int]) -> Site:
    """/ links to /p0 ... /p<n-1>, n read at each request: a site that grows and shrinks
    between nights."""

    async def home(request: web.Request) -> web.Response:
        links = [f"/p{i}" for i in range(count["n"])]
        return web.Response(text=html(*links), content_type="text/html")

    async def page(request: web.Request) -> web.Response:
        n = int(request.path[2:]) if request.path[2:].isdigit() else -1
        if not 0 <= n < count["n"]:
            return web.Response(status=404, text="gone")
        return web.Response(text=html(body=f"page {n}"), content_type="text/html")

    site = Site({"/": home, "/robots.txt": ""}, fallback=page)
    return site


def night(site_url: str, out: Path, target: str, endpoint: str, *more: str) -> tuple[int, str]:
    """One crawl publishing to out/ and target, in this process; (exit code, stderr)."""
    code = main(
        [
            "crawl", site_url, "-o", str(out), "--gzip", "--max-urls-per-file", "2",
            "--publish-to", target, "--publish-endpoint", endpoint, "--quiet", *more,
        ]
    )  # fmt: skip
    return code, ""


def bucket_matches_local(s3, bucket: str, prefix: str, out: Path, xsd) -> dict[str, bytes]:
    """The bucket's objects under prefix are the local set, byte for byte, and valid."""
    objects = {k: v for k, v in s3.objects(bucket, prefix).items() if k != DROPPED}
    local = {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")}
    assert objects == local
    for body in objects.values():
        xsd.any(body)
        index = xsd.parse(body).getroot()
        if index.tag != f"{NS}sitemapindex":
            continue
        for loc in index.iter(f"{NS}loc"):  # every part the index names is there
            assert loc.text.rsplit("/", 1)[1] in objects
    return objects


def test_the_first_night_uploads_parts_then_the_index(
    s3, s3_env, proxy, serve, tmp_path, xsd, capsys
):
    front, server = proxy
    bucket, site = s3.bucket(), catalogue({"n": 6})
    url = serve(site.app).url + "/"
    code, _ = night(url, tmp_path / "out", f"s3://{bucket}/site/", server.url)
    assert code == 0, capsys.readouterr().err
    objects = bucket_matches_local(s3, bucket, "site/", tmp_path / "out", xsd)
    assert len(objects) == 5  # 7 URLs, 2 a part, and the index
    puts = front.puts()
    assert puts[-1] == "site/sitemap.xml"  # after every part it names
    assert sorted(puts[:-1]) == [f"site/sitemap-{i}.xml.gz" for i in range(1, 5)]
    published = read_published(tmp_path / "out", xsd)
    assert len(published.locs) == 7
    part = s3.head(bucket, "site/sitemap-1.xml.gz")
    assert part["ContentType"] == "application/gzip"
    assert "ContentEncoding" not in part  # the gzip file itself: see the README
    assert part["Metadata"][DIGEST_KEY] == _sha256(tmp_path / "out" / "sitemap-1.xml.gz")
    assert gzip.decompress(objects["sitemap-1.xml.gz"]).startswith(b"<?xml")
    index = s3.head(bucket, "site/sitemap.xml")
    assert index["ContentType"] == "application/xml"
    assert index["CacheControl"] == "public, max-age=300"  # a CDN's copy is minutes old
    assert part["CacheControl"] == "public, max-age=3600"


def test_the_stored_digest_is_of_the_bytes_sent_when_the_folder_changes_meanwhile(
    s3, s3_env, serve, tmp_path, monkeypatch, capsys
):
    """Another run may replace the set between the plan's hashing and the PUT: the digest
    stored is the one of the bytes the object holds, never the earlier file's."""
    from crawler.shell import upload

    hashed = upload._local

    def then_replaced(path: Path) -> LocalFile:
        local = hashed(path)
        if path.name == "sitemap-1.xml.gz":
            path.write_bytes(gzip.compress(path.read_bytes() + b"\n"))  # a new set's
        return local

    monkeypatch.setattr(upload, "_local", then_replaced)
    bucket = s3.bucket()
    url = serve(catalogue({"n": 3}).app).url + "/"
    code, _ = night(url, tmp_path / "out", f"s3://{bucket}/", s3.endpoint)
    assert code == 0, capsys.readouterr().err
    body = s3.objects(bucket)["sitemap-1.xml.gz"]
    assert s3.head(bucket, "sitemap-1.xml.gz")["Metadata"][DIGEST_KEY] == (
        hashlib.sha256(body).hexdigest()
    )


def test_a_text_sitemap_is_served_as_utf8_text(s3, s3_env, serve, tmp_path, capsys):
    bucket = s3.bucket()
    url = serve(catalogue({"n": 2}).app).url + "/"
    out = tmp_path / "out"
    args = ["crawl", url, "-o", str(out), "--format", "txt", "--publish-to", f"s3://{bucket}/"]
    assert main([*args, "--publish-endpoint", s3.endpoint]) == 0, capsys.readouterr().err
    assert s3.objects(bucket) == {"sitemap.txt": (out / "sitemap.txt").read_bytes()}
    assert s3.head(bucket, "sitemap.txt")["ContentType"] == "text/plain; charset=utf-8"
    assert "uploaded 1 of 1 files to" in capsys.readouterr().out


def test_an_unchanged_night_uploads_nothing_and_a_changed_one_only_what_changed(
    s3, s3_env, proxy, serve, tmp_path, xsd, capsys
):
    front, server = proxy
    bucket, count = s3.bucket(), {"n": 6}
    url = serve(catalogue(count).app).url + "/"
    target, out = f"s3://{bucket}/", tmp_path / "out"
    assert night(url, out, target, server.url)[0] == 0
    front.requests.clear()
    assert night(url, out, target, server.url)[0] == 0, capsys.readouterr().err
    assert front.puts() == []  # the same bytes: nothing sent again
    assert not any(method == "POST" for method, _ in front.requests)  # nor deleted
    bucket_matches_local(s3, bucket, "", out, xsd)

    count["n"] = 7  # one more page: the last part changes (or a new one comes)
    front.requests.clear()
    assert night(url, out, target, server.url, "--max-shrink", "1")[0] == 0
    puts = front.puts()
    assert puts and puts[-1] == "sitemap.xml" and len(puts) <= 3, puts
    bucket_matches_local(s3, bucket, "", out, xsd)

    count["n"] = 2  # a smaller site: parts dropped, kept a run (a CDN's cached index)
    before = set(s3.objects(bucket))
    front.requests.clear()
    assert night(url, out, target, server.url, "--max-shrink", "1")[0] == 0
    assert not any(method == "POST" for method, _ in front.requests)  # nothing deleted yet
    gone = before - {p.name for p in out.iterdir()}
    assert gone and gone <= set(s3.objects(bucket))
    assert s3.objects(bucket)[DROPPED].decode().split() == sorted(gone)
    assert s3.head(bucket, DROPPED)  # the next run's list
    front.requests.clear()  # the next run deletes them, once its index is in
    assert night(url, out, target, server.url, "--max-shrink", "1")[0] == 0
    assert "POST" in [method for method, _ in front.requests]  # S3's multi-object delete
    objects = bucket_matches_local(s3, bucket, "", out, xsd)
    assert len(objects) == 3  # 3 URLs: sitemap-1, sitemap-2 and the index
    assert s3.objects(bucket)[DROPPED] == b""


def test_other_objects_in_the_prefix_are_never_touched(s3, s3_env, proxy, serve, tmp_path, xsd):
    _, server = proxy
    bucket = s3.bucket()
    client = s3.client()
    client.put_object(Bucket=bucket, Key="sitemap-9.xml.gz", Body=b"not ours")  # no digest
    client.put_object(Bucket=bucket, Key="robots.txt", Body=b"User-agent: *")
    client.put_object(Bucket=bucket, Key="old/sitemap-1.xml", Body=b"a folder")
    url = serve(catalogue({"n": 2}).app).url + "/"
    assert night(url, tmp_path / "out", f"s3://{bucket}", server.url)[0] == 0
    objects = s3.objects(bucket)
    assert objects["sitemap-9.xml.gz"] == b"not ours"
    assert objects["robots.txt"] == b"User-agent: *"
    assert objects["old/sitemap-1.xml"] == b"a folder"


def test_a_store_that_fails_exits_7_and_the_local_set_is_whole(
    s3, s3_env, proxy, serve, tmp_path, xsd, capsys
):
    front, server = proxy
    bucket = s3.bucket()
    url = serve(catalogue({"n": 4}).app).url + "/"
    front.down = True  # every request answered 503
    out = tmp_path / "out"
    code, _ = night(url, out, f"s3://{bucket}/x/", server.url, "--report", str(tmp_path / "r"))
    err = capsys.readouterr().err
    assert code == Exit.UPLOAD == 7
    last = err.strip().splitlines()[-1]
    assert last.startswith(
        f"sitemap-crawler: published 5 URLs to {out}, but the upload to s3://{bucket}/x/"
    ), err
    assert last.endswith("; the local set is whole")
    assert "503 Service Unavailable (SlowDown)" in last
    assert CREDENTIALS["AWS_SECRET_ACCESS_KEY"] not in err
    assert len(front.requests) == 5  # the listing, tried 5 times (4 retries), then given up
    published = read_published(out, xsd)
    assert len(published.locs) == 5
    report = json.loads((tmp_path / "r").read_text())
    assert report["published"] is True and "error" in report["publish_to"]


def test_a_bucket_that_does_not_exist_exits_7_at_once(s3, s3_env, proxy, serve, tmp_path, capsys):
    front, server = proxy
    url = serve(catalogue({"n": 1}).app).url + "/"
    code, _ = night(url, tmp_path / "out", "s3://no-such-bucket-here/", server.url)
    err = capsys.readouterr().err
    assert code == 7
    assert "the upload to s3://no-such-bucket-here/ failed: " in err
    assert "404 Not Found (NoSuchBucket: The specified bucket does not exist)" in err
    assert len(front.requests) == 1  # a 4xx is not tried again
    assert (tmp_path / "out" / "sitemap.xml").is_file()


def test_on_publish_runs_after_the_upload_and_not_after_a_failed_one(
    s3, s3_env, serve, tmp_path, capsys
):
    bucket = s3.bucket()
    url = serve(catalogue({"n": 1}).app).url + "/"
    marker = tmp_path / "marker"
    # the hook reads the index back from the bucket: it is there when the hook runs
    hook = (
        f'{sys.executable} -c \'import boto3; boto3.client("s3", endpoint_url="{s3.endpoint}")'
        f'.head_object(Bucket="{bucket}", Key="sitemap.xml")\' && touch {marker}'
    )
    args = ["--on-publish", hook]
    assert night(url, tmp_path / "o1", f"s3://{bucket}/", s3.endpoint, *args)[0] == 0
    assert marker.exists(), capsys.readouterr().err
    marker.unlink()
    assert night(url, tmp_path / "o2", "s3://no-such-bucket-here/", s3.endpoint, *args)[0] == 7
    assert not marker.exists()


def test_the_job_publishes_to_the_bucket_from_its_environment(
    s3, s3_env, serve, tmp_path, xsd, monkeypatch
):
    bucket = s3.bucket()
    url = serve(catalogue({"n": 3}).app).url + "/"
    monkeypatch.setenv("SITEMAP_CRAWLER_PUBLISH_TO", f"s3://{bucket}/nightly/")
    monkeypatch.setenv("SITEMAP_CRAWLER_PUBLISH_ENDPOINT", s3.endpoint)
    monkeypatch.setenv("SITEMAP_CRAWLER_PUBLISH_REGION", "us-east-1")
    data = tmp_path / "data"
    assert main(["job", "--data", str(data), url, "--quiet"]) == 0
    bucket_matches_local(s3, bucket, "nightly/", data / "out", xsd)


def test_a_kill_mid_upload_leaves_a_whole_set_that_the_next_night_completes(
    s3, proxy, serve, tmp_path, xsd
):
    front, server = proxy
    bucket, count = s3.bucket(), {"n": 6}
    url = serve(catalogue(count).app).url + "/"
    out, target = tmp_path / "out", f"s3://{bucket}/"
    env = child_env(**CREDENTIALS)
    args = [
        *CLI, "crawl", url, "-o", str(out), "--gzip", "--max-urls-per-file", "2",
        "--publish-to", target, "--publish-endpoint", server.url, "--max-shrink", "1",
    ]  # fmt: skip
    first = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    before = s3.objects(bucket)

    for hold in (
        lambda method, path: method == "PUT" and "sitemap-" in path,  # the first changed part
        lambda method, path: method == "PUT" and path.endswith("/sitemap.xml"),  # the index
    ):
        count["n"] += 3  # new pages: changed and new parts, and a new index
        front.hold, front.held = hold, type(front.held)()
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(front.held.is_set, "the upload to reach the held request", proc=proc)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        front.hold = None
        after = s3.objects(bucket)
        assert after["sitemap.xml"] == before["sitemap.xml"]  # the old index ...
        index = xsd.index(after["sitemap.xml"]).getroot()
        for loc in index.iter(f"{NS}loc"):  # ... and every file it names
            xsd.urlset(after[loc.text.rsplit("/", 1)[1]])

    # the local set was published before the kill; the next night completes the bucket
    last = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert last.returncode == 0, last.stderr
    bucket_matches_local(s3, bucket, "", out, xsd)


def test_sigterm_mid_upload_exits_7_once_the_request_in_flight_returns(
    s3, proxy, serve, tmp_path, xsd
):
    front, server = proxy
    bucket = s3.bucket()
    url = serve(catalogue({"n": 3}).app).url + "/"
    out = tmp_path / "out"
    front.hold = lambda method, path: method == "PUT" and path.endswith("/sitemap-1.xml.gz")
    code, err = interrupted(
        [*CLI, "crawl", url, "-o", str(out), "--gzip", "--max-urls-per-file", "2",
         "--publish-to", f"s3://{bucket}/", "--publish-endpoint", server.url],
        front.held.is_set, "the upload to reach the first part", env=child_env(**CREDENTIALS),
        then=front.release.set,  # the PUT in flight completes; nothing after it is sent
    )  # fmt: skip
    assert code == Exit.UPLOAD, (err, front.requests)  # published locally: not 130
    assert f"but the upload to s3://{bucket}/ was interrupted; the local set is whole" in err
    assert len(read_published(out, xsd).locs) == 4
    assert front.puts() == ["sitemap-1.xml.gz"]
    assert set(s3.objects(bucket)) == {"sitemap-1.xml.gz"}  # no index naming missing parts


@pytest.mark.parametrize(
    ("value", "scheme", "bucket", "prefix"),
    [
        ("s3://my-bucket/site/en", "s3", "my-bucket", "site/en/"),
        ("gs://sitemaps.example.com/", "gs", "sitemaps.example.com", ""),
        ("az://web/sitemaps/", "az", "web", "sitemaps/"),
        ("S3://bkt", "s3", "bkt", ""),
    ],
)
def test_publish_to_names_a_bucket_and_a_prefix(value, scheme, bucket, prefix):
    target = parse_target(value)
    assert (target.scheme, target.bucket, target.prefix) == (scheme, bucket, prefix)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--publish-to", "ftp://host/x/"], "publish_to must be one of s3://"),
        (["--publish-to", "s3://AKIAXXX:hunter2@bkt/"], "must not hold credentials"),
        (["--publish-to", "s3://B/"], "is not a bucket name"),
        (["--publish-to", "s3://bkt/a/../b/"], "has an empty, . or .. segment"),
        (["--publish-to", "az://c/?sig=hunter2"], "no query or fragment"),
        (["--publish-endpoint", "http://127.0.0.1:9/"], "publish_endpoint needs publish_to"),
        (
            ["--publish-to", "gs://bkt/", "--publish-endpoint", "http://127.0.0.1:9/"],
            "publish_endpoint is for S3-compatible stores",
        ),
        (["--publish-to", "az://web/", "--publish-region", "eu"], "publish_region is for s3://"),
        (["--publish-to", "s3://bkt/", "--publish-endpoint", "ftp://x"], "an http(s):// URL"),
    ],
)
def test_a_bad_publish_to_is_one_line_and_exit_2_before_any_request(args, message, capsys):
    code = main(["crawl", "http://127.0.0.1:9/", "-o", "/nonexistent/out", *args])
    err = capsys.readouterr().err
    assert code == Exit.USAGE
    assert message in err and len(err.strip().splitlines()) == 1
    assert "hunter2" not in err


def test_gs_and_az_stores_that_cannot_be_opened_fail_before_the_crawl(
    monkeypatch, tmp_path, capsys
):
    """No emulator: what obstore refuses (no Azure account, a missing key file) is found
    before any request, with exit 2."""
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME", raising=False)
    code = main(["crawl", "http://127.0.0.1:9/", "-o", str(tmp_path), "--publish-to", "az://web/"])
    assert code == 2
    assert "publish_to az://web/: " in capsys.readouterr().err
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    code = main(["crawl", "http://127.0.0.1:9/", "-o", str(tmp_path), "--publish-to", "gs://bkt1/"])
    err = capsys.readouterr().err
    assert code == 2 and "missing.json" in err


def test_the_plan_sends_changed_files_in_order_and_deletes_only_its_own():
    local = [LocalFile("sitemap-1.xml", 10, "a"), LocalFile("sitemap-2.xml", 10, "b")]
    local.append(LocalFile("sitemap.xml", 5, "i"))
    found = {
        "sitemap-1.xml": Found(10, "a"),  # unchanged
        "sitemap-2.xml": Found(10, "x"),  # changed
        "sitemap-3.xml": Found(10, "c"),  # ours, dropped
        "sitemap-4.xml": Found(10, None),  # not written by us
        "index.html": Found(3, "z"),  # not a sitemap file
    }
    steps = plan(local, found)
    assert steps.puts == ("sitemap-2.xml", "sitemap.xml")
    assert steps.kept == ("sitemap-1.xml",)
    assert steps.deletes == ("sitemap-3.xml",)
    found["sitemap-5.xml"] = Found(10, "d")  # ours, dropped by the previous run
    steps = plan(local, found, dropped_before=dropped_names(b"sitemap-5.xml\nrobots.txt\n"))
    assert steps.deletes == ("sitemap-5.xml",)  # a run's grace: the others' turn comes next
    assert steps.dropped == ("sitemap-3.xml",)
    assert dropped_names(dropped_text(steps.dropped)) == {"sitemap-3.xml"}


_NAMES = st.sampled_from(
    ["sitemap.xml", "sitemap-1.xml.gz", "sitemap-2.xml.gz", "sitemap-news.xml", "changes.atom",
     "sitemap.txt", "robots.txt", "index.html"]
)  # fmt: skip


@given(
    st.lists(st.tuples(_NAMES, st.integers(0, 3), st.sampled_from("ab")), unique_by=lambda t: t[0]),
    st.dictionaries(_NAMES, st.tuples(st.integers(0, 3), st.sampled_from(["a", "b", None]))),
)
def test_the_plan_sends_or_keeps_every_file_once_in_order_and_deletes_none_of_them(files, objects):
    local = [LocalFile(name, size, digest) for name, size, digest in files]
    found = {name: Found(size, digest) for name, (size, digest) in objects.items()}
    steps = plan(local, found)
    order = [f.name for f in local]
    assert sorted(steps.puts + steps.kept) == sorted(order)
    assert list(steps.puts) == [n for n in order if n in steps.puts]  # the entry point last
    assert not set(steps.deletes) & set(order)
    for name in steps.deletes:  # only sitemap files this tool wrote
        assert found[name].sha256 is not None and name.startswith(("sitemap", "changes"))
    for name in steps.kept:  # the bucket holds these bytes
        file = next(f for f in local if f.name == name)
        assert found[name] == Found(file.size, file.sha256)


def test_configerror_names_publish_to():
    with pytest.raises(ConfigError, match="publish_to"):
        parse_target("s3:/bkt")


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_no_aws_credentials_fail_before_the_crawl_naming_the_variables(
    serve, tmp_path, monkeypatch, capsys
):
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ):
        monkeypatch.delenv(name, raising=False)  # fmt: skip
    site = catalogue({"n": 2})
    url = serve(site.app).url + "/"
    code = main(["crawl", url, "-o", str(tmp_path / "o"), "--publish-to", "s3://bkt/x/"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in err
    assert len(err.strip().splitlines()) == 1 and "169.254" not in err
    assert site.requests == []  # before the crawl


def test_a_metadata_service_error_names_the_credential_variables():
    from crawler.shell.upload import _reason_text

    text = "Generic S3 error: Error performing PUT http://169.254.169.254/latest/api/token"
    assert _reason_text(text).startswith("no AWS credentials: set AWS_ACCESS_KEY_ID")


def test_a_sites_own_stylesheet_that_the_files_name_is_uploaded_with_them(
    s3, s3_env, serve, tmp_path, xsd, capsys
):
    out = tmp_path / "out"
    out.mkdir()
    theirs = (
        b'<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"/>'
        b"<!-- the site's own -->"
    )
    (out / "sitemap.xsl").write_bytes(theirs)
    bucket = s3.bucket()
    url = serve(catalogue({"n": 3}).app).url + "/"
    code, _ = night(url, out, f"s3://{bucket}/", s3.endpoint, "--stylesheet")
    assert code == 0, capsys.readouterr().err
    objects = s3.objects(bucket)
    assert objects["sitemap.xsl"] == theirs
    assert b"sitemap.xsl" in objects["sitemap.xml"]  # the index names it
    assert len(read_published(out, xsd).locs) == 4
