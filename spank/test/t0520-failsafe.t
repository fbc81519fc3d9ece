#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Nothing fails or drains because of the plugin: a missing agent binary or
# an unreachable daemon leave monitored jobs running to completion, and the
# nodes idle.
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
plan 9

mc_up --nodes 2
ok $? "minicluster up"
conf=$FM_RUNDIR/etc/plugstack.conf
cp "$conf" "$conf.orig"

# slurmstepd and the clients read plugstack.conf for every job
sed -i 's|agent=[^ ]*|agent=/nonexistent/fabric-agent|' "$conf"
id=$(mc_sbatch -N2 -o job-%j.out --fabric-monitor --wrap 'srun -N2 true; echo ran')
mc_wait_job "$id" COMPLETED 60
ok $? "agent binary missing: the job completes"
is "$(cat "$MC_HOME/job-$id.out")" "ran" "its output has no summary and no error"
grep -q "agent /nonexistent/fabric-agent: No such file or directory; not monitored" \
    "$FM_RUNDIR"/log/slurmd-fmn1.log
ok $? "slurmd's log says why it was not monitored"

cp "$conf.orig" "$conf"
sed -i 's|daemon=[^ ]*|daemon=http://10.77.0.99:8470|' "$conf"
t0=$(mc_now)
id=$(mc_sbatch -N2 -o job-%j.out --fabric-monitor --wrap 'srun -N2 sleep 3; echo ran')
mc_wait_job "$id" COMPLETED 60
ok $? "daemon unreachable: the job completes"
el=$(mc_elapsed "$t0" "$(mc_now)")
ok "$(mc_within "$el" 0 30; echo $?)" "within 30 s ($el s)"
is "$(cat "$MC_HOME/job-$id.out")" "ran" "its output is only its own"
fm_no_agents "$id"
ok $? "the agents were stopped and their state removed"

cp "$conf.orig" "$conf"
is "$(mc_exec ctl sinfo -h -o '%T' | sort -u | tr '\n' ' ')" "idle " "no node was drained"
done_testing
