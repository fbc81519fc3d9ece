#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# On the minicluster: slurmctld stops answering (SIGSTOP, by the PID its pid
# file names) while fabricd decides to drain a lossy node. The drain fails
# with EAGAIN and is recorded as such; fabricd decides it again every window
# and, once slurmctld answers again, the node is drained with the fabric
# reason: the action is retried, not lost, and not done twice.
FM_SRCDIR=${FM_SRCDIR:-$FM_TOP_SRCDIR}
FM_BUILDDIR=${FM_BUILDDIR:-$FM_TOP_BUILDDIR}
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
command -v jq >/dev/null || plan_skip_all "jq is not installed"
plan 10

conf=$(mktemp)
cat >"$conf" <<'CONF'
report_window = 2s
persist_windows = 2
auto_validate = no
auto_resume = no
CONF
mc_up --nodes 4 --fabricd-conf "$conf"
ok $? "minicluster up with 4 nodes" || exit 1
rm -f "$conf"

ctld=$(cat "$MC_RUNDIR/pid/slurmctld.pid")
[ "$(cat "/proc/$ctld/comm" 2>/dev/null)" = slurmctld ]
ok $? "slurmctld runs as PID $ctld" || exit 1
# never leave it stopped, whatever happens below
trap 'kill -CONT "$ctld" 2>/dev/null; mc_cleanup' EXIT

drains () { # RESULT: fmn2's drain records whose result starts with it
    fm_get "/v1/actions?node=fmn2" \
        | jq -c --arg r "$1" '[.actions[] | select(.kind == "drain" and (.result | startswith($r)))] | .[]'
}
has_drain () { [ -n "$(drains "$1")" ]; }
fabric_reason () { case $(mc_node_reason fmn2) in fabric:*) return 0 ;; esac; return 1; }

id=$(mc_sbatch -N3 -w fmn[1-3] -o obs-%j.out --fabric-monitor --wrap 'sleep 120')
mc_wait_job "$id" RUNNING 30
fm_wait_agents "$id" 3 30
sleep 6 # clean windows first

kill -STOP "$ctld"
t_stop=$(date +%s)
mc fault add fmn2 loss 10
mc_wait_until 90 has_drain error
ok $? "with slurmctld stopped the drain of fmn2 is decided and fails: $(drains error | head -1 | jq -r '"\(.result): \(.reason)"')"
sleep 3 # while it stays stopped, the next windows decide it again
nfailed=$(drains error | wc -l)
is "$(mc_node_reason fmn2)" "" "nothing reached Slurm while it was stopped"
kill -CONT "$ctld"
diag "slurmctld stopped for $(($(date +%s) - t_stop)) s, $nfailed failed drain attempts"

mc_wait_until 60 fabric_reason
ok $? "once slurmctld answers, fmn2 is drained: $(mc_node_reason fmn2)"
mc_node_state fmn2 | grep -q DRAIN
ok $? "its state is drained ($(mc_node_state fmn2))"
sleep 4 # two later windows must not drain it again
is "$(drains done | wc -l)" 1 "the drain is done exactly once"
nalready=$(drains already | wc -l)
diag "drain records: $nfailed failed, 1 done, $nalready already"
[ "$nfailed" -ge 1 ] && [ "$(drains error | jq -r .at_ns | sort -n | tail -1)" -lt "$(drains done | jq -r .at_ns)" ]
ok $? "every failed attempt came before the one that was done"
grep -q 'retried next window' "$FM_RUNDIR/log/fabricd.log"
ok $? "fabricd logged that it retries: $(grep -m1 'retried next window' "$FM_RUNDIR/log/fabricd.log")"
out=$(mc_exec ctl curl -s "$FM_DAEMON_URL/metrics" | grep '^fabricd_actions_total{kind="drain"' | tr '\n' ' ')
echo "$out" | grep -q 'result="error"} [1-9]' && echo "$out" | grep -q 'result="done"} 1'
ok $? "the metrics count the failures and one drain: $out"
mc_exec ctl scancel "$id"
done_testing
