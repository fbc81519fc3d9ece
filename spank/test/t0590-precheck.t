#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# sbatch --fabric-monitor=...,precheck: the job's output shows fabric-check's
# result before the script's own output; a slow node is named; with protect
# the job is requeued without it and runs on good nodes.
. "$FM_SRCDIR/spank/test/sys.sh"
mc_require
check=$FM_BUILDDIR/agent/fabric-check
[ -x "$check" ] || plan_skip_all "fabric-check not built (configure found no PMIx)"
[ -f "$FM_BUILDDIR/spank/.libs/fabric_monitor.so" ] || plan_skip_all "plugin not built"
plan 16

mc_up --nodes 5
ok $? "minicluster up with 5 nodes"
# the build tree's fabric-check, as a site names an installed one
sed -i "s|fabric_monitor\.so .*|& check=$check|" "$FM_RUNDIR/etc/plugstack.conf"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$FM_SRCDIR/tests/system/pmix-lsan.supp"
script='echo USER-OUTPUT-BEGIN; srun hostname | sort; echo USER-OUTPUT-END'

# line_of FILE REGEX: the number of the first matching line (0: none)
line_of () {
    local n
    n=$(grep -n -m1 -E "$2" "$1" | cut -d: -f1)
    echo "${n:-0}"
}
show () {
    while IFS= read -r l; do diag "$l"; done <"$1"
}
before () {
    local a b
    a=$(line_of "$1" "$2")
    b=$(line_of "$1" "$3")
    [ "$a" -gt 0 ] && [ "$b" -gt "$a" ]
}

id=$(mc_sbatch -N3 -o pc-%j.out --fabric-monitor=observe,precheck --wrap "$script")
mc_wait_job "$id" COMPLETED 60
ok $? "a healthy precheck job completes"
f=$MC_HOME/pc-$id.out
show "$f"
before "$f" '^fabric-monitor: precheck of job '"$id"': fabric-check --quick on 3 nodes' '^USER-OUTPUT-BEGIN'
ok $? "the precheck starts before the user's output"
before "$f" '^fabric-check: PASS$' '^USER-OUTPUT-BEGIN'
ok $? "its PASS comes before the user's output"
before "$f" '^fabric-monitor: precheck passed$' '^USER-OUTPUT-BEGIN'
ok $? "and the plugin's verdict too"
is "$(grep -c '^fmn[0-9]$' "$f")" 3 "the script's srun ran on the 3 nodes"

mc fault add fmn3 rate 1000
ok $? "fmn3's link limited to 1 Mbit/s"
id=$(mc_sbatch -N4 -o pc-%j.out --fabric-monitor=precheck --wrap "$script")
mc_wait_job "$id" COMPLETED 90
ok $? "an observe precheck job with a slow node completes"
f=$MC_HOME/pc-$id.out
show "$f"
before "$f" '^fabric-check: FAIL bad nodes: fmn3$' '^USER-OUTPUT-BEGIN'
ok $? "the slow node is named before the user's output"
before "$f" '^fabric-monitor: precheck found bad nodes: fmn3; the job goes on' '^USER-OUTPUT-BEGIN'
ok $? "without protect the job goes on"

id=$(mc_sbatch -N4 -o pc-%j.out --open-mode=append --fabric-monitor=protect,precheck \
    --wrap "$script")
mc_wait_job "$id" COMPLETED 120
ok $? "a protect precheck job with a slow node completes"
f=$MC_HOME/pc-$id.out
show "$f"
before "$f" '^fabric-monitor: precheck found bad nodes: fmn3; job '"$id"' requeued without them' \
    '^fabric-monitor: precheck passed$'
ok $? "the first run requeues it without fmn3, the second run's precheck passes"
before "$f" '^fabric-monitor: precheck passed$' '^USER-OUTPUT-BEGIN'
ok $? "the user's output follows the passing precheck"
is "$(grep -c '^USER-OUTPUT-BEGIN' "$f")" 1 "the script ran once, after the requeue"
info=$(mc_exec ctl scontrol -o show job "$id")
diag "$(echo "$info" | tr ' ' '\n' | grep -E '^(Restarts|ExcNodeList|NodeList|Comment)=')"
echo "$info" | grep -q ' Restarts=1 ' && echo "$info" | grep -q ' ExcNodeList=fmn3 ' \
    && ! echo "$info" | grep -Eq ' NodeList=[^ ]*fmn3'
ok $? "Slurm shows one restart, fmn3 excluded and not in the node list"
mc fault clear

(cd "$MC_HOME" && mc_exec ctl sbatch -N2 --fabric-monitor=off,precheck --wrap true) >/dev/null 2>&1
ok $((! $?)) "off,precheck is refused at submission"
done_testing
