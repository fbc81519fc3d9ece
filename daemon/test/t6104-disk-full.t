#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# On the minicluster: fabricd's store sits on a small tmpfs (mounted in the
# cluster's mount namespace only) that fills up while a monitored job runs.
# fabricd refuses reports with 503 (retry later, not 500), keeps running and
# answering, the agents spool, and once space is back every window is stored,
# exactly once.
FM_SRCDIR=${FM_SRCDIR:-$FM_TOP_SRCDIR}
FM_BUILDDIR=${FM_BUILDDIR:-$FM_TOP_BUILDDIR}
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
command -v sqlite3 >/dev/null || plan_skip_all "sqlite3 is not installed"
plan 11

small=
t6104_cleanup () {
    local rc=$?
    [ -z "$small" ] || mc_exec ctl umount -l "$small" 2>/dev/null
    (exit $rc)
    mc_cleanup
}
trap t6104_cleanup EXIT

fabricd_pid () {
    head -n 1 "$FM_RUNDIR/pid/fabricd.pid" | tr -dc 0-9
}
fabricd_up () {
    mc_exec ctl curl -sf -o /dev/null "$FM_DAEMON_URL/v1/status"
}
fabricd_start () {
    setsid "$MC" --rundir "$MC_RUNDIR" -q exec ctl \
        sh -c 'echo $$ >"$1" && exec "$2" -c "$3"' sh \
        "$FM_RUNDIR/pid/fabricd.pid" "$FM_BUILDDIR/daemon/fabricd" "$1" \
        </dev/null >>"$FM_RUNDIR/log/fabricd.log" 2>&1 &
    local t0
    t0=$(date +%s)
    until fabricd_up || [ $(($(date +%s) - t0)) -ge 20 ]; do
        sleep 0.2
    done
    fabricd_up
}
fabricd_stop () {
    local pid
    pid=$(fabricd_pid)
    kill -TERM "$pid"
    while [ -e "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
        sleep 0.1
    done
}
spooled () {
    ls "$FM_RUNDIR/agent/$1/job.$2/spool" 2>/dev/null | grep -c '\.json$'
}
# the store is visible inside the cluster's mount namespace only
q () {
    mc_exec ctl sqlite3 -readonly -batch -noheader "$small/state/fabricd.db" "$1"
}
# mc_post PATH BODY: POST as root; prints the HTTP code, the body in $MC_TMP/answer
mc_post () {
    local cred
    cred=$(printf 'fm1 POST %s %s' "$1" "$(printf '%s' "$2" | sha256sum | cut -d' ' -f1)" \
        | munge --socket="$FM_MUNGE_SOCKET")
    mc_exec ctl curl -s -o "$MC_TMP/answer" -w '%{http_code}' -X POST \
        -H 'Content-Type: application/json' -H "Authorization: Munge $cred" \
        --data-binary "$2" "$FM_DAEMON_URL$1"
}
# a report of one window of node x1 of job 990002, sequence number $1
report () {
    local now
    now=$(date +%s%N)
    printf '{"job_id":990002,"node":"x1","windows":[{"seq":%s,"start_ns":%s,"end_ns":%s,' \
        "$1" $((now - 5000000000)) "$now"
    printf '"clock":{"offset_ns":0,"error_ns":5},"links":[{"peer":"x2","dir":"out",'
    printf '"rtt_ns":{"p50":1000,"p90":2000,"p99":3000,"max":4000},"owd_ns":null,'
    printf '"sent":100,"received":100,"lost":0,"reordered":0}],"health":[]}]}'
}

mc_up --nodes 4
ok $? "minicluster up with 4 nodes"
small=$FM_RUNDIR/small
mkdir -m 0700 "$small"
mc_exec ctl mount -t tmpfs -o size=3m,mode=0700 tmpfs "$small"
ok $? "a 3 MiB tmpfs for the store"
sed "s|^state_dir = .*|state_dir = $small/state|" "$FM_RUNDIR/etc/fabricd.conf" \
    >"$FM_RUNDIR/etc/fabricd-small.conf"
fabricd_stop
fabricd_start "$FM_RUNDIR/etc/fabricd-small.conf"
ok $? "fabricd restarted with its store there"
reg='{"job_id":990002,"node":"x1","user_id":0,"job_nodes":"x[1-2]","probe_addr":"127.0.0.1","probe_port":9}'
mc_post /v1/agents "$reg" >/dev/null

id=$(mc_sbatch -N4 -o job-%j.out --fabric-monitor --wrap 'srun -N4 sleep 70; echo job done')
mc_wait_job "$id" RUNNING 30
t0=$(date +%s)
until [ "$(fm_get "/v1/jobs/$id" | jq '[.agents[] | select(.windows > 0)] | length')" = 4 ] \
    || [ $(($(date +%s) - t0)) -ge 20 ]; do
    sleep 0.5
done
# Keep the disk full: SQLite frees space when a checkpoint truncates its
# journal, and the filler takes it back within 0.2 s.
mc_exec ctl sh -c 'while [ ! -e "$2" ]; do cat /dev/zero >>"$1/fill" 2>/dev/null; sleep 0.2; done' \
    sh "$small" "$FM_RUNDIR/stop-filling" &
filler=$!
sleep 1
# SQLite may still find room in pages it has: write until the store is full
codes=
for seq in $(seq 0 40); do
    c=$(mc_post /v1/reports "$(report "$seq")")
    codes="$codes $c"
    [ "$c" = 200 ] || break
done
diag "report answers once the disk filled: $codes; the last: $(cat "$MC_TMP/answer")"
is "$c" 503 "disk full: fabricd answers 503 (retry later)"
fabricd_up
ok $? "and keeps running"
# The agents' small windows still fit in pages SQLite has until a page
# splits (seconds): then theirs are refused too, and they spool.
n1=${FM_NODES%% *}
t0=$(date +%s)
until [ "$(spooled "$n1" "$id")" -ge 2 ] || [ $(($(date +%s) - t0)) -ge 40 ]; do
    sleep 0.5
done
c=$(spooled "$n1" "$id")
ok "$([ "$c" -ge 2 ]; echo $?)" "the agents spool meanwhile ($c windows on $n1)" \
    || diag "$(mc_exec ctl df -k "$small" | tail -1; mc_exec ctl ls -la "$small/state")"
touch "$FM_RUNDIR/stop-filling"
wait "$filler"
mc_exec ctl rm -f "$small/fill"
t0=$(date +%s)
until [ "$(spooled "$n1" "$id")" -le 1 ] || [ $(($(date +%s) - t0)) -ge 20 ]; do
    sleep 0.5
done
ok "$([ "$(spooled "$n1" "$id")" -le 1 ]; echo $?)" "space is back: the spool drains"
is "$(mc_post /v1/reports "$(report 100)")" 200 "and reports are accepted again"

mc_wait_job "$id" COMPLETED 60
grep -q '^job done$' "$MC_HOME/job-$id.out" && fm_summary_ok "$MC_HOME/job-$id.out"
ok $? "the job completes, its output ends with the summary"
per_node=$(q "SELECT n.name, count(*), count(DISTINCT w.seq),
                     sum(w.prev IS NOT NULL AND w.start_ns != w.prev)
              FROM (SELECT node_id, seq, start_ns,
                           lag (end_ns) OVER (PARTITION BY node_id ORDER BY seq) AS prev
                    FROM windows WHERE job_id = $id) w
              JOIN nodes n ON n.id = w.node_id GROUP BY n.name ORDER BY n.name;")
echo "$per_node" | while IFS= read -r l; do diag "node|windows|distinct seqs|gaps: $l"; done
is "$(echo "$per_node" | awk -F'|' '$2 == $3 && $4 == 0 && $2 >= 13 { n++ } END { print n + 0 }')" 4 \
    "per agent >= 13 windows (70 s of 5 s ones), back to back, each seq once"
alogs=("$FM_RUNDIR"/agent/fmn*/job."$id".log)
is "$(cat "${alogs[@]}" | grep -cE ' 0 refused, 0 evicted from the spool$')" 4 \
    "every agent says none refused, none evicted"
done_testing
