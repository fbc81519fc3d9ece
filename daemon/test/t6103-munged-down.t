#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# On the minicluster: the munged that fabricd decodes credentials with goes
# away for 20 s while a monitored job runs (fabricd gets a munged of its own,
# same key, as on a separate service host, so that Slurm keeps its own).
# fabricd keeps running and refuses reports with 503 (it cannot check them,
# so it stores nothing), the agents spool, and when munged is back they
# deliver everything: every window stored exactly once.
FM_SRCDIR=${FM_SRCDIR:-$FM_TOP_SRCDIR}
FM_BUILDDIR=${FM_BUILDDIR:-$FM_TOP_BUILDDIR}
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
command -v sqlite3 >/dev/null || plan_skip_all "sqlite3 is not installed"
plan 12

m2_pid=
t6103_cleanup () {
    local rc=$?
    [ -z "$m2_pid" ] || kill "$m2_pid" 2>/dev/null
    (exit $rc)
    mc_cleanup
}
trap t6103_cleanup EXIT

fabricd_pid () {
    head -n 1 "$FM_RUNDIR/pid/fabricd.pid" | tr -dc 0-9
}
fabricd_up () {
    mc_exec ctl curl -sf -o /dev/null "$FM_DAEMON_URL/v1/status"
}
# fabricd_start CONF: in the controller's namespaces, its PID where `down` looks
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
m2=$FM_RUNDIR/munge2
munged2_start () {
    munged --force --socket="$m2/sock" --key-file="$FM_RUNDIR/munge/munge.key" \
        --pid-file="$m2/pid" --log-file="$m2/log" --seed-file="$m2/seed" || return 1
    m2_pid=$(cat "$m2/pid")
}
spooled () {
    ls "$FM_RUNDIR/agent/$1/job.$2/spool" 2>/dev/null | grep -c '\.json$'
}
q () {
    sqlite3 -readonly -batch -noheader "$FM_RUNDIR/fabricd/fabricd.db" "$1"
}
# POST /v1/reports with a body of {} and a good credential: the HTTP code
post_code () {
    local cred
    cred=$(printf 'fm1 POST /v1/reports %s' "$(printf '{}' | sha256sum | cut -d' ' -f1)" \
        | munge --socket="$FM_MUNGE_SOCKET")
    mc_exec ctl curl -s -o /dev/null -w '%{http_code}' -X POST \
        -H 'Content-Type: application/json' -H "Authorization: Munge $cred" \
        --data-binary '{}' "$FM_DAEMON_URL/v1/reports"
}

mc_up --nodes 2
ok $? "minicluster up with 2 nodes"
mkdir -m 0755 "$m2"
munged2_start
ok $? "a second munged with the cluster's key (pid $m2_pid)"
sed "s|^munge_socket = .*|munge_socket = $m2/sock|" "$FM_RUNDIR/etc/fabricd.conf" \
    >"$FM_RUNDIR/etc/fabricd-m2.conf"
fabricd_stop
fabricd_start "$FM_RUNDIR/etc/fabricd-m2.conf"
ok $? "fabricd restarted on it"

id=$(mc_sbatch -N2 -o job-%j.out --fabric-monitor --wrap 'srun -N2 sleep 50; echo job done')
mc_wait_job "$id" RUNNING 30
t0=$(date +%s)
until [ "$(fm_get "/v1/jobs/$id" | jq '[.agents[] | select(.windows > 0)] | length')" = 2 ] \
    || [ $(($(date +%s) - t0)) -ge 20 ]; do
    sleep 0.5
done
kill -TERM "$m2_pid"
while kill -0 "$m2_pid" 2>/dev/null; do
    sleep 0.1
done
m2_pid=
stored=$(q "SELECT count(*) FROM windows WHERE job_id = $id;")
is "$(post_code)" 503 "munged gone: a report with a good credential is 503, not accepted"
sleep 18
fabricd_up
ok $? "fabricd keeps running"
is "$(q "SELECT count(*) FROM windows WHERE job_id = $id;")" "$stored" \
    "nothing was stored while credentials could not be checked"
n1=${FM_NODES%% *}
c=$(spooled "$n1" "$id")
ok "$([ "$c" -ge 3 ]; echo $?)" "the agents spool meanwhile ($c windows on $n1)"
munged2_start
ok $? "munged is back"
t0=$(date +%s)
until [ "$(spooled "$n1" "$id")" -le 1 ] || [ $(($(date +%s) - t0)) -ge 20 ]; do
    sleep 0.5
done
ok "$([ "$(spooled "$n1" "$id")" -le 1 ]; echo $?)" "the spool drains once munged is back"

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
is "$(echo "$per_node" | awk -F'|' '$2 == $3 && $4 == 0 && $2 >= 9 { n++ } END { print n + 0 }')" 2 \
    "per agent >= 9 windows (50 s of 5 s ones), back to back, each seq once"
alogs=("$FM_RUNDIR"/agent/fmn*/job."$id".log)
is "$(cat "${alogs[@]}" | grep -cE ' 0 refused, 0 evicted from the spool$')" 2 \
    "every agent says none refused, none evicted"
done_testing
