#!/usr/bin/env bash
# Serve a generated bench site with nginx on 127.0.0.1, as a private instance.
#
#   bench/serve.sh start DIR PORT   serve DIR (the site's www/ folder, or the folder holding it)
#   bench/serve.sh stop DIR PORT    stop the nginx this script started for DIR and PORT
#
# nginx comes from Debian's packages (installed here if missing). The instance has its own
# conf, pid, error log and temp folders under bench/.env/nginx-PORT/, listens on 127.0.0.1 only,
# logs no accesses (the log would cost more than the request), keeps connections alive and runs
# two workers, the shape of a small production server. `stop` signals only the pid in that
# instance's pid file, never any other nginx on the machine.
set -euo pipefail

usage() {
    echo "usage: $0 start|stop DIR PORT" >&2
    exit 2
}

[[ $# -eq 3 ]] || usage
action=$1
dir=$2
port=$3
[[ $port =~ ^[0-9]+$ ]] || usage

here=$(cd "$(dirname "$0")" && pwd)
prefix="$here/.env/nginx-$port"
pidfile="$prefix/nginx.pid"

running_pid() {
    # The pid in our pid file, if that process is alive and is an nginx master.
    [[ -s $pidfile ]] || return 1
    local pid
    pid=$(cat "$pidfile")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    grep -q nginx "/proc/$pid/cmdline" 2>/dev/null || return 1
    echo "$pid"
}

ensure_nginx() {
    NGINX=$(command -v nginx || true)
    [[ -n $NGINX ]] || { [[ -x /usr/sbin/nginx ]] && NGINX=/usr/sbin/nginx; } || true
    if [[ -z $NGINX ]]; then
        echo "serve.sh: installing nginx from Debian's packages" >&2
        local sudo=""
        [[ $(id -u) -eq 0 ]] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nginx-light >/dev/null \
            || DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nginx >/dev/null
        NGINX=$(command -v nginx || echo /usr/sbin/nginx)
    fi
}

start() {
    if pid=$(running_pid); then
        echo "serve.sh: already serving on 127.0.0.1:$port (pid $pid)" >&2
        exit 0
    fi
    root=$(cd "$dir" && pwd)
    [[ -d $root/www ]] && root="$root/www"
    [[ -f $root/index.html ]] || { echo "serve.sh: no index.html in $root" >&2; exit 2; }
    ensure_nginx
    mkdir -p "$prefix/tmp"
    local mime=/etc/nginx/mime.types
    local types="include $mime;"
    [[ -f $mime ]] || types="types { text/html html; text/plain txt; text/css css; }"
    local user=""
    # As root, nginx's workers drop to nobody; the site is world-readable so that is fine,
    # but keep root when the tree is not (a private checkout).
    if [[ $(id -u) -eq 0 ]] && ! su -s /bin/sh nobody -c "test -r '$root/index.html'" 2>/dev/null; then
        user="user root;"
    fi
    # SERVE_ACCESS_LOG=FILE: log each answer's status and bytes sent (bench/incremental_bench.py
    # counts the bytes a crawl received); off by default, the log costs more than a request
    local access="access_log off;"
    if [[ -n ${SERVE_ACCESS_LOG:-} ]]; then
        access="log_format sizes '\$status \$bytes_sent'; access_log $SERVE_ACCESS_LOG sizes;"
    fi
    cat >"$prefix/nginx.conf" <<EOF
$user
worker_processes 2;
worker_rlimit_nofile 16384;
pid $pidfile;
error_log $prefix/error.log warn;
events { worker_connections 4096; }
http {
    $types
    default_type application/octet-stream;
    $access
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65s;
    keepalive_requests 1000000;
    # Cached descriptors stay open: keep the cache well under the workers' descriptor limit,
    # or a site of a million files fails with "Too many open files" after ~40,000 pages.
    open_file_cache max=8192 inactive=20s;
    absolute_redirect off;
    client_body_temp_path $prefix/tmp/body;
    proxy_temp_path $prefix/tmp/proxy;
    fastcgi_temp_path $prefix/tmp/fastcgi;
    uwsgi_temp_path $prefix/tmp/uwsgi;
    scgi_temp_path $prefix/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        server_name _;
        root $root;
        index index.html;
    }
}
EOF
    "$NGINX" -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log"
    for _ in $(seq 50); do
        if pid=$(running_pid); then
            echo "serve.sh: serving $root on http://127.0.0.1:$port/ (pid $pid)" >&2
            exit 0
        fi
        sleep 0.1
    done
    echo "serve.sh: nginx did not start; see $prefix/error.log" >&2
    exit 1
}

stop() {
    if pid=$(running_pid); then
        kill -QUIT "$pid"
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        rm -f "$pidfile"
        echo "serve.sh: stopped nginx pid $pid on port $port" >&2
    else
        echo "serve.sh: no nginx of ours on port $port" >&2
    fi
}

case $action in
    start) start ;;
    stop) stop ;;
    *) usage ;;
esac
