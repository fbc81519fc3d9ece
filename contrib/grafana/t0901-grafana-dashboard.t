#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# contrib/grafana/fabric-monitor.json is valid JSON, and every metric its
# queries use is one a real fabricd exposes on GET /metrics (a fabricd
# started here, --insecure-local on loopback), and every metric fabricd
# exposes is on the dashboard.
src=${FM_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${FM_TOP_BUILDDIR:-$src}
. "$src/tests/tap.sh"

dash=$src/contrib/grafana/fabric-monitor.json
fabricd=$build/daemon/fabricd
command -v jq >/dev/null || plan_skip_all "jq is not installed"
command -v curl >/dev/null || plan_skip_all "curl is not installed"
[ -x "$fabricd" ] || plan_skip_all "$fabricd not built"

tmp=$(mktemp -d) || exit 1
pid=
cleanup () {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

plan 11

jq -e . "$dash" >/dev/null
ok $? "the dashboard is valid JSON" || done_testing
jq -r '.. | objects | select(has("expr")) | .expr' "$dash" >"$tmp/exprs"
is "$(jq '[.. | objects | select(has("gridPos")) | .id] | length - (unique | length)' "$dash")" 0 \
    "panel ids are unique"
is "$(jq '[.. | objects | select(has("expr")) | .datasource.uid // "none"]
          | map(select(. != "${datasource}")) | length' "$dash")" 0 \
    "every query uses the \$datasource variable"
is "$(jq -r '[.panels[] | select(.type == "row") | .title] | join(",")' "$dash")" \
    "Fleet health,Worst links,Clock quality,Actions" \
    "rows: fleet health, worst links, clock quality, actions"

for _ in $(seq 20); do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
done
printf 'listen_address = 127.0.0.1\nlisten_port = %s\nstate_dir = %s/state\n' \
    "$port" "$tmp" >"$tmp/fabricd.conf"
"$fabricd" -c "$tmp/fabricd.conf" --insecure-local 2>"$tmp/fabricd.log" &
pid=$!
for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$port/metrics" >"$tmp/metrics" && break
    sleep 0.1
done
grep -q '^# TYPE fabricd_up gauge' "$tmp/metrics"
ok $? "fabricd serves /metrics" || { sed 's/^/# /' "$tmp/fabricd.log"; done_testing; }

# Series names fabricd exposes: every TYPE, histograms as _bucket/_sum/_count.
awk '$1 == "#" && $2 == "TYPE" {
         if ($4 == "histogram") { print $3 "_bucket"; print $3 "_sum"; print $3 "_count" }
         else { print $3 } }' "$tmp/metrics" | sort -u >"$tmp/exposed"
grep -o 'fabricd_[a-z0-9_]*' "$tmp/exprs" | sort -u >"$tmp/used"
is "$(comm -23 "$tmp/used" "$tmp/exposed" | tr '\n' ' ')" "" \
    "every fabricd_* metric of the dashboard is exposed by fabricd"
# Any selector (name{...}) must be one of fabricd's: no metric from elsewhere.
grep -oE '[a-zA-Z_:][a-zA-Z0-9_:]*\{' "$tmp/exprs" | tr -d '{' | sort -u >"$tmp/selectors"
is "$(comm -23 "$tmp/selectors" "$tmp/exposed" | tr '\n' ' ')" "" \
    "every metric selector names a fabricd metric"
# Prometheus naming: counters end in _total; every other name carries its
# unit (seconds, a ratio) or says what it counts; fabricd_up is the exception.
is "$(awk '$1 == "#" && $2 == "TYPE" && $4 == "counter" && $3 !~ /_total$/ { print $3 }' \
       "$tmp/metrics" | tr '\n' ' ')" "" "every counter ends in _total"
is "$(awk '$1 == "#" && $2 == "TYPE" && $4 != "counter" && $3 != "fabricd_up" \
           && $3 !~ /_(seconds|ratio|active)$/ { print $3 }' "$tmp/metrics" | tr '\n' ' ')" "" \
    "every other metric has its unit in its name"
grep -q '^# TYPE fabricd_node_last_seen_timestamp_seconds gauge$' "$tmp/metrics"
ok $? "an instant is a _timestamp_seconds gauge"
# and the other way round, so that a new metric gets a panel
is "$(comm -13 <(sed 's/_\(bucket\|sum\|count\)$//' "$tmp/used" | sort -u) \
       <(awk '$1 == "#" && $2 == "TYPE" { print $3 }' "$tmp/metrics" | sort -u) \
       | tr '\n' ' ')" "" "every metric fabricd exposes has a panel"
