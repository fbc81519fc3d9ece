#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# The Slurm actions, both backends in turn, on a real 4-node minicluster:
# drain/resume with fabric reasons, refusal to touch someone else's drain,
# weights, signalling a job's batch shell, requeue, dry_run, and EAGAIN while
# slurmctld does not answer.
FM_TOP_SRCDIR=${FM_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
FM_BUILDDIR=${FM_BUILDDIR:-${FM_TOP_BUILDDIR:-}}
export FM_BUILDDIR FM_SRCDIR=$FM_TOP_SRCDIR
. "$FM_TOP_SRCDIR/tests/tap.sh"
. "$FM_TOP_SRCDIR/tests/system/lib.sh"
mc_require
CLI=$FM_BUILDDIR/daemon/test/actions-cli
[ -x "$CLI" ] || plan_skip_all "$CLI is not built (make check builds it)"
plan 61

# fabricd's loop runs beside the backends under test: it must not validate and
# resume the nodes this test drains with fabric reasons.
conf=$MC_TMP/fabricd.conf
echo "auto_resume = no" >"$conf"
mc_up --nodes 4 --fabricd-conf "$conf"
ok $? "up --nodes 4" || exit 1

act () { mc_exec ctl "$CLI" -k "$kind" -c "$SLURM_CONF" "$@" 2>>"$MC_TMP/cli.log"; }
node_field () {
    mc_exec ctl scontrol -o show node "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"
}

cat >"$MC_HOME/job.sh" <<'EOF'
#!/bin/bash
echo "start restarts=${SLURM_RESTART_COUNT:-0}" >>"$1.log"
trap 'echo usr1 >>"$1.usr1"' USR1
while :; do sleep 0.2; done
EOF
chmod +x "$MC_HOME/job.sh"

for kind in scontrol libslurm; do
    out=$(act nodes)
    if [ "$kind" = libslurm ] && echo "$out" | grep -q ENOTSUP; then
        for _ in $(seq 29); do skip "built without libslurm"; done
        continue
    fi
    is "$(echo "$out" | wc -l)" 4 "$kind: nodes lists the 4 nodes"

    # Drain with a fabric reason, idempotently, then resume.
    is "$(act drain fmn1 "fabric: loss: 5% ($kind)")" done "$kind: drain fmn1"
    is "$(mc_node_reason fmn1)" "fabric: loss: 5% ($kind)" "$kind: sinfo -R shows the fabric reason"
    is "$(act drain fmn1 "fabric: loss: 6%")" already "$kind: a second drain is a no-op"
    is "$(mc_node_reason fmn1)" "fabric: loss: 5% ($kind)" "$kind: and leaves the first reason"
    act node fmn1 | grep -q 'state=idle,drain weight=1 reason=fabric: loss: 5%'
    ok $? "$kind: node_info sees drain and the reason"
    is "$(act resume fmn1)" done "$kind: resume fmn1"
    node_field fmn1 State | grep -qv DRAIN
    ok $? "$kind: fmn1 is no longer drained"
    is "$(act resume fmn1)" already "$kind: a second resume is a no-op"

    # Someone else's drain is never overwritten or resumed.
    mc_exec ctl scontrol update nodename=fmn2 state=drain reason="admin: bad dimm"
    is "$(act resume fmn2)" "error: EPERM: not resuming fmn2: its reason is not ours: admin: bad dimm" \
        "$kind: resume refuses a node drained by hand"
    is "$(act drain fmn2 "fabric: loss: 9%")" foreign "$kind: drain says foreign"
    is "$(mc_node_reason fmn2)" "admin: bad dimm" "$kind: and the admin's reason stays"
    node_field fmn2 State | grep -q DRAIN
    ok $? "$kind: fmn2 is still drained"
    mc_exec ctl scontrol update nodename=fmn2 state=resume
    act drain nosuch "fabric: x" | grep -q '^error: ENOENT: .*Node nosuch not found'
    ok $? "$kind: an unknown node is ENOENT"
    act drain fmn3 "loss" | grep -q '^error: EINVAL'
    ok $? "$kind: a reason without 'fabric:' is EINVAL"

    # Weights.
    is "$(act weight fmn3 42)" done "$kind: set_weight fmn3 42"
    is "$(node_field fmn3 Weight)" 42 "$kind: scontrol show node shows Weight=42"

    # dry_run changes nothing.
    is "$(act -n drain fmn1 "fabric: dry")" done "$kind: dry-run drain says done"
    is "$(act -n weight fmn3 99)" done "$kind: dry-run set_weight says done"
    node_field fmn1 State | grep -qv DRAIN && [ "$(node_field fmn3 Weight)" = 42 ]
    ok $? "$kind: but fmn1 is not drained and fmn3 keeps weight 42"
    act weight fmn3 1 >/dev/null

    # A running job: signal its batch shell, then requeue it.
    rm -f "$MC_HOME/$kind.log" "$MC_HOME/$kind.usr1"
    id=$(mc_sbatch -N1 -w fmn4 -o "$kind-%j.out" job.sh "$kind")
    mc_wait_job "$id" RUNNING 20 && mc_wait_until 10 test -s "$MC_HOME/$kind.log"
    ok $? "$kind: job $id runs on fmn4"
    act jobs fmn4 | grep -q "^$id state=RUNNING completing=0 nodes=fmn4 batch_host=fmn4 requeue=1 restarts=0"
    ok $? "$kind: jobs_on_node(fmn4) finds it with its batch host"
    is "$(act signal "$id" 10 batch)" done "$kind: signal USR1 to the batch shell"
    mc_wait_until 10 test -s "$MC_HOME/$kind.usr1"
    ok $? "$kind: the job script trapped USR1"
    act -n requeue "$id" >/dev/null
    is "$(act requeue "$id")/$(mc_job_field "$id" Restarts)" done/1 "$kind: requeue; Restarts=1"
    is "$(act requeue "$id")" already "$kind: requeue of the pending job is a no-op"
    mc_wait_until 30 grep -q 'restarts=1' "$MC_HOME/$kind.log"
    ok $? "$kind: the job restarted with SLURM_RESTART_COUNT=1"
    mc_exec ctl scancel "$id"

    # slurmctld not answering (stopped, by the PID its pid file names): the
    # call fails with EAGAIN, changes nothing, and works again afterwards.
    ctld=$(cat "$MC_RUNDIR/pid/slurmctld.pid")
    if [ "$(cat "/proc/$ctld/comm" 2>/dev/null)" = slurmctld ]; then
        kill -STOP "$ctld"
        out=$(act drain fmn1 "fabric: while down")
        kill -CONT "$ctld"
    else
        out="slurmctld pid $ctld not found"
    fi
    echo "$out" | grep -q '^error: EAGAIN: .*timed out'
    ok $? "$kind: slurmctld not answering is EAGAIN: $out"
    mc_wait_until 20 act node fmn1 >/dev/null && node_field fmn1 State | grep -qv DRAIN
    ok $? "$kind: it answers again and fmn1 was not drained"
done

grep -q 'dry-run: would drain fmn1 reason "fabric: dry"' "$MC_TMP/cli.log"
ok $? "dry-run logs what it would do"
grep -c 'dry-run: would requeue job' "$MC_TMP/cli.log" | grep -qx 2
ok $? "dry-run requeue logged, once per backend"
done_testing
