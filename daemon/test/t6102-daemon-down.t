#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# On the minicluster: fabricd is stopped for 60 s while a monitored 4-node job
# runs. Every agent spools its windows on disk meanwhile (one file per window,
# 0600, in its 0700 spool), the spool stays far below its limit so the drop
# policy evicts nothing, and once fabricd is back every window of every agent
# is stored exactly once, those of the outage included.
FM_SRCDIR=${FM_SRCDIR:-$FM_TOP_SRCDIR}
FM_BUILDDIR=${FM_BUILDDIR:-$FM_TOP_BUILDDIR}
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
command -v sqlite3 >/dev/null || plan_skip_all "sqlite3 is not installed"
plan 11

fabricd_pid () {
    head -n 1 "$FM_RUNDIR/pid/fabricd.pid" | tr -dc 0-9
}
fabricd_up () {
    mc_exec ctl curl -sf -o /dev/null "$FM_DAEMON_URL/v1/status"
}
# fabricd again in the controller's namespaces, its PID where `down` looks
fabricd_start () {
    setsid "$MC" --rundir "$MC_RUNDIR" -q exec ctl \
        sh -c 'echo $$ >"$1" && exec "$2" -c "$3"' sh \
        "$FM_RUNDIR/pid/fabricd.pid" "$FM_BUILDDIR/daemon/fabricd" "$FM_RUNDIR/etc/fabricd.conf" \
        </dev/null >>"$FM_RUNDIR/log/fabricd.log" 2>&1 &
    local t0
    t0=$(date +%s)
    until fabricd_up || [ $(($(date +%s) - t0)) -ge 20 ]; do
        sleep 0.2
    done
    fabricd_up
}
spooled () {
    ls "$FM_RUNDIR/agent/$1/job.$2/spool" 2>/dev/null | grep -c '\.json$'
}

mc_up --nodes 4
ok $? "minicluster up with 4 nodes"
db=$FM_RUNDIR/fabricd/fabricd.db

id=$(mc_sbatch -N4 -o job-%j.out --fabric-monitor --wrap 'srun -N4 sleep 85; echo job done')
mc_wait_job "$id" RUNNING 30
ok $? "job $id runs"
t0=$(date +%s)
until [ "$(fm_get "/v1/jobs/$id" | jq '[.agents[] | select(.windows > 0)] | length')" = 4 ] \
    || [ $(($(date +%s) - t0)) -ge 20 ]; do
    sleep 0.5
done
pid=$(fabricd_pid)
kill -TERM "$pid"
while [ -e "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
    sleep 0.1
done
t_down=$(($(date +%s) * 1000000000))
! fabricd_up
ok $? "fabricd stopped after every agent stored a window"

sleep 55
min=9999 max=0
for n in $FM_NODES; do
    c=$(spooled "$n" "$id")
    [ "$c" -lt "$min" ] && min=$c
    [ "$c" -gt "$max" ] && max=$c
done
diag "spooled windows per node after 55 s: min $min, max $max"
ok "$([ "$min" -ge 9 ] && [ "$max" -le 13 ]; echo $?)" \
    "every agent spooled its windows of the outage (9..13 of 5 s each; $min..$max)"
n1=${FM_NODES%% *}
spool=$FM_RUNDIR/agent/$n1/job.$id/spool
is "$(stat -c %a "$spool") $(find "$spool" -name '*.json' -perm /077 | wc -l)" "700 0" \
    "the spool is 0700 and no spooled window is readable by others"
sleep 5
t_back=$(($(date +%s) * 1000000000))
fabricd_start
ok $? "fabricd is back after 60 s on the same store"

mc_wait_job "$id" COMPLETED 60
ok $? "the job completes"
out=$MC_HOME/job-$id.out
grep -q '^job done$' "$out" && fm_summary_ok "$out"
ok $? "its output is intact and ends with the fabric summary"

q () {
    sqlite3 -readonly -batch -noheader "$db" "$1"
}
# windows are numbered by end time and start where the previous one ended
per_node=$(q "SELECT n.name, count(*), count(DISTINCT w.seq),
                     sum(w.prev IS NOT NULL AND w.start_ns != w.prev)
              FROM (SELECT node_id, seq, start_ns,
                           lag (end_ns) OVER (PARTITION BY node_id ORDER BY seq) AS prev
                    FROM windows WHERE job_id = $id) w
              JOIN nodes n ON n.id = w.node_id GROUP BY n.name ORDER BY n.name;")
echo "$per_node" | while IFS= read -r l; do diag "node|windows|distinct seqs|gaps: $l"; done
is "$(echo "$per_node" | awk -F'|' '$2 == $3 && $4 == 0 && $2 >= 15 { n++ } END { print n + 0 }')" 4 \
    "per node >= 15 windows (85 s of 5 s ones), back to back, each seq once"
is "$(q "SELECT count(*) FROM windows
         WHERE job_id = $id AND end_ns > $t_down AND end_ns < $t_back;" | awk '{ print ($1 >= 40) }')" 1 \
    "the windows of the 60 s outage (>= 40 of them, 4 nodes) were delivered later"
alogs=("$FM_RUNDIR"/agent/fmn*/job."$id".log)
is "$(cat "${alogs[@]}" | grep -cE ' 0 refused, 0 evicted from the spool$') $(cat "${alogs[@]}" \
    | grep -cE 'could not be delivered|; dropped$')" "4 0" \
    "every agent says none refused, none evicted by the drop policy, none undelivered"
done_testing
