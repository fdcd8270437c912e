#!/bin/sh
# Nightly job: crawl with the TOML config, publish to /out, keep state in /state.
# A run that was stopped (exit 130: SIGTERM, docker stop), crashed, or could not write a file
# (exit 5: a full disk) leaves its state file and a marker; the next run resumes it instead of
# starting over. A saved crawl that cannot be resumed (exit 2: it finished, or the config
# changed) is replaced by a fresh crawl at once. A run started while another still holds the
# output folder or the state file (exit 75, busy) leaves that run's marker and state alone.
# Extra arguments are passed on.
set -u
config=${SITEMAP_CRAWLER_CONFIG:-/config/sitemap-crawler.toml}
out=${SITEMAP_CRAWLER_OUT:-/out}
state_dir=${SITEMAP_CRAWLER_STATE_DIR:-/state}
state="$state_dir/crawl.sqlite"
marker="$state.unfinished"

child=""
code=0
# exec would lose the exit code bookkeeping; forward SIGTERM to the crawler instead
trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null' TERM INT

crawl() {
    sitemap-crawler crawl -c "$config" -o "$out" --state "$state" \
        --report "$state_dir/last-report.json" --decisions "$state_dir/last-decisions.jsonl" \
        "$@" &
    child=$!
    wait "$child"
    code=$?
    if [ "$code" -gt 128 ] && kill -0 "$child" 2>/dev/null; then  # wait was cut by the trap
        wait "$child"
        code=$?
    fi
}

made=""
busy() {  # only a marker this run made itself goes: the running crawl's is its own
    [ -n "$made" ] && rm -f "$marker"
    echo "sitemap-crawler job: another run is still going; its state is left alone (exit 75)" >&2
    exit 75
}

if [ -f "$marker" ] && [ -f "$state" ]; then
    crawl --resume "$@"
    [ "$code" -eq 75 ] && busy
    [ "$code" -eq 2 ] && crawl "$@"
else
    [ -f "$marker" ] || made=1
    touch "$marker"
    crawl "$@"
fi
[ "$code" -eq 75 ] && busy
# 0 published, 2 bad config, 3 nothing listed, 4 publishing refused: this crawl is over;
# anything else (130 stopped, 5 a file not written, a crash): resume it next time
case $code in 0|2|3|4) rm -f "$marker" ;; esac
exit $code
