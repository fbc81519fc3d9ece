#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Jobs on the minicluster run on the nodes Slurm says, from the shared job
# directory, and the helper's job waits report both success and timeouts.
. "${srcdir:-.}/../tap.sh"
. "${srcdir:-.}/lib.sh"
mc_require
plan 12

mc_up --nodes 4
ok $? "up --nodes 4"

id=$(mc_sbatch -N3 -w fmn2,fmn3,fmn4 -o job-%j.out \
    --wrap 'srun sh -c "echo \$(hostname) \$SLURM_NODEID \$(ip -4 -o addr show dev eth0 | cut -d\" \" -f7)" | sort; echo nodelist=$SLURM_JOB_NODELIST')
test -n "$id"
ok $? "sbatch -N3 -w fmn2,fmn3,fmn4 submitted job $id"
mc_wait_job "$id" COMPLETED 30
ok $? "the job completed"
out=$MC_HOME/job-$id.out
is "$(grep '^fmn' "$out" | cut -d' ' -f1 | tr '\n' ' ')" "fmn2 fmn3 fmn4 " \
    "its tasks ran on exactly fmn2, fmn3, fmn4"
is "$(grep '^fmn' "$out" | awk '{ print $1, $3 }' | tr '\n' ' ')" \
    "fmn2 10.77.0.12/24 fmn3 10.77.0.13/24 fmn4 10.77.0.14/24 " \
    "each task saw its own node's address"
is "$(sed -n 's/^nodelist=//p' "$out")" "fmn[2-4]" "SLURM_JOB_NODELIST names the same nodes"

id=$(mc_sbatch -N2 -x fmn1,fmn2 -o job-%j.out --wrap 'srun hostname | sort')
mc_wait_job "$id" COMPLETED 30
is "$(tr '\n' ' ' <"$MC_HOME/job-$id.out")" "fmn3 fmn4 " "-x fmn1,fmn2 puts a 2-node job on fmn3, fmn4"

id=$(mc_sbatch -N1 -w fmn1 -o job-%j.out --wrap 'exit 3')
mc_wait_job "$id" FAILED 30
ok $? "a job exiting 3 ends FAILED"
mc_exec ctl scontrol -o show job "$id" | grep -q 'ExitCode=3:0'
ok $? "with ExitCode=3:0"

id=$(mc_sbatch -N4 -o job-%j.out --wrap 'srun sleep 120')
mc_wait_job "$id" RUNNING 30
ok $? "a 4-node job is running"
mc_wait_job "$id" COMPLETED 1 2>/dev/null
ok $((! $?)) "waiting for a state that does not come times out"
mc_exec ctl scancel "$id"
mc_wait_job "$id" CANCELLED 30
ok $? "scancel ends it CANCELLED"
done_testing
