#!/usr/bin/env bash
# Build the container image from this checkout and run it as the nightly job would, against a
# site served by nginx on 127.0.0.1 (issue #13). Checks, one line each ("ok: ..." or
# "FAIL: ..."), exit status 1 on any failure:
#   - the image runs as a non-root user (10001:0) on a read-only root filesystem;
#   - a run configured by SITEMAP_CRAWLER_* variables alone publishes a sitemap that
#     validates against the XSDs and lists exactly the expected URLs; its stderr (JSON logs)
#     is JSON lines only, stdout empty; its metrics file parses (prometheus_client);
#   - `podman stop` in the middle of a second run leaves the published files byte for byte
#     as they were (sha256), and the next run resumes that crawl, finishes and publishes all;
#   - a night after a deploy (every page's file written again) spawns its worker process in
#     the image, and it leaves no line on stderr;
#   - any uid in group 0 (4242:0) and the host user can run it on a group-writable folder;
#     a /data it cannot write is a one-line error, exit 5, not a traceback.
#
# Usage: sudo docker/test-image.sh   (root: it runs rootful podman)
# It needs podman, runc, debootstrap and nginx (and lxml and prometheus_client for python3),
# and podman's default_ulimits emptied in /etc/containers/containers.conf. It installs and
# writes those itself only when asked, with SITEMAP_CRAWLER_TEST_INSTALL=1 (.ci/run sets it);
# otherwise it names what is missing and exits 77 (the "skipped" of automake's tests). It
# builds the base image localhost/debian-py:bookworm with debootstrap when absent (no public
# registry is reachable here; a few minutes), then localhost/sitemap-crawler:test from this
# checkout. Docker Engine does not run on these machines; Debian's podman does, with runc.
# Environment: SITEMAP_CRAWLER_SHARED (the shared test data holding schemas/, default ../shared
# from the repository root, as for the test suite), DEBIAN_MIRROR (for debootstrap), PAGES (the
# test site's size, default 400), SITEMAP_CRAWLER_TEST_INSTALL (above), NO_CACHE=1 (the image
# built without podman's cache of its steps, as on a first run: the base image is kept).
set -euo pipefail

[[ $EUID -eq 0 ]] || exec sudo -E "$0" "$@"

# microseconds since the epoch, and seconds since such a time (one decimal)
now() { echo "${EPOCHREALTIME/[.,]/}"; }
since() {
    local us=$(($(now) - $1))
    printf '%d.%d s' $((us / 1000000)) $((us % 1000000 / 100000))
}
STARTED=$(now)
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCHEMAS=${SITEMAP_CRAWLER_SHARED:-$REPO/../shared}/schemas
INSTALL=${SITEMAP_CRAWLER_TEST_INSTALL:-0}
BASE_IMAGE=${BASE_IMAGE:-localhost/debian-py:bookworm}
IMAGE=${IMAGE:-localhost/sitemap-crawler:test}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PAGES=${PAGES:-400}
PODMAN=(podman --runtime runc)
T=$(mktemp -d /tmp/sitemap-crawler-image.XXXXXX)
chmod 755 "$T"
NGINX_PID=""
CONTAINERS=()
FAILS=0
TIMES=()

