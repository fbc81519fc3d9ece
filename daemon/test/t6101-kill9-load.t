#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# On the minicluster: fabricd killed with SIGKILL three times while it is under
# load from both a monitored 4-node job (real agents) and bench/ingest (16
# simulated agents posting batches as fast as it answers). t2001-kill9.t does
# this for the load generator alone without Slurm; here both kinds of writer
# share the store: every window bench/ingest saw acknowledged is stored, with
# all its records, and every agent's windows are stored exactly once, back to
# back.
FM_SRCDIR=${FM_SRCDIR:-$FM_TOP_SRCDIR}
FM_BUILDDIR=${FM_BUILDDIR:-$FM_TOP_BUILDDIR}
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
command -v sqlite3 >/dev/null || plan_skip_all "sqlite3 is not installed"
INGEST=$FM_BUILDDIR/bench/ingest
[ -x "$INGEST" ] || plan_skip_all "bench/ingest is not built"
plan 11

fabricd_pid () {
    head -n 1 "$FM_RUNDIR/pid/fabricd.pid" | tr -dc 0-9
}
fabricd_up () {
    mc_exec ctl curl -sf -o /dev/null "$FM_DAEMON_URL/v1/status"
}
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
# SIGKILL our fabricd (checked by its executable) and wait until it is gone
fabricd_kill9 () {
    local pid
    pid=$(fabricd_pid)
    [ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe")" = "$(readlink -f "$FM_BUILDDIR/daemon/fabricd")" ] \
        || return 1
    kill -KILL "$pid" || return 1
    while [ -e "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
        sleep 0.05
    done
}

mc_up --nodes 4
ok $? "minicluster up with 4 nodes"
db=$FM_RUNDIR/fabricd/fabricd.db

id=$(mc_sbatch -N4 -o job-%j.out --fabric-monitor --wrap 'srun -N4 sleep 40; echo job done')
mc_wait_job "$id" RUNNING 30
ok $? "job $id runs"
J=990001
acks=$MC_TMP/acks
mc_exec ctl "$INGEST" --url "$FM_DAEMON_URL" --munge-socket "$FM_MUNGE_SOCKET" --job $J \
    --nodes 16 --peers 7 --windows 8 --threads 1 --duration 26 --retry --ack-log "$acks" \
    >"$MC_TMP/ingest.out" 2>&1 &
ing=$!
killed=0
for at in 7 7 7; do
    sleep "$at"
    fabricd_kill9 && killed=$((killed + 1))
    sleep 0.5
    fabricd_start || break
done
is "$killed" 3 "fabricd killed -9 three times under load, restarted each time"
wait "$ing"
is "$?" 0 "bench/ingest finished: every batch acknowledged in the end"
diag "$(cat "$MC_TMP/ingest.out")"
acked=$(sort -u "$acks" | wc -l)
ok "$([ "$acked" -gt 200 ]; echo $?)" "windows were acknowledged across the kills ($acked)"

mc_wait_job "$id" COMPLETED 60
ok $? "the job completes"
grep -q '^job done$' "$MC_HOME/job-$id.out" && fm_summary_ok "$MC_HOME/job-$id.out"
ok $? "its output is intact and ends with the fabric summary"

q () {
    sqlite3 -readonly -batch -noheader "$db" "$1"
}
q "SELECT n.name || ' ' || w.seq FROM windows w JOIN nodes n ON n.id = w.node_id
   WHERE w.job_id = $J" | sort >"$MC_TMP/stored"
is "$(sort -u "$acks" | comm -23 - "$MC_TMP/stored" | wc -l)" 0 \
    "every window bench/ingest saw acknowledged is in the store"
is "$(q "SELECT count(*) FROM windows w WHERE w.job_id = $J AND (w.nlinks != 14
         OR (SELECT count(*) FROM links l WHERE l.window_id = w.id) != w.nlinks)")" 0 \
    "each with all of its 14 link records"
per_node=$(q "SELECT n.name, count(*), count(DISTINCT w.seq),
                     sum(w.prev IS NOT NULL AND w.start_ns != w.prev)
              FROM (SELECT node_id, seq, start_ns,
                           lag (end_ns) OVER (PARTITION BY node_id ORDER BY seq) AS prev
                    FROM windows WHERE job_id = $id) w
              JOIN nodes n ON n.id = w.node_id GROUP BY n.name ORDER BY n.name;")
echo "$per_node" | while IFS= read -r l; do diag "node|windows|distinct seqs|gaps: $l"; done
is "$(echo "$per_node" | awk -F'|' '$2 == $3 && $4 == 0 && $2 >= 7 { n++ } END { print n + 0 }')" 4 \
    "per agent >= 7 windows (40 s of 5 s ones), back to back, each seq once"
alogs=("$FM_RUNDIR"/agent/fmn*/job."$id".log)
is "$(cat "${alogs[@]}" | grep -cE ' 0 refused, 0 evicted from the spool$')" 4 \
    "every agent says none refused, none evicted"
done_testing
