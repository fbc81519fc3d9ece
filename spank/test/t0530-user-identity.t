#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# The summary is written with the job user's identity only: a job of user
# nobody gets it appended to its own output, and a job that points the
# epilog at a file only root may write gains nothing.
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
id -u nobody >/dev/null 2>&1 || plan_skip_all "no user nobody"
plan 8

mc_up --nodes 2
ok $? "minicluster up"
uid=$(id -u nobody)
gid=$(id -g nobody)
mkdir -p "$MC_HOME/nobody"
chown "$uid:$gid" "$MC_HOME/nobody"

id=$(cd "$MC_HOME/nobody" && mc_exec ctl sbatch --parsable --uid=nobody --gid="$gid" \
    -N2 -o job-%j.out --fabric-monitor --wrap 'srun -N2 sleep 6; echo ran as $(id -u)' \
    | cut -d';' -f1)
mc_wait_job "$id" COMPLETED 60
ok $? "a monitored job of user nobody completes"
out=$MC_HOME/nobody/job-$id.out
is "$(sed -n 's/^ran as //p' "$out")" "$uid" "it ran as nobody"
fm_summary_ok "$out"
ok $? "its output ends with the summary"
is "$(stat -c %u "$out")" "$uid" "the output file still belongs to nobody"

# The batch task may rewrite the path the epilog appends to; point it at a
# root-owned file (world-readable, writable by root only).
victim=$FM_RUNDIR/victim
echo "precious" >"$victim"
chmod 0644 "$victim"
id=$(cd "$MC_HOME/nobody" && mc_exec ctl sbatch --parsable --uid=nobody --gid="$gid" \
    -N1 -o job-%j.out --fabric-monitor \
    --wrap "f=$FM_RUNDIR/agent/\$SLURMD_NODENAME/job.\$SLURM_JOB_ID/out/stdout; rm -f \$f && printf %s $victim >\$f; sleep 6" \
    | cut -d';' -f1)
mc_wait_job "$id" COMPLETED 60
ok $? "a job redirecting the summary completes"
is "$(cat "$victim")" "precious" "the root-owned file was not written"
! grep -q 'network summary' "$MC_HOME/nobody/job-$id.out"
ok $? "(the redirection took effect: no summary in the job's own output)"
done_testing