cleanup() {
    local name
    for name in "${CONTAINERS[@]}"; do
        "${PODMAN[@]}" rm -f -t 0 "$name" >/dev/null 2>&1 || true
    done
    if [[ -n $NGINX_PID ]]; then
        kill "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() { echo "ok: $*"; }
fail() {
    echo "FAIL: $*"
    FAILS=$((FAILS + 1))
}
die() {
    echo "FAIL: $*"
    echo "stopped after $(since "$STARTED"): the checks after this one did not run"
    exit 1
}
# check WHAT COMMAND...: ok or FAIL, with the command's output indented under a failure
check() {
    local what=$1
    shift
    if "$@" >"$T/check.out" 2>&1; then
        ok "$what$(sed -n '1s/^/: /p' "$T/check.out")"
    else
        fail "$what"
        sed 's/^/    /' "$T/check.out"
    fi
}
# timed NAME COMMAND...: run it, and note how long it took for the summary at the end
timed() {
    local name=$1 t0=$(now)
    shift
    "$@"
    TIMES+=("$name: $(since "$t0")")
}
show() { sed 's/^/    | /' "$1" | tail -n "${2:-20}"; }

# The checks' Python, run on the host: XSD validation with lxml, prometheus_client's parser.
cat >"$T/checks.py" <<'PY'
"""Host-side helpers of docker/test-image.sh: make the site, derive the build's pip settings,
check a published sitemap, a JSON log and a metrics file. Exit 1 with the reason on failure;
the first line printed on success is the detail shown after "ok: ..."."""

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


def site(www: str, pages: str, origin: str) -> None:
    """Pages / (page 0) and /p/N.html as a binary tree (N links to 2N+1 and 2N+2), and four
    that must not be listed: one robots.txt disallows, one noindex, one whose canonical is
    another page, one missing (404). The URLs to list: / and /p/1.html ... /p/<pages-1>.html."""
    root, n = Path(www), int(pages)

    def page(title: str, links: list[str], head: str = "") -> str:
        # a text of its own: pages alike would be listed once, as duplicates
        anchors = "".join(f'<a href="{h}">{h}</a>\n' for h in links)
        return (f"<!doctype html><html><head><title>{title}</title>{head}</head>"
                f"<body><h1>{title}</h1>\n{anchors}</body></html>\n")

    def href(k: int) -> str:
        return "/" if k == 0 else f"/p/{k}.html"

    (root / "p").mkdir(parents=True)
    (root / "private").mkdir()
    for k in range(n):
        links = [href(c) for c in (2 * k + 1, 2 * k + 2) if c < n]
        if k == 0:
            links += ["/private/secret.html", "/noindex.html", "/dup.html", "/missing.html"]
        (root / ("index.html" if k == 0 else f"p/{k}.html")).write_text(page(f"Page {k}", links))
    (root / "private/secret.html").write_text(page("Private", []))
    noindex = '<meta name="robots" content="noindex">'
    (root / "noindex.html").write_text(page("Not indexed", ["/p/1.html"], noindex))
    canonical = '<link rel="canonical" href="/p/3.html">'
    (root / "dup.html").write_text(page("A copy of page 3", [], canonical))
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    expected = [origin + href(k) for k in range(n)]
    (root.parent / "expected.txt").write_text("\n".join(expected) + "\n")
    print(f"{n} pages to list, 4 not to")


def pip_args() -> None:
    """`--build-arg NAME=VALUE` lines for what the host's pip uses to reach an index (its
    config files and PIP_* variables): index URLs over http(s) only, trusted hosts. A local
    file:// index or find-links folder does not exist in the build, and no file is copied."""
    wanted = {"index-url": "PIP_INDEX_URL", "extra-index-url": "PIP_EXTRA_INDEX_URL",
              "trusted-host": "PIP_TRUSTED_HOST"}
    found: dict[str, str] = {}
    try:
        listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                                capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        listed = ""
    for line in listed.splitlines():  # global.index-url='...' (later files win, as in pip)
        key, _, value = line.partition("=")
        name = key.rpartition(".")[2]
        if name in wanted and key.split(".")[0] in ("global", "install", ":env:"):
            found[name] = value.strip().strip("'\"")
    for name, var in wanted.items():
        if os.environ.get(var):
            found[name] = os.environ[var]
    for name, value in found.items():
        if name.endswith("index-url"):
            value = " ".join(u for u in value.split() if u.startswith(("http://", "https://")))
        if value:
            print(f"--build-arg={wanted[name]}={value}")


def _parse(path: Path, schema):
    from lxml import etree

    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    doc = etree.fromstring(data, etree.XMLParser(resolve_entities=False))
    if not schema.validate(doc):
        raise SystemExit(f"{path.name} does not validate: {schema.error_log.last_error}")
    return doc


def sitemap(out: str, schemas: str, expected_file: str) -> None:
    """out/sitemap.xml (a urlset, or an index of parts beside it) valid against the XSDs,
    listing exactly the expected URLs, each once."""
    from lxml import etree

    folder, xsd = Path(out), Path(schemas)
    urlset = etree.XMLSchema(etree.parse(str(xsd / "sitemap.xsd")))
    index = etree.XMLSchema(etree.parse(str(xsd / "siteindex.xsd")))
    top = folder / "sitemap.xml"
    if not top.is_file():
        raise SystemExit(f"no {top}")
    from lxml import etree as et

    root = et.parse(str(top)).getroot()
    files = [top]
    if root.tag == NS + "sitemapindex":
        _parse(top, index)
        files = [folder / loc.text.rsplit("/", 1)[1] for loc in root.iter(NS + "loc")]
    locs: list[str] = []
    for path in files:
        locs += [loc.text for loc in _parse(path, urlset).iter(NS + "loc")]
    expected = Path(expected_file).read_text().split()
    twice = len(locs) - len(set(locs))
    missing, extra = set(expected) - set(locs), set(locs) - set(expected)
    if twice or missing or extra:
        raise SystemExit(f"{len(locs)} URLs, {twice} twice; missing {sorted(missing)[:5]} "
                         f"({len(missing)}), not expected {sorted(extra)[:5]} ({len(extra)})")
    print(f"{len(locs)} URLs in {len(files)} file(s), valid, exactly the expected set")


def jsonlog(err: str, out: str, code: str, resume: str) -> None:
    """stdout empty; every stderr line a JSON object with an event, start first, summary last
    with this exit code; the start event's settings say whether the run resumed (and the
    summary agrees: pages fetched before this run)."""
    if Path(out).read_bytes():
        raise SystemExit(f"stdout is not empty: {Path(out).read_text()[:200]!r}")
    lines = Path(err).read_text().splitlines()
    events = []
    for n, line in enumerate(lines, 1):
        try:
            event = json.loads(line)
        except ValueError:
            raise SystemExit(f"stderr line {n} is not JSON: {line[:200]!r}") from None
        if not isinstance(event, dict) or "event" not in event:
            raise SystemExit(f"stderr line {n} is not an event object: {line[:200]!r}")
        events.append(event)
    if not events or events[0]["event"] != "start" or events[-1]["event"] != "summary":
        raise SystemExit(f"not start ... summary: {[e['event'] for e in events]}")
    summary, settings = events[-1], events[0]["settings"]
    if summary.get("exit_code") != int(code):
        raise SystemExit(f"summary exit_code {summary.get('exit_code')}, not {code}")
    if resume != "-":
        if settings.get("resume") is not (resume == "true"):
            raise SystemExit(f"start event: resume {settings.get('resume')}, not {resume}")
        before = summary.get("pages_fetched", 0) - summary.get("pages_fetched_this_run", 0)
        if (before > 0) is not (resume == "true"):
            raise SystemExit(f"summary: {before} pages fetched before this run")
        said = [e["message"] for e in events if e["event"] == "log"]
        line = "job: resuming" if resume == "true" else "job: crawling"
        if not any(m.startswith(line) for m in said):
            raise SystemExit(f"no log event {line}...: {said}")
    kinds = sorted({e["event"] for e in events})
    detail = f"{len(lines)} JSON lines ({', '.join(kinds)}), stdout empty"
    if "pages_fetched" in summary:
        detail += (f"; summary: {summary['pages_fetched_this_run']} pages fetched this run, "
                   f"{summary['pages_fetched']} in all, {summary.get('urls_listed')} listed")
    print(detail)


def metrics(path: str, listed: str) -> None:
    """The Prometheus text file parses; it says published, exit 0, the URLs listed."""
    from prometheus_client.parser import text_string_to_metric_families

    values = {}
    for family in text_string_to_metric_families(Path(path).read_text()):
        for sample in family.samples:
            if set(sample.labels) == {"site"}:  # the run's own figures, not per reason
                values[sample.name] = sample.value
    want = {"sitemap_crawler_published": 1, "sitemap_crawler_exit_code": 0,
            "sitemap_crawler_urls_listed": int(listed)}
    wrong = {k: values.get(k) for k, v in want.items() if values.get(k) != v}
    if wrong or "sitemap_crawler_last_publish_timestamp_seconds" not in values:
        raise SystemExit(f"unexpected values {wrong} in {sorted(values)}")
    print(f"{len(values)} samples; published 1, exit_code 0, urls_listed {listed}")


def workers(err: str, want: str) -> None:
    """The summary event's worker processes started (a night with a history spawns them in
    the container once its pages change), and no worker's line on stderr: every line JSON
    (jsonlog), none of them a warning about a worker."""
    events = [json.loads(line) for line in Path(err).read_text().splitlines()]
    started = events[-1].get("requests", {}).get("workers")
    if started != int(want):
        raise SystemExit(f"summary: {started} worker processes started, not {want}")
    warned = [e.get("message", "") for e in events if "worker" in e.get("message", "")]
    if warned:
        raise SystemExit(f"warnings about workers: {warned}")
    print(f"{started} started, by_workers {events[-1]['requests'].get('by_workers')}")


def hashes(folder: str) -> None:
    """Every file under the folder (the lock and manifest files too) with its sha256."""
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            print(f"{digest}  {path.relative_to(folder)}")


if __name__ == "__main__":
    globals()[sys.argv[1]](*sys.argv[2:])
PY
checks() { python3 "$T/checks.py" "$@"; }

echo "== $REPO -> $IMAGE (base $BASE_IMAGE), $(date -u '+%Y-%m-%d %H:%M UTC')"

# -- tools ---------------------------------------------------------------------------------
setup() {
    local tool need=()
    for tool in podman runc debootstrap nginx; do
        command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || need+=("$tool")
    done
    local missing=("${need[@]}")
    python3 -c 'import lxml, prometheus_client' 2>/dev/null ||
        missing+=("python3's lxml and prometheus_client")
    if ((${#missing[@]})) && [[ $INSTALL != 1 ]]; then
        echo "missing: ${missing[*]}; install them, or run with SITEMAP_CRAWLER_TEST_INSTALL=1" \
            "to let this script install them"
        exit 77
    fi
    local conf=/etc/containers/containers.conf
    if ! grep -qs '^[[:space:]]*default_ulimits' "$conf" && [[ $INSTALL != 1 ]]; then
        echo "missing: default_ulimits = [] in $conf (podman's default ulimits are refused" \
            "by this kind of machine's kernel limits); add it, or run with" \
            "SITEMAP_CRAWLER_TEST_INSTALL=1 to let this script write it"
        exit 77
    fi
    if ((${#need[@]})); then
        echo "installing ${need[*]} with apt-get"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${need[@]}" >/dev/null
    fi
    if ! python3 -c 'import lxml, prometheus_client' 2>/dev/null; then
        echo "installing lxml and prometheus_client for the host-side checks"
        python3 -m pip install -q lxml prometheus_client 2>/dev/null || {
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-lxml \
                python3-prometheus-client >/dev/null
        }
    fi
    # podman's default ulimits (nofile and nproc from containers.conf) are refused by this
    # kind of machine's kernel limits: an empty list lets containers inherit podman's own
    if ! grep -qs '^[[:space:]]*default_ulimits' "$conf"; then
        mkdir -p /etc/containers
        if grep -qs '^\[containers\]' "$conf"; then
            sed -i 's/^\[containers\]/&\ndefault_ulimits = []/' "$conf"
        else
            printf '[containers]\ndefault_ulimits = []\n' >>"$conf"
        fi
        echo "wrote default_ulimits = [] into $conf"
    fi
    PATH=$PATH:/usr/sbin
    [[ -f $SCHEMAS/sitemap.xsd && -f $SCHEMAS/siteindex.xsd ]] ||
        die "no sitemap.xsd and siteindex.xsd in $SCHEMAS (set SITEMAP_CRAWLER_SHARED=...)"
}
timed "tools" setup
ok "tools: $(podman --version), runc $(runc --version | awk 'NR==1 {print $3}'), $(nginx -v 2>&1 | sed 's/.*: //'), schemas in $(cd "$SCHEMAS" && pwd)"

# -- the base image: Debian 12 with python3, from Debian's archive (no registry reachable) --
base() {
    if "${PODMAN[@]}" image exists "$BASE_IMAGE"; then
        ok "base image $BASE_IMAGE present: reused"
        return
    fi
    echo "building $BASE_IMAGE with debootstrap from $DEBIAN_MIRROR (a few minutes)"
    local rootfs=$T/rootfs
    debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
        bookworm "$rootfs" "$DEBIAN_MIRROR" >"$T/debootstrap.log" 2>&1 || {
        show "$T/debootstrap.log"
        die "debootstrap bookworm from $DEBIAN_MIRROR"
    }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | "${PODMAN[@]}" import - "$BASE_IMAGE" >"$T/import.log" 2>&1 || {
        show "$T/import.log"
        die "podman import of $BASE_IMAGE"
    }
    rm -rf "$rootfs"
    ok "base image $BASE_IMAGE built with debootstrap and imported"
}
timed "base image" base

# -- the image, from this checkout ----------------------------------------------------------
build() {
    # pip in the build reaches PyPI as the host's pip does: the host's CA bundle (a TLS-
    # inspecting proxy's CA may be in it) mounted over the base's for the build's RUN steps
    # only, and the host's index settings as build arguments of the build stage only
    # (docker/Dockerfile); podman passes the proxy variables itself (--http-proxy). Nothing
    # of the host's is copied into the image: checked below.
    local bundle=${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}} args=()
    mapfile -t args < <(checks pip_args)
    if [[ -f $bundle ]]; then
        args+=(-v "$bundle:/etc/ssl/certs/ca-certificates.crt:ro"
            --build-arg PIP_CERT=/etc/ssl/certs/ca-certificates.crt)
    fi
    [[ ${NO_CACHE:-0} == 1 ]] && args+=(--no-cache)
    "${PODMAN[@]}" build --runtime runc --build-arg "BASE=$BASE_IMAGE" "${args[@]}" \
        -f "$REPO/docker/Dockerfile" -t "$IMAGE" "$REPO" >"$T/build.log" 2>&1 || {
        show "$T/build.log" 30
        die "podman build of $IMAGE"
    }
    ok "image $IMAGE built from $REPO ($("${PODMAN[@]}" image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%d MB", $1 / 1e6}'); $(grep -c '^--> Using cache' "$T/build.log" || true) steps from the cache)"
}
timed "image build" build

in_image() { "${PODMAN[@]}" run --rm --read-only --tmpfs /tmp --network none --entrypoint sh "$IMAGE" -c "$1"; }
user_is_10001() {
    local user ids
    user=$("${PODMAN[@]}" image inspect -f '{{.Config.User}}' "$IMAGE")
    ids=$(in_image 'echo "$(id -u):$(id -g)"')
    echo "image user $user, runs as $ids"
    [[ $user == 10001:0 && $ids == 10001:0 ]]
}
root_is_read_only() {
    in_image '! touch /opt/venv/probe 2>/dev/null && ! touch /etc/probe 2>/dev/null && touch /tmp/probe' &&
        echo "--read-only: /opt/venv and /etc not writable, the /tmp tmpfs writable"
}
nothing_of_the_host() {
    in_image '! test -e /etc/pip.conf && ! test -e /etc/xdg/pip && ! test -e /src' &&
        in_image 'sha256sum /etc/ssl/certs/ca-certificates.crt' >"$T/image-ca" &&
        "${PODMAN[@]}" run --rm --network none "$BASE_IMAGE" \
            sha256sum /etc/ssl/certs/ca-certificates.crt | cmp -s - "$T/image-ca" &&
        echo "no pip config, no sources, the base's own CA bundle"
}
compiled_no_compiler() {
    local version
    version=$(in_image 'sitemap-crawler --version') &&
        in_image '! command -v cc && ! command -v gcc' >/dev/null &&
        echo "$version; no compiler in the image" &&
        [[ $version == *"(compiled)" ]]
}
check "compiled, without the compiler" compiled_no_compiler
check "non-root" user_is_10001
check "read-only root" root_is_read_only
check "nothing of the host's pip setup in the image" nothing_of_the_host

# -- the site: nginx on a free port of 127.0.0.1, as this user, all its files in $T ----------
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ORIGIN=http://127.0.0.1:$PORT
mkdir -p "$T/nginx"
ok "site: $(checks site "$T/www" "$PAGES" "$ORIGIN")"
cat >"$T/nginx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
user $(id -un) $(id -gn);
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log;
events { worker_connections 256; }
http {
    client_body_temp_path $T/nginx/client;
    proxy_temp_path $T/nginx/proxy;
    fastcgi_temp_path $T/nginx/fastcgi;
    uwsgi_temp_path $T/nginx/uwsgi;
    scgi_temp_path $T/nginx/scgi;
    access_log $T/nginx/access.log;
    types { text/html html; text/plain txt; }
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$PORT;
        root $T/www;
        index index.html;
    }
}
EOF
nginx -p "$T/nginx" -c "$T/nginx/nginx.conf" -e "$T/nginx/error.log" &
NGINX_PID=$!
for _ in $(seq 50); do
    python3 -c 'import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=1)' \
        "$ORIGIN/robots.txt" 2>/dev/null && break
    sleep 0.1
done
kill -0 "$NGINX_PID" 2>/dev/null || {
    show "$T/nginx/error.log"
    die "nginx on $ORIGIN"
}
ok "nginx (pid $NGINX_PID) serves the site on $ORIGIN"
requests() { wc -l <"$T/nginx/access.log"; }

# -- the job runs ----------------------------------------------------------------------------
# --network host: the crawl must reach nginx on the host's 127.0.0.1 (the project points
# nothing at any other address); a container's own network namespace has its own loopback,
# and rootful podman has no slirp4netns allow_host_loopback. Every run: --read-only with a
# tmpfs /tmp, a host folder bind-mounted at /data.
container() { echo "sitemap-crawler-test-$$-$1"; }
job() { # job NAME DATA [podman run options...] -- [job arguments...]: stdout, stderr in $T/NAME.*
    local name=$1 data=$2 opts=()
    shift 2
    while (($#)) && [[ $1 != -- ]]; do
        opts+=("$1")
        shift
    done
    (($#)) && shift
    CONTAINERS+=("$(container "$name")") # in a background job, the caller adds it too
    "${PODMAN[@]}" run --rm --name "$(container "$name")" --network host \
        --read-only --tmpfs /tmp -v "$data:/data" \
        -e "SITEMAP_CRAWLER_URL=$ORIGIN/" "${opts[@]}" "$IMAGE" "$@" \
        >"$T/$name.out" 2>"$T/$name.err"
}
data_folder() { # a fresh host folder for /data, owned by $2, mode $3
    mkdir -p "$T/$1"
    chown "$2" "$T/$1"
    chmod "$3" "$T/$1"
    echo "$T/$1"
}
JSON=(-e SITEMAP_CRAWLER_LOG_FORMAT=json -e SITEMAP_CRAWLER_METRICS=/data/state/metrics.prom)
DATA=$(data_folder data 10001:0 2775)

first_run() {
    local rc=0 t0=$(now)
    job run1 "$DATA" "${JSON[@]}" || rc=$?
    if ((rc == 0)); then
        ok "run 1 (configured by SITEMAP_CRAWLER_* variables only, as 10001:0, --read-only): exit 0 in $(since "$t0")"
    else
        fail "run 1: exit $rc"
        show "$T/run1.err"
    fi
    check "run 1 published sitemap" checks sitemap "$DATA/out" "$SCHEMAS" "$T/expected.txt"
    check "run 1 JSON logs" checks jsonlog "$T/run1.err" "$T/run1.out" 0 false
    check "run 1 metrics file" checks metrics "$DATA/state/metrics.prom" "$PAGES"
}
timed "run 1 (a whole crawl)" first_run

# runs 2 and 3: the same settings (a resume needs them), slowed by max_rps to be stopped
SLOW=("${JSON[@]}" -e SITEMAP_CRAWLER_MAX_RPS=40)
stopped_run() {
    local rc=0 before start t0=$(now)
    checks hashes "$DATA/out" >"$T/before.sha256"
    start=$(requests)
    CONTAINERS+=("$(container run2)")
    job run2 "$DATA" "${SLOW[@]}" &
    local pid=$!
    while (($(requests) - start < PAGES / 3)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            fail "run 2 ended before it could be stopped"
            show "$T/run2.err"
            return
        fi
        sleep 0.2
    done
    before=$(($(requests) - start))
    local until t1
    until=$(since "$t0")
    t1=$(now)
    "${PODMAN[@]}" stop -t 30 "$(container run2)" >/dev/null
    wait "$pid" || rc=$?
    if ((rc == 130)); then
        ok "run 2 stopped by podman stop -t 30 after $before of $PAGES requests: exit 130 (SIGTERM handled) in $(since "$t1")"
    else
        fail "run 2 stopped by podman stop: exit $rc, not 130"
        show "$T/run2.err"
    fi
    checks hashes "$DATA/out" >"$T/after.sha256"
    if cmp -s "$T/before.sha256" "$T/after.sha256"; then
        ok "published files byte for byte unchanged by the stopped run ($(wc -l <"$T/after.sha256") files, sha256)"
    else
        fail "published files changed by the stopped run"
        diff "$T/before.sha256" "$T/after.sha256" | sed 's/^/    /'
    fi
    check "run 2 JSON logs (a fresh crawl, stopped)" checks jsonlog "$T/run2.err" "$T/run2.out" 130 false
    check "run 1's sitemap still valid and whole" checks sitemap "$DATA/out" "$SCHEMAS" "$T/expected.txt"
    TIMES+=("  run 2 until stopped: $until")
}
timed "run 2 (stopped)" stopped_run

resumed_run() {
    local rc=0 start t0=$(now)
    start=$(requests)
    job run3 "$DATA" "${SLOW[@]}" || rc=$?
    local made=$(($(requests) - start))
    if ((rc == 0 && made < PAGES)); then
        ok "run 3 finished: exit 0 in $(since "$t0"), $made requests (not started over)"
    else
        fail "run 3: exit $rc, $made requests"
        show "$T/run3.err"
    fi
    check "run 3 resumed the stopped crawl (start event, summary)" \
        checks jsonlog "$T/run3.err" "$T/run3.out" 0 true
    check "run 3 published sitemap" checks sitemap "$DATA/out" "$SCHEMAS" "$T/expected.txt"
    check "run 3 metrics file" checks metrics "$DATA/state/metrics.prom" "$PAGES"
}
timed "run 3 (resumed)" resumed_run

# run 4: a deploy: every file of the site written again (each page's ETag and Last-Modified
# new, its text the same), the night with a history that spawns its worker, in the image
# (pool.worker_processes(spawn_later=True)): one worker, as a 2-core host has by default
deploy_run() {
    local rc=0 t0=$(now)
    find "$T/www" -type f -exec touch {} +
    job run4 "$DATA" "${JSON[@]}" -e SITEMAP_CRAWLER_WORKERS=1 || rc=$?
    if ((rc == 0)); then
        ok "run 4 (every page changed): exit 0 in $(since "$t0")"
    else
        fail "run 4: exit $rc"
        show "$T/run4.err"
    fi
    check "run 4 JSON logs" checks jsonlog "$T/run4.err" "$T/run4.out" 0 false
    check "run 4 spawned its worker process" checks workers "$T/run4.err" 1
    check "run 4 published sitemap" checks sitemap "$DATA/out" "$SCHEMAS" "$T/expected.txt"
}
timed "run 4 (a deploy)" deploy_run

# -- any uid ---------------------------------------------------------------------------------
as_user() { # as_user WHO UID:GID FOLDER-OWNER: a quiet text-log run on a fresh folder
    local who=$1 user=$2 data rc=0
    data=$(data_folder "data-${user/:/-}" "$3" 2775)
    job "user-${user/:/-}" "$data" --user "$user" -e SITEMAP_CRAWLER_QUIET=true || rc=$?
    if ((rc == 0)); then
        check "--user $user ($who) on a folder owned by $3, mode 2775: published" \
            checks sitemap "$data/out" "$SCHEMAS" "$T/expected.txt"
        local owner
        owner=$(stat -c %u:%g "$data/out/sitemap.xml")
        [[ $owner == "${user%%:*}":* ]] && ok "its files belong to uid ${user%%:*} ($owner)" ||
            fail "sitemap.xml owned by $owner, not uid ${user%%:*}"
    else
        fail "--user $user ($who): exit $rc"
        show "$T/user-${user/:/-}.err"
    fi
}
HOST_USER="${SUDO_UID:-$(id -u)}:${SUDO_GID:-$(id -g)}"
timed "uid 4242:0" as_user "an arbitrary uid in group 0, as OpenShift gives" 4242:0 10001:0
timed "host uid" as_user "the host user" "$HOST_USER" "$HOST_USER"

unwritable() {
    local data rc=0
    data=$(data_folder data-root 0:0 755)
    job unwritable "$data" || rc=$?
    local lines
    lines=$(wc -l <"$T/unwritable.err")
    if ((rc == 5 && lines == 1)) && ! grep -q Traceback "$T/unwritable.err" &&
        grep -q '/data' "$T/unwritable.err"; then
        ok "a /data owned by root, mode 755, as 10001:0: exit 5, one line: $(cat "$T/unwritable.err")"
    else
        fail "unwritable /data: exit $rc, $lines lines on stderr"
        show "$T/unwritable.err"
    fi
}
timed "unwritable /data" unwritable

printf 'time: %s\n' "${TIMES[@]}"
if ((FAILS)); then
    echo "FAILED: $FAILS check(s), in $(since "$STARTED")"
    exit 1
fi
echo "all checks passed in $(since "$STARTED")"
