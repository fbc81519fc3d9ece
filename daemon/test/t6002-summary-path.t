#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# On the minicluster: the epilog appends the summary to the job's output only
# when that path is still a regular file of the job user. A job that swaps its
# output for a symbolic link (to a file it owns, so that only the link check
# stops the write), or whose output was replaced by another user's file that
# the job user may write (mode 0666, so that only the owner check stops it),
# gets nothing written, and slurmd's log says why.
FM_SRCDIR=${FM_SRCDIR:-$FM_TOP_SRCDIR}
FM_BUILDDIR=${FM_BUILDDIR:-$FM_TOP_BUILDDIR}
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
id -u nobody >/dev/null 2>&1 || plan_skip_all "no user nobody"
id -u daemon >/dev/null 2>&1 || plan_skip_all "no user daemon"
plan 9

mc_up --nodes 1
ok $? "minicluster up"
uid=$(id -u nobody)
gid=$(id -g nobody)
home=$MC_HOME/nobody
mkdir -p "$home"
chown "$uid:$gid" "$home"

# sbatch as nobody from its home; prints the job id
submit () {
    (cd "$home" && mc_exec ctl sbatch --parsable --uid=nobody --gid="$gid" -N1 \
        -o job-%j.out --fabric-monitor --wrap "$1") | cut -d';' -f1
}

# control: the same job with nothing swapped gets its summary
id=$(submit 'sleep 6; echo plain')
mc_wait_job "$id" COMPLETED 60
fm_summary_ok "$home/job-$id.out"
ok $? "an untouched output file gets the summary"

# the job replaces its output file by a link to a file of its own
id=$(submit 'o=$(readlink /proc/$$/fd/1); echo mine >$SLURM_SUBMIT_DIR/target.$SLURM_JOB_ID; rm -f "$o" && ln -s $SLURM_SUBMIT_DIR/target.$SLURM_JOB_ID "$o"; sleep 6')
mc_wait_job "$id" COMPLETED 60
ok $? "a job linking its output elsewhere completes"
[ -L "$home/job-$id.out" ]
ok $? "(its output path is a symbolic link now)"
is "$(cat "$home/target.$id")" mine "nothing was written through the link"

# another user's file, writable by everyone, in place of the output
id=$(submit 'sleep 8')
mc_wait_job "$id" RUNNING 30
for _ in $(seq 50); do
    [ -e "$home/job-$id.out" ] && break
    sleep 0.1
done
rm -f "$home/job-$id.out"
echo theirs >"$home/job-$id.out"
chown daemon "$home/job-$id.out"
chmod 0666 "$home/job-$id.out"
mc_wait_job "$id" COMPLETED 60
ok $? "a job whose output was replaced by another user's file completes"
is "$(stat -c %U "$home/job-$id.out")" daemon "(the file there belongs to daemon)"
is "$(cat "$home/job-$id.out")" theirs "the foreign file was not written"
grep -hq "job $id: summary not written: .*job-$id.out is not a regular file owned by uid $uid" \
    "$FM_RUNDIR"/log/slurmd*.log
ok $? "slurmd's log says why"
done_testing
