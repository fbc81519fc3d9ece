#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Acceptance: fabricd killed (SIGKILL, by the PID in the minicluster's pid
# file) for 20 s in the middle of a 40 s monitored job.  The job completes
# normally, and once fabricd is back on the same store every window of every
# agent is there exactly once: per node the stored windows follow each other
# with no gap and no seq twice, the windows of the outage included.
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
command -v sqlite3 >/dev/null || plan_skip_all "sqlite3 is not installed"
plan 12

fabricd_pid () {
    head -n 1 "$FM_RUNDIR/pid/fabricd.pid" | tr -dc 0-9
}

fabricd_up () {
    mc_exec ctl curl -sf -o /dev/null "$FM_DAEMON_URL/v1/status"
}

# Start fabricd again in the controller's namespaces, as `minicluster up`
# does, recording its PID where `minicluster down` will look for it.
fabricd_start () {
    setsid "$MC" --rundir "$MC_RUNDIR" -q exec ctl \
        sh -c 'echo $$ >"$1" && exec "$2" -c "$3"' sh \
        "$FM_RUNDIR/pid/fabricd.pid" "$FM_BUILDDIR/daemon/fabricd" "$FM_RUNDIR/etc/fabricd.conf" \
        </dev/null >>"$FM_RUNDIR/log/fabricd.log" 2>&1 &
}

mc_up --nodes 4
ok $? "minicluster up with 4 nodes"
db=$FM_RUNDIR/fabricd/fabricd.db

id=$(mc_sbatch -N4 -o job-%j.out --fabric-monitor --wrap 'srun -N4 sleep 40; echo job done')
mc_wait_job "$id" RUNNING 30
ok $? "job $id runs"
t_start=$(date +%s)
# the first windows (5 s each) are stored before fabricd goes away
t0=$(date +%s)
until [ "$(fm_get "/v1/jobs/$id" | jq '[.agents[] | select(.windows > 0)] | length')" = 4 ] \
    || [ $(($(date +%s) - t0)) -ge 15 ]; do
    sleep 0.5
done
pid=$(fabricd_pid)
[ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe")" = "$(readlink -f "$FM_BUILDDIR/daemon/fabricd")" ] \
    && kill -KILL "$pid"
ok $? "fabricd (pid $pid) killed $(($(date +%s) - t_start)) s into the job, every agent having stored a window"
t_kill=$(($(date +%s) * 1000000000))
while [ -e "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
    sleep 0.1
done
sleep 20
! fabricd_up
ok $? "nothing answered for 20 s"
t_back=$(($(date +%s) * 1000000000))
fabricd_start
t0=$(date +%s)
until fabricd_up || [ $(($(date +%s) - t0)) -ge 20 ]; do
    sleep 0.2
done
fabricd_up
ok $? "fabricd restarted on the same store ($(fabricd_pid))"

mc_wait_job "$id" COMPLETED 60
ok $? "the job completes"
is "$(mc_job_state "$id")" COMPLETED "normally"
out=$MC_HOME/job-$id.out
grep -q '^job done$' "$out" && fm_summary_ok "$out"
ok $? "its output is intact and ends with the fabric summary"
diag "$(grep '^fabric-monitor: network summary' "$out")"

q () {
    sqlite3 -readonly -batch -noheader "$db" "$1"
}
# An agent numbers its windows by their end time (ms), growing across its
# restarts, and starts each window where the previous one ended: a lost
# window is a start that is not the previous end.
per_node=$(q "SELECT n.name, count(*), count(DISTINCT w.seq),
                     sum(w.prev IS NOT NULL AND w.start_ns != w.prev)
              FROM (SELECT node_id, seq, start_ns,
                           lag (end_ns) OVER (PARTITION BY node_id ORDER BY seq) AS prev
                    FROM windows WHERE job_id = $id) w
              JOIN nodes n ON n.id = w.node_id GROUP BY n.name ORDER BY n.name;")
echo "$per_node" | while IFS= read -r l; do diag "node|windows|distinct seqs|gaps: $l"; done
is "$(echo "$per_node" | awk -F'|' '$2 == $3 && $4 == 0 && $2 >= 8 { n++ } END { print n + 0 }')" 4 \
    "per node the store holds >= 8 windows (40 s of 5 s ones), back to back, each seq once"
is "$(q "SELECT count(DISTINCT node_id) FROM windows
         WHERE job_id = $id AND end_ns > $t_kill AND end_ns < $t_back;")" 4 \
    "the windows that ended while fabricd was away were delivered later, from all 4 nodes"
job=$(fm_get "/v1/jobs/$id")
diag "agents: $(echo "$job" | jq -c '[.agents[] | {node, windows, last_seq, final}]')"
is "$(echo "$job" | jq -c '[.agents[].final] | unique') $(echo "$job" | jq '[.agents[].windows] | add')" \
    "[true] $(q "SELECT count(*) FROM windows WHERE job_id = $id;")" \
    "the API agrees: every agent sent its last window as final; the store's window count"
alogs=("$FM_RUNDIR"/agent/fmn*/job."$id".log)
is "$(cat "${alogs[@]}" | grep -cE ' 0 refused, 0 evicted from the spool$') $(cat "${alogs[@]}" \
    | grep -cE 'could not be delivered|; dropped$|window [0-9]+ lost')" "4 0" \
    "every agent says none refused, none evicted, none undelivered, none lost"
done_testing
