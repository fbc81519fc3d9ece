#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# `minicluster down` leaves no process, mount or namespace behind, even with a
# job and fault helpers running, is safe to repeat, cleans up after a failed
# up, and never touches a directory that is not a minicluster's.
. "${srcdir:-.}/../tap.sh"
. "${srcdir:-.}/lib.sh"
mc_require
plan 16

# PIDs of live (non-zombie) processes inside the namespaces whose inodes are given.
pids_in () {
    local want=" $* "
    stat -L -c '%i %n' /proc/[0-9]*/ns/net 2>/dev/null | while read -r ino path; do
        case $want in *" $ino "*) ;; *) continue ;; esac
        p=${path#/proc/}
        p=${p%%/*}
        grep -q '^State:[[:space:]]*Z' "/proc/$p/status" 2>/dev/null || echo "$p"
    done
}
live () {
    local p n=0
    for p in "$@"; do
        [ -d "/proc/$p" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$p/status" 2>/dev/null \
            && n=$((n + 1))
    done
    echo "$n"
}
mounts_under () {
    awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo
}

mc_up --nodes 4
ok $? "up --nodes 4"
id=$(mc_sbatch -N4 -o job-%j.out --wrap 'srun sleep 300')
mc_wait_job "$id" RUNNING 30
ok $? "a 4-node job is running"
if [ -x "$FM_BUILDDIR/contrib/minicluster/fm-delayq" ]; then
    mc fault add fmn2 flap 2 && mc fault add fmn3 delay 1000
    ok $? "a flap and a delay fault are active"
else
    mc fault add fmn2 flap 2
    ok $? "a flap fault is active (fm-delayq not built: no delay fault)"
fi
inodes=$(for f in "$MC_RUNDIR"/ns/*.net; do stat -L -c %i "$f"; done | tr '\n' ' ')
pids=$(cat "$MC_RUNDIR"/pid/*.pid "$MC_RUNDIR"/faults/*.pid | tr '\n' ' ')
steps=$(pids_in $inodes | wc -l)
[ "$steps" -gt 8 ]
ok $? "$steps processes run inside the cluster's namespaces"
test -n "$(mounts_under "$MC_RUNDIR")"
ok $? "the namespace files are mounted"

t0=$(mc_now)
mc_down
ok $? "down"
diag "down with a running job took $(mc_elapsed "$t0" "$(mc_now)") s"
is "$(pids_in $inodes | tr '\n' ' ')" "" "no process is left in the cluster's namespaces"
is "$(live $pids)" 0 "every daemon and fault helper from the pid files is gone"
is "$(mounts_under "$MC_RUNDIR")" "" "no mount is left"
test ! -e "$MC_RUNDIR"
ok $? "the run directory is removed"
mc down
ok $? "a second down succeeds"

# A failed up: slurmd refuses to start, after munged, slurmctld and the
# namespaces were made.
mkdir -p "$MC_TMP/bin"
printf '#!/bin/sh\necho "slurmd: refusing (test)" >&2\nexit 1\n' >"$MC_TMP/bin/slurmd"
chmod +x "$MC_TMP/bin/slurmd"
# shellcheck disable=SC2034 # mc_cleanup reads it: the failed up below must be cleaned up
mc_started=1
PATH=$MC_TMP/bin:$PATH mc up --nodes 2 >/dev/null 2>&1
ok $((! $?)) "up fails when slurmd cannot start"
inodes=$(for f in "$MC_RUNDIR"/ns/*.net; do stat -L -c %i "$f"; done 2>/dev/null | tr '\n' ' ')
pids=$(cat "$MC_RUNDIR"/pid/*.pid 2>/dev/null | tr '\n' ' ')
[ "$(live $pids)" -ge 2 ]
ok $? "it left munged and slurmctld running"
mc_down
ok $? "down after the failed up"
is "$(live $pids):$(pids_in $inodes | wc -l):$(mounts_under "$MC_RUNDIR" | wc -l):$(test -e "$MC_RUNDIR"; echo $?)" \
    "0:0:0:1" "it removed the processes, namespaces, mounts and the run directory"

mkdir -p "$MC_TMP/notours"
echo keep >"$MC_TMP/notours/data"
"$MC" --rundir "$MC_TMP/notours" -q down >/dev/null 2>&1
rc=$?
[ $rc -ne 0 ] && [ "$(cat "$MC_TMP/notours/data")" = keep ]
ok $? "down refuses a directory that is not a minicluster's"
done_testing
