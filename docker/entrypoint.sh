#!/bin/sh
# Nightly job: crawl with the TOML config, publish to /out, keep state in /state.
# A run that was stopped (exit 130: SIGTERM, docker stop) or crashed leaves its state file and
# a marker; the next run resumes it instead of starting over. Extra arguments are passed on.
set -u
config=${SITEMAP_CRAWLER_CONFIG:-/config/sitemap-crawler.toml}
out=${SITEMAP_CRAWLER_OUT:-/out}
state_dir=${SITEMAP_CRAWLER_STATE_DIR:-/state}
state="$state_dir/crawl.sqlite"
marker="$state.unfinished"

resume=""
[ -f "$marker" ] && [ -f "$state" ] && resume="--resume"
touch "$marker"
# exec would lose the exit code bookkeeping; forward SIGTERM to the crawler instead
sitemap-crawler crawl -c "$config" -o "$out" --state "$state" \
    --report "$state_dir/last-report.json" --decisions "$state_dir/last-decisions.jsonl" \
    $resume "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
wait "$child"
code=$?
if [ "$code" -gt 128 ] && kill -0 "$child" 2>/dev/null; then  # wait was cut by the trap
    wait "$child"
    code=$?
fi
# 0 published, 2 bad config, 3 nothing listed: this crawl is over; anything else: resume next
case $code in 0|2|3) rm -f "$marker" ;; esac
exit $code
